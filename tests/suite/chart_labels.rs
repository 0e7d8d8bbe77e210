//! Chart tick labels never overlap: the http.rate-like sweep (offered rates 50,000 .. 100,000,
//! linear and log x) and a wide log sweep, drawn to SVG; the x-axis labels (the `<text>`
//! elements sharing the lowest label row) are read back and each must end before the next
//! begins (width estimated at 0.6 em per character of the 15 px label font). Category labels
//! keep every word, wrapped at spaces, in both layouts; one cut short says so in a `<title>`.

use ringside::export::charts::{Chart, Kind, Metric, Pt, Series, Style};
use ringside::export::html::svg::{draw, draw_in, Layout};
use std::sync::Arc;

fn chart(xs: &[f64], log_x: bool) -> Chart {
    Chart {
        id: "t".into(),
        workload: "http.rate".into(),
        title: "p99 latency per op".into(),
        kind: Kind::Lines,
        metric: Metric::LatencyP99,
        x_axis: "offered rate, req/s".into(),
        y_axis: "p99 latency per op".into(),
        log_x,
        log_y: false,
        categories: Vec::new(),
        x_fixed: None,
        series: vec![Series {
            label: "epoll-lt".into(),
            style: Style {
                slot: 0,
                colour: Some(0),
            },
            faded: false,
            points: xs
                .iter()
                .map(|&x| Pt {
                    x,
                    y: 1000.0 + x / 100.0,
                    whisker: None,
                    band: None,
                    behind: false,
                    not_compared: false,
                })
                .collect(),
        }],
        left_out: Arc::from(Vec::<String>::new()),
    }
}

/// (x, y, anchor, text) of every `<text>` element.
fn texts(svg: &str) -> Vec<(f64, f64, String, String)> {
    let mut out = Vec::new();
    for part in svg.split("<text").skip(1) {
        let attr = |name: &str| {
            let k = format!(" {name}=\"");
            part.find(&k).map(|i| {
                let rest = &part[i + k.len()..];
                rest[..rest.find('"').unwrap()].to_string()
            })
        };
        let body = &part[part.find('>').unwrap() + 1..part.find("</text>").unwrap()];
        if let (Some(x), Some(y)) = (attr("x"), attr("y")) {
            out.push((
                x.parse().unwrap(),
                y.parse().unwrap(),
                attr("text-anchor").unwrap_or_default(),
                body.trim().to_string(),
            ));
        }
    }
    out
}

fn assert_x_labels_apart(c: &Chart) {
    let svg = draw(c, true).unwrap();
    let ts = texts(&svg);
    // The x tick labels: the row of numeric labels with the largest y below the plot.
    let numeric: Vec<&(f64, f64, String, String)> = ts
        .iter()
        .filter(|t| t.3.chars().next().is_some_and(|ch| ch.is_ascii_digit()))
        .collect();
    let y = numeric
        .iter()
        .map(|t| t.1)
        .fold(f64::NEG_INFINITY, f64::max);
    let mut row: Vec<&&(f64, f64, String, String)> =
        numeric.iter().filter(|t| (t.1 - y).abs() < 0.5).collect();
    assert!(row.len() >= 2, "x labels: {row:?}");
    row.sort_by(|a, b| a.0.total_cmp(&b.0));
    let width = |t: &str| t.chars().count() as f64 * 0.6 * 15.0;
    eprintln!(
        "x labels: {:?}",
        row.iter().map(|t| (t.0, &t.3)).collect::<Vec<_>>()
    );
    for w in row.windows(2) {
        // Centred labels: half of each on either side.
        let gap = w[1].0 - w[0].0;
        let need = (width(&w[0].3) + width(&w[1].3)) / 2.0;
        assert!(
            gap >= need,
            "labels {:?} at {} and {:?} at {} overlap (need {need:.0} px)",
            w[0].3,
            w[0].0,
            w[1].3,
            w[1].0
        );
    }
}

#[test]
fn rate_sweep_x_labels_do_not_overlap() {
    let rates: Vec<f64> = (5..=10).map(|i| i as f64 * 10_000.0).collect();
    assert_x_labels_apart(&chart(&rates, false));
    assert_x_labels_apart(&chart(&rates, true));
}

#[test]
fn wide_log_sweep_x_labels_do_not_overlap() {
    let conns = [1.0, 2.0, 50.0, 100.0, 1000.0, 10_000.0, 100_000.0];
    assert_x_labels_apart(&chart(&conns, true));
    assert_x_labels_apart(&chart(&conns, false));
}

/// A bar chart with `cats` as its categories, two series.
fn bars(cats: &[&str]) -> Chart {
    let mut c = chart(&[], false);
    c.kind = Kind::Bars;
    c.metric = Metric::CpuPerOp;
    c.categories = cats.iter().map(|s| s.to_string()).collect();
    c.series = ["epoll-lt", "ext:mine"]
        .iter()
        .enumerate()
        .map(|(k, l)| Series {
            label: l.to_string(),
            style: Style {
                slot: k,
                colour: Some(k),
            },
            faded: false,
            points: (0..cats.len())
                .map(|x| Pt {
                    x: x as f64,
                    y: 1000.0 + 100.0 * x as f64,
                    whisker: None,
                    band: None,
                    behind: false,
                    not_compared: k == 1 && x == 0,
                })
                .collect(),
        })
        .collect();
    c
}

/// Every word of each category in the drawn texts, in order, none split off or dropped
/// (a word too wide for its category may be split across lines: compared without spaces);
/// a label cut short ends with "…" and has a `<title>` with its whole text.
fn assert_categories_intact(c: &Chart, layout: Layout) {
    let svg = draw_in(c, layout, true).unwrap();
    let drawn: String = texts(&svg)
        .iter()
        .map(|t| t.3.replace("&apos;", "'").replace("&amp;", "&"))
        .collect::<Vec<_>>()
        .concat()
        .split_whitespace()
        .collect();
    for cat in &c.categories {
        let whole: String = cat.split_whitespace().collect();
        if drawn.contains(&whole) {
            continue;
        }
        assert!(
            svg.contains(&format!("<title>{cat}</title>")) && svg.contains('…'),
            "{layout:?}: {cat:?} lost words: drawn {drawn:?}"
        );
    }
}

#[test]
fn category_labels_keep_their_words() {
    let c = bars(&[
        "http.rate equal load (30% of slowest, 21.8 k req/s)",
        "echo.conns conns=100 msg_bytes=64 rate_per_sec=21800",
        "udp.echo_gso gso=on 30% of slowest 22 k req/s",
    ]);
    for layout in [Layout::Wide, Layout::Narrow] {
        assert_categories_intact(&c, layout);
    }
    // Not a word per line: the first label's lines hold several words in the wide drawing.
    let svg = draw_in(&c, Layout::Wide, true).unwrap();
    assert!(
        texts(&svg)
            .iter()
            .any(|t| t.3.starts_with("load") && t.3.split(' ').count() >= 3),
        "{:?}",
        texts(&svg).iter().map(|t| &t.3).collect::<Vec<_>>()
    );
    // The check can fail: a label with a word dropped is caught.
    let mut broken = c.clone();
    broken.categories[0] = broken.categories[0].replace("slowest", "slowest extra");
    let svg = draw_in(&c, Layout::Wide, true).unwrap();
    let drawn: String = texts(&svg).iter().map(|t| t.3.clone()).collect::<String>();
    let whole: String = broken.categories[0].split_whitespace().collect();
    assert!(!drawn
        .split_whitespace()
        .collect::<String>()
        .contains(&whole));
}

#[test]
fn a_label_too_long_for_its_lines_ends_with_an_ellipsis_and_keeps_a_title() {
    let long = "a very long category label ".repeat(8);
    let c = bars(&[long.trim(), "b", "c", "d", "e", "f"]);
    let svg = draw_in(&c, Layout::Narrow, true).unwrap();
    assert!(
        svg.contains(&format!("<title>{}</title>", long.trim())),
        "no title"
    );
    assert!(texts(&svg).iter().any(|t| t.3.ends_with('…')));
    assert_categories_intact(&c, Layout::Narrow);
}

#[test]
fn a_bar_not_compared_is_hatched_and_the_legend_says_so() {
    let c = bars(&["one", "two"]);
    let svg = draw(&c, true).unwrap();
    assert!(texts(&svg).iter().any(|t| t.3 == "not compared"), "no key");
    // The hatching: a light grey box under diagonal strokes.
    assert!(
        svg.contains("#D7D7D7") || svg.contains("#d7d7d7"),
        "no grey box"
    );
    let none = {
        let mut c = c.clone();
        for s in &mut c.series {
            for p in &mut s.points {
                p.not_compared = false;
            }
        }
        draw(&c, true).unwrap()
    };
    assert!(!texts(&none).iter().any(|t| t.3 == "not compared"));
}

#[test]
fn a_dashed_series_has_a_dashed_legend_swatch() {
    let mut c = chart(&[1.0, 2.0, 3.0], false);
    c.series[0].style.slot = 1; // (8, 4) dashes
    let svg = draw(&c, true).unwrap();
    // The line and its legend swatch: both dashed.
    assert_eq!(svg.matches("stroke-dasharray=\"8 4\"").count(), 2, "{svg}");
    c.series[0].faded = true;
    let svg = draw(&c, true).unwrap();
    assert_eq!(svg.matches("stroke-dasharray=\"8 4\"").count(), 2);
    assert!(svg.contains("opacity=\"0.3\" stroke-dasharray"));
}
