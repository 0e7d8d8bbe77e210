//! A point's latency by percentile, as wrk2 and HdrHistogram's plotter draw it: x the
//! percentile on a `1/(1-q)` log axis (50% at 2, 99% at 100, 99.99% at 10,000), y the
//! latency, a series per model, read from each cell's recorded histogram (the same decoding
//! as `report --hgrm`, `export::hgrm`). A percentile is drawn only where the cell recorded an
//! op beyond it.

use super::*;
use crate::measure::Hist;

/// The percentiles drawn, with their axis labels where they are ticks.
const QUANTILES: [(f64, Option<&str>); 9] = [
    (0.5, Some("50%")),
    (0.75, None),
    (0.9, Some("90%")),
    (0.95, None),
    (0.99, Some("99%")),
    (0.995, None),
    (0.999, Some("99.9%")),
    (0.9995, None),
    (0.9999, Some("99.99%")),
];

/// Spectra drawn per workload at most (one per parameter point, in run order): a sweep of
/// thousands of points gets its first ones, not thousands of charts.
pub(crate) const SPECTRUM_POINTS: usize = 12;

/// The x of percentile `q`: `1/(1-q)`.
pub(crate) fn percentile_x(q: f64) -> f64 {
    1.0 / (1.0 - q)
}

/// The spectrum's x axis: 50% to 99.99%, a tick labelled at each decade.
fn axis() -> FixedX {
    FixedX {
        lo: percentile_x(0.5) * 0.8,
        hi: percentile_x(0.9999) * 1.25,
        ticks: QUANTILES
            .iter()
            .filter_map(|&(q, l)| Some((percentile_x(q), l?.to_string())))
            .collect(),
    }
}

/// A cell's latency at each drawn percentile it recorded an op beyond; none without a
/// histogram (older files, workloads that keep none).
fn spectrum(c: &CaseResult) -> Vec<Pt> {
    let Some(f) = c.figures.as_ref() else {
        return Vec::new();
    };
    let Ok(h) = Hist::from_base64(&f.histogram) else {
        return Vec::new();
    };
    let n = h.len() as f64;
    QUANTILES
        .iter()
        .filter(|(q, _)| n * (1.0 - q) >= 1.0)
        .map(|&(q, _)| Pt {
            x: percentile_x(q),
            y: h.quantile(q) as f64,
            whisker: None,
            band: None,
            behind: false,
            not_compared: false,
        })
        .filter(|p| p.y > 0.0)
        .collect()
}

/// One spectrum chart per parameter point of a workload whose facts chart a latency
/// ([`SPECTRUM_POINTS`] at most), a series per model with two percentiles or more.
pub(super) fn spectra(
    workload: &str,
    f: &Facts,
    roles: &ParamRoles,
    measured: &[&CaseResult],
    (names, styles): (&[String], &[Style]),
    li: &[usize],
    left_out: &Arc<[String]>,
) -> Vec<Chart> {
    let latency = f
        .chart
        .metrics
        .iter()
        .any(|m| matches!(m, Metric::LatencyP50 | Metric::LatencyP99));
    if !latency {
        return Vec::new();
    }
    let mut points = Ordered::default();
    let mut members: Vec<Vec<(&CaseResult, usize)>> = Vec::new();
    for (c, &l) in measured.iter().copied().zip(li) {
        let k = points.add(roles.point(c, None));
        if k == members.len() {
            members.push(Vec::new());
        }
        members[k].push((c, l));
    }
    let mut out = Vec::new();
    for (k, (at, cells)) in points.order.iter().zip(&members).enumerate() {
        if out.len() >= SPECTRUM_POINTS {
            break;
        }
        let mut series: Vec<Series> = cells
            .iter()
            .map(|&(c, l)| Series {
                label: names[l].clone(),
                style: styles[l],
                points: spectrum(c),
                faded: false,
            })
            .filter(|s| s.points.len() >= 2)
            .collect();
        if series.is_empty() {
            continue;
        }
        series.sort_by_key(|s| names.iter().position(|n| *n == s.label));
        out.push(Chart {
            id: format!("{}-spectrum-{}", file_slug(workload), k + 1),
            workload: workload.to_string(),
            title: if at.is_empty() {
                format!("{workload}: latency by percentile")
            } else {
                format!("{workload} {at}: latency by percentile")
            },
            kind: Kind::Lines,
            metric: Metric::LatencyP99,
            x_axis: "percentile".into(),
            y_axis: "latency per op".into(),
            log_x: true,
            log_y: true,
            categories: Vec::new(),
            x_fixed: Some(axis()),
            series,
            left_out: left_out.clone(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_axis_labels_percentiles_at_their_decades() {
        let a = axis();
        let labels: Vec<(f64, &str)> = a.ticks.iter().map(|(x, l)| (*x, l.as_str())).collect();
        assert_eq!(labels.len(), 5);
        for ((x, l), want) in labels.iter().zip([2.0, 10.0, 100.0, 1000.0, 10_000.0]) {
            assert!((x - want).abs() < 1e-6 * want, "{l} at {x}");
        }
        assert_eq!(labels[3].1, "99.9%");
        assert!(a.lo < 2.0 && a.hi > 10_000.0);
    }

    #[test]
    fn a_percentile_is_drawn_only_with_an_op_beyond_it() {
        let mut h = Hist::new();
        for i in 1..=200u64 {
            h.record(i * 1000);
        }
        let mut c: CaseResult =
            serde_json::from_str(include_str!("../../../tests/fixtures/charts.json"))
                .map(|r: RunResults| {
                    r.cases
                        .into_iter()
                        .find(|c| c.figures.is_some())
                        .expect("a measured cell")
                })
                .expect("the fixture loads");
        c.figures.as_mut().unwrap().histogram = h.to_base64();
        let pts = spectrum(&c);
        // 200 ops: 50% .. 99.5% have one beyond them; 99.9% and past do not.
        let xs: Vec<f64> = pts.iter().map(|p| p.x).collect();
        assert_eq!(xs.len(), 6, "{xs:?}");
        assert!(pts.windows(2).all(|w| w[0].y <= w[1].y));
        assert!(
            (pts[0].y - 100_000.0).abs() / 100_000.0 < 0.02,
            "{}",
            pts[0].y
        );
    }
}
