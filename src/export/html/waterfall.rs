//! Drawing a ladder's [`Waterfall`] (data) as one SVG with plotters: rungs top to bottom, each
//! a floating horizontal bar from the CPU per op of the row it adds its knob to, to its own;
//! cheaper bluish green, dearer vermillion, both pale when the change is within noise or
//! untested, and the change written beside the bar with its mark; gaps are grey bands with
//! their reason. Nothing here decides what is drawn.

use crate::export::table::fmt_ns;
use crate::export::waterfall::{Bar, Mark, Row, Waterfall};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Chart width, px (the height follows from the rung count).
pub(crate) const WIDTH: u32 = 900;
/// Height per rung, px.
const ROW: u32 = 40;
/// The left strip with the rungs' names and kernels, px.
const LABELS: u32 = 210;

const CHEAPER: RGBColor = RGBColor(0, 158, 115);
const DEARER: RGBColor = RGBColor(213, 94, 0);
const BASE: RGBColor = RGBColor(110, 110, 110);
const MUTED: RGBColor = RGBColor(90, 90, 90);
const BAND: RGBColor = RGBColor(242, 242, 238);

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing a waterfall: {e:?}")
}

/// The mark written after a change: what a reader needs to weigh it.
pub(crate) fn mark_text(m: Mark) -> &'static str {
    match m {
        Mark::Significant => "*",
        Mark::WithinNoise => "(not decided)",
        Mark::Untested => "(untested)",
    }
}

/// The legend line under every waterfall.
pub(crate) const KEY: &str =
    "bar: from the CPU per op of the row the rung adds its knob to, to its \
    own; green cheaper, vermillion dearer, pale where the change is within noise or untested; \
    * significant (Mann-Whitney p < 0.05, or the repetitions' ranges do not overlap); grey \
    bands: rungs not measured, with their reason";

/// Most characters of a gap's reason drawn in the band (the caption has it whole).
const REASON_CHARS: usize = 78;

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}...", s.chars().take(n - 3).collect::<String>())
    }
}

/// The drawing area of a whole waterfall.
type Root<'a> = DrawingArea<SVGBackend<'a>, Shift>;
/// The plot: CPU per op across, rungs down.
type Plot<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The waterfall as an SVG document (`inline`: without the XML namespace, for HTML).
pub(crate) fn draw(w: &Waterfall, inline: bool) -> anyhow::Result<String> {
    let n = w.rows.len().max(1);
    let height = 70 + ROW * n as u32 + 56;
    let xmax = x_max(w);
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut ctx = plot(&root, &w.title, n, xmax)?;
        let y = |i: usize| n as f64 - i as f64 - 0.5;
        for (i, r) in w.rows.iter().enumerate() {
            let yc = y(i);
            let (px, py) = rung_names(&root, &ctx, r, yc)?;
            let (lo, hi) = (yc - 0.32, yc + 0.32);
            match &r.bar {
                Bar::Base { cpu_ns } | Bar::Alone { cpu_ns } => {
                    ctx.draw_series(std::iter::once(Rectangle::new(
                        [(0.0, lo), (*cpu_ns, hi)],
                        BASE.filled(),
                    )))
                    .map_err(err)?;
                    let (ex, ey) = ctx.backend_coord(&(*cpu_ns, yc));
                    let what = if matches!(r.bar, Bar::Base { .. }) {
                        fmt_ns(*cpu_ns)
                    } else {
                        format!("{} (its base not measured)", fmt_ns(*cpu_ns))
                    };
                    root.draw(&text(what, (ex + 6, ey), 14, &BLACK, HPos::Left))
                        .map_err(err)?;
                }
                Bar::Step {
                    from_ns,
                    to_ns,
                    change_pct,
                    mark,
                    ..
                } => step(&root, &mut ctx, (*from_ns, *to_ns), *change_pct, *mark, yc)?,
                Bar::Gap { why } => {
                    ctx.draw_series(std::iter::once(Rectangle::new(
                        [(0.0, lo), (xmax, hi)],
                        BAND.filled(),
                    )))
                    .map_err(err)?;
                    root.draw(&text(
                        format!("gap: {}", clip(why, REASON_CHARS)),
                        (px + 8, py),
                        13,
                        &MUTED,
                        HPos::Left,
                    ))
                    .map_err(err)?;
                }
            }
        }
        root.present().map_err(err)?;
    }
    if inline {
        buf = buf.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
    }
    Ok(buf)
}

/// The x axis' end: the longest bar, with room right of it for its change text.
fn x_max(w: &Waterfall) -> f64 {
    let xmax = w
        .rows
        .iter()
        .flat_map(|r| match r.bar {
            Bar::Base { cpu_ns } | Bar::Alone { cpu_ns } => vec![cpu_ns],
            Bar::Step { from_ns, to_ns, .. } => vec![from_ns, to_ns],
            Bar::Gap { .. } => vec![],
        })
        .fold(0.0f64, f64::max);
    if xmax > 0.0 {
        xmax * 1.38
    } else {
        1.0
    }
}

/// The plot with its caption, x axis and light grid, for `n` rungs.
fn plot<'a, 'b>(root: &Root<'b>, title: &str, n: usize, xmax: f64) -> anyhow::Result<Plot<'a, 'b>> {
    let mut ctx = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        // Room for the last x tick's label ("8000 ns") past the plot's right edge.
        .margin_right(36)
        .x_label_area_size(44)
        .y_label_area_size(LABELS)
        .build_cartesian_2d(0f64..xmax, 0f64..n as f64)
        .map_err(err)?;
    let xl = |v: &f64| fmt_ns(*v);
    ctx.configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_labels(6)
        .x_label_formatter(&xl)
        .x_desc("server CPU per op")
        .axis_desc_style(("sans-serif", 16))
        .label_style(("sans-serif", 14))
        .light_line_style(RGBColor(238, 238, 238))
        .max_light_lines(1)
        .draw()
        .map_err(err)?;
    Ok(ctx)
}

/// A text at a pixel, centred on it vertically.
fn text(
    s: String,
    at: (i32, i32),
    size: u32,
    c: &RGBColor,
    h: HPos,
) -> Text<'static, (i32, i32), String> {
    Text::new(
        s,
        at,
        ("sans-serif", size)
            .into_font()
            .color(c)
            .pos(Pos::new(h, VPos::Center)),
    )
}

/// The rung's name, its kernel and the row it is over when not the one above, left of the
/// plot; returns the pixel where the rung's row starts.
fn rung_names(root: &Root<'_>, ctx: &Plot<'_, '_>, r: &Row, yc: f64) -> anyhow::Result<(i32, i32)> {
    let (px, py) = ctx.backend_coord(&(0.0, yc));
    root.draw(&text(
        r.model.to_string(),
        (px - 10, py - 8),
        15,
        &BLACK,
        HPos::Right,
    ))
    .map_err(err)?;
    let sub = match r.over_other {
        Some(o) => format!("{}, over {o}", r.kernel),
        None => r.kernel.clone(),
    };
    root.draw(&text(sub, (px - 10, py + 9), 12, &MUTED, HPos::Right))
        .map_err(err)?;
    Ok((px, py))
}

/// A step's floating bar from `from_ns` to `to_ns`, where it starts, and its change.
fn step(
    root: &Root<'_>,
    ctx: &mut Plot<'_, '_>,
    (from_ns, to_ns): (f64, f64),
    change_pct: f64,
    mark: Mark,
    yc: f64,
) -> anyhow::Result<()> {
    let (lo, hi) = (yc - 0.32, yc + 0.32);
    let c = if to_ns <= from_ns { CHEAPER } else { DEARER };
    let sure = mark == Mark::Significant;
    let fill = if sure {
        c.filled()
    } else {
        c.mix(0.35).filled()
    };
    ctx.draw_series(std::iter::once(Rectangle::new(
        [(from_ns, lo), (to_ns, hi)],
        fill,
    )))
    .map_err(err)?;
    ctx.draw_series(std::iter::once(Rectangle::new(
        [(from_ns, lo), (to_ns, hi)],
        c.stroke_width(1),
    )))
    .map_err(err)?;
    // Where it starts: a thin line from the row above's edge.
    ctx.draw_series(std::iter::once(PathElement::new(
        vec![(from_ns, hi + 0.36), (from_ns, lo)],
        MUTED.stroke_width(1),
    )))
    .map_err(err)?;
    let (ex, ey) = ctx.backend_coord(&(from_ns.max(to_ns), yc));
    root.draw(&text(
        format!("{} ({change_pct:+.1}%) {}", fmt_ns(to_ns), mark_text(mark)),
        (ex + 6, ey),
        14,
        if sure { &BLACK } else { &MUTED },
        HPos::Left,
    ))
    .map_err(err)?;
    Ok(())
}
