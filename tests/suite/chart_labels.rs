//! Chart tick labels never overlap: the http.rate-like sweep (offered rates 50,000 .. 100,000,
//! linear and log x) and a wide log sweep, drawn to SVG; the x-axis labels (the `<text>`
//! elements sharing the lowest label row) are read back and each must end before the next
//! begins (width estimated at 0.6 em per character of the 15 px label font).

use ringside::export::charts::{Chart, Kind, Metric, Pt, Series, Style};
use ringside::export::html::svg::draw;
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
