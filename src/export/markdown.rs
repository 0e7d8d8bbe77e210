//! Markdown: the same tables as the terminal, as GitHub tables, with the run's context.

use super::table::{metric_tables_by_workload, Table};
use super::words::finding::{suites, trust_text};
use super::words::verdict::split_shown;
use super::Exporter;
use super::{charts, words};
use crate::analysis::Analysis;
use crate::results::RunResults;

pub(crate) struct Markdown;

/// Where a chart's SVG goes, relative to the report: `charts/<chart id>.svg`.
pub(crate) fn chart_file(id: &str) -> String {
    format!("charts/{id}.svg")
}

/// The anchor GitHub gives the heading "## micro.pipe": lower case, punctuation but `-` and
/// `_` dropped, spaces as `-`.
fn gh_anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

pub(crate) fn render_table(t: &Table) -> String {
    let mut out = format!("### {}\n\n_{}_\n\n", t.title, cell(&t.note));
    out += &format!(
        "| {} |\n",
        t.header
            .iter()
            .map(|h| cell(h))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let align: Vec<&str> = (0..t.header.len())
        .map(|i| if i == 0 { ":---" } else { "---:" })
        .collect();
    out += &format!("| {} |\n", align.join(" | "));
    for r in &t.rows {
        out += &format!(
            "| {} |\n",
            r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
        );
    }
    if !t.footnotes.is_empty() {
        out.push('\n');
        for f in &t.footnotes {
            out += &format!("- {}\n", cell(f));
        }
    }
    out
}

impl Exporter for Markdown {
    fn render(&self, run: &RunResults, a: &Analysis) -> anyhow::Result<Vec<u8>> {
        let mut out = String::from("# ringside results\n\n## Bottom line\n\n");
        let bottom = super::words::bottom::lines(a);
        let (confidence, answers) = bottom.split_last().expect("the confidence line");
        for l in answers {
            out += &format!("- {}\n", cell(l));
        }
        out += &format!("\n**{}**\n\n", cell(confidence));
        out += &format!(
            "- ringside {} ({}), profile `{}`, {}\n- command: `{}`\n{}- kernel {}, {} CPUs; measured thread on CPU {}, helper CPU {}\n{}- timer overhead {} ns per interval (subtracted from every per-op latency), clocksource {}\n\n",
            run.ringside.version,
            run.ringside.git,
            run.profile,
            if run.finished { "finished" } else { "**unfinished** (interrupted)" },
            run.command.join(" "),
            run.overrides_text()
                .map(|t| format!("- the profile's points overridden: {t}\n"))
                .unwrap_or_default(),
            run.env.kernel_release(),
            run.env.cpus,
            run.plan.measured,
            run.plan.helper.map(|c| c.to_string()).unwrap_or_else(|| "none".into()),
            super::cpu_plan_text(run)
                .map(|t| format!("- CPU plan: {t}\n"))
                .unwrap_or_default(),
            run.timer.overhead_ns,
            run.timer.clocksource,
        );
        for (k, v) in super::hosts::rows(run) {
            out += &format!("- {k}: {}\n", cell(&v));
        }
        if !run.hosts.is_empty() {
            out.push('\n');
        }
        out += "## Findings\n\n";
        for s in suites(a) {
            out += &format!("**{} suite**\n\n", s.suite);
            for l in &s.lines {
                out += &format!(
                    "- [{}](#{}): {}\n",
                    l.workload,
                    gh_anchor(&l.workload),
                    cell(&l.short)
                );
                if l.text != l.short {
                    out += &format!("  - evidence: {}\n", cell(&l.text));
                }
            }
            out.push('\n');
        }
        out += &format!(
            "How far to trust this run: {}\n\n",
            cell(&trust_text(run, a))
        );
        let mut tables: std::collections::HashMap<String, Vec<Table>> =
            metric_tables_by_workload(run, a).into_iter().collect();
        let styles = charts::Styles::for_run(run);
        for (w, cases) in charts::by_workload(run) {
            out += &format!("## {w}\n\n");
            for c in charts::for_cases(w, &cases, &styles, a) {
                out += &format!("![{}]({})\n\n", c.title, chart_file(&c.id));
            }
            for wf in a
                .workload(w)
                .map(super::waterfall::for_workload)
                .unwrap_or_default()
            {
                out += &format!("![{}]({})\n\n", wf.title, chart_file(&wf.id));
            }
            let verdicts = a.workload(w).map(words::verdicts_of).unwrap_or_default();
            if !verdicts.is_empty() {
                out += "Verdicts:\n\n";
                let (shown, rest) = split_shown(&verdicts);
                for v in shown {
                    out += &format!("- {}\n", cell(&v.line()));
                }
                if !rest.is_empty() {
                    out += &format!(
                        "\n<details><summary>{} more verdict line(s)</summary>\n\n",
                        rest.len()
                    );
                    for v in rest {
                        out += &format!("- {}\n", cell(&v.line()));
                    }
                    out += "\n</details>\n";
                }
                out.push('\n');
            }
            if let Some(wa) = a.workload(w) {
                out += &super::explain::markdown(wa, &cases);
            }
            for t in tables.remove(w).unwrap_or_default().iter() {
                out += &render_table(t);
                out.push('\n');
            }
        }
        let missing = super::html::not_measured(run, None);
        if !missing.is_empty() {
            out += "## Cells not measured\n\n";
            for m in missing {
                out += &format!("- {}\n", cell(&m));
            }
            out.push('\n');
        }
        Ok(out.into_bytes())
    }
}
