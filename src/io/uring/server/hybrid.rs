//! `hybrid`: epoll accepts, io_uring carries the data (the incremental migration a published
//! write-up recommends). The loop waits in `epoll_wait` on two things: the listening socket
//! (level-triggered; accepted with `accept4` until EAGAIN) and the ring's own fd, readable
//! while completions wait in the CQ. Each accepted connection then runs on the ring exactly as
//! in `uring` (recv and send SQEs). Each turn submits what is queued (`io_uring_enter`, no
//! wait) before it waits in epoll: the hybrid's price is that second syscall.
//!
//! Accept errors follow `io::accept`: a pause (EMFILE...) takes the listener out of the epoll
//! set for `ACCEPT_PAUSE` (a level-triggered listener left in would wake the loop at once).

use super::conn::Fd;
use super::Server;
use crate::io::accept::{accept_action, AcceptAction, ACCEPT_PAUSE};
use crate::io::epoll::{Ctl, Epoll};
use crate::model::Trigger;
use crate::proto::Protocol;
use std::io;
use std::os::fd::AsFd;
use std::time::Instant;

const LISTENER: u64 = 0;
const RING: u64 = 1;

pub(super) struct Hybrid {
    ep: Epoll,
    events: Vec<libc::epoll_event>,
    /// Accepting is paused until then (the listener is out of the epoll set).
    paused_until: Option<Instant>,
}

impl Hybrid {
    /// An epoll set of the listener `lfd` and the ring's fd.
    pub(crate) fn new(lfd: impl AsFd, ring_fd: impl AsFd) -> io::Result<Hybrid> {
        let ep = Epoll::new(Trigger::Level)?;
        ep.add_readable(lfd, LISTENER)?;
        ep.add_readable(ring_fd, RING)?;
        Ok(Hybrid {
            ep,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; 8],
            paused_until: None,
        })
    }
}

impl<P: Protocol> Server<P> {
    /// One turn of the hybrid loop: submit what is queued, wait in epoll (not at all if
    /// completions are already waiting), accept what the listener has.
    pub(super) fn hybrid_wait(&mut self) -> io::Result<()> {
        self.submit()?;
        let Some(h) = self.hybrid.as_mut() else {
            return Ok(());
        };
        if let Some(t) = h.paused_until {
            if Instant::now() >= t {
                h.ep.add_readable(&self.listener, LISTENER)?;
                h.paused_until = None;
            }
        }
        let timeout = if !self.ring.completion().is_empty() {
            0
        } else {
            match h.paused_until {
                Some(t) => t.saturating_duration_since(Instant::now()).as_millis() as i32 + 1,
                None => -1,
            }
        };
        let n = h.ep.wait(&mut h.events, timeout)?;
        self.c.hybrid_epoll_waits += 1;
        if h.events[..n].iter().any(|e| e.u64 == LISTENER) {
            self.accept_ready()?;
        }
        Ok(())
    }

    /// Accepts until EAGAIN, each connection opened on the ring.
    fn accept_ready(&mut self) -> io::Result<()> {
        loop {
            // SAFETY: a listening socket; no address wanted.
            let fd = unsafe {
                libc::accept4(
                    self.lfd,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_CLOEXEC,
                )
            };
            if fd >= 0 {
                self.c.accepts += 1;
                self.open_conn(Fd::Raw(fd))?;
                continue;
            }
            let e = io::Error::last_os_error();
            match accept_action(e.raw_os_error().unwrap_or(libc::EIO)) {
                AcceptAction::Wait => return Ok(()),
                AcceptAction::Retry => self.c.accept_errors += 1,
                AcceptAction::Pause => {
                    self.c.accept_pauses += 1;
                    if let Some(h) = self.hybrid.as_mut() {
                        h.ep.ctl(Ctl::Del, &self.listener, 0, 0)?;
                        h.paused_until = Some(Instant::now() + ACCEPT_PAUSE);
                    }
                    return Ok(());
                }
                AcceptAction::Fatal => {
                    return Err(io::Error::new(e.kind(), format!("accept4: {e}")));
                }
            }
        }
    }
}
