//! Findings: per workload, the answer its cells support on this machine, computed from the
//! figures, never written by hand. The caller (the exporters' `export::findings`) arranges a
//! workload's measured cells into points (one parameter point each, sweep points in sweep
//! order) with the figure to rank by; this module ranks every point, picks the headline (the
//! first point), says by how much the leader leads and with what confidence, which models are
//! within noise of it, and where along the points another model takes the lead. [`trust`]
//! sums up how far a run can be trusted.
//!
//! "Within noise" is the verdicts' criterion (the per-repetition ranges overlap), and also any
//! difference a Mann-Whitney test on the repetitions cannot show at [`ALPHA`].

use super::bootstrap::median_ci;
use super::compare::{mann_whitney, testable, ALPHA};
use crate::results::{RunResults, Status, Warning};

/// One model's figure at one point.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub label: String,
    /// The figure ranked (the cell's summary: a median, a CPU per op).
    pub value: f64,
    /// The same figure per repetition (empty when the file has none).
    pub reps: Vec<f64>,
}

/// One parameter point: where it is ("msg_bytes=64") and its entries.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub at: String,
    pub entries: Vec<Entry>,
}

/// How well two entries' repetitions are told apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Confidence {
    /// Mann-Whitney p on the repetitions, when they are enough to reach [`ALPHA`].
    pub p: Option<f64>,
    /// Repetitions on each side.
    pub n: (usize, usize),
    /// Whether their per-repetition ranges overlap.
    pub overlap: bool,
}

impl Confidence {
    pub fn of(a: &[f64], b: &[f64]) -> Confidence {
        let range = |v: &[f64]| {
            v.iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                    (lo.min(x), hi.max(x))
                })
        };
        let ((a0, a1), (b0, b1)) = (range(a), range(b));
        Confidence {
            p: testable(a.len(), b.len(), ALPHA)
                .then(|| mann_whitney(a, b))
                .flatten(),
            n: (a.len(), b.len()),
            overlap: !a.is_empty() && !b.is_empty() && a0 <= b1 && b0 <= a1,
        }
    }

    /// True when the difference is not shown to be real.
    pub fn within_noise(&self) -> bool {
        self.overlap || self.p.is_some_and(|p| p >= ALPHA)
    }
}

/// An entry ranked against the leader of its point.
#[derive(Clone, Debug, PartialEq)]
pub struct Other {
    pub label: String,
    /// How many times better the leader is (>= 1).
    pub times: f64,
    pub confidence: Confidence,
}

/// One point ranked: the leader, the entries within noise of it, the rest in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranking {
    pub at: String,
    pub leader: String,
    pub value: f64,
    /// 95% bootstrap interval of the leader's median over its repetitions.
    pub ci: Option<(f64, f64)>,
    pub reps: usize,
    pub near: Vec<Other>,
    pub behind: Vec<Other>,
}

impl Ranking {
    fn beats_clearly(&self, label: &str) -> bool {
        self.behind.iter().any(|o| o.label == label)
    }

    fn at_par(&self, label: &str) -> bool {
        self.leader == label || self.near.iter().any(|o| o.label == label)
    }
}

/// Ranks one point's entries (`None` with fewer than two).
pub fn rank(p: &Point, higher_is_better: bool) -> Option<Ranking> {
    if p.entries.len() < 2 {
        return None;
    }
    let mut order: Vec<&Entry> = p.entries.iter().collect();
    // Stable: ties keep the caller's order.
    order.sort_by(|a, b| {
        if higher_is_better {
            b.value.total_cmp(&a.value)
        } else {
            a.value.total_cmp(&b.value)
        }
    });
    let lead = order[0];
    let (mut near, mut behind) = (Vec::new(), Vec::new());
    for e in &order[1..] {
        let times = if higher_is_better {
            lead.value / e.value
        } else {
            e.value / lead.value
        };
        let o = Other {
            label: e.label.clone(),
            times,
            confidence: Confidence::of(&lead.reps, &e.reps),
        };
        if o.confidence.within_noise() {
            near.push(o);
        } else {
            behind.push(o);
        }
    }
    Some(Ranking {
        at: p.at.clone(),
        leader: lead.label.clone(),
        value: lead.value,
        ci: median_ci(&lead.reps),
        reps: lead.reps.len(),
        near,
        behind,
    })
}

/// Two entries of one point: `better` ahead of `worse` by `times`.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    pub better: String,
    pub worse: String,
    pub times: f64,
    pub confidence: Confidence,
}

/// Every pair of a point's entries, better first, in rank order (the leader's pairs first).
pub fn pairs(p: &Point, higher_is_better: bool) -> Vec<Pair> {
    let mut order: Vec<&Entry> = p.entries.iter().collect();
    order.sort_by(|a, b| {
        if higher_is_better {
            b.value.total_cmp(&a.value)
        } else {
            a.value.total_cmp(&b.value)
        }
    });
    let mut out = Vec::new();
    for (i, a) in order.iter().enumerate() {
        for b in &order[i + 1..] {
            out.push(Pair {
                better: a.label.clone(),
                worse: b.label.clone(),
                times: if higher_is_better {
                    a.value / b.value
                } else {
                    b.value / a.value
                },
                confidence: Confidence::of(&a.reps, &b.reps),
            });
        }
    }
    out
}

/// Where another model takes the lead from the headline's leader, clearly (the headline's
/// leader is behind it beyond noise there).
#[derive(Clone, Debug, PartialEq)]
pub struct Flip {
    pub at: String,
    pub leader: String,
    pub times: f64,
}

/// What one workload's cells say.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// The first ranked point.
    pub headline: Ranking,
    /// Points ranked, and at how many of them the headline's leader leads or is within noise
    /// of the leader.
    pub points: usize,
    pub leads: usize,
    /// Later points where another model leads and the headline's leader is clearly behind.
    pub flips: Vec<Flip>,
}

/// The finding over a workload's points, in the order given (`None`: no point with two
/// entries to rank).
pub fn of_points(points: &[Point], higher_is_better: bool) -> Option<Finding> {
    let ranked: Vec<Ranking> = points
        .iter()
        .filter_map(|p| rank(p, higher_is_better))
        .collect();
    let headline = ranked.first()?.clone();
    let who = headline.leader.clone();
    let leads = ranked.iter().filter(|r| r.at_par(&who)).count();
    let flips = ranked[1..]
        .iter()
        .filter(|r| r.beats_clearly(&who))
        .map(|r| Flip {
            at: r.at.clone(),
            leader: r.leader.clone(),
            times: r
                .behind
                .iter()
                .find(|o| o.label == who)
                .map(|o| o.times)
                .unwrap_or(1.0),
        })
        .collect();
    Some(Finding {
        headline,
        points: ranked.len(),
        leads,
        flips,
    })
}

/// How far to trust a run: its cells by status, the repetitions behind the measured ones,
/// and the warnings they carry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trust {
    pub cells: usize,
    pub measured: usize,
    pub failed: usize,
    /// Measured cells' timed repetitions, fewest and most.
    pub reps: Option<(u32, u32)>,
    /// Each warning with the number of measured cells that carry it, in a fixed order.
    pub warnings: Vec<(Warning, usize)>,
    /// Measured cells with any warning.
    pub warned: usize,
}

/// Every warning, in the order [`Trust`] lists them.
const WARNINGS: [Warning; 9] = [
    Warning::HighSpread,
    Warning::ClientBound,
    Warning::BothSaturated,
    Warning::SharedCpus,
    Warning::LoadgenDisagrees,
    Warning::WrkBound,
    Warning::CpuOverAllowed,
    Warning::WarmupUnsettled,
    Warning::NoNapiId,
];

pub fn trust(run: &RunResults) -> Trust {
    let measured: Vec<_> = run
        .cases
        .iter()
        .filter(|c| c.status == Status::Measured)
        .collect();
    let reps = measured.iter().map(|c| c.repetitions).fold(None, |acc, r| {
        Some(match acc {
            None => (r, r),
            Some((lo, hi)) => (r.min(lo), r.max(hi)),
        })
    });
    let warnings = WARNINGS
        .iter()
        .map(|w| {
            (
                *w,
                measured.iter().filter(|c| c.warnings.contains(w)).count(),
            )
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    Trust {
        cells: run.cases.len(),
        measured: measured.len(),
        failed: run
            .cases
            .iter()
            .filter(|c| c.status == Status::Failed)
            .count(),
        reps,
        warnings,
        warned: measured.iter().filter(|c| !c.warnings.is_empty()).count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(label: &str, reps: &[f64]) -> Entry {
        let mut s = reps.to_vec();
        s.sort_by(f64::total_cmp);
        Entry {
            label: label.into(),
            value: s[s.len() / 2],
            reps: reps.to_vec(),
        }
    }

    fn pt(at: &str, entries: Vec<Entry>) -> Point {
        Point {
            at: at.into(),
            entries,
        }
    }

    #[test]
    fn leader_near_and_behind() {
        let p = pt(
            "x=1",
            vec![
                e("slow", &[300.0, 310.0, 305.0, 302.0, 301.0]),
                e("fast", &[100.0, 101.0, 102.0, 99.0, 100.0]),
                e("close", &[101.0, 103.0, 104.0, 102.0, 105.0]),
            ],
        );
        let r = rank(&p, false).unwrap();
        assert_eq!(r.leader, "fast");
        assert_eq!(r.near.len(), 1);
        assert_eq!(r.near[0].label, "close");
        assert_eq!(r.behind.len(), 1);
        assert_eq!(r.behind[0].label, "slow");
        assert!((r.behind[0].times - 3.03).abs() < 0.01);
        assert!(r.behind[0].confidence.p.unwrap() < 0.05);
        let (lo, hi) = r.ci.unwrap();
        assert!(lo <= 100.0 && hi >= 100.0 && lo >= 99.0 && hi <= 102.0);
    }

    #[test]
    fn higher_is_better_ranks_the_largest_first() {
        let p = pt(
            "",
            vec![
                e("a", &[1.0, 1.1, 1.0, 1.05]),
                e("b", &[3.0, 3.1, 3.0, 3.2]),
            ],
        );
        let r = rank(&p, true).unwrap();
        assert_eq!(r.leader, "b");
        assert!(r.behind[0].times > 2.5);
    }

    #[test]
    fn a_flip_needs_the_headline_leader_clearly_behind() {
        let pts = vec![
            pt(
                "n=1",
                vec![
                    e("a", &[10.0, 11.0, 10.5, 10.2]),
                    e("b", &[20.0, 21.0, 20.5, 20.2]),
                ],
            ),
            // b leads but within noise of a: no flip.
            pt(
                "n=8",
                vec![
                    e("a", &[10.0, 11.0, 10.5, 10.2]),
                    e("b", &[9.9, 10.9, 10.4, 10.1]),
                ],
            ),
            // b clearly ahead: a flip.
            pt(
                "n=64",
                vec![
                    e("a", &[30.0, 31.0, 30.5, 30.2]),
                    e("b", &[10.0, 11.0, 10.5, 10.2]),
                ],
            ),
        ];
        let f = of_points(&pts, false).unwrap();
        assert_eq!(f.headline.leader, "a");
        assert_eq!((f.points, f.leads), (3, 2));
        assert_eq!(f.flips.len(), 1);
        assert_eq!(f.flips[0].at, "n=64");
        assert_eq!(f.flips[0].leader, "b");
        assert!(f.flips[0].times > 2.9);
    }

    #[test]
    fn pairs_are_every_two_entries_better_first() {
        let p = pt(
            "",
            vec![
                e("c", &[30.0, 31.0]),
                e("a", &[10.0, 11.0]),
                e("b", &[20.0, 21.0]),
            ],
        );
        let v = pairs(&p, false);
        let names: Vec<(&str, &str)> = v
            .iter()
            .map(|x| (x.better.as_str(), x.worse.as_str()))
            .collect();
        assert_eq!(names, [("a", "b"), ("a", "c"), ("b", "c")]);
        assert!(v.iter().all(|x| x.times >= 1.0));
    }

    #[test]
    fn one_entry_points_are_not_ranked() {
        assert_eq!(of_points(&[pt("", vec![e("a", &[1.0])])], false), None);
    }

    #[test]
    fn one_repetition_is_not_noise_but_has_no_p() {
        let c = Confidence::of(&[1.0], &[2.0]);
        assert!(!c.within_noise());
        assert_eq!(c.p, None);
    }
}
