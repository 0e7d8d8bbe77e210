//! Drawing: one [`Chart`] (data) to one SVG with plotters' SVG backend. Nothing here decides
//! what is plotted; it only turns series into pixels, with each series' colour, marker and
//! dash from its [`Style`].

use crate::export::charts::{Chart, Kind, Marker, Series, Style};
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

mod axes;
pub use axes::{axes, wrap_label, Axes, Axis, MAX_LABEL_LINES};
use axes::{tick_label, x_area, y_area};

/// Where a chart is drawn: a laptop's grid column, or a phone's width. Text sizes are the
/// plotters sizes (its SVG writes `size / 1.24` as the font size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// 720 px wide, the legend in a strip at the right: a grid column of about 560 px.
    Wide,
    /// 420 px wide, the legend under the plot: a phone's width of about 360 px.
    Narrow,
}

impl Layout {
    pub(crate) fn width(self) -> u32 {
        match self {
            Layout::Wide => 720,
            Layout::Narrow => 420,
        }
    }
    /// The legend strip at the right, px (legends never cover data); 0: under the plot.
    fn legend_width(self) -> u32 {
        match self {
            Layout::Wide => 170,
            Layout::Narrow => 0,
        }
    }
    /// The plot's height (axes included), px.
    fn plot_height(self) -> u32 {
        match self {
            Layout::Wide => 420,
            Layout::Narrow => 340,
        }
    }
    /// Legend rows under the plot for `n` entries (two a row).
    fn legend_rows(self, n: usize) -> u32 {
        match self {
            Layout::Wide => 0,
            Layout::Narrow => n.div_ceil(2) as u32,
        }
    }
}

/// A coordinate whose ticks are ours (`axes`): plotters' own key points put several labels
/// on one value or crowd a log axis's top decade.
struct Keyed<R> {
    inner: R,
    ticks: Vec<f64>,
}

impl<R: Ranged<ValueType = f64>> Ranged for Keyed<R> {
    type ValueType = f64;
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(v, limit)
    }
    fn key_points<H: plotters::coord::ranged1d::KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }
    fn axis_pixel_range(&self, limit: (i32, i32)) -> std::ops::Range<i32> {
        self.inner.axis_pixel_range(limit)
    }
}

trait IntoKeyed: AsRangedCoord<Value = f64> + Sized {
    fn into_keyed(self, ticks: Vec<f64>) -> Keyed<Self::CoordDescType> {
        Keyed {
            inner: self.into(),
            ticks,
        }
    }
}

impl<T: AsRangedCoord<Value = f64>> IntoKeyed for T {}

/// Plotters text sizes: tick and category labels, axis titles, legend, caption.
const TICK: u32 = 17;
const DESC: u32 = 18;
const KEY: u32 = 17;
const CAPTION: u32 = 20;
/// A legend row, px.
const KEY_ROW: i32 = 22;
/// Margin around the plot, px.
const MARGIN: u32 = 10;

/// Rendered width of `text` at plotters size `size`, px: 0.6 em a character of the font
/// size the SVG writes (`size / 1.24`), which over-estimates sans-serif digits and letters.
pub(crate) fn text_px(text: &str, size: u32) -> f64 {
    text.chars().count() as f64 * 0.6 * size as f64 / 1.24
}

/// The legend entries: the series, then the mark of points that fell behind, if any.
fn legend(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    chart: &Chart,
    layout: Layout,
) -> anyhow::Result<()> {
    let behind = match chart.kind {
        Kind::Bars => Behind::Box,
        Kind::Lines => Behind::Line,
        Kind::Points => Behind::Nothing,
    };
    let at = |i: usize| -> (i32, i32) {
        match layout {
            Layout::Wide => (16, 30 + i as i32 * KEY_ROW),
            Layout::Narrow => (
                16 + (i % 2) as i32 * (layout.width() as i32 / 2),
                12 + (i / 2) as i32 * KEY_ROW,
            ),
        }
    };
    let font = |faded: bool| {
        ("sans-serif", KEY)
            .into_font()
            .color(if faded { &FADED_TEXT } else { &BLACK })
            .pos(Pos::new(HPos::Left, VPos::Center))
    };
    for (i, s) in chart.series.iter().enumerate() {
        let (x, y) = at(i);
        area.draw(&marker(
            s.style,
            (x, y),
            4,
            chart.kind == Kind::Bars,
            behind,
            s.faded,
        ))
        .map_err(err)?;
        area.draw(&Text::new(s.label.clone(), (x + 18, y), font(s.faded)))
            .map_err(err)?;
    }
    let mut k = chart.series.len();
    if any_behind(chart) {
        let (x, y) = at(k);
        area.draw(&behind_mark((x, y))).map_err(err)?;
        area.draw(&Text::new(BEHIND_KEY, (x + 18, y), font(false)))
            .map_err(err)?;
        k += 1;
    }
    if any_not_compared(chart) {
        let (x, y) = at(k);
        hatched(area, (x - 10, y - 6), (x + 10, y + 6))?;
        area.draw(&Text::new(NOT_COMPARED_KEY, (x + 18, y), font(false)))
            .map_err(err)?;
    }
    Ok(())
}

/// The legend's words for a hatched grey bar.
pub(crate) const NOT_COMPARED_KEY: &str = "not compared";

fn any_not_compared(chart: &Chart) -> bool {
    chart
        .series
        .iter()
        .any(|s| s.points.iter().any(|p| p.not_compared))
}

/// A hatched grey box between two pixel corners of `area`: a bar not compared.
fn hatched(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    (l, t): (i32, i32),
    (r, b): (i32, i32),
) -> anyhow::Result<()> {
    let (l, r) = (l.min(r), l.max(r));
    let (t, b) = (t.min(b), t.max(b));
    area.draw(&Rectangle::new([(l, t), (r, b)], NOT_COMPARED.filled()))
        .map_err(err)?;
    // Diagonals x + y = k, clipped to the box.
    let mut k = l + t + 4;
    while k < r + b {
        let (xa, xb) = ((k - b).max(l), (k - t).min(r));
        if xa < xb {
            area.draw(&PathElement::new(
                vec![(xa, k - xa), (xb, k - xb)],
                RGBColor(90, 90, 90).stroke_width(1),
            ))
            .map_err(err)?;
        }
        k += 7;
    }
    area.draw(&Rectangle::new(
        [(l, t), (r, b)],
        RGBColor(90, 90, 90).stroke_width(1),
    ))
    .map_err(err)?;
    Ok(())
}

/// A bar not compared: light grey under its hatching.
const NOT_COMPARED: RGBColor = RGBColor(215, 215, 215);

/// The legend's words for the mark over a point whose cell fell behind its offered rate.
pub(crate) const BEHIND_KEY: &str = "fell behind offer";

fn any_behind(chart: &Chart) -> bool {
    chart
        .series
        .iter()
        .any(|s| s.points.iter().any(|p| p.behind))
}

/// The legend's entries: one per series, the "fell behind" mark's and the "not compared"
/// box's.
fn legend_entries(chart: &Chart) -> usize {
    chart.series.len() + usize::from(any_behind(chart)) + usize::from(any_not_compared(chart))
}

/// A faded series' legend text.
const FADED_TEXT: RGBColor = RGBColor(150, 150, 150);
/// How much of its colour a faded series keeps.
const FADE: f64 = 0.3;

fn color(s: Style) -> RGBColor {
    let (r, g, b) = s.rgb();
    RGBColor(r, g, b)
}

/// The chart as an SVG document in the wide layout. `inline` drops the XML namespace (not
/// needed inside HTML, and the report carries no URL of any kind) and the title (the page
/// writes it as text that wraps).
pub fn draw(chart: &Chart, inline: bool) -> anyhow::Result<String> {
    draw_in(chart, Layout::Wide, inline)
}

/// The caption's lines: the title wrapped to the chart's width.
fn caption_lines(chart: &Chart, layout: Layout) -> Vec<String> {
    let max = (layout.width() as f64 / text_px("x", CAPTION)) as usize;
    let mut lines: Vec<String> = Vec::new();
    for word in chart.title.split(' ') {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= max => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// The chart as an SVG document in `layout` (see [`draw`]).
pub fn draw_in(chart: &Chart, layout: Layout, inline: bool) -> anyhow::Result<String> {
    let caption = if inline {
        Vec::new()
    } else {
        caption_lines(chart, layout)
    };
    let cap_h = caption.len() as u32 * (CAPTION + 4);
    let legend_h = match layout.legend_rows(legend_entries(chart)) {
        0 => 0,
        rows => rows * KEY_ROW as u32 + 12,
    };
    let (w, h) = (layout.width(), cap_h + layout.plot_height() + legend_h);
    let ax = axes(chart, layout);
    let mut buf = String::new();
    {
        let full = SVGBackend::with_string(&mut buf, (w, h)).into_drawing_area();
        full.fill(&WHITE).map_err(err)?;
        let (top, body) = full.split_vertically(cap_h);
        for (i, l) in caption.iter().enumerate() {
            top.draw(&Text::new(
                l.clone(),
                (w as i32 / 2, 2 + i as i32 * (CAPTION as i32 + 4)),
                ("sans-serif", CAPTION)
                    .into_font()
                    .into_text_style(&top)
                    .pos(Pos::new(HPos::Center, VPos::Top)),
            ))
            .map_err(err)?;
        }
        let (root, key) = match layout {
            Layout::Wide => body.split_horizontally(w - layout.legend_width()),
            Layout::Narrow => body.split_vertically(layout.plot_height()),
        };
        legend(&key, chart, layout)?;
        let (x0, x1) = (ax.x.lo, ax.x.hi);
        let (y0, y1) = (ax.y.lo, ax.y.hi);
        let (xk, yk) = (ax.x.ticks.clone(), ax.y.ticks.clone());
        match (ax.x.log, ax.y.log) {
            (false, false) => plot(
                &root,
                chart,
                &ax,
                (x0..x1).into_keyed(xk),
                (y0..y1).into_keyed(yk),
            )?,
            (true, false) => plot(
                &root,
                chart,
                &ax,
                (x0..x1).log_scale().into_keyed(xk),
                (y0..y1).into_keyed(yk),
            )?,
            (false, true) => plot(
                &root,
                chart,
                &ax,
                (x0..x1).into_keyed(xk),
                (y0..y1).log_scale().into_keyed(yk),
            )?,
            (true, true) => plot(
                &root,
                chart,
                &ax,
                (x0..x1).log_scale().into_keyed(xk),
                (y0..y1).log_scale().into_keyed(yk),
            )?,
        }
        full.present().map_err(err)?;
    }
    buf = finish(buf, &ax.truncated);
    if inline {
        buf = buf.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
    }
    Ok(buf)
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing a chart: {e:?}")
}

/// Every y value drawn: points, whiskers and bands.
fn ys(chart: &Chart) -> impl Iterator<Item = f64> + '_ {
    chart.series.iter().flat_map(|s| {
        s.points.iter().flat_map(|p| {
            let (lo, hi) = p.whisker.unwrap_or((p.y, p.y));
            let (blo, bhi) = p.band.unwrap_or((p.y, p.y));
            [p.y, lo, hi, blo, bhi]
        })
    })
}

fn span(vs: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (lo, hi) = vs
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        });
    lo.is_finite().then_some((lo, hi))
}

fn plot<X, Y>(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    chart: &Chart,
    ax: &Axes,
    x: X,
    y: Y,
) -> anyhow::Result<()>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let y_base = ax.y.lo;
    let mut ctx = ChartBuilder::on(root)
        .margin(MARGIN)
        .x_label_area_size(x_area(
            chart,
            ax.categories.iter().map(Vec::len).max().unwrap_or(1),
        ))
        .y_label_area_size(y_area(&ax.y))
        .build_cartesian_2d(x, y)
        .map_err(err)?;
    let ylab = |v: &f64| tick_label(&ax.y, *v);
    let bars = chart.kind.categorical();
    let points = chart.kind == Kind::Points;
    let xlab = |v: &f64| tick_label(&ax.x, *v);
    let mut mesh = ctx.configure_mesh();
    // Bar categories name their parameters themselves: no x title.
    if !bars {
        mesh.x_desc(ax.x.title.as_str());
    }
    mesh.y_desc(ax.y.title.as_str())
        .y_label_formatter(&ylab)
        .axis_desc_style(("sans-serif", DESC))
        .label_style(("sans-serif", TICK))
        .light_line_style(RGBColor(238, 238, 238))
        .bold_line_style(RGBColor(225, 225, 225));
    if bars {
        mesh.disable_x_mesh().x_labels(0);
    } else {
        mesh.x_label_formatter(&xlab);
    }
    mesh.draw().map_err(err)?;

    let n = chart.series.len().max(1) as f64;
    // Faded series first, so the highlighted ones are drawn over them.
    let order: Vec<usize> = (0..chart.series.len())
        .filter(|&j| chart.series[j].faded)
        .chain((0..chart.series.len()).filter(|&j| !chart.series[j].faded))
        .collect();
    for j in order {
        let s = &chart.series[j];
        let c = color(s.style);
        let c = if s.faded { c.mix(FADE) } else { c.mix(1.0) };
        let style = s.style;
        if bars {
            let w = 0.8 / n;
            let x0 = |p: &crate::export::charts::Pt| p.x + 0.1 + j as f64 * w;
            if !points {
                ctx.draw_series(s.points.iter().filter(|p| !p.not_compared).map(|p| {
                    Rectangle::new([(x0(p), y_base), (x0(p) + w * 0.92, p.y)], c.filled())
                }))
                .map_err(err)?;
                // A bar not compared: hatched grey, the legend saying so.
                let (bx, by) = root.get_base_pixel();
                for p in s.points.iter().filter(|p| p.not_compared) {
                    let (l, t) = ctx.backend_coord(&(x0(p), p.y));
                    let (r, b) = ctx.backend_coord(&(x0(p) + w * 0.92, y_base));
                    hatched(root, (l - bx, t - by), (r - bx, b - by))?;
                }
            }
            // The figure's 95% CI: a dark band across the middle of the bar (on a point, a
            // band of its colour).
            let band_fill = if points { c.mix(0.55) } else { BLACK.mix(0.45) };
            let half = if points { w * 0.07 } else { w * 0.18 };
            ctx.draw_series(s.points.iter().filter_map(|p| {
                let (lo, hi) = p.band?;
                let mid = x0(p) + w * 0.46;
                Some(Rectangle::new(
                    [(mid - half, lo), (mid + half, hi)],
                    band_fill.filled(),
                ))
            }))
            .map_err(err)?;
            let mut whiskers = Vec::new();
            for p in &s.points {
                if let Some((lo, hi)) = p.whisker {
                    let mid = x0(p) + w * 0.46;
                    let cap = w * 0.25;
                    whiskers.push(vec![(mid, lo), (mid, hi)]);
                    whiskers.push(vec![(mid - cap, lo), (mid + cap, lo)]);
                    whiskers.push(vec![(mid - cap, hi), (mid + cap, hi)]);
                }
            }
            ctx.draw_series(
                whiskers
                    .into_iter()
                    .map(|v| PathElement::new(v, BLACK.stroke_width(1))),
            )
            .map_err(err)?;
            ctx.draw_series(s.points.iter().map(|p| {
                marker(
                    style,
                    (x0(p) + w * 0.46, p.y),
                    if points { 5 } else { 4 },
                    !points,
                    Behind::Nothing,
                    s.faded,
                )
            }))
            .map_err(err)?;
            ctx.draw_series(
                s.points
                    .iter()
                    .filter(|p| p.behind)
                    .map(|p| behind_mark((x0(p) + w * 0.46, p.y))),
            )
            .map_err(err)?;
        } else {
            let pts: Vec<(f64, f64)> = s.points.iter().map(|p| (p.x, p.y)).collect();
            draw_line(&mut ctx, s, &pts)?;
            ctx.draw_series(
                pts.iter()
                    .map(|&p| marker(style, p, 5, false, Behind::Nothing, s.faded)),
            )
            .map_err(err)?;
            ctx.draw_series(
                s.points
                    .iter()
                    .filter(|p| p.behind)
                    .map(|p| behind_mark((p.x, p.y))),
            )
            .map_err(err)?;
        }
    }

    if bars {
        for (i, lines) in ax.categories.iter().enumerate() {
            let (px, py) = ctx.backend_coord(&(i as f64 + 0.5, y_base));
            // Backend coordinates, and the root area may not start at the top (a caption).
            let (bx, by) = root.get_base_pixel();
            let (px, py) = (px - bx, py - by);
            // The label's words wrapped to the category's width (`axes::wrap_label`).
            for (k, part) in lines.iter().enumerate() {
                root.draw(&Text::new(
                    part.clone(),
                    (px, py + 6 + (TICK as i32 + 6) * k as i32),
                    ("sans-serif", TICK)
                        .into_font()
                        .into_text_style(root)
                        .pos(Pos::new(HPos::Center, VPos::Top)),
                ))
                .map_err(err)?;
            }
        }
    }
    Ok(())
}

type Ring<'b, C> = plotters::element::ComposedElement<
    C,
    SVGBackend<'b>,
    Circle<Px, i32>,
    EmptyElement<Px, SVGBackend<'b>>,
>;

/// The mark over a point whose cell fell behind its offered rate: a black ring.
fn behind_mark<'b, C: Clone>(at: C) -> Ring<'b, C> {
    EmptyElement::at(at) + Circle::new((0, 0), 8, BLACK.stroke_width(2)) + EmptyElement::at((0, 0))
}

/// Dashed lines are drawn as one polyline with a sentinel opacity that `finish` turns into
/// an SVG `stroke-dasharray` afterwards: plotters' own dashed series writes one element per
/// dash. (opacity written, dash pattern index, opacity meant); a faded series keeps its dash.
const DASH_SENTINELS: [(f64, &str, usize, &str); 4] = [
    (0.997, "0.997", 0, "1"),
    (0.996, "0.996", 1, "1"),
    (0.297, "0.297", 0, "0.3"),
    (0.296, "0.296", 1, "0.3"),
];

/// (dash, gap) px of the dashed patterns `Style::dash` hands out (solid is not listed).
const DASHES_PX: [(u32, u32); 2] = [(8, 4), (2, 3)];

/// A series' line colour: its colour, faded or not, with its dash's sentinel opacity.
fn line_colour(s: Style, faded: bool) -> RGBAColor {
    let c = color(s);
    match DASHES_PX.iter().position(|d| *d == s.dash()) {
        None => c.mix(if faded { FADE } else { 1.0 }),
        Some(i) => {
            let k = if faded { i + 2 } else { i };
            c.mix(DASH_SENTINELS[k].0)
        }
    }
}

fn draw_line<X, Y>(
    ctx: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    s: &Series,
    pts: &[(f64, f64)],
) -> anyhow::Result<()>
where
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>,
{
    let st = line_colour(s.style, s.faded).stroke_width(2);
    ctx.draw_series(LineSeries::new(pts.iter().copied(), st))
        .map_err(err)?;
    Ok(())
}

/// Plotters' text escapes, to find a text it wrote.
fn escaped(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\'', "&apos;")
        .replace('"', "&quot;")
}

/// Replaces the sentinel opacities with the series' dash patterns, drops empty paths, and
/// gives each cut label (`truncated`: as drawn, whole) a `<title>` with its whole text.
fn finish(svg: String, truncated: &[(String, String)]) -> String {
    let mut out: Vec<String> = Vec::with_capacity(svg.len() / 40);
    let mut titles: Vec<(String, String)> = truncated
        .iter()
        .map(|(shown, full)| (escaped(shown), escaped(full)))
        .collect();
    let mut close_group = false;
    for line in svg.lines() {
        if line.contains("points=\"\"") {
            continue;
        }
        let mut l = line.to_string();
        for (_, text, i, opacity) in DASH_SENTINELS {
            let (dash, gap) = DASHES_PX[i];
            l = l.replace(
                &format!("opacity=\"{text}\""),
                &format!("opacity=\"{opacity}\" stroke-dasharray=\"{dash} {gap}\""),
            );
        }
        if close_group && l.trim() == "</text>" {
            l.push_str("</g>");
            close_group = false;
        }
        if let Some(k) = titles.iter().position(|(shown, _)| l.trim() == shown) {
            if out.last().is_some_and(|p| p.starts_with("<text")) {
                let (_, full) = titles.remove(k);
                let open = out.pop().unwrap_or_default();
                out.push(format!("<g><title>{full}</title>"));
                out.push(open);
                close_group = true;
            }
        }
        out.push(l);
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
}

/// What sits behind a marker: nothing (data points), a line (line legend) or a box (bar legend).
#[derive(Clone, Copy, PartialEq)]
enum Behind {
    Nothing,
    Line,
    Box,
}

/// A marker's outline around (0, 0), px. Every marker is one polygon, so one element type
/// serves data points and legend glyphs alike.
fn outline(m: Marker, r: i32) -> Vec<(i32, i32)> {
    let rf = r as f64;
    match m {
        Marker::Circle | Marker::HollowCircle => (0..12)
            .map(|i| {
                let a = i as f64 * std::f64::consts::PI / 6.0;
                ((rf * a.cos()).round() as i32, (rf * a.sin()).round() as i32)
            })
            .collect(),
        Marker::Triangle => vec![(0, -r - 1), (r + 1, r), (-r - 1, r)],
        Marker::Square | Marker::HollowSquare => vec![(-r, -r), (r, -r), (r, r), (-r, r)],
        Marker::Diamond => vec![(0, -r - 1), (r + 1, 0), (0, r + 1), (-r - 1, 0)],
        Marker::Cross => {
            let t = (r / 3).max(1);
            vec![
                (-r, -r + t),
                (-r + t, -r),
                (0, -t),
                (r - t, -r),
                (r, -r + t),
                (t, 0),
                (r, r - t),
                (r - t, r),
                (0, t),
                (-r + t, r),
                (-r, r - t),
                (-t, 0),
            ]
        }
    }
}

type Px = (i32, i32);
type Glyph<'b, C> = plotters::element::ComposedElement<
    C,
    SVGBackend<'b>,
    PathElement<Px>,
    plotters::element::ComposedElement<Px, SVGBackend<'b>, Polygon<Px>, PathElement<Px>>,
>;

/// The series' marker at a point (`on_bar`: black or white with a black edge, to sit on a
/// bar), over what `behind` asks for (legend glyphs).
fn marker<'b, C: Clone>(
    s: Style,
    at: C,
    r: i32,
    on_bar: bool,
    behind: Behind,
    faded: bool,
) -> Glyph<'b, C> {
    let c = color(s).mix(if faded { FADE } else { 1.0 });
    let (black, white) = if faded {
        (BLACK.mix(FADE), WHITE.mix(1.0))
    } else {
        (BLACK.mix(1.0), WHITE.mix(1.0))
    };
    let hollow = matches!(s.marker(), Marker::HollowCircle | Marker::HollowSquare);
    let (fill, edge) = match (on_bar, hollow) {
        (true, false) => (black.filled(), black.stroke_width(1)),
        (true, true) => (white.filled(), black.stroke_width(2)),
        (false, false) => (c.filled(), c.stroke_width(1)),
        (false, true) => (white.filled(), c.stroke_width(2)),
    };
    let back = match behind {
        Behind::Nothing => PathElement::new(Vec::<Px>::new(), c.stroke_width(1)),
        // The line's own dash, so the key matches the series.
        Behind::Line => PathElement::new(
            vec![(-12, 0), (12, 0)],
            line_colour(s, faded).stroke_width(2),
        ),
        Behind::Box => PathElement::new(vec![(-12, 0), (12, 0)], c.stroke_width(12)),
    };
    let pts = outline(s.marker(), r);
    let mut closed = pts.clone();
    closed.push(pts[0]);
    EmptyElement::at(at) + back + Polygon::new(pts, fill) + PathElement::new(closed, edge)
}
