//! `run --explain` in the reports: per parameter point, one stacked bar per model (where its
//! server's sampled CPU went, by group) and one sentence naming the group whose share of own
//! work differs most between the point's leader and its runner-up. Who leads comes from the
//! findings' ranking, the difference from `analysis::explain` (its `Caption`, held by the
//! workload's analysis); this module only arranges, words and draws.

use crate::analysis::explain::{Caption, Missing, NoDifference, MIN_WORK_SAMPLES};
use crate::analysis::Workload;
use crate::measure::Measured;
use crate::results::explain::{label, Explain, GROUPS};
use crate::results::CaseResult;
use maud::{html, Markup, PreEscaped};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One point of a workload with its cells' breakdowns.
pub(crate) struct PointExplain<'a> {
    /// Its params ("conns=50 msg_bytes=64").
    pub(crate) at: String,
    /// Each cell with a breakdown (or why it has none), in run order.
    pub(crate) bars: Vec<(&'a CaseResult, &'a Measured<Explain>)>,
    /// The sentence on the leader and runner-up.
    pub(crate) sentence: String,
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// The sentence of one point ([`Caption`], decided by `analysis::explain`).
fn sentence(c: &Caption) -> String {
    match c {
        Caption::NoLeader => {
            "no leader to explain: fewer than two cells of this point could be ranked".into()
        }
        Caption::NoRunnerUp => "no runner-up to compare the leader with".into(),
        Caption::Missing(missing) => {
            let why: Vec<String> = missing
                .iter()
                .map(|(who, m)| match m {
                    Missing::Unavailable(u) => format!("{who}'s breakdown is unavailable: {u}"),
                    Missing::NotSampled => format!("{who} was not sampled"),
                })
                .collect();
            format!("no comparison: {}", why.join("; "))
        }
        Caption::Compared {
            leader,
            runner_up,
            near,
            samples,
            difference,
        } => {
            // As the findings word it: a runner-up within noise leaves no clear leader.
            let lead = if *near {
                "ranked first, within noise of the runner-up"
            } else {
                "leader"
            };
            match difference {
                Ok(d) => format!(
                    "{leader} ({lead}) spends {} of its own work in {}; {runner_up} (runner-up) \
                     {} (own work: samples neither idle nor another program's; {:.0} and {:.0} \
                     samples)",
                    pct(d.leader),
                    label(d.group),
                    pct(d.runner_up),
                    samples.0,
                    samples.1,
                ),
                Err(why) => {
                    let why = match why {
                        NoDifference::TooFewSamples { runner_up, samples } => format!(
                            "{} had {samples:.0} samples of its own work (fewer than \
                             {MIN_WORK_SAMPLES:.0}): too few to compare",
                            if *runner_up {
                                "the runner-up"
                            } else {
                                "the leader"
                            }
                        ),
                        NoDifference::NoOwnWork => "no sample of the cells' own work".into(),
                    };
                    format!("no comparison between {leader} (leader) and {runner_up}: {why}")
                }
            }
        }
    }
}

/// A workload's points that have breakdowns, in run order, with their captions as its
/// analysis `w` holds them: `cases` are its cells.
pub(crate) fn points<'a>(w: &Workload, cases: &[&'a CaseResult]) -> Vec<PointExplain<'a>> {
    w.explained
        .iter()
        .map(|x| {
            let bars: Vec<(&'a CaseResult, &'a Measured<Explain>)> = cases
                .iter()
                .filter(|c| c.params == x.params)
                .filter_map(|c| c.explain.as_ref().map(|e| (*c, e)))
                .collect();
            PointExplain {
                at: bars
                    .first()
                    .map(|(c, _)| super::charts::params_text(c, None))
                    .unwrap_or_default(),
                sentence: sentence(&x.caption),
                bars,
            }
        })
        .collect()
}

/// Each group's colour: work groups in distinct hues, idle light grey, other programs grey.
fn group_rgb(key: &str) -> (u8, u8, u8) {
    match key {
        "user" => (0, 114, 178),
        "syscall" => (213, 94, 0),
        "tcp_ip" => (0, 158, 115),
        "softirq" => (204, 121, 167),
        "scheduler" => (86, 180, 233),
        "io_uring" => (230, 159, 0),
        "copies" => (51, 34, 136),
        "lock_slow_path" => (136, 34, 85),
        "other_kernel" => (153, 153, 51),
        "other_processes" => (120, 120, 120),
        _ => (215, 215, 215), // idle
    }
}

const BAR_H: i32 = 26;
const LEFT: i32 = 150;
const BAR_W: i32 = 560;
const LEGEND_X: i32 = LEFT + BAR_W + 20;
const WIDTH: i32 = LEGEND_X + 260;

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing the explain chart: {e:?}")
}

/// One point's stacked bars as an SVG: one row per model, the groups left to right in
/// `GROUPS` order, each as wide as its share of the sampled CPU.
pub(crate) fn svg(p: &PointExplain<'_>) -> anyhow::Result<String> {
    let rows = p.bars.len() as i32;
    let height = (40 + rows * (BAR_H + 10)).max(40 + GROUPS.len() as i32 * 18) + 10;
    let mut buf = String::new();
    {
        let area =
            SVGBackend::with_string(&mut buf, (WIDTH as u32, height as u32)).into_drawing_area();
        area.fill(&WHITE).map_err(err)?;
        let font = |size| {
            ("sans-serif", size)
                .into_font()
                .into_text_style(&area)
                .pos(Pos::new(HPos::Left, VPos::Center))
        };
        area.draw(&Text::new(
            "share of the sampled CPU (0 to 100%)".to_string(),
            (LEFT, 14),
            font(13),
        ))
        .map_err(err)?;
        for (i, (c, m)) in p.bars.iter().enumerate() {
            let y = 32 + i as i32 * (BAR_H + 10);
            area.draw(&Text::new(c.label(), (8, y + BAR_H / 2), font(14)))
                .map_err(err)?;
            match m {
                Measured::Value(e) => {
                    let mut x = LEFT as f64;
                    for s in &e.groups {
                        let w = s.fraction * BAR_W as f64;
                        if w <= 0.0 {
                            continue;
                        }
                        let (r, g, b) = group_rgb(&s.name);
                        area.draw(&Rectangle::new(
                            [(x.round() as i32, y), ((x + w).round() as i32, y + BAR_H)],
                            RGBColor(r, g, b).filled(),
                        ))
                        .map_err(err)?;
                        x += w;
                    }
                }
                Measured::Unavailable { .. } => {
                    area.draw(&Text::new(
                        "unavailable (see the table)".to_string(),
                        (LEFT, y + BAR_H / 2),
                        font(13),
                    ))
                    .map_err(err)?;
                }
            }
        }
        for (i, (k, l)) in GROUPS.iter().enumerate() {
            let y = 24 + i as i32 * 18;
            let (r, g, b) = group_rgb(k);
            area.draw(&Rectangle::new(
                [(LEGEND_X, y - 6), (LEGEND_X + 12, y + 6)],
                RGBColor(r, g, b).filled(),
            ))
            .map_err(err)?;
            area.draw(&Text::new(l.to_string(), (LEGEND_X + 18, y), font(12)))
                .map_err(err)?;
        }
        area.present().map_err(err)?;
    }
    // Inline in HTML: no XML namespace needed (as the other charts).
    Ok(buf)
}

/// One row per cell: samples, each group's share, the top kernel symbols.
fn table_rows(p: &PointExplain<'_>) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["model".to_string(), "samples".to_string()];
    header.extend(GROUPS.iter().map(|(_, l)| l.to_string()));
    header.push("top kernel symbols".into());
    let rows = p
        .bars
        .iter()
        .map(|(c, m)| {
            let mut r = vec![c.label()];
            match m {
                Measured::Value(e) => {
                    r.push(e.samples.to_string());
                    r.extend(GROUPS.iter().map(|(k, _)| pct(e.fraction(k))));
                    r.push(
                        e.top_kernel
                            .iter()
                            .take(5)
                            .map(|s| format!("{} {:.1}%", s.name, s.fraction * 100.0))
                            .collect::<Vec<_>>()
                            .join(", "),
                    );
                }
                Measured::Unavailable { unavailable } => {
                    r.push(format!("unavailable: {unavailable}"));
                    r.extend(GROUPS.iter().map(|_| "-".to_string()));
                    r.push("-".into());
                }
            }
            r
        })
        .collect();
    (header, rows)
}

/// The workload's "where the CPU went" section in HTML (empty without breakdowns).
pub(crate) fn html(w: &Workload, cases: &[&CaseResult]) -> anyhow::Result<Markup> {
    let pts = points(w, cases);
    if pts.is_empty() {
        return Ok(Markup::default());
    }
    let mut figures = Vec::with_capacity(pts.len());
    for p in &pts {
        // Markup of our own: plotters' SVG backend escapes the text it writes.
        let chart = PreEscaped(svg(p)?);
        let (header, rows) = table_rows(p);
        figures.push(html! {
            figure class="chart explain" data-explain=(p.at) {
                (chart)
                figcaption {
                    @if !p.at.is_empty() { (p.at) ": " }
                    (p.sentence)
                }
            }
            details {
                summary { "breakdown and top kernel symbols" }
                table {
                    thead { tr { @for h in &header { th { (h) } } } }
                    tbody { @for r in &rows { tr { @for c in r { td { (c) } } } } }
                }
            }
        });
    }
    Ok(html! {
        h4 { "Where the CPU went (--explain)" }
        p class="note" {
            "perf cpu-clock samples with call chains on the server's CPUs (storage: the measured \
             CPU) in an untimed repetition of each cell's own, grouped by subsystem; shares of \
             the sampled CPU."
        }
        @for f in &figures { (f) }
    })
}

/// The workload's "where the CPU went" section in Markdown (empty without breakdowns).
pub(crate) fn markdown(w: &Workload, cases: &[&CaseResult]) -> String {
    let pts = points(w, cases);
    let mut out = String::new();
    if pts.is_empty() {
        return out;
    }
    out += "Where the CPU went (`--explain`: perf cpu-clock samples on the server's CPUs, \
            shares of the sampled CPU):\n\n";
    let cell = |s: &str| s.replace('|', "\\|");
    for p in &pts {
        if !p.at.is_empty() {
            out += &format!("At {}: {}\n\n", p.at, cell(&p.sentence));
        } else {
            out += &format!("{}\n\n", cell(&p.sentence));
        }
        let (header, rows) = table_rows(p);
        out += &format!(
            "| {} |\n",
            header
                .iter()
                .map(|h| cell(h))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        out += &format!(
            "| :--- |{}\n",
            " ---: |".repeat(header.len() - 2) + " :--- |"
        );
        for r in &rows {
            out += &format!(
                "| {} |\n",
                r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
            );
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Analysis;
    use serde_json::json;

    /// The analysis of a run of `cells` (storage.randread, this build's facts).
    fn analysed(cells: &[CaseResult]) -> Workload {
        let mut run =
            crate::results::store::parse(include_str!("../../tests/fixtures/results.json"))
                .unwrap();
        run.workloads.clear();
        run.cases = cells.to_vec();
        Analysis::of(&run)
            .workload("storage.randread")
            .expect("analysed")
            .clone()
    }

    /// A measured storage.randread cell (ranked by ops/s) with its repetitions and breakdown.
    fn cell(model: &str, ops: f64, explain: serde_json::Value) -> CaseResult {
        serde_json::from_value(json!({
            "workload": "storage.randread", "model": model,
            "params": {"block_bytes": 4096, "depth": 1},
            "status": "measured", "op": "one read", "knobs": {}, "warmups": 0,
            "repetitions": 6,
            "latency_ns": {"min": 1.0, "p50": 10.0, "p90": 10.0, "p99": 20.0, "p999": 20.0,
                           "max": 20.0, "mean": 10.0, "stddev": 1.0},
            "run_p50_ns": {"median": 10.0, "min": 10.0, "max": 10.0, "mad": 0.0},
            "ops_per_sec": {"median": ops, "min": ops * 0.99, "max": ops * 1.01, "mad": 0.0},
            "cpu_ns_per_op": {"total": 100.0, "user": 1.0, "sys": 1.0},
            "ctx_switches_per_op": 0.0, "syscalls_per_op": 1.0, "ops_total": 1000,
            "counters": {}, "histogram": "",
            "runs_ops_per_sec": [ops * 0.99, ops * 0.995, ops, ops * 1.005, ops * 1.01, ops * 1.002],
            "warnings": [],
            "explain": explain,
        }))
        .unwrap()
    }

    fn breakdown(samples: u64, groups: &[(&str, f64)]) -> serde_json::Value {
        let g: Vec<_> = GROUPS
            .iter()
            .map(|(k, _)| {
                let f = groups.iter().find(|x| x.0 == *k).map_or(0.0, |x| x.1);
                json!({"name": k, "fraction": f})
            })
            .collect();
        json!({"samples": samples, "cpus": [1], "window_ns": 1, "groups": g,
               "top_kernel": [{"name": "native_queued_spin_lock_slowpath", "fraction": 0.3}]})
    }

    /// The slowest cell comes first in run order: the runner-up is the second by the
    /// findings' ranking, not the second listed.
    #[test]
    fn the_sentence_names_the_leaders_and_runner_ups_biggest_difference() {
        let cells = [
            cell("epoll-lt", 1000.0, breakdown(1000, &[("syscall", 1.0)])),
            cell(
                "uring",
                3000.0,
                breakdown(1000, &[("lock_slow_path", 0.3), ("syscall", 0.7)]),
            ),
            cell(
                "blocking",
                2000.0,
                breakdown(1000, &[("syscall", 0.9), ("copies", 0.1)]),
            ),
        ];
        let refs: Vec<&CaseResult> = cells.iter().collect();
        let w = analysed(&cells);
        let pts = points(&w, &refs);
        assert_eq!(pts.len(), 1);
        assert_eq!(pts[0].bars.len(), 3);
        let s = &pts[0].sentence;
        assert!(
            s.starts_with("uring (leader) spends 30% of its own work in lock slow paths; blocking (runner-up) 0%"),
            "{s}"
        );
        let md = markdown(&w, &refs);
        assert!(md.contains("| uring | 1000 |"), "{md}");
        assert!(
            md.contains("native_queued_spin_lock_slowpath 30.0%"),
            "{md}"
        );
        let html = super::html(&w, &refs).unwrap().into_string();
        // The bars' segments (2 + 1 + 2) and the legend's swatches.
        assert!(html.matches("<rect").count() >= 5 + GROUPS.len(), "{html}");
    }

    #[test]
    fn an_unavailable_breakdown_is_said_not_compared() {
        let cells = [
            cell(
                "uring",
                3000.0,
                json!({"unavailable": "perf refused: paranoid"}),
            ),
            cell("blocking", 2000.0, breakdown(1000, &[("syscall", 1.0)])),
        ];
        let refs: Vec<&CaseResult> = cells.iter().collect();
        let w = analysed(&cells);
        let s = &points(&w, &refs)[0].sentence;
        assert_eq!(
            s,
            "no comparison: uring's breakdown is unavailable: perf refused: paranoid"
        );
        assert!(markdown(&w, &refs).contains("unavailable: perf refused"));
    }
}
