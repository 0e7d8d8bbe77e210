//! How a [`Comparison`] reads: the table, the summary and the verdict line.

use super::*;

impl CellChange {
    /// The cell's verdict in words: "REGRESSION", "improved", "UNTESTED: <why>", the
    /// machine's drift, unstable here, a change within the threshold, too few to test, or
    /// "no significant change".
    pub(crate) fn verdict(&self, threshold: f64) -> String {
        if self.regression {
            "REGRESSION".into()
        } else if self.improvement {
            "improved".into()
        } else if let Some(why) = &self.untested {
            format!("UNTESTED: {why}")
        } else if let Some(why) = &self.drift {
            format!("the machine's drift: {why}")
        } else if let Some(why) = &self.unstable {
            format!("unstable here: {why}")
        } else if self.figures.iter().any(|f| f.test.significant) {
            format!("changed within {threshold}%")
        } else if let Some((nb, nn)) = self.figures.iter().find_map(|f| f.change.too_few) {
            let n = if nb == nn {
                format!("n={nb}")
            } else {
                format!("n={nb} and {nn}")
            };
            format!("within {threshold}% ({n}: too few to test)")
        } else {
            "no significant change".into()
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

    /// Changes beyond the threshold the repetitions cannot test.
    pub(crate) fn untested(&self) -> impl Iterator<Item = &CellChange> {
        self.cells.iter().filter(|c| c.untested.is_some())
    }

    /// Why `ringside compare` fails (exit 1), one sentence each; empty: it passes. Always: a
    /// significant regression, a measured cell that failed, an unfinished NEW run, and a
    /// comparison of nothing. Unless `allow_untested`: a change beyond the threshold that is
    /// too few repetitions to test, cells only one file has, and cells NEW no longer measured.
    pub(crate) fn gate(&self, threshold_pct: f64, allow_untested: bool) -> Vec<String> {
        let mut why = Vec::new();
        let names = |v: Vec<&str>| v.join("; ");
        let regs: Vec<&str> = self.regressions().map(|c| c.cell.as_str()).collect();
        if !regs.is_empty() {
            why.push(format!(
                "{} regression(s) beyond {threshold_pct}%: {}",
                regs.len(),
                names(regs)
            ));
        }
        if !self.became_failed.is_empty() {
            why.push(format!(
                "{} cell(s) measured in BASE failed in NEW: {}",
                self.became_failed.len(),
                self.became_failed.join("; ")
            ));
        }
        if !self.new_finished {
            why.push(
                "NEW is an unfinished run (\"finished\": false): cells it never reached are \
                 not compared"
                    .into(),
            );
        }
        if self.cells.is_empty() {
            why.push("no cell was compared: the two files have no measured cell in common".into());
        }
        if allow_untested {
            return why;
        }
        let noisy: Vec<String> = self
            .noisy(threshold_pct)
            .map(|n| {
                format!(
                    "{} {}{} (±{:.1}% per run, from {} tests)",
                    n.workload,
                    n.figure.name(),
                    if n.relative {
                        " relative to its point"
                    } else {
                        ""
                    },
                    n.pct().map_or(0.0, |p| p.0),
                    n.tests
                )
            })
            .collect();
        if !noisy.is_empty() {
            why.push(format!(
                "the two runs differ by more than the {threshold_pct}% threshold in a typical \
                 cell of {}: either the machine was not the same or most cells changed, and \
                 no change there can be told from that (more runs per side, both builds as \
                 contenders in one run, or --allow-untested)",
                noisy.join("; ")
            ));
        }
        let untested: Vec<&str> = self.untested().map(|c| c.cell.as_str()).collect();
        if !untested.is_empty() {
            why.push(format!(
                "{} change(s) beyond {threshold_pct}% cannot be tested, {}: {} (more \
                 repetitions, or --allow-untested)",
                untested.len(),
                reps_hint(self),
                names(untested)
            ));
        }
        let one_sided = self.only_base.len() + self.only_new.len();
        if one_sided > 0 {
            why.push(format!(
                "{one_sided} cell(s) are in one file only (--allow-untested to accept)"
            ));
        }
        if !self.no_longer_measured.is_empty() {
            why.push(format!(
                "{} cell(s) measured in BASE are not measured in NEW: {} (--allow-untested to \
                 accept)",
                self.no_longer_measured.len(),
                self.no_longer_measured.join("; ")
            ));
        }
        why
    }
}

/// "too few repetitions to test" with the sizes of the first untested cell.
pub(super) fn reps_hint(cmp: &Comparison) -> String {
    cmp.untested()
        .find_map(|c| c.p50.too_few.or(c.ops.too_few))
        .map(too_few_text)
        .unwrap_or_else(|| "too few repetitions to test".into())
}
