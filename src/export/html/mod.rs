//! HTML: one self-contained file (inline CSS, charts as inline SVG, no script, no font, no
//! URL), readable on a laptop and printable. Sections per suite and workload, each with its
//! charts (`charts.rs` data drawn by `svg.rs`), computed verdicts, tables and the cells that
//! were not measured with their reasons; an environment panel and a "reproduce" block.
//! The markup is maud's: every text is escaped where it is written, and only markup of our own
//! (plotters' SVG, the style sheet) goes in as `PreEscaped`.

pub(crate) mod compare;
pub mod svg;
pub(crate) mod waterfall;

use super::charts::{self, Chart};
use super::table::{metric_tables_by_workload, Table};
use super::words::finding::{line, pair_evidence, pairs_basis, suites, trust_text};
use super::words::verdict::{split_shown, Said};
use super::Exporter;
use crate::analysis::compare::flatten;
use crate::analysis::{Analysis, PAIR_ROWS};
use crate::registry;
use crate::results::{RunResults, Status};
use maud::{html, Markup, PreEscaped, DOCTYPE};

pub(crate) struct Html;

/// An anchor id from a workload id ("micro.pipe" -> "w-micro-pipe").
fn anchor(w: &str) -> String {
    format!(
        "w-{}",
        w.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect::<String>()
    )
}

fn table_html(t: &Table) -> Markup {
    html! {
        div class="tablewrap" {
            table {
                thead { tr { @for h in &t.header { th { (h) } } } }
                tbody {
                    @for r in &t.rows {
                        tr {
                            @for (i, c) in r.iter().enumerate() {
                                @if i == 0 {
                                    th { (c) }
                                } @else if c.contains(super::table::THIN) {
                                    td class="thin" title={
                                        "fewer than " (super::table::THIN_TAIL)
                                        " samples beyond this percentile: mostly one hiccup"
                                    } { (c) }
                                } @else {
                                    td { (c) }
                                }
                            }
                        }
                    }
                }
            }
        }
        @if !t.footnotes.is_empty() {
            ul class="footnotes" { @for f in &t.footnotes { li { (f) } } }
        }
    }
}

fn kv(rows: &[(String, String)]) -> Markup {
    html! {
        table class="kv" { tbody { @for (k, v) in rows { tr { th { (k) } td { (v) } } } } }
    }
}

/// The environment facts a reader needs first.
pub(crate) fn key_facts(run: &RunResults) -> Vec<(String, String)> {
    let e = &run.env;
    let mitigations = match &e.mitigations {
        crate::env::Reading::Value(m) => {
            let vulnerable: Vec<&str> = m
                .iter()
                .filter(|(_, t)| t.starts_with("Vulnerable"))
                .map(|(k, _)| k.as_str())
                .collect();
            let mitigated = m.values().filter(|t| t.starts_with("Mitigation")).count();
            format!(
                "{} entries: {mitigated} mitigated, {} vulnerable{}",
                m.len(),
                vulnerable.len(),
                if vulnerable.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", vulnerable.join(", "))
                }
            )
        }
        crate::env::Reading::Unavailable(why) => format!("unavailable: {why}"),
    };
    vec![
        ("kernel".into(), e.kernel_release()),
        ("CPU".into(), format!("{} ({} CPUs)", e.cpu_model, e.cpus)),
        ("SMT".into(), e.smt_active.to_string()),
        ("governor".into(), e.governor.to_string()),
        ("virtualized".into(), e.virtualized.to_string()),
        ("mitigations".into(), mitigations),
        ("io_uring".into(), e.io_uring.to_string()),
        ("SQPOLL".into(), e.sqpoll.to_string()),
        ("perf syscall counter".into(), e.perf_syscalls.to_string()),
        (
            "CPU plan".into(),
            super::cpu_plan_text(run).unwrap_or_else(|| {
                format!(
                    "measured thread on CPU {}, helper {}",
                    run.plan.measured,
                    run.plan
                        .helper
                        .map(|c| format!("on CPU {c}"))
                        .unwrap_or_else(|| "none (1-CPU plan)".into())
                )
            }),
        ),
        (
            "timer".into(),
            format!(
                "overhead {} ns per interval (subtracted), resolution {} ns, clocksource {}",
                run.timer.overhead_ns, run.timer.resolution_ns, run.timer.clocksource
            ),
        ),
        ("profile".into(), run.profile.clone()),
        ("started (UTC)".into(), run.started_utc.clone()),
    ]
    .into_iter()
    .chain(
        e.contender_cpu
            .clone()
            .map(|c| ("contender CPU from".to_string(), c)),
    )
    .chain(
        run.overrides_text()
            .map(|t| ("points overridden".to_string(), t)),
    )
    .chain(super::hosts::rows(run))
    .collect()
}

/// The shell command that reproduces the run (argv, quoted where needed).
pub(crate) fn command_line(run: &RunResults) -> String {
    run.command
        .iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=,:@+".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The bottom line the report opens with: one sentence per question the run answered, in
/// numbers, and the confidence in one line (`words::bottom`).
fn bottom_html(a: &Analysis) -> Markup {
    let lines = super::words::bottom::lines(a);
    let (confidence, answers) = lines.split_last().expect("the confidence line");
    html! {
        section id="bottom-line" class="bottom" {
            h2 { "Bottom line" }
            ul class="answers" {
                @for l in answers {
                    li { (l) }
                }
            }
            p class={ "confidence " (confidence_class(a)) } { b { (confidence) } }
        }
    }
}

/// The confidence line's class, for its colour.
fn confidence_class(a: &Analysis) -> &'static str {
    match a.bottom.level {
        crate::analysis::bottom::Level::High => "high",
        crate::analysis::bottom::Level::Reduced => "reduced",
        crate::analysis::bottom::Level::Low => "low",
    }
}

/// The findings section: per suite, one line per workload linking to its section, and how
/// far to trust the run.
fn findings_html(run: &RunResults, a: &Analysis) -> Markup {
    html! {
        section id="findings" {
            h2 { "Findings" }
            p class="note" {
                "Computed from the cells of this run on this machine; each links to its section."
            }
            @for s in suites(a) {
                h4 { (s.suite) " suite" }
                ul class="findings" {
                    @for l in &s.lines {
                        li class=[l.within_noise.then_some("noise")] {
                            a href={ "#" (anchor(&l.workload)) } { (l.workload) }
                            ": " (l.short)
                            @if l.text != l.short {
                                details { summary { "evidence" } (l.text) }
                            }
                        }
                    }
                }
            }
            p class="trust" {
                b { "How far to trust this run:" } " " (trust_text(run, a))
            }
        }
    }
}

/// Every pair of models per point, collapsed under the verdicts: at most
/// [`PAIR_ROWS`] rows per workload (a page stays small).
fn pairwise_html(w: &crate::analysis::Workload) -> Markup {
    let Some(p) = &w.pairs else {
        return Markup::default();
    };
    let (what, pts) = (pairs_basis(&w.facts, &p.basis), &p.points);
    let total: usize = pts.iter().map(|(_, _, all)| all).sum();
    if total == 0 {
        return Markup::default();
    }
    let listed: Vec<_> = pts
        .iter()
        .flat_map(|(at, pairs, _)| pairs.iter().map(move |p| (at, p)))
        .take(PAIR_ROWS)
        .collect();
    html! {
        details class="pairs" {
            summary { "every pair of models (" (total) "), by " (what) }
            div class="tablewrap" {
                table {
                    thead {
                        tr {
                            th { "point" } th { "ahead" } th { "behind" } th { "by" }
                            th { "evidence" }
                        }
                    }
                    tbody {
                        @for (at, p) in &listed {
                            tr {
                                th { (if at.is_empty() { "-" } else { at.as_str() }) }
                                td { (p.better) }
                                td { (p.worse) }
                                td { (super::table::fmt_times(p.times)) }
                                td { (pair_evidence(&p.confidence)) }
                            }
                        }
                    }
                }
            }
            @if total > listed.len() {
                p class="note" { (total - listed.len()) " more pairs not listed." }
            }
        }
    }
}

/// One chart as a figure; `data-series` is the number of series drawn. It is drawn twice,
/// for a laptop's column and a phone's width (the style sheet shows one), each with its
/// axes as data: scale, title and tick labels (`|`-separated), for whoever checks them.
fn figure(c: &Chart) -> anyhow::Result<Markup> {
    let labels = c
        .series
        .iter()
        .map(|s| s.label.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let mut drawn = Vec::with_capacity(2);
    for (layout, class) in [(svg::Layout::Wide, "wide"), (svg::Layout::Narrow, "narrow")] {
        // Markup of our own: plotters' SVG backend escapes the text it writes.
        let svg = PreEscaped(svg::draw_in(c, layout, true)?);
        let ax = svg::axes(c, layout);
        let scale = |log: bool| if log { "log" } else { "linear" };
        drawn.push(html! {
            div class={ "drawn " (class) } data-layout=(class)
                data-x-scale=(scale(ax.x.log)) data-y-scale=(scale(ax.y.log))
                data-x-title=(ax.x.title) data-y-title=(ax.y.title)
                data-x-ticks=(ax.x.labels.join("|")) data-y-ticks=(ax.y.labels.join("|")) {
                (svg)
            }
        });
    }
    let faded: Vec<&str> = c
        .series
        .iter()
        .filter(|s| s.faded)
        .map(|s| s.label.as_str())
        .collect();
    Ok(html! {
        figure class="chart" id={ "c-" (c.id) } data-chart=(c.id) data-series=(c.series.len()) {
            p class="ctitle" { (c.title) }
            @for d in &drawn { (d) }
            figcaption {
                "series: " (labels)
                @if !faded.is_empty() {
                    "; faded: decided behind the leader (" (faded.join(", ")) ")"
                }
                @if c.series.iter().any(|s| s.points.iter().any(|p| p.behind)) {
                    "; a ring marks a cell that fell behind the rate it was offered"
                }
                @if !c.left_out.is_empty() {
                    "; " (c.left_out.len())
                    " cell(s) of this workload not drawn (not measured; listed below)"
                }
            }
        }
    })
}

/// A ladder's waterfalls, one per point (nothing for other workloads): each a figure whose
/// caption gives the key and every gap's whole reason.
fn waterfalls_html(w: &crate::analysis::Workload) -> anyhow::Result<Markup> {
    let ws = super::waterfall::for_workload(w);
    if ws.is_empty() {
        return Ok(Markup::default());
    }
    let mut figures = Vec::with_capacity(ws.len());
    for wf in &ws {
        // Markup of our own: plotters' SVG backend escapes the text it writes.
        let svg = PreEscaped(waterfall::draw(wf, true)?);
        let gaps: Vec<String> = wf
            .rows
            .iter()
            .filter_map(|r| match &r.bar {
                super::waterfall::Bar::Gap { why } => Some(format!("{}: {why}", r.model)),
                _ => None,
            })
            .collect();
        figures.push(html! {
            figure class="chart waterfall" id={ "c-" (wf.id) } data-waterfall=(wf.id)
                data-rungs=(wf.rows.len()) {
                (svg)
                figcaption {
                    @if gaps.is_empty() {
                        "every rung measured"
                    } @else {
                        "gaps: " (gaps.join("; "))
                    }
                }
            }
        });
    }
    Ok(html! {
        h4 { "What each knob bought" }
        p class="note" { (waterfall::KEY) }
        div class="charts" { @for f in &figures { (f) } }
    })
}

/// A workload's verdict lines.
fn verdict_items(vs: &[&Said]) -> Markup {
    html! {
        @for v in vs {
            li class=[v.within_noise.then_some("noise")] { (v.line()) }
        }
    }
}

/// One workload's section: what it measures, its charts, verdicts, pairs, breakdowns, tables
/// and the cells not measured.
fn workload_html(
    w: &str,
    cases: &[&crate::results::CaseResult],
    styles: &charts::Styles,
    tables: &[Table],
    a: &Analysis,
) -> anyhow::Result<Markup> {
    let cs = charts::for_cases(w, cases, styles, a);
    let mut figures = Vec::with_capacity(cs.len());
    for c in &cs {
        figures.push(figure(c)?);
    }
    let wa = a
        .workload(w)
        .ok_or_else(|| anyhow::anyhow!("workload {w} was not analysed"))?;
    let waterfalls = waterfalls_html(wa)?;
    let vs = super::words::verdicts_of(wa);
    let (shown, rest) = split_shown(&vs);
    let pairs = pairwise_html(wa);
    let explain = super::explain::html(wa, cases)?;
    let missing = not_measured_in(cases);
    let finding = line(w, &wa.facts, &wa.finding);
    Ok(html! {
        section class="workload" id=(anchor(w)) {
            h3 { (w) }
            @if let Some(x) = registry::workload(w) {
                p class="note" { (x.about()) }
            }
            @if let Some(c) = cases.first() {
                p class="note" { "one op = " (c.op) }
            }
            p class="finding" { (finding.short) }
            details class="detail" {
            summary { "charts, verdicts and tables" }
            @if !figures.is_empty() {
                div class="charts" { @for f in &figures { (f) } }
            }
            (waterfalls)
            @if !vs.is_empty() {
                h4 { "Verdicts" }
                ul class="verdicts" { (verdict_items(&shown)) }
                @if !rest.is_empty() {
                    details class="more-verdicts" {
                        summary { (rest.len()) " more verdict line(s)" }
                        ul class="verdicts" { (verdict_items(&rest)) }
                    }
                }
            }
            (pairs)
            (explain)
            h4 { "Tables" }
            @for t in tables {
                p class="note" { b { (t.title) } " — " (t.note) }
                (table_html(t))
            }
            @if !missing.is_empty() {
                h4 { "Cells not measured" }
                ul class="unmeasured" { @for m in &missing { li { (m) } } }
            }
            }
        }
    })
}

/// The page's style sheet: ours, inlined (the report carries no URL of any kind).
const CSS: &str = include_str!("report.css");

impl Exporter for Html {
    fn render(&self, run: &RunResults, a: &Analysis) -> anyhow::Result<Vec<u8>> {
        let title = format!(
            "ringside {} run, {}{}",
            run.profile,
            run.started_utc,
            if run.finished { "" } else { " (unfinished)" }
        );
        let measured = run
            .cases
            .iter()
            .filter(|c| c.status == Status::Measured)
            .count();
        let workloads = charts::workloads(run);
        let mut all = Vec::new();
        flatten("", &serde_json::to_value(&run.env)?, &mut all);

        let styles = charts::Styles::for_run(run);
        let mut tables: std::collections::HashMap<String, Vec<Table>> =
            metric_tables_by_workload(run, a).into_iter().collect();
        // Workloads in run order, a section per run of one suite's workloads.
        let mut suites: Vec<(&str, Vec<Markup>)> = Vec::new();
        for (w, cases) in charts::by_workload(run) {
            let s = w.split('.').next().unwrap_or(w);
            let section =
                workload_html(w, &cases, &styles, &tables.remove(w).unwrap_or_default(), a)?;
            match suites.last_mut() {
                Some((last, sections)) if *last == s => sections.push(section),
                _ => suites.push((s, vec![section])),
            }
        }
        let mut summaries: std::collections::HashMap<String, Markup> =
            std::collections::HashMap::new();
        for (suite, c) in charts::suite_summaries(run, &styles) {
            summaries.insert(suite, figure(&c)?);
        }
        let missing = not_measured(run, None);

        let page = html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    title { (title) }
                    // Our own style sheet, not text to escape.
                    style { (PreEscaped(CSS)) }
                }
                body {
                    header {
                        h1 { "ringside report" }
                        p class="meta" {
                            @if run.finished {
                                span class="status finished" { "finished" }
                            } @else {
                                span class="status unfinished" {
                                    "unfinished: the run was interrupted; only the cells below \
                                     were measured"
                                }
                            }
                            " profile " b { (run.profile) } ", started " (run.started_utc) " UTC, "
                            (run.cases.len()) " cells (" (measured) " measured)"
                        }
                    }
                    (bottom_html(a))
                    nav {
                        ul {
                            li { a href="#bottom-line" { "bottom line" } }
                            li { a href="#findings" { "findings" } }
                            li { a href="#environment" { "environment" } }
                            li { a href="#reproduce" { "reproduce" } }
                            @for w in &workloads {
                                li { a href={ "#" (anchor(w)) } { (w) } }
                            }
                            li { a href="#not-measured" { "cells not measured" } }
                        }
                    }
                    (findings_html(run, a))
                    section id="environment" {
                        h2 { "Environment" }
                        div class="panel" {
                            (kv(&key_facts(run)))
                            details { summary { "every probed fact" } (kv(&all)) }
                        }
                    }
                    section id="reproduce" {
                        h2 { "Reproduce" }
                        p class="note" {
                            "ringside " (run.ringside.version) " (git " (run.ringside.git)
                            "); the exact command of this run:"
                        }
                        pre { (command_line(run)) }
                        p class="note" {
                            "Re-render this report from its results file: "
                            code { "ringside report results.json" } "."
                        }
                    }
                    @for (s, sections) in &suites {
                        section class="suite" id={ "s-" (s) } {
                            h2 { (s) " suite" }
                            @if let Some(f) = summaries.get(*s) {
                                p class="note" {
                                    "The server's CPU per op at an equal offered load: one point \
                                     of each open-loop workload, the highest rate every model \
                                     kept up with (where none, the lowest, laggards ringed)."
                                }
                                div class="charts summary" { (f) }
                            }
                            @for w in sections { (w) }
                        }
                    }
                    section id="not-measured" {
                        h2 { "Cells not measured" }
                        @if missing.is_empty() {
                            p class="note" { "Every cell of this run was measured." }
                        } @else {
                            ul class="unmeasured" { @for m in &missing { li { (m) } } }
                        }
                    }
                }
            }
        };
        let mut html = page.into_string();
        html.push('\n');
        Ok(html.into_bytes())
    }
}

/// Every cell that was not measured, with its status and reason (one workload or all).
pub(crate) fn not_measured(run: &RunResults, workload: Option<&str>) -> Vec<String> {
    let cases: Vec<&crate::results::CaseResult> = run
        .cases
        .iter()
        .filter(|c| workload.is_none_or(|w| c.workload == w))
        .collect();
    not_measured_in(&cases)
}

/// [`not_measured`] over given cells.
pub(crate) fn not_measured_in(cases: &[&crate::results::CaseResult]) -> Vec<String> {
    cases
        .iter()
        .filter(|c| c.status != Status::Measured)
        .map(|c| {
            let p = c.params_text();
            format!(
                "{} {}{}{}: {}: {}",
                c.workload,
                c.label(),
                if p.is_empty() { "" } else { " " },
                p,
                c.status,
                c.reason.as_deref().unwrap_or("no reason recorded")
            )
        })
        .collect()
}
