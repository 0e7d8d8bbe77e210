//! A stop request every server loop can wait on without polling: an eventfd the loop registers
//! beside its sockets (epoll, an io_uring poll) plus a flag for threads that check it.

use crate::io::sys::cvt;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// Ask a server to stop; the loop notices within one wakeup.
pub struct Stop {
    fd: OwnedFd,
    flag: AtomicBool,
}

impl Stop {
    pub fn new() -> io::Result<Stop> {
        // SAFETY: eventfd with valid flags returns a fresh fd or -1.
        let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })?;
        Ok(Stop {
            // SAFETY: fresh fd we own.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            flag: AtomicBool::new(false),
        })
    }

    /// Requests the stop (async-signal-safe apart from the atomic store: one write(2)).
    pub fn request(&self) {
        self.flag.store(true, Ordering::SeqCst);
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to our eventfd. A full counter (EAGAIN) still
        // leaves it readable, which is all a waiter needs.
        unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    pub fn requested(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Blocks (in poll(2), not spinning) until a stop is requested.
    pub fn wait(&self) {
        while !self.requested() {
            let mut p = libc::pollfd {
                fd: self.fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut p, 1, -1) };
        }
    }

    /// The eventfd: readable once a stop was requested.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_makes_the_eventfd_readable() {
        let s = Stop::new().unwrap();
        let mut p = libc::pollfd {
            fd: s.fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        assert_eq!(unsafe { libc::poll(&mut p, 1, 0) }, 0);
        assert!(!s.requested());
        s.request();
        // SAFETY: as above.
        assert_eq!(unsafe { libc::poll(&mut p, 1, 0) }, 1);
        assert!(s.requested());
    }
}
