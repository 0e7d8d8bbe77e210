//! `ringside compare BASE.json NEW.json [--threshold PCT] [--allow-untested]`: per common
//! cell, the change in p50, ops/s, CPU per op and p99 with its significance (corrected over
//! every test), whether the machine explains it, the cells only one run
//! has, and what differs between the two environments. Exit 1 when the gate fails (see
//! [`crate::stats::compare::Comparison::gate`]: a significant regression beyond the threshold,
//! a measured cell that failed, an unfinished NEW, nothing compared; and unless
//! `--allow-untested`, a change beyond the threshold too few repetitions to test and cells
//! only one file has), 2 for a bad file or threshold.
//!
//! `ringside compare A B C ... [--out DIR]`: the first file against each later one, judged
//! the same way but with every pair's tests one correction family
//! (`stats::compare::compare_many`), printed as one matrix: a row per cell with each run's
//! figures and their ratios to A's, each later run's verdict, the environment facts that
//! differ, and the gate of every pair (exit 1 when any fails). A file that shares no cell with
//! the first is bad input (exit 2). `--out DIR` (two files or more) writes the matrix there as
//! compare.html (a chart per workload and figure) and compare.md, atomically; without it
//! nothing is written.

use crate::export::table::{fmt_ns, fmt_rate, Table};
use crate::results::{store, RunResults};
use crate::stats::claims::p_text;
use crate::stats::compare::{
    compare, compare_many, Change, Figure, FigureChange, Matrix, Method, ALPHA, MAX_RUNS,
};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The change with its 95% bootstrap interval where the repetitions give one.
fn pct(c: &Change) -> String {
    match c.ci_pct {
        Some((lo, hi)) => format!("{:+.1}% [{lo:+.1}, {hi:+.1}]", c.pct),
        None => format!("{:+.1}%", c.pct),
    }
}

/// "12%", "3.4%".
fn pct_text(p: f64) -> String {
    if p < 10.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
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
    let v = |x: f64| match f.figure {
        Figure::OpsPerSec => fmt_rate(x),
        _ => fmt_ns(x),
    };
    let mut s = format!(
        "{} -> {}, {}",
        v(f.change.base),
        v(f.change.new),
        pct(&f.change)
    );
    if let Some((r, rel)) = &f.relative {
        s += &format!("; vs {r} {:+.1}%", rel.pct);
    }
    s + &format!(", p {}", p(f))
}

/// `ringside compare FILE FILE... [--out DIR]`: two files print the pair's detailed table
/// and gate ([`two`]); more print the matrix ([`many`]). With `--out` the runs side by side
/// are also written there as compare.html and compare.md.
pub fn run(
    files: &[PathBuf],
    threshold: f64,
    allow_untested: bool,
    out: Option<&Path>,
) -> anyhow::Result<i32> {
    if !threshold.is_finite() || threshold < 0.0 {
        eprintln!("error: --threshold {threshold} is not a percentage >= 0 (e.g. 5)");
        return Ok(2);
    }
    let Some(runs) = load_all(files) else {
        return Ok(2);
    };
    if runs.len() == 2 && out.is_none() {
        return two(
            &files[0],
            &files[1],
            (&runs[0].1, &runs[1].1),
            threshold,
            allow_untested,
        );
    }
    let m = match matrix(&runs, threshold) {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    if let Some(dir) = out {
        match write_page(&m, dir) {
            Ok(written) => {
                for p in written {
                    eprintln!("wrote {}", p.display());
                }
            }
            Err(code) => return Ok(code),
        }
    }
    if runs.len() == 2 {
        return two(
            &files[0],
            &files[1],
            (&runs[0].1, &runs[1].1),
            threshold,
            allow_untested,
        );
    }
    super::stdout::print(&crate::export::compare::term(&m, Some(allow_untested)))?;
    Ok(if m.gate(allow_untested).is_empty() {
        0
    } else {
        1
    })
}

/// Every file loaded, each with the name it was given; `None` after printing why one cannot
/// be (bad input, exit 2).
pub(crate) fn load_all(files: &[PathBuf]) -> Option<Vec<(String, RunResults)>> {
    if files.len() > MAX_RUNS {
        eprintln!(
            "error: {} results files given: at most {MAX_RUNS} are compared at once (named A              to Z)",
            files.len()
        );
        return None;
    }
    let mut runs = Vec::with_capacity(files.len());
    for f in files {
        match store::load(f) {
            Ok(r) => runs.push((f.display().to_string(), r)),
            Err(e) => {
                eprintln!("error: {e:#}");
                return None;
            }
        }
    }
    Some(runs)
}

/// The matrix of the loaded runs, or exit 2 after saying why there is none.
pub(crate) fn matrix(runs: &[(String, RunResults)], threshold: f64) -> Result<Matrix, i32> {
    let refs: Vec<(String, &RunResults)> = runs.iter().map(|(n, r)| (n.clone(), r)).collect();
    compare_many(&refs, threshold).map_err(|why| {
        eprintln!("error: {why}");
        2
    })
}

/// Writes compare.html and compare.md into `dir` (made if missing), each atomically; a
/// directory that cannot be made is bad input (exit 2).
pub(crate) fn write_page(m: &Matrix, dir: &Path) -> Result<Vec<PathBuf>, i32> {
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!(
            "error: {}",
            crate::error::InputError::OutputDir {
                dir: dir.display().to_string(),
                why: e.to_string(),
            }
        );
        return Err(2);
    }
    let html = match crate::export::html::compare::page(m) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: cannot draw the page: {e:#}");
            return Err(1);
        }
    };
    let mut written = Vec::new();
    for (name, bytes) in [
        ("compare.html", html),
        (
            "compare.md",
            crate::export::compare::markdown(m).into_bytes(),
        ),
    ] {
        let path = dir.join(name);
        if let Err(e) = store::write_via_temp(&path, &bytes, false) {
            eprintln!("error: cannot write '{}': {e:#}", path.display());
            return Err(1);
        }
        written.push(path);
    }
    Ok(written)
}

/// Two files: the pair's detailed table, its noise and probes, and its gate.
fn two(
    base: &Path,
    new: &Path,
    (b, n): (&RunResults, &RunResults),
    threshold: f64,
    allow_untested: bool,
) -> anyhow::Result<i32> {
    let cmp = compare(b, n, threshold);
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
            row.push(c.verdict(threshold));
            row
        })
        .collect();
    let mut footnotes = Vec::new();
    for k in &cmp.only_base {
        footnotes.push(format!("only in {}: {k}", base.display()));
    }
    for k in &cmp.only_new {
        footnotes.push(format!("only in {}: {k}", new.display()));
    }
    for k in &cmp.not_compared {
        footnotes.push(format!("not compared: {k}"));
    }
    for (file, finished) in [(base, cmp.base_finished), (new, cmp.new_finished)] {
        if !finished {
            footnotes.push(format!(
                "{} is an unfinished run (interrupted): only the cells it kept are compared",
                file.display()
            ));
        }
    }
    let t = Table {
        title: format!("{} -> {}", base.display(), new.display()),
        note: format!(
            "medians of per-run figures (ops/s of closed-loop cells only, p99 where every \
             repetition had {} samples beyond it); p: of the change relative to the point's \
             other models in the same rounds (the figure itself for a model alone at its \
             point), the larger of Mann-Whitney U over the rounds and a normal test with the \
             run-to-run noise below, adjusted for a false discovery rate of {ALPHA} over all \
             {} tests; regression: significant, worse by more than {threshold}% both as \
             measured and relative to the point's others (a model alone: beyond the \
             calibration probes' drift too), and not within a jump the model showed within \
             a run",
            crate::stats::claims::TAIL_MIN,
            cmp.tests
        ),
        header: header.iter().map(|s| s.to_string()).collect(),
        rows,
        footnotes,
    };
    let mut out = crate::export::term_table(&t);
    out.push('\n');
    match cmp.probes.as_ref() {
        None => out += "calibration probes: not in both files (runs before they were kept)\n",
        Some(pd) => {
            let list: Vec<String> = pd
                .probes
                .iter()
                .map(|(n, b, x, pct, _)| format!("{n} {b:.0} -> {x:.0} ns ({pct:+.1}%)"))
                .collect();
            out += &format!("calibration probes: {}\n", list.join(", "));
            if let Some(t) = pd.text() {
                out += &format!("  {t}\n");
            }
        }
    }
    if !cmp.noise.is_empty() {
        out += "run-to-run noise (per run, estimated from every cell's change; the rounds of \
                one run cannot show it) and the smallest change a lone cell could show:\n";
        for n in &cmp.noise {
            let _ = writeln!(
                out,
                "  {} {}{}: {} ({} tests{}){}",
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
                    .map(|p| format!("; changes under {} are invisible", pct_text(p)))
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
        let _ = writeln!(
            out,
            "{label} in {workload} scattered over its {points} points between the runs, beyond \
             its workload's noise: {} per run (its changes there are judged against that)",
            figs.join(", ")
        );
    }
    for (which, u) in &cmp.unstable {
        let _ = writeln!(
            out,
            "jumped between two levels within {which}: {}",
            u.text()
        );
    }
    let _ = writeln!(
        out,
        "{} tests over {} cells, false discovery rate kept at {ALPHA}; {} cell(s) not \
         compared because a run was disturbed there",
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
    let fails = cmp.gate(threshold, allow_untested);
    out.push('\n');
    if fails.is_empty() {
        let _ = writeln!(
            out,
            "no significant regression beyond {threshold}% in {} common cells",
            cmp.cells.len()
        );
        let allowed = cmp.untested().count()
            + cmp.only_base.len()
            + cmp.only_new.len()
            + cmp.no_longer_measured.len();
        if allowed > 0 {
            let _ = writeln!(
                out,
                "passed with --allow-untested: {} untested change(s) beyond {threshold}%, {} \
                 cell(s) in one file only, {} no longer measured",
                cmp.untested().count(),
                cmp.only_base.len() + cmp.only_new.len(),
                cmp.no_longer_measured.len()
            );
        }
    } else {
        for f in &fails {
            let _ = writeln!(out, "FAIL: {f}");
        }
    }
    super::stdout::print(&out)?;
    Ok(if fails.is_empty() { 0 } else { 1 })
}
