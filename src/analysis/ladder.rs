//! The ablation ladder's steps (`echo.ladder`, `http.ladder`): per rung at one point, its
//! server CPU per op, p50/p99, syscalls per op, and the change in CPU per op from the row it
//! adds its knob to (`model::ladder::RUNGS`), with the evidence that the change is
//! real (the paired claim over the point's rounds, corrected over the ladder's steps). Decided
//! once per run ([`of_cases`], held by `analysis::Workload::ladder`); exporters render these
//! and compute nothing.

use super::cells::{Ordered, ParamRoles};
use crate::model::ladder::{Rung, RUNGS};
use crate::results::schema::{CaseResult, Status};
use crate::stats::equal_load::{cpu_per_op_evidence, Evidence};

/// One point of a ladder: its rungs' steps.
#[derive(Clone, Debug)]
pub(crate) struct Point {
    /// The point's parameters ("conns=50 msg_bytes=64"; the key the reports group the
    /// workload's cells by: `ParamRoles::point`).
    pub(crate) at: String,
    /// Its steps, in rung order.
    pub(crate) steps: Vec<Step>,
}

/// One rung at one point.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    pub(crate) rung: &'static Rung,
    /// Its cell (`None`: the run has no cell of this rung at this point).
    pub(crate) cell: Option<RungCell>,
    /// Server CPU per op, ns (measured cells only).
    pub(crate) cpu_ns_per_op: Option<f64>,
    /// Server CPU per op of `rung.over`'s cell, ns (where both it and this rung were
    /// measured): where this rung's change starts.
    pub(crate) base_cpu_ns_per_op: Option<f64>,
    /// Change in CPU per op from `rung.over`'s cell, percent (negative: the knob saved CPU).
    pub(crate) change_pct: Option<f64>,
    /// How far that change can be told from noise.
    pub(crate) evidence: Option<Evidence>,
}

/// What the ladder shows of a rung's cell, as the file records it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RungCell {
    pub(crate) status: Status,
    pub(crate) reason: Option<String>,
    /// Its figures, where it has them.
    pub(crate) figures: Option<RungFigures>,
}

/// A rung's cell's figures beside its CPU per op.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RungFigures {
    pub(crate) p50_ns: f64,
    pub(crate) p99_ns: f64,
    /// `None`: not counted.
    pub(crate) syscalls_per_op: Option<f64>,
}

impl RungCell {
    fn of(c: &CaseResult) -> RungCell {
        RungCell {
            status: c.status,
            reason: c.reason.clone(),
            figures: c.figures.as_ref().map(|f| RungFigures {
                p50_ns: f.latency_ns.p50,
                p99_ns: f.latency_ns.p99,
                syscalls_per_op: f.syscalls_per_op.value().copied(),
            }),
        }
    }
}

fn cpu(c: &CaseResult) -> Option<f64> {
    let f = c.figures.as_ref()?;
    (c.status == Status::Measured && f.cpu_ns_per_op.total > 0.0).then_some(f.cpu_ns_per_op.total)
}

/// A ladder workload's points, in run order, each with its steps: `cases` are the workload's
/// cells in run order. Cells of models that take no part (no params) are in no point.
pub(crate) fn of_cases(cases: &[&CaseResult]) -> Vec<Point> {
    let roles = ParamRoles::of_cases(cases);
    let mut points = Ordered::default();
    let mut groups: Vec<Vec<&CaseResult>> = Vec::new();
    for c in cases.iter().copied() {
        if c.params.0.is_empty() {
            continue; // a model that takes no part (not applicable, no point)
        }
        let g = points.add(roles.point(c, None));
        if g == groups.len() {
            groups.push(Vec::new());
        }
        groups[g].push(c);
    }
    points
        .order
        .into_iter()
        .zip(groups)
        .map(|(at, cells)| Point {
            at,
            steps: steps(&cells),
        })
        .collect()
}

/// The steps of one point of a ladder, in rung order: `cases` are the point's cells (any
/// order; cells of rows that are not rungs are ignored).
pub(crate) fn steps(cases: &[&CaseResult]) -> Vec<Step> {
    let find = |id: &str| cases.iter().copied().find(|c| c.model == id);
    let mut steps: Vec<Step> = RUNGS
        .iter()
        .map(|rung| {
            let case = find(rung.model);
            let mine = case.and_then(cpu);
            let base = rung.over.and_then(find);
            let base_cpu = base.and_then(cpu);
            let (change_pct, evidence) = match (mine, base_cpu) {
                (Some(m), Some(b)) => (
                    Some((m - b) / b * 100.0),
                    case.zip(base).and_then(|(c, b)| {
                        Some(cpu_per_op_evidence(
                            c.figures.as_ref()?,
                            b.figures.as_ref()?,
                        ))
                    }),
                ),
                _ => (None, None),
            };
            Step {
                rung,
                cell: case.map(RungCell::of),
                cpu_ns_per_op: mine,
                base_cpu_ns_per_op: base_cpu.filter(|_| mine.is_some()),
                change_pct,
                evidence,
            }
        })
        .collect();
    // The steps of one point are one family.
    let mut fam: Vec<&mut crate::stats::claims::Claim> = steps
        .iter_mut()
        .filter_map(|s| s.evidence.as_mut().and_then(Evidence::claim_mut))
        .collect();
    let alpha = crate::stats::claims::level_of(cases.iter().copied()).alpha;
    crate::stats::claims::correct(&mut fam, alpha);
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(model: &str, status: Status, runs: &[f64]) -> CaseResult {
        let figures = serde_json::json!({
            "latency_ns": {"min":1.0,"p50":1.0,"p90":1.0,"p99":1.0,"p999":1.0,"max":1.0,"mean":1.0,"stddev":0.0},
            "run_p50_ns": {"median":1.0,"mad":0.0,"min":1.0,"max":1.0},
            "ops_per_sec": {"median":1.0,"mad":0.0,"min":1.0,"max":1.0},
            "cpu_ns_per_op": {"total": crate::stats::median(runs), "user": 0.0, "sys": 0.0},
            "ctx_switches_per_op": 0.0,
            "syscalls_per_op": 1.0,
            "ops_total": 1,
            "counters": {},
            "histogram": "",
            "runs_cpu_ns_per_op": runs,
        });
        let mut v = serde_json::json!({
            "workload": "echo.ladder", "model": model, "params": {}, "status": status,
            "op": "", "knobs": null, "warmups": 0, "repetitions": runs.len(),
        });
        if status == Status::Measured {
            v.as_object_mut()
                .unwrap()
                .extend(figures.as_object().unwrap().clone());
        } else {
            v["reason"] = "no NAPI id on loopback".into();
        }
        serde_json::from_value(v).expect("a cell")
    }

    #[test]
    fn each_rung_is_compared_with_the_row_it_adds_its_knob_to() {
        let slow = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1000.0];
        let fast = [800.0, 810.0, 790.0, 805.0, 795.0, 800.0];
        let cells = [
            cell("uring", Status::Measured, &slow),
            cell("uring-defer", Status::Measured, &fast),
            cell("uring-tuned", Status::Measured, &slow),
            cell("uring-bundle", Status::Measured, &slow),
            cell("uring-bundle-inc", Status::Measured, &fast),
            cell("uring-bundle-inc-minwait-napi", Status::Unavailable, &[]),
            cell("epoll-lt", Status::Measured, &fast),
        ];
        let refs: Vec<&CaseResult> = cells.iter().collect();
        let s = steps(&refs);
        assert_eq!(s.len(), RUNGS.len());
        let by = |id: &str| s.iter().find(|x| x.rung.model == id).unwrap();
        assert!(by("uring").change_pct.is_none());
        let d = by("uring-defer");
        assert!(
            (d.change_pct.unwrap() + 20.0).abs() < 1e-9,
            "{:?}",
            d.change_pct
        );
        assert!(matches!(&d.evidence, Some(e @ Evidence::Claimed(_)) if !e.within_noise()));
        assert_eq!(d.base_cpu_ns_per_op, Some(1000.0));
        assert_eq!(by("uring").base_cpu_ns_per_op, None);
        // Missing rung (uring-defer-fixed): no cell, and the rung over it has no base.
        assert!(by("uring-defer-fixed").cell.is_none());
        assert!(by("uring-tuned").change_pct.is_none());
        // uring-bundle-inc is over uring-bundle, the rung above.
        assert!(by("uring-bundle-inc").change_pct.unwrap() < -19.0);
        assert_eq!(by("uring-bundle-inc").base_cpu_ns_per_op, Some(1000.0));
        // A rung whose base did not run (uring-bundle-inc-minwait) has no change.
        assert!(by("uring-bundle-inc-minwait").cell.is_none());
        // An unavailable rung keeps its cell (the reason) and no figure.
        let n = by("uring-bundle-inc-minwait-napi");
        assert_eq!(n.cell.as_ref().unwrap().status, Status::Unavailable);
        assert!(n.cpu_ns_per_op.is_none() && n.change_pct.is_none());
    }
}
