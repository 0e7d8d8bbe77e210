//! Drawing: one [`Chart`] (data) to one SVG with plotters' SVG backend. Nothing here decides
//! what is plotted; it only turns series into pixels, with each series' colour, marker and
//! dash from its [`Style`].

use crate::export::charts::{Chart, Kind, Marker, Series, Style};
use crate::export::table::{fmt_ns, fmt_rate, fmt_ratio};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Chart size, px.
pub(crate) const WIDTH: u32 = 900;
pub(crate) const HEIGHT: u32 = 440;
/// The legend strip at the right, px: legends never cover data.
const LEGEND_WIDTH: u32 = 170;

/// One legend entry per series, in series order, in the strip right of the plot.
fn legend(area: &DrawingArea<SVGBackend<'_>, Shift>, chart: &Chart) -> anyhow::Result<()> {
    let behind = if chart.kind == Kind::Bars {
        Behind::Box
    } else {
        Behind::Line
    };
    for (i, s) in chart.series.iter().enumerate() {
        let y = 52 + i as i32 * 22;
        area.draw(&marker(
            s.style,
            (16, y),
            4,
            chart.kind == Kind::Bars,
            behind,
        ))
        .map_err(err)?;
        area.draw(&Text::new(
            s.label.clone(),
            (34, y),
            ("sans-serif", 16)
                .into_font()
                .into_text_style(area)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(err)?;
    }
    Ok(())
}

fn color(s: Style) -> RGBColor {
    let (r, g, b) = s.rgb();
    RGBColor(r, g, b)
}

/// The chart as an SVG document. `inline` drops the XML namespace (not needed inside HTML,
/// and the report carries no URL of any kind).
pub fn draw(chart: &Chart, inline: bool) -> anyhow::Result<String> {
    let mut buf = String::new();
    {
        let full = SVGBackend::with_string(&mut buf, (WIDTH, HEIGHT)).into_drawing_area();
        full.fill(&WHITE).map_err(err)?;
        let (root, key) = full.split_horizontally(WIDTH - LEGEND_WIDTH);
        legend(&key, chart)?;
        let log_x = use_log_x(chart);
        let (x0, x1) = x_range(chart, log_x);
        let (y0, y1) = y_range(chart);
        match (log_x, chart.log_y) {
            (false, false) => plot(&root, chart, x0..x1, y0..y1, y0)?,
            (true, false) => plot(&root, chart, (x0..x1).log_scale(), y0..y1, y0)?,
            (false, true) => plot(&root, chart, x0..x1, (y0..y1).log_scale(), y0)?,
            (true, true) => plot(&root, chart, (x0..x1).log_scale(), (y0..y1).log_scale(), y0)?,
        }
        full.present().map_err(err)?;
    }
    buf = finish(buf);
    if inline {
        buf = buf.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
    }
    Ok(buf)
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing a chart: {e:?}")
}

fn points(chart: &Chart) -> impl Iterator<Item = f64> + '_ {
    chart.series.iter().flat_map(|s| {
        s.points.iter().flat_map(|p| {
            let (lo, hi) = p.whisker.unwrap_or((p.y, p.y));
            let (blo, bhi) = p.band.unwrap_or((p.y, p.y));
            [p.y, lo, hi, blo, bhi]
        })
    })
}

/// The data's x span (lines only).
fn x_span(chart: &Chart) -> (f64, f64) {
    chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        })
}

/// A log x axis only where the chart asks for one and the data spans at least two decades:
/// over a narrower span (a rate sweep from 50,000 to 100,000) a log axis has one labelled
/// tick, or labels crowded together at its right end.
fn use_log_x(chart: &Chart) -> bool {
    let (lo, hi) = x_span(chart);
    chart.log_x && chart.kind == Kind::Lines && lo > 0.0 && hi / lo >= 100.0
}

/// Width of the plot area, px (the chart less the legend strip, margins and y labels).
const PLOT_WIDTH: u32 = WIDTH - LEGEND_WIDTH - 2 * 12 - 78;

/// An x tick label: compact, so labels stay short ("50k", "1.5M", "64").
fn x_tick(v: f64) -> String {
    let a = v.abs();
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if a >= 1e6 {
        format!("{}M", trim(format!("{:.2}", v / 1e6)))
    } else if a >= 1e4 {
        format!("{}k", trim(format!("{:.1}", v / 1e3)))
    } else if a >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        trim(format!("{v:.2}"))
    }
}

/// How many x labels fit side by side: the plot's width over the widest label's width (0.6 em
/// a character at the 15 px label font, plus a gap of two characters).
fn x_label_count(chart: &Chart) -> usize {
    let (lo, hi) = x_span(chart);
    let chars = [lo, hi, (lo + hi) / 2.0]
        .iter()
        .map(|v| x_tick(*v).chars().count() + 1)
        .max()
        .unwrap_or(4);
    let per = (chars + 2) as f64 * 0.6 * 15.0;
    ((PLOT_WIDTH as f64 / per) as usize).clamp(2, 10)
}

fn x_range(chart: &Chart, log_x: bool) -> (f64, f64) {
    if chart.kind == Kind::Bars {
        return (0.0, chart.categories.len().max(1) as f64);
    }
    let xs = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x));
    let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    if log_x {
        (lo / 1.5, hi * 1.5)
    } else {
        let pad = ((hi - lo) * 0.05).max(0.5);
        (lo - pad, hi + pad)
    }
}

fn y_range(chart: &Chart) -> (f64, f64) {
    let ys = points(chart).filter(|v| v.is_finite() && (!chart.log_y || *v > 0.0));
    let (lo, hi) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| {
        (a.min(y), b.max(y))
    });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if chart.log_y {
        // At least a decade and a half, so the axis always has labelled ticks.
        let (lo, hi) = (lo / 2.0, hi * 2.0);
        if hi / lo < 30.0 {
            let mid = (lo * hi).sqrt();
            (mid / 30f64.sqrt(), mid * 30f64.sqrt())
        } else {
            (lo, hi)
        }
    } else {
        (0.0, if hi > 0.0 { hi * 1.12 } else { 1.0 })
    }
}

/// Tick labels in the metric's unit.
fn tick(chart: &Chart, v: f64) -> String {
    use crate::export::charts::Metric::*;
    match chart.metric {
        LatencyP50 | LatencyP99 | CpuPerOp => fmt_ns(v),
        OpsPerSec => fmt_rate(v),
        SyscallsPer100 if v.abs() >= 10.0 => format!("{v:.0}"),
        SyscallsPer100 => fmt_ratio(v),
    }
}

/// Lines the tallest bar category label takes (one per parameter).
fn category_lines(chart: &Chart) -> usize {
    if chart.kind != Kind::Bars {
        return 1;
    }
    chart
        .categories
        .iter()
        .map(|c| c.split(' ').count())
        .max()
        .unwrap_or(1)
}

fn plot<X, Y>(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    chart: &Chart,
    x: X,
    y: Y,
    y_base: f64,
) -> anyhow::Result<()>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut ctx = ChartBuilder::on(root)
        .caption(&chart.title, ("sans-serif", 21))
        .margin(12)
        .x_label_area_size(30 + 16 * category_lines(chart) as u32)
        .y_label_area_size(78)
        .build_cartesian_2d(x, y)
        .map_err(err)?;
    let ylab = |v: &f64| tick(chart, *v);
    let bars = chart.kind == Kind::Bars;
    let xlab = |v: &f64| x_tick(*v);
    let mut mesh = ctx.configure_mesh();
    mesh.x_desc(chart.x_axis.as_str())
        .y_desc(chart.y_axis.as_str())
        .y_label_formatter(&ylab)
        .axis_desc_style(("sans-serif", 17))
        .label_style(("sans-serif", 15))
        .light_line_style(RGBColor(238, 238, 238))
        .max_light_lines(2);
    if bars {
        mesh.disable_x_mesh().x_labels(0);
    } else {
        mesh.x_label_formatter(&xlab).x_labels(x_label_count(chart));
    }
    mesh.draw().map_err(err)?;

    let n = chart.series.len().max(1) as f64;
    for (j, s) in chart.series.iter().enumerate() {
        let c = color(s.style);
        let style = s.style;
        if bars {
            let w = 0.8 / n;
            let x0 = |p: &crate::export::charts::Pt| p.x + 0.1 + j as f64 * w;
            ctx.draw_series(
                s.points.iter().map(|p| {
                    Rectangle::new([(x0(p), y_base), (x0(p) + w * 0.92, p.y)], c.filled())
                }),
            )
            .map_err(err)?;
            // The figure's 95% CI: a dark band across the middle of the bar.
            ctx.draw_series(s.points.iter().filter_map(|p| {
                let (lo, hi) = p.band?;
                let mid = x0(p) + w * 0.46;
                Some(Rectangle::new(
                    [(mid - w * 0.18, lo), (mid + w * 0.18, hi)],
                    BLACK.mix(0.45).filled(),
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
            ctx.draw_series(
                s.points
                    .iter()
                    .map(|p| marker(style, (x0(p) + w * 0.46, p.y), 4, true, Behind::Nothing)),
            )
            .map_err(err)?;
        } else {
            let pts: Vec<(f64, f64)> = s.points.iter().map(|p| (p.x, p.y)).collect();
            draw_line(&mut ctx, s, &pts)?;
            ctx.draw_series(
                pts.iter()
                    .map(|&p| marker(style, p, 5, false, Behind::Nothing)),
            )
            .map_err(err)?;
        }
    }

    if bars {
        for (i, cat) in chart.categories.iter().enumerate() {
            let (px, py) = ctx.backend_coord(&(i as f64 + 0.5, y_base));
            let text = if cat.is_empty() { "all models" } else { cat };
            // One "k=v" per line, so neighbouring categories never overlap.
            let parts: Vec<&str> = if cat.is_empty() {
                vec![text]
            } else {
                text.split(' ').collect()
            };
            for (k, part) in parts.into_iter().enumerate() {
                root.draw(&Text::new(
                    part.to_string(),
                    (px, py + 6 + 16 * k as i32),
                    ("sans-serif", 15)
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

/// Dashed lines are drawn as one polyline with a sentinel opacity that `dash` turns into an
/// SVG `stroke-dasharray` afterwards: plotters' own dashed series writes one element per dash.
const DASH_SENTINELS: [(f64, &str); 2] = [(0.997, "0.997"), (0.996, "0.996")];

fn draw_line<X, Y>(
    ctx: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    s: &Series,
    pts: &[(f64, f64)],
) -> anyhow::Result<()>
where
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>,
{
    let c = color(s.style);
    let st = match DASHES_PX.iter().position(|d| *d == s.style.dash()) {
        None => c.stroke_width(2),
        Some(i) => c.mix(DASH_SENTINELS[i].0).stroke_width(2),
    };
    ctx.draw_series(LineSeries::new(pts.iter().copied(), st))
        .map_err(err)?;
    Ok(())
}

/// Replaces the sentinel opacities with the series' dash patterns, and drops empty paths.
fn finish(svg: String) -> String {
    let mut out = String::with_capacity(svg.len());
    for line in svg.lines() {
        if line.contains("points=\"\"") {
            continue;
        }
        let mut l = line.to_string();
        for (i, (_, text)) in DASH_SENTINELS.iter().enumerate() {
            let (dash, gap) = DASHES_PX[i];
            l = l.replace(
                &format!("opacity=\"{text}\""),
                &format!("opacity=\"1\" stroke-dasharray=\"{dash} {gap}\""),
            );
        }
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// (dash, gap) px of the dashed patterns `Style::dash` hands out (solid is not listed).
const DASHES_PX: [(u32, u32); 2] = [(8, 4), (2, 3)];

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
fn marker<'b, C: Clone>(s: Style, at: C, r: i32, on_bar: bool, behind: Behind) -> Glyph<'b, C> {
    let c = color(s);
    let hollow = matches!(s.marker(), Marker::HollowCircle | Marker::HollowSquare);
    let (fill, edge) = match (on_bar, hollow) {
        (true, false) => (BLACK.filled(), BLACK.stroke_width(1)),
        (true, true) => (WHITE.filled(), BLACK.stroke_width(2)),
        (false, false) => (c.filled(), c.stroke_width(1)),
        (false, true) => (WHITE.filled(), c.stroke_width(2)),
    };
    let back = match behind {
        Behind::Nothing => PathElement::new(Vec::<Px>::new(), c.stroke_width(1)),
        Behind::Line => PathElement::new(vec![(-12, 0), (12, 0)], c.stroke_width(2)),
        Behind::Box => PathElement::new(vec![(-12, 0), (12, 0)], c.stroke_width(12)),
    };
    let pts = outline(s.marker(), r);
    let mut closed = pts.clone();
    closed.push(pts[0]);
    EmptyElement::at(at) + back + Polygon::new(pts, fill) + PathElement::new(closed, edge)
}
