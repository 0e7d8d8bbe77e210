//! Readiness over many fds, for the fd-scaling workload: epoll (O(ready)) against poll(2) and
//! select(2) (O(watched)), each measured the same way: one of N pipes is made ready, the timed
//! path is one wait that finds it plus the read.

use crate::error::CaseError;
use crate::io::epoll::Epoll;
use crate::io::sys::{self, cvt, PipeSet};
use crate::model::Trigger;
use std::io;
use std::os::fd::AsRawFd;

/// The wait mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    Epoll(Trigger),
    Poll,
    Select,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Epoll(Trigger::Level) => "epoll-lt",
            Mechanism::Epoll(Trigger::Edge) => "epoll-et",
            Mechanism::Poll => "poll",
            Mechanism::Select => "select",
        }
    }
}

const WAIT_TIMEOUT_MS: i32 = 5_000;

/// N watched pipes and the state one mechanism needs to wait on them.
pub struct Watched {
    set: PipeSet,
    how: How,
    next: usize,
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

impl Watched {
    pub fn new(n: usize, msg_bytes: usize, mech: Mechanism) -> Result<Watched, CaseError> {
        let set = PipeSet::new(n, msg_bytes).map_err(|e| match e.kind() {
            io::ErrorKind::Unsupported => CaseError::unavailable(e.to_string()),
            _ => CaseError::from(e),
        })?;
        let how = match mech {
            Mechanism::Epoll(t) => {
                let ep = Epoll::new(t)?;
                for (i, p) in set.pipes.iter().enumerate() {
                    ep.add_readable(p.rd.as_raw_fd(), i as u64)?;
                }
                How::Epoll(ep, vec![libc::epoll_event { events: 0, u64: 0 }; 8])
            }
            Mechanism::Poll => How::Poll(
                set.pipes
                    .iter()
                    .map(|p| libc::pollfd {
                        fd: p.rd.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    })
                    .collect(),
            ),
            Mechanism::Select => {
                let fds: Vec<i32> = set.pipes.iter().map(|p| p.rd.as_raw_fd()).collect();
                let max = fds.iter().copied().max().unwrap_or(0);
                if max >= libc::FD_SETSIZE as i32 {
                    return Err(CaseError::not_applicable(format!(
                        "select(2) cannot watch fd {max}: fds must be below FD_SETSIZE ({})",
                        libc::FD_SETSIZE
                    )));
                }
                // SAFETY: fd_set is plain data; FD_ZERO/FD_SET on fds below FD_SETSIZE.
                let mut master: libc::fd_set = unsafe { std::mem::zeroed() };
                unsafe { libc::FD_ZERO(&mut master) };
                for &fd in &fds {
                    unsafe { libc::FD_SET(fd, &mut master) };
                }
                How::Select {
                    master,
                    nfds: max + 1,
                    fds,
                }
            }
        };
        Ok(Watched {
            set,
            how,
            next: 0,
            waits: 0,
        })
    }

    /// Untimed: writes a message into the next pipe (round robin) and returns its index.
    pub fn make_one_ready(&mut self) -> io::Result<usize> {
        let i = self.next;
        self.next = (self.next + 1) % self.set.pipes.len();
        self.set.stamp();
        sys::write_all(self.set.pipes[i].wr.as_raw_fd(), &self.set.send[i])?;
        Ok(i)
    }

    /// Timed: one wait that finds the ready pipe, then the read. Returns the pipe found.
    pub fn wait_and_read(&mut self) -> io::Result<usize> {
        self.waits += 1;
        let i = match &mut self.how {
            How::Epoll(ep, events) => {
                let n = ep.wait(events, WAIT_TIMEOUT_MS)?;
                if n == 0 {
                    return Err(timeout("epoll_wait"));
                }
                events[0].u64 as usize
            }
            How::Poll(pfds) => {
                // Zero timeout first, as `Epoll::wait` does: a finite timeout costs timer
                // setup even when an fd is ready.
                let mut n = 0;
                for timeout in [0, WAIT_TIMEOUT_MS] {
                    // SAFETY: pfds is valid for its length.
                    n = cvt(unsafe {
                        libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout)
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
                // select(2) overwrites its set: start from a copy of the master set. Zero
                // timeout first, as above.
                let mut rd = *master;
                let mut n = 0;
                for secs in [0, WAIT_TIMEOUT_MS / 1000] {
                    rd = *master;
                    let mut tv = libc::timeval {
                        tv_sec: secs as _,
                        tv_usec: 0,
                    };
                    // SAFETY: rd is a valid fd_set; the other sets are null.
                    n = cvt(unsafe {
                        libc::select(
                            *nfds,
                            &mut rd,
                            std::ptr::null_mut(),
                            std::ptr::null_mut(),
                            &mut tv,
                        )
                    })?;
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
        let fd = self.set.pipes[i].rd.as_raw_fd();
        sys::read_exact_ready(fd, &mut self.set.recv[i])?;
        Ok(i)
    }

    /// Untimed: checks the message read from pipe `i` is the one sent.
    pub fn verify(&self, i: usize) -> io::Result<()> {
        if self.set.recv[i] != self.set.send[i] {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("pipe {i}: received bytes differ from the message sent"),
            ));
        }
        Ok(())
    }

    pub fn waits(&self) -> u64 {
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
    fn every_mechanism_finds_the_ready_pipe() {
        for mech in [
            Mechanism::Epoll(Trigger::Level),
            Mechanism::Epoll(Trigger::Edge),
            Mechanism::Poll,
            Mechanism::Select,
        ] {
            let mut w = Watched::new(10, 16, mech).unwrap();
            for _ in 0..25 {
                let i = w.make_one_ready().unwrap();
                assert_eq!(w.wait_and_read().unwrap(), i, "{}", mech.name());
                w.verify(i).unwrap();
            }
        }
    }
}
