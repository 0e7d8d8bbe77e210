//! The correction over every test, then each cell's verdict.

use super::*;

impl Comparison {
    /// Every decisive test's p, in the order [`correct_and_judge`] takes their corrected
    /// values back.
    pub(super) fn decisive_ps(&self) -> Vec<f64> {
        self.cells
            .iter()
            .flat_map(|c| c.figures.iter().filter_map(|f| f.test.p))
            .collect()
    }
}

/// Every decisive test of every cell takes its p corrected in one family (Benjamini-Hochberg:
/// `adj`, in the order of [`Comparison::decisive_ps`]; the family has `family` tests, this
/// comparison's alone or every pair's of `compare A B C`), then each cell is judged, with the
/// runs' within-run jumps and the probes' drift.
pub(super) fn correct_and_judge(
    cmp: &mut Comparison,
    base: &RunResults,
    new: &RunResults,
    threshold_pct: f64,
    adj: &[f64],
    family: usize,
) {
    cmp.tests = adj.len();
    cmp.family = family;
    let mut k = 0;
    let drift_pct = cmp.probes.as_ref().map_or(0.0, |p| p.drift_pct);
    let wake_pct = cmp.probes.as_ref().and_then(|p| p.wake_pct);
    cmp.unstable = [("BASE", base), ("NEW", new)]
        .iter()
        .flat_map(|(which, run)| {
            crate::stats::stability::unstable(run)
                .into_iter()
                .map(move |u| (*which, u))
        })
        .collect();
    for c in &mut cmp.cells {
        for f in &mut c.figures {
            if f.test.p.is_some() {
                f.test.p_adj = Some(adj[k]);
                f.test.significant = adj[k] < ALPHA;
                k += 1;
            } else if f.change.method == Method::Spread {
                // Files without per-repetition values: the ranges apart, as they were judged
                // before (no rounds to test, nothing to correct).
                f.test.significant = f.change.significant;
                f.test.log_change = (1.0 + f.change.pct / 100.0).max(f64::MIN_POSITIVE).ln();
            }
        }
        let jump = cmp
            .unstable
            .iter()
            .filter(|(_, u)| u.workload == c.workload && u.label == c.label)
            .max_by(|a, b| a.1.levels.gap().total_cmp(&b.1.levels.gap()));
        judge(c, threshold_pct, (drift_pct, wake_pct), family, jump);
        super::power::assess(c, threshold_pct, family, (drift_pct, wake_pct), jump);
    }
}

/// A cell's verdict from its corrected figures: regression, improvement, untested, a change
/// that is the machine's, or one within the levels the model jumped between within a run.
pub(super) fn judge(
    c: &mut CellChange,
    threshold_pct: f64,
    (drift_pct, wake_pct): (f64, Option<f64>),
    tests: usize,
    jump: Option<&(&'static str, crate::stats::stability::Unstable)>,
) {
    let beyond = |pct: f64| pct.abs() > threshold_pct;
    // The p a lone discovery needs among `tests` (Benjamini-Hochberg's first step).
    let lone = ALPHA / tests.max(1) as f64;
    // Why a change beyond the threshold is not the code's: the machine's (the figure moved
    // but not against the point's other models, or a lone model within the probes' drift),
    // or the model's own two levels.
    let poller = c.poller;
    let not_the_code = |f: &FigureChange| -> (Option<Drift>, Option<Jumped>) {
        let (ch, t) = (&f.change, &f.test);
        let figure = f.figure;
        // The machine's cross-CPU state moved and this cell's ops cross CPUs where its
        // point-mates' do not: a change the same way as the wake-up probe's is the machine's.
        if let Some(w) = wake_pct.filter(|w| poller && f.figure.worse(t.pct()) == (*w > 0.0)) {
            return (
                Some(Drift::Poller {
                    figure,
                    pct: t.pct(),
                    wake_pct: w,
                }),
                None,
            );
        }
        if t.relative {
            if !beyond(t.pct()) || f.figure.worse(t.pct()) != f.figure.worse(ch.pct) {
                return (
                    Some(Drift::Relative {
                        figure,
                        pct: ch.pct,
                        relative_pct: t.pct(),
                        to: f.relative.as_ref().map(|r| r.0.clone()),
                    }),
                    None,
                );
            }
        } else if ch.pct.abs() <= threshold_pct + drift_pct {
            return (
                Some(Drift::WithinProbes {
                    figure,
                    pct: ch.pct,
                    drift_pct,
                }),
                None,
            );
        }
        if let Some((which, u)) = jump {
            if t.pct().abs() <= u.levels.gap() * 100.0 {
                return (
                    None,
                    Some(Jumped {
                        figure,
                        pct: t.pct(),
                        gap_pct: u.levels.gap() * 100.0,
                        which,
                        unstable: u.clone(),
                    }),
                );
            }
        }
        (None, None)
    };
    for f in &c.figures {
        let (ch, t) = (&f.change, &f.test);
        if !(t.significant && beyond(ch.pct)) {
            // The figure moved visibly while relative to the point's others it did not: the
            // machine's, said as such (no claim either way).
            if t.relative && beyond(ch.pct) && ch.p.is_some_and(|p| p < ALPHA) && !beyond(t.pct()) {
                if let (Some(why), _) = not_the_code(f) {
                    c.drift.get_or_insert(why);
                }
            }
            continue;
        }
        if !t.relative && c.peers_not_compared > 0 {
            // Judged alone only because its point-mates were not compared: untested.
            c.untested.get_or_insert(Untested::Unpaired {
                figure: f.figure,
                pct: ch.pct,
                peers: c.peers_not_compared,
            });
            continue;
        }
        match not_the_code(f) {
            (Some(why), _) => {
                c.drift.get_or_insert(why);
            }
            (_, Some(why)) => {
                c.unstable.get_or_insert(why);
            }
            (None, None) if f.figure.worse(ch.pct) => c.regression = true,
            (None, None) => c.improvement = true,
        }
    }
    if c.regression {
        c.improvement = false;
    }
    if !c.regression && !c.improvement && c.untested.is_none() {
        c.untested = c
            .figures
            .iter()
            .map(|f| &f.change)
            .find(|ch| beyond(ch.pct) && ch.too_few.is_some())
            .and_then(|ch| ch.too_few)
            .map(|sizes| Untested::TooFew(TooFew::of(sizes)));
    }
    if c.regression
        || c.improvement
        || c.untested.is_some()
        || c.drift.is_some()
        || c.unstable.is_some()
    {
        return;
    }
    // A change the family cannot confirm however clear it is: the rounds are completely
    // apart (the smallest p they can give), beyond the threshold and the probes' drift, the
    // same relative to the point's others, and yet that p is above what a lone discovery
    // among this many tests needs. Untested, not "no change".
    for f in &c.figures {
        let (ch, t) = (&f.change, &f.test);
        let (nb, nn) = t.sizes;
        let floor = min_p(nb, nn);
        let clear = t.apart && t.p_runs.is_none_or(|p| p <= floor);
        if clear
            && beyond(ch.pct)
            && matches!(not_the_code(f), (None, None))
            && floor > lone
            && f.figure.worse(ch.pct)
        {
            c.untested = Some(Untested::Apart {
                figure: f.figure,
                pct: ch.pct,
                floor,
                sizes: (nb, nn),
                tests,
                lone,
            });
            return;
        }
    }
}
