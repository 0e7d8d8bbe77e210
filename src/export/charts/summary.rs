//! Each network suite's summary picture: server CPU per op at one equal-load point of each
//! open-loop workload.

use super::*;

/// Each network suite's summary picture: the server's CPU per op at an equal offered load,
/// with its 95% interval and its repetitions' range, a bar per model at one point of each of the suite's open-loop
/// workloads (the highest offered rate at which every model kept up; where none did, the
/// lowest, its laggards marked). Suites with no open-loop point (micro, storage, closed-loop
/// runs) have none. Suites in run order.
pub fn suite_summaries(run: &RunResults, styles: &Styles) -> Vec<(String, Chart)> {
    let mut out: Vec<(String, Chart)> = Vec::new();
    // Per suite, its categories: (label, the point's cells).
    type Categories<'a> = Vec<(String, Vec<&'a CaseResult>)>;
    let mut points: Vec<(String, Categories)> = Vec::new();
    for (w, cases) in by_workload(run) {
        let f = crate::analysis::cells::facts_in(run, w);
        if !f.net {
            continue;
        }
        let Some((at, rate, cells)) = summary_point(&cases) else {
            continue;
        };
        let suite = suite_of(w).to_string();
        let offered = format!("{} {}", crate::export::format::fmt_rate(rate), f.units.rate);
        let category = if at.is_empty() {
            format!("{w} {offered}")
        } else {
            format!("{w} {at} {offered}")
        };
        match points.last_mut() {
            Some((s, v)) if *s == suite => v.push((category, cells)),
            _ => points.push((suite, vec![(category, cells)])),
        }
    }
    let m = Metric::CpuPerOp;
    for (suite, cats) in points {
        let mut labels: Vec<String> = cats
            .iter()
            .flat_map(|(_, cells)| cells.iter().map(|c| c.label()))
            .collect();
        labels.sort();
        labels.dedup();
        labels.sort_by_key(|l| styles.order(l));
        let series: Vec<Series> = labels
            .iter()
            .map(|l| Series {
                label: l.clone(),
                style: styles.of(l),
                faded: false,
                points: cats
                    .iter()
                    .enumerate()
                    .flat_map(|(x, (_, cells))| {
                        cells
                            .iter()
                            .filter(|c| c.label() == *l)
                            .filter_map(move |c| {
                                let f = c.figures.as_ref()?;
                                Some(Pt {
                                    x: x as f64,
                                    y: m.value(f)?,
                                    whisker: reps_range(m, f),
                                    band: m.band(f),
                                    behind: behind(c),
                                    not_compared: false,
                                })
                            })
                    })
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        if series.is_empty() {
            continue;
        }
        let chart = Chart {
            id: format!("summary-{}", file_slug(&suite)),
            workload: suite.clone(),
            title: format!(
                "{suite} suite: the server's CPU per op at equal offered load (dark band its 95% CI, \
                 whisker the repetitions' range)"
            ),
            kind: Kind::Bars,
            metric: m,
            x_axis: "workload and offered load".into(),
            y_axis: "server CPU time per op".into(),
            log_x: false,
            log_y: false,
            categories: cats.into_iter().map(|(c, _)| c).collect(),
            x_fixed: None,
            series,
            left_out: Arc::from(Vec::new()),
        };
        out.push((suite, settle_y_scale(chart)));
    }
    out
}

/// A workload's point for its suite's summary: its open-loop points (every measured cell
/// offered a rate), the highest offered rate every cell kept up with, else the lowest; with
/// the point's text, its offered rate and its measured cells.
fn summary_point<'a>(cases: &[&'a CaseResult]) -> Option<(String, f64, Vec<&'a CaseResult>)> {
    let roles = ParamRoles::of_cases(cases);
    let mut groups = Ordered::default();
    let mut members: Vec<Vec<&CaseResult>> = Vec::new();
    for c in cases
        .iter()
        .copied()
        .filter(|c| c.status == Status::Measured && c.figures.is_some())
    {
        let g = groups.add(roles.point(c, None));
        if g == members.len() {
            members.push(Vec::new());
        }
        members[g].push(c);
    }
    let rate = |cells: &[&CaseResult]| -> Option<f64> {
        let rates: Option<Vec<f64>> = cells.iter().map(|c| c.offered_rate()).collect();
        rates?.into_iter().reduce(f64::max)
    };
    let open: Vec<(usize, f64, bool)> = members
        .iter()
        .enumerate()
        .filter_map(|(i, cells)| {
            let r = rate(cells)?;
            let all_kept = cells.iter().all(|c| !behind(c));
            Some((i, r, all_kept))
        })
        .collect();
    let pick = open
        .iter()
        .filter(|p| p.2)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .or_else(|| open.iter().min_by(|a, b| a.1.total_cmp(&b.1)))?;
    // The point's text without the equal-load marker (the rate itself is shown).
    let at = groups.order[pick.0]
        .split(' ')
        .filter(|kv| *kv != crate::results::EQUAL_LOAD_WORD && !kv.starts_with("rate_per_sec="))
        .collect::<Vec<_>>()
        .join(" ");
    Some((at, pick.1, members[pick.0].clone()))
}
