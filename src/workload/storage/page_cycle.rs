//! `storage.page_cycle`: for each 4 KiB page of a fresh file, write the page, fsync, read it
//! back and verify the bytes. blocking: pwrite/fsync/pread; threadpool: each page's three
//! calls on a worker; io_uring: write -> fsync -> read linked (IOSQE_IO_LINK), `depth` pages
//! per batch, one io_uring_enter per batch.
//!
//! A page's latency is the time from its batch's submission until the batch has completed
//! (depth 1: the page's own three calls).
//!
//! The contenders run the same chains through their own file APIs (`peer::files`): tokio's
//! `tokio::fs` (every call a job of its blocking pool) and monoio's io_uring `File`.

use super::*;
use crate::io::file::OpKind;
use crate::workload::{Point, Workload};

pub struct PageCycle;

/// Size of the page-cycle file per profile, bytes (full: 256 MiB = 65,536 pages).
/// `storage.page_cycle`'s parameters.
#[derive(serde::Serialize, serde::Deserialize)]
struct Args {
    file_bytes: u64,
    page_bytes: u64,
    depth: u64,
    /// The thread pool's workers (file_engine: one per op in flight, at most 64); recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    threads: Option<u64>,
}

pub(crate) fn file_bytes(p: Profile) -> u64 {
    match p {
        Profile::Smoke => 1 << 20,
        Profile::Quick => 8 << 20,
        Profile::Full => 256 << 20,
    }
}

fn depth(m: &ModelSpec) -> u64 {
    match &m.knobs {
        Knobs::Blocking(crate::model::Threading::PerConnection) => 1,
        _ => 256,
    }
}

impl Workload for PageCycle {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Storage
    }
    fn id(&self) -> &'static str {
        "storage.page_cycle"
    }
    fn about(&self) -> &'static str {
        "each 4 KiB page of a fresh file: write, fsync, read back, verify (blocking vs linked io_uring chains)"
    }
    fn op(&self) -> &'static str {
        "one 4 KiB page written, fsynced, read back and verified (latency: its batch's submission to \
         completion). threadpool: the same blocking calls on worker threads, as epoll runtimes \
         (tokio) do file I/O, because regular files are not pollable. tokio: tokio::fs (its \
         blocking pool, seek + write_all + flush, sync_all, seek + read); monoio: its io_uring \
         file API (write_all_at, sync_all, read_at; not linked)"
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        Ok(m.runs(Shape::Storage(FileIo::Fsync))?)
    }
    fn points(&self, profile: Profile, m: &ModelSpec) -> Vec<Point> {
        let pool = matches!(
            m.knobs,
            Knobs::Blocking(crate::model::Threading::Pool { .. })
        );
        vec![Point::of(Args {
            file_bytes: file_bytes(profile),
            page_bytes: PAGE,
            depth: depth(m),
            threads: if pool {
                Some(depth(m).min(64))
            } else {
                runtime_pool(m)
            },
        })]
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        let st = storage_ctx(ctx)?;
        let a = p.args::<Args>()?;
        let (size, depth) = (a.file_bytes, a.depth.max(1));
        let pages = size / PAGE;
        let path = st.dir.join(format!(
            "page-cycle-{}.bin",
            crate::measure::clock::now_ns()
        ));
        let _files = TempFiles(vec![path.clone()]);
        let cfg = FileConfig {
            paths: vec![cpath(&path)],
            open_flags: libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC,
            bufs: 2 * depth as usize,
            buf_len: PAGE as usize,
            depth: 3 * depth as usize,
        };
        let (run, mut eng) = Run::start(ctx, m, cfg, &st.fs)?;
        eng.open_now(0)
            .map_err(|e| failed_io("opening", &path, e))?;
        let mut fsyncs = 0u64;
        let mut verified = 0u64;
        let mut ops = Vec::with_capacity(3 * depth as usize);
        let mut done = Vec::with_capacity(3 * depth as usize);
        let sample = run.measure(eng.as_mut(), Counters::default(), |eng, hist| {
            let mut page = 0u64;
            while page < pages {
                check_stop()?;
                let k = depth.min(pages - page);
                ops.clear();
                for j in 0..k {
                    let pg = page + j;
                    let (wb, rb) = (2 * j as u32, 2 * j as u32 + 1);
                    // SAFETY: every op of the previous batch was reaped (reap waits for all
                    // of them), so no op uses buffer `wb`; the slice ends with this statement.
                    fill_stamped(unsafe { buf(eng.bufs(), wb, PAGE as usize) }, pg);
                    let off = pg * PAGE;
                    let len = PAGE as u32;
                    ops.push(file_op(
                        OpKind::Write {
                            buf: wb,
                            offset: off,
                            len,
                        },
                        0,
                        3 * j,
                        true,
                    ));
                    ops.push(file_op(OpKind::Fsync, 0, 3 * j + 1, true));
                    ops.push(file_op(
                        OpKind::Read {
                            buf: rb,
                            offset: off,
                            len,
                        },
                        0,
                        3 * j + 2,
                        false,
                    ));
                }
                let t0 = crate::measure::clock::now_ns();
                eng.submit(&ops)?;
                done.clear();
                eng.reap(ops.len(), &mut done)?;
                let dt = crate::measure::clock::now_ns() - t0;
                hist.record_n(dt, k);
                for d in &done {
                    let (j, step) = (d.user / 3, d.user % 3);
                    match step {
                        0 => expect_len(d, PAGE, "write")?,
                        1 => {
                            d.result().map_err(|e| {
                                CaseError::Failed(anyhow::anyhow!("fsync failed: {e}"))
                            })?;
                            fsyncs += 1;
                        }
                        _ => {
                            expect_len(d, PAGE, "read back")?;
                            // SAFETY: the batch's ops were all reaped above, and this is the
                            // only slice of the buffer, dropped before the next submit.
                            let rb = unsafe { buf(eng.bufs(), 2 * j as u32 + 1, PAGE as usize) };
                            verified += check_stamped(rb, page + j, true)?;
                        }
                    }
                }
                page += k;
            }
            Ok((pages, pages * PAGE))
        })?;
        let mut s = sample;
        s.counters.add("fsyncs_completed", fsyncs);
        s.counters.add("bytes_verified", verified);
        if fsyncs != pages || verified != pages * PAGE {
            return Err(CaseError::Failed(anyhow::anyhow!(
                "{fsyncs} fsyncs and {verified} verified bytes for {pages} pages"
            )));
        }
        Ok(s)
    }
}
