//! `run --explain` in the reports: per parameter point, one stacked bar per model (where its
//! server's sampled CPU went, by group, each segment of 5% or more labelled with its share;
//! under it the top user-space symbols) and the captions `analysis::explain` decided (its
//! `Caption`s and `Shared` marks, held by the workload's analysis): the group whose share of
//! own work differs most between the point's leader and runner-up, or between each model
//! `--explain` named and the leader; a breakdown other programs shared is warned of. This
//! module only arranges, words and draws.

use crate::analysis::explain::{Against, Caption, Missing, NoDifference, Shared, MIN_WORK_SAMPLES};
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
    /// The captions' sentences.
    pub(crate) sentences: Vec<String>,
    /// A warning per cell whose breakdown other programs shared.
    pub(crate) warnings: Vec<String>,
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// A segment of a bar at least this share of it is labelled with its share.
const LABEL_FROM: f64 = 0.05;

/// User-space symbols listed under a bar and in the table.
const TOP_USER: usize = 5;

/// The user-space line of a breakdown: its top symbols with their shares of the samples, "no
/// symbols" where the measured program's user-space samples had none, `None` in files
/// written before symbols were recorded.
pub(crate) fn user_symbols(e: &Explain) -> Option<String> {
    let top = e.top_user.as_ref()?;
    let unnamed = e.user_unnamed.unwrap_or(0.0);
    if top.is_empty() {
        return Some(if unnamed > 0.0 {
            format!(
                "no symbols ({} of the samples in user space without one: a binary without \
                 symbols)",
                pct(unnamed)
            )
        } else {
            "no user-space samples".into()
        });
    }
    let mut s = top
        .iter()
        .take(TOP_USER)
        .map(|x| format!("{} {:.1}%", x.name, x.fraction * 100.0))
        .collect::<Vec<_>>()
        .join(", ");
    if unnamed > 0.0 {
        s += &format!("; {:.1}% without a symbol", unnamed * 100.0);
    }
    Some(s)
}

/// The warning on a cell whose breakdown other programs shared ([`Shared`]).
fn shared_warning(s: &Shared) -> String {
    format!(
        "{}: other processes took {} of the samples: the breakdown of this cell is shared with \
         them",
        s.label,
        pct(s.fraction)
    )
}

/// Who the second cell of a comparison is, in brackets.
fn role(a: &Against) -> String {
    match a {
        Against::RunnerUp { .. } => "runner-up".into(),
        Against::Leader => "leader".into(),
        Against::Closest { metric: Some(m) } => {
            format!("the closest to it by {}", m.title(false, false))
        }
        Against::Closest { metric: None } => "the next sampled cell".into(),
    }
}

/// The sentence of one caption ([`Caption`], decided by `analysis::explain`).
fn sentence(c: &Caption) -> String {
    match c {
        Caption::NoLeader => "no leader was decided and no cell has a breakdown to compare".into(),
        Caption::Alone(who) => format!(
            "no leader was decided at this point, and {who}'s is the only breakdown: nothing \
             to compare it with"
        ),
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
            subject,
            other,
            against,
            samples,
            difference,
        } => {
            // As the findings word it: a runner-up within noise leaves no clear leader.
            let me = match against {
                Against::RunnerUp { near: true } => {
                    " (ranked first, within noise of the runner-up)"
                }
                Against::RunnerUp { near: false } => " (leader)",
                Against::Leader | Against::Closest { .. } => "",
            };
            let undecided = match against {
                Against::Closest { .. } => "no leader was decided at this point; ",
                _ => "",
            };
            let them = role(against);
            match difference {
                Ok(d) => format!(
                    "{undecided}{subject}{me} spends {} of its own work in {}; {other} ({them}) \
                     {} (own work: samples neither idle nor another program's; {:.0} and {:.0} \
                     samples)",
                    pct(d.subject),
                    label(d.group),
                    pct(d.other),
                    samples.0,
                    samples.1,
                ),
                Err(why) => {
                    let why = match why {
                        NoDifference::TooFewSamples {
                            other: second,
                            samples,
                        } => format!(
                            "{} had {samples:.0} samples of its own work (fewer than \
                             {MIN_WORK_SAMPLES:.0}): too few to compare",
                            if *second { other } else { subject }
                        ),
                        NoDifference::NoOwnWork => "no sample of the cells' own work".into(),
                    };
                    format!("{undecided}no comparison between {subject}{me} and {other} ({them}): {why}")
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
                .filter(|c| x.holds(c))
                .filter_map(|c| c.explain.as_ref().map(|e| (*c, e)))
                .collect();
            PointExplain {
                at: bars
                    .first()
                    .map(|(c, _)| c.params_text())
                    .unwrap_or_default(),
                sentences: x.captions.iter().map(sentence).collect(),
                warnings: x.shared.iter().map(shared_warning).collect(),
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
/// A row: its bar, the user-space symbols' line under it, a gap.
const ROW_H: i32 = BAR_H + 34;
const LEFT: i32 = 150;
const BAR_W: i32 = 560;
const LEGEND_X: i32 = LEFT + BAR_W + 20;
const WIDTH: i32 = LEGEND_X + 260;

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing the explain chart: {e:?}")
}

/// One point's stacked bars as an SVG: one row per model, the groups left to right in
/// `GROUPS` order, each as wide as its share of the sampled CPU and, from [`LABEL_FROM`],
/// labelled with it; under each bar its top user-space symbols.
pub(crate) fn svg(p: &PointExplain<'_>) -> anyhow::Result<String> {
    let rows = p.bars.len() as i32;
    let height = (40 + rows * ROW_H).max(40 + GROUPS.len() as i32 * 18) + 10;
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
            let y = 32 + i as i32 * ROW_H;
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
                        if s.fraction >= LABEL_FROM {
                            // Dark text on the light segments (idle), white on the rest.
                            let ink = if s.name == "idle" { BLACK } else { WHITE };
                            area.draw(&Text::new(
                                pct(s.fraction),
                                ((x + w / 2.0).round() as i32, y + BAR_H / 2),
                                ("sans-serif", 11)
                                    .into_font()
                                    .into_text_style(&area)
                                    .color(&ink)
                                    .pos(Pos::new(HPos::Center, VPos::Center)),
                            ))
                            .map_err(err)?;
                        }
                        x += w;
                    }
                    if let Some(u) = user_symbols(e) {
                        area.draw(&Text::new(
                            cut(&format!("user space: {u}"), 100),
                            (LEFT, y + BAR_H + 12),
                            font(11),
                        ))
                        .map_err(err)?;
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

/// `s` cut to `n` characters, "…" ending a cut one.
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    s.chars().take(n - 1).chain(['…']).collect()
}

/// One row per cell: samples, each group's share, the top kernel and user-space symbols.
fn table_rows(p: &PointExplain<'_>) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["model".to_string(), "samples".to_string()];
    header.extend(GROUPS.iter().map(|(_, l)| l.to_string()));
    header.push("top kernel symbols".into());
    header.push("top user-space symbols".into());
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
                    r.push(user_symbols(e).unwrap_or_else(|| "not recorded".into()));
                }
                Measured::Unavailable { unavailable } => {
                    r.push(format!("unavailable: {unavailable}"));
                    r.extend(GROUPS.iter().map(|_| "-".to_string()));
                    r.push("-".into());
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
                    @for (i, s) in p.sentences.iter().enumerate() {
                        @if i > 0 { br; }
                        (s)
                    }
                    @for w in &p.warnings {
                        br;
                        span class="explain-shared" { strong { "warning: " } (w) }
                    }
                }
            }
            details {
                summary { "breakdown and top kernel and user-space symbols" }
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
             the sampled CPU (segments of 5% or more labelled), the server's own user-space \
             symbols under each bar."
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
        let said = p.sentences.join("\n\n");
        if !p.at.is_empty() {
            out += &format!("At {}: {}\n\n", p.at, cell(&said));
        } else {
            out += &format!("{}\n\n", cell(&said));
        }
        for w in &p.warnings {
            out += &format!("Warning: {}\n\n", cell(w));
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
            " ---: |".repeat(header.len() - 3) + " :--- | :--- |"
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
        analysed_naming(cells, &[])
    }

    /// As [`analysed`], `--explain` having named `named`.
    fn analysed_naming(cells: &[CaseResult], named: &[&str]) -> Workload {
        let mut run =
            crate::results::store::parse(include_str!("../../tests/fixtures/results.json"))
                .unwrap();
        run.workloads.clear();
        run.cases = cells.to_vec();
        run.explain_models = named.iter().map(|s| s.to_string()).collect();
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
        assert_eq!(pts[0].sentences.len(), 1);
        let s = &pts[0].sentences[0];
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
        // Each segment of 5% or more carries its share: uring's 30% and 70%, blocking's
        // 90% and 10%, epoll-lt's 100%.
        for p in ["30%", "70%", "90%", "10%", "100%"] {
            assert!(html.contains(&format!("\n{p}\n</text>")), "{p}: {html}");
        }
        // No user-space symbols recorded (an older file): nothing under the bars, the table
        // says so.
        assert!(!html.contains("user space: "), "{html}");
        assert!(md.contains("not recorded"), "{md}");
    }

    /// `--explain blocking`: blocking explained against the leader; `--explain uring` (the
    /// leader): against the runner-up; both named: one sentence each, in the order named.
    #[test]
    fn a_named_model_is_explained_against_the_leader() {
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
        let w = analysed_naming(&cells, &["epoll-lt"]);
        let s = &points(&w, &refs)[0].sentences;
        assert_eq!(s.len(), 1, "{s:?}");
        assert!(
            s[0].starts_with(
                "epoll-lt spends 100% of its own work in syscall entry/exit and other syscall \
                 work; uring (leader) 70%"
            ),
            "{s:?}"
        );
        let w = analysed_naming(&cells, &["uring", "epoll-lt"]);
        let s = &points(&w, &refs)[0].sentences;
        assert_eq!(s.len(), 2, "{s:?}");
        assert!(s[0].starts_with("uring (leader) spends 30%"), "{s:?}");
        assert!(s[0].contains("blocking (runner-up) 0%"), "{s:?}");
        assert!(s[1].starts_with("epoll-lt spends"), "{s:?}");
        let md = markdown(&w, &refs);
        assert!(
            md.contains("uring (leader)") && md.contains("epoll-lt spends"),
            "{md}"
        );
    }

    /// No leader could be ranked (one cell has no figure): the bars are still compared,
    /// saying no leader was decided, never "no leader to explain".
    #[test]
    fn without_a_leader_the_drawn_bars_are_still_compared() {
        let cells = [
            cell(
                "uring",
                3000.0,
                breakdown(1000, &[("lock_slow_path", 0.3), ("syscall", 0.7)]),
            ),
            cell("epoll-lt", 0.0, breakdown(1000, &[("syscall", 1.0)])),
        ];
        let refs: Vec<&CaseResult> = cells.iter().collect();
        for named in [&[][..], &["uring"][..]] {
            let w = analysed_naming(&cells, named);
            let s = &points(&w, &refs)[0].sentences;
            assert_eq!(s.len(), 1, "{s:?}");
            assert!(
                s[0].starts_with(
                    "no leader was decided at this point; uring spends 70% of its own work in \
                     syscall entry/exit and other syscall work; epoll-lt (the next sampled cell) \
                     100%"
                ),
                "{named:?}: {s:?}"
            );
        }
        // Named, the model without a figure is compared too.
        let w = analysed_naming(&cells, &["epoll-lt"]);
        let s = &points(&w, &refs)[0].sentences[0];
        assert!(
            s.contains("epoll-lt spends 100%") && s.contains("uring (the next"),
            "{s}"
        );
    }

    /// A breakdown with its user-space symbols: listed under its bar and in the table; one
    /// whose user-space samples had no symbol says "no symbols"; one other programs took 34%
    /// of is warned of.
    #[test]
    fn user_symbols_and_shared_breakdowns_are_shown() {
        let mut mine = breakdown(1000, &[("user", 0.4), ("syscall", 0.6)]);
        mine["top_user"] = json!([{"name": "ringside::io::epoll::serve", "fraction": 0.25},
                                  {"name": "__memcpy_avx_unaligned", "fraction": 0.1}]);
        mine["user_unnamed"] = json!(0.05);
        let mut stripped = breakdown(
            1000,
            &[("user", 0.3), ("syscall", 0.36), ("other_processes", 0.34)],
        );
        stripped["top_user"] = json!([]);
        stripped["user_unnamed"] = json!(0.3);
        let cells = [
            cell("uring", 3000.0, mine),
            cell("blocking", 2000.0, stripped),
        ];
        let refs: Vec<&CaseResult> = cells.iter().collect();
        let w = analysed(&cells);
        let p = &points(&w, &refs)[0];
        assert_eq!(
            p.warnings,
            vec![
                "blocking: other processes took 34% of the samples: the breakdown of this cell \
                 is shared with them"
                    .to_string()
            ]
        );
        let svg = svg(p).unwrap();
        assert!(
            svg.contains(
                "user space: ringside::io::epoll::serve 25.0%, __memcpy_avx_unaligned \
                 10.0%; 5.0% without a symbol"
            ),
            "{svg}"
        );
        assert!(
            svg.contains("user space: no symbols (30% of the samples"),
            "{svg}"
        );
        let html = super::html(&w, &refs).unwrap().into_string();
        assert!(
            html.contains("other processes took 34% of the samples"),
            "{html}"
        );
        let md = markdown(&w, &refs);
        assert!(
            md.contains("Warning: blocking: other processes took 34%"),
            "{md}"
        );
        assert!(md.contains("ringside::io::epoll::serve 25.0%"), "{md}");
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
        let s = &points(&w, &refs)[0].sentences[0];
        assert_eq!(
            s,
            "no comparison: uring's breakdown is unavailable: perf refused: paranoid"
        );
        assert!(markdown(&w, &refs).contains("unavailable: perf refused"));
    }
}
