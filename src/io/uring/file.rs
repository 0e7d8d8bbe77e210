//! File I/O through io_uring. Ops become SQEs (a chain's SQEs carry IOSQE_IO_LINK); `submit`
//! only fills the SQ, and `reap` makes one `io_uring_enter` that submits the whole batch and
//! waits for the completions asked for. So a batch of N linked write -> fsync -> read chains
//! costs one syscall.
//!
//! Knobs read here: `fixed_files` (the files are registered: `types::Fixed`, no fd lookup per
//! op) and `fixed_bufs` (the buffers are registered: READ_FIXED / WRITE_FIXED, no page pinning
//! per op). Setup flags (SQPOLL, DEFER_TASKRUN, IOPOLL) are `ring::build`'s. Opens queued as
//! ops use direct descriptors (a registered slot per file) on every ring, because a write
//! linked to an openat can only name the file by its slot.
//!
//! Under SQPOLL the kernel poller submits; completions are awaited by spinning on the CQ for
//! up to `SPIN_NS`, then with one `io_uring_enter(GETEVENTS)`. IOPOLL (polled completions)
//! needs O_DIRECT and a device with poll queues, and never carries an fsync: a polled ring
//! cannot complete non-polled ops (fio#1577 silently skipped its fdatasyncs that way).

use super::ring;
use crate::error::CaseError;
use crate::io::file::{Buffers, Done, FileConfig, FileOp, OpKind};
use crate::io::FileEngine;
use crate::measure::{clock, pin::CpuPlan, Counters};
use crate::model::{Bufs, Drive, Files, UringKnobs};
use io_uring::{opcode, squeue, types, IoUring};
use std::io;
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};

/// How long to spin on the CQ under SQPOLL before sleeping in the kernel, ns.
const SPIN_NS: u64 = 50_000;

enum Slot {
    Closed,
    /// A plain fd.
    Fd(OwnedFd),
    /// A plain fd also registered in the ring's file table (fixed_files).
    Registered(OwnedFd),
    /// A direct descriptor: exists only in the ring's file table.
    Direct,
}

pub(crate) struct RingFiles {
    cfg: FileConfig,
    /// Closed in `Drop`, before the buffers are freed or leaked.
    ring: ManuallyDrop<IoUring>,
    /// Freed in `Drop`, after the ring, only once every op is reaped; leaked otherwise (the
    /// kernel may still write into them).
    bufs: ManuallyDrop<Buffers>,
    slots: Vec<Slot>,
    fixed_files: bool,
    fixed_bufs: bool,
    sqpoll: bool,
    iopoll: bool,
    pending: usize,
    enters: u64,
    sqes: u64,
    cqes: u64,
    /// Reused buffer for the SQEs of one linked chain.
    chain: Vec<squeue::Entry>,
}

impl RingFiles {
    pub(crate) fn new(
        cfg: FileConfig,
        k: &UringKnobs,
        plan: &CpuPlan,
        dev_polls: Result<(), String>,
    ) -> Result<RingFiles, CaseError> {
        // Buffered I/O on a polled ring is refused by `ModelSpec::runs` (`io::file_engine`);
        // whether this file's device polls is the file system's to say.
        if k.drive == Drive::Iopoll {
            if let Err(why) = dev_polls {
                return Err(CaseError::unavailable(why));
            }
        }
        let entries = (cfg.depth.max(8).next_power_of_two()).min(4096) as u32;
        let (ring, _setup) = ring::build(k, entries, plan)?;
        let bufs = Buffers::new(cfg.bufs, cfg.buf_len)?;
        let n = cfg.paths.len().max(1) as u32;
        ring.submitter()
            .register_files_sparse(n)
            .map_err(|e| CaseError::unavailable(format!("register_files_sparse refused: {e}")))?;
        if k.bufs == Bufs::Registered {
            let iov = bufs.iovecs();
            // SAFETY: the buffers live in `self.bufs` as long as the ring (freed after it, in
            // `Drop`, or never) and are not freed while registered.
            unsafe { ring.submitter().register_buffers(&iov) }
                .map_err(|e| CaseError::unavailable(format!("register_buffers refused: {e}")))?;
        }
        Ok(RingFiles {
            slots: (0..n).map(|_| Slot::Closed).collect(),
            cfg,
            ring: ManuallyDrop::new(ring),
            bufs: ManuallyDrop::new(bufs),
            fixed_files: k.files == Files::Registered,
            fixed_bufs: k.bufs == Bufs::Registered,
            sqpoll: k.sqpoll_idle_ms().is_some(),
            iopoll: k.drive == Drive::Iopoll,
            pending: 0,
            enters: 0,
            sqes: 0,
            cqes: 0,
            chain: Vec::new(),
        })
    }

    fn sqe(&mut self, op: &FileOp) -> io::Result<squeue::Entry> {
        let slot = op.file as usize;
        let target = |s: &Slot| -> io::Result<Target> {
            match s {
                Slot::Fd(fd) => Ok(Target::Fd(fd.as_raw_fd())),
                Slot::Registered(_) | Slot::Direct => Ok(Target::Fixed(op.file)),
                Slot::Closed => Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("file slot {slot} is not open"),
                )),
            }
        };
        let e = match op.kind {
            OpKind::Open => {
                let path = self.cfg.paths.get(slot).ok_or_else(|| {
                    io::Error::new(io::ErrorKind::InvalidInput, "no such file slot")
                })?;
                let dest = types::DestinationSlot::try_from_slot_target(op.file)
                    .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "bad slot"))?;
                let e = opcode::OpenAt::new(types::Fd(libc::AT_FDCWD), path.as_ptr())
                    .file_index(Some(dest))
                    // O_CLOEXEC has no meaning for a direct descriptor (EINVAL).
                    .flags(self.cfg.open_flags)
                    .mode(0o644)
                    .build();
                self.slots[slot] = Slot::Direct;
                e
            }
            OpKind::Read { buf, offset, len } | OpKind::Write { buf, offset, len } => {
                let write = matches!(op.kind, OpKind::Write { .. });
                let len = len.min(self.bufs.len() as u32);
                let p = self.bufs.ptr(buf);
                let t = target(&self.slots[slot])?;
                macro_rules! rw {
                    ($fd:expr) => {
                        match (write, self.fixed_bufs) {
                            (true, true) => opcode::WriteFixed::new($fd, p, len, buf as u16)
                                .offset(offset)
                                .build(),
                            (true, false) => opcode::Write::new($fd, p, len).offset(offset).build(),
                            (false, true) => opcode::ReadFixed::new($fd, p, len, buf as u16)
                                .offset(offset)
                                .build(),
                            (false, false) => opcode::Read::new($fd, p, len).offset(offset).build(),
                        }
                    };
                }
                match t {
                    Target::Fd(fd) => rw!(types::Fd(fd)),
                    Target::Fixed(i) => rw!(types::Fixed(i)),
                }
            }
            OpKind::Fsync => {
                if self.iopoll {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "fsync on an IOPOLL ring is refused (polled rings cannot complete it)",
                    ));
                }
                match target(&self.slots[slot])? {
                    Target::Fd(fd) => opcode::Fsync::new(types::Fd(fd)).build(),
                    Target::Fixed(i) => opcode::Fsync::new(types::Fixed(i)).build(),
                }
            }
            OpKind::Close => match std::mem::replace(&mut self.slots[slot], Slot::Closed) {
                Slot::Fd(fd) => opcode::Close::new(types::Fd(fd.into_raw_fd())).build(),
                Slot::Direct => opcode::Close::new(types::Fixed(op.file)).build(),
                Slot::Registered(fd) => {
                    // The table keeps the registered file until the slot is updated.
                    self.ring
                        .submitter()
                        .register_files_update(op.file, &[-1])?;
                    opcode::Close::new(types::Fd(fd.into_raw_fd())).build()
                }
                Slot::Closed => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("file slot {slot} is not open"),
                    ))
                }
            },
        };
        let e = e.user_data(op.user);
        Ok(if op.link {
            e.flags(squeue::Flags::IO_LINK)
        } else {
            e
        })
    }

    fn enter(&mut self, want: usize) -> io::Result<()> {
        loop {
            match self.ring.submit_and_wait(want) {
                Ok(_) => {
                    self.enters += 1;
                    self.pending = 0;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => self.enters += 1,
                Err(e) => return Err(e),
            }
        }
    }

    fn drain(&mut self, done: &mut Vec<Done>) -> usize {
        let mut n = 0;
        for cqe in &mut self.ring.completion() {
            done.push(Done {
                user: cqe.user_data(),
                res: cqe.result() as i64,
            });
            n += 1;
        }
        self.cqes += n as u64;
        n
    }
}

enum Target {
    Fd(i32),
    Fixed(u32),
}

impl FileEngine for RingFiles {
    /// Queues `ops` chain by chain. A linked chain is published to the kernel whole: its SQEs
    /// are pushed under one SQ handle (the tail moves once) and only after there is room for
    /// all of them. Otherwise the kernel (or the SQPOLL poller, which reads the SQ at any
    /// moment) may see a chain cut short, end the link there, and run the rest unordered: a
    /// read before its write.
    fn submit(&mut self, ops: &[FileOp]) -> io::Result<()> {
        let mut chain = std::mem::take(&mut self.chain);
        let mut rest = ops;
        while !rest.is_empty() {
            let len = rest
                .iter()
                .position(|op| !op.link)
                .map_or(rest.len(), |i| i + 1);
            let (head, tail) = rest.split_at(len);
            rest = tail;
            chain.clear();
            for op in head {
                chain.push(self.sqe(op)?);
            }
            if chain.len() > self.ring.submission().capacity() {
                return Err(io::Error::other(format!(
                    "a chain of {} SQEs does not fit a ring of {}",
                    chain.len(),
                    self.ring.submission().capacity()
                )));
            }
            loop {
                let free = {
                    let sq = self.ring.submission();
                    sq.capacity() - sq.len()
                };
                if free >= chain.len() {
                    break;
                }
                // SQ too full for the whole chain: hand the queued chains to the kernel.
                if self.sqpoll {
                    self.ring.submit()?;
                    std::hint::spin_loop();
                } else {
                    self.enter(0)?;
                }
            }
            // SAFETY: every pointer in the SQEs (buffer, path) lives in `self` until the op's
            // CQE has been reaped: the caller waits for its ops before dropping us, and the
            // ring is dropped before the buffers (field order). Room was checked above.
            unsafe { self.ring.submission().push_multiple(&chain) }
                .map_err(|_| io::Error::other("SQ full after making room"))?;
            self.pending += chain.len();
            self.sqes += chain.len() as u64;
        }
        self.chain = chain;
        if self.sqpoll {
            // The poller picks the SQEs up; this enters only to wake it if it slept.
            self.ring.submit()?;
            self.pending = 0;
        }
        Ok(())
    }

    fn reap(&mut self, min: usize, done: &mut Vec<Done>) -> io::Result<()> {
        let mut got = self.drain(done);
        if self.sqpoll && !self.iopoll {
            let deadline = clock::now_ns() + SPIN_NS;
            while got < min && clock::now_ns() < deadline {
                std::hint::spin_loop();
                got += self.drain(done);
            }
        }
        while got < min || self.pending > 0 {
            self.enter(min.saturating_sub(got))?;
            got += self.drain(done);
        }
        Ok(())
    }

    fn bufs(&self) -> &Buffers {
        &self.bufs
    }

    fn open_now(&mut self, file: u32) -> io::Result<()> {
        let path = self
            .cfg
            .paths
            .get(file as usize)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no such file slot"))?;
        // SAFETY: path is NUL-terminated and outlives the call.
        let fd = unsafe { libc::open(path.as_ptr(), self.cfg.open_flags | libc::O_CLOEXEC, 0o644) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh fd we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        self.slots[file as usize] = if self.fixed_files {
            self.ring
                .submitter()
                .register_files_update(file, &[fd.as_raw_fd()])?;
            Slot::Registered(fd)
        } else {
            Slot::Fd(fd)
        };
        Ok(())
    }

    fn counters(&self) -> Counters {
        let mut c = Counters::default();
        c.add("io_uring_enter", self.enters);
        c.add("sqes", self.sqes);
        c.add("cqes", self.cqes);
        c
    }
}

impl Drop for RingFiles {
    fn drop(&mut self) {
        // Wait for anything still in flight so no op writes into freed buffers.
        let in_flight = self.sqes.saturating_sub(self.cqes) as usize;
        if in_flight > 0 {
            let mut sink = Vec::new();
            let _ = self.reap(in_flight, &mut sink);
        }
        let reaped = self.cqes >= self.sqes;
        // SAFETY: each taken once, here; neither field is used again.
        let (ring, bufs) = unsafe {
            (
                ManuallyDrop::take(&mut self.ring),
                ManuallyDrop::take(&mut self.bufs),
            )
        };
        // Closing the ring unregisters fixed buffers and cancels what is left in flight.
        drop(ring);
        if reaped {
            drop(bufs);
        } else {
            // A completion could not be reaped: an op may still write into the buffers
            // (O_DIRECT DMA included) after the ring closes. Leak them.
            bufs.leak();
        }
    }
}
