//! HTML: one self-contained file (inline CSS, charts as inline SVG, no script, no font, no
//! URL), readable on a laptop and printable. Sections per suite and workload, each with its
//! charts (`charts.rs` data drawn by `svg.rs`), computed verdicts, tables and the cells that
//! were not measured with their reasons; an environment panel and a "reproduce" block.

pub mod svg;
pub(crate) mod waterfall;

use super::charts::{self, Chart};
use super::table::{metric_tables_by_workload, Table};
use super::verdict;
use super::Exporter;
use crate::registry;
use crate::results::{RunResults, Status};
use crate::stats::compare::flatten;
use std::fmt::Write;

const TEMPLATE: &str = include_str!("report.html");

pub(crate) struct Html;

pub(crate) use super::escape::esc;

/// An anchor id from a workload id ("micro.pipe" -> "w-micro-pipe").
fn anchor(w: &str) -> String {
    format!(
        "w-{}",
        w.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect::<String>()
    )
}

fn table_html(t: &Table, out: &mut String) {
    out.push_str("<div class=\"tablewrap\"><table><thead><tr>");
    for h in &t.header {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    for r in &t.rows {
        out.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            if i == 0 {
                let _ = write!(out, "<th>{}</th>", esc(c));
            } else if c.contains(super::table::THIN) {
                let _ = write!(
                    out,
                    "<td class=\"thin\" title=\"fewer than {} samples beyond this percentile: mostly one hiccup\">{}</td>",
                    super::table::THIN_TAIL,
                    esc(c)
                );
            } else {
                let _ = write!(out, "<td>{}</td>", esc(c));
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    if !t.footnotes.is_empty() {
        out.push_str("<ul class=\"footnotes\">");
        for f in &t.footnotes {
            let _ = write!(out, "<li>{}</li>", esc(f));
        }
        out.push_str("</ul>");
    }
}

fn kv(out: &mut String, rows: &[(String, String)]) {
    out.push_str("<table class=\"kv\"><tbody>");
    for (k, v) in rows {
        let _ = write!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
    }
    out.push_str("</tbody></table>");
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

/// The findings section: per suite, one line per workload linking to its section, and how
/// far to trust the run.
fn findings_html(run: &RunResults, b: &mut String) {
    b.push_str("<section id=\"findings\"><h2>Findings</h2><p class=\"note\">Computed from the cells of this run on this machine; each links to its section.</p>");
    for s in super::findings::for_run(run) {
        let _ = write!(b, "<h4>{} suite</h4><ul class=\"findings\">", esc(&s.suite));
        for l in &s.lines {
            let evidence = if l.text == l.short {
                String::new()
            } else {
                format!(
                    "<details><summary>evidence</summary>{}</details>",
                    esc(&l.text)
                )
            };
            let _ = write!(
                b,
                "<li{}><a href=\"#{}\">{}</a>: {}{evidence}</li>",
                if l.within_noise {
                    " class=\"noise\""
                } else {
                    ""
                },
                anchor(&l.workload),
                esc(&l.workload),
                esc(&l.short)
            );
        }
        b.push_str("</ul>");
    }
    let _ = write!(
        b,
        "<p class=\"trust\"><b>How far to trust this run:</b> {}</p></section>",
        esc(&super::findings::trust_text(run))
    );
}

/// Rows of the collapsed pairwise table at most, per workload (a page stays small).
const PAIR_ROWS: usize = 200;

/// Every pair of models per point, collapsed under the verdicts.
fn pairwise_html(w: &str, cases: &[&crate::results::CaseResult], b: &mut String) {
    let (what, pts) = super::findings::pairwise(w, cases, PAIR_ROWS);
    let total: usize = pts.iter().map(|(_, _, all)| all).sum();
    if total == 0 {
        return;
    }
    let _ = write!(
        b,
        "<details class=\"pairs\"><summary>every pair of models ({total}), by {}</summary><div class=\"tablewrap\"><table><thead><tr><th>point</th><th>ahead</th><th>behind</th><th>by</th><th>evidence</th></tr></thead><tbody>",
        esc(&what)
    );
    let mut n = 0;
    'all: for (at, pairs, _) in &pts {
        for p in pairs {
            if n == PAIR_ROWS {
                break 'all;
            }
            n += 1;
            let r = p.times;
            let _ = write!(
                b,
                "<tr><th>{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(if at.is_empty() { "-" } else { at }),
                esc(&p.better),
                esc(&p.worse),
                super::table::fmt_times(r),
                esc(&super::findings::pair_evidence(&p.confidence))
            );
        }
    }
    b.push_str("</tbody></table></div>");
    if total > n {
        let _ = write!(
            b,
            "<p class=\"note\">{} more pairs not listed.</p>",
            total - n
        );
    }
    b.push_str("</details>");
}

/// One chart as a figure; `data-series` is the number of series drawn.
fn figure(c: &Chart, out: &mut String) -> anyhow::Result<()> {
    let svg = svg::draw(c, true)?;
    let _ = write!(
        out,
        "<figure class=\"chart\" id=\"c-{}\" data-chart=\"{}\" data-series=\"{}\">{svg}<figcaption>series: {}{}</figcaption></figure>",
        esc(&c.id),
        esc(&c.id),
        c.series.len(),
        esc(&c
            .series
            .iter()
            .map(|s| s.label.as_str())
            .collect::<Vec<_>>()
            .join(", ")),
        if c.left_out.is_empty() {
            String::new()
        } else {
            format!(
                "; {} cell(s) of this workload not drawn (not measured; listed below)",
                c.left_out.len()
            )
        }
    );
    Ok(())
}

/// A ladder's waterfalls, one per point (nothing for other workloads): each a figure whose
/// caption gives the key and every gap's whole reason.
fn waterfalls_html(
    w: &str,
    cases: &[&crate::results::CaseResult],
    out: &mut String,
) -> anyhow::Result<()> {
    let ws = super::waterfall::for_cases(w, cases);
    if ws.is_empty() {
        return Ok(());
    }
    let _ = write!(
        out,
        "<h4>What each knob bought</h4><p class=\"note\">{}</p><div class=\"charts\">",
        esc(waterfall::KEY)
    );
    for wf in &ws {
        let svg = waterfall::draw(wf, true)?;
        let gaps: Vec<String> = wf
            .rows
            .iter()
            .filter_map(|r| match &r.bar {
                super::waterfall::Bar::Gap { why } => Some(format!("{}: {why}", r.model)),
                _ => None,
            })
            .collect();
        let _ = write!(
            out,
            "<figure class=\"chart waterfall\" id=\"c-{}\" data-waterfall=\"{}\" data-rungs=\"{}\">{svg}<figcaption>{}</figcaption></figure>",
            esc(&wf.id),
            esc(&wf.id),
            wf.rows.len(),
            if gaps.is_empty() {
                "every rung measured".to_string()
            } else {
                format!("gaps: {}", esc(&gaps.join("; ")))
            }
        );
    }
    out.push_str("</div>");
    Ok(())
}

impl Exporter for Html {
    fn render(&self, run: &RunResults) -> anyhow::Result<Vec<u8>> {
        let mut b = String::new();
        let title = format!(
            "ringside {} run, {}{}",
            run.profile,
            run.started_utc,
            if run.finished { "" } else { " (unfinished)" }
        );
        let _ = write!(b, "<header><h1>ringside report</h1><p class=\"meta\">");
        if run.finished {
            b.push_str("<span class=\"status finished\">finished</span> ");
        } else {
            b.push_str("<span class=\"status unfinished\">unfinished: the run was interrupted; only the cells below were measured</span> ");
        }
        let _ = write!(
            b,
            "profile <b>{}</b>, started {} UTC, {} cells ({} measured)</p></header>",
            esc(&run.profile),
            esc(&run.started_utc),
            run.cases.len(),
            run.cases
                .iter()
                .filter(|c| c.status == Status::Measured)
                .count()
        );
        let workloads = charts::workloads(run);
        b.push_str("<nav><ul><li><a href=\"#findings\">findings</a></li><li><a href=\"#environment\">environment</a></li><li><a href=\"#reproduce\">reproduce</a></li>");
        for w in &workloads {
            let _ = write!(b, "<li><a href=\"#{}\">{}</a></li>", anchor(w), esc(w));
        }
        b.push_str("<li><a href=\"#not-measured\">cells not measured</a></li></ul></nav>");

        findings_html(run, &mut b);
        b.push_str("<section id=\"environment\"><h2>Environment</h2><div class=\"panel\">");
        kv(&mut b, &key_facts(run));
        let mut all = Vec::new();
        flatten("", &serde_json::to_value(&run.env)?, &mut all);
        b.push_str("<details><summary>every probed fact</summary>");
        kv(&mut b, &all);
        b.push_str("</details></div></section>");

        let _ = write!(
            b,
            "<section id=\"reproduce\"><h2>Reproduce</h2><p class=\"note\">ringside {} (git {}); the exact command of this run:</p><pre>{}</pre><p class=\"note\">Re-render this report from its results file: <code>ringside report results.json</code>.</p></section>",
            esc(&run.ringside.version),
            esc(&run.ringside.git),
            esc(&command_line(run))
        );

        let styles = charts::Styles::for_run(run);
        let mut tables: std::collections::HashMap<String, Vec<Table>> =
            metric_tables_by_workload(run).into_iter().collect();
        let mut suite = "";
        for (w, cases) in charts::by_workload(run) {
            let s = w.split('.').next().unwrap_or(w);
            if s != suite {
                if !suite.is_empty() {
                    b.push_str("</section>");
                }
                suite = s;
                let _ = write!(
                    b,
                    "<section class=\"suite\" id=\"s-{}\"><h2>{} suite</h2>",
                    esc(s),
                    esc(s)
                );
            }
            let _ = write!(
                b,
                "<section class=\"workload\" id=\"{}\"><h3>{}</h3>",
                anchor(w),
                esc(w)
            );
            if let Some(x) = registry::workload(w) {
                let _ = write!(b, "<p class=\"note\">{}</p>", esc(x.about()));
            }
            if let Some(c) = cases.first() {
                let _ = write!(b, "<p class=\"note\">one op = {}</p>", esc(&c.op));
            }
            let cs = charts::for_cases(w, &cases, &styles);
            if !cs.is_empty() {
                b.push_str("<div class=\"charts\">");
                for c in &cs {
                    figure(c, &mut b)?;
                }
                b.push_str("</div>");
            }
            waterfalls_html(w, &cases, &mut b)?;
            let vs = verdict::for_cases(w, &cases);
            if !vs.is_empty() {
                let (shown, rest) = verdict::split_shown(&vs);
                let items = |b: &mut String, vs: &[&verdict::Verdict]| {
                    for v in vs {
                        let _ = write!(
                            b,
                            "<li{}>{}</li>",
                            if v.within_noise {
                                " class=\"noise\""
                            } else {
                                ""
                            },
                            esc(&v.line())
                        );
                    }
                };
                b.push_str("<h4>Verdicts</h4><ul class=\"verdicts\">");
                items(&mut b, &shown);
                b.push_str("</ul>");
                if !rest.is_empty() {
                    let _ = write!(
                        b,
                        "<details class=\"more-verdicts\"><summary>{} more verdict line(s)\
                         </summary><ul class=\"verdicts\">",
                        rest.len()
                    );
                    items(&mut b, &rest);
                    b.push_str("</ul></details>");
                }
            }
            pairwise_html(w, &cases, &mut b);
            super::explain::html(w, &cases, &mut b)?;
            b.push_str("<h4>Tables</h4>");
            for t in tables.remove(w).unwrap_or_default().iter() {
                let _ = write!(
                    b,
                    "<p class=\"note\"><b>{}</b> — {}</p>",
                    esc(&t.title),
                    esc(&t.note)
                );
                table_html(t, &mut b);
            }
            let missing = not_measured_in(&cases);
            if !missing.is_empty() {
                b.push_str("<h4>Cells not measured</h4><ul class=\"unmeasured\">");
                for m in &missing {
                    let _ = write!(b, "<li>{}</li>", esc(m));
                }
                b.push_str("</ul>");
            }
            b.push_str("</section>");
        }
        if !suite.is_empty() {
            b.push_str("</section>");
        }
        b.push_str("<section id=\"not-measured\"><h2>Cells not measured</h2>");
        let missing = not_measured(run, None);
        if missing.is_empty() {
            b.push_str("<p class=\"note\">Every cell of this run was measured.</p>");
        } else {
            b.push_str("<ul class=\"unmeasured\">");
            for m in &missing {
                let _ = write!(b, "<li>{}</li>", esc(m));
            }
            b.push_str("</ul>");
        }
        b.push_str("</section>");
        let html = TEMPLATE
            .replacen("{{title}}", &esc(&title), 1)
            .replacen("{{body}}", &b, 1);
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
            let p = charts::params_text(c, None);
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
