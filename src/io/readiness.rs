//! Readiness over many fds, for the fd-scaling workload: epoll (O(ready)) against poll(2) and
//! select(2) (O(watched)), each measured the same way: one of N watched fds is made ready, the
//! timed path is one wait that finds it plus the read.
//!
//! The watched fds are eventfds: one fd per watched object, so 10,000 of them fit under a
//! 20,000-fd limit where pipes (two fds each) would not. Readiness goes through the same
//! `->poll` file operation for either; writing 8 bytes makes one readable, reading them
//! makes it idle again.

use crate::error::CaseError;
use crate::io::epoll::Epoll;
use crate::io::sys::{self, cvt};
use crate::model::Trigger;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// The wait mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mechanism {
    Epoll(Trigger),
    Poll,
    Select,
}

impl Mechanism {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mechanism::Epoll(Trigger::Level) => "epoll-lt",
            Mechanism::Epoll(Trigger::Edge) => "epoll-et",
            Mechanism::Poll => "poll",
            Mechanism::Select => "select",
        }
    }
}

const WAIT_TIMEOUT_MS: i32 = 5_000;

/// N watched eventfds and the state one mechanism needs to wait on them.
pub(crate) struct Watched {
    fds: Vec<OwnedFd>,
    how: How,
    next: usize,
    seq: u64,
    got: u64,
    waits: u64,
}

enum How {
    Epoll(Epoll, Vec<libc::epoll_event>),
    Poll(Vec<libc::pollfd>),
    Select {
        master: libc::fd_set,
        nfds: i32,
        fds: Vec<i32>,
    },
}

fn eventfd() -> io::Result<OwnedFd> {
    use rustix::event::EventfdFlags;
    Ok(rustix::event::eventfd(
        0,
        EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC,
    )?)
}

impl Watched {
    pub(crate) fn new(n: usize, mech: Mechanism) -> Result<Watched, CaseError> {
        sys::raise_nofile(n as u64 + 64).map_err(|e| match e.kind() {
            io::ErrorKind::Unsupported => CaseError::unavailable(e.to_string()),
            _ => CaseError::from(e),
        })?;
        let fds = (0..n).map(|_| eventfd()).collect::<io::Result<Vec<_>>>()?;
        let how = match mech {
            Mechanism::Epoll(t) => {
                let ep = Epoll::new(t)?;
                for (i, fd) in fds.iter().enumerate() {
                    ep.add_readable(fd, i as u64)?;
                }
                How::Epoll(ep, vec![libc::epoll_event { events: 0, u64: 0 }; 8])
            }
            Mechanism::Poll => How::Poll(
                fds.iter()
                    .map(|fd| libc::pollfd {
                        fd: fd.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    })
                    .collect(),
            ),
            Mechanism::Select => {
                let raw: Vec<i32> = fds.iter().map(|fd| fd.as_raw_fd()).collect();
                let max = raw.iter().copied().max().unwrap_or(0);
                if max >= libc::FD_SETSIZE as i32 {
                    return Err(CaseError::not_applicable(format!(
                        "select(2) cannot watch fd {max}: fds must be below FD_SETSIZE ({})",
                        libc::FD_SETSIZE
                    )));
                }
                // raw: libc's fd_set, for the select(2) below.
                // SAFETY: fd_set is plain data; FD_ZERO/FD_SET on fds below FD_SETSIZE.
                let mut master: libc::fd_set = unsafe { std::mem::zeroed() };
                unsafe { libc::FD_ZERO(&mut master) };
                for &fd in &raw {
                    unsafe { libc::FD_SET(fd, &mut master) };
                }
                How::Select {
                    master,
                    nfds: max + 1,
                    fds: raw,
                }
            }
        };
        Ok(Watched {
            fds,
            how,
            next: 0,
            seq: 0,
            got: 0,
            waits: 0,
        })
    }

    /// Untimed: makes the next fd (round robin) readable by adding a fresh sequence number to
    /// its counter; returns its index.
    pub(crate) fn make_one_ready(&mut self) -> io::Result<usize> {
        let i = self.next;
        self.next = (self.next + 1) % self.fds.len();
        self.seq += 1;
        sys::write_all(&self.fds[i], &self.seq.to_ne_bytes())?;
        Ok(i)
    }

    /// Timed: one wait that finds the ready fd, then the read. Returns the fd's index.
    ///
    /// Each mechanism asks with a zero timeout first, as `Epoll::wait` does: a finite timeout
    /// costs timer setup even when an fd is ready, and -1 could hang a broken case.
    pub(crate) fn wait_and_read(&mut self) -> io::Result<usize> {
        self.waits += 1;
        let i = match &mut self.how {
            How::Epoll(ep, events) => {
                if ep.wait(events, WAIT_TIMEOUT_MS)? == 0 {
                    return Err(timeout("epoll_wait"));
                }
                events[0].u64 as usize
            }
            How::Poll(pfds) => {
                let mut n = 0;
                for t in [0, WAIT_TIMEOUT_MS] {
                    // raw: rustix's poll is ppoll(2), the measured call is poll(2).
                    // SAFETY: pfds is valid for its length.
                    n = cvt(unsafe {
                        libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, t)
                    })?;
                    if n > 0 {
                        break;
                    }
                }
                if n == 0 {
                    return Err(timeout("poll"));
                }
                // poll(2) says how many are ready, not which: the caller scans.
                pfds.iter()
                    .position(|p| p.revents & libc::POLLIN != 0)
                    .ok_or_else(|| {
                        io::Error::new(io::ErrorKind::InvalidData, "poll: no POLLIN among revents")
                    })?
            }
            How::Select { master, nfds, fds } => {
                // select(2) overwrites its set: each call starts from a copy of the master set.
                let mut rd = *master;
                let mut n = 0;
                for secs in [0, WAIT_TIMEOUT_MS / 1000] {
                    rd = *master;
                    let mut tv = libc::timeval {
                        tv_sec: secs as _,
                        tv_usec: 0,
                    };
                    let (w, e) = (std::ptr::null_mut(), std::ptr::null_mut());
                    // raw: rustix's select is pselect6(2), the measured call is select(2).
                    // SAFETY: rd is a valid fd_set; the other sets are null.
                    n = cvt(unsafe { libc::select(*nfds, &mut rd, w, e, &mut tv) })?;
                    if n > 0 {
                        break;
                    }
                }
                if n == 0 {
                    return Err(timeout("select"));
                }
                // SAFETY: FD_ISSET reads rd for fds below FD_SETSIZE.
                fds.iter()
                    .position(|&fd| unsafe { libc::FD_ISSET(fd, &rd) })
                    .ok_or_else(|| {
                        io::Error::new(io::ErrorKind::InvalidData, "select: no fd set")
                    })?
            }
        };
        let mut buf = [0u8; 8];
        sys::read_exact_ready(&self.fds[i], &mut buf)?;
        self.got = u64::from_ne_bytes(buf);
        Ok(i)
    }

    /// Untimed: checks the last read returned the last sequence number written.
    pub(crate) fn verify(&self) -> io::Result<()> {
        if self.got != self.seq {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("read counter {} but wrote {}", self.got, self.seq),
            ));
        }
        Ok(())
    }

    pub(crate) fn waits(&self) -> u64 {
        self.waits
    }
}

fn timeout(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("{what}: nothing ready in 5 s"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mechanism_finds_the_ready_fd() {
        for mech in [
            Mechanism::Epoll(Trigger::Level),
            Mechanism::Epoll(Trigger::Edge),
            Mechanism::Poll,
            Mechanism::Select,
        ] {
            let mut w = Watched::new(10, mech).unwrap();
            for _ in 0..25 {
                let i = w.make_one_ready().unwrap();
                assert_eq!(w.wait_and_read().unwrap(), i, "{}", mech.name());
                w.verify().unwrap();
            }
        }
    }
}
