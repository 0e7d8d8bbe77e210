//! Scaling efficiency of the cores sweeps (`echo.cores`, `http.cores`): how much of N times
//! the one-thread throughput a server of N threads delivered.

use crate::results::{CaseResult, Params, Status};

/// `cell`'s throughput over `threads` times the throughput of its one-thread counterpart in
/// `done` (same workload, model and variant, params `base`): 1.0 is linear scaling. `None`
/// when either cell was not measured.
pub(crate) fn efficiency(
    cell: &CaseResult,
    threads: u32,
    base: &Params,
    done: &[CaseResult],
) -> Option<f64> {
    let ops = measured_ops_per_sec(cell)?;
    let one = done
        .iter()
        .filter(|d| {
            d.workload == cell.workload
                && d.model == cell.model
                && d.variant == cell.variant
                && d.params == *base
        })
        .find_map(measured_ops_per_sec)?;
    (one > 0.0 && threads > 0).then(|| ops / (threads as f64 * one))
}

fn measured_ops_per_sec(c: &CaseResult) -> Option<f64> {
    c.figures
        .as_ref()
        .filter(|_| c.status == Status::Measured)
        .map(|f| f.ops_per_sec.median)
}
