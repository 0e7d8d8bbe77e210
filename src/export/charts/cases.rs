//! One workload's charts from its cells: its labels with their styles, then lines of each
//! metric along a sweep parameter (and a rate sweep's p99 against the rate achieved), or bars
//! per parameter point (points with their intervals where a sweep measured one value), then
//! each point's latency by percentile, then the troubled cells' timelines.

use super::*;

/// Each label's cells in one group of a sweep (only the labels the group has).
type ByLabel<'c> = BTreeMap<usize, Vec<&'c CaseResult>>;

/// A workload's series labels in style order, each with its style, and the ranking's
/// standings that say which to fade on which figure.
struct Labels {
    names: Vec<String>,
    styles: Vec<Style>,
    lead: Option<crate::analysis::Highlighted>,
}

impl Labels {
    /// Whether label `l` is drawn faded on a chart of `m`: only where it was decided behind
    /// on that very figure (a model behind on CPU per op is not faded on throughput or p99).
    fn faded(&self, l: usize, m: Metric) -> bool {
        self.lead
            .as_ref()
            .is_some_and(|h| h.behind_on(&self.names[l], m))
            && !m.is_memory()
    }
}

/// What every chart of one workload shares.
struct Shared<'a> {
    workload: &'a str,
    /// What the figures mean: the file's record ([`crate::analysis::cells::facts_in`]).
    f: Facts,
    roles: ParamRoles,
    labels: Labels,
    left_out: Arc<[String]>,
}

/// The charts of one workload from its cells (in run order).
pub(crate) fn for_cases(
    workload: &str,
    cases: &[&CaseResult],
    styles: &Styles,
    a: &Analysis,
) -> Vec<Chart> {
    let f = a
        .workload(workload)
        .map_or_else(|| facts(workload), |w| w.facts);
    let left_out = left_out_of(cases);
    let measured: Vec<&CaseResult> = cases
        .iter()
        .copied()
        .filter(|c| c.status == Status::Measured && c.figures.is_some())
        .collect();
    if measured.is_empty() {
        return Vec::new();
    }
    let (labels, li) = labels_of(workload, &measured, styles, a);
    let w = Shared {
        workload,
        f,
        roles: ParamRoles::of_cases(cases),
        labels,
        left_out,
    };
    let mut charts = match (sweep_param(&f.chart, &measured), f.chart.sweep) {
        (Some(param), Some(sw)) => sweep_charts(&w, &measured, &li, param, sw),
        _ => bar_charts(&w, &measured, &li),
    };
    charts.extend(spectra(
        workload,
        &f,
        &w.roles,
        &measured,
        (&w.labels.names, &w.labels.styles),
        &li,
        &w.left_out,
    ));
    charts.extend(timelines(workload, &f, &measured, &w.left_out));
    charts.into_iter().map(settle_y_scale).collect()
}

/// The cells left out of the charts (not measured, or without figures), each with why.
fn left_out_of(cases: &[&CaseResult]) -> Arc<[String]> {
    cases
        .iter()
        .filter(|c| c.status != Status::Measured || c.figures.is_none())
        .map(|c| {
            let p = c.params_text();
            format!(
                "{}{}{}: {}: {}",
                c.label(),
                if p.is_empty() { "" } else { " " },
                p,
                c.status,
                c.reason.as_deref().unwrap_or("no reason recorded")
            )
        })
        .collect()
}

/// The labels in style order, and each measured cell's label index.
fn labels_of(
    workload: &str,
    measured: &[&CaseResult],
    styles: &Styles,
    a: &Analysis,
) -> (Labels, Vec<usize>) {
    let cell_labels: Vec<String> = measured.iter().map(|c| c.label()).collect();
    let mut labels: Vec<String> = cell_labels.clone();
    labels.sort();
    labels.dedup();
    labels.sort_by_key(|l| styles.order(l));
    let label_index: HashMap<&str, usize> = labels
        .iter()
        .enumerate()
        .map(|(i, l)| (l.as_str(), i))
        .collect();
    let li: Vec<usize> = cell_labels
        .iter()
        .map(|l| label_index[l.as_str()])
        .collect();
    let lead = a.workload(workload).and_then(|w| w.highlighted());
    let label_styles: Vec<Style> = labels.iter().map(|l| styles.of(l)).collect();
    let labels = Labels {
        names: labels,
        styles: label_styles,
        lead,
    };
    (labels, li)
}

/// Whether every cell was offered one rate the runner derived for all models (an equal-load
/// point): its throughput is that rate by design, so it gets no throughput chart.
fn equal_load(cells: &[&CaseResult]) -> bool {
    !cells.is_empty() && cells.iter().all(|c| c.rate_per_sec.is_some())
}

/// Lines along the sweep: one chart per metric and per combination of the other params (a
/// group), and for a rate sweep each group's p99 against the rate achieved.
fn sweep_charts(
    w: &Shared,
    measured: &[&CaseResult],
    li: &[usize],
    param: &str,
    sw: Sweep,
) -> Vec<Chart> {
    let (groups, members) = sweep_groups(&w.roles, measured, li, param);
    let ngroups = groups.order.len();
    let suffix_of = |gi: usize| {
        if ngroups > 1 {
            format!("-{}", gi + 1)
        } else {
            String::new()
        }
    };
    let mut charts = Vec::new();
    for (gi, (g, by_label)) in groups.order.iter().zip(&members).enumerate() {
        let cells: Vec<&CaseResult> = by_label.values().flatten().copied().collect();
        let flat = equal_load(&cells);
        // One value of the sweep measured: points with their intervals, not a line over a
        // made-up range. Per metric: a figure some cells lack (syscalls not counted at a
        // capacity probe) may have one value where the others have several.
        let one_point = one_point(&cells, param);
        for &m in w.f.chart.metrics {
            if flat && m == Metric::OpsPerSec {
                continue;
            }
            let with: Vec<&CaseResult> = cells
                .iter()
                .copied()
                .filter(|c| c.figures.as_ref().and_then(|f| m.value(f)).is_some())
                .collect();
            if one_point || self::one_point(&with, param) {
                charts.extend(point_chart(w, &suffix_of(gi), m, param, by_label));
            } else {
                charts.extend(line_chart(w, g, &suffix_of(gi), m, param, sw, by_label));
            }
        }
        if w.f.rate_sweep && !one_point {
            charts.extend(against_achieved(w, g, &suffix_of(gi), param, by_label));
        }
    }
    charts
}

/// Whether `cells` measured fewer than two values of the sweep parameter `param`: nothing
/// to draw a line through.
pub(crate) fn one_point(cells: &[&CaseResult], param: &str) -> bool {
    let mut xs: Vec<f64> = cells
        .iter()
        .filter_map(|c| c.params.0.get(param)?.as_f64())
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    xs.len() < 2
}

/// A one-value sweep's metric as points with their intervals: the point (all its params) as
/// the one category, a series per label.
fn point_chart(
    w: &Shared,
    suffix: &str,
    m: Metric,
    param: &str,
    by_label: &ByLabel,
) -> Option<Chart> {
    let mut categories = Ordered::default();
    let mut cells: Vec<Vec<(usize, &CaseResult)>> = vec![Vec::new(); w.labels.names.len()];
    for (&l, cs) in by_label {
        for &c in cs {
            // The point's params, the sweep's own value first (it varies in no cell here).
            let swept = c
                .params
                .0
                .get(param)
                .map(|v| format!("{param}={v}"))
                .unwrap_or_default();
            let rest = w.roles.point(c, Some(param));
            let x = categories.add(format!("{swept} {rest}").trim().to_string());
            cells[l].push((x, c));
        }
    }
    let mut c = bar_chart(w, suffix, "", m, &categories.order, &cells, true)?;
    c.kind = Kind::Points;
    if no_whisker(m)
        && c.series
            .iter()
            .any(|s| s.points.iter().any(|p| p.whisker.is_some()))
    {
        c.title.push_str("; whisker: the repetitions' range");
    }
    Some(c)
}

/// Whether the metric has no whisker of its own (a whisker drawn is then the repetitions'
/// range, which the title says).
fn no_whisker(m: Metric) -> bool {
    !matches!(m, Metric::LatencyP50 | Metric::OpsPerSec)
}

/// The sweep's groups (combinations of the params other than `param`) in first-seen order,
/// and each group's cells by label.
fn sweep_groups<'c>(
    roles: &ParamRoles,
    measured: &[&'c CaseResult],
    li: &[usize],
    param: &str,
) -> (Ordered, Vec<ByLabel<'c>>) {
    let mut groups = Ordered::default();
    let mut members: Vec<ByLabel<'c>> = Vec::new();
    for (c, &l) in measured.iter().copied().zip(li) {
        let g = groups.add(roles.point(c, Some(param)));
        if g == members.len() {
            members.push(BTreeMap::new());
        }
        members[g].entry(l).or_default().push(c);
    }
    (groups, members)
}

/// One metric's lines along the sweep in group `g`: a series per label, points in the
/// order of the sweep parameter; none without a point.
fn line_chart(
    w: &Shared,
    g: &str,
    suffix: &str,
    m: Metric,
    param: &str,
    sw: Sweep,
    by_label: &ByLabel,
) -> Option<Chart> {
    let series = by_label
        .iter()
        .map(|(&l, cells)| {
            let mut points: Vec<Pt> = cells
                .iter()
                .filter_map(|c| {
                    let x = c.params.0.get(param)?.as_f64()?;
                    let y = m.value(c.figures.as_ref()?)?;
                    (x > 0.0 || !sw.log_x).then_some(Pt {
                        x,
                        y,
                        whisker: None,
                        band: None,
                        behind: behind(c),
                        not_compared: false,
                    })
                })
                .collect();
            points.sort_by(|a, b| a.x.total_cmp(&b.x));
            Series {
                label: w.labels.names[l].clone(),
                style: w.labels.styles[l],
                points,
                faded: w.labels.faded(l, m),
            }
        })
        .filter(|s| !s.points.is_empty())
        .collect::<Vec<_>>();
    if series.is_empty() {
        return None;
    }
    let workload = w.workload;
    Some(Chart {
        id: format!("{}-{}{suffix}", file_slug(workload), m.slug()),
        workload: workload.to_string(),
        title: if g.is_empty() {
            format!("{workload}: {}", m.title(false, false))
        } else {
            format!("{workload} {g}: {}", m.title(false, false))
        },
        kind: Kind::Lines,
        metric: m,
        x_axis: sw.axis.to_string(),
        y_axis: m.axis().to_string(),
        log_x: sw.log_x,
        log_y: w.f.chart.log_y,
        categories: Vec::new(),
        x_fixed: None,
        series,
        left_out: w.left_out.clone(),
    })
}

/// A rate sweep's p99 against the rate each model achieved (wrk2's picture): each model's
/// points in the order of the rates offered, so a model past its capacity bends back.
fn against_achieved(
    w: &Shared,
    g: &str,
    suffix: &str,
    param: &str,
    by_label: &ByLabel,
) -> Option<Chart> {
    let m = Metric::LatencyP99;
    let series: Vec<Series> = by_label
        .iter()
        .map(|(&l, cells)| {
            let mut pts: Vec<(f64, Pt)> = cells
                .iter()
                .filter_map(|c| {
                    let offered = c.params.0.get(param)?.as_f64()?;
                    let x = c.achieved_rate()?;
                    let y = m.value(c.figures.as_ref()?)?;
                    Some((
                        offered,
                        Pt {
                            x,
                            y,
                            whisker: None,
                            band: None,
                            behind: behind(c),
                            not_compared: false,
                        },
                    ))
                })
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label: w.labels.names[l].clone(),
                style: w.labels.styles[l],
                points: pts.into_iter().map(|p| p.1).collect(),
                faded: w.labels.faded(l, m),
            }
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if series.is_empty() {
        return None;
    }
    let at = if g.is_empty() {
        String::new()
    } else {
        format!(" {g}")
    };
    let workload = w.workload;
    Some(Chart {
        id: format!("{}-p99-achieved{suffix}", file_slug(workload)),
        workload: workload.to_string(),
        title: format!("{workload}{at}: p99 latency against the rate achieved"),
        kind: Kind::Lines,
        metric: m,
        x_axis: format!("achieved {}", w.f.units.rate),
        y_axis: m.axis().to_string(),
        log_x: false,
        log_y: w.f.chart.log_y,
        categories: Vec::new(),
        x_fixed: None,
        series,
        left_out: w.left_out.clone(),
    })
}

/// Bars per parameter point: a panel per value of the spec's panel parameter (page cache
/// and O_DIRECT differ by 100x: one axis would flatten the slower), else one; in each, a
/// chart per metric with the points as categories.
fn bar_charts(w: &Shared, measured: &[&CaseResult], li: &[usize]) -> Vec<Chart> {
    let spec = w.f.chart;
    let panel = spec.panels.iter().copied().find(|p| {
        let first = measured.first().and_then(|c| c.params.0.get(*p));
        measured.iter().any(|c| c.params.0.get(*p) != first)
    });
    let (panels, in_panel) = panels_of(measured, li, panel);
    let npanels = panels.order.len();
    let mut charts = Vec::new();
    for (pi, (pv, cells)) in panels.order.iter().zip(&in_panel).enumerate() {
        // Categories in first-seen order; each label's cells with their category.
        let mut categories = Ordered::default();
        let mut by_label: Vec<Vec<(usize, &CaseResult)>> = vec![Vec::new(); w.labels.names.len()];
        for &(c, l) in cells {
            let x = categories.add(w.roles.point(c, panel));
            by_label[l].push((x, c));
        }
        let (suffix, at) = if npanels > 1 {
            (format!("-{}", pi + 1), format!(" {pv}"))
        } else {
            (String::new(), String::new())
        };
        for &m in spec.metrics {
            charts.extend(bar_chart(
                w,
                &suffix,
                &at,
                m,
                &categories.order,
                &by_label,
                false,
            ));
        }
    }
    charts
}

/// The panels ("name=value", or one unnamed) in first-seen order, and each one's cells
/// with their label index.
fn panels_of<'c>(
    measured: &[&'c CaseResult],
    li: &[usize],
    panel: Option<&str>,
) -> (Ordered, Vec<Vec<(&'c CaseResult, usize)>>) {
    let mut panels = Ordered::default();
    let mut in_panel: Vec<Vec<(&CaseResult, usize)>> = Vec::new();
    for (c, &l) in measured.iter().copied().zip(li) {
        let v = panel
            .and_then(|p| c.params.0.get(p))
            .map(|v| format!("{}={v}", panel.unwrap_or_default()))
            .unwrap_or_default();
        let k = panels.add(v);
        if k == in_panel.len() {
            in_panel.push(Vec::new());
        }
        in_panel[k].push((c, l));
    }
    (panels, in_panel)
}

/// One metric's bars in a panel: a series per label (each point its category's index, with
/// its whisker and interval; with `spread`, a metric without a whisker of its own gets the
/// repetitions' range); none without a point.
fn bar_chart(
    w: &Shared,
    suffix: &str,
    at: &str,
    m: Metric,
    categories: &[String],
    by_label: &[Vec<(usize, &CaseResult)>],
    spread: bool,
) -> Option<Chart> {
    let series = w
        .labels
        .names
        .iter()
        .zip(by_label)
        .enumerate()
        .map(|(i, (l, cells))| Series {
            label: l.clone(),
            style: w.labels.styles[i],
            faded: w.labels.faded(i, m),
            points: cells
                .iter()
                .filter_map(|&(x, c)| {
                    let f = c.figures.as_ref()?;
                    let y = m.value(f)?;
                    Some(Pt {
                        x: x as f64,
                        y,
                        whisker: m
                            .whisker(f)
                            .or_else(|| spread.then(|| reps_range(m, f)).flatten()),
                        band: m.band(f),
                        behind: behind(c),
                        not_compared: false,
                    })
                })
                .collect(),
        })
        .filter(|s| !s.points.is_empty())
        .collect::<Vec<_>>();
    if series.is_empty() {
        return None;
    }
    let band = series
        .iter()
        .any(|s| s.points.iter().any(|p| p.band.is_some()));
    let workload = w.workload;
    Some(Chart {
        id: format!("{}-{}{suffix}", file_slug(workload), m.slug()),
        workload: workload.to_string(),
        title: format!("{workload}{at}: {}", m.title(true, band)),
        kind: Kind::Bars,
        metric: m,
        x_axis: if categories.iter().all(|c| c.is_empty()) {
            "model".into()
        } else {
            "parameters".into()
        },
        y_axis: m.axis().to_string(),
        log_x: false,
        log_y: w.f.chart.log_y,
        categories: categories.to_vec(),
        x_fixed: None,
        series,
        left_out: w.left_out.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default run of 2026-11-29: echo.conns's capacity points were probes (no syscalls
    /// counted) but one, so its syscalls have one value of the sweep: points, not a line.
    #[test]
    fn a_metric_measured_at_one_value_of_the_sweep_is_points() {
        let run: RunResults =
            crate::results::store::parse(include_str!("../../../tests/fixtures/default-run.json"))
                .unwrap();
        let cells: Vec<&CaseResult> = run
            .cases
            .iter()
            .filter(|c| c.workload == "echo.conns")
            .collect();
        let a = Analysis::of(&run);
        let cs = for_cases("echo.conns", &cells, &Styles, &a);
        assert!(cs.iter().any(|c| c.kind == Kind::Lines));
        for c in cs.iter().filter(|c| c.kind == Kind::Lines) {
            let mut xs: Vec<f64> = c
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.x))
                .collect();
            xs.sort_by(f64::total_cmp);
            xs.dedup();
            assert!(
                xs.len() >= 2,
                "{}: a line chart of {} x value",
                c.id,
                xs.len()
            );
        }
    }

    #[test]
    fn a_sweep_with_one_value_measured_is_one_point() {
        let run: RunResults =
            crate::results::store::parse(include_str!("../../../tests/fixtures/charts.json"))
                .unwrap();
        let rate: Vec<&CaseResult> = run
            .cases
            .iter()
            .filter(|c| c.workload == "http.rate")
            .collect();
        assert!(!one_point(&rate, "rate_per_sec"));
        let one: Vec<&CaseResult> = rate
            .iter()
            .copied()
            .filter(|c| c.params.0.get("rate_per_sec").and_then(|v| v.as_f64()) == Some(40000.0))
            .collect();
        assert!(one.len() > 1);
        assert!(one_point(&one, "rate_per_sec"));
        // A parameter no cell has: nothing to sweep.
        assert!(one_point(&rate, "no_such_param"));
        // Drawn: points with their intervals, no line chart, not the made-up range.
        let a = Analysis::of(&run);
        let cs = for_cases("http.rate", &one, &Styles, &a);
        assert!(!cs.is_empty());
        for c in &cs {
            assert_ne!(c.kind, Kind::Lines, "{}: a line through one point", c.id);
        }
        assert!(cs.iter().any(|c| c.kind == Kind::Points
            && c.categories == ["rate_per_sec=40000"]
            && c.series.iter().all(|s| s.points.len() == 1)));
    }

    #[test]
    fn a_model_is_faded_only_on_the_figure_it_was_decided_behind_on() {
        let run: RunResults =
            crate::results::store::parse(include_str!("../../../tests/fixtures/charts.json"))
                .unwrap();
        let a = Analysis::of(&run);
        let h = a
            .workload("http.rate")
            .and_then(|w| w.highlighted())
            .unwrap();
        assert_eq!(h.metric, Metric::CpuPerOp);
        let cs = super::super::build(&run, &a);
        let faded: Vec<(&str, Metric)> = cs
            .iter()
            .filter(|c| c.workload == "http.rate")
            .filter(|c| c.series.iter().any(|s| s.faded))
            .map(|c| (c.id.as_str(), c.metric))
            .collect();
        assert!(!faded.is_empty(), "the fixture fades a model on CPU per op");
        assert!(
            faded.iter().all(|(_, m)| *m == Metric::CpuPerOp),
            "{faded:?}"
        );
    }
}
