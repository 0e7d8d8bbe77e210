//! The micro suite: what one syscall, one pipe message, one readiness wait and one batch cost,
//! per model, in one pinned thread.

pub(crate) mod batching;
pub(crate) mod fd_scaling;
pub(crate) mod pipe;
pub(crate) mod syscall;

use crate::error::CaseError;
use crate::io::PipeBatch;
use crate::measure::Sample;
use crate::workload::Ctx;

/// Runs `ctx.ops` messages through a pipe-batch shape of `n` pipes: `ctx.ops / n` timed
/// batches, each followed by nothing and preceded by the untimed `prepare`. One op is one
/// message; each batch's time is recorded once per message, amortized.
pub(crate) fn measure_batches(
    ctx: &Ctx<'_>,
    shape: &mut dyn PipeBatch,
    n: u64,
    msg_bytes: u64,
) -> Result<Sample, CaseError> {
    let batches = (ctx.ops / n).max(1);
    for _ in 0..ctx.warm_ops.div_ceil(n) {
        shape.prepare()?;
        shape.run()?;
    }
    shape.verify()?;
    let mut w = ctx.window();
    for _ in 0..batches {
        shape.prepare()?;
        let t0 = w.start();
        shape.run()?;
        w.record(t0, n);
    }
    let ops = batches * n;
    let s = w.finish(ops, ops * msg_bytes, shape.counters());
    shape.verify()?;
    Ok(s)
}
