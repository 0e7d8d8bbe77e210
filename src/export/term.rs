//! Terminal tables: aligned columns, footnotes under each table.

use super::table::{metric_tables, Table};
use super::words::finding::{headline, suites, trust_text};
use super::Exporter;
use crate::analysis::Analysis;
use crate::results::RunResults;

pub(crate) struct Term;

/// The default terminal output: the findings, one line a workload, and a closing summary,
/// one line a suite; the wide tables are `--format table`'s (and the report's).
pub(crate) struct Summary;

/// Terminal width the summary wraps to.
const COLUMNS: usize = 100;

/// `text` wrapped at [`COLUMNS`]: the first line after `first`, the rest after `indent`.
fn wrap(first: &str, indent: &str, text: &str) -> String {
    let mut out = String::from(first);
    let mut col = first.chars().count();
    let mut line_start = true;
    for word in text.split(' ') {
        let n = word.chars().count();
        if !line_start && col + 1 + n > COLUMNS {
            out.push('\n');
            out.push_str(indent);
            col = indent.chars().count();
            line_start = true;
        }
        if !line_start {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += n;
        line_start = false;
    }
    out.push('\n');
    out
}

/// The closing summary, hyperfine's way: a line a suite (wrapped at [`COLUMNS`]), each
/// workload's leader in a few words (`words::finding::headline`).
pub(crate) fn summary_text(a: &Analysis) -> String {
    let mut suites: Vec<(String, Vec<String>)> = Vec::new();
    for w in &a.workloads {
        let (suite, name) = w.id.split_once('.').unwrap_or((&w.id, &w.id));
        let part = format!("{name}: {}", headline(&w.finding));
        match suites.last_mut() {
            Some((s, parts)) if s == suite => parts.push(part),
            _ => suites.push((suite.to_string(), vec![part])),
        }
    }
    let width = suites.iter().map(|(s, _)| s.len()).max().unwrap_or(0);
    let mut out = String::from("Summary: each workload's leader (points it led of those ranked)\n");
    for (s, parts) in &suites {
        out += &wrap(
            &format!("  {s:<width$}  "),
            &" ".repeat(width + 4),
            &parts.join(" · "),
        );
    }
    out
}

impl Exporter for Summary {
    fn render(&self, run: &RunResults, a: &Analysis) -> anyhow::Result<Vec<u8>> {
        let mut out = String::from(
            "Findings (wide tables: --format table; charts and evidence: report.html)\n",
        );
        for s in suites(a) {
            out += &format!("  {} suite\n", s.suite);
            for l in &s.lines {
                out += &wrap(&format!("  - {}: ", l.workload), "      ", &l.short);
            }
        }
        out += &wrap("  How far to trust this run: ", "    ", &trust_text(run, a));
        out.push('\n');
        out += &summary_text(a);
        Ok(out.into_bytes())
    }
}

/// The findings block that opens the terminal summary.
pub(crate) fn findings_text(run: &RunResults, a: &Analysis) -> String {
    let mut out = String::from("Findings (computed from the cells below)\n");
    for s in suites(a) {
        out += &format!("  {} suite\n", s.suite);
        for l in &s.lines {
            out += &format!("  - {}: {}\n", l.workload, l.short);
            if l.text != l.short {
                out += &format!("      evidence: {}\n", l.text);
            }
        }
    }
    out += &format!("  How far to trust this run: {}\n", trust_text(run, a));
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
    fn render(&self, run: &RunResults, a: &Analysis) -> anyhow::Result<Vec<u8>> {
        let tables = metric_tables(run, a);
        let mut body: Vec<String> = vec![findings_text(run, a)];
        body.extend(tables.iter().map(render_table));
        body.push(summary_text(a));
        Ok(body.join("\n").into_bytes())
    }
}
