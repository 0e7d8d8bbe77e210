//! `micro.batching`: what batching buys. epoll: N pipes ready at once, one epoll_wait + N reads.
//! io_uring: N linked write/read pairs per io_uring_enter (SQPOLL: none). blocking: N
//! write+read pairs, the reference that cannot batch. Cost per message against N.

use super::measure_batches;
use crate::error::CaseError;
use crate::io;
use crate::measure::Sample;
use crate::model::ModelSpec;
use crate::profile::Profile;
use crate::workload::{Ctx, Params, Point, Workload};

pub struct Batching;

const MSG_BYTES: u64 = 64;

impl Workload for Batching {
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
        super::accepts_pipe_shape(m)
    }
    fn points(&self, profile: Profile, _: &ModelSpec) -> Vec<Point> {
        let ns: &[u64] = match profile {
            Profile::Smoke => &[1, 64],
            _ => &[1, 4, 16, 64],
        };
        ns.iter()
            .map(|&n| Point::new(Params::new().with("batch", n).with("msg_bytes", MSG_BYTES)))
            .collect()
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        let n = p.params.u64("batch")?;
        let mut shape = io::pipe_batch(m, n as usize, MSG_BYTES as usize, ctx.plan)?;
        measure_batches(ctx, shape.as_mut(), n, MSG_BYTES)
    }
}
