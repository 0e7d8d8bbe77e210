//! A troubled cell's repetitions over time (`runs_timeline`).

use super::*;

/// Cells of a workload whose repetitions are drawn over time, at most.
pub(crate) const TIMELINE_CELLS: usize = 3;

/// Whether a cell's repetitions are worth seeing over time: one was re-run, disturbed or
/// stalled, or they disagree (`high_spread`).
fn troubled(c: &CaseResult) -> bool {
    use crate::results::Warning::{Disturbed, HighSpread, Stalled};
    !c.reruns.is_empty()
        || c.warnings
            .iter()
            .any(|w| matches!(w, Disturbed | Stalled | HighSpread))
}

/// Each troubled cell's repetitions over time ([`TIMELINE_CELLS`] at most, in run order):
/// throughput and the longest latency per interval, a line per repetition, so a stall or a
/// hiccup shows where in the window it happened.
pub(super) fn timelines(
    workload: &str,
    f: &Facts,
    measured: &[&CaseResult],
    left_out: &Arc<[String]>,
) -> Vec<Chart> {
    let mut out = Vec::new();
    let cells = measured
        .iter()
        .filter(|c| troubled(c))
        .filter_map(|c| Some((c, &c.figures.as_ref()?.runs_timeline)))
        .filter(|(_, t)| !t.is_empty())
        .take(TIMELINE_CELLS);
    for (k, (c, runs)) in cells.enumerate() {
        let step_ms = runs[0].step_ns / 1_000_000;
        let at = c.params_text();
        let name = if at.is_empty() {
            format!("{workload} {}", c.label())
        } else {
            format!("{workload} {at} {}", c.label())
        };
        let series = |y: &dyn Fn(&crate::measure::timeline::Timeline) -> Vec<Option<f64>>| {
            runs.iter()
                .enumerate()
                .map(|(i, t)| Series {
                    label: format!("repetition {}", i + 1),
                    style: Style {
                        slot: i,
                        colour: Some(i % PALETTE.len()),
                    },
                    // Each interval at its middle (the last may be cut short by the window).
                    points: y(t)
                        .into_iter()
                        .zip(t.lengths_ns())
                        .enumerate()
                        .filter_map(|(j, (v, len))| {
                            Some(Pt {
                                x: (j as f64 * t.step_ns as f64 + len as f64 / 2.0) / 1e9,
                                y: v?,
                                whisker: None,
                                band: None,
                                behind: false,
                                not_compared: false,
                            })
                        })
                        .collect(),
                    faded: false,
                })
                .filter(|s| !s.points.is_empty())
                .collect::<Vec<_>>()
        };
        // The x axis ends at the measured window: the longest repetition's.
        let window_s = runs
            .iter()
            .map(|t| t.lengths_ns().sum::<u64>())
            .max()
            .unwrap_or(0) as f64
            / 1e9;
        let units = f.units;
        for (slug, metric, what, y_axis, ys) in [
            (
                "ops",
                Metric::OpsPerSec,
                format!("{} per {step_ms} ms interval", units.rate),
                units.rate.to_string(),
                series(&|t| t.ops_per_sec().into_iter().map(Some).collect()),
            ),
            (
                "latency",
                Metric::LatencyP99,
                format!("longest latency per {step_ms} ms interval"),
                format!("longest latency in {step_ms} ms"),
                series(&|t| {
                    t.ops
                        .iter()
                        .zip(&t.latency_max_ns)
                        .map(|(&n, &m)| (n > 0).then_some(m as f64))
                        .collect()
                }),
            ),
        ] {
            if ys.is_empty() {
                continue;
            }
            out.push(Chart {
                id: format!("{}-timeline-{slug}-{}", file_slug(workload), k + 1),
                workload: workload.to_string(),
                title: format!("{name}: {what}, each repetition"),
                kind: Kind::Lines,
                metric,
                x_axis: "time in the measured window, s".into(),
                y_axis,
                log_x: false,
                log_y: false,
                categories: Vec::new(),
                x_fixed: (window_s > 0.0).then(|| FixedX {
                    lo: 0.0,
                    hi: window_s,
                    ticks: Vec::new(),
                }),
                series: ys,
                left_out: left_out.clone(),
            });
        }
    }
    out
}
