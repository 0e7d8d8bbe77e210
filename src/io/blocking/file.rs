//! Blocking file I/O in the calling thread: pread/pwrite/fsync/open/close. fio's `psync`
//! engine: every submission completes at once, inside `submit`, and is parked for `reap`.

use crate::io::file::{self, exec_all, Buffers, Done, FdTable, FileConfig, FileOp};
use crate::io::FileEngine;
use crate::measure::Counters;
use std::io;

pub(crate) struct SyncFiles {
    cfg: FileConfig,
    fds: FdTable,
    bufs: Buffers,
    done: Vec<Done>,
    ops: u64,
}

impl SyncFiles {
    pub(crate) fn new(cfg: FileConfig) -> io::Result<SyncFiles> {
        Ok(SyncFiles {
            fds: FdTable::new(cfg.paths.len()),
            bufs: Buffers::new(cfg.bufs, cfg.buf_len)?,
            done: Vec::with_capacity(cfg.depth.max(1) * 4),
            cfg,
            ops: 0,
        })
    }
}

impl FileEngine for SyncFiles {
    fn submit(&mut self, ops: &[FileOp]) -> io::Result<()> {
        self.ops += ops.len() as u64;
        let done = &mut self.done;
        exec_all(ops, &self.cfg, &self.fds, &self.bufs, |d| done.push(d));
        Ok(())
    }

    fn reap(&mut self, _min: usize, done: &mut Vec<Done>) -> io::Result<()> {
        done.append(&mut self.done);
        Ok(())
    }

    fn bufs(&self) -> &Buffers {
        &self.bufs
    }

    fn open_now(&mut self, file: u32) -> io::Result<()> {
        file::open_now(file, &self.cfg, &self.fds, &self.bufs)
    }

    fn counters(&self) -> Counters {
        let mut c = Counters::default();
        c.add("blocking_calls", self.ops);
        c
    }
}
