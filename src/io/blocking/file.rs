//! Blocking file I/O in the calling thread: pread/pwrite/fsync/open/close. fio's `psync`
//! engine: every submission completes at once, inside `submit`, and is parked for `reap`.

use crate::io::file::{exec_all, Buffers, Done, FdTable, FileConfig, FileOp, OpKind};
use crate::io::FileEngine;
use crate::measure::Counters;
use std::io;

pub struct SyncFiles {
    cfg: FileConfig,
    fds: FdTable,
    bufs: Buffers,
    done: Vec<Done>,
    ops: u64,
}

impl SyncFiles {
    pub fn new(cfg: FileConfig) -> io::Result<SyncFiles> {
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
        let op = FileOp {
            kind: OpKind::Open,
            file,
            user: 0,
            link: false,
        };
        let mut r = 0;
        exec_all(&[op], &self.cfg, &self.fds, &self.bufs, |d| r = d.res);
        Done { user: 0, res: r }.result().map(|_| ())
    }

    fn counters(&self) -> Counters {
        let mut c = Counters::default();
        c.add("blocking_calls", self.ops);
        c
    }
}
