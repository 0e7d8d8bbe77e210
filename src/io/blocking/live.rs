//! The live connections of a blocking server, so that another thread can shut one down (and
//! so wake the thread blocked in its read or send) without holding a second fd for it.
//!
//! A `try_clone` of each socket would do the same at the cost of two fds per connection,
//! which halves the connections a hard `RLIMIT_NOFILE` allows. Instead [`LiveSockets`] keeps
//! each connection's raw fd under one mutex, and the socket itself is owned by a
//! [`LiveConn`], whose drop removes the entry under that mutex *before* the socket is
//! closed. A shutdown made under the mutex ([`LiveSockets::shutdown`],
//! [`LiveSockets::shutdown_all`]) therefore only ever names an fd that is still this
//! connection's socket: never one closed and reused by another open. Every way a connection
//! thread ends (its loop returns, a panic unwinds it, the thread is never spawned and its
//! closure is dropped) drops its `LiveConn`, so an entry never outlives its socket.

use std::collections::HashMap;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard};

/// The raw fds of the live connections, by id; cloned handles share one registry.
#[derive(Clone, Default)]
pub(crate) struct LiveSockets(Arc<Mutex<HashMap<u64, RawFd>>>);

impl LiveSockets {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, RawFd>> {
        // Nothing panics under this lock but a map operation; the map stays whole.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `sock` as connection `id` (which must not be live): the returned guard owns
    /// the socket and unregisters it before closing it.
    pub(crate) fn register(&self, id: u64, sock: TcpStream) -> LiveConn {
        let old = self.lock().insert(id, sock.as_raw_fd());
        debug_assert!(old.is_none(), "connection {id} registered twice");
        LiveConn {
            id,
            live: self.clone(),
            sock,
        }
    }

    /// Shuts down both directions of connection `id` if it is live (its thread wakes: a read
    /// returns 0, a send fails). False when it has already ended.
    pub(crate) fn shutdown(&self, id: u64) -> bool {
        let g = self.lock();
        match g.get(&id) {
            Some(&fd) => {
                shutdown_fd(fd);
                true
            }
            None => false,
        }
    }

    /// Shuts down every live connection; returns how many there were.
    pub(crate) fn shutdown_all(&self) -> usize {
        let g = self.lock();
        for &fd in g.values() {
            shutdown_fd(fd);
        }
        g.len()
    }

    /// Live connections now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// shutdown(2) of both directions. Called with the registry locked, so `fd` is still the
/// registered socket (its owner unregisters under the same lock before closing it).
fn shutdown_fd(fd: RawFd) {
    // SAFETY: shutdown(2) on an fd number touches no memory; the caller holds the lock that
    // keeps the fd open and this connection's.
    let _ = unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
}

/// A live connection's socket: derefs to the `TcpStream`; dropping it unregisters the
/// connection, then closes the socket.
pub(crate) struct LiveConn {
    id: u64,
    live: LiveSockets,
    sock: TcpStream,
}

impl LiveConn {
    /// Its id in the registry.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The registry it is in (to shut down another connection by its id).
    pub(crate) fn registry(&self) -> &LiveSockets {
        &self.live
    }
}

impl std::ops::Deref for LiveConn {
    type Target = TcpStream;
    fn deref(&self) -> &TcpStream {
        &self.sock
    }
}

impl Drop for LiveConn {
    fn drop(&mut self) {
        // Unregistered first; `sock` is closed after this body returns (fields drop after
        // `drop`), when no shutdown under the lock can name its fd any more.
        self.live.lock().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    fn pair(l: &TcpListener) -> (TcpStream, TcpStream) {
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (c, s)
    }

    #[test]
    fn shutdown_wakes_a_blocked_reader_and_each_exit_unregisters() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let live = LiveSockets::default();
        let (mut c0, s0) = pair(&l);
        let (_c1, s1) = pair(&l);
        let (_c2, s2) = pair(&l);
        let conn0 = live.register(0, s0);
        let conn1 = live.register(1, s1);
        let conn2 = live.register(2, s2);
        assert_eq!((conn0.id(), live.len()), (0, 3));
        // A thread that ends normally: unregistered by the time it has been joined.
        let t = std::thread::spawn(move || {
            let mut b = [0u8; 4];
            let n = (&*conn0).read(&mut b).unwrap();
            (&*conn0).write_all(&b[..n]).unwrap();
            drop(conn0);
        });
        c0.write_all(b"ping").unwrap();
        let mut b = [0u8; 4];
        c0.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"ping");
        t.join().unwrap();
        assert_eq!(live.len(), 2);
        assert!(!live.shutdown(0), "an ended connection is not shut down");
        // A thread blocked in read wakes on shutdown (EOF); one that panics unregisters too.
        let reader = std::thread::spawn(move || {
            let mut b = [0u8; 4];
            (&*conn1).read(&mut b).unwrap()
        });
        let panics = std::thread::spawn(move || {
            let _c = conn2;
            panic!("connection thread panics");
        });
        assert!(panics.join().is_err());
        assert_eq!(live.len(), 1);
        assert!(live.shutdown(1));
        assert_eq!(reader.join().unwrap(), 0, "the shut-down reader sees EOF");
        assert_eq!((live.len(), live.shutdown_all()), (0, 0));
    }
}
