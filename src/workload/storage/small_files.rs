//! `storage.small_files`: 100 files of 64 KiB, written (phase `write`: open+create, write,
//! close) or read back (phase `read`: open, read, close) — blocking calls in one thread, the
//! same chains on a thread pool, or io_uring openat -> write/read -> close chains linked with
//! IOSQE_IO_LINK, all 100 chains in one batch. io_uring opens into direct descriptors (a
//! registered slot per file): a write linked to an openat can only name the file that way.
//!
//! The time per file is the batch's time divided by its files. Written files are read back
//! and verified after the window; read files are verified against what was written.
//!
//! The contenders run the same chains through their own file APIs (`peer::files`): the
//! published monoio-vs-tokio comparison of 100 files of 64 KiB, natively.

use super::*;
use crate::io::file::OpKind;
use crate::workload::{Point, Workload};

pub struct SmallFiles;

/// Files per batch.
/// `storage.small_files`'s parameters.
#[derive(serde::Serialize, serde::Deserialize)]
struct Args {
    /// "write" or "read".
    phase: String,
    files: u64,
    file_bytes: u64,
    /// The thread pool's workers; recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    threads: Option<u64>,
}

pub(crate) const FILES: u64 = 100;
/// Bytes per file.
pub(crate) const FILE_BYTES: u64 = 64 << 10;

impl Workload for SmallFiles {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Storage
    }
    fn by_default(&self) -> bool {
        false
    }
    fn id(&self) -> &'static str {
        "storage.small_files"
    }
    fn about(&self) -> &'static str {
        "100 files x 64 KiB written, then read back: open/write/close vs linked io_uring chains"
    }
    fn op(&self) -> &'static str {
        "one 64 KiB file opened, written or read whole, and closed (time per file = batch time / \
         100). tokio: tokio::fs (open, write_all + flush or read, drop to close: every call a \
         job of its blocking pool); monoio: its io_uring file API (open, write_all_at or \
         read_at, close; not linked)"
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        Ok(m.runs(Shape::Storage(FileIo::OpenClose))?)
    }
    fn points(&self, _: Profile, m: &ModelSpec) -> Vec<Point> {
        let threads = matches!(
            m.knobs,
            Knobs::Blocking(crate::model::Threading::Pool { .. })
        );
        ["write", "read"]
            .iter()
            .map(|phase| {
                Point::of(Args {
                    phase: phase.to_string(),
                    files: FILES,
                    file_bytes: FILE_BYTES,
                    // file_engine: one worker per op in flight, at most 64
                    threads: if threads { Some(64) } else { runtime_pool(m) },
                })
            })
            .collect()
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        let st = storage_ctx(ctx)?;
        let a = p.args::<Args>()?;
        let (write, n, size) = (a.phase == "write", a.files, a.file_bytes);
        let stamp0 = crate::measure::clock::now_ns();
        let paths: Vec<PathBuf> = (0..n)
            .map(|i| st.dir.join(format!("small-{stamp0}-{i}.bin")))
            .collect();
        let _files = TempFiles(paths.clone());
        if !write {
            for (i, p) in paths.iter().enumerate() {
                write_stamped_at(p, size, i as u64 * (size / PAGE))
                    .map_err(|e| failed_io("writing", p, e))?;
            }
            st.before_reads()
                .map_err(|e| CaseError::Failed(anyhow::anyhow!("dropping caches: {e}")))?;
        }
        let flags = if write {
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC
        } else {
            libc::O_RDONLY
        };
        let cfg = FileConfig {
            paths: paths.iter().map(|p| cpath(p)).collect(),
            open_flags: flags,
            bufs: n as usize,
            buf_len: size as usize,
            depth: 3 * n as usize,
        };
        let (run, mut eng) = Run::start(ctx, m, cfg, &st.fs)?;
        let blocks = size / PAGE;
        if write {
            for i in 0..n {
                // SAFETY: nothing was submitted yet; the slice ends with this statement.
                fill_stamped(
                    unsafe { buf(eng.bufs(), i as u32, size as usize) },
                    i * blocks,
                );
            }
        }
        let mut ops = Vec::with_capacity(3 * n as usize);
        for i in 0..n {
            let f = i as u32;
            let io = OpKind::Read {
                buf: f,
                offset: 0,
                len: size as u32,
            };
            let io = match (write, io) {
                (true, OpKind::Read { buf, offset, len }) => OpKind::Write { buf, offset, len },
                (_, k) => k,
            };
            ops.push(file_op(OpKind::Open, f, 3 * i, true));
            ops.push(file_op(io, f, 3 * i + 1, true));
            ops.push(file_op(OpKind::Close, f, 3 * i + 2, false));
        }
        let mut done = Vec::with_capacity(ops.len());
        let sample = run.measure(eng.as_mut(), Counters::default(), |eng, hist| {
            check_stop()?;
            let t0 = crate::measure::clock::now_ns();
            eng.submit(&ops)?;
            eng.reap(ops.len(), &mut done)?;
            let dt = crate::measure::clock::now_ns() - t0;
            hist.record_n(dt / n.max(1), n);
            for d in &done {
                match d.user % 3 {
                    0 => {
                        d.result()
                            .map_err(|e| CaseError::Failed(anyhow::anyhow!("open failed: {e}")))?;
                    }
                    1 => expect_len(d, size, if write { "write" } else { "read" })?,
                    _ => {
                        d.result()
                            .map_err(|e| CaseError::Failed(anyhow::anyhow!("close failed: {e}")))?;
                    }
                }
            }
            Ok((n, n * size))
        })?;
        // Verify: reads against the stamps; writes by reading the files back (untimed).
        let mut verified = 0;
        if !write {
            for i in 0..n {
                // SAFETY: every op was reaped (the measured loop waits for all of them); one
                // slice at a time.
                let b = unsafe { buf(eng.bufs(), i as u32, size as usize) };
                verified += check_stamped(b, i * blocks, true)?;
            }
        }
        drop(eng);
        if write {
            for (i, p) in paths.iter().enumerate() {
                let got = std::fs::read(p).map_err(|e| failed_io("reading back", p, e))?;
                if got.len() as u64 != size {
                    return Err(CaseError::Failed(anyhow::anyhow!(
                        "{}: {} bytes on disk, {size} written",
                        p.display(),
                        got.len()
                    )));
                }
                verified += check_stamped(&got, i as u64 * blocks, true)?;
            }
        }
        let mut s = sample;
        s.counters.add("bytes_verified", verified);
        Ok(s)
    }
}

/// A stamped file whose first block is block `first`.
fn write_stamped_at(path: &Path, size: u64, first: u64) -> io::Result<()> {
    let mut b = vec![0u8; size as usize];
    fill_stamped(&mut b, first);
    std::fs::write(path, &b)
}
