//! Exporters: results and their analysis in, bytes out. Tables are built once (`table.rs`)
//! and rendered by each dialect; the analysis (`crate::analysis`) is computed once per run
//! and worded in `words/`; no exporter computes a figure or a claim.

pub mod charts;
pub(crate) mod compare;
mod csv;
pub(crate) mod explain;
mod format;
pub(crate) mod hgrm;
pub(crate) mod hosts;
pub mod html;
mod json;
mod ladder;
pub(crate) mod load;
pub(crate) mod markdown;
#[cfg(test)]
mod readme;
mod rows;
pub mod table;
mod term;
pub(crate) mod waterfall;
pub mod words;

use crate::analysis::Analysis;
use crate::results::RunResults;

/// Output formats (`--format`). Adding one is a file, a variant here and one arm in
/// `exporter`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The findings and a one-line-a-suite summary.
    Summary,
    /// The findings, every table (wide), and the summary.
    Table,
    Markdown,
    Csv,
    Json,
    /// report.html, written beside results.json (not printed).
    #[value(skip)]
    Html,
}

/// A table as aligned terminal text (for subcommands that print their own tables).
pub(crate) fn term_table(t: &table::Table) -> String {
    term::render_table(t)
}

/// One format: words and draws a run and its analysis (computed once, by the caller).
pub trait Exporter {
    fn render(&self, run: &RunResults, a: &Analysis) -> anyhow::Result<Vec<u8>>;
}

impl Format {
    /// Analyses `run` and renders it: for one format of one run (tests, tools); who renders
    /// several formats analyses once and calls [`Format::exporter`].
    pub fn render(self, run: &RunResults) -> anyhow::Result<Vec<u8>> {
        self.exporter().render(run, &Analysis::of(run))
    }

    pub fn exporter(self) -> &'static dyn Exporter {
        match self {
            Format::Summary => &term::Summary,
            Format::Table => &term::Term,
            Format::Markdown => &markdown::Markdown,
            Format::Csv => &csv::Csv,
            Format::Json => &json::Json,
            Format::Html => &html::Html,
        }
    }
}

/// The run's CPU plan in words, for the environment panels: "server CPU 3; load generator
/// CPUs 0-2,4-6 (6 threads); SQPOLL poller CPU 7; left idle: 7 (SMT siblings of the server's
/// core); machine: 8 CPUs, 4 cores, SMT, 1 NUMA node". `None` for results written before the
/// plan recorded its sets (their panels keep the measured/helper line).
pub(crate) fn cpu_plan_text(run: &RunResults) -> Option<String> {
    use crate::measure::topology::list_string;
    let p = &run.plan;
    if p.server.is_empty() {
        return None;
    }
    let threads = p.load.len();
    let mut s = format!(
        "server CPU {}; load generator CPU{} {} ({} {} thread{})",
        list_string(&p.server),
        if threads == 1 { "" } else { "s" },
        list_string(&p.load),
        threads,
        match run.load_engine {
            Some(crate::load::Engine::Uring) => "io_uring",
            _ => "epoll",
        },
        if threads == 1 { "" } else { "s" },
    );
    if p.shared() {
        s += if p.shared_requested {
            ", sharing the server's CPU (--allow-shared)"
        } else {
            ", sharing the server's CPU (no other CPU to give it)"
        };
    }
    if let Some(c) = p.sqpoll_cpu() {
        s += &format!("; SQPOLL poller CPU {c}");
    }
    if !p.idle.is_empty() {
        s += &format!(
            "; left idle: {} (SMT siblings of the server's core)",
            list_string(&p.idle)
        );
    }
    if let Some(t) = &run.env.topology {
        s += &format!(
            "; machine: {} CPUs online ({} allowed), {} cores, {}, {} NUMA node{}",
            t.online.len(),
            t.allowed.len(),
            t.cores.len(),
            if t.smt() { "SMT" } else { "no SMT" },
            t.nodes.len(),
            if t.nodes.len() == 1 { "" } else { "s" },
        );
    }
    Some(s)
}
