//! A chart's axes as drawn: scales, ticks that fit side by side, their labels and units, and
//! the room the labels and the legend take.

use super::*;

/// One axis as drawn: its scale, range, ticks with their labels, and its title, which
/// names the unit where every tick is in one unit and says "(log)" where the scale is.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub log: bool,
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<f64>,
    pub labels: Vec<String>,
    pub title: String,
}

/// A chart's two axes (a bar chart's x axis has no ticks: its categories are labelled).
#[derive(Clone, Debug, PartialEq)]
pub struct Axes {
    pub x: Axis,
    pub y: Axis,
    /// Each category's label as drawn: its words wrapped into lines that fit the category's
    /// width, none dropped; a label too long for [`MAX_LABEL_LINES`] ends with "…" and
    /// `truncated` holds it (its last line as drawn, the whole label) for a `<title>`.
    pub categories: Vec<Vec<String>>,
    pub truncated: Vec<(String, String)>,
}

/// Lines a category label may take.
pub const MAX_LABEL_LINES: usize = 5;

/// `text` wrapped at its spaces into lines at most `max_px` wide at plotters size `size`,
/// greedily (a line takes as many words as fit); a word wider than a line is split where it
/// must be; past `max_lines` the last line ends with "…". Returns the lines and whether any
/// text was cut. No word is dropped otherwise.
pub fn wrap_label(text: &str, max_px: f64, size: u32, max_lines: usize) -> (Vec<String>, bool) {
    let fits = |s: &str| text_px(s, size) <= max_px;
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        if let Some(l) = lines.last_mut() {
            let joined = format!("{l} {word}");
            if fits(&joined) {
                *l = joined;
                continue;
            }
        }
        // A new line; a word too wide for one is split into pieces that fit.
        let mut piece = String::new();
        for ch in word.chars() {
            piece.push(ch);
            if !fits(&piece) && piece.chars().count() > 1 {
                piece.pop();
                lines.push(std::mem::take(&mut piece));
                piece.push(ch);
            }
        }
        lines.push(piece);
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    let max_lines = max_lines.max(1);
    if lines.len() <= max_lines {
        return (lines, false);
    }
    lines.truncate(max_lines);
    let last = lines.last_mut().expect("a line");
    while !last.is_empty() && !fits(&format!("{last}…")) {
        last.pop();
    }
    let trimmed = last.trim_end().to_string();
    *last = format!("{trimmed}…");
    (lines, true)
}

/// Room each category label has across, px: the plot's width shared by the categories, less
/// a gap. The y label area is taken at a generous estimate (it is only known once the y
/// ticks are, which depend on the height these labels take).
fn category_px(chart: &Chart, layout: Layout) -> f64 {
    let (w, _) = plot_size(layout, 110.0, 0);
    (w / chart.categories.len().max(1) as f64 - 8.0).max(text_px("xxxx", TICK))
}

/// What an axis counts, for its tick labels.
#[derive(Clone, Copy, PartialEq)]
enum Quantity {
    /// Nanoseconds: ticks in ns, us, ms or s.
    Time,
    /// A count or rate: ticks with k or M.
    Count,
}

/// A tick's number in `unit` (a divisor), trimmed: "2.5", "100", "0.05".
fn number(v: f64, div: f64) -> String {
    let s = format!("{:.3}", v / div);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// The unit (divisor, suffix) a value is written in.
fn unit_of(q: Quantity, v: f64) -> (f64, &'static str) {
    let a = v.abs();
    match q {
        Quantity::Time if a >= 1e9 => (1e9, "s"),
        Quantity::Time if a >= 1e6 => (1e6, "ms"),
        Quantity::Time if a >= 1e3 => (1e3, "us"),
        Quantity::Time => (1.0, "ns"),
        Quantity::Count if a >= 1e6 => (1e6, "M"),
        Quantity::Count if a >= 1e4 => (1e3, "k"),
        Quantity::Count => (1.0, ""),
    }
}

/// Tick labels and the unit for the title, if one unit serves every tick. A linear axis
/// writes every tick in its largest tick's unit; a log axis each tick in its own, and where
/// those differ, each label carries its unit and the title none.
fn labels(q: Quantity, ticks: &[f64], log: bool) -> (Vec<String>, Option<&'static str>) {
    let top = ticks.iter().fold(0f64, |a, t| a.max(t.abs()));
    let units: Vec<(f64, &str)> = ticks
        .iter()
        .map(|&t| if log { unit_of(q, t) } else { unit_of(q, top) })
        .collect();
    let uniform = units.windows(2).all(|w| w[0].1 == w[1].1);
    let labels = ticks
        .iter()
        .zip(&units)
        .map(|(&t, &(div, u))| match q {
            Quantity::Time if uniform => number(t, div),
            Quantity::Time => format!("{} {u}", number(t, div)),
            // k and M are multipliers: every label carries its own.
            Quantity::Count if t == 0.0 => "0".into(),
            Quantity::Count => format!("{}{u}", number(t, div)),
        })
        .collect();
    let unit = match q {
        Quantity::Time if uniform => units.first().map(|u| u.1),
        _ => None,
    };
    (labels, unit)
}

/// A step of 1, 2, 2.5 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag)
}

/// Linear ticks over `lo..hi` with at most `max` of them: multiples of a nice step, the
/// range widened to the nearest ones.
fn linear(lo: f64, hi: f64, max: usize) -> (f64, f64, Vec<f64>) {
    let max = max.max(2);
    let step = nice_step(((hi - lo) / (max - 1) as f64).max(f64::MIN_POSITIVE));
    let (a, b) = ((lo / step).floor() as i64, (hi / step).ceil() as i64);
    let ticks = (a..=b).map(|k| k as f64 * step).collect();
    (a as f64 * step, b as f64 * step, ticks)
}

/// Log ticks: the range widened to whole decades (so the lowest decade is labelled), a tick
/// at every decade (every few where they do not fit), with 2 and 5 between over a span of
/// two decades or less.
fn logarithmic(lo: f64, hi: f64, max: usize) -> (f64, f64, Vec<f64>) {
    let d0 = lo.log10().floor() as i32;
    let mut d1 = hi.log10().ceil() as i32;
    if d1 <= d0 {
        d1 = d0 + 1;
    }
    let decades = (d1 - d0) as usize;
    let ticks = if decades <= 2 && 3 * decades < max {
        (d0..d1)
            .flat_map(|d| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(d)))
            .chain([10f64.powi(d1)])
            .collect()
    } else {
        let every = (decades + 1).div_ceil(max.max(2)).max(1);
        (d0..=d1).step_by(every).map(|d| 10f64.powi(d)).collect()
    };
    (10f64.powi(d0), 10f64.powi(d1), ticks)
}

/// The x axis of a line chart is log only where the chart asks for one and the data spans
/// at least two decades: over a narrower span (a rate sweep from 50,000 to 100,000) a log
/// axis has one decade's labels.
fn use_log_x(chart: &Chart, lo: f64, hi: f64) -> bool {
    chart.log_x && chart.kind == Kind::Lines && lo > 0.0 && hi / lo >= 100.0
}

/// Room for the plot once the y labels and the legend are set aside, px.
fn plot_size(layout: Layout, y_label_px: f64, x_area: u32) -> (f64, f64) {
    let w = (layout.width() - layout.legend_width() - 2 * MARGIN) as f64 - y_label_px;
    let h = (layout.plot_height() - 2 * MARGIN - x_area) as f64;
    (w, h)
}

/// Space under the plot for x labels and title, px: `lines` of category labels, or a row
/// of ticks and the title.
pub(super) fn x_area(chart: &Chart, lines: usize) -> u32 {
    if chart.kind.categorical() {
        (TICK + 6) * lines.max(1) as u32 + 12
    } else {
        TICK + 6 + DESC + 10
    }
}

/// A y label area wide enough for the widest tick label and the rotated title, px.
pub(super) fn y_area(y: &Axis) -> u32 {
    let widest = y
        .labels
        .iter()
        .map(|l| text_px(l, TICK))
        .fold(0.0, f64::max);
    (widest + DESC as f64 + 16.0).ceil() as u32
}

/// The axes of `chart` drawn in `layout`: scales, ticks that fit side by side, and titles.
pub fn axes(chart: &Chart, layout: Layout) -> Axes {
    let yq = if chart.metric.is_time() {
        Quantity::Time
    } else {
        Quantity::Count
    };
    let (ylo, yhi) = span(ys(chart).filter(|v| !chart.log_y || *v > 0.0)).unwrap_or((0.0, 1.0));
    let mut categories = Vec::new();
    let mut truncated = Vec::new();
    if chart.kind.categorical() {
        let px = category_px(chart, layout);
        for c in &chart.categories {
            let text = if c.is_empty() {
                "all models"
            } else {
                c.as_str()
            };
            let (lines, cut) = wrap_label(text, px, TICK, MAX_LABEL_LINES);
            if cut {
                truncated.push((lines.last().cloned().unwrap_or_default(), text.to_string()));
            }
            categories.push(lines);
        }
    }
    let lines = categories.iter().map(Vec::len).max().unwrap_or(1);
    let x_room = x_area(chart, lines);
    // Vertically: a label and a gap of twice its height, px.
    let (_, h) = plot_size(layout, 60.0, x_room);
    let ymax = ((h / (2.4 * TICK as f64 / 1.24)) as usize).clamp(2, 8);
    let (lo, hi, ticks) = if chart.log_y {
        logarithmic(ylo, yhi * 1.02, ymax)
    } else {
        let (lo, hi, t) = linear(0.0, if yhi > 0.0 { yhi * 1.05 } else { 1.0 }, ymax);
        (lo, hi, t)
    };
    let (ylabels, yunit) = labels(yq, &ticks, chart.log_y);
    let mut ytitle = chart.y_axis.clone();
    if let (Some(u), true) = (yunit, yq == Quantity::Time) {
        ytitle = format!("{ytitle}, {u}");
    }
    if chart.log_y {
        ytitle.push_str(" (log)");
    }
    let y = Axis {
        log: chart.log_y,
        lo,
        hi,
        ticks,
        labels: ylabels,
        title: ytitle,
    };
    let x = if chart.kind.categorical() {
        Axis {
            log: false,
            lo: 0.0,
            hi: chart.categories.len().max(1) as f64,
            ticks: Vec::new(),
            labels: Vec::new(),
            title: chart.x_axis.clone(),
        }
    } else {
        let (xlo, xhi) = span(
            chart
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.x)),
        )
        .unwrap_or((0.0, 1.0));
        let fixed = chart.x_fixed.as_ref();
        let log = match fixed {
            Some(f) if !f.ticks.is_empty() => chart.log_x && f.lo > 0.0,
            _ => use_log_x(chart, xlo, xhi),
        };
        let (w, _) = plot_size(layout, y_area(&y) as f64, x_room);
        // Labels side by side: fewer until the widest, with a gap of two characters, fits.
        let mut max = 10;
        let (lo, hi, ticks, labels) = loop {
            if let Some(f) = fixed.filter(|f| !f.ticks.is_empty()) {
                let (t, l): (Vec<f64>, Vec<String>) = f.ticks.iter().cloned().unzip();
                break (f.lo, f.hi, t, l);
            }
            let (lo, hi, ticks) = if let Some(f) = fixed {
                ends_at(f.lo, f.hi, max)
            } else if log {
                logarithmic(xlo, xhi, max)
            } else {
                let pad = ((xhi - xlo) * 0.05).max(0.5);
                let lo = if xlo >= 0.0 {
                    (xlo - pad).max(0.0)
                } else {
                    xlo - pad
                };
                linear(lo, xhi + pad, max)
            };
            let (labels, _) = labels(Quantity::Count, &ticks, log);
            let widest = labels
                .iter()
                .map(|l| text_px(l, TICK) + text_px("00", TICK))
                .fold(0.0, f64::max);
            if max <= 2 || widest * (ticks.len() as f64) <= w {
                break (lo, hi, ticks, labels);
            }
            max -= 1;
        };
        let title = if log {
            format!("{} (log)", chart.x_axis)
        } else {
            chart.x_axis.clone()
        };
        Axis {
            log,
            lo,
            hi,
            ticks,
            labels,
            title,
        }
    };
    Axes {
        x,
        y,
        categories,
        truncated,
    }
}

/// Linear ticks over exactly `lo..hi` (an axis that ends where the data does: a timeline at
/// its window): multiples of a nice step inside it, and `hi` itself as the last tick (those
/// within 3/4 of a step before it dropped, so the two never crowd).
fn ends_at(lo: f64, hi: f64, max: usize) -> (f64, f64, Vec<f64>) {
    let (_, _, all) = linear(lo, hi, max);
    let step = if all.len() > 1 {
        all[1] - all[0]
    } else {
        hi - lo
    };
    let mut ticks: Vec<f64> = all
        .into_iter()
        .filter(|t| *t >= lo - 1e-12 && *t <= hi + 1e-12 * hi.abs().max(1.0))
        .collect();
    if ticks
        .last()
        .is_none_or(|t| (hi - t).abs() > 1e-9 * hi.abs().max(1e-300))
    {
        while ticks.last().is_some_and(|t| hi - t < 0.75 * step) {
            ticks.pop();
        }
        ticks.push(hi);
    }
    (lo, hi, ticks)
}

/// The label of `v` among an axis's ticks.
pub(super) fn tick_label(a: &Axis, v: f64) -> String {
    a.ticks
        .iter()
        .position(|t| (t - v).abs() <= 1e-9 * t.abs().max(1e-300))
        .map(|i| a.labels[i].clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(lines: &[String]) -> String {
        lines
            .join(" ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn labels_wrap_at_spaces_and_keep_every_word() {
        let text = "http.rate equal load (30% of slowest, 21.8 k req/s)";
        let px = text_px("x", TICK) * 16.0;
        let (lines, cut) = wrap_label(text, px, TICK, MAX_LABEL_LINES);
        assert!(!cut, "{lines:?}");
        assert_eq!(words(&lines), text);
        assert!(lines.iter().all(|l| text_px(l, TICK) <= px), "{lines:?}");
        // Not a word per line where more fit: lines hold several words.
        assert!(2 * lines.len() <= text.split(' ').count(), "{lines:?}");
        let n = lines.len();
        assert!(lines[..n - 1].iter().all(|l| l.contains(' ')), "{lines:?}");
        // Room for all of it: one line.
        let (one, _) = wrap_label(text, 10_000.0, TICK, MAX_LABEL_LINES);
        assert_eq!(one, vec![text.to_string()]);
    }

    #[test]
    fn a_word_wider_than_a_line_is_split_not_dropped() {
        let px = text_px("x", TICK) * 6.0;
        let (lines, cut) = wrap_label("rate_per_sec=21800", px, TICK, MAX_LABEL_LINES);
        assert!(!cut);
        assert_eq!(lines.concat(), "rate_per_sec=21800");
        assert!(lines.iter().all(|l| text_px(l, TICK) <= px), "{lines:?}");
    }

    #[test]
    fn a_label_past_its_lines_ends_with_an_ellipsis() {
        let text = "one two three four five six seven eight nine ten";
        let px = text_px("x", TICK) * 5.0;
        let (lines, cut) = wrap_label(text, px, TICK, 3);
        assert!(cut);
        assert_eq!(lines.len(), 3);
        assert!(lines[2].ends_with('…'), "{lines:?}");
        assert!(lines.iter().all(|l| text_px(l, TICK) <= px), "{lines:?}");
        assert_eq!(&lines[..2], &["one", "two"]);
    }

    #[test]
    fn an_axis_fixed_to_its_window_ends_there() {
        let (lo, hi, ticks) = ends_at(0.0, 0.33, 8);
        assert_eq!((lo, hi), (0.0, 0.33));
        assert_eq!(ticks.last(), Some(&0.33));
        assert!(ticks.iter().all(|t| (0.0..=0.33).contains(t)), "{ticks:?}");
        let step = ticks[1] - ticks[0];
        for w in ticks.windows(2) {
            assert!(w[1] - w[0] >= 0.75 * step - 1e-12, "{ticks:?} crowd");
        }
        // A window on a tick keeps it once.
        let (_, _, t) = ends_at(0.0, 1.0, 6);
        assert_eq!(t.iter().filter(|x| **x == 1.0).count(), 1, "{t:?}");
    }
}
