//! The page of many runs side by side (`compare A B C --out DIR`, `report A B C`): the
//! verdict (PASS, REGRESSION or INCONCLUSIVE), the runs, the environment facts that differ,
//! then per workload one chart per figure across the runs and the table of its cells with
//! each later run's claim. The same style sheet and figures as the run report; everything
//! shown is the [`Matrix`]'s.

use super::{anchor, figure, table_html, CSS};
use crate::analysis::compare::Matrix;
use crate::analysis::compare::Outcome;
use crate::export::compare::{charts, env_table, matrix_table, runs_table, summary_lines};
use maud::{html, PreEscaped, DOCTYPE};

/// The page, self-contained (inline CSS and SVG, no script, no URL).
pub(crate) fn page(m: &Matrix) -> anyhow::Result<Vec<u8>> {
    let cs = charts(m);
    let workloads = crate::export::compare::workloads(m);
    let mut sections = Vec::with_capacity(workloads.len());
    for w in &workloads {
        let mut figures = Vec::new();
        for c in cs.iter().filter(|c| c.workload == *w) {
            figures.push(figure(c)?);
        }
        let t = matrix_table(m, Some(w));
        sections.push(html! {
            section class="workload" id=(anchor(w)) {
                h3 { (w) }
                @if !figures.is_empty() {
                    div class="charts" { @for f in &figures { (f) } }
                }
                p class="note" { (t.note) }
                (table_html(&t))
            }
        });
    }
    let runs = runs_table(m);
    let env = env_table(m);
    let title = format!("ringside: {} runs side by side", m.runs.len());
    let verdict_class = match m.outcome() {
        Outcome::Pass => "verdict pass",
        Outcome::Inconclusive => "verdict inconclusive",
        Outcome::Regression => "verdict regression",
    };
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
                    h1 { (title) }
                    p class=(verdict_class) { strong { (crate::export::words::compare::matrix_headline(m)) } }
                    p class="meta" {
                        (m.rows.len()) " cells; each run compared with "
                        (m.runs[0].letter) ", " (m.tests) " tests in one family"
                    }
                }
                nav {
                    ul {
                        li { a href="#runs" { "runs" } }
                        li { a href="#environment" { "environment" } }
                        @for w in &workloads {
                            li { a href={ "#" (anchor(w)) } { (w) } }
                        }
                    }
                }
                section id="runs" {
                    h2 { "Runs" }
                    p class="note" { (runs.note) }
                    (table_html(&runs))
                    ul class="findings" {
                        @for l in summary_lines(m) { li { (l) } }
                    }
                }
                section id="environment" {
                    h2 { "What differs between the runs" }
                    @if env.rows.is_empty() {
                        p class="note" { "Nothing: every probed fact is the same in every run." }
                    } @else {
                        p class="note" { (env.note) }
                        (table_html(&env))
                    }
                }
                section class="suite" id="cells" {
                    h2 { "Cells" }
                    @for s in &sections { (s) }
                }
            }
        }
    };
    let mut out = page.into_string();
    out.push('\n');
    Ok(out.into_bytes())
}
