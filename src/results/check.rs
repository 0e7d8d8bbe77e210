//! A results file checked against itself before `report` or `compare` uses it: a file is
//! hand-edited, truncated by a tool, or forged, and what it says is only as good as its
//! agreement with itself. A cell that fails is named with the figure, and the file refused
//! (exit 2), never judged: a gate fed zeros or a summary that contradicts its own repetitions
//! would otherwise pass or fail a change on numbers no run measured.
//!
//! A measured cell must have:
//! - finite, non-negative figures, latency percentiles in order (min <= p50 <= ... <= max);
//! - ops (`ops_total` and every repetition's ops/s above 0), each repetition's median latency
//!   and CPU per op above 0;
//! - one value per repetition in each `runs_*` list it keeps (`runs_cpu_ns_per_op` may keep
//!   fewer: a repetition without ops has no CPU per op);
//! - stored summaries that its repetitions give: the median of `runs_ops_per_sec` is
//!   `ops_per_sec.median`, that of `runs_p50_ns` is `run_p50_ns.median`, and CPU per op over
//!   every op lies within its repetitions' range (it is their op-weighted mean), all within
//!   rounding;
//! - figures within what a machine can do: under [`MAX_OPS_PER_SEC`] ops/s, latencies of at
//!   least [`MIN_LATENCY_NS`] where it recorded any;
//!
//! and each cell appears once. `app::load_results` adds: at most the registry's models plus
//! [`MAX_CONTENDERS`] at one point ([`models_per_point`]; results/ does not read the registry).

use super::schema::CaseFigures;
use super::spread::median;
use super::{CaseResult, RunResults};
use std::collections::{HashMap, HashSet};

/// The most contenders (`ext:NAME`, beside the registry's models) one point may have.
pub(crate) const MAX_CONTENDERS: usize = 64;

/// Ops per second no machine reaches: ten per nanosecond.
pub(crate) const MAX_OPS_PER_SEC: f64 = 1e10;

/// The shortest latency a measured op can have: the timer's nanosecond.
pub(crate) const MIN_LATENCY_NS: f64 = 1.0;

/// How far a stored summary may sit from what its repetitions give: JSON keeps every f64
/// exactly, so this is rounding in whatever wrote the file, not tolerance of a change.
const ROUNDING: f64 = 1e-6;

/// What a results file must hold to be read (see the module's doc); the first problem, naming
/// the cell and the figure.
pub(crate) fn check_cells(r: &RunResults) -> Result<(), String> {
    let mut seen = HashSet::new();
    for c in &r.cases {
        let key = c.key();
        if !seen.insert(key.clone()) {
            return Err(format!(
                "cell '{key}' appears twice (a run measures each cell once)"
            ));
        }
        numbers(c).map_err(|e| format!("cell '{key}': {e}"))?;
        agrees(c).map_err(|e| format!("cell '{key}': {e}"))?;
    }
    Ok(())
}

/// Finite, non-negative figures, percentiles in order, a well-formed timeline.
fn numbers(c: &CaseResult) -> Result<(), String> {
    let Some(f) = &c.figures else { return Ok(()) };
    let l = &f.latency_ns;
    let order = [
        ("min", l.min),
        ("p50", l.p50),
        ("p90", l.p90),
        ("p99", l.p99),
        ("p99.9", l.p999),
        ("max", l.max),
    ];
    let spread = |name: &'static str, s: &super::spread::Spread| {
        [
            (name, s.median),
            (name, s.min),
            (name, s.max),
            (name, s.mad),
        ]
    };
    let mut numbers: Vec<(&str, f64)> = order.to_vec();
    numbers.extend([
        ("latency mean", l.mean),
        ("latency stddev", l.stddev),
        ("CPU per op", f.cpu_ns_per_op.total),
        ("context switches per op", f.ctx_switches_per_op),
        ("bytes/s", f.bytes_per_sec),
        ("cpu_busy", f.cpu_busy),
    ]);
    numbers.extend(spread("ops/s", &f.ops_per_sec));
    numbers.extend(spread("per-run p50", &f.run_p50_ns));
    for (name, runs) in runs_of(f) {
        numbers.extend(runs.iter().map(|v| (name, *v)));
    }
    if let Some((name, v)) = numbers.iter().find(|(_, v)| !(v.is_finite() && *v >= 0.0)) {
        return Err(format!("{name} is {v}, not a finite number >= 0"));
    }
    if let Some(i) = f.runs_timeline.iter().position(|t| !t.well_formed()) {
        return Err(format!(
            "the timeline of repetition {} is malformed (interval vectors of different \
             lengths, more than {} intervals, or intervals past the window)",
            i + 1,
            crate::measure::timeline::MAX_INTERVALS
        ));
    }
    if let Some(w) = order.windows(2).find(|w| w[0].1 > w[1].1) {
        return Err(format!(
            "latency {} ({}) is above {} ({}): percentiles out of order",
            w[0].0, w[0].1, w[1].0, w[1].1
        ));
    }
    Ok(())
}

/// The per-repetition lists, by name.
fn runs_of(f: &CaseFigures) -> [(&'static str, &[f64]); 4] {
    [
        ("runs_p50_ns", &f.runs_p50_ns),
        ("runs_ops_per_sec", &f.runs_ops_per_sec),
        ("runs_cpu_ns_per_op", &f.runs_cpu_ns_per_op),
        ("runs_p99_ns", &f.runs_p99_ns),
    ]
}

/// Whether `stored` is what the repetitions give (`of`), within rounding.
fn near(stored: f64, of: f64) -> bool {
    (stored - of).abs() <= ROUNDING * stored.abs().max(of.abs()).max(1.0)
}

/// A measured cell's figures agree with its repetitions and lie within physical bounds.
fn agrees(c: &CaseResult) -> Result<(), String> {
    let Some(f) = &c.figures else { return Ok(()) };
    if f.ops_total == 0 || f.ops_per_sec.median <= 0.0 {
        return Err(format!(
            "measured with no ops (ops_total {}, ops/s median {}): a cell that completed \
             nothing is failed, not measured",
            f.ops_total, f.ops_per_sec.median
        ));
    }
    let reps = c.repetitions as usize;
    for (name, runs) in runs_of(f) {
        // CPU per op is kept only for repetitions that had ops.
        let fits = if name == "runs_cpu_ns_per_op" {
            runs.len() <= reps
        } else {
            runs.is_empty() || runs.len() == reps
        };
        if !fits {
            return Err(format!(
                "{name} has {} values but the cell says it ran {reps} repetitions",
                runs.len()
            ));
        }
        if let Some(v) = runs.iter().find(|v| **v <= 0.0) {
            return Err(format!(
                "{name} holds {v}: a measured repetition has ops, latency and CPU above 0"
            ));
        }
    }
    let top = f.ops_per_sec.max.max(
        f.runs_ops_per_sec
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max),
    );
    if top >= MAX_OPS_PER_SEC {
        return Err(format!(
            "ops/s {top:e} is beyond {MAX_OPS_PER_SEC:e}, more than a machine can do"
        ));
    }
    let l = &f.latency_ns;
    if l.max > 0.0 && l.p50 < MIN_LATENCY_NS {
        return Err(format!(
            "latency p50 {} ns is under {MIN_LATENCY_NS} ns, less than the timer can show",
            l.p50
        ));
    }
    let summaries = [
        ("ops/s", &f.runs_ops_per_sec, f.ops_per_sec.median),
        ("per-run p50", &f.runs_p50_ns, f.run_p50_ns.median),
    ];
    for (name, runs, stored) in summaries {
        if !runs.is_empty() && !near(stored, median(runs)) {
            return Err(format!(
                "its {name} median {stored} is not the median of its repetitions ({}): the \
                 file disagrees with itself",
                median(runs)
            ));
        }
    }
    let cpu = &f.runs_cpu_ns_per_op;
    if cpu.len() == reps && reps > 0 {
        let lo = cpu.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = cpu.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let t = f.cpu_ns_per_op.total;
        if !((t >= lo || near(t, lo)) && (t <= hi || near(t, hi))) {
            return Err(format!(
                "its CPU per op {t} ns lies outside its repetitions' {lo} to {hi} ns (over \
                 every op it is their op-weighted mean): the file disagrees with itself"
            ));
        }
    }
    Ok(())
}

/// At most `models` (the registry's) plus [`MAX_CONTENDERS`] cells at one point (workload and
/// params): a file of thousands of models at a point is no run's, and ranking it would only
/// spend time and memory.
pub(crate) fn models_per_point(r: &RunResults, models: usize) -> Result<(), String> {
    let most = models + MAX_CONTENDERS;
    let mut per: HashMap<String, usize> = HashMap::new();
    for c in &r.cases {
        let point = c.point_key();
        let n = per.entry(point.clone()).or_default();
        *n += 1;
        if *n > most {
            return Err(format!(
                "the point '{}' has more than {most} cells (the registry's {models} models \
                 and at most {MAX_CONTENDERS} contenders): not a file a run writes",
                point.trim_end()
            ));
        }
    }
    Ok(())
}
