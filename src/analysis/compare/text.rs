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
        } else if !self.blind.is_empty() {
            // No change called, but none of the threshold's size could have been.
            format!(
                "UNTESTED at {threshold}%: {}",
                blind_text(&self.blind, threshold)
            )
        } else if self.figures.iter().any(|f| f.test.significant) {
            format!("changed within {threshold}%")
        } else {
            "no significant change".into()
        }
    }
}

impl Blind {
    /// Why a cell could not see a change of `threshold` percent, in words, as (the figure it
    /// is of, why): (CPU/op, "could see only changes beyond 14% (6 repetitions a side, noise
    /// between runs ±4.1% a run; 40 a side would see 5% at this noise)"); see [`blind_text`].
    pub(crate) fn reason(&self, threshold: f64) -> (Option<&'static str>, String) {
        let t = threshold;
        match self {
            Blind::Figure(fig, p) => {
                let need = match p.power {
                    Power::TooFew { need, .. } => Some(need),
                    _ => None,
                };
                let more = match (p.rounds_needed, p.floor_pct) {
                    (Some(n), _) if Some(n) == need => String::new(),
                    (Some(n), _) => format!("; {n} a side would see {t}% at this noise"),
                    (None, Some(f)) if f > t => format!(
                        "; no number of repetitions would: the noise between runs alone hides \
                         changes under {}",
                        super::gate::pct_words(f)
                    ),
                    _ => String::new(),
                };
                let why = match &p.power {
                    Power::Sees(m) => format!(
                        "could see only changes beyond {} ({}{}{more})",
                        super::gate::pct_words(*m),
                        sizes_text(p.sizes),
                        p.noise_pct
                            .map(|n| format!(", noise between runs ±{n:.1}% a run"))
                            .unwrap_or_default()
                    ),
                    Power::TooFew { sizes, need } => format!(
                        "too few repetitions to test ({}; a change alone among {} tests needs \
                         >= {need} a side{more})",
                        sizes_text(*sizes),
                        p.tests
                    ),
                    Power::NoValues(sizes) => too_few_text(*sizes),
                    Power::NoiseUnknown => format!(
                        "the noise between runs is not estimated (under {} tests of it), so \
                         what its test could see is unknown",
                        crate::stats::stability::NOISE_MIN_CELLS
                    ),
                };
                (Some(fig.name()), why)
            }
            Blind::MachineMoved(d) => (
                None,
                format!(
                    "a model alone at its point while the calibration probes moved {d:.0}% \
                     between the runs: its changes within {:.0}% are taken as the machine's",
                    t + d
                ),
            ),
            Blind::Poller(w) => (
                None,
                format!(
                    "its ops cross to a SQPOLL poller and the machine's cross-CPU wake-up got \
                     {w:.0}% slower between the runs: a change for the worse is taken as the \
                     machine's"
                ),
            ),
            Blind::Jump(which, gap) => (
                None,
                format!(
                    "its model jumped between two levels {gap:.0}% apart within {which} in \
                     this workload: its changes within that are not called"
                ),
            ),
        }
    }
}

/// Why a cell could not see a change of `threshold` percent: its reasons in order, the
/// figures that share one named together ("p50, ops/s: too few repetitions ...").
pub(crate) fn blind_text(blind: &[Blind], threshold: f64) -> String {
    let mut merged: Vec<(Vec<&'static str>, String)> = Vec::new();
    for b in blind {
        let (fig, why) = b.reason(threshold);
        match merged.iter_mut().find(|m| m.1 == why) {
            Some(m) => m.0.extend(fig),
            None => merged.push((fig.into_iter().collect(), why)),
        }
    }
    merged
        .into_iter()
        .map(|(figs, why)| {
            if figs.is_empty() {
                why
            } else {
                format!("{}: {why}", figs.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// "6 repetitions a side", "3 and 6 repetitions".
fn sizes_text((nb, nn): (usize, usize)) -> String {
    if nb == nn {
        format!("{nb} repetitions a side")
    } else {
        format!("{nb} and {nn} repetitions")
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
