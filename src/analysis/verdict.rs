//! Verdicts: one workload's comparisons, decided from its cells and typed, never worded here
//! (`export::words` is the one place a [`Verdict`] becomes a sentence).
//!
//! For bars (one parameter point): one ranking, the leader by the workload's verdict metric,
//! the models within noise of it, then the rest in order with how many times better the
//! leader is. For sweeps: each series' last point against its first (what the sweep buys or
//! costs), the ranking at the sweep's far end, and the crossover points where one series
//! overtakes another. Every comparison is a claim of `stats::claims` (through
//! `stats::findings::rank`): at one point, the paired claim over the point's rounds; along a
//! sweep (two points, not one round), Mann-Whitney on the repetitions. A model is "behind"
//! only when its claim is decided; otherwise it is equivalent (within +-5%) or undecided, and
//! a crossover is listed only when the pair is decided at both of its points (the others are
//! counted, not claimed). A p99 is claimed only where every repetition had at least
//! `stats::claims::TAIL_MIN` samples beyond it.
//!
//! Network servers are ranked two ways, and each verdict says which:
//! - **at equal load**: the open-loop cells of one point (an equal-load point of `echo.conns`
//!   or `http.clients`, a rate of `echo.rate` or `http.rate`), every model offered the same
//!   rate, ranked by server CPU per op, each model's distance from the leader with its
//!   significance from the per-repetition CPU; a model that fell behind the offered rate is
//!   named, not ranked;
//! - **capacity**: closed-loop throughput, only between cells whose load generator had
//!   headroom (no `client_bound` / `both_saturated`); the others are named, not ranked.

use super::basis::{higher_is_better, is_equal_load_point, past_capacity, rank_with, reps, Ranked};
use super::cells::{sweep_param, Ordered, ParamRoles};
use crate::results::facts::{Facts, Metric};
use crate::results::schema::CaseFigures;
use crate::results::{CaseResult, Status};
use crate::stats::claims::{self, level_of, Crossover, Outcome};
use crate::stats::equal_load::{self, Capacity};
use crate::stats::findings::{self, Ranking};
use std::collections::BTreeMap;

/// Which of a workload's cells a sweep verdict compares (its words say so first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every measured cell (micro and storage workloads).
    Sweep,
    /// A closed-loop network sweep, between cells whose load generator had headroom.
    Headroom,
    /// An open-loop network sweep, latency from the intended send time.
    OpenLoop,
    /// Open-loop points where models fell behind the offered rate, by the rate achieved.
    PastCapacity,
}

/// Where a ranking stands.
#[derive(Clone, Debug, PartialEq)]
pub enum Where {
    /// The workload has one point.
    Anywhere,
    /// A point, by its parameters ("conns=50 msg_bytes=64").
    Point(String),
    /// The far end of a sweep, `param = x`, in the group of the other parameters ("" for one
    /// group).
    FarEnd {
        param: String,
        x: f64,
        group: String,
    },
}

/// What a sweep does to one series, its last point against its first.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub label: String,
    /// The better end's sweep value, and the other end's.
    pub better_x: f64,
    pub worse_x: f64,
    /// How many times better the better end is.
    pub times: f64,
    /// The unpaired claim's outcome (`None`: too few repetitions for one).
    pub outcome: Option<Outcome>,
    pub decided: bool,
}

/// One verdict of a workload, typed. A new kind is a new variant: `export::words` does not
/// compile until it words it.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// One point's models ranked by `metric`.
    Ranked {
        scope: Scope,
        metric: Metric,
        at: Where,
        ranking: Ranking,
    },
    /// Each series along `param`, last point against first.
    Along {
        scope: Scope,
        metric: Metric,
        param: String,
        group: String,
        series: Vec<Change>,
    },
    /// A series overtakes another along `param`, decided at both points.
    Crossover {
        scope: Scope,
        param: String,
        group: String,
        crossing: Crossover,
    },
    /// Crossings along `param` whose pair is not decided at both points: counted, not claimed.
    Unclaimed {
        scope: Scope,
        param: String,
        group: String,
        crossings: usize,
    },
    /// An equal-load point ranked by server CPU per op, the models that kept up only.
    AtEqualLoad {
        /// The lowest and highest rate offered at the point.
        offered: (f64, f64),
        /// The point's other parameters, `k=v`.
        at: Vec<String>,
        ranking: Ranking,
    },
    /// The models of an equal-load point that fell behind its offered rate, with what each
    /// achieved: named, not ranked.
    FellBehind {
        offered: (f64, f64),
        at: Vec<String>,
        who: Vec<(String, f64)>,
    },
    /// The measured cells whose load generator had no headroom, by point: left out of the
    /// capacity ranking.
    NoHeadroom {
        cells: usize,
        by_point: Vec<(String, Vec<String>)>,
    },
    /// One model's capacity along an open-loop rate sweep.
    Knee(Capacity),
}

impl Verdict {
    /// Whether it decides nothing (a ranking with no model decided behind its leader, changes
    /// along a sweep none of which is decided, crossings not claimed).
    pub fn decides_nothing(&self) -> bool {
        match self {
            Verdict::Ranked { ranking, .. } | Verdict::AtEqualLoad { ranking, .. } => {
                ranking.behind.is_empty()
            }
            Verdict::Along { series, .. } => series.iter().all(|c| !c.decided),
            Verdict::Unclaimed { .. } => true,
            Verdict::Crossover { .. }
            | Verdict::FellBehind { .. }
            | Verdict::NoHeadroom { .. }
            | Verdict::Knee(_) => false,
        }
    }
}

/// One group of a sweep: its cells in run order, and each label's cells.
type Members<'c, 'a> = (Vec<&'c Cell<'a>>, BTreeMap<usize, Vec<&'c Cell<'a>>>);

struct Cell<'a> {
    c: &'a CaseResult,
    v: f64,
    reps: Vec<f64>,
}

fn cell(m: Metric, c: &CaseResult) -> Option<Cell<'_>> {
    let f = c
        .figures
        .as_ref()
        .filter(|_| c.status == Status::Measured)?;
    let v = m.value(f).filter(|v| *v > 0.0)?;
    Some(Cell {
        c,
        v,
        reps: reps(m, f),
    })
}

/// One point's ranking (`stats::findings::rank`, or the workload's own where it ranked the
/// same point: `Ranked::rank`): `None` with fewer than two cells.
fn ranked(r: Option<&Ranked<'_>>, m: Metric, here: &[&Cell]) -> Option<Ranking> {
    let point = findings::Point {
        at: String::new(),
        level: level_of(here.iter().map(|c| c.c)),
        entries: here
            .iter()
            .map(|c| findings::Entry {
                label: c.c.label(),
                value: c.v,
                reps: c.reps.clone(),
            })
            .collect(),
    };
    rank_with(r, &point, higher_is_better(m))
}

/// Verdicts of one workload from its cells, in run order. For a network workload: the
/// equal-load rankings first (the headline), then the sweep's verdicts (capacity between
/// cells whose load generator had headroom and one verdict naming the cells left out; for an
/// open-loop sweep, its latency verdicts), then the open-loop sweeps' knees. Other
/// workloads: the sweep's verdicts. A point the workload's basis ranked already (`r`) is not
/// ranked again.
pub(crate) fn for_cases(f: &Facts, cases: &[&CaseResult], r: Option<&Ranked<'_>>) -> Vec<Verdict> {
    if !f.net {
        return sweep(f, cases, f.chart.verdict, Scope::Sweep, r);
    }
    // Equal-load points are ranked at equal load only, apart from the capacity sweep.
    let closed: Vec<&CaseResult> = cases
        .iter()
        .copied()
        .filter(|c| !is_equal_load_point(c))
        .collect();
    // The headline first: server CPU per op at equal load.
    let mut out = at_equal_load(cases, r);
    if !f.open_loop {
        // Closed loop: capacity, by throughput, where the load generator had headroom.
        let (headroom, without): (Vec<&CaseResult>, Vec<&CaseResult>) = closed
            .iter()
            .copied()
            .partition(|c| equal_load::load_had_headroom(c));
        out.extend(sweep(f, &headroom, Metric::OpsPerSec, Scope::Headroom, r));
        out.extend(no_headroom(&without, cases));
    } else {
        out.extend(sweep(f, &closed, f.chart.verdict, Scope::OpenLoop, r));
        // A point offered one rate where some models fell behind it (`pubsub`: one rate per
        // point, no rate sweep of its own): what each achieved is its capacity where its load
        // generator had headroom, and those who kept up are ahead of them all.
        let past = past_capacity(f, cases);
        out.extend(sweep(f, &past, Metric::OpsPerSec, Scope::PastCapacity, r));
    }
    if f.rate_sweep {
        out.extend(equal_load::capacities(cases).into_iter().map(Verdict::Knee));
    }
    out
}

/// The measured cells left out of the capacity ranking, by point.
fn no_headroom(without: &[&CaseResult], all: &[&CaseResult]) -> Option<Verdict> {
    let without: Vec<&CaseResult> = without
        .iter()
        .copied()
        .filter(|c| c.status == Status::Measured)
        .collect();
    if without.is_empty() {
        return None;
    }
    let roles = ParamRoles::of_cases(all);
    let mut points = Ordered::default();
    let mut labels: Vec<Vec<String>> = Vec::new();
    for c in &without {
        let g = points.add(roles.point(c, None));
        if g == labels.len() {
            labels.push(Vec::new());
        }
        labels[g].push(c.label());
    }
    Some(Verdict::NoHeadroom {
        cells: without.len(),
        by_point: points.order.into_iter().zip(labels).collect(),
    })
}

/// The equal-load rankings: per point of open-loop cells, the model with the least server
/// CPU per op against each other model that kept up; the ones that fell behind named, not
/// ranked.
fn at_equal_load(cases: &[&CaseResult], r: Option<&Ranked<'_>>) -> Vec<Verdict> {
    let roles = ParamRoles::of_cases(cases);
    let mut points = Ordered::default();
    let mut members: Vec<Vec<(&CaseResult, &CaseFigures, f64)>> = Vec::new();
    for c in cases.iter().filter(|c| c.status == Status::Measured) {
        let (Some(f), Some(rate)) = (c.figures.as_ref(), c.offered_rate()) else {
            continue;
        };
        let g = points.add(roles.point(c, None));
        if g == members.len() {
            members.push(Vec::new());
        }
        members[g].push((c, f, rate));
    }
    let mut out = Vec::new();
    for cells in &members {
        let offered = cells
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                (lo.min(x.2), hi.max(x.2))
            });
        // Where: the point's params but the rate (its cells are all of equal-load points).
        let at: Vec<String> = cells[0]
            .0
            .params
            .0
            .iter()
            .filter(|(k, _)| *k != "rate_per_sec")
            .filter(|(k, _)| !roles.common.iter().any(|(ck, _)| ck == *k))
            .filter(|(k, _)| !roles.per_model.contains(k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let (kept, behind): (Vec<_>, Vec<_>) =
            cells.iter().partition(|x| x.0.kept_up() == Some(true));
        if !behind.is_empty() {
            out.push(Verdict::FellBehind {
                offered,
                at: at.clone(),
                who: behind
                    .iter()
                    .map(|(c, _, _)| (c.label(), c.typical_achieved_rate().unwrap_or(0.0)))
                    .collect(),
            });
        }
        let cpu = |f: &CaseFigures| f.cpu_ns_per_op.total;
        let point = findings::Point {
            at: String::new(),
            level: level_of(kept.iter().map(|x| x.0)),
            entries: kept
                .iter()
                .filter(|x| cpu(x.1) > 0.0)
                .map(|x| findings::Entry {
                    label: x.0.label(),
                    value: cpu(x.1),
                    reps: x.1.runs_cpu_ns_per_op.clone(),
                })
                .collect(),
        };
        if let Some(ranking) = rank_with(r, &point, false) {
            out.push(Verdict::AtEqualLoad {
                offered,
                at,
                ranking,
            });
        }
    }
    out
}

/// The sweep's verdicts of `cases` ranked by `m` (a ranking per point, or changes along the
/// sweep parameter, the far end's ranking and the crossovers). Cells are grouped once (by
/// point, group and label), so the work is linear in the cells, times the number of series
/// for the crossovers between every two of them.
fn sweep(
    f: &Facts,
    cases: &[&CaseResult],
    m: Metric,
    scope: Scope,
    r: Option<&Ranked<'_>>,
) -> Vec<Verdict> {
    let spec = f.chart;
    let cells: Vec<Cell> = cases.iter().filter_map(|c| cell(m, c)).collect();
    let roles = ParamRoles::of_cases(cases);
    let Some(param) = sweep_param(&spec, cases) else {
        let mut groups = Ordered::default();
        let mut here: Vec<Vec<&Cell>> = Vec::new();
        for c in &cells {
            let g = groups.add(roles.point(c.c, None));
            if g == here.len() {
                here.push(Vec::new());
            }
            here[g].push(c);
        }
        return groups
            .order
            .into_iter()
            .zip(&here)
            .filter_map(|(g, here)| {
                Some(Verdict::Ranked {
                    scope,
                    metric: m,
                    ranking: ranked(r, m, here)?,
                    at: if g.is_empty() {
                        Where::Anywhere
                    } else {
                        Where::Point(g)
                    },
                })
            })
            .collect();
    };
    // Labels in first-seen order; per group, each label's cells in run order.
    let mut groups = Ordered::default();
    let mut labels = Ordered::default();
    let mut members: Vec<Members> = Vec::new();
    for c in &cells {
        let g = groups.add(roles.point(c.c, Some(param)));
        let l = labels.add(c.c.label());
        if g == members.len() {
            members.push(Default::default());
        }
        members[g].0.push(c);
        members[g].1.entry(l).or_default().push(c);
    }
    let mut out = Vec::new();
    for (g, (in_group, by_label)) in groups.order.iter().zip(&members) {
        let series = Series::of(param, by_label, &labels);
        out.extend(series.along(m, scope, param, g));
        // At the far end of the sweep: the best series against the others.
        let far = in_group
            .iter()
            .filter_map(|c| series.x(c.c))
            .fold(f64::NEG_INFINITY, f64::max);
        let here: Vec<&Cell> = in_group
            .iter()
            .copied()
            .filter(|c| series.x(c.c) == Some(far))
            .collect();
        if let Some(ranking) = ranked(r, m, &here) {
            out.push(Verdict::Ranked {
                scope,
                metric: m,
                at: Where::FarEnd {
                    param: param.to_string(),
                    x: far,
                    group: g.clone(),
                },
                ranking,
            });
        }
        // Crossovers: where one series overtakes another between neighbouring points,
        // claimed only when the pair is decided at both (paired claims over each point's
        // rounds); the others are counted, not listed.
        let (found, noisy) = claims::crossovers(
            &series.per_x(),
            higher_is_better(m),
            level_of(in_group.iter().map(|c| c.c)),
        );
        out.extend(found.into_iter().map(|crossing| Verdict::Crossover {
            scope,
            param: param.to_string(),
            group: g.clone(),
            crossing,
        }));
        if noisy > 0 {
            out.push(Verdict::Unclaimed {
                scope,
                param: param.to_string(),
                group: g.clone(),
                crossings: noisy,
            });
        }
    }
    out
}

/// Each label's series along a sweep parameter, sorted by x (stable: run order at ties).
struct Series<'c, 'a> {
    param: &'static str,
    by_label: Vec<(String, Vec<(f64, &'c Cell<'a>)>)>,
}

impl<'c, 'a> Series<'c, 'a> {
    fn of(
        param: &'static str,
        by_label: &BTreeMap<usize, Vec<&'c Cell<'a>>>,
        labels: &Ordered,
    ) -> Self {
        let x = |c: &CaseResult| c.params.0.get(param).and_then(|v| v.as_f64());
        let by_label = by_label
            .iter()
            .map(|(&l, cs)| {
                let mut v: Vec<(f64, &Cell)> =
                    cs.iter().filter_map(|c| Some((x(c.c)?, *c))).collect();
                v.sort_by(|a, b| a.0.total_cmp(&b.0));
                (labels.order[l].clone(), v)
            })
            .collect();
        Series { param, by_label }
    }

    fn x(&self, c: &CaseResult) -> Option<f64> {
        c.params.0.get(self.param).and_then(|v| v.as_f64())
    }

    /// What the sweep does to each series, last point against first: one verdict.
    fn along(&self, m: Metric, scope: Scope, param: &str, group: &str) -> Option<Verdict> {
        let hib = higher_is_better(m);
        let better = |a: f64, b: f64| if hib { a > b } else { a < b };
        let mut series = Vec::new();
        for (label, s) in &self.by_label {
            let (Some(first), Some(last)) = (s.first(), s.last()) else {
                continue;
            };
            if first.0 == last.0 {
                continue;
            }
            let (b, w) = if better(last.1.v, first.1.v) {
                (last, first)
            } else {
                (first, last)
            };
            // Two points, two groups of rounds: an unpaired claim.
            let claim = claims::unpaired(&w.1.reps, &b.1.reps, hib, level_of([w.1.c, b.1.c]).alpha);
            series.push(Change {
                label: label.clone(),
                better_x: b.0,
                worse_x: w.0,
                times: if hib { b.1.v / w.1.v } else { w.1.v / b.1.v },
                outcome: claim.as_ref().map(|c| c.outcome),
                decided: claim.as_ref().is_some_and(|c| c.decided()),
            });
        }
        (!series.is_empty()).then(|| Verdict::Along {
            scope,
            metric: m,
            param: param.to_string(),
            group: group.to_string(),
            series,
        })
    }

    /// Per sweep value, in order, each series' rounds there.
    fn per_x(&self) -> Vec<(f64, Vec<claims::Entry>)> {
        let mut xs: Vec<f64> = self
            .by_label
            .iter()
            .flat_map(|(_, s)| s.iter().map(|p| p.0))
            .collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        xs.iter()
            .map(|&xv| {
                let entries = self
                    .by_label
                    .iter()
                    .filter_map(|(l, s)| {
                        let (_, c) = s.iter().find(|p| p.0 == xv)?;
                        Some(claims::Entry {
                            label: l.clone(),
                            rounds: c.reps.clone(),
                        })
                    })
                    .collect();
                (xv, entries)
            })
            .collect()
    }
}
