//! `ringside compare`'s words. Two runs: a [`Comparison`] and its [`Gate`] as terminal text
//! ([`pair_term`]). Many runs side by side: a [`Matrix`] (built and judged in
//! `analysis::compare::many`) as tables, charts, terminal text and markdown; `html::compare`
//! draws the page. Nothing here computes a figure, a ratio, a claim or a verdict: each is
//! the comparison's or the matrix's, worded by `export::words::compare`; every rendering
//! opens with the verdict.

use super::charts::{Chart, Kind, Metric, Pt, Series, Style, PALETTE};
use super::format::{fmt_ns, fmt_rate, Table};
use super::words::compare as words;
use super::words::compare::pct_words;
use crate::analysis::compare::{
    Change, Claim, Comparison, Figure, FigureChange, Gate, Matrix, MatrixRow, Method, ALPHA,
};
use crate::analysis::vocabulary::p_text;
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
        Err(why) => words::missing(why),
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
            row.extend(r.claims.iter().map(|c| words::claim(c, m.threshold_pct)));
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
            crate::analysis::compare::ALPHA,
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

/// Whether run `k`'s bar of row `r` was judged: a later run's where its claim against the
/// first is a verdict; the first run's where some later run's is.
fn compared(r: &MatrixRow, k: usize) -> bool {
    let judged = |c: &Claim| matches!(c, Claim::Judged { .. });
    match k {
        0 => r.claims.iter().any(judged),
        k => r.claims.get(k - 1).is_some_and(judged),
    }
}

/// One bar chart per workload and figure: the workload's cells as categories, one series per
/// run (its letter), each bar the run's figure; a bar not compared (its claim not a verdict)
/// is drawn hatched grey.
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
                                not_compared: !compared(r, k),
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
                x_fixed: None,
                series,
                left_out: left_out.clone(),
            });
        }
    }
    out
}

/// The judge's lines under the tables: regressions, each pair's calibration probes where
/// they moved, then each pair's gate (what it could not test, what would let it).
pub(crate) fn summary_lines(m: &Matrix) -> Vec<String> {
    let mut out = Vec::new();
    let regs = m.regressions();
    out.push(if regs.is_empty() {
        format!(
            "no significant regression beyond {}% against {} in any run",
            m.threshold_pct, m.runs[0].letter
        )
    } else {
        let each: Vec<String> = regs
            .iter()
            .map(|(run, cell)| format!("{run}: {cell}"))
            .collect();
        format!("{} regression(s): {}", regs.len(), each.join("; "))
    });
    for (cmp, run) in m.pairs.iter().zip(&m.runs[1..]) {
        if let Some(t) = cmp.probes.as_ref().and_then(words::probes) {
            out.push(format!("{} against {}: {t}", run.letter, m.runs[0].letter));
        }
    }
    out.extend(words::matrix_gate_lines(m));
    out
}

/// The matrix as terminal text: the verdict, the runs, every cell, the environment's
/// differences, the judge's lines ([`summary_lines`]) and the verdict again.
pub(crate) fn term(m: &Matrix) -> String {
    let headline = words::matrix_headline(m);
    let mut out = format!("{headline}\n\n");
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
    for l in summary_lines(m) {
        out += &l;
        out.push('\n');
    }
    out += &headline;
    out.push('\n');
    out
}

/// The matrix as markdown: the verdict, then the same tables, a table per workload.
pub(crate) fn markdown(m: &Matrix) -> String {
    let mut out = format!(
        "# ringside: {} runs side by side\n\n**{}**\n\n",
        m.runs.len(),
        words::matrix_headline(m).replace('|', "\\|")
    );
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
    for l in summary_lines(m) {
        out += &format!("- {}\n", l.replace('|', "\\|"));
    }
    out
}

// Two runs: `ringside compare BASE NEW`'s detailed table, its noise and probes, and its gate.

/// The change with its 95% bootstrap interval where the repetitions give one.
fn pct(c: &Change) -> String {
    match c.ci_pct {
        Some((lo, hi)) => format!("{:+.1}% [{lo:+.1}, {hi:+.1}]", c.pct),
        None => format!("{:+.1}%", c.pct),
    }
}

/// The decisive test's p after the correction (and before it, when they differ); for files
/// without per-run values, whether the ranges are apart.
fn p(f: &FigureChange) -> String {
    match (f.test.p_adj, f.test.p) {
        (Some(a), Some(r)) if (a - r).abs() > 1e-12 => {
            format!("{} (raw {})", p_text(a), p_text(r))
        }
        (Some(a), _) => p_text(a),
        _ if f.change.method == Method::Spread && f.change.significant => "spreads apart".into(),
        _ if f.change.method == Method::Spread => "spreads overlap".into(),
        _ => "untested".into(),
    }
}

/// One figure's cell of the table: "681 ns -> 700 ns, +2.8% [..]; vs the point's 7 other
/// models +3.1%, p 0.031".
fn figure_text(f: &FigureChange) -> String {
    let mut s = format!(
        "{} -> {}, {}",
        value_text(f.figure, f.change.base),
        value_text(f.figure, f.change.new),
        pct(&f.change)
    );
    if let Some((r, rel)) = &f.relative {
        s += &format!("; vs {} {:+.1}%", words::relative_to(r), rel.pct);
    }
    s + &format!(", p {}", p(f))
}

/// The pair's table: a row per compared cell, each figure's change and test, the verdict.
fn pair_table(cmp: &Comparison, (base, new): (&str, &str), threshold: f64) -> Table {
    let figs = [
        Figure::P50,
        Figure::OpsPerSec,
        Figure::CpuPerOp,
        Figure::P99,
    ];
    let mut header = vec!["cell".to_string()];
    header.extend(figs.iter().map(|f| f.name().to_string()));
    header.push("verdict".into());
    let rows = cmp
        .cells
        .iter()
        .map(|c| {
            let mut row = vec![c.cell.clone()];
            for f in figs {
                row.push(
                    c.figures
                        .iter()
                        .find(|x| x.figure == f)
                        .map(figure_text)
                        .unwrap_or_default(),
                );
            }
            row.push(words::verdict(&c.verdict(), threshold));
            row
        })
        .collect();
    let mut footnotes = Vec::new();
    for k in &cmp.only_base {
        footnotes.push(format!("only in {base}: {k}"));
    }
    for k in &cmp.only_new {
        footnotes.push(format!("only in {new}: {k}"));
    }
    for k in &cmp.not_compared {
        footnotes.push(format!("not compared: {}", words::not_compared(k)));
    }
    for (file, finished) in [(base, cmp.base_finished), (new, cmp.new_finished)] {
        if !finished {
            footnotes.push(format!(
                "{file} is an unfinished run (interrupted): only the cells it kept are compared"
            ));
        }
    }
    Table {
        title: format!("{base} -> {new}"),
        note: format!(
            "medians of per-run figures (ops/s of closed-loop cells only, p99 where every \
             repetition had {} samples beyond it); p: of the change relative to the point's \
             other models in the same rounds (the figure itself for a model alone at its \
             point), the larger of Mann-Whitney U over the rounds and a normal test with the \
             run-to-run noise below, adjusted for a false discovery rate of {ALPHA} over all \
             {} tests; regression: significant, worse by more than {threshold}% both as \
             measured and relative to the point's others (a model alone: beyond the \
             calibration probes' drift too), and not within a jump the model showed within \
             a run; UNTESTED at {threshold}%: no change called, but its test could not have \
             called one of {threshold}% (its minimum detectable effect: the smallest change \
             it would call, alone among the tests, at the noise measured)",
            crate::analysis::vocabulary::TAIL_MIN,
            cmp.tests
        ),
        header,
        rows,
        footnotes,
    }
}

/// The probes, the run-to-run noise, scattered and jumping models, the tests' count and the
/// environment's differences, one line each.
fn pair_context(cmp: &Comparison) -> String {
    let mut out = String::new();
    match cmp.probes.as_ref() {
        None => out += "calibration probes: not in both files (runs before they were kept)\n",
        Some(pd) => {
            let list: Vec<String> = pd
                .probes
                .iter()
                .map(|(n, b, x, pct, _)| format!("{n} {b:.0} -> {x:.0} ns ({pct:+.1}%)"))
                .collect();
            out += &format!("calibration probes: {}\n", list.join(", "));
            if let Some(t) = words::probes(pd) {
                out += &format!("  {t}\n");
            }
        }
    }
    if !cmp.noise.is_empty() {
        out += "run-to-run noise (per run, estimated from every cell's change; the rounds of \
                one run cannot show it) and the smallest change a lone cell could show:\n";
        for n in &cmp.noise {
            out += &format!(
                "  {} {}{}: {} ({} tests{}){}\n",
                n.workload,
                n.figure.name(),
                if n.relative { " relative" } else { "" },
                n.pct()
                    .map(|(e, u)| format!("±{e:.1}% (judged at its 95% upper bound, ±{u:.1}%)"))
                    .unwrap_or_else(|| "not estimated".into()),
                n.tests,
                if n.pooled {
                    ", too few: over every workload"
                } else {
                    ""
                },
                n.invisible_pct()
                    .map(|p| format!("; changes under {} are invisible", pct_words(p)))
                    .unwrap_or_default()
            );
        }
    }
    // Models whose own scatter is well beyond their workload's noise, one line per model
    // and workload.
    let mut scatter: Vec<((String, String), Vec<String>, usize)> = Vec::new();
    for m in cmp.scattered() {
        let k = (m.label.clone(), m.workload.clone());
        let fig = format!("{} ±{:.0}%", m.figure.name(), (m.tau.exp() - 1.0) * 100.0);
        match scatter.iter_mut().find(|s| s.0 == k) {
            Some(s) => s.1.push(fig),
            None => scatter.push((k, vec![fig], m.points)),
        }
    }
    for ((label, workload), figs, points) in &scatter {
        out += &format!(
            "{label} in {workload} scattered over its {points} points between the runs, beyond \
             its workload's noise: {} per run (its changes there are judged against that)\n",
            figs.join(", ")
        );
    }
    for (which, u) in &cmp.unstable {
        out += &format!("jumped between two levels within {which}: {}\n", u.text());
    }
    out += &format!(
        "{} tests over {} cells, false discovery rate kept at {ALPHA}; {} cell(s) not \
         compared because a run was disturbed there\n",
        cmp.tests,
        cmp.cells.len(),
        cmp.disturbed.len()
    );
    if cmp.env_diff.is_empty() {
        out += "environment: no difference\n";
    } else {
        out += "environment differences (base -> new):\n";
        for (k, vb, vn) in &cmp.env_diff {
            out += &format!("  {k}: {vb} -> {vn}\n");
        }
    }
    out
}

/// `ringside compare BASE NEW` as terminal text: the verdict, the table, the context, the
/// gate's lines and the verdict again (the last line a log shows).
pub(crate) fn pair_term(cmp: &Comparison, gate: &Gate, names: (&str, &str)) -> String {
    let headline = words::headline(gate);
    let mut out = format!("{headline}\n\n");
    out += &super::term_table(&pair_table(cmp, names, gate.threshold_pct));
    out.push('\n');
    out += &pair_context(cmp);
    out.push('\n');
    for l in words::gate_lines(gate) {
        out += &l;
        out.push('\n');
    }
    out += &headline;
    out.push('\n');
    out
}
