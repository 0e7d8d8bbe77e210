//! Terminal tables: aligned columns, footnotes under each table.

use super::table::{metric_tables, Table};
use super::Exporter;
use crate::results::RunResults;

pub(crate) struct Term;

/// The findings block that opens the terminal summary.
pub(crate) fn findings_text(run: &RunResults) -> String {
    let mut out = String::from("Findings (computed from the cells below)\n");
    for s in super::findings::for_run(run) {
        out += &format!("  {} suite\n", s.suite);
        for l in &s.lines {
            out += &format!("  - {}: {}\n", l.workload, l.short);
            if l.text != l.short {
                out += &format!("      evidence: {}\n", l.text);
            }
        }
    }
    out += &format!(
        "  How far to trust this run: {}\n",
        super::findings::trust_text(run)
    );
    out
}

/// Renders one table with aligned columns (first column left, the rest right).
pub(crate) fn render_table(t: &Table) -> String {
    let ncol = t.header.len();
    let mut w = vec![0usize; ncol];
    for row in std::iter::once(&t.header).chain(&t.rows) {
        for (i, c) in row.iter().enumerate().take(ncol) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |row: &[String]| {
        row.iter()
            .enumerate()
            .map(|(i, c)| {
                if i == 0 {
                    format!("{c:<w$}", w = w[i])
                } else {
                    format!("{c:>w$}", w = w[i])
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = format!("{}\n  {}\n", t.title, t.note);
    out += &line(&t.header);
    out.push('\n');
    out += &w
        .iter()
        .map(|n| "-".repeat(*n))
        .collect::<Vec<_>>()
        .join("  ");
    out.push('\n');
    for r in &t.rows {
        out += &line(r);
        out.push('\n');
    }
    for f in &t.footnotes {
        out += &format!("  * {f}\n");
    }
    out
}

impl Exporter for Term {
    fn render(&self, run: &RunResults) -> anyhow::Result<Vec<u8>> {
        let tables = metric_tables(run);
        let mut body: Vec<String> = vec![findings_text(run)];
        body.extend(tables.iter().map(render_table));
        Ok(body.join("\n").into_bytes())
    }
}
