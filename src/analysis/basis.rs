//! A workload's basis (what it is ranked by, over which cells), its points, and their
//! rankings: the one place these are chosen.

use super::cells::{by_workload, facts, facts_in, sweep_param, Ordered, ParamRoles};
use crate::results::facts::{Facts, Metric};
use crate::results::schema::CaseFigures;
use crate::results::{CaseResult, RunResults, Status};
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

/// An equal-load point's cell (its params name the offered rate it ran at).
pub(crate) fn is_equal_load_point(c: &CaseResult) -> bool {
    c.params
        .0
        .contains_key(crate::workload::net::equal_load::EQUAL_LOAD_PARAM)
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
    let (b, cells) = basis(f, cells).ok()?;
    let pts = points(f, &cells, b.metric);
    pts.first()
        .and_then(|p| findings::rank(p, higher_is_better(b.metric)))
}

/// The rankings of a network workload's equal-load points (server CPU per op, the models
/// that kept up with the same offered rate), in the findings' order; none where it has none.
pub(crate) fn equal_load_rankings(f: &Facts, cases: &[&CaseResult]) -> Vec<findings::Ranking> {
    let Ok((b, cells)) = basis(f, cases) else {
        return Vec::new();
    };
    if b.metric != Metric::CpuPerOp {
        return Vec::new();
    }
    points(f, &cells, b.metric)
        .iter()
        .filter_map(|p| findings::rank(p, false))
        .collect()
}

/// How much the run answered at its equal-load points ([`crate::results::Answer`]).
pub fn answer(run: &RunResults) -> crate::results::Answer {
    let mut a = crate::results::Answer::default();
    let mut worst: Option<f64> = None;
    for (w, cases) in by_workload(run) {
        for r in equal_load_rankings(&facts_in(run, w), &cases) {
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
    }
    a.worst_invisible_pct = worst.filter(|v| v.is_finite());
    a
}
