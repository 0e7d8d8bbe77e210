//! epoll over pipes: the messages are written first (untimed); the timed path is one
//! `epoll_wait` that reports the ready pipes, then a `read` of each.

use super::Epoll;
use crate::io::sys::{self, PipeSet};
use crate::io::PipeBatch;
use crate::measure::Counters;
use crate::model::Trigger;
use rustix::io::Errno;
use std::io;

/// A wait that never returns is a failed case, not a hung run.
const WAIT_TIMEOUT_MS: i32 = 5_000;

pub(crate) struct PipeWait {
    set: PipeSet,
    ep: Epoll,
    events: Vec<libc::epoll_event>,
    done: Vec<bool>,
    waits: u64,
    events_seen: u64,
}

impl PipeWait {
    pub(crate) fn new(set: PipeSet, trigger: Trigger) -> io::Result<PipeWait> {
        let ep = Epoll::new(trigger)?;
        for (i, p) in set.pipes.iter().enumerate() {
            ep.add_readable(&p.rd, i as u64)?;
        }
        let n = set.pipes.len();
        Ok(PipeWait {
            set,
            ep,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; n.max(1)],
            done: vec![false; n],
            waits: 0,
            events_seen: 0,
        })
    }

    /// Edge-triggered: read until the pipe is drained. The receive buffer is one message, so
    /// a full read may leave bytes behind; read on until a short read or EAGAIN.
    fn read_edge(&mut self, i: usize) -> io::Result<()> {
        let fd = &self.set.pipes[i].rd;
        let buf = &mut self.set.recv[i];
        let mut got = 0;
        loop {
            match rustix::io::read(fd, &mut buf[got..]) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    got += n;
                    if got == buf.len() {
                        return Ok(()); // one message per pipe per round: drained
                    }
                }
                Err(Errno::WOULDBLOCK) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("pipe {i}: short message ({got} of {} bytes)", buf.len()),
                    ))
                }
                Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl PipeBatch for PipeWait {
    fn prepare(&mut self) -> io::Result<()> {
        self.set.stamp();
        for i in 0..self.set.pipes.len() {
            sys::write_all(&self.set.pipes[i].wr, &self.set.send[i])?;
        }
        Ok(())
    }

    fn run(&mut self) -> io::Result<()> {
        let n = self.set.pipes.len();
        self.done.iter_mut().for_each(|d| *d = false);
        let mut left = n;
        while left > 0 {
            let got = self.ep.wait(&mut self.events, WAIT_TIMEOUT_MS)?;
            self.waits += 1;
            if got == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "epoll_wait: no event in 5 s",
                ));
            }
            self.events_seen += got as u64;
            for k in 0..got {
                let i = self.events[k].u64 as usize;
                if self.done[i] {
                    continue;
                }
                match self.ep.trigger() {
                    Trigger::Level => {
                        sys::read_exact_ready(&self.set.pipes[i].rd, &mut self.set.recv[i])?;
                    }
                    Trigger::Edge => self.read_edge(i)?,
                }
                self.done[i] = true;
                left -= 1;
            }
        }
        Ok(())
    }

    fn verify(&self) -> io::Result<()> {
        self.set.verify()
    }

    fn counters(&self) -> Counters {
        let mut c = Counters::default();
        c.add("epoll_waits", self.waits);
        c.add("events", self.events_seen);
        c
    }
}
