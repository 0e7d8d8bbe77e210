//! `run --explain` compared: which group of where the CPU went differs most between two
//! cells, decided here once per run as typed [`Caption`]s per point (held by
//! `analysis::Workload::explained`) that `export::explain` words. Who is compared: the
//! point's leader against its runner-up (ranked by `analysis::basis` on the file's facts); or,
//! where `--explain` named models (the file's `explain_models`), each named model against the
//! leader (against the runner-up where it leads); where no leader was decided, a model
//! against the one closest to it by the workload's figure. Shares are taken of each cell's
//! own work, the samples that were neither idle nor another program's (`other_processes`):
//! on a shared machine those two depend on what else ran, not on the model. A breakdown
//! where other programs took more than [`SHARED_ABOVE`] of the samples is marked
//! ([`Shared`]).

use crate::measure::Measured;
use crate::results::explain::{Explain, GROUPS};
use crate::results::facts::{Facts, Metric};
use crate::results::{CaseResult, Params, Status};

/// Groups that are not the measured program's work: left out of the comparison.
pub(crate) const NOT_WORK: [&str; 2] = ["idle", "other_processes"];

/// Fewer samples of a cell's own work than this (about 12 ms of CPU at perf's 4 kHz) and its
/// shares are too coarse to compare.
pub const MIN_WORK_SAMPLES: f64 = 50.0;

/// Samples of the cell's own work (neither idle nor another program's).
pub(crate) fn work_samples(e: &Explain) -> f64 {
    let not: f64 = NOT_WORK.iter().map(|k| e.fraction(k)).sum();
    e.samples as f64 * (1.0 - not).max(0.0)
}

/// Each work group's share of the cell's own work (`GROUPS` order; summing to 1), or `None`
/// when no sample was its own work.
pub(crate) fn work_shares(e: &Explain) -> Option<Vec<(&'static str, f64)>> {
    let work: f64 = GROUPS
        .iter()
        .filter(|(k, _)| !NOT_WORK.contains(k))
        .map(|(k, _)| e.fraction(k))
        .sum();
    (work > 0.0).then(|| {
        GROUPS
            .iter()
            .filter(|(k, _)| !NOT_WORK.contains(k))
            .map(|(k, _)| (*k, e.fraction(k) / work))
            .collect()
    })
}

/// Above this share of the samples taken by other programs, a breakdown is marked as shared
/// with them: their kernel work (softirqs, wake-ups) on the sampled CPUs is not told apart
/// from the cell's.
pub const SHARED_ABOVE: f64 = 0.10;

/// The group whose share of the work differs most between two cells.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Difference {
    /// Its key (`results::explain::GROUPS`).
    pub(crate) group: &'static str,
    /// Its share of the first cell's work (the one explained), 0..=1.
    pub(crate) subject: f64,
    /// Its share of the second cell's work (the one it is compared with).
    pub(crate) other: f64,
}

/// Why two breakdowns' difference is not named.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum NoDifference {
    /// One cell had fewer than [`MIN_WORK_SAMPLES`] samples of its own work (the first
    /// cell's said where both had; `other`: it was the second's).
    TooFewSamples { other: bool, samples: f64 },
    /// Neither cell had a sample of its own work.
    NoOwnWork,
}

/// The biggest difference in share of own work between a breakdown and another's (ties: the
/// first in `GROUPS` order), or why there is none to name.
pub(crate) fn biggest_difference(
    subject: &Explain,
    other: &Explain,
) -> Result<Difference, NoDifference> {
    for (second, e) in [(false, subject), (true, other)] {
        let n = work_samples(e);
        if n < MIN_WORK_SAMPLES {
            return Err(NoDifference::TooFewSamples {
                other: second,
                samples: n,
            });
        }
    }
    let (Some(a), Some(b)) = (work_shares(subject), work_shares(other)) else {
        return Err(NoDifference::NoOwnWork);
    };
    let mut best: Option<Difference> = None;
    for ((k, x), (_, y)) in a.iter().zip(&b) {
        let d = (x - y).abs();
        if best
            .as_ref()
            .is_none_or(|b| d > (b.subject - b.other).abs())
        {
            best = Some(Difference {
                group: k,
                subject: *x,
                other: *y,
            });
        }
    }
    best.ok_or(NoDifference::NoOwnWork)
}

/// Why a compared cell's breakdown is not there to compare.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Missing {
    /// The cell was not sampled.
    NotSampled,
    /// Its breakdown is unavailable, for this reason.
    Unavailable(String),
}

/// Who a caption's second cell is to its first.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Against {
    /// The first leads the point, the second is its runner-up (`near`: within noise of the
    /// leader, so no clear leader).
    RunnerUp { near: bool },
    /// The second leads the point (the first is a model `--explain` named).
    Leader,
    /// No leader was decided at the point: the second is the sampled cell closest to the
    /// first by `metric` (the workload's figure; `None`: neither had it, the second is the
    /// next sampled cell in run order).
    Closest { metric: Option<Metric> },
}

/// What one `--explain` caption says.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Caption {
    /// No leader was decided and this cell (its label) is the only one with a breakdown:
    /// nothing to compare it with.
    Alone(String),
    /// No cell of the point has a breakdown to show, and none could be ranked.
    NoLeader,
    /// The point was ranked but had no runner-up.
    NoRunnerUp,
    /// A compared cell's breakdown is missing (each such one, the first cell first).
    Missing(Vec<(String, Missing)>),
    /// Both were sampled.
    Compared {
        /// The cell explained (the leader, or a named model).
        subject: String,
        /// The cell it is compared with.
        other: String,
        against: Against,
        /// Samples of each one's own work (subject, other).
        samples: (f64, f64),
        difference: Result<Difference, NoDifference>,
    },
}

/// A cell whose breakdown other programs took more than [`SHARED_ABOVE`] of.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Shared {
    pub(crate) label: String,
    /// Their share of its samples, 0..=1.
    pub(crate) fraction: f64,
}

/// One point of a workload whose cells have breakdowns, and its captions.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Explained {
    /// The point's params (its cells' exactly).
    pub(crate) params: Params,
    /// Whether it is an equal-load point (which has its capacity point's params).
    pub(crate) equal_load: bool,
    /// One per named model that ran at the point (in the order named), or the one on the
    /// leader where `--explain` named none (or none of them ran here).
    pub(crate) captions: Vec<Caption>,
    /// Its cells whose breakdown other programs shared, in run order.
    pub(crate) shared: Vec<Shared>,
}

impl Explained {
    /// Whether cell `c` is one of the point's.
    pub(crate) fn holds(&self, c: &CaseResult) -> bool {
        c.params == self.params && c.equal_load.is_some() == self.equal_load
    }
}

/// The points of a workload's `cases` (run order) where a cell has a breakdown (or why it has
/// none), in run order, each with its captions: the leader ranked by `facts` (the file's)
/// among every measured cell of the point, sampled or not; `named`, the models `--explain`
/// named (the file's `explain_models`).
pub(crate) fn of_cases(
    facts: &Facts,
    cases: &[&CaseResult],
    ranked: Option<&super::basis::Ranked<'_>>,
    named: &[String],
) -> Vec<Explained> {
    let mut out: Vec<&CaseResult> = Vec::new();
    for c in cases.iter().filter(|c| c.explain.is_some()) {
        if !out.iter().any(|o| o.same_point(c)) {
            out.push(c);
        }
    }
    out.into_iter()
        .map(|cell| {
            let all: Vec<&CaseResult> = cases
                .iter()
                .copied()
                .filter(|c| c.same_point(cell) && c.status == Status::Measured)
                .collect();
            Explained {
                params: cell.params.clone(),
                equal_load: cell.equal_load.is_some(),
                captions: captions(ranked, facts, &all, named),
                shared: shared(&all),
            }
        })
        .collect()
}

/// Other programs' share of a breakdown's samples where it is over [`SHARED_ABOVE`].
pub(crate) fn shared_with_others(e: &Explain) -> Option<f64> {
    Some(e.fraction("other_processes")).filter(|f| *f > SHARED_ABOVE)
}

/// The cells of a point whose breakdown other programs took more than [`SHARED_ABOVE`] of.
pub(crate) fn shared(cells: &[&CaseResult]) -> Vec<Shared> {
    cells
        .iter()
        .filter_map(|c| match &c.explain {
            Some(Measured::Value(e)) => shared_with_others(e).map(|fraction| Shared {
                label: c.label(),
                fraction,
            }),
            _ => None,
        })
        .collect()
}

/// The captions of a point whose measured cells are `cells`, ranked by `facts` (the file's),
/// as the workload's rankings (`ranked`) have it where they ranked the point: one per model
/// of `named` among the cells, else one on the leader.
pub(crate) fn captions(
    ranked: Option<&super::basis::Ranked<'_>>,
    facts: &Facts,
    cells: &[&CaseResult],
    named: &[String],
) -> Vec<Caption> {
    let ranking = super::basis::rank_point_in(ranked, facts, cells);
    let subjects: Vec<String> = named
        .iter()
        .flat_map(|n| {
            cells
                .iter()
                .filter(move |c| c.model == *n)
                .map(|c| c.label())
        })
        .collect();
    let of = |l: &str| {
        cells
            .iter()
            .find(|c| c.label() == l)
            .and_then(|c| c.explain.as_ref())
    };
    let missing = |m: Option<&Measured<Explain>>| match m {
        Some(Measured::Unavailable { unavailable }) => {
            Some(Missing::Unavailable(unavailable.clone()))
        }
        None => Some(Missing::NotSampled),
        Some(Measured::Value(_)) => None,
    };
    let compare = |subject: &str, other: &str, against: Against| {
        let (a, b) = match (of(subject), of(other)) {
            (Some(Measured::Value(a)), Some(Measured::Value(b))) => (a, b),
            (x, y) => {
                let mut out = vec![];
                out.extend(missing(x).map(|m| (subject.to_string(), m)));
                out.extend(missing(y).map(|m| (other.to_string(), m)));
                return Caption::Missing(out);
            }
        };
        Caption::Compared {
            subject: subject.to_string(),
            other: other.to_string(),
            against,
            samples: (work_samples(a), work_samples(b)),
            difference: biggest_difference(a, b),
        }
    };
    let Some(r) = ranking else {
        // No leader: each named model (or the best sampled cell) against the one closest.
        let metric = match super::basis::basis(facts, cells) {
            Ok((b, _)) => b.metric,
            Err(_) => facts.chart.verdict,
        };
        let value = |c: &CaseResult| {
            c.figures
                .as_ref()
                .and_then(|f| metric.value(f))
                .filter(|v| *v > 0.0)
        };
        let sampled: Vec<&CaseResult> = cells
            .iter()
            .copied()
            .filter(|c| matches!(c.explain, Some(Measured::Value(_))))
            .collect();
        let subjects = if subjects.is_empty() {
            let hib = super::basis::higher_is_better(metric);
            let best = sampled
                .iter()
                .filter_map(|c| value(c).map(|v| (c, v)))
                .max_by(|a, b| {
                    if hib {
                        a.1.total_cmp(&b.1)
                    } else {
                        b.1.total_cmp(&a.1)
                    }
                })
                .map(|x| *x.0)
                .or(sampled.first().copied());
            match best {
                Some(c) => vec![c.label()],
                None => return vec![Caption::NoLeader],
            }
        } else {
            subjects
        };
        return subjects
            .iter()
            .map(|s| {
                let subject = cells.iter().find(|c| c.label() == *s);
                let mine = subject.and_then(|c| value(c));
                let others = sampled.iter().filter(|c| c.label() != *s);
                let closest = match mine {
                    Some(v) => others
                        .clone()
                        .filter_map(|c| value(c).map(|w| (c, (w / v).ln().abs())))
                        .min_by(|a, b| a.1.total_cmp(&b.1))
                        .map(|x| (x.0.label(), Some(metric))),
                    None => None,
                }
                .or_else(|| others.clone().next().map(|c| (c.label(), None)));
                match closest {
                    Some((other, metric)) => compare(s, &other, Against::Closest { metric }),
                    None => match missing(of(s)) {
                        None => Caption::Alone(s.clone()),
                        Some(m) => Caption::Missing(vec![(s.clone(), m)]),
                    },
                }
            })
            .collect();
    };
    // The runner-up: the best after the leader, within noise of it or not.
    let second = r
        .near
        .iter()
        .chain(&r.behind)
        .min_by(|a, b| a.times.total_cmp(&b.times));
    let leader_caption = || match second {
        None => Caption::NoRunnerUp,
        Some(s) => compare(
            &r.leader,
            &s.label,
            Against::RunnerUp {
                near: r.near.iter().any(|o| o.label == s.label),
            },
        ),
    };
    if subjects.is_empty() {
        return vec![leader_caption()];
    }
    subjects
        .iter()
        .map(|s| {
            if *s == r.leader {
                leader_caption()
            } else {
                compare(s, &r.leader, Against::Leader)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::explain::Share;

    fn explain(samples: u64, groups: &[(&str, f64)]) -> Explain {
        Explain {
            samples,
            cpus: vec![1],
            window_ns: 400_000_000,
            groups: GROUPS
                .iter()
                .map(|(k, _)| Share {
                    name: k.to_string(),
                    fraction: groups.iter().find(|g| g.0 == *k).map_or(0.0, |g| g.1),
                })
                .collect(),
            top_kernel: Vec::new(),
            top_user: None,
            user_unnamed: None,
        }
    }

    /// uring: half its work in lock slow paths; epoll-lt: none. Both 50% idle, and epoll-lt
    /// also shared its CPU with another program: shares are of their own work, so the
    /// difference is 50% vs 0%, not 25% vs 0%.
    #[test]
    fn the_biggest_difference_is_in_shares_of_own_work() {
        let uring = explain(
            1000,
            &[("idle", 0.5), ("lock_slow_path", 0.25), ("syscall", 0.25)],
        );
        let epoll = explain(
            1000,
            &[
                ("idle", 0.5),
                ("other_processes", 0.3),
                ("syscall", 0.15),
                ("tcp_ip", 0.05),
            ],
        );
        let d = biggest_difference(&uring, &epoll).unwrap();
        assert_eq!(d.group, "lock_slow_path");
        assert!((d.subject - 0.5).abs() < 1e-9, "{d:?}");
        assert_eq!(d.other, 0.0);
        let s = work_shares(&epoll).unwrap();
        assert!((s.iter().map(|x| x.1).sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(!s.iter().any(|x| NOT_WORK.contains(&x.0)));
        // The other way round, the leader's share is the smaller one.
        let d = biggest_difference(&epoll, &uring).unwrap();
        assert_eq!((d.group, d.subject), ("lock_slow_path", 0.0));
    }

    /// Other programs took 34% of a breakdown's samples: marked shared; 10% or less: not.
    #[test]
    fn a_breakdown_other_programs_took_over_a_tenth_of_is_shared() {
        let e = explain(
            1000,
            &[("other_processes", 0.34), ("syscall", 0.5), ("idle", 0.16)],
        );
        assert_eq!(shared_with_others(&e), Some(0.34));
        let e = explain(1000, &[("other_processes", 0.10), ("syscall", 0.9)]);
        assert_eq!(
            shared_with_others(&e),
            None,
            "at the threshold: not over it"
        );
        assert_eq!(
            shared_with_others(&explain(1000, &[("syscall", 1.0)])),
            None
        );
    }

    #[test]
    fn too_few_samples_of_own_work_are_not_compared() {
        let busy = explain(1000, &[("syscall", 1.0)]);
        // 1000 samples, 96% idle: 40 of its own work.
        let idle = explain(1000, &[("idle", 0.96), ("syscall", 0.04)]);
        let e = biggest_difference(&busy, &idle).unwrap_err();
        match e {
            NoDifference::TooFewSamples { other, samples } => {
                assert!(other && (samples - 40.0).abs() < 1e-6, "{e:?}")
            }
            NoDifference::NoOwnWork => panic!("{e:?}"),
        }
        assert!(work_shares(&explain(10, &[("idle", 1.0)])).is_none());
    }
}
