//! `run --explain` compared: which group of where the CPU went differs most between two
//! cells (the leader of a point and its runner-up, ranked by `stats::findings`). Shares are
//! taken of each cell's own work, the samples that were neither idle nor another program's
//! (`other_processes`): on a shared machine those two depend on what else ran, not on the
//! model.

use crate::results::explain::{Explain, GROUPS};

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

/// The biggest difference in share of own work between the leader's breakdown and the
/// runner-up's (ties: the first in `GROUPS` order), or why there is none to name.
pub(crate) fn biggest_difference(
    leader: &Explain,
    runner_up: &Explain,
) -> Result<Difference, String> {
    for (who, e) in [("the leader", leader), ("the runner-up", runner_up)] {
        let n = work_samples(e);
        if n < MIN_WORK_SAMPLES {
            return Err(format!(
                "{who} had {n:.0} samples of its own work (fewer than {MIN_WORK_SAMPLES:.0}): \
                 too few to compare"
            ));
        }
    }
    let (Some(a), Some(b)) = (work_shares(leader), work_shares(runner_up)) else {
        return Err("no sample of the cells' own work".into());
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
    best.ok_or_else(|| "no groups".into())
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
        assert!(e.contains("the runner-up had 40 samples"), "{e}");
        assert!(work_shares(&explain(10, &[("idle", 1.0)])).is_none());
    }
}
