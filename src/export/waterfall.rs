//! The ablation ladder's waterfall (`echo.ladder`, `http.ladder`): per point, one floating bar
//! per rung from the server CPU per op of the row it adds its knob to (`over`) to its own,
//! cheaper and dearer told apart, the change's significance marked, each rung's minimum kernel
//! on its label, and rungs that could not run as labelled gaps with their reason. The figures
//! are `analysis::ladder`'s, held by the workload's analysis; this arranges them,
//! `html/waterfall.rs` draws them.

use super::charts::file_slug;
use crate::analysis::ladder::{Point, Step};
use crate::analysis::vocabulary::Evidence;
use crate::analysis::Workload;
use crate::results::schema::Status;

/// How far a rung's change can be told from noise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    /// Decided by the paired claim over the rounds.
    Significant,
    /// Equivalent, or undecided.
    WithinNoise,
    /// Too few repetitions (or no per-repetition CPU) to say.
    Untested,
}

impl Mark {
    fn of(e: Option<&Evidence>) -> Mark {
        match e {
            None | Some(Evidence::OneRun) | Some(Evidence::None) => Mark::Untested,
            Some(e) if e.within_noise() => Mark::WithinNoise,
            Some(_) => Mark::Significant,
        }
    }
}

/// What one rung's row shows.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Bar {
    /// The first rung: its CPU per op from zero.
    Base { cpu_ns: f64 },
    /// From the CPU per op of the row it adds its knob to, to its own.
    Step {
        from_ns: f64,
        to_ns: f64,
        change_pct: f64,
        mark: Mark,
        /// The evidence in words (the paired claim's test, p and interval).
        evidence: String,
    },
    /// Measured, but the row it is compared with was not: its CPU per op alone, no change.
    Alone { cpu_ns: f64 },
    /// Not measured: "unavailable: <reason>", "not run", ...
    Gap { why: String },
}

/// One rung.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Row {
    pub(crate) model: &'static str,
    /// ">= 6.10".
    pub(crate) kernel: String,
    /// The row it adds its knob to, when that is not the rung drawn above it.
    pub(crate) over_other: Option<&'static str>,
    pub(crate) bar: Bar,
}

/// One point's waterfall.
#[derive(Clone, Debug)]
pub(crate) struct Waterfall {
    /// File-safe and unique in a report: "echo.ladder-waterfall-2".
    pub(crate) id: String,
    /// The point's parameters ("conns=50 equal-load").
    #[cfg(test)]
    pub(crate) point: String,
    pub(crate) title: String,
    /// Rungs in ladder order.
    pub(crate) rows: Vec<Row>,
}

/// The waterfalls of a workload's ladder, one per point in run order (none for other
/// workloads): its analysis's steps, arranged.
pub(crate) fn for_workload(w: &Workload) -> Vec<Waterfall> {
    of_points(&w.id, &w.ladder)
}

/// The waterfalls of ladder `points` of `workload`, one per point in order.
fn of_points(workload: &str, points: &[Point]) -> Vec<Waterfall> {
    points
        .iter()
        .enumerate()
        .map(|(i, p)| of_point(workload, i, &p.at, &p.steps))
        .collect()
}

fn of_point(workload: &str, i: usize, point: &str, steps: &[Step]) -> Waterfall {
    let mut rows = Vec::with_capacity(steps.len());
    let mut above: Option<&str> = None;
    for s in steps {
        let r = s.rung;
        let bar = match (&s.cell, s.cpu_ns_per_op) {
            (None, _) => Bar::Gap {
                why: "not run".into(),
            },
            (Some(c), None) => Bar::Gap {
                why: if c.status == Status::Measured {
                    "measured: no CPU per op recorded".into()
                } else {
                    format!(
                        "{}: {}",
                        c.status,
                        c.reason.as_deref().unwrap_or("no reason recorded")
                    )
                },
            },
            (Some(_), Some(cpu)) if r.over.is_none() => Bar::Base { cpu_ns: cpu },
            (Some(_), Some(cpu)) => match (s.base_cpu_ns_per_op, s.change_pct) {
                (Some(from), Some(change)) => Bar::Step {
                    from_ns: from,
                    to_ns: cpu,
                    change_pct: change,
                    mark: Mark::of(s.evidence.as_ref()),
                    evidence: s
                        .evidence
                        .as_ref()
                        .map(|e| e.text())
                        .unwrap_or_else(|| "untested".into()),
                },
                _ => Bar::Alone { cpu_ns: cpu },
            },
        };
        rows.push(Row {
            model: r.model,
            kernel: format!(">= {}", r.min_kernel),
            over_other: r.over.filter(|o| Some(*o) != above),
            bar,
        });
        above = Some(r.model);
    }
    let at = if point.is_empty() {
        String::new()
    } else {
        format!(" {point}")
    };
    Waterfall {
        id: format!("{}-waterfall-{}", file_slug(workload), i + 1),
        #[cfg(test)]
        point: point.to_string(),
        title: format!("{workload}{at}: what each knob bought (server CPU per op)"),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ladder::RUNGS;
    use crate::results::schema::CaseResult;

    /// The waterfalls of a ladder's cells, as the analysis groups them.
    fn for_cases(workload: &str, cases: &[&CaseResult]) -> Vec<Waterfall> {
        of_points(workload, &crate::analysis::ladder::of_cases(cases))
    }

    fn cell(model: &str, conns: u64, runs: &[f64], reason: Option<&str>) -> CaseResult {
        let mut v = serde_json::json!({
            "workload": "echo.ladder", "model": model, "params": {"conns": conns},
            "status": "measured", "op": "", "knobs": null, "warmups": 0,
            "repetitions": runs.len(),
        });
        match reason {
            Some(r) => {
                v["status"] = "unavailable".into();
                v["reason"] = r.into();
            }
            None => {
                let f = serde_json::json!({
                    "latency_ns": {"min":1.0,"p50":1.0,"p90":1.0,"p99":1.0,"p999":1.0,"max":1.0,"mean":1.0,"stddev":0.0},
                    "run_p50_ns": {"median":1.0,"mad":0.0,"min":1.0,"max":1.0},
                    "ops_per_sec": {"median":1.0,"mad":0.0,"min":1.0,"max":1.0},
                    "cpu_ns_per_op": {"total": crate::stats::median(runs), "user": 0.0, "sys": 0.0},
                    "ctx_switches_per_op": 0.0, "syscalls_per_op": 1.0, "ops_total": 1,
                    "counters": {}, "histogram": "", "runs_cpu_ns_per_op": runs,
                });
                v.as_object_mut()
                    .unwrap()
                    .extend(f.as_object().unwrap().clone());
            }
        }
        serde_json::from_value(v).expect("a cell")
    }

    #[test]
    fn one_waterfall_per_point_with_rungs_in_order_gaps_and_marks() {
        let base = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1000.0];
        let cheaper = [800.0, 810.0, 790.0, 805.0, 795.0, 800.0];
        let same = [1001.0, 1012.0, 989.0, 1004.0, 996.0, 1001.0];
        let mut cells = Vec::new();
        for conns in [50, 1000] {
            cells.push(cell("uring", conns, &base, None));
            cells.push(cell("uring-defer", conns, &cheaper, None));
            cells.push(cell("uring-defer-fixed", conns, &cheaper, None));
            cells.push(cell("uring-tuned", conns, &same, None));
            cells.push(cell("uring-bundle", conns, &[900.0], None));
            cells.push(cell(
                "uring-bundle-inc-minwait-napi",
                conns,
                &[],
                Some("no NAPI id on loopback"),
            ));
        }
        let refs: Vec<&CaseResult> = cells.iter().collect();
        let ws = for_cases("echo.ladder", &refs);
        assert_eq!(ws.len(), 2);
        assert_eq!(ws[0].point, "conns=50");
        assert_eq!(ws[1].point, "conns=1000");
        assert_ne!(ws[0].id, ws[1].id);
        let w = &ws[0];
        // Every rung, in ladder order, each with its minimum kernel.
        let order: Vec<&str> = w.rows.iter().map(|r| r.model).collect();
        let rungs: Vec<&str> = RUNGS.iter().map(|r| r.model).collect();
        assert_eq!(order, rungs);
        assert!(w
            .rows
            .iter()
            .zip(RUNGS)
            .all(|(row, r)| row.kernel.ends_with(r.min_kernel)));
        let by = |id: &str| w.rows.iter().find(|r| r.model == id).unwrap();
        assert_eq!(by("uring").bar, Bar::Base { cpu_ns: 1000.0 });
        match &by("uring-defer").bar {
            Bar::Step {
                from_ns,
                to_ns,
                change_pct,
                mark,
                ..
            } => {
                assert_eq!((*from_ns, *to_ns), (1000.0, 800.0));
                assert!((change_pct + 20.0).abs() < 1e-9);
                assert_eq!(*mark, Mark::Significant);
            }
            b => panic!("{b:?}"),
        }
        assert!(
            matches!(by("uring-tuned").bar, Bar::Step { mark: Mark::Significant, to_ns, .. } if to_ns > 1000.0)
        );
        // One repetition: a change, untested; over uring-tuned, which is the rung above.
        assert!(matches!(
            by("uring-bundle").bar,
            Bar::Step {
                mark: Mark::Untested,
                ..
            }
        ));
        // Gaps: unavailable with the reason, and rungs this run did not have.
        assert_eq!(
            by("uring-bundle-inc-minwait-napi").bar,
            Bar::Gap {
                why: "unavailable: no NAPI id on loopback".into()
            }
        );
        assert_eq!(
            by("uring-bundle-inc").bar,
            Bar::Gap {
                why: "not run".into()
            }
        );
        // Every rung is over the rung above (the ladder is cumulative): none names another.
        assert!(w.rows.iter().all(|r| r.over_other.is_none()));
    }

    #[test]
    fn a_rung_whose_base_is_missing_is_drawn_alone() {
        let cells = [cell("uring-defer", 50, &[700.0, 710.0], None)];
        let refs: Vec<&CaseResult> = cells.iter().collect();
        let w = &for_cases("echo.ladder", &refs)[0];
        assert_eq!(w.rows[1].bar, Bar::Alone { cpu_ns: 705.0 });
        assert_eq!(
            w.rows[0].bar,
            Bar::Gap {
                why: "not run".into()
            }
        );
    }
}
