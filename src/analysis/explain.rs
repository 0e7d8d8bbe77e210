//! `run --explain` compared: which group of where the CPU went differs most between two
//! cells (the leader of a point and its runner-up, ranked by `analysis::rank_point` on the
//! file's facts), decided here once per run as a typed [`Caption`] per point (held by
//! `analysis::Workload::explained`) that `export::explain` words. Shares are
//! taken of each cell's own work, the samples that were neither idle nor another program's
//! (`other_processes`): on a shared machine those two depend on what else ran, not on the
//! model.

use crate::measure::Measured;
use crate::results::explain::{Explain, GROUPS};
use crate::results::facts::Facts;
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

/// The group whose share of the work differs most between two cells.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Difference {
    /// Its key (`results::explain::GROUPS`).
    pub(crate) group: &'static str,
    /// Its share of the first cell's work (the leader's), 0..=1.
    pub(crate) leader: f64,
    /// Its share of the second cell's work (the runner-up's).
    pub(crate) runner_up: f64,
}

/// Why two breakdowns' difference is not named.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum NoDifference {
    /// One cell had fewer than [`MIN_WORK_SAMPLES`] samples of its own work (the leader's
    /// first where both had).
    TooFewSamples { runner_up: bool, samples: f64 },
    /// Neither cell had a sample of its own work.
    NoOwnWork,
}

/// The biggest difference in share of own work between the leader's breakdown and the
/// runner-up's (ties: the first in `GROUPS` order), or why there is none to name.
pub(crate) fn biggest_difference(
    leader: &Explain,
    runner_up: &Explain,
) -> Result<Difference, NoDifference> {
    for (second, e) in [(false, leader), (true, runner_up)] {
        let n = work_samples(e);
        if n < MIN_WORK_SAMPLES {
            return Err(NoDifference::TooFewSamples {
                runner_up: second,
                samples: n,
            });
        }
    }
    let (Some(a), Some(b)) = (work_shares(leader), work_shares(runner_up)) else {
        return Err(NoDifference::NoOwnWork);
    };
    let mut best: Option<Difference> = None;
    for ((k, x), (_, y)) in a.iter().zip(&b) {
        let d = (x - y).abs();
        if best
            .as_ref()
            .is_none_or(|b| d > (b.leader - b.runner_up).abs())
        {
            best = Some(Difference {
                group: k,
                leader: *x,
                runner_up: *y,
            });
        }
    }
    best.ok_or(NoDifference::NoOwnWork)
}

/// Why a ranked cell's breakdown is not there to compare.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Missing {
    /// The cell was not sampled.
    NotSampled,
    /// Its breakdown is unavailable, for this reason.
    Unavailable(String),
}

/// What one point's `--explain` caption says: the leader of the point (ranked by the
/// workload's basis among every measured cell of it, sampled or not) against its runner-up.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Caption {
    /// Fewer than two cells of the point could be ranked.
    NoLeader,
    /// The point was ranked but had no runner-up.
    NoRunnerUp,
    /// The leader's or the runner-up's breakdown is missing (each such one, leader first).
    Missing(Vec<(String, Missing)>),
    /// Both were sampled.
    Compared {
        leader: String,
        runner_up: String,
        /// The runner-up is within noise of the leader (no clear leader).
        near: bool,
        /// Samples of each one's own work (leader, runner-up).
        samples: (f64, f64),
        difference: Result<Difference, NoDifference>,
    },
}

/// One point of a workload whose cells have breakdowns, and its caption.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Explained {
    /// The point's params (its cells' exactly).
    pub(crate) params: Params,
    pub(crate) caption: Caption,
}

/// The points of a workload's `cases` (run order) where a cell has a breakdown (or why it has
/// none), in run order, each with its caption: the leader ranked by `facts` (the file's) among
/// every measured cell of the point, sampled or not.
pub(crate) fn of_cases(
    facts: &Facts,
    cases: &[&CaseResult],
    ranked: Option<&super::basis::Ranked<'_>>,
) -> Vec<Explained> {
    let mut out: Vec<&Params> = Vec::new();
    for c in cases.iter().filter(|c| c.explain.is_some()) {
        if !out.contains(&&c.params) {
            out.push(&c.params);
        }
    }
    out.into_iter()
        .map(|params| {
            let all: Vec<&CaseResult> = cases
                .iter()
                .copied()
                .filter(|c| c.params == *params && c.status == Status::Measured)
                .collect();
            Explained {
                params: params.clone(),
                caption: caption(ranked, facts, &all),
            }
        })
        .collect()
}

/// The caption of a point whose measured cells are `cells`, ranked by `facts` (the file's), as
/// the workload's rankings (`ranked`) have it where they ranked the point.
pub(crate) fn caption(
    ranked: Option<&super::basis::Ranked<'_>>,
    facts: &Facts,
    cells: &[&CaseResult],
) -> Caption {
    let Some(r) = super::basis::rank_point_in(ranked, facts, cells) else {
        return Caption::NoLeader;
    };
    // The runner-up: the best after the leader, within noise of it or not.
    let Some(second) = r
        .near
        .iter()
        .chain(&r.behind)
        .min_by(|a, b| a.times.total_cmp(&b.times))
    else {
        return Caption::NoRunnerUp;
    };
    let of = |l: &str| {
        cells
            .iter()
            .find(|c| c.label() == l)
            .and_then(|c| c.explain.as_ref())
    };
    let (a, b) = match (of(&r.leader), of(&second.label)) {
        (Some(Measured::Value(a)), Some(Measured::Value(b))) => (a, b),
        (x, y) => {
            let missing = |m: Option<&Measured<Explain>>| match m {
                Some(Measured::Unavailable { unavailable }) => {
                    Some(Missing::Unavailable(unavailable.clone()))
                }
                None => Some(Missing::NotSampled),
                Some(Measured::Value(_)) => None,
            };
            let mut out = vec![];
            out.extend(missing(x).map(|m| (r.leader.clone(), m)));
            out.extend(missing(y).map(|m| (second.label.clone(), m)));
            return Caption::Missing(out);
        }
    };
    Caption::Compared {
        leader: r.leader.clone(),
        runner_up: second.label.clone(),
        near: r.near.iter().any(|o| o.label == second.label),
        samples: (work_samples(a), work_samples(b)),
        difference: biggest_difference(a, b),
    }
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
        assert!((d.leader - 0.5).abs() < 1e-9, "{d:?}");
        assert_eq!(d.runner_up, 0.0);
        let s = work_shares(&epoll).unwrap();
        assert!((s.iter().map(|x| x.1).sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(!s.iter().any(|x| NOT_WORK.contains(&x.0)));
        // The other way round, the leader's share is the smaller one.
        let d = biggest_difference(&epoll, &uring).unwrap();
        assert_eq!((d.group, d.leader), ("lock_slow_path", 0.0));
    }

    #[test]
    fn too_few_samples_of_own_work_are_not_compared() {
        let busy = explain(1000, &[("syscall", 1.0)]);
        // 1000 samples, 96% idle: 40 of its own work.
        let idle = explain(1000, &[("idle", 0.96), ("syscall", 0.04)]);
        let e = biggest_difference(&busy, &idle).unwrap_err();
        match e {
            NoDifference::TooFewSamples { runner_up, samples } => {
                assert!(runner_up && (samples - 40.0).abs() < 1e-6, "{e:?}")
            }
            NoDifference::NoOwnWork => panic!("{e:?}"),
        }
        assert!(work_shares(&explain(10, &[("idle", 1.0)])).is_none());
    }
}
