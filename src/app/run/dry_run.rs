//! `run --dry-run`'s text: what the run would measure and about how long it would take, worded
//! from `plan::estimate` of the very cases the run would get.

use crate::plan::{self, Case, Profile};

/// `run --dry-run`: the cells each workload would measure, its models and points, the
/// repetitions per cell and the estimated time (`plan::estimate`, from the same cases and
/// budget the runner would get).
pub(super) fn dry_run_text(profile: Profile, budget: plan::Budget, cases: &[Case]) -> String {
    use std::fmt::Write;
    let e = plan::estimate(cases, budget);
    let cells: usize = e.workloads.iter().map(|w| w.cells).sum();
    let mut out = format!(
        "dry run (nothing measured): profile {}, {} in {}\n",
        profile.name(),
        plural(cells, "cell"),
        plural(e.workloads.len(), "workload")
    );
    for w in &e.workloads {
        let mut models: Vec<&str> = Vec::new();
        for c in cases.iter().filter(|c| c.workload.id() == w.workload) {
            if c.point.is_some() && !models.contains(&c.model.id) {
                models.push(c.model.id);
            }
        }
        let _ = writeln!(
            out,
            "\n{}: {} ({}, {}), {} repetitions per cell, ~{:.0} s\n  models: {}",
            w.workload,
            plural(w.cells, "cell"),
            plural(models.len(), "model"),
            plural(w.points.len(), "point"),
            w.repetitions,
            w.seconds,
            models.join(", ")
        );
        for p in &w.points {
            let _ = writeln!(out, "  point: {p}");
        }
    }
    if e.not_applicable > 0 {
        let _ = writeln!(
            out,
            "\n{} not-applicable cells (named models a workload does not take)",
            e.not_applicable
        );
    }
    let _ = write!(out, "\nestimated time: ~{}", minutes(e.seconds));
    if e.extension_s > 0 {
        let _ = write!(
            out,
            ", and up to {} more for rounds added where claims are undecided",
            minutes(e.extension_s as f64)
        );
    }
    out.push_str(" (re-runs of disturbed repetitions, --explain and --crosscheck not included)\n");
    out
}

/// "1 model", "2 models".
fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Seconds as "45 s" or "12 min 5 s".
fn minutes(s: f64) -> String {
    let s = s.round() as u64;
    if s < 60 {
        format!("{s} s")
    } else {
        format!("{} min {} s", s / 60, s % 60)
    }
}
