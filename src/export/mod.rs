//! Exporters: results in, bytes out. Tables are built once (`table.rs`) and rendered by each
//! dialect; no exporter computes a figure.

pub mod charts;
pub(crate) mod compare;
mod csv;
pub(crate) mod explain;
pub mod findings;
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
pub mod table;
mod term;
pub mod verdict;
pub(crate) mod waterfall;

use crate::results::RunResults;

/// Output formats. Adding one is a variant here and one arm in `exporter`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The findings and a one-line-a-suite summary (the default on a terminal).
    Summary,
    /// The findings, every wide table, and the summary.
    Table,
    Markdown,
    Csv,
    Json,
    Html,
}

/// A table as aligned terminal text (for subcommands that print their own tables).
pub(crate) fn term_table(t: &table::Table) -> String {
    term::render_table(t)
}

pub trait Exporter {
    fn render(&self, run: &RunResults) -> anyhow::Result<Vec<u8>>;
}

impl Format {
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
    let p = run.env.cpu_plan.as_ref().unwrap_or(&run.plan);
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
