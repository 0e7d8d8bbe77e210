//! The thread pool's UDP echo server (`threadpool`): the classic pre-threaded UDP server, N
//! threads each blocking in recvfrom(2) on the one shared socket and echoing each datagram
//! with sendto(2). The kernel hands each datagram to one waiting thread; there is no queue of
//! our own between the threads, and each counts in its own [`UdpCounters`], summed at the end.
//!
//! The pool's size is the row's knob (`Threading::Pool { threads }`); without one it is
//! [`DEFAULT_THREADS`]. The threads inherit the server's CPU set (one CPU by default), so on
//! one CPU what is measured is several threads taking turns at one socket.
//!
//! Stop: a thread waits for `Stop` and then shuts the socket's receive side down
//! (shutdown(2) with SHUT_RD). On a UDP socket that is not connected the call fails with
//! ENOTCONN but still marks the receive side shut and wakes every reader (Linux's
//! `inet_shutdown`: "hack to wake up other listeners"), so every thread blocked in recvfrom
//! returns at once (0 bytes once the queue is empty) and sees the stop. No thread polls a
//! timer while it waits.

use crate::io::udp::{recv_from, send_to, Peer};
use crate::io::Stop;
use crate::measure::CounterSet;
use crate::proto::udp::{UdpCounters, MAX_DATAGRAM};
use std::io;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;

/// Threads of a pool whose row sets no size: more than one, so that the pool's hand-off (a
/// thread woken per datagram among several waiting on one socket) is what it measures, and
/// few enough that each is usually waiting.
pub(crate) const DEFAULT_THREADS: usize = 4;
/// The most threads a row may ask for.
pub(crate) const MAX_THREADS: usize = 64;

/// The pool's size for a row's knob.
pub(crate) fn threads(knob: Option<u16>) -> usize {
    knob.map_or(DEFAULT_THREADS, usize::from)
        .clamp(1, MAX_THREADS)
}

/// Serves UDP echo on `sock` with `n` threads until `stop`; returns the threads' counts,
/// summed.
pub(crate) fn serve(sock: UdpSocket, n: usize, stop: &Stop) -> io::Result<UdpCounters> {
    sock.set_nonblocking(false)?;
    sock.set_read_timeout(None)?;
    let sock = &sock;
    let counts = std::thread::scope(|sc| -> io::Result<Vec<UdpCounters>> {
        let workers = (0..n)
            .map(|i| {
                std::thread::Builder::new()
                    .name(format!("udp-pool-{i}"))
                    .spawn_scoped(sc, move || worker(sock, stop))
            })
            .collect::<Result<Vec<_>, _>>();
        let workers = match workers {
            Ok(w) => w,
            Err(e) => {
                // The threads that did start end with the shutdown below.
                stop.request();
                wake_all(sock);
                return Err(e);
            }
        };
        stop.ready();
        stop.wait();
        wake_all(sock);
        Ok(workers
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect())
    })?;
    let mut total = UdpCounters::default();
    for c in &counts {
        total.merge(c);
    }
    Ok(total)
}

/// Shuts the socket's receive side down, which wakes every thread blocked in recvfrom.
fn wake_all(sock: &UdpSocket) {
    // raw: rustix's shutdown returns the ENOTCONN it fails with and nothing else; the call's
    // effect (waking the readers) is all that is wanted.
    // SAFETY: a valid socket descriptor.
    unsafe { libc::shutdown(sock.as_raw_fd(), libc::SHUT_RD) };
}

/// One thread: recvfrom, judge, sendto, until the stop.
fn worker(sock: &UdpSocket, stop: &Stop) -> UdpCounters {
    let mut c = UdpCounters::default();
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut peer = Peer::new();
    while !stop.requested() {
        c.recv_calls += 1;
        let r = recv_from(sock, &mut buf, &mut peer, 0);
        if stop.requested() {
            break;
        }
        let n = match r {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                c.recv_errors += 1;
                continue;
            }
        };
        let d = &buf[..n.min(MAX_DATAGRAM)];
        if !c.judge(d, n > MAX_DATAGRAM) {
            continue;
        }
        c.send_calls += 1;
        match send_to(sock, d, &peer) {
            Ok(()) => c.datagrams_out += 1,
            Err(_) => c.send_errors += 1,
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::udp::{encode, verify};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn the_pool_echoes_and_every_thread_wakes_at_the_stop() {
        let sock = crate::io::udp::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = sock.local_addr().unwrap();
        let stop = Arc::new(Stop::new().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        let s2 = stop.clone();
        std::thread::spawn(move || {
            let _ = tx.send(serve(sock, 4, &s2));
        });
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client.connect(addr).unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut d = [0u8; 64];
        let mut back = [0u8; 128];
        for seq in 0..20 {
            encode(3, seq, 64, &mut d);
            client.send(&d).unwrap();
            let n = client.recv(&mut back).unwrap();
            assert_eq!(verify(3, 64, &back[..n]), Ok(seq));
        }
        // Not ours: dropped, counted.
        client.send(&[1, 2, 3]).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        stop.request();
        // Every thread was blocked in recvfrom with no timeout: only the shutdown ends them.
        let c = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the pool's threads woke at the stop")
            .unwrap();
        assert_eq!(c.datagrams_out, 20);
        assert_eq!(c.datagrams_in, 21);
        assert_eq!(c.dropped_length, 1);
        assert_eq!(c.send_errors, 0);
    }

    #[test]
    fn the_pool_size_is_the_knob_or_the_default_within_bounds() {
        assert_eq!(threads(None), DEFAULT_THREADS);
        assert_eq!(threads(Some(2)), 2);
        assert_eq!(threads(Some(0)), 1);
        assert_eq!(threads(Some(1000)), MAX_THREADS);
    }
}
