//! `storage.seqread`: the run's data file read from start to end in blocks of 4 KiB..1 MiB:
//! MB/s and CPU per MB. blocking: one pread at a time; threadpool and io_uring: 4 reads in
//! flight (the next blocks), refilled as they complete.

use super::randread::{read_case, ReadPlan};
use super::*;
use crate::workload::{Point, Workload};

pub(crate) struct SeqRead;

fn depth(m: &ModelSpec) -> u64 {
    match &m.knobs {
        Knobs::Blocking(crate::model::Threading::PerConnection) => 1,
        _ => 4,
    }
}

impl Workload for SeqRead {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Storage
    }
    fn by_default(&self) -> bool {
        false
    }
    fn id(&self) -> &'static str {
        "storage.seqread"
    }
    fn about(&self) -> &'static str {
        "a large file read sequentially with block sizes 4 KiB..1 MiB (MB/s, CPU per MB)"
    }
    fn op(&self) -> &'static str {
        "one block read in file order (block_bytes; MB/s = ops/s x block_bytes), stamps checked"
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        Ok(m.runs(Shape::Storage(FileIo::Buffered))?)
    }
    fn points(&self, profile: Profile, m: &ModelSpec) -> Vec<Point> {
        let sizes: &[u64] = match profile {
            Profile::Smoke => &[4 << 10, 1 << 20],
            Profile::Quick => &[4 << 10, 64 << 10, 1 << 20],
            Profile::Full => &[4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20],
        };
        sizes
            .iter()
            .map(|&bs| {
                Point::of(super::randread::Args {
                    file_bytes: super::randread::file_bytes(profile),
                    block_bytes: bs,
                    reads: None,
                    depth: depth(m),
                    direct: false,
                })
            })
            .collect()
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        let a = p.args::<super::randread::Args>()?;
        let (size, block) = (a.file_bytes, a.block_bytes);
        read_case(
            ctx,
            m,
            ReadPlan {
                depth: a.depth,
                direct: false,
                n: size / block,
                size,
                block,
                random: false,
            },
        )
    }
}
