//! The storage suite: write/fsync/read page cycles, random and sequential reads, many small
//! files — per I/O model, through the one `FileEngine` shape (`io::file_engine`).
//!
//! Every case runs in a work directory made under `--dir` (default: the current directory's
//! filesystem), marked with its owner (`OWNER_FILE`) and removed at the end of the run (or, if
//! ringside was killed first, by the next run's sweep, `sweep_stale_work_dirs`); every
//! repetition removes the files it made (RAII guards), also when it fails or is interrupted. Read workloads read a data file written
//! once per run and fsynced; with `--drop-caches` (root only) the page cache is dropped before
//! each read repetition, otherwise the results record that the cache was warm.
//!
//! Syscalls: in the counting repetition a counter with `inherit` is opened on the measured
//! thread *before* the engine is built, so a thread pool's workers (created afterwards) are
//! counted with it. io_uring's io-wq workers and SQPOLL poller are kernel threads: they make
//! no syscalls, and their CPU time is added to the case's CPU (`measure::cpu::io_workers`).

pub mod page_cycle;
pub(crate) mod randread;
pub(crate) mod seqread;
pub mod small_files;

mod fsinfo;

pub(crate) use fsinfo::FsInfo;

use crate::error::{CaseError, InputError};
use crate::io::file::{Buffers, Done, FileConfig, FileOp};
use crate::io::FileEngine;
use crate::measure::{syscalls, Counters, Hist, Measured, Sample};
use crate::model::{FileIo, Knobs, ModelSpec, Shape};
use crate::profile::{Budget, Profile};
use crate::workload::{Ctx, Params};
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Bytes of one page / random read, and the alignment O_DIRECT needs.
pub(crate) const PAGE: u64 = 4096;

/// What `ringside run` prepared for the storage suite: the work directory and how the cache
/// is handled.
pub struct StorageCtx {
    /// A fresh directory of this run (removed when the `StorageCtx` is dropped).
    pub(crate) dir: PathBuf,
    /// Drop the page cache before read repetitions (root only).
    pub(crate) drop_caches: bool,
    pub(crate) fs: FsInfo,
    /// The data file read by randread and seqread: (size, path), written once.
    data: Mutex<Option<(u64, PathBuf)>>,
    /// Filesystem, device, O_DIRECT and cache facts, recorded in every storage cell's facts
    /// ([`StorageCtx::facts`]).
    facts: Params,
}

/// The file in a work directory naming the ringside that made it (`PID:START`, see
/// `child::owner_token`), so that a later run can tell a stale directory from a live one.
pub(crate) const OWNER_FILE: &str = ".ringside-owner";

/// Prefix of every work directory's name: `ringside-storage-PID-N`.
const WORK_DIR_PREFIX: &str = "ringside-storage-";

/// Removes the work directories under `parent` that a ringside no longer running left (killed
/// before it could remove them): named `ringside-storage-PID-N`, with an owner file naming a
/// ringside that is gone, or none and a PID that runs no process. Returns one sentence per
/// directory removed (or that could not be).
pub(crate) fn sweep_stale_work_dirs(parent: &Path) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut said = Vec::new();
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(WORK_DIR_PREFIX)) else {
            continue;
        };
        let Some((pid, n)) = rest.split_once('-') else {
            continue;
        };
        let (Ok(pid), true) = (pid.parse::<u32>(), n.bytes().all(|b| b.is_ascii_digit())) else {
            continue;
        };
        // A directory, not a link to one.
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = e.path();
        let mut owner = String::new();
        let marked = std::fs::File::open(path.join(OWNER_FILE))
            .and_then(|f| io::Read::read_to_string(&mut io::Read::take(f, 256), &mut owner))
            .is_ok();
        let stale = if marked {
            !crate::child::owner_alive(&owner)
        } else {
            !Path::new(&format!("/proc/{pid}")).exists()
        };
        if !stale {
            continue;
        }
        said.push(match std::fs::remove_dir_all(&path) {
            Ok(()) => format!(
                "removed stale storage work directory {} (left by ringside pid {pid}, which is \
                 no longer running)",
                path.display()
            ),
            Err(e) => format!(
                "cannot remove stale storage work directory {} (left by ringside pid {pid}): \
                 {e}",
                path.display()
            ),
        });
    }
    said
}

impl StorageCtx {
    /// Makes a work directory under `parent` after checking it exists, is writable and has
    /// room for `need_bytes`. The refusal names the directory, the space needed and free.
    pub fn prepare(
        parent: &Path,
        need_bytes: u64,
        drop_caches: bool,
    ) -> Result<StorageCtx, InputError> {
        let bad = |why: String| InputError::StorageDir {
            dir: parent.display().to_string(),
            why,
        };
        let meta = std::fs::metadata(parent).map_err(|e| bad(format!("{e}")))?;
        if !meta.is_dir() {
            return Err(bad("not a directory".into()));
        }
        let free = fsinfo::free_bytes(parent).map_err(|e| bad(format!("statvfs: {e}")))?;
        if free < need_bytes {
            return Err(bad(format!(
                "too little free space: the selected storage workloads need {} and {} is free",
                human(need_bytes),
                human(free)
            )));
        }
        let dir = parent.join(format!(
            "{WORK_DIR_PREFIX}{}-{}",
            std::process::id(),
            crate::measure::clock::now_ns() % 1_000_000
        ));
        // Published before the directory exists, so that no moment has it unknown to the
        // signal handler.
        crate::shutdown::set_work_dir(dir.clone());
        let made = std::fs::create_dir(&dir)
            .and_then(|()| std::fs::write(dir.join(OWNER_FILE), crate::child::owner_token()));
        if let Err(e) = made {
            let _ = std::fs::remove_dir_all(&dir);
            crate::shutdown::clear_work_dir();
            return Err(bad(format!("not writable: {e}")));
        }
        let fs = FsInfo::probe(&dir);
        let root = rustix::process::geteuid().is_root();
        let cache = if drop_caches && root {
            "dropped before each read repetition (--drop-caches)"
        } else if drop_caches {
            "warm: --drop-caches needs root"
        } else {
            "warm: files written by this run, --drop-caches not given"
        };
        Ok(StorageCtx {
            dir,
            drop_caches: drop_caches && root,
            facts: fs.facts().with("page_cache", cache),
            fs,
            data: Mutex::new(None),
        })
    }

    /// Filesystem, device, O_DIRECT and cache facts of the work directory: the run records
    /// them in every storage cell's `facts`.
    pub(crate) fn facts(&self) -> &Params {
        &self.facts
    }

    /// The run's data file of `size` bytes (stamped blocks, fsynced), written on first use.
    fn data_file(&self, size: u64) -> Result<PathBuf, CaseError> {
        let mut d = self.data.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((s, p)) = d.as_ref() {
            if *s == size {
                return Ok(p.clone());
            }
            let _ = std::fs::remove_file(p);
            *d = None;
        }
        let path = self.dir.join(format!("data-{size}.bin"));
        let guard = TempFiles(vec![path.clone()]);
        write_stamped(&path, size).map_err(|e| failed_io("writing the data file", &path, e))?;
        std::mem::forget(guard);
        *d = Some((size, path.clone()));
        Ok(path)
    }

    /// The data file for a cross-check tool (the same file ringside's reads use).
    pub(crate) fn data_file_for_crosscheck(&self, size: u64) -> Result<PathBuf, CaseError> {
        self.data_file(size)
    }

    /// Drops the page cache when asked to (after `sync`); says what it did.
    fn before_reads(&self) -> io::Result<()> {
        if self.drop_caches {
            rustix::fs::sync();
            std::fs::write("/proc/sys/vm/drop_caches", b"3")?;
        }
        Ok(())
    }
}

impl Drop for StorageCtx {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        crate::shutdown::clear_work_dir();
    }
}

/// Bytes the storage workloads of `ids` need at `profile` (with 10% and 16 MiB to spare).
pub(crate) fn space_needed(ids: &[&str], profile: Profile) -> u64 {
    let mut n = 0;
    if ids.contains(&"storage.page_cycle") {
        n += page_cycle::file_bytes(profile);
    }
    if ids.contains(&"storage.randread") || ids.contains(&"storage.seqread") {
        n += randread::file_bytes(profile);
    }
    if ids.contains(&"storage.small_files") {
        n += small_files::FILES * small_files::FILE_BYTES;
    }
    if n == 0 {
        0
    } else {
        n + n / 10 + (16 << 20)
    }
}

/// Storage repetitions each write their files afresh: as many rounds as a network point (1, 6,
/// 10 at smoke, quick, full: six, so that a paired claim can be decided), no warm-up
/// (nothing carries over between repetitions).
pub(crate) fn storage_budget(b: Budget) -> Budget {
    Budget {
        warmups: 0,
        repetitions: b.rounds(),
        extra_rounds: b.extra_rounds(),
        ..b
    }
}

/// The blocking threads a contender's file API may use, recorded as the `threads` param
/// (tokio: its blocking pool's cap; monoio has none: its file ops are io_uring ops).
fn runtime_pool(m: &ModelSpec) -> Option<u64> {
    matches!(m.knobs, Knobs::Peer(crate::model::PeerKind::Tokio))
        .then_some(crate::peer::files::TOKIO_BLOCKING_THREADS as u64)
}

/// The file engine of a model: ringside's own (`io::file_engine`) or a contender's file API
/// (`peer::files::engine`).
pub fn file_engine(
    m: &ModelSpec,
    cfg: FileConfig,
    plan: &crate::measure::pin::CpuPlan,
    dev_polls: Result<(), String>,
) -> Result<Box<dyn FileEngine>, CaseError> {
    match &m.knobs {
        Knobs::Peer(k) => crate::peer::files::engine(*k, cfg, plan),
        _ => crate::io::file_engine(m, cfg, plan, dev_polls),
    }
}

/// Removes its files on drop: every file a repetition makes is held by one.
pub(crate) struct TempFiles(pub Vec<PathBuf>);

impl Drop for TempFiles {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("paths have no NUL")
}

fn failed_io(what: &str, path: &Path, e: io::Error) -> CaseError {
    CaseError::Failed(anyhow::anyhow!("{what} {}: {e}", path.display()))
}

/// A completion as bytes, failing the case on an error or a short transfer.
fn expect_len(d: &Done, want: u64, what: &str) -> Result<(), CaseError> {
    match d.result() {
        Ok(n) if n == want => Ok(()),
        Ok(n) => Err(CaseError::Failed(anyhow::anyhow!(
            "{what}: short transfer, {n} of {want} bytes"
        ))),
        Err(e) => Err(CaseError::Failed(anyhow::anyhow!(
            "{what} failed: {e} (errno {})",
            e.raw_os_error().unwrap_or(0)
        ))),
    }
}

/// The 8-byte word at `word` of 4 KiB block `block` in a stamped data file.
#[inline]
fn stamp(block: u64, word: u64) -> u64 {
    (block << 16 | word).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5A5A
}

/// Fills `buf` (a whole number of 4 KiB blocks starting at block `first`) with the stamps.
fn fill_stamped(buf: &mut [u8], first: u64) {
    for (i, w) in buf.chunks_exact_mut(8).enumerate() {
        let i = i as u64;
        let block = first + i / (PAGE / 8);
        w.copy_from_slice(&stamp(block, i % (PAGE / 8)).to_le_bytes());
    }
}

/// Checks a block read back: the first and last word of every 4 KiB block, or every word when
/// `full`. Returns the bytes checked.
fn check_stamped(buf: &[u8], first: u64, full: bool) -> Result<u64, CaseError> {
    let words = (PAGE / 8) as usize;
    let mut checked = 0;
    for (b, blk) in buf.chunks_exact(PAGE as usize).enumerate() {
        let block = first + b as u64;
        let word = |i: usize| u64::from_le_bytes(blk[i * 8..i * 8 + 8].try_into().unwrap());
        let idx: &mut dyn Iterator<Item = usize> = if full {
            &mut (0..words)
        } else {
            &mut [0, words - 1].into_iter()
        };
        for i in idx {
            if word(i) != stamp(block, i as u64) {
                return Err(CaseError::Failed(anyhow::anyhow!(
                    "data read back differs from what was written (block {block}, word {i})"
                )));
            }
            checked += 8;
        }
    }
    Ok(checked)
}

/// Writes a stamped file of `size` bytes and fsyncs it.
fn write_stamped(path: &Path, size: u64) -> io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::File::create(path)?;
    let chunk = 1 << 20;
    let mut buf = vec![0u8; chunk as usize];
    let mut off = 0;
    while off < size {
        let n = chunk.min(size - off);
        fill_stamped(&mut buf[..n as usize], off / PAGE);
        f.write_all(&buf[..n as usize])?;
        off += n;
    }
    f.sync_all()
}

/// The measured part shared by the storage workloads: a syscall counter opened (counting
/// repetition only) before the engine exists, the engine, and the window around the loop.
struct Run<'c, 'a> {
    ctx: &'c Ctx<'a>,
    counter: Option<Result<syscalls::SyscallCounter, String>>,
    hist: Hist,
}

impl<'c, 'a> Run<'c, 'a> {
    /// Opens the counter (counting repetition) and then builds the engine, so threads the
    /// engine starts inherit the counter.
    fn start(
        ctx: &'c Ctx<'a>,
        m: &ModelSpec,
        cfg: FileConfig,
        fs: &FsInfo,
    ) -> Result<(Run<'c, 'a>, Box<dyn FileEngine>), CaseError> {
        let hist = Hist::new();
        let counter = ctx
            .count_syscalls
            .then(|| syscalls::SyscallCounter::open(syscalls::Scope::ThisThread));
        let eng = file_engine(m, cfg, ctx.plan, fs.dev_polls.clone())?;
        Ok((Run { ctx, counter, hist }, eng))
    }

    /// Runs `body` inside the measured window; `body` returns (ops, bytes) and records
    /// latencies into the histogram it is given.
    fn measure(
        mut self,
        eng: &mut dyn FileEngine,
        extra: Counters,
        body: impl FnOnce(&mut dyn FileEngine, &mut Hist) -> Result<(u64, u64), CaseError>,
    ) -> Result<Sample, CaseError> {
        // `run --explain`: sample the measured CPU (perf on the helper CPU) over the window.
        let plan = self.ctx.plan;
        let max = std::time::Duration::from_secs(600);
        let sampling = self.ctx.explain_start(
            &[plan.measured],
            &[plan.helper.unwrap_or(plan.measured)],
            max,
        );
        let workers0 = eng.workers_cpu();
        let w = self.ctx.window();
        let sys0 = match &self.counter {
            Some(Ok(c)) => c.read(),
            _ => 0,
        };
        let t0 = crate::measure::clock::now_ns();
        let r = body(eng, &mut self.hist);
        let t1 = crate::measure::clock::now_ns();
        self.ctx
            .explain_finish(sampling, t0, t1, &[std::process::id()]);
        let sys1 = match &self.counter {
            Some(Ok(c)) => c.read(),
            _ => 0,
        };
        let (ops, bytes) = r?;
        let mut counters = eng.counters();
        counters.merge(&extra);
        let mut s = w.finish(ops, bytes, counters);
        let wk = eng.workers_cpu().since(&workers0);
        s.cpu.total_ns += wk.total_ns;
        s.timed_ns = t1 - t0;
        s.latency = self.hist;
        s.syscalls = self.counter.as_ref().map(|c| match c {
            Ok(c) => Measured::Value(c.window(sys0, sys1)),
            Err(why) => Measured::unavailable(why.clone()),
        });
        Ok(s)
    }
}

/// Stops a repetition when Ctrl-C was pressed (its files are removed by their guards).
fn check_stop() -> Result<(), CaseError> {
    if crate::shutdown::stop_requested() {
        Err(CaseError::Failed(anyhow::anyhow!(
            "interrupted (Ctrl-C) during the repetition; its files were removed"
        )))
    } else {
        Ok(())
    }
}

fn storage_ctx<'a>(ctx: &Ctx<'a>) -> Result<&'a StorageCtx, CaseError> {
    ctx.storage.ok_or_else(|| {
        CaseError::unavailable("no storage directory was prepared for this run (use --dir)")
    })
}

fn file_op(kind: crate::io::file::OpKind, file: u32, user: u64, link: bool) -> FileOp {
    FileOp {
        kind,
        file,
        user,
        link,
    }
}

/// The first `len` bytes of buffer `i`.
///
/// # Safety
///
/// As [`Buffers::slice`]: no op using buffer `i` is in flight, and no other slice of it is
/// alive, while the returned one lives.
#[allow(clippy::mut_from_ref)]
unsafe fn buf(bufs: &Buffers, i: u32, len: usize) -> &mut [u8] {
    // SAFETY: the caller's contract is the one `slice` asks for.
    unsafe { &mut bufs.slice(i)[..len] }
}

/// "64.0 MiB".
pub(crate) fn human(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_round_trip_and_catch_a_changed_word() {
        let mut b = vec![0u8; 3 * PAGE as usize];
        fill_stamped(&mut b, 7);
        assert_eq!(check_stamped(&b, 7, true).unwrap(), 3 * PAGE);
        assert!(check_stamped(&b, 8, false).is_err(), "wrong block caught");
        b[PAGE as usize + 100] ^= 1;
        assert!(check_stamped(&b, 7, true).is_err());
    }
}
