//! Markdown: the same tables as the terminal, as GitHub tables, with the run's context.

use super::table::{metric_tables, Table};
use super::Exporter;
use crate::results::RunResults;

pub struct Markdown;

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

pub fn render_table(t: &Table) -> String {
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
    fn render(&self, run: &RunResults) -> anyhow::Result<Vec<u8>> {
        let mut out = String::from("# ringside results\n\n");
        out += &format!(
            "- ringside {} ({}), profile `{}`, {}\n- command: `{}`\n- kernel {}, {} CPUs; measured thread on CPU {}, helper CPU {}\n- timer overhead {} ns per interval (subtracted from every per-op latency), clocksource {}\n\n",
            run.ringside.version,
            run.ringside.git,
            run.profile,
            if run.finished { "finished" } else { "**unfinished** (interrupted)" },
            run.command.join(" "),
            run.env.kernel_release(),
            run.env.cpus,
            run.plan.measured,
            run.plan.helper.map(|c| c.to_string()).unwrap_or_else(|| "none".into()),
            run.timer.overhead_ns,
            run.timer.clocksource,
        );
        for t in metric_tables(run) {
            out += &render_table(&t);
            out.push('\n');
        }
        Ok(out.into_bytes())
    }
}
