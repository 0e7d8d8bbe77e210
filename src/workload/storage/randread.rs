//! `storage.randread`: 4 KiB reads at random aligned offsets of the run's data file, keeping
//! `depth` reads in flight: 1 and 32, buffered and O_DIRECT (where the filesystem allows).
//! blocking: pread (QD 1 only: one thread has one read in flight); threadpool: `depth`
//! workers; io_uring: `depth` SQEs in flight, refilled as completions arrive, one
//! io_uring_enter per refill (it submits the new reads and waits for the next completion).
//!
//! A read's latency runs from its submission to the reap that saw it complete. Every block's
//! first and last words are checked against the stamps written; every 64th read in full.

use super::*;
use crate::io::file::OpKind;
use crate::workload::{Point, Workload};

pub(crate) struct RandRead;

/// Size of the data file per profile, bytes (full: 1 GiB).
/// The parameters of `storage.randread` and `storage.seqread` (which reads the whole file:
/// no `reads`).
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Args {
    pub(crate) file_bytes: u64,
    pub(crate) block_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reads: Option<u64>,
    pub(crate) depth: u64,
    pub(crate) direct: bool,
}

pub(crate) fn file_bytes(p: Profile) -> u64 {
    match p {
        Profile::Smoke => 4 << 20,
        Profile::Quick => 64 << 20,
        Profile::Full => 1 << 30,
    }
}

/// Reads per repetition. Buffered reads hit the page cache (about a microsecond each), so they
/// get 16 times as many: 4096 of them were a 4 ms burst that fits in one scheduler slice, and
/// on a busy machine measured up to twice fio's IOPS from a 3 s run of the very same reads. A
/// repetition of tens of milliseconds or more shares the CPU like fio's job does.
fn reads(p: Profile, direct: bool) -> u64 {
    let n = match p {
        Profile::Smoke => 512,
        Profile::Quick => 4096,
        Profile::Full => 32768,
    };
    if direct {
        n
    } else {
        n * 16
    }
}

impl Workload for RandRead {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Storage
    }
    fn id(&self) -> &'static str {
        "storage.randread"
    }
    fn about(&self) -> &'static str {
        "4 KiB random reads at queue depth 1 and 32, buffered and O_DIRECT"
    }
    fn op(&self) -> &'static str {
        "one 4 KiB read at a random aligned offset, checked against the stamps written (threadpool: \
         `depth` workers making blocking preads; regular files are not pollable)"
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        // Its buffered points refuse a polled ring cell by cell (`io::file_engine`).
        Ok(m.runs(Shape::Storage(FileIo::Direct))?)
    }
    fn points(&self, profile: Profile, _: &ModelSpec) -> Vec<Point> {
        let mut v = Vec::new();
        for direct in [false, true] {
            for qd in [1u64, 32] {
                v.push(Point::of(Args {
                    file_bytes: file_bytes(profile),
                    block_bytes: PAGE,
                    reads: Some(reads(profile, direct)),
                    depth: qd,
                    direct,
                }));
            }
        }
        v
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        let a = p.args::<Args>()?;
        let (depth, direct, size, block) = (a.depth.max(1), a.direct, a.file_bytes, a.block_bytes);
        let n = a.reads.unwrap_or(size / block);
        read_case(
            ctx,
            m,
            ReadPlan {
                depth,
                direct,
                n,
                size,
                block,
                random: true,
            },
        )
    }
}

/// One read case: which reads, how many in flight.
pub(super) struct ReadPlan {
    pub(crate) depth: u64,
    pub(crate) direct: bool,
    /// Reads to make (sequential: the whole file once, `size / block`).
    pub(crate) n: u64,
    pub(crate) size: u64,
    pub(crate) block: u64,
    pub(crate) random: bool,
}

pub(super) fn read_case(ctx: &Ctx<'_>, m: &ModelSpec, rp: ReadPlan) -> Result<Sample, CaseError> {
    if rp.depth > 1
        && matches!(
            m.knobs,
            Knobs::Blocking(crate::model::Threading::PerConnection)
        )
    {
        return Err(CaseError::not_applicable(
            "one thread making blocking reads has one read in flight; deeper queues need \
             threads ('threadpool') or a ring",
        ));
    }
    let st = storage_ctx(ctx)?;
    if rp.direct {
        if let Err(why) = &st.fs.o_direct {
            return Err(CaseError::unavailable(format!(
                "O_DIRECT refused on {} at {}: {why}",
                st.fs.fs_type,
                st.dir.display()
            )));
        }
    }
    let path = st.data_file(rp.size)?;
    if !rp.direct {
        st.before_reads()
            .map_err(|e| CaseError::Failed(anyhow::anyhow!("dropping caches: {e}")))?;
    }
    let mut flags = libc::O_RDONLY;
    if rp.direct {
        flags |= libc::O_DIRECT;
    }
    let cfg = FileConfig {
        paths: vec![cpath(&path)],
        open_flags: flags,
        bufs: rp.depth as usize,
        buf_len: rp.block as usize,
        depth: rp.depth as usize,
    };
    let (run, mut eng) = Run::start(ctx, m, cfg, &st.fs)?;
    eng.open_now(0)
        .map_err(|e| failed_io("opening", &path, e))?;
    let blocks = rp.size / rp.block;
    let mut rng = 0x2545_F491_4F6C_DD1Du64 ^ crate::measure::clock::now_ns();
    let mut next_seq = 0u64;
    let mut next_offset = move || {
        if rp.random {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % blocks) * rp.block
        } else {
            let o = (next_seq % blocks) * rp.block;
            next_seq += 1;
            o
        }
    };
    let mut verified = 0u64;
    let d = rp.depth as usize;
    let mut started = vec![0u64; d];
    let mut offsets = vec![0u64; d];
    let mut ops = Vec::with_capacity(d);
    let mut done = Vec::with_capacity(d);
    let sample = run.measure(eng.as_mut(), Counters::default(), |eng, hist| {
        let mut issued = 0u64;
        let mut finished = 0u64;
        let now = crate::measure::clock::now_ns;
        // One block read into the slot's buffer; the slot index is the op's user data.
        let read_at = |slot: usize, off: u64| {
            let kind = OpKind::Read {
                buf: slot as u32,
                offset: off,
                len: rp.block as u32,
            };
            file_op(kind, 0, slot as u64, false)
        };
        for (slot, o) in offsets.iter_mut().enumerate().take(d.min(rp.n as usize)) {
            let off = next_offset();
            *o = off;
            ops.push(read_at(slot, off));
            issued += 1;
        }
        let t = now();
        started[..ops.len()].fill(t);
        eng.submit(&ops)?;
        while finished < rp.n {
            if finished % 1024 == 0 {
                check_stop()?;
            }
            done.clear();
            eng.reap(1, &mut done)?;
            let t = now();
            ops.clear();
            for c in &done {
                let slot = c.user as usize;
                hist.record(t - started[slot]);
                expect_len(c, rp.block, "read")?;
                // SAFETY: slot `slot` has one read in flight at a time, and its completion was
                // just reaped; the slice is dropped before the slot's next read is submitted.
                let b = unsafe { buf(eng.bufs(), slot as u32, rp.block as usize) };
                verified += check_stamped(b, offsets[slot] / PAGE, finished % 64 == 0)?;
                finished += 1;
                if issued < rp.n {
                    let off = next_offset();
                    offsets[slot] = off;
                    started[slot] = t;
                    ops.push(read_at(slot, off));
                    issued += 1;
                }
            }
            if !ops.is_empty() {
                eng.submit(&ops)?;
            }
        }
        Ok((rp.n, rp.n * rp.block))
    })?;
    let mut s = sample;
    s.counters.add("bytes_verified", verified);
    Ok(s)
}
