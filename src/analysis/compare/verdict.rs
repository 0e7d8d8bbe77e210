//! Each compared cell's verdict, as a typed value ([`CellVerdict`]); `export::words::compare`
//! says it.

use super::*;

/// A compared cell's verdict, in the order it is decided: regression, improvement, a change
/// too few repetitions could test, the machine's drift, a change within the model's own
/// jump, a test that could not see the threshold, a change within the threshold, no change.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum CellVerdict {
    Regression,
    Improved,
    Untested(Untested),
    Drift(Drift),
    Unstable(Jumped),
    /// No change called, but none of the threshold's size could have been.
    Blind(Vec<Blind>),
    /// A significant change within the threshold.
    ChangedWithin,
    NoChange,
}

impl CellChange {
    /// The cell's verdict.
    pub(crate) fn verdict(&self) -> CellVerdict {
        if self.regression {
            CellVerdict::Regression
        } else if self.improvement {
            CellVerdict::Improved
        } else if let Some(u) = &self.untested {
            CellVerdict::Untested(u.clone())
        } else if let Some(d) = &self.drift {
            CellVerdict::Drift(d.clone())
        } else if let Some(j) = &self.unstable {
            CellVerdict::Unstable(j.clone())
        } else if !self.blind.is_empty() {
            CellVerdict::Blind(self.blind.clone())
        } else if self.figures.iter().any(|f| f.test.significant) {
            CellVerdict::ChangedWithin
        } else {
            CellVerdict::NoChange
        }
    }
}

impl Comparison {
    pub(crate) fn regressions(&self) -> impl Iterator<Item = &CellChange> {
        self.cells.iter().filter(|c| c.regression)
    }

    /// The groups of central figures (p50, ops/s, CPU per op) whose typical cell moved
    /// between the runs by more than the threshold: the standard deviation of one cell's
    /// change between two single runs (the run-to-run noise, sqrt(2) tau) beyond it. A
    /// quiet machine's A/A pair stays far under it; a machine in another state, or a change
    /// that moved most cells, does not, and then no cell there can be judged.
    pub(crate) fn noisy(&self, threshold_pct: f64) -> impl Iterator<Item = &RunNoise> {
        self.noise.iter().filter(move |n| {
            n.figure != Figure::P99
                && n.tau.is_some_and(|t| {
                    ((std::f64::consts::SQRT_2 * t.estimate).exp() - 1.0) * 100.0 > threshold_pct
                })
        })
    }

    /// The models whose own scatter over their points is well beyond their workload's noise
    /// (over twice its upper bound, and over 2%): named by `compare`, since their changes
    /// are judged against it.
    pub(crate) fn scattered(&self) -> impl Iterator<Item = &ModelNoise> {
        self.model_noise.iter().filter(|m| {
            let group = self
                .noise
                .iter()
                .find(|n| {
                    n.workload == m.workload && n.figure == m.figure && n.relative == m.relative
                })
                .and_then(|n| n.tau)
                .map_or(0.0, |t| t.upper);
            m.tau > 2.0 * group && m.tau > 0.02
        })
    }
}
