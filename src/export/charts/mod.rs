//! Chart data, built once from the results: which charts a workload gets, their series and
//! points, and each series' style. Drawing lives in `html/svg.rs` and only reads these.
//!
//! Charts are driven by the results (workload ids, params, figures), never by a list of
//! models. A workload gets the charts its row's facts ask for (`Workload::facts`,
//! `results::facts`): bars per parameter point, or lines of a metric against a numeric sweep
//! parameter. A new workload gets its kind's default, so it shows up without touching this
//! file.

//!
//! Everything here is linear in the cells of a run: cells are grouped once through hash maps
//! (by workload, parameter point, group and label), never found by scanning the cells again
//! for each point (a 4,000-point workload took 31 s that way).

use crate::analysis::Analysis;
use crate::registry::MODELS;
use crate::results::{CaseResult, RunResults, Status};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

mod cases;
mod spectrum;
mod summary;
mod timeline;

pub use crate::analysis::cells::ParamRoles;
pub use summary::suite_summaries;

pub(crate) use crate::analysis::cells::{by_workload, facts, sweep_param, Ordered};
pub use crate::results::facts::{ChartSpec, Facts, Metric, Sweep};
pub(crate) use cases::for_cases;
use spectrum::spectra;
use timeline::timelines;

/// Okabe-Ito colours (without its yellow, faint on white), a mid grey, then Paul Tol's
/// indigo, wine and olive: eleven colours that colour-blind readers tell apart, each series
/// also with its own marker (and line dash), so greyscale prints stay readable.
pub(crate) const PALETTE: [(u8, u8, u8); 11] = [
    (0, 114, 178),   // blue
    (213, 94, 0),    // vermillion
    (0, 158, 115),   // bluish green
    (204, 121, 167), // reddish purple
    (230, 159, 0),   // orange
    (86, 180, 233),  // sky blue
    (0, 0, 0),       // black
    (128, 128, 128), // grey
    (51, 34, 136),   // indigo
    (136, 34, 85),   // wine
    (153, 153, 51),  // olive
];

/// Marker shapes; filled and hollow variants tell series apart in greyscale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
    Diamond,
    HollowCircle,
    HollowSquare,
}

const MARKERS: [Marker; 7] = [
    Marker::Circle,
    Marker::Triangle,
    Marker::Square,
    Marker::Cross,
    Marker::Diamond,
    Marker::HollowCircle,
    Marker::HollowSquare,
];

/// Line dash patterns (dash, gap) in px; (0, 0) is solid.
const DASHES: [(u32, u32); 3] = [(0, 0), (8, 4), (2, 3)];

/// A series' identity: the same label gets the same colour, marker and dash in every chart of
/// every report, whatever other models a run has ([`Styles::of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    pub slot: usize,
    /// Its colour in [`PALETTE`], derived from the model's id alone; `None`: grey.
    pub colour: Option<usize>,
}

/// The colour of a series with no palette colour.
const GREY: (u8, u8, u8) = (150, 150, 150);

impl Style {
    pub(crate) fn rgb(self) -> (u8, u8, u8) {
        self.colour
            .and_then(|c| PALETTE.get(c).copied())
            .unwrap_or(GREY)
    }
    pub(crate) fn marker(self) -> Marker {
        MARKERS[self.slot % MARKERS.len()]
    }
    /// (dash, gap) in px, (0, 0) for solid.
    pub(crate) fn dash(self) -> (u32, u32) {
        DASHES[self.slot % DASHES.len()]
    }
}

/// FNV-1a, 32 bits, of a string: stable across runs, machines and versions.
pub(crate) fn fnv(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ b as u32).wrapping_mul(0x0100_0193)
    })
}

/// Each model's style, from its id alone, so that one model is drawn alike in every report
/// (two runs with different models, a report and the comparison of it with another): a model
/// the registry knows takes its registry position as its slot and that slot's palette
/// colour; any other label (a contender `ext:NAME`, a model of a newer ringside) a slot and
/// a colour hashed from its id. Two models may share a colour (28 models, 11 colours): their
/// markers and dashes then differ for the registry's, and differ by chance for hashed ones.
#[derive(Clone, Copy, Debug, Default)]
pub struct Styles;

impl Styles {
    /// The styles of a run's labels (the same for every run: they depend on the id alone).
    pub fn for_run(_run: &RunResults) -> Styles {
        Styles
    }

    pub fn of(&self, label: &str) -> Style {
        match MODELS.iter().position(|m| m.id == label) {
            Some(i) => Style {
                slot: i,
                colour: Some(i % PALETTE.len()),
            },
            None => {
                let h = fnv(label) as usize;
                Style {
                    // Past the registry's slots: markers and dashes cycle over 21 (7 x 3).
                    slot: MODELS.len() + (h / PALETTE.len()) % 21,
                    colour: Some(h % PALETTE.len()),
                }
            }
        }
    }

    /// The order series are listed in: the registry's models in its order, then the others
    /// by name.
    pub(crate) fn order(&self, label: &str) -> (usize, String) {
        match MODELS.iter().position(|m| m.id == label) {
            Some(i) => (i, String::new()),
            None => (MODELS.len(), label.to_string()),
        }
    }
}

/// Bars per parameter point, lines along a sweep, or points with their intervals per
/// parameter point (a sweep with a single value measured: no line to draw, no x range to
/// make up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Bars,
    Lines,
    Points,
}

impl Kind {
    /// Whether the x axis is categories (parameter points), not numbers.
    pub fn categorical(self) -> bool {
        matches!(self, Kind::Bars | Kind::Points)
    }
}

/// One point: for bars `x` is the category index.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pt {
    pub x: f64,
    pub y: f64,
    pub whisker: Option<(f64, f64)>,
    /// The figure's confidence interval (bars only, see [`Metric::band`]).
    pub band: Option<(f64, f64)>,
    /// The cell fell behind the rate it was offered (`CaseResult::kept_up`): its
    /// figures are not the server at that rate, and the point is marked.
    pub behind: bool,
    /// A cell a comparison could not judge (`compare`'s "not compared"): drawn hatched grey,
    /// the legend saying so.
    pub not_compared: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The model label ("epoll-lt", "blocking/poll").
    pub label: String,
    pub style: Style,
    pub points: Vec<Pt>,
    /// Decided behind the leader by the workload's finding (`analysis::highlighted`): drawn
    /// faded, so the leader and the models not decided against it stand out.
    pub faded: bool,
}

/// A fixed x axis: `lo..hi`, and its ticks (value, label).
#[derive(Clone, Debug, PartialEq)]
pub struct FixedX {
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<(f64, String)>,
}

/// A chart's data: everything the drawing needs, nothing about pixels.
#[derive(Clone, Debug)]
pub struct Chart {
    /// File-safe and unique in a report: "micro.pipe-latency".
    pub id: String,
    pub workload: String,
    pub title: String,
    pub kind: Kind,
    pub metric: Metric,
    pub x_axis: String,
    pub y_axis: String,
    pub log_x: bool,
    pub log_y: bool,
    /// Bars and points: the x categories (parameter points).
    pub categories: Vec<String>,
    /// A line chart's x axis where the data fixes it: its range, and its ticks with their
    /// labels (none: ticks chosen in the range, its end labelled). A timeline ends at its
    /// window, a percentile spectrum is labelled in percentiles.
    pub x_fixed: Option<FixedX>,
    /// Series in style order; only series with at least one point.
    pub series: Vec<Series>,
    /// Cells of this workload left out of the chart, with why ("epoll-lt: unavailable: ...");
    /// shared by every chart of the workload.
    pub left_out: Arc<[String]>,
}

/// The part of chart file names that names the workload: the workload id itself when the
/// registry knows it (a validated id), else a slug of it made of `A-Z a-z 0-9 _ . -` that cannot
/// name a directory (no `/`, no leading dot, no `..`), at most 64 characters, with a hash of the
/// raw id so that two ids that slug alike stay apart. A results file is input: its strings
/// never become paths as they are.
pub(crate) fn file_slug(workload: &str) -> String {
    if crate::registry::workload(workload).is_some() {
        return workload.to_string();
    }
    let mapped: String = workload
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    // A lone '.' or '-' stays; a run of them ("../") becomes one dash; none leads or trails.
    let mut slug = String::new();
    let mut sep: Option<char> = None;
    let mut run = 0;
    for c in mapped.chars() {
        if c == '.' || c == '-' {
            run += 1;
            sep = Some(if run == 1 { c } else { '-' });
            continue;
        }
        if let Some(s) = sep.take() {
            if !slug.is_empty() {
                slug.push(s);
            }
        }
        run = 0;
        slug.push(c);
        if slug.len() >= 64 {
            break;
        }
    }
    if slug == workload && !slug.is_empty() {
        return slug;
    }
    if slug.is_empty() {
        slug.push_str("workload");
    }
    let h = fnv(workload);
    format!("{slug}-{h:08x}")
}

/// Workload ids in the order they first appear in the run.
pub fn workloads(run: &RunResults) -> Vec<String> {
    by_workload(run)
        .into_iter()
        .map(|(w, _)| w.to_string())
        .collect()
}

/// A log y axis only where the spec asks for one and the data spans at least 10x with every
/// value positive; otherwise linear (and zeros stay on the chart). The drawing says which
/// in the axis title.
fn settle_y_scale(mut c: Chart) -> Chart {
    let ys = c.series.iter().flat_map(|s| s.points.iter().map(|p| p.y));
    let (lo, hi) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| {
        (a.min(y), b.max(y))
    });
    c.log_y = c.log_y && lo > 0.0 && hi / lo >= 10.0;
    c
}

/// The range of a figure's recorded per-repetition values (min..max), where it has two or
/// more: the repetitions' spread, drawn as a whisker where the figure has no other.
pub(crate) fn reps_range(m: Metric, f: &crate::results::schema::CaseFigures) -> Option<(f64, f64)> {
    let runs: &[f64] = match m {
        Metric::LatencyP50 => &f.runs_p50_ns,
        Metric::OpsPerSec => &f.runs_ops_per_sec,
        Metric::CpuPerOp => &f.runs_cpu_ns_per_op,
        Metric::LatencyP99 => &f.runs_p99_ns,
        _ => return None,
    };
    if runs.len() < 2 {
        return None;
    }
    let lo = runs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = runs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo.is_finite() && hi.is_finite()).then_some((lo, hi))
}

/// Whether a cell fell behind the rate it was offered.
fn behind(c: &CaseResult) -> bool {
    c.kept_up() == Some(false)
}

/// Every chart of a run: each suite's summary before its workloads' charts, in run order.
pub fn build(run: &RunResults, a: &Analysis) -> Vec<Chart> {
    let styles = Styles::for_run(run);
    let mut summaries: HashMap<String, Chart> = suite_summaries(run, &styles).into_iter().collect();
    let mut out = Vec::new();
    for (w, cases) in by_workload(run) {
        if let Some(c) = summaries.remove(suite_of(w)) {
            out.push(c);
        }
        out.extend(for_cases(w, &cases, &styles, a));
    }
    out
}

/// The suite of a workload id: its first component.
pub(crate) fn suite_of(workload: &str) -> &str {
    workload.split('.').next().unwrap_or(workload)
}

/// The charts of one workload, styled for the whole run.
pub fn build_for(run: &RunResults, a: &Analysis, workload: &str) -> Vec<Chart> {
    for_workload(run, workload, &Styles::for_run(run), a)
}

/// The charts of one workload.
pub(crate) fn for_workload(
    run: &RunResults,
    workload: &str,
    styles: &Styles,
    a: &Analysis,
) -> Vec<Chart> {
    let cases: Vec<&CaseResult> = run
        .cases
        .iter()
        .filter(|c| c.workload == workload)
        .collect();
    for_cases(workload, &cases, styles, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_come_from_the_row_and_an_unknown_workload_gets_bars() {
        let sweep = |id: &str| facts(id).chart.sweep.map(|s| s.params[0]);
        assert_eq!(sweep("micro.fd_scaling"), Some("fds"));
        assert_eq!(sweep("echo.conns"), Some("conns"));
        assert_eq!(sweep("http.clients"), Some("clients"));
        assert_eq!(sweep("http.rate"), Some("rate_per_sec"));
        assert_eq!(sweep("micro.pipe"), None);
        assert_eq!(facts("storage.randread").chart.verdict, Metric::OpsPerSec);
        assert!(facts("http.rate").rate_sweep && !facts("http.clients").rate_sweep);
        assert_eq!(facts("pubsub.fanout").units.op, "delivery");
        assert_eq!(facts("whatever.new"), Facts::LOCAL);
    }

    #[test]
    fn file_slugs_never_name_a_directory() {
        assert_eq!(file_slug("micro.pipe"), "micro.pipe");
        for raw in [
            "../../../x",
            "a/b",
            "/etc/evil",
            "..",
            ".",
            "",
            "a\\b",
            "x\0y",
            "é/è",
        ] {
            let s = file_slug(raw);
            assert!(
                !s.is_empty()
                    && !s.starts_with('.')
                    && !s.contains("..")
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)),
                "{raw:?} -> {s:?}"
            );
        }
        assert!(file_slug("../../../x").starts_with("x-"));
        assert!(file_slug("a/b").starts_with("a-b-"));
        assert_ne!(file_slug("a/b"), file_slug("a\\b"));
        assert!(file_slug(&"z".repeat(10_000)).len() < 80);
        // A safe id the registry does not know (a newer ringside's workload) keeps its name.
        assert_eq!(file_slug("net.quic"), "net.quic");
    }

    #[test]
    fn a_models_colour_comes_from_its_id_alone() {
        let s = Styles;
        // The registry's models: their registry slot, whatever the run holds.
        let i = MODELS.iter().position(|m| m.id == "tokio").unwrap();
        assert_eq!(s.of("tokio").colour, Some(i % PALETTE.len()));
        assert_eq!(s.of("tokio").slot, i);
        // A contender: hashed from its id, the same every time and past the registry's slots.
        let a = s.of("ext:mine");
        assert_eq!(a, Styles.of("ext:mine"));
        assert!(a.slot >= MODELS.len());
        assert_eq!(a.colour, Some(fnv("ext:mine") as usize % PALETTE.len()));
        // Different ids spread over the palette.
        let colours: std::collections::HashSet<_> =
            (0..40).map(|k| s.of(&format!("ext:c{k}")).colour).collect();
        assert!(colours.len() >= 8, "{colours:?}");
        // Listed after the registry's models, by name.
        assert!(s.order("monoio") < s.order("ext:a"));
        assert!(s.order("ext:a") < s.order("ext:b"));
    }

    #[test]
    fn styles_are_distinct_for_the_first_slots() {
        let s: Vec<(_, _, _)> = (0..12)
            .map(|slot| {
                let st = Style {
                    slot,
                    colour: Some(slot % PALETTE.len()),
                };
                (st.rgb(), st.marker(), st.dash())
            })
            .collect();
        for i in 0..s.len() {
            for j in 0..i {
                assert_ne!(s[i], s[j], "slots {i} and {j}");
            }
        }
    }
}
