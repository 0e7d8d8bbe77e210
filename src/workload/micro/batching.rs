//! `micro.batching`: what batching buys. epoll: N pipes ready at once, one epoll_wait + N reads.
//! io_uring: N linked write/read pairs per io_uring_enter (SQPOLL: none). blocking: N
//! write+read pairs, the reference that cannot batch. Cost per message against N.

use super::measure_batches;
use crate::error::CaseError;
use crate::io;
use crate::measure::Sample;
use crate::model::ModelSpec;
use crate::profile::Profile;
use crate::workload::{Ctx, Point, Workload};

/// `micro.batching`'s parameters.
#[derive(serde::Serialize, serde::Deserialize)]
struct Args {
    batch: u64,
    msg_bytes: u64,
}

pub(crate) struct Batching;

const MSG_BYTES: u64 = 64;

impl Workload for Batching {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Micro
    }
    fn facts(&self) -> crate::results::facts::Facts {
        use crate::results::facts::{lines, Facts, Metric};
        Facts {
            chart: lines(
                &["batch"],
                "messages per batch",
                &[Metric::LatencyP50, Metric::SyscallsPer100, Metric::CpuPerOp],
                Metric::LatencyP50,
            ),
            ..Facts::LOCAL
        }
    }
    fn by_default(&self) -> bool {
        false
    }
    fn id(&self) -> &'static str {
        "micro.batching"
    }
    fn about(&self) -> &'static str {
        "amortized cost per message with N messages per kernel entry (64-byte messages, N pipes)"
    }
    fn op(&self) -> &'static str {
        "one 64-byte message of a batch of N (batch time / N)"
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        Ok(m.runs(crate::model::Shape::Pipe)?)
    }
    fn points(&self, profile: Profile, _: &ModelSpec) -> Vec<Point> {
        let ns: &[u64] = match profile {
            Profile::Smoke => &[1, 64],
            _ => &[1, 4, 16, 64],
        };
        ns.iter()
            .map(|&batch| {
                Point::of(Args {
                    batch,
                    msg_bytes: MSG_BYTES,
                })
            })
            .collect()
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        let a = p.args::<Args>()?;
        super::alone(ctx, || {
            let mut shape = io::pipe_batch(m, a.batch as usize, a.msg_bytes as usize, ctx.plan)?;
            measure_batches(ctx, shape.as_mut(), a.batch, a.msg_bytes)
        })
    }
}
