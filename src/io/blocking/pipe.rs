//! Blocking pipe I/O: `write` then `read` of each message, two syscalls per message.

use crate::io::sys::{self, PipeSet};
use crate::io::PipeBatch;
use crate::measure::Counters;
use std::io;

/// write + read per message; a batch of N is N such pairs (no batching is possible).
pub(crate) struct PipeLoop {
    set: PipeSet,
}

impl PipeLoop {
    pub(crate) fn new(set: PipeSet) -> PipeLoop {
        PipeLoop { set }
    }
}

impl PipeBatch for PipeLoop {
    fn prepare(&mut self) -> io::Result<()> {
        self.set.stamp();
        Ok(())
    }

    fn run(&mut self) -> io::Result<()> {
        let s = &mut self.set;
        for i in 0..s.pipes.len() {
            sys::write_all(&s.pipes[i].wr, &s.send[i])?;
            sys::read_exact_ready(&s.pipes[i].rd, &mut s.recv[i])?;
        }
        Ok(())
    }

    fn verify(&self) -> io::Result<()> {
        self.set.verify()
    }

    fn counters(&self) -> Counters {
        Counters::default()
    }
}
