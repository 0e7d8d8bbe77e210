//! Verdicts: one-line comparisons computed from the results, never written by hand.
//!
//! For bars (one parameter point): the best model against each other model, as a ratio of
//! the workload's verdict metric. For sweeps: each series' last point against its first (what
//! the sweep buys or costs), and the crossover points where one series overtakes another.
//! A comparison is "within noise" when the two cells' per-repetition ranges (min..max of the
//! per-run medians, or of per-run ops/s) overlap; crossovers within noise are only counted.

use super::charts::{by_workload, spec_for, sweep_param, Metric, Ordered, ParamRoles};
use crate::results::schema::CaseFigures;
use crate::results::{CaseResult, RunResults, Status};
use std::collections::{BTreeMap, HashMap};

/// One computed sentence.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub text: String,
    pub within_noise: bool,
}

impl Verdict {
    /// The sentence with its noise marker.
    pub fn line(&self) -> String {
        if self.within_noise {
            format!("{} (within noise)", self.text)
        } else {
            self.text.clone()
        }
    }
}

fn higher_is_better(m: Metric) -> bool {
    m == Metric::OpsPerSec
}

/// Per-repetition range of the metric, when the metric has one.
fn range(m: Metric, f: &CaseFigures) -> Option<(f64, f64)> {
    match m {
        Metric::LatencyP50 | Metric::LatencyP99 | Metric::CpuPerOp => {
            Some((f.run_p50_ns.min, f.run_p50_ns.max)).filter(|_| m == Metric::LatencyP50)
        }
        Metric::OpsPerSec => Some((f.ops_per_sec.min, f.ops_per_sec.max)),
        Metric::SyscallsPer100 => None,
    }
}

fn overlap(a: Option<(f64, f64)>, b: Option<(f64, f64)>) -> bool {
    match (a, b) {
        (Some((a0, a1)), Some((b0, b1))) => a0 <= b1 && b0 <= a1,
        _ => false,
    }
}

/// One group of a sweep: its cells in run order, and each label's cells.
type Members<'c, 'a> = (Vec<&'c Cell<'a>>, BTreeMap<usize, Vec<&'c Cell<'a>>>);

struct Cell<'a> {
    c: &'a CaseResult,
    v: f64,
    range: Option<(f64, f64)>,
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
        range: range(m, f),
    })
}

/// "2.2x cheaper per op than" / "2.2x more ops/s than".
fn compare(m: Metric, better: &Cell, worse: &Cell) -> String {
    let r = if higher_is_better(m) {
        better.v / worse.v
    } else {
        worse.v / better.v
    };
    let how = match m {
        Metric::OpsPerSec => "the throughput of",
        Metric::LatencyP99 => "lower p99 than",
        Metric::CpuPerOp => "less CPU per op than",
        _ => "cheaper per op than",
    };
    if r < 1.1 {
        format!("{r:.2}x {how}")
    } else {
        format!("{r:.1}x {how}")
    }
}

/// The best cell of `here` against each other one.
fn best_against_rest(m: Metric, here: &[&Cell], at: &str, out: &mut Vec<Verdict>) {
    let better = |a: f64, b: f64| {
        if higher_is_better(m) {
            a > b
        } else {
            a < b
        }
    };
    let Some(best) = here
        .iter()
        .copied()
        .reduce(|a, b| if better(b.v, a.v) { b } else { a })
    else {
        return;
    };
    for other in here.iter().filter(|c| !std::ptr::eq(**c, best)) {
        out.push(Verdict {
            text: format!(
                "{} is {} {}{at}",
                best.c.label(),
                compare(m, best, other),
                other.c.label()
            ),
            within_noise: overlap(best.range, other.range),
        });
    }
}

/// Verdicts of one workload.
pub fn for_workload(run: &RunResults, workload: &str) -> Vec<Verdict> {
    let cases: Vec<&CaseResult> = run
        .cases
        .iter()
        .filter(|c| c.workload == workload)
        .collect();
    for_cases(workload, &cases)
}

/// Verdicts of one workload from its cells, in run order. Cells are grouped once (by point,
/// group and label), so the work is linear in the cells, times the number of series for the
/// crossovers between every two of them.
pub fn for_cases(workload: &str, cases: &[&CaseResult]) -> Vec<Verdict> {
    let spec = spec_for(workload);
    let m = spec.verdict;
    let cells: Vec<Cell> = cases.iter().filter_map(|c| cell(m, c)).collect();
    let roles = ParamRoles::of_cases(cases);
    let params_text = |c: &CaseResult, skip: Option<&str>| roles.point(c, skip);
    let better = |a: f64, b: f64| {
        if higher_is_better(m) {
            a > b
        } else {
            a < b
        }
    };
    let mut out = Vec::new();
    match sweep_param(spec, cases) {
        None => {
            let mut groups = Ordered::default();
            let mut here: Vec<Vec<&Cell>> = Vec::new();
            for c in &cells {
                let g = groups.add(params_text(c.c, None));
                if g == here.len() {
                    here.push(Vec::new());
                }
                here[g].push(c);
            }
            for (g, here) in groups.order.iter().zip(&here) {
                let at = if g.is_empty() {
                    String::new()
                } else {
                    format!(" at {g}")
                };
                best_against_rest(m, here, &at, &mut out);
            }
        }
        Some(param) => {
            let x = |c: &CaseResult| c.params.0.get(param).and_then(|v| v.as_f64());
            // Labels in first-seen order; per group, each label's cells in run order.
            let mut groups = Ordered::default();
            let mut labels = Ordered::default();
            let mut members: Vec<Members> = Vec::new();
            for c in &cells {
                let g = groups.add(params_text(c.c, Some(param)));
                let l = labels.add(c.c.label());
                if g == members.len() {
                    members.push(Default::default());
                }
                members[g].0.push(c);
                members[g].1.entry(l).or_default().push(c);
            }
            for (g, (in_group, by_label)) in groups.order.iter().zip(&members) {
                let at = if g.is_empty() {
                    String::new()
                } else {
                    format!(" ({g})")
                };
                // Each label's series along the sweep, sorted by x (stable: run order at ties).
                let series: Vec<(usize, Vec<(f64, &Cell)>)> = by_label
                    .iter()
                    .map(|(&l, cs)| {
                        let mut v: Vec<(f64, &Cell)> =
                            cs.iter().filter_map(|c| Some((x(c.c)?, *c))).collect();
                        v.sort_by(|a, b| a.0.total_cmp(&b.0));
                        (l, v)
                    })
                    .collect();
                // What the sweep does to each series: last point against first.
                for (l, s) in &series {
                    let l = &labels.order[*l];
                    if let (Some(first), Some(last)) = (s.first(), s.last()) {
                        if first.0 == last.0 {
                            continue;
                        }
                        let (b, w) = if better(last.1.v, first.1.v) {
                            (last, first)
                        } else {
                            (first, last)
                        };
                        out.push(Verdict {
                            text: format!(
                                "{l}: {param}={} is {} {param}={}{at}",
                                b.0,
                                compare(m, b.1, w.1),
                                w.0
                            ),
                            within_noise: overlap(b.1.range, w.1.range),
                        });
                    }
                }
                // At the far end of the sweep: the best series against the others.
                let far = in_group
                    .iter()
                    .filter_map(|c| x(c.c))
                    .fold(f64::NEG_INFINITY, f64::max);
                let here: Vec<&Cell> = in_group
                    .iter()
                    .copied()
                    .filter(|c| x(c.c) == Some(far))
                    .collect();
                let at_far = format!(
                    " at {param}={far}{}",
                    at.replace(" (", ", ").replace(')', "")
                );
                best_against_rest(m, &here, &at_far, &mut out);
                // Crossovers: where the sign of (a - b) changes between neighbouring points.
                // One whose repetitions overlap at either point is no evidence of a crossing:
                // those are counted, not listed (on a noisy machine there are dozens).
                let mut noisy = 0;
                for (i, (la, sa)) in series.iter().enumerate() {
                    for (lb, sb) in series.iter().skip(i + 1) {
                        let (la, lb) = (&labels.order[*la], &labels.order[*lb]);
                        // The first cell of `sb` at each x.
                        let mut at_x: HashMap<u64, &Cell> = HashMap::new();
                        for (xb, cb) in sb {
                            at_x.entry(xb.to_bits()).or_insert(cb);
                        }
                        let common: Vec<(f64, &Cell, &Cell)> = sa
                            .iter()
                            .filter_map(|(xa, ca)| {
                                at_x.get(&xa.to_bits()).map(|cb| (*xa, *ca, *cb))
                            })
                            .collect();
                        for w in common.windows(2) {
                            let before = better(w[0].1.v, w[0].2.v);
                            let after = better(w[1].1.v, w[1].2.v);
                            if before != after && w[0].1.v != w[0].2.v && w[1].1.v != w[1].2.v {
                                if overlap(w[0].1.range, w[0].2.range)
                                    || overlap(w[1].1.range, w[1].2.range)
                                {
                                    noisy += 1;
                                    continue;
                                }
                                let (winner, loser) = if after { (la, lb) } else { (lb, la) };
                                out.push(Verdict {
                                    text: format!(
                                        "crossover: {winner} overtakes {loser} between {param}={} and {param}={}{at}",
                                        w[0].0, w[1].0
                                    ),
                                    within_noise: false,
                                });
                            }
                        }
                    }
                }
                if noisy > 0 {
                    out.push(Verdict {
                        text: format!(
                            "{noisy} crossover{} along {param} not listed: the two series' \
                             repetitions overlap where they cross{at}",
                            if noisy == 1 { "" } else { "s" }
                        ),
                        within_noise: true,
                    });
                }
            }
        }
    }
    if workload == "http.rate" {
        out.extend(capacity(cases));
    }
    out
}

/// The open-loop sweep's answer per model: the highest offered rate it kept up with (achieved
/// at least [`KEEP_UP`] of it) with p99 at most [`CAPACITY_P99_NS`], and the first rate where
/// it did not (the knee).
pub const CAPACITY_P99_NS: f64 = 10e6;
/// Share of the offered rate a server must achieve to count as keeping up.
pub const KEEP_UP: f64 = 0.95;

fn capacity(cases: &[&CaseResult]) -> Vec<Verdict> {
    let mut labels = Ordered::default();
    let mut by_label: Vec<Vec<&CaseResult>> = Vec::new();
    for c in cases {
        let l = labels.add(c.label());
        if l == by_label.len() {
            by_label.push(Vec::new());
        }
        by_label[l].push(c);
    }
    let mut out = Vec::new();
    for (l, cs) in labels.order.iter().zip(&by_label) {
        let mut pts: Vec<(f64, bool)> = cs
            .iter()
            .filter(|c| c.status == Status::Measured)
            .filter_map(|c| {
                let f = c.figures.as_ref()?;
                let offered = c.params.0.get("rate_per_sec")?.as_f64()?;
                let n = c.repetitions.max(1) as f64;
                let achieved = f.counters.get("achieved_per_sec") as f64 / n;
                (offered > 0.0).then(|| {
                    let ok = achieved >= KEEP_UP * offered && f.latency_ns.p99 <= CAPACITY_P99_NS;
                    (offered, ok)
                })
            })
            .collect();
        if pts.is_empty() {
            continue;
        }
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let knee = pts.iter().position(|p| !p.1);
        let text = match knee {
            Some(0) => format!(
                "{l}: fell behind (or p99 > {} ms) already at {:.0} req/s offered",
                CAPACITY_P99_NS / 1e6,
                pts[0].0
            ),
            Some(k) => format!(
                "{l}: capacity {:.0} req/s with p99 <= {} ms; the knee lies between {:.0} and {:.0} req/s",
                pts[k - 1].0,
                CAPACITY_P99_NS / 1e6,
                pts[k - 1].0,
                pts[k].0
            ),
            None => format!(
                "{l}: kept up with every offered rate up to {:.0} req/s with p99 <= {} ms (knee beyond the sweep)",
                pts[pts.len() - 1].0,
                CAPACITY_P99_NS / 1e6
            ),
        };
        out.push(Verdict {
            text,
            within_noise: false,
        });
    }
    out
}

/// Verdicts of every workload, in workload order.
pub fn all(run: &RunResults) -> Vec<(String, Vec<Verdict>)> {
    by_workload(run)
        .into_iter()
        .map(|(w, cases)| (w.to_string(), for_cases(w, &cases)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate_cell(model: &str, rate: u64, achieved: u64, p99: f64) -> CaseResult {
        let reps = 2;
        serde_json::from_value(serde_json::json!({
            "workload": "http.rate", "model": model,
            "params": {"rate_per_sec": rate, "clients": 100},
            "status": "measured", "op": "x", "knobs": {}, "warmups": 0, "repetitions": reps,
            "latency_ns": {"min": 1.0, "p50": 1.0, "p90": 1.0, "p99": p99, "p999": p99,
                           "max": p99, "mean": 1.0, "stddev": 0.0},
            "run_p50_ns": {"median": 1.0, "min": 1.0, "max": 1.0, "mad": 0.0},
            "ops_per_sec": {"median": 1.0, "min": 1.0, "max": 1.0, "mad": 0.0},
            "cpu_ns_per_op": {"total": 1.0, "user": 0.5, "sys": 0.5},
            "ctx_switches_per_op": 0.0, "syscalls_per_op": 1.0, "ops_total": 1,
            "counters": {"offered_per_sec": rate * reps, "achieved_per_sec": achieved * reps},
            "histogram": ""
        }))
        .unwrap()
    }

    #[test]
    fn capacity_is_the_last_rate_kept_up_with_under_the_p99_target() {
        let cells = [
            rate_cell("a", 10_000, 10_000, 1e6),
            rate_cell("a", 20_000, 19_900, 2e6),
            rate_cell("a", 40_000, 30_000, 50e6), // fell behind: the knee
            rate_cell("b", 10_000, 10_000, 20e6), // p99 over target at once
            rate_cell("b", 20_000, 20_000, 1e6),
            rate_cell("c", 10_000, 10_000, 1e6),
            rate_cell("c", 20_000, 20_000, 1e6),
        ];
        let refs: Vec<&CaseResult> = cells.iter().collect();
        let v: Vec<String> = capacity(&refs).into_iter().map(|v| v.text).collect();
        assert_eq!(v.len(), 3, "{v:?}");
        assert!(v[0].starts_with("a: capacity 20000 req/s"), "{}", v[0]);
        assert!(v[0].contains("between 20000 and 40000"), "{}", v[0]);
        assert!(
            v[1].starts_with("b: fell behind") && v[1].contains("10000"),
            "{}",
            v[1]
        );
        assert!(
            v[2].starts_with("c: kept up") && v[2].contains("20000"),
            "{}",
            v[2]
        );
    }
}
