//! Many runs side by side: a [`Matrix`] (built and judged in `stats::compare::many`) as
//! tables, charts, terminal text and markdown; `html::compare` draws the page. Nothing here
//! computes a figure, a ratio or a claim: each cell is the matrix's, formatted.

use super::charts::{Chart, Kind, Metric, Pt, Series, Style, PALETTE};
use super::format::{fmt_ns, fmt_rate, Table};
use crate::stats::compare::{Figure, Matrix, MatrixRow};
use std::sync::Arc;

/// The chart metric that draws a figure.
fn metric(f: Figure) -> Metric {
    match f {
        Figure::P50 => Metric::LatencyP50,
        Figure::OpsPerSec => Metric::OpsPerSec,
        Figure::CpuPerOp => Metric::CpuPerOp,
        Figure::P99 => Metric::LatencyP99,
    }
}

fn value_text(f: Figure, x: f64) -> String {
    match f {
        Figure::OpsPerSec => fmt_rate(x),
        _ => fmt_ns(x),
    }
}

/// Run `k`'s figures of a row: "p50 681 ns; ops/s 1.47 M" (later runs: each with its ratio
/// to the first's, "p50 700 ns (1.03x)"), or why it has none.
fn run_text(m: &Matrix, r: &MatrixRow, k: usize) -> String {
    match &r.values[k] {
        Err(why) => why.clone(),
        Ok(_) => m
            .figures()
            .into_iter()
            .filter_map(|f| {
                let v = r.value(k, f)?;
                let ratio = r
                    .ratio(k, f)
                    .map(|x| format!(" ({x:.2}x)"))
                    .unwrap_or_default();
                Some(format!("{} {}{ratio}", f.name(), value_text(f, v)))
            })
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// The matrix's runs: letter, file, finished or not.
pub(crate) fn runs_table(m: &Matrix) -> Table {
    Table {
        title: "runs".into(),
        note: format!(
            "{} is the reference; every later run is compared with it",
            m.runs[0].letter
        ),
        header: vec!["run".into(), "results file".into(), "finished".into()],
        rows: m
            .runs
            .iter()
            .map(|r| {
                vec![
                    r.letter.clone(),
                    r.name.clone(),
                    if r.finished {
                        "yes".into()
                    } else {
                        "no (interrupted: only the cells it kept)".into()
                    },
                ]
            })
            .collect(),
        footnotes: Vec::new(),
    }
}

/// The cells of `workload` (every workload: `None`), one row each: every run's figures with
/// their ratios to the first run's, then each later run's claim against it.
pub(crate) fn matrix_table(m: &Matrix, workload: Option<&str>) -> Table {
    let first = &m.runs[0].letter;
    let mut header = vec!["cell".to_string()];
    header.extend(m.runs.iter().map(|r| r.letter.clone()));
    header.extend(
        m.runs[1..]
            .iter()
            .map(|r| format!("{} vs {first}", r.letter)),
    );
    let rows = m
        .rows
        .iter()
        .filter(|r| workload.is_none_or(|w| r.workload == w))
        .map(|r| {
            let mut row = vec![if workload.is_some() {
                r.point.clone()
            } else {
                r.cell.clone()
            }];
            row.extend((0..m.runs.len()).map(|k| run_text(m, r, k)));
            row.extend(r.claims.iter().map(|c| c.text()));
            row
        })
        .collect();
    Table {
        title: workload.map_or_else(|| "cells across the runs".into(), str::to_string),
        note: format!(
            "medians of per-repetition figures, (x) each run's ratio to {first}'s; each later \
             run judged against {first} as `ringside compare {first} X` judges, every test of \
             every pair ({} in all) one family with a false discovery rate of {}; regression: \
             significant and worse by more than {}%",
            m.tests,
            crate::stats::compare::ALPHA,
            m.threshold_pct
        ),
        header,
        rows,
        footnotes: Vec::new(),
    }
}

/// The facts that differ between the runs, one column per run (empty rows: none differ).
pub(crate) fn env_table(m: &Matrix) -> Table {
    let mut header = vec!["fact".to_string()];
    header.extend(m.runs.iter().map(|r| r.letter.clone()));
    Table {
        title: "environment differences".into(),
        note: "the environment, ringside's version, the profile, the CPU plan, the clocksource \
               and the flags, where not every run has the same value"
            .into(),
        header,
        rows: m
            .env
            .iter()
            .map(|(k, vals)| {
                std::iter::once(k.clone())
                    .chain(vals.iter().cloned())
                    .collect()
            })
            .collect(),
        footnotes: Vec::new(),
    }
}

/// The workloads of the matrix's rows, first seen first.
pub(crate) fn workloads(m: &Matrix) -> Vec<&str> {
    let mut w: Vec<&str> = Vec::new();
    for r in &m.rows {
        if !w.contains(&r.workload.as_str()) {
            w.push(&r.workload);
        }
    }
    w
}

/// One bar chart per workload and figure: the workload's cells as categories, one series per
/// run (its letter), each bar the run's figure.
pub(crate) fn charts(m: &Matrix) -> Vec<Chart> {
    let mut out = Vec::new();
    for w in workloads(m) {
        let rows: Vec<&MatrixRow> = m.rows.iter().filter(|r| r.workload == w).collect();
        let left_out: Arc<[String]> = rows
            .iter()
            .filter(|r| r.values.iter().all(|v| v.is_err()))
            .map(|r| r.point.clone())
            .collect();
        for f in m.figures() {
            let drawn: Vec<&&MatrixRow> = rows
                .iter()
                .filter(|r| (0..m.runs.len()).any(|k| r.value(k, f).is_some()))
                .collect();
            if drawn.is_empty() {
                continue;
            }
            let series: Vec<Series> = m
                .runs
                .iter()
                .enumerate()
                .map(|(k, run)| Series {
                    label: run.letter.clone(),
                    style: Style {
                        slot: k,
                        colour: Some(k % PALETTE.len()),
                    },
                    points: drawn
                        .iter()
                        .enumerate()
                        .filter_map(|(i, r)| {
                            Some(Pt {
                                x: i as f64,
                                y: r.value(k, f)?,
                                whisker: None,
                                band: None,
                                behind: false,
                            })
                        })
                        .collect(),
                    faded: false,
                })
                .filter(|s| !s.points.is_empty())
                .collect();
            let metric = metric(f);
            out.push(Chart {
                id: format!("compare-{}-{}", super::charts::file_slug(w), metric.slug()),
                workload: w.to_string(),
                title: format!("{w}: {} per run", f.name()),
                kind: Kind::Bars,
                metric,
                x_axis: String::new(),
                y_axis: metric.axis().to_string(),
                log_x: false,
                log_y: false,
                categories: drawn.iter().map(|r| r.point.clone()).collect(),
                series,
                left_out: left_out.clone(),
            });
        }
    }
    out
}

/// The judge's lines under the tables: regressions, each pair's calibration probes where
/// they moved, and with `gate` (`Some(allow_untested)`: `compare`'s output) the gate's
/// reasons to fail.
pub(crate) fn summary_lines(m: &Matrix, gate: Option<bool>) -> Vec<String> {
    let mut out = Vec::new();
    let regs = m.regressions();
    out.push(if regs.is_empty() {
        format!(
            "no significant regression beyond {}% against {} in any run",
            m.threshold_pct, m.runs[0].letter
        )
    } else {
        format!("{} regression(s): {}", regs.len(), regs.join("; "))
    });
    for (cmp, run) in m.pairs.iter().zip(&m.runs[1..]) {
        if let Some(t) = cmp.probes.as_ref().and_then(|p| p.text()) {
            out.push(format!("{} against {}: {t}", run.letter, m.runs[0].letter));
        }
    }
    if let Some(allow_untested) = gate {
        out.extend(
            m.gate(allow_untested)
                .into_iter()
                .map(|f| format!("FAIL: {f}")),
        );
    }
    out
}

/// The matrix as terminal text: the runs, every cell, the environment's differences and the
/// judge's lines (with `gate`, as [`summary_lines`], the gate's).
pub(crate) fn term(m: &Matrix, gate: Option<bool>) -> String {
    let mut out = String::new();
    for t in [runs_table(m), matrix_table(m, None)] {
        out += &super::term::render_table(&t);
        out.push('\n');
    }
    if m.env.is_empty() {
        out += "environment: no difference\n";
    } else {
        out += &super::term::render_table(&env_table(m));
    }
    out.push('\n');
    for l in summary_lines(m, gate) {
        out += &l;
        out.push('\n');
    }
    out
}

/// The matrix as markdown: the same tables, a table per workload.
pub(crate) fn markdown(m: &Matrix) -> String {
    let mut out = format!("# ringside: {} runs side by side\n\n", m.runs.len());
    out += &super::markdown::render_table(&runs_table(m));
    out.push('\n');
    if m.env.is_empty() {
        out += "Environment: no difference between the runs.\n\n";
    } else {
        out += &super::markdown::render_table(&env_table(m));
        out.push('\n');
    }
    for w in workloads(m) {
        out += &super::markdown::render_table(&matrix_table(m, Some(w)));
        out.push('\n');
    }
    for l in summary_lines(m, None) {
        out += &format!("- {}\n", l.replace('|', "\\|"));
    }
    out
}
