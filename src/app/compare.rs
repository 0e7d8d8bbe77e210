//! `ringside compare BASE.json NEW.json [--threshold PCT] [--allow-untested]`: per common
//! cell, the change in median latency and ops/s with its significance, the cells only one run
//! has, and what differs between the two environments. Exit 1 when the gate fails (see
//! [`crate::stats::compare::Comparison::gate`]: a significant regression beyond the threshold,
//! a measured cell that failed, an unfinished NEW, nothing compared; and unless
//! `--allow-untested`, a change beyond the threshold too few repetitions to test and cells
//! only one file has), 2 for a bad file or threshold.

use crate::export::table::{fmt_ns, fmt_rate, Table};
use crate::results::store;
use crate::stats::compare::{compare, Change, Method, ALPHA};
use std::fmt::Write;
use std::path::Path;

/// The change with its 95% bootstrap interval where the repetitions give one.
fn pct(c: &Change) -> String {
    match c.ci_pct {
        Some((lo, hi)) => format!("{:+.1}% [{lo:+.1}, {hi:+.1}]", c.pct),
        None => format!("{:+.1}%", c.pct),
    }
}

fn p(c: &Change) -> String {
    match (c.method, c.p) {
        (Method::MannWhitney, Some(p)) if p < 0.001 => "<0.001".into(),
        (Method::MannWhitney, Some(p)) => format!("{p:.3}"),
        _ if c.significant => "spreads apart".into(),
        _ => "spreads overlap".into(),
    }
}

pub fn run(base: &Path, new: &Path, threshold: f64, allow_untested: bool) -> anyhow::Result<i32> {
    if !threshold.is_finite() || threshold < 0.0 {
        eprintln!("error: --threshold {threshold} is not a percentage >= 0 (e.g. 5)");
        return Ok(2);
    }
    let load = |p: &Path| store::load(p).map_err(|e| eprintln!("error: {e:#}"));
    let (Ok(b), Ok(n)) = (load(base), load(new)) else {
        return Ok(2);
    };
    let cmp = compare(&b, &n, threshold);
    let header = [
        "cell",
        "p50 base",
        "p50 new",
        "p50 change [95% CI]",
        "p",
        "ops/s base",
        "ops/s new",
        "ops/s change [95% CI]",
        "p",
        "verdict",
    ];
    let rows = cmp
        .cells
        .iter()
        .map(|c| {
            vec![
                c.cell.clone(),
                fmt_ns(c.p50.base),
                fmt_ns(c.p50.new),
                pct(&c.p50),
                p(&c.p50),
                fmt_rate(c.ops.base),
                fmt_rate(c.ops.new),
                pct(&c.ops),
                p(&c.ops),
                if c.regression {
                    "REGRESSION".into()
                } else if c.improvement {
                    "improved".into()
                } else if let Some(why) = &c.untested {
                    format!("UNTESTED: {why}")
                } else if c.p50.significant || c.ops.significant {
                    format!("changed within {threshold}%")
                } else if let Some((nb, nn)) = c.p50.too_few.or(c.ops.too_few) {
                    let n = if nb == nn {
                        format!("n={nb}")
                    } else {
                        format!("n={nb} and {nn}")
                    };
                    format!("within {threshold}% ({n}: too few to test)")
                } else {
                    "no significant change".into()
                },
            ]
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
            "median of per-run p50 and ops/s; p: two-sided Mann-Whitney U on per-run values \
             (alpha {ALPHA}); regression: significant and worse by more than {threshold}%"
        ),
        header: header.iter().map(|s| s.to_string()).collect(),
        rows,
        footnotes,
    };
    let mut out = crate::export::term_table(&t);
    out.push('\n');
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
