//! epoll: readiness notification, level- or edge-triggered, then non-blocking syscalls.

mod pipe;
pub(crate) mod pubsub;
pub(crate) mod ring_wait;
pub(crate) mod server;

pub(crate) use pipe::PipeWait;

use crate::io::sys::cvt;
use crate::model::Trigger;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

impl AsRawFd for Epoll {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// An epoll instance.
pub(crate) struct Epoll {
    /// `uring-epollwait`: waits go through a ring (IORING_OP_EPOLL_WAIT). Declared before
    /// `fd`: the ring (and its armed wait) goes first.
    via_ring: Option<std::cell::RefCell<ring_wait::RingWait>>,
    fd: OwnedFd,
    trigger: Trigger,
    /// Busy polling is set (`epoll-busypoll`): the server reads each connection's NAPI id
    /// (`io::napi`).
    pub(super) busy_poll: bool,
}

impl Epoll {
    pub(crate) fn new(trigger: Trigger) -> io::Result<Epoll> {
        // SAFETY: epoll_create1 with a valid flag returns a fresh fd or -1.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: fresh fd we now own.
        Ok(Epoll {
            via_ring: None,
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            trigger,
            busy_poll: false,
        })
    }

    /// A model row's instance: its trigger, and epoll's busy polling (EPIOCSPARAMS, 6.9) where
    /// the row asks for it. The one place the busy-poll knob is read.
    pub(crate) fn with_knobs(k: &crate::model::EpollKnobs) -> io::Result<Epoll> {
        let mut ep = Epoll::new(k.trigger)?;
        if let Some(b) = &k.busy_poll {
            ep.busy_poll = true;
            crate::env::uring::modern::set_epoll_busy_poll(
                ep.fd.as_raw_fd(),
                b.busy_poll_usecs,
                b.budget,
                b.prefer_busy_poll,
            )?;
        }
        Ok(ep)
    }

    /// An instance whose waits are IORING_OP_EPOLL_WAIT on a ring of its own (6.15).
    pub(crate) fn via_ring(
        trigger: Trigger,
        max_events: usize,
        k: &crate::model::UringKnobs,
    ) -> io::Result<Epoll> {
        let mut ep = Epoll::new(trigger)?;
        ep.via_ring = Some(std::cell::RefCell::new(ring_wait::RingWait::new(
            max_events, k,
        )?));
        Ok(ep)
    }

    /// Watches `fd` for input, tagging its events with `token`.
    pub(crate) fn add_readable(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut flags = libc::EPOLLIN as u32;
        if self.trigger == Trigger::Edge {
            flags |= libc::EPOLLET as u32;
        }
        let mut ev = libc::epoll_event {
            events: flags,
            u64: token,
        };
        // SAFETY: valid epoll fd, fd and event pointer.
        cvt(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
        Ok(())
    }

    /// Waits up to `timeout_ms` for events; returns how many were filled in.
    ///
    /// Asks with a zero timeout first: on this kind of VM a finite timeout costs ~100 ns per
    /// call in timer setup even when events are ready, while -1 could hang a broken case
    /// forever. Only when nothing is ready does it wait with the real timeout.
    pub(crate) fn wait(
        &self,
        events: &mut [libc::epoll_event],
        timeout_ms: i32,
    ) -> io::Result<usize> {
        if let Some(r) = &self.via_ring {
            return r.borrow_mut().wait(self.fd.as_raw_fd(), events, timeout_ms);
        }
        match self.wait_once(events, 0)? {
            0 if timeout_ms != 0 => self.wait_once(events, timeout_ms),
            n => Ok(n),
        }
    }

    fn wait_once(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> io::Result<usize> {
        loop {
            // SAFETY: events is valid for events.len() entries.
            let n = unsafe {
                libc::epoll_wait(
                    self.fd.as_raw_fd(),
                    events.as_mut_ptr(),
                    events.len() as i32,
                    timeout_ms,
                )
            };
            match cvt(n) {
                Ok(n) => return Ok(n as usize),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// epoll_ctl on `fd` with `events` (EPOLLET added for an edge-triggered instance).
    pub(crate) fn ctl(
        &self,
        op: libc::c_int,
        fd: RawFd,
        events: u32,
        token: u64,
    ) -> io::Result<()> {
        let mut flags = events;
        if self.trigger == Trigger::Edge && op != libc::EPOLL_CTL_DEL {
            flags |= libc::EPOLLET as u32;
        }
        let mut ev = libc::epoll_event {
            events: flags,
            u64: token,
        };
        // SAFETY: valid epoll fd and event pointer; a bad fd is reported as an error.
        cvt(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut ev) })?;
        Ok(())
    }

    pub(crate) fn trigger(&self) -> Trigger {
        self.trigger
    }
}
