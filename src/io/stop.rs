//! A stop request every server loop can wait on without polling: an eventfd the loop registers
//! beside its sockets (epoll, an io_uring poll) plus a flag for threads that check it.

use rustix::event::{eventfd, EventfdFlags};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Ask a server to stop; the loop notices within one wakeup. Also carries what to do once the
/// server is up ([`Stop::on_ready`]).
pub struct Stop {
    fd: OwnedFd,
    flag: AtomicBool,
    ready: Mutex<Option<OnReady>>,
}

type OnReady = Box<dyn FnOnce() + Send>;

impl Stop {
    pub fn new() -> io::Result<Stop> {
        Ok(Stop {
            fd: eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?,
            flag: AtomicBool::new(false),
            ready: Mutex::new(None),
        })
    }

    /// Runs `f` once the server's setup has succeeded (see [`Stop::ready`]): `ringside serve`
    /// announces `listening on` there, so that a model that cannot start never announces.
    pub(crate) fn on_ready(&self, f: impl FnOnce() + Send + 'static) {
        *self.ready.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(f));
    }

    /// Called by every server once its setup (ring, tables, buffers) has succeeded, just
    /// before it serves; runs the [`Stop::on_ready`] action, once.
    pub(crate) fn ready(&self) {
        let f = self.ready.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(f) = f {
            f();
        }
    }

    /// Requests the stop (async-signal-safe apart from the atomic store: one write(2)).
    pub fn request(&self) {
        self.flag.store(true, Ordering::SeqCst);
        // A full counter (EAGAIN) still leaves it readable, which is all a waiter needs.
        let _ = rustix::io::write(&self.fd, &1u64.to_ne_bytes());
    }

    pub(crate) fn requested(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Blocks (in poll(2), not spinning) until a stop is requested.
    pub(crate) fn wait(&self) {
        while !self.requested() {
            let mut p = libc::pollfd {
                fd: self.fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // raw: rustix's poll is ppoll(2), another syscall than poll(2).
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut p, 1, -1) };
        }
    }

    /// The eventfd: readable once a stop was requested.
    pub(crate) fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl AsFd for Stop {
    /// The eventfd, as [`Stop::fd`].
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_makes_the_eventfd_readable() {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        let s = Stop::new().unwrap();
        let readable = || {
            let mut p = [PollFd::new(&s.fd, PollFlags::IN)];
            poll(&mut p, Some(&Timespec::default())).unwrap()
        };
        assert_eq!(readable(), 0);
        assert!(!s.requested());
        s.request();
        assert_eq!(readable(), 1);
        assert!(s.requested());
    }

    #[test]
    fn the_ready_action_runs_once() {
        let s = Stop::new().unwrap();
        s.ready(); // none set: nothing happens
        let n = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let m = n.clone();
        s.on_ready(move || {
            m.fetch_add(1, Ordering::SeqCst);
        });
        s.ready();
        s.ready();
        assert_eq!(n.load(Ordering::SeqCst), 1);
    }
}
