//! monoio's file API (`monoio::fs::File` on its io_uring driver) as a file engine: openat,
//! `write_all_at` / `read_at` at an offset, `sync_all` (fsync) and `close` are io_uring ops,
//! submitted by monoio when its runtime parks (one `io_uring_enter` for every op its tasks
//! queued meanwhile). monoio does not link ops: a chain's next op is queued when its previous
//! one completed, so a batch of open -> write -> close chains takes at least three rounds.
//!
//! What a monoio user writes, with one difference that is not the runtime's: the buffers are
//! the engine's own (`Buffers`, shared with every engine), handed to monoio as owned buffers
//! ([`RawBuf`]) instead of `Vec`s, so no copy is ours. One `File` per slot is shared by the
//! chains that work on it (positional I/O needs no handle of its own).

use super::{chains, neg_errno, Open};
use crate::io::file::{Buffers, Done, FileConfig, FileOp, OpKind};
use crate::io::FileEngine;
use crate::measure::Counters;
use ::monoio::buf::{IoBuf, IoBufMut};
use ::monoio::fs::{File, OpenOptions};
use ::monoio::{IoUringDriver, Runtime, RuntimeBuilder};
use std::cell::RefCell;
use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::rc::Rc;

/// A part of one of the engine's buffers, handed to monoio as an owned buffer.
struct RawBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: `ptr..ptr+len` is part of one buffer of the engine's `Buffers`, which outlive every
// op (reap runs the runtime until every op has completed; the engine owns the buffers), and
// the buffer belongs to this op alone while it is in flight (the engine contract). The
// pointer never moves: the memory is not the struct's.
unsafe impl IoBuf for RawBuf {
    fn read_ptr(&self) -> *const u8 {
        self.ptr
    }
    fn bytes_init(&self) -> usize {
        self.len
    }
}

// SAFETY: as above; the kernel writes at most `len` bytes there.
unsafe impl IoBufMut for RawBuf {
    fn write_ptr(&mut self) -> *mut u8 {
        self.ptr
    }
    fn bytes_total(&mut self) -> usize {
        self.len
    }
    unsafe fn set_init(&mut self, _pos: usize) {}
}

struct Shared {
    cfg: FileConfig,
    bufs: Buffers,
    slots: RefCell<Vec<Option<Rc<File>>>>,
}

pub(crate) struct MonoioFiles {
    rt: Runtime<IoUringDriver>,
    shared: Rc<Shared>,
    pending: Vec<Vec<FileOp>>,
    ops: u64,
    chains: u64,
}

impl MonoioFiles {
    pub(crate) fn new(cfg: FileConfig) -> Result<MonoioFiles, crate::error::CaseError> {
        let rt = RuntimeBuilder::<IoUringDriver>::new()
            .build()
            .map_err(|e| {
                crate::error::CaseError::unavailable(format!("monoio's io_uring driver: {e}"))
            })?;
        Ok(MonoioFiles {
            rt,
            shared: Rc::new(Shared {
                bufs: Buffers::new(cfg.bufs, cfg.buf_len)?,
                slots: RefCell::new((0..cfg.paths.len()).map(|_| None).collect()),
                cfg,
            }),
            pending: Vec::new(),
            ops: 0,
            chains: 0,
        })
    }
}

impl Shared {
    async fn open(&self, slot: u32) -> Result<File, i64> {
        let how = Open::from_flags(self.cfg.open_flags)?;
        let path = self
            .cfg
            .paths
            .get(slot as usize)
            .map(|p| std::path::Path::new(OsStr::from_bytes(p.as_bytes())))
            .ok_or(-(libc::EBADF as i64))?;
        OpenOptions::new()
            .read(how.read)
            .write(how.write)
            .create(how.create)
            .truncate(how.truncate)
            .open(path)
            .await
            .map_err(|e| neg_errno(&e))
    }

    fn file(&self, slot: u32) -> Option<Rc<File>> {
        self.slots.borrow().get(slot as usize)?.clone()
    }

    /// Buffer `buf` from byte `from` to `len` (at most the buffer's length).
    fn raw(&self, buf: u32, from: usize, len: u32) -> RawBuf {
        let len = (len as usize).min(self.bufs.len());
        RawBuf {
            // SAFETY: `from <= len <= the buffer's length`.
            ptr: unsafe { self.bufs.ptr(buf).add(from.min(len)) },
            len: len - from.min(len),
        }
    }

    async fn exec(&self, op: &FileOp) -> i64 {
        let ebadf = -(libc::EBADF as i64);
        match op.kind {
            OpKind::Open => match self.open(op.file).await {
                Ok(f) => {
                    use std::os::fd::AsRawFd;
                    let fd = f.as_raw_fd() as i64;
                    let old = self
                        .slots
                        .borrow_mut()
                        .get_mut(op.file as usize)
                        .and_then(|s| s.replace(Rc::new(f)));
                    if let Some(Ok(old)) = old.map(Rc::try_unwrap) {
                        let _ = old.close().await;
                    }
                    fd
                }
                Err(e) => e,
            },
            OpKind::Close => {
                let f = self
                    .slots
                    .borrow_mut()
                    .get_mut(op.file as usize)
                    .and_then(Option::take);
                match f.map(Rc::try_unwrap) {
                    Some(Ok(f)) => f.close().await.map_or_else(|e| neg_errno(&e), |()| 0),
                    // Another chain still uses it: closed when that one is done with it.
                    Some(Err(_shared)) => 0,
                    None => ebadf,
                }
            }
            OpKind::Fsync => match self.file(op.file) {
                Some(f) => f.sync_all().await.map_or_else(|e| neg_errno(&e), |()| 0),
                None => ebadf,
            },
            OpKind::Write { buf, offset, len } => {
                let Some(f) = self.file(op.file) else {
                    return ebadf;
                };
                let b = self.raw(buf, 0, len);
                let n = b.len;
                match f.write_all_at(b, offset).await.0 {
                    Ok(()) => n as i64,
                    Err(e) => neg_errno(&e),
                }
            }
            OpKind::Read { buf, offset, len } => {
                let Some(f) = self.file(op.file) else {
                    return ebadf;
                };
                let want = self.raw(buf, 0, len).len;
                let mut got = 0;
                while got < want {
                    let b = self.raw(buf, got, len);
                    match f.read_at(b, offset + got as u64).await.0 {
                        Ok(0) => break,
                        Ok(n) => got += n,
                        Err(e) => return neg_errno(&e),
                    }
                }
                got as i64
            }
        }
    }
}

/// Runs one linked chain in order; after a failed op the rest complete with -ECANCELED.
async fn run_chain(sh: Rc<Shared>, chain: Vec<FileOp>) -> Vec<Done> {
    let mut out = Vec::with_capacity(chain.len());
    let mut broken = false;
    for op in &chain {
        let res = if broken {
            -(libc::ECANCELED as i64)
        } else {
            sh.exec(op).await
        };
        if res < 0 && op.link {
            broken = true;
        }
        if !op.link {
            broken = false;
        }
        out.push(Done { user: op.user, res });
    }
    out
}

impl FileEngine for MonoioFiles {
    fn submit(&mut self, ops: &[FileOp]) -> io::Result<()> {
        self.ops += ops.len() as u64;
        let c = chains(ops);
        self.chains += c.len() as u64;
        self.pending.extend(c);
        Ok(())
    }

    fn reap(&mut self, _min: usize, done: &mut Vec<Done>) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let chains = std::mem::take(&mut self.pending);
        let sh = &self.shared;
        self.rt.block_on(async {
            let tasks: Vec<_> = chains
                .into_iter()
                .map(|c| ::monoio::spawn(run_chain(Rc::clone(sh), c)))
                .collect();
            for t in tasks {
                done.extend(t.await);
            }
        });
        Ok(())
    }

    fn bufs(&self) -> &Buffers {
        &self.shared.bufs
    }

    fn open_now(&mut self, file: u32) -> io::Result<()> {
        let sh = Rc::clone(&self.shared);
        let f = self
            .rt
            .block_on(async move { sh.open(file).await })
            .map_err(|e| io::Error::from_raw_os_error(-e as i32))?;
        let old = self
            .shared
            .slots
            .borrow_mut()
            .get_mut(file as usize)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))?
            .replace(Rc::new(f));
        drop(old);
        Ok(())
    }

    fn counters(&self) -> Counters {
        let mut c = Counters::default();
        c.add("monoio_file_ops", self.ops);
        c.add("monoio_chains", self.chains);
        c
    }
}

impl Drop for MonoioFiles {
    fn drop(&mut self) {
        // Close the files inside the runtime (a monoio File closes through its ring).
        let files: Vec<_> = self
            .shared
            .slots
            .borrow_mut()
            .iter_mut()
            .filter_map(Option::take)
            .collect();
        self.rt.block_on(async move {
            for f in files {
                if let Ok(f) = Rc::try_unwrap(f) {
                    let _ = f.close().await;
                }
            }
        });
    }
}
