//! io_uring over pipes: for each pipe a WRITE SQE linked (IOSQE_IO_LINK) to a READ SQE, all N
//! pairs submitted with one `io_uring_enter` that waits for all 2N completions.
//!
//! With SQPOLL the kernel thread picks up the SQEs: no enter is made to submit (unless the
//! poller sleeps and must be woken), and completions are awaited by spinning on the CQ in
//! user space, so the loop makes about zero syscalls.

use super::ring;
use crate::error::CaseError;
use crate::io::sys::PipeSet;
use crate::io::PipeBatch;
use crate::measure::{clock, pin::CpuPlan, Counters};
use crate::model::{Files, UringKnobs};
use io_uring::{opcode, squeue, types, IoUring};
use std::io;
use std::os::fd::AsRawFd;

/// Longest a batch may take before the case fails rather than hangs, ns.
const BATCH_TIMEOUT_NS: u64 = 5_000_000_000;

pub(crate) struct LinkedPairs {
    set: PipeSet,
    ring: IoUring,
    sqpoll: bool,
    fixed: bool,
    enters: u64,
    wakeups: u64,
    sqes: u64,
    cqes: u64,
}

impl LinkedPairs {
    pub(crate) fn new(
        set: PipeSet,
        k: &UringKnobs,
        plan: &CpuPlan,
    ) -> Result<LinkedPairs, CaseError> {
        let entries = (2 * set.pipes.len()).next_power_of_two().max(8) as u32;
        let (ring, _setup) = ring::build(k, entries, plan)?;
        if k.files == Files::Registered {
            // Registered files: slot 2i is pipe i's read end, 2i+1 its write end.
            let fds: Vec<i32> = set
                .pipes
                .iter()
                .flat_map(|p| [p.rd.as_raw_fd(), p.wr.as_raw_fd()])
                .collect();
            ring.submitter()
                .register_files(&fds)
                .map_err(|e| CaseError::unavailable(format!("register_files refused: {e}")))?;
        }
        Ok(LinkedPairs {
            set,
            ring,
            sqpoll: k.sqpoll_idle_ms().is_some(),
            fixed: k.files == Files::Registered,
            enters: 0,
            wakeups: 0,
            sqes: 0,
            cqes: 0,
        })
    }

    fn entries(&self, i: usize) -> (squeue::Entry, squeue::Entry) {
        let (s, r) = (&self.set.send[i], &self.set.recv[i]);
        let len = self.set.msg_bytes as u32;
        let (w, rd) = if self.fixed {
            let slot = 2 * i as u32;
            (
                opcode::Write::new(types::Fixed(slot + 1), s.as_ptr(), len).build(),
                opcode::Read::new(types::Fixed(slot), r.as_ptr() as *mut u8, len).build(),
            )
        } else {
            let p = &self.set.pipes[i];
            (
                opcode::Write::new(types::Fd(p.wr.as_raw_fd()), s.as_ptr(), len).build(),
                opcode::Read::new(types::Fd(p.rd.as_raw_fd()), r.as_ptr() as *mut u8, len).build(),
            )
        };
        (
            w.flags(squeue::Flags::IO_LINK).user_data(2 * i as u64),
            rd.user_data(2 * i as u64 + 1),
        )
    }

    /// Waits for `want` CQEs: spinning in user space under SQPOLL, else the submit already
    /// waited for them.
    fn reap(&mut self, want: usize) -> io::Result<()> {
        let msg = self.set.msg_bytes as i32;
        let mut got = 0;
        let deadline = clock::now_ns() + BATCH_TIMEOUT_NS;
        let mut spins = 0u32;
        while got < want {
            let mut cq = self.ring.completion();
            for cqe in &mut cq {
                got += 1;
                if cqe.result() != msg {
                    let op = if cqe.user_data() % 2 == 0 {
                        "write"
                    } else {
                        "read"
                    };
                    let pipe = cqe.user_data() / 2;
                    return Err(if cqe.result() < 0 {
                        io::Error::from_raw_os_error(-cqe.result())
                    } else {
                        io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("pipe {pipe}: short {op}: {} of {msg} bytes", cqe.result()),
                        )
                    });
                }
            }
            drop(cq);
            if got < want {
                if !self.sqpoll {
                    // The submit asked for all completions; wait for the rest.
                    self.ring.submit_and_wait(want - got)?;
                    self.enters += 1;
                    continue;
                }
                std::hint::spin_loop();
                spins = spins.wrapping_add(1);
                if spins % 4096 == 0 && clock::now_ns() > deadline {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "no CQE in 5 s"));
                }
            }
        }
        self.cqes += got as u64;
        Ok(())
    }
}

impl PipeBatch for LinkedPairs {
    fn prepare(&mut self) -> io::Result<()> {
        self.set.stamp();
        Ok(())
    }

    fn run(&mut self) -> io::Result<()> {
        let n = self.set.pipes.len();
        for i in 0..n {
            let (w, r) = self.entries(i);
            // SAFETY: the buffers named by both SQEs live in `self.set` until `reap` has seen
            // their CQEs below; the ring has room for 2N entries (sized at construction).
            unsafe {
                let mut sq = self.ring.submission();
                sq.push(&w).map_err(|_| io::Error::other("SQ full"))?;
                sq.push(&r).map_err(|_| io::Error::other("SQ full"))?;
            }
        }
        self.sqes += 2 * n as u64;
        if self.sqpoll {
            // The poller submits; enter only to wake it if it went idle.
            if self.ring.submission().need_wakeup() {
                self.wakeups += 1;
            }
            self.ring.submit()?;
        } else {
            self.ring.submit_and_wait(2 * n)?;
            self.enters += 1;
        }
        self.reap(2 * n)
    }

    fn verify(&self) -> io::Result<()> {
        self.set.verify()
    }

    fn counters(&self) -> Counters {
        let mut c = Counters::default();
        c.add("io_uring_enter", self.enters);
        c.add("sqpoll_wakeups", self.wakeups);
        c.add("sqes", self.sqes);
        c.add("cqes", self.cqes);
        c
    }
}
