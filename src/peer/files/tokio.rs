//! tokio's file API (`tokio::fs`) as a file engine: a current_thread runtime whose blocking
//! pool (at most [`TOKIO_BLOCKING_THREADS`](super::TOKIO_BLOCKING_THREADS) threads, allowed on
//! the measured and the helper CPU like the `threadpool` model's workers) runs every call.
//!
//! What a tokio user writes: `OpenOptions::open`, `seek` + `write_all` + `flush` (a tokio
//! `File` write returns once its data is copied into the file's own buffer; `flush` waits for
//! the blocking write), `seek` + `read`, `sync_all`, and dropping the `File` to close it
//! (tokio has no async close). A `tokio::fs::File` has one position and one operation in
//! flight, and tokio has no positional I/O, so chains that work on one file at the same time
//! each use a handle of their own: `open_now` opens one handle per chain that can be in flight
//! (`depth / 3`: a chain is at most three ops), more are opened when needed and counted
//! (`tokio_extra_opens`). A handle seeks only when its position is not the op's offset.
//!
//! CPU: the blocking threads' CPU-time clocks (their ids recorded as they start; they are
//! kept alive for the engine's life, so none exits with its CPU time uncounted). Syscalls:
//! they are created by the measured thread, so its inherited counter counts them.

use super::{chains, neg_errno, Open};
use crate::io::file::{Buffers, Done, FileConfig, FileOp, OpKind};
use crate::io::FileEngine;
use crate::measure::{cpu, pin, pin::CpuPlan, Counters};
use ::tokio::fs::{File, OpenOptions};
use ::tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
use ::tokio::runtime::Runtime;
use ::tokio::task::JoinSet;
use std::ffi::OsStr;
use std::io::{self, SeekFrom};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One open `tokio::fs::File` and where its position is.
struct Handle {
    file: File,
    pos: u64,
}

#[derive(Default)]
struct Slot {
    open: bool,
    idle: Vec<Handle>,
}

struct Shared {
    cfg: FileConfig,
    bufs: Buffers,
    slots: Mutex<Vec<Slot>>,
    extra_opens: AtomicU64,
}

pub(crate) struct TokioFiles {
    rt: Runtime,
    shared: Arc<Shared>,
    pending: Vec<Vec<FileOp>>,
    tids: Arc<Mutex<Vec<u32>>>,
    /// The first blocking thread that could not be given the plan's CPUs, and why.
    unpinned: Arc<Mutex<Option<String>>>,
    ops: u64,
    chains: u64,
}

impl TokioFiles {
    pub(crate) fn new(cfg: FileConfig, plan: &CpuPlan) -> io::Result<TokioFiles> {
        let tids = Arc::new(Mutex::new(Vec::new()));
        let cpus: Vec<u32> = std::iter::once(plan.measured).chain(plan.helper).collect();
        let started = Arc::clone(&tids);
        let unpinned: Arc<Mutex<Option<String>>> = Arc::default();
        let unpinned_w = Arc::clone(&unpinned);
        let rt = ::tokio::runtime::Builder::new_current_thread()
            .max_blocking_threads(super::TOKIO_BLOCKING_THREADS)
            // Longer than any case: no blocking thread exits (and takes its CPU time with it)
            // while the engine lives.
            .thread_keep_alive(Duration::from_secs(3600))
            .on_thread_start(move || {
                // A blocking thread runs on every CPU of the plan, as the `threadpool`
                // workers do; one that cannot is named by the next `reap`.
                if let Err(e) = pin::allow_this_thread(&cpus) {
                    unpinned_w
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get_or_insert_with(|| e.to_string());
                }
                started
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(cpu::gettid());
            })
            .build()?;
        let slots = (0..cfg.paths.len()).map(|_| Slot::default()).collect();
        Ok(TokioFiles {
            rt,
            shared: Arc::new(Shared {
                bufs: Buffers::new(cfg.bufs, cfg.buf_len)?,
                cfg,
                slots: Mutex::new(slots),
                extra_opens: AtomicU64::new(0),
            }),
            pending: Vec::new(),
            tids,
            unpinned,
            ops: 0,
            chains: 0,
        })
    }
}

impl Shared {
    fn path(&self, slot: u32) -> Option<&std::path::Path> {
        let p = self.cfg.paths.get(slot as usize)?;
        Some(std::path::Path::new(OsStr::from_bytes(p.as_bytes())))
    }

    async fn open(&self, slot: u32, how: Open) -> Result<Handle, i64> {
        let path = self.path(slot).ok_or(-(libc::EBADF as i64))?;
        let file = OpenOptions::new()
            .read(how.read)
            .write(how.write)
            .create(how.create)
            .truncate(how.truncate)
            .open(path)
            .await
            .map_err(|e| neg_errno(&e))?;
        Ok(Handle { file, pos: 0 })
    }

    /// A handle of open slot `slot` for one chain: an idle one, or a new one (counted).
    async fn take(&self, slot: u32) -> Result<Handle, i64> {
        {
            let mut s = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            let s = s.get_mut(slot as usize).ok_or(-(libc::EBADF as i64))?;
            if !s.open {
                return Err(-(libc::EBADF as i64));
            }
            if let Some(h) = s.idle.pop() {
                return Ok(h);
            }
        }
        self.extra_opens.fetch_add(1, Ordering::Relaxed);
        let how = Open::from_flags(self.cfg.open_flags)?;
        self.open(slot, how.again()).await
    }

    /// Gives a chain's handle back (dropped, i.e. closed, if the slot was closed meanwhile).
    fn give_back(&self, slot: u32, h: Handle) {
        let mut s = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = s.get_mut(slot as usize).filter(|s| s.open) {
            s.idle.push(h);
        }
    }

    /// Buffer `buf`'s first `len` bytes (at most the buffer's length) as a raw slice.
    fn buf(&self, buf: u32, len: u32) -> (*mut u8, usize) {
        (self.bufs.ptr(buf), (len as usize).min(self.bufs.len()))
    }

    /// Runs one op; `held` is the handle the chain works with (kept across its ops).
    async fn exec(&self, op: &FileOp, held: &mut Option<(u32, Handle)>) -> i64 {
        if let Some((slot, h)) = held.take_if(|(s, _)| *s != op.file) {
            self.give_back(slot, h);
        }
        match op.kind {
            OpKind::Open => {
                let how = match Open::from_flags(self.cfg.open_flags) {
                    Ok(o) => o,
                    Err(e) => return e,
                };
                match self.open(op.file, how).await {
                    Ok(h) => {
                        use std::os::fd::AsRawFd;
                        let fd = h.file.as_raw_fd() as i64;
                        if let Some(s) = self
                            .slots
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .get_mut(op.file as usize)
                        {
                            s.open = true;
                        }
                        *held = Some((op.file, h));
                        fd
                    }
                    Err(e) => e,
                }
            }
            OpKind::Close => {
                let h = match held.take() {
                    Some((_, h)) => Some(h),
                    None => self.take(op.file).await.ok(),
                };
                let mut s = self.slots.lock().unwrap_or_else(|e| e.into_inner());
                match (h, s.get_mut(op.file as usize)) {
                    (Some(h), Some(s)) => {
                        s.open = false;
                        s.idle.clear();
                        // Dropping an idle tokio File closes it (no async close in tokio).
                        drop(h);
                        0
                    }
                    _ => -(libc::EBADF as i64),
                }
            }
            OpKind::Read { .. } | OpKind::Write { .. } | OpKind::Fsync => {
                let mut h = match held.take() {
                    Some((_, h)) => h,
                    None => match self.take(op.file).await {
                        Ok(h) => h,
                        Err(e) => return e,
                    },
                };
                let r = self.io(op.kind, &mut h).await;
                *held = Some((op.file, h));
                match r {
                    Ok(n) => n as i64,
                    Err(e) => neg_errno(&e),
                }
            }
        }
    }

    async fn io(&self, kind: OpKind, h: &mut Handle) -> io::Result<usize> {
        match kind {
            OpKind::Write { buf, offset, len } => {
                if h.pos != offset {
                    h.pos = h.file.seek(SeekFrom::Start(offset)).await?;
                }
                let (ptr, len) = self.buf(buf, len);
                // SAFETY: the buffer belongs to this op until it is reaped (the engine
                // contract); nothing else touches it meanwhile, and `self` (owning the
                // buffers) outlives the op.
                let src = unsafe { std::slice::from_raw_parts(ptr, len) };
                h.file.write_all(src).await?;
                h.file.flush().await?;
                h.pos += len as u64;
                Ok(len)
            }
            OpKind::Read { buf, offset, len } => {
                if h.pos != offset {
                    h.pos = h.file.seek(SeekFrom::Start(offset)).await?;
                }
                let (ptr, len) = self.buf(buf, len);
                // SAFETY: as for Write.
                let dst = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
                let mut got = 0;
                while got < len {
                    let n = h.file.read(&mut dst[got..]).await?;
                    if n == 0 {
                        break;
                    }
                    got += n;
                }
                h.pos += got as u64;
                Ok(got)
            }
            OpKind::Fsync => h.file.sync_all().await.map(|()| 0),
            OpKind::Open | OpKind::Close => unreachable!("handled by exec"),
        }
    }
}

/// Runs one linked chain in order; after a failed op the rest complete with -ECANCELED.
async fn run_chain(sh: Arc<Shared>, chain: Vec<FileOp>) -> Vec<Done> {
    let mut out = Vec::with_capacity(chain.len());
    let mut held = None;
    let mut broken = false;
    for op in &chain {
        let res = if broken {
            -(libc::ECANCELED as i64)
        } else {
            sh.exec(op, &mut held).await
        };
        if res < 0 && op.link {
            broken = true;
        }
        if !op.link {
            broken = false;
        }
        out.push(Done { user: op.user, res });
    }
    if let Some((slot, h)) = held {
        sh.give_back(slot, h);
    }
    out
}

impl FileEngine for TokioFiles {
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
            let mut set = JoinSet::new();
            for c in chains {
                set.spawn(run_chain(Arc::clone(sh), c));
            }
            while let Some(r) = set.join_next().await {
                done.extend(r.map_err(io::Error::other)?);
            }
            Ok::<(), io::Error>(())
        })?;
        match self
            .unpinned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            Some(why) => Err(io::Error::other(format!("a tokio blocking thread: {why}"))),
            None => Ok(()),
        }
    }

    fn bufs(&self) -> &Buffers {
        &self.shared.bufs
    }

    fn open_now(&mut self, file: u32) -> io::Result<()> {
        let how = Open::from_flags(self.shared.cfg.open_flags)
            .map_err(|e| io::Error::from_raw_os_error(-e as i32))?;
        let per_chain = (self.shared.cfg.depth / 3).max(1);
        let sh = &self.shared;
        let handles = self.rt.block_on(async {
            let mut v = Vec::with_capacity(per_chain);
            for i in 0..per_chain {
                let how = if i == 0 { how } else { how.again() };
                v.push(
                    sh.open(file, how)
                        .await
                        .map_err(|e| io::Error::from_raw_os_error(-e as i32))?,
                );
            }
            io::Result::Ok(v)
        })?;
        let mut s = sh.slots.lock().unwrap_or_else(|e| e.into_inner());
        let s = s
            .get_mut(file as usize)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))?;
        s.open = true;
        s.idle = handles;
        Ok(())
    }

    fn counters(&self) -> Counters {
        let mut c = Counters::default();
        c.add("tokio_file_ops", self.ops);
        c.add("tokio_chains", self.chains);
        c.add(
            "tokio_extra_opens",
            self.shared.extra_opens.load(Ordering::Relaxed),
        );
        c.add(
            "tokio_blocking_threads",
            self.tids.lock().unwrap_or_else(|e| e.into_inner()).len() as u64,
        );
        c
    }

    fn workers_cpu(&self) -> cpu::CpuReading {
        let mut r = cpu::CpuReading::default();
        for &t in self.tids.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            r.total_ns += cpu::thread_ns(t).unwrap_or(0);
        }
        r
    }
}
