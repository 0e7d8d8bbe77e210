//! A workload's basis (what it is ranked by, over which cells), its points, and their
//! rankings: the one place these are chosen.

use super::cells::{facts, sweep_param, Ordered, ParamRoles};
use crate::results::facts::{Facts, Metric};
use crate::results::schema::CaseFigures;
use crate::results::{CaseResult, Status};
use crate::stats::claims::Outcome;
use crate::stats::equal_load;
use crate::stats::findings::{self, Point};

/// What a workload's ranking is over: the figure and the cells it compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Basis {
    pub(crate) metric: Metric,
    pub(crate) on: On,
}

/// Which cells a ranking compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum On {
    /// Every measured cell, by the workload's own figure (micro and storage workloads).
    Figure,
    /// A network workload's equal-load points: every model offered the same rate, only the
    /// models that kept up, by server CPU per op.
    EqualLoad,
    /// Open-loop points where models fell behind the offered rate, by the rate achieved,
    /// where the load generator had headroom.
    PastCapacity,
    /// Capacity (closed loop), between cells whose load generator had headroom.
    Headroom,
}

/// Why a network workload is not ranked: no point where two models kept up with the same
/// offered rate, and fewer than two cells whose load generator had headroom at capacity or
/// past it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NotRanked;

/// Whether more of the figure is better (throughput) or less (latency, CPU per op).
pub(crate) fn higher_is_better(m: Metric) -> bool {
    m == Metric::OpsPerSec
}

/// The figure's per-repetition (= per-round) values, where the results keep them and a claim
/// can be made on them.
pub(crate) fn reps(m: Metric, f: &CaseFigures) -> Vec<f64> {
    match m {
        Metric::LatencyP50 => f.runs_p50_ns.clone(),
        Metric::OpsPerSec => f.runs_ops_per_sec.clone(),
        Metric::CpuPerOp => f.runs_cpu_ns_per_op.clone(),
        // A p99 is claimed only where every repetition had enough samples beyond it.
        Metric::LatencyP99 if f.p99_tail_min >= crate::stats::claims::TAIL_MIN => {
            f.runs_p99_ns.clone()
        }
        Metric::LatencyP99
        | Metric::SyscallsPer100
        | Metric::IdleRssBytes
        | Metric::IdleKernelBytes => Vec::new(),
    }
}

/// The workload's cells as points to rank, in order: run order, or along the sweep parameter
/// (grouped by the other parameters).
pub(crate) fn points(f: &Facts, cells: &[(&CaseResult, &CaseFigures)], m: Metric) -> Vec<Point> {
    let all: Vec<&CaseResult> = cells.iter().map(|x| x.0).collect();
    let roles = ParamRoles::of_cases(&all);
    let sweep = sweep_param(&f.chart, &all);
    let mut keys = Ordered::default();
    let mut pts: Vec<(usize, f64, Point)> = Vec::new();
    let mut groups = Ordered::default();
    for (c, f) in cells {
        let Some(v) = m.value(f).filter(|v| *v > 0.0) else {
            continue;
        };
        let k = keys.add(roles.point(c, None));
        if k == pts.len() {
            let g = groups.add(roles.point(c, sweep));
            let x = sweep
                .and_then(|p| c.params.0.get(p))
                .and_then(|v| v.as_f64())
                .unwrap_or(0.0);
            pts.push((
                g,
                x,
                Point {
                    at: keys.order[k].clone(),
                    entries: Vec::new(),
                    level: crate::stats::claims::ALPHA.into(),
                },
            ));
        }
        pts[k].2.level = pts[k].2.level.with(f);
        pts[k].2.entries.push(findings::Entry {
            label: c.label(),
            value: v,
            reps: reps(m, f),
        });
    }
    // Stable: run order within a group and x.
    pts.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    pts.into_iter().map(|p| p.2).collect()
}

/// A measured cell and its figures.
pub(crate) type MeasuredCell<'a> = (&'a CaseResult, &'a CaseFigures);

pub(crate) fn measured(c: &CaseResult) -> Option<(&CaseResult, &CaseFigures)> {
    c.figures
        .as_ref()
        .filter(|_| c.status == Status::Measured)
        .map(|f| (c, f))
}

/// The basis and cells a workload is ranked on, or why it is not.
pub(crate) fn basis<'a>(
    f: &Facts,
    cases: &[&'a CaseResult],
) -> Result<(Basis, Vec<MeasuredCell<'a>>), NotRanked> {
    let cells: Vec<(&CaseResult, &CaseFigures)> =
        cases.iter().filter_map(|c| measured(c)).collect();
    if !f.net {
        return Ok((
            Basis {
                metric: f.chart.verdict,
                on: On::Figure,
            },
            cells,
        ));
    }
    let kept: Vec<_> = cells
        .iter()
        .copied()
        .filter(|(c, _)| c.kept_up() == Some(true))
        .collect();
    if kept.len() >= 2 {
        return Ok((
            Basis {
                metric: Metric::CpuPerOp,
                on: On::EqualLoad,
            },
            kept,
        ));
    }
    // Open-loop points where models fell behind: what they achieved, with headroom.
    let refs: Vec<&CaseResult> = cells.iter().map(|x| x.0).collect();
    let past = past_capacity(f, &refs);
    if past.len() >= 2 {
        return Ok((
            Basis {
                metric: Metric::OpsPerSec,
                on: On::PastCapacity,
            },
            cells
                .iter()
                .copied()
                .filter(|(c, _)| past.iter().any(|p| std::ptr::eq(*p, *c)))
                .collect(),
        ));
    }
    let headroom: Vec<_> = cells
        .iter()
        .copied()
        .filter(|(c, _)| c.offered_rate().is_none() && equal_load::load_had_headroom(c))
        .collect();
    if !f.open_loop && headroom.len() >= 2 {
        return Ok((
            Basis {
                metric: Metric::OpsPerSec,
                on: On::Headroom,
            },
            headroom,
        ));
    }
    Err(NotRanked)
}

/// An equal-load point's cell.
pub(crate) fn is_equal_load_point(c: &CaseResult) -> bool {
    c.equal_load.is_some()
}

/// The cells of the open-loop points where a model fell behind the offered rate, those whose
/// load generator had headroom (what they achieved is the server's, not the client's). Not
/// the equal-load points (their capacity point ranks capacity) nor the rate sweeps (their
/// knees say where each model's capacity lies).
pub fn past_capacity_cells<'a>(workload: &str, cases: &[&'a CaseResult]) -> Vec<&'a CaseResult> {
    past_capacity(&facts(workload), cases)
}

/// [`past_capacity_cells`] of a workload whose facts are `f`.
pub(crate) fn past_capacity<'a>(f: &Facts, cases: &[&'a CaseResult]) -> Vec<&'a CaseResult> {
    if f.rate_sweep {
        return Vec::new();
    }
    let cases: Vec<&CaseResult> = cases
        .iter()
        .copied()
        .filter(|c| !is_equal_load_point(c))
        .collect();
    let roles = ParamRoles::of_cases(&cases);
    let behind: Vec<String> = cases
        .iter()
        .filter(|c| c.status == Status::Measured && c.kept_up() == Some(false))
        .map(|c| roles.point(c, None))
        .collect();
    cases
        .iter()
        .copied()
        .filter(|c| c.status == Status::Measured && c.offered_rate().is_some())
        .filter(|c| equal_load::load_had_headroom(c))
        .filter(|c| behind.contains(&roles.point(c, None)))
        .collect()
}

/// One point's cells (same workload and params) ranked as the findings rank them: same basis
/// and figure. `None` when they cannot be ranked (fewer than two cells on the basis).
pub(crate) fn rank_point(f: &Facts, cells: &[&CaseResult]) -> Option<findings::Ranking> {
    rank_point_in(None, f, cells)
}

/// [`rank_point`], taking the ranking from the workload's own (`r`) where it ranked the same
/// point.
pub(crate) fn rank_point_in(
    r: Option<&Ranked<'_>>,
    f: &Facts,
    cells: &[&CaseResult],
) -> Option<findings::Ranking> {
    let (b, cells) = basis(f, cells).ok()?;
    let pts = points(f, &cells, b.metric);
    pts.first()
        .and_then(|p| rank_with(r, p, higher_is_better(b.metric)))
}

/// A workload's basis, its points on it and each point's ranking: chosen and ranked once per
/// run (`Analysis::of`). The finding, its pairs and family pairs, the verdicts at the same
/// points, the `--explain` captions and the run's answer all read these rankings
/// ([`Ranked::rank`]) instead of ranking a point again.
pub(crate) struct Ranked<'a> {
    pub(crate) basis: Basis,
    /// The cells on the basis.
    pub(crate) cells: Vec<MeasuredCell<'a>>,
    /// Its points in the findings' order, each with its ranking (`None`: fewer than two
    /// models).
    pub(crate) points: Vec<(Point, Option<findings::Ranking>)>,
}

impl<'a> Ranked<'a> {
    /// The workload's basis and rankings, or why it has none.
    pub(crate) fn of(f: &Facts, cases: &[&'a CaseResult]) -> Result<Self, NotRanked> {
        let (basis, cells) = basis(f, cases)?;
        let hib = higher_is_better(basis.metric);
        let points = points(f, &cells, basis.metric)
            .into_iter()
            .map(|p| {
                let r = findings::rank(&p, hib);
                (p, r)
            })
            .collect();
        Ok(Ranked {
            basis,
            cells,
            points,
        })
    }

    /// The ranked points (those with two models or more), in order.
    pub(crate) fn rankings(&self) -> impl Iterator<Item = &findings::Ranking> {
        self.points.iter().filter_map(|(_, r)| r.as_ref())
    }

    /// The points alone, in order.
    pub(crate) fn bare_points(&self) -> impl Iterator<Item = &Point> {
        self.points.iter().map(|(p, _)| p)
    }

    /// The ranking of `p` (`higher_is_better` as given): the one already made where one of
    /// these points compares the same entries at the same level the same way (a ranking is a
    /// function of those alone), else ranked now. Its `at` is `p`'s.
    pub(crate) fn rank(&self, p: &Point, higher_is_better_: bool) -> Option<findings::Ranking> {
        let same = (higher_is_better(self.basis.metric) == higher_is_better_)
            .then(|| {
                self.points
                    .iter()
                    .find(|(q, _)| q.entries == p.entries && q.level == p.level)
            })
            .flatten();
        match same {
            Some((_, r)) => r.clone().map(|r| findings::Ranking {
                at: p.at.clone(),
                ..r
            }),
            None => findings::rank(p, higher_is_better_),
        }
    }
}

/// A point ranked by the workload's rankings where it has them (`Ranked::rank`), else now.
pub(crate) fn rank_with(
    ranked: Option<&Ranked<'_>>,
    p: &Point,
    higher_is_better: bool,
) -> Option<findings::Ranking> {
    match ranked {
        Some(r) => r.rank(p, higher_is_better),
        None => findings::rank(p, higher_is_better),
    }
}

/// The rankings of a network workload's equal-load points (server CPU per op, the models
/// that kept up with the same offered rate), in the findings' order; none where it has none.
pub(crate) fn equal_load_rankings<'r>(
    ranked: &'r Result<Ranked<'_>, NotRanked>,
) -> impl Iterator<Item = &'r findings::Ranking> {
    ranked
        .as_ref()
        .ok()
        .filter(|r| r.basis.metric == Metric::CpuPerOp)
        .into_iter()
        .flat_map(|r| r.rankings())
}

/// How much a run answered at its equal-load points ([`crate::results::Answer`]), from its
/// workloads' rankings (`Analysis::of`).
pub(crate) fn answer<'r>(
    rankings: impl Iterator<Item = &'r findings::Ranking>,
) -> crate::results::Answer {
    let mut a = crate::results::Answer::default();
    let mut worst: Option<f64> = None;
    for r in rankings {
        a.points += 1;
        for o in r.near.iter().chain(&r.behind) {
            a.pairs += 1;
            match o.confidence.outcome() {
                Some(Outcome::Behind | Outcome::Ahead) => a.decided += 1,
                Some(Outcome::Equivalent) => a.equivalent += 1,
                _ => {}
            }
        }
        let v = r.invisible_pct().unwrap_or(f64::INFINITY);
        worst = Some(worst.map_or(v, |w| w.max(v)));
    }
    a.worst_invisible_pct = worst.filter(|v| v.is_finite());
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::claims::ALPHA;
    use crate::stats::findings::Entry;

    fn point(at: &str, values: &[(&str, f64)]) -> Point {
        Point {
            at: at.into(),
            level: ALPHA.into(),
            entries: values
                .iter()
                .map(|(l, v)| Entry {
                    label: (*l).into(),
                    value: *v,
                    reps: (0..6).map(|k| v * (1.0 + 0.01 * k as f64)).collect(),
                })
                .collect(),
        }
    }

    /// A point the workload ranked already is not ranked again: its ranking is the one held
    /// (here a marked one no ranking would make), at the asking point's place; another point,
    /// or the same one ranked the other way, is ranked anew.
    #[test]
    fn a_point_ranked_once_is_looked_up_not_ranked_again() {
        let p = point("conns=50", &[("a", 100.0), ("b", 200.0)]);
        let mut marked = findings::rank(&p, false).unwrap();
        marked.leader = "held".into();
        let r = Ranked {
            basis: Basis {
                metric: Metric::CpuPerOp,
                on: On::EqualLoad,
            },
            cells: Vec::new(),
            points: vec![(p.clone(), Some(marked))],
        };
        let asked = Point {
            at: String::new(),
            ..p.clone()
        };
        let got = r.rank(&asked, false).unwrap();
        assert_eq!(got.leader, "held");
        assert_eq!(got.at, "", "the asking point's place");
        assert_eq!(
            r.rank(&p, true).unwrap().leader,
            "b",
            "ranked the other way: anew"
        );
        let other = point("conns=50", &[("a", 100.0), ("c", 300.0)]);
        assert_eq!(r.rank(&other, false).unwrap().leader, "a");
        assert_eq!(rank_with(None, &asked, false).unwrap().leader, "a");
        assert_eq!(r.rankings().count(), 1);
    }
}
