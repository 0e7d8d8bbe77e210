//! epoll: readiness notification, level- or edge-triggered, then non-blocking syscalls.

mod pipe;
pub(crate) mod pubsub;
pub(crate) mod ring_wait;
pub(crate) mod server;
pub(crate) mod udp;

pub(crate) use pipe::PipeWait;

use crate::io::sys::cvt;
use crate::model::Trigger;
use rustix::event::epoll;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};

impl AsRawFd for Epoll {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// An epoll_ctl(2) operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ctl {
    Add,
    Mod,
    Del,
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
        Ok(Epoll {
            via_ring: None,
            fd: epoll::create(epoll::CreateFlags::CLOEXEC)?,
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
    pub(crate) fn add_readable(&self, fd: impl AsFd, token: u64) -> io::Result<()> {
        self.ctl(Ctl::Add, fd, libc::EPOLLIN as u32, token)
    }

    /// Waits up to `timeout_ms` for events; returns how many were filled in.
    ///
    /// A finite timeout is asked with a zero timeout first: the kernel reads the clock for a
    /// finite timeout (~95 ns more per call here, 370 against 275 ns for a wait that finds
    /// an event) even when events are ready; only when nothing is ready does it wait with the
    /// real timeout. An infinite one (-1) costs the same as zero, so it is asked at once: a
    /// probe would add one empty epoll_wait (~100 ns) to every wakeup that sleeps, i.e. one
    /// syscall per message at low rates (issue 31: epoll-lt made 1.98 waits per echoed
    /// message at 10 k msgs/s, a plain C loop 0.98).
    pub(crate) fn wait(
        &self,
        events: &mut [libc::epoll_event],
        timeout_ms: i32,
    ) -> io::Result<usize> {
        if let Some(r) = &self.via_ring {
            return r.borrow_mut().wait(self.fd.as_raw_fd(), events, timeout_ms);
        }
        if timeout_ms <= 0 {
            return self.wait_once(events, timeout_ms);
        }
        match self.wait_once(events, 0)? {
            0 => self.wait_once(events, timeout_ms),
            n => Ok(n),
        }
    }

    /// raw: rustix's epoll wait is epoll_pwait(2) (or epoll_pwait2), not epoll_wait(2).
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

    /// One epoll_ctl(2) on `fd` with `events` (EPOLL* bits; EPOLLET added for an
    /// edge-triggered instance), tagged `token`. `Del` passes no event (the kernel reads none).
    pub(crate) fn ctl(&self, op: Ctl, fd: impl AsFd, events: u32, token: u64) -> io::Result<()> {
        let mut flags = events;
        if self.trigger == Trigger::Edge && op != Ctl::Del {
            flags |= libc::EPOLLET as u32;
        }
        let (flags, data) = (
            epoll::EventFlags::from_bits_retain(flags),
            epoll::EventData::new_u64(token),
        );
        match op {
            Ctl::Add => epoll::add(&self.fd, fd, data, flags),
            Ctl::Mod => epoll::modify(&self.fd, fd, data, flags),
            Ctl::Del => epoll::delete(&self.fd, fd),
        }?;
        Ok(())
    }

    pub(crate) fn trigger(&self) -> Trigger {
        self.trigger
    }
}
