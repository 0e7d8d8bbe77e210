//! What the runner and the exporters read from wrk's run beside a cell
//! ([`crate::measure::cell::WrkCounters`], written by `crosscheck::wrk`): wrk's requests/s, its
//! CPU share, and whether it agrees with ringside's own load generator.

use crate::measure::CellCounters;

/// Relative difference in requests/s beyond which ringside and wrk are said to disagree.
pub(crate) const DISAGREEMENT: f64 = 0.05;

/// How ringside's requests/s (`ours`, the median of `reps` timed repetitions) stands against
/// wrk's on the same server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Agreement {
    /// Within [`DISAGREEMENT`].
    Agrees,
    /// wrk measured less while it used 90%+ of its CPU in every repetition: its figure is its
    /// own limit, not the server's.
    WrkBound,
    /// Apart by more than [`DISAGREEMENT`], and not explained by wrk's saturation.
    Disagrees,
}

/// `None` when wrk did not run.
pub(crate) fn agreement(c: &CellCounters, ours: f64, reps: u64) -> Option<Agreement> {
    let wrk = c.wrk.as_ref()?.requests_per_sec()?;
    let saturated = c.wrk.map_or(0, |w| w.wrk_saturated);
    Some(if (ours - wrk).abs() <= DISAGREEMENT * wrk {
        Agreement::Agrees
    } else if ours > wrk && wrk_runs(c, reps) > 0 && saturated >= wrk_runs(c, reps) {
        Agreement::WrkBound
    } else {
        Agreement::Disagrees
    })
}

/// The repetitions wrk ran in: its own count, or (results written before it was kept, when
/// wrk ran in every repetition) the case's.
fn wrk_runs(c: &CellCounters, reps: u64) -> u64 {
    match c.wrk.map_or(0, |w| w.wrk_runs) {
        0 => reps,
        n => n,
    }
}
