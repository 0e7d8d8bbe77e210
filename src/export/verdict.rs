//! Verdicts: one-line comparisons computed from the results, never written by hand.
//!
//! For bars (one parameter point): one ranked line, the leader by the workload's verdict
//! metric, the models within noise of it, then the rest in order with how many times better
//! the leader is. For sweeps: one line with each series' last point against its first (what
//! the sweep buys or costs), the ranked line at the sweep's far end, and the crossover points
//! where one series overtakes another. Every comparison is a claim of `stats::claims`
//! (through `stats::findings::rank`): at one point, the paired claim over the point's rounds;
//! along a sweep (two points, not one round), Mann-Whitney on the repetitions. A model is
//! "behind" only when its claim is decided; otherwise it is equivalent (within +-5%) or
//! undecided, and a crossover is listed only when the pair is decided at both of its points
//! (the others are counted, shown and not claimed). A p99 is claimed only where every
//! repetition had at least [`TAIL_MIN`] samples beyond it.
//!
//! Network servers are ranked two ways, and each verdict says which:
//! - **at equal load**: the open-loop cells of one point (an equal-load point of `echo.conns`
//!   or `http.clients`, a rate of `echo.rate` or `http.rate`), every model offered the same
//!   rate, ranked by server CPU per op in one line per point, each model's distance from the
//!   leader with its significance from the per-repetition CPU (`stats::equal_load`); a model
//!   that fell behind the offered rate is named, not ranked;
//! - **capacity**: closed-loop throughput, only between cells whose load generator had
//!   headroom (no `client_bound` / `both_saturated`); the others are named, not ranked.

use super::charts::{facts, sweep_param, Metric, Ordered, ParamRoles};
use crate::analysis::past_capacity_cells;
use crate::results::schema::CaseFigures;
use crate::results::{CaseResult, RunResults, Status};
use crate::stats::claims::level_of;
use crate::stats::equal_load;
use crate::stats::findings;
use crate::workload::net::echo::EQUAL_LOAD_PARAM;
use std::collections::BTreeMap;

/// One computed sentence.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub text: String,
    pub within_noise: bool,
}

impl Verdict {
    /// The sentence with its noise marker.
    pub fn line(&self) -> String {
        if self.within_noise {
            format!("{} (nothing decided)", self.text)
        } else {
            self.text.clone()
        }
    }
}

use crate::analysis::basis::reps;
use crate::analysis::higher_is_better;

/// One group of a sweep: its cells in run order, and each label's cells.
type Members<'c, 'a> = (Vec<&'c Cell<'a>>, BTreeMap<usize, Vec<&'c Cell<'a>>>);

struct Cell<'a> {
    c: &'a CaseResult,
    v: f64,
    reps: Vec<f64>,
}

fn cell(m: Metric, c: &CaseResult) -> Option<Cell<'_>> {
    let f = c
        .figures
        .as_ref()
        .filter(|_| c.status == Status::Measured)?;
    let v = m.value(f).filter(|v| *v > 0.0)?;
    Some(Cell {
        c,
        v,
        reps: reps(m, f),
    })
}

/// "2.2x cheaper per op than" / "2.2x more ops/s than".
fn compare(m: Metric, better: &Cell, worse: &Cell) -> String {
    let r = if higher_is_better(m) {
        better.v / worse.v
    } else {
        worse.v / better.v
    };
    let how = match m {
        Metric::OpsPerSec => "the throughput of",
        Metric::LatencyP99 => "lower p99 than",
        Metric::CpuPerOp => "less CPU per op than",
        _ => "cheaper per op than",
    };
    format!("{} {how}", super::table::fmt_times(r))
}

/// What a ranking orders by, and which way.
fn rank_by(m: Metric) -> &'static str {
    match m {
        Metric::OpsPerSec => "throughput (higher is better)",
        Metric::LatencyP99 => "p99 latency (lower is better)",
        Metric::CpuPerOp => "CPU per op (lower is better)",
        Metric::SyscallsPer100 => "syscalls per op (fewer is better)",
        Metric::LatencyP50 => "median latency per op (lower is better)",
        Metric::IdleRssBytes => "resident memory per idle connection (less is better)",
        Metric::IdleKernelBytes => "kernel memory per idle connection (less is better)",
    }
}

/// One ranked line over the cells of one point: the leader, each other cell's paired claim
/// against it (`stats::findings::rank`): those decided behind, in order, with how many times
/// better the leader is; those equivalent to it; those undecided. `None` with fewer than two
/// cells.
fn ranked(m: Metric, here: &[&Cell], at: &str) -> Option<Verdict> {
    let point = findings::Point {
        at: String::new(),
        level: level_of(here.iter().map(|c| c.c)),
        entries: here
            .iter()
            .map(|c| findings::Entry {
                label: c.c.label(),
                value: c.v,
                reps: c.reps.clone(),
            })
            .collect(),
    };
    let r = findings::rank(&point, higher_is_better(m))?;
    // "Leads" only where a claim puts the first ahead of another model.
    let mut text = if r.behind.is_empty() {
        format!(
            "ranked by {}{at}: no decided leader ({} first)",
            rank_by(m),
            r.leader
        )
    } else {
        format!("ranked by {}{at}: {} leads", rank_by(m), r.leader)
    };
    text.push_str(&claims_text(&r));
    Some(Verdict {
        text,
        within_noise: r.behind.is_empty(),
    })
}

/// "; behind it by: b 1.3x (evidence); equivalent to it: c 1.01x; undecided against it: d
/// 1.1x (evidence)".
fn claims_text(r: &findings::Ranking) -> String {
    let list = |it: &mut dyn Iterator<Item = &findings::Other>, evidence: bool| {
        it.map(|o| {
            if evidence {
                format!(
                    "{} {} ({})",
                    o.label,
                    super::table::fmt_times(o.times),
                    o.confidence.text()
                )
            } else {
                format!("{} {}", o.label, super::table::fmt_times(o.times))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
    };
    let mut text = String::new();
    let behind = list(&mut r.behind.iter(), true);
    if !behind.is_empty() {
        text.push_str(&format!("; behind it by: {behind}"));
    }
    let eq = list(&mut r.equivalent(), false);
    if !eq.is_empty() {
        text.push_str(&format!(
            "; equivalent to it (within {:.0}%): {eq}",
            crate::stats::claims::MARGIN * 100.0
        ));
    }
    let und = list(&mut r.undecided(), true);
    if !und.is_empty() {
        text.push_str(&format!("; undecided against it: {und}"));
    }
    text.push_str(&super::table::invisible_text(r.invisible_pct()));
    text
}

/// Verdict lines a report shows openly per workload; the rest are collapsed.
pub(crate) const SHOWN: usize = 8;

/// The lines a report shows (decided ones first, in order, at most [`SHOWN`]) and the rest
/// (collapsed), each in its original order.
pub(crate) fn split_shown(vs: &[Verdict]) -> (Vec<&Verdict>, Vec<&Verdict>) {
    let mut order: Vec<usize> = (0..vs.len()).collect();
    // Stable: decided lines before the ones that decide nothing.
    order.sort_by_key(|&i| vs[i].within_noise);
    let mut keep: Vec<usize> = order.iter().copied().take(SHOWN).collect();
    keep.sort_unstable();
    let shown = keep.iter().map(|&i| &vs[i]).collect();
    let rest = (0..vs.len())
        .filter(|i| !keep.contains(i))
        .map(|i| &vs[i])
        .collect();
    (shown, rest)
}

/// Verdicts of one workload.
pub fn for_workload(run: &RunResults, workload: &str) -> Vec<Verdict> {
    let cases: Vec<&CaseResult> = run
        .cases
        .iter()
        .filter(|c| c.workload == workload)
        .collect();
    for_cases(workload, &cases)
}

/// A cell of an equal-load point (its params carry the marker the workload adds).
use crate::analysis::basis::is_equal_load_point;

/// The prefix of every capacity verdict of a network workload.
pub const CAPACITY_PREFIX: &str = "capacity, load generator with headroom: ";

/// Verdicts of one workload from its cells, in run order. For a network workload: the
/// equal-load rankings first (the headline), then the sweep's verdicts (capacity between
/// cells whose load generator had headroom and one line naming the cells left out; for an
/// open-loop sweep, its latency verdicts), then the open-loop sweeps' knees. Other
/// workloads: the sweep's verdicts.
pub fn for_cases(workload: &str, cases: &[&CaseResult]) -> Vec<Verdict> {
    let f = facts(workload);
    if !f.net {
        return sweep_verdicts(workload, cases);
    }
    // Equal-load points are ranked at equal load only, apart from the capacity sweep.
    let closed: Vec<&CaseResult> = cases
        .iter()
        .copied()
        .filter(|c| !is_equal_load_point(c))
        .collect();
    // The headline first: server CPU per op at equal load.
    let mut out = at_equal_load(workload, cases);
    if !f.open_loop {
        // Closed loop: capacity, by throughput, where the load generator had headroom.
        let (headroom, without): (Vec<&CaseResult>, Vec<&CaseResult>) = closed
            .iter()
            .copied()
            .partition(|c| equal_load::load_had_headroom(c));
        out.extend(
            sweep_verdicts_by(workload, &headroom, Metric::OpsPerSec)
                .into_iter()
                .map(|v| Verdict {
                    text: format!("{CAPACITY_PREFIX}{}", v.text),
                    ..v
                }),
        );
        out.extend(no_headroom(&without, cases));
    } else {
        out.extend(
            sweep_verdicts(workload, &closed)
                .into_iter()
                .map(|v| Verdict {
                    text: format!("{OPEN_LOOP_PREFIX}{}", v.text),
                    ..v
                }),
        );
        // A point offered one rate where some models fell behind it (`pubsub`: one rate per
        // point, no rate sweep of its own): what each achieved is its capacity where its load
        // generator had headroom, and those who kept up are ahead of them all.
        let past = past_capacity_cells(workload, cases);
        out.extend(
            sweep_verdicts_by(workload, &past, Metric::OpsPerSec)
                .into_iter()
                .map(|v| Verdict {
                    text: format!("{PAST_CAPACITY_PREFIX}{}", v.text),
                    ..v
                }),
        );
    }
    if f.rate_sweep {
        out.extend(capacity(cases, f.units.rate));
    }
    out
}

/// The prefix of the throughput ranking of an open-loop point where models fell behind.
pub const PAST_CAPACITY_PREFIX: &str =
    "where models fell behind the offered rate, by the rate achieved (load generator with headroom): ";

/// The prefix of the sweep verdicts of an open-loop workload (`echo.rate`, `http.rate`).
pub(crate) const OPEN_LOOP_PREFIX: &str = "open loop, latency from the intended send time: ";

/// The measured cells left out of the capacity ranking, by point: one line.
fn no_headroom(without: &[&CaseResult], all: &[&CaseResult]) -> Option<Verdict> {
    let without: Vec<&CaseResult> = without
        .iter()
        .copied()
        .filter(|c| c.status == Status::Measured)
        .collect();
    if without.is_empty() {
        return None;
    }
    let roles = ParamRoles::of_cases(all);
    let mut points = Ordered::default();
    let mut labels: Vec<Vec<String>> = Vec::new();
    for c in &without {
        let g = points.add(roles.point(c, None));
        if g == labels.len() {
            labels.push(Vec::new());
        }
        labels[g].push(c.label());
    }
    let parts: Vec<String> = points
        .order
        .iter()
        .zip(&labels)
        .map(|(p, ls)| {
            if p.is_empty() {
                ls.join(", ")
            } else {
                format!("{p}: {}", ls.join(", "))
            }
        })
        .collect();
    Some(Verdict {
        text: format!(
            "capacity not ranked for {} cell{} whose load generator had no headroom \
             (client_bound or both_saturated: the figure is the client's limit; see the \
             equal-load ranking): {}",
            without.len(),
            if without.len() == 1 { "" } else { "s" },
            parts.join("; ")
        ),
        within_noise: false,
    })
}

/// The equal-load rankings: per point of open-loop cells, the model with the least server
/// CPU per op against each other model that kept up, with the evidence; the ones that fell
/// behind named, not ranked.
fn at_equal_load(workload: &str, cases: &[&CaseResult]) -> Vec<Verdict> {
    let units = facts(workload).units;
    let (unit, op) = (units.rate, units.op);
    let roles = ParamRoles::of_cases(cases);
    let mut points = Ordered::default();
    let mut members: Vec<Vec<(&CaseResult, &CaseFigures, f64)>> = Vec::new();
    for c in cases.iter().filter(|c| c.status == Status::Measured) {
        let (Some(f), Some(rate)) = (c.figures.as_ref(), equal_load::offered_rate(c)) else {
            continue;
        };
        let g = points.add(roles.point(c, None));
        if g == members.len() {
            members.push(Vec::new());
        }
        members[g].push((c, f, rate));
    }
    let mut out = Vec::new();
    for cells in &members {
        let (lo, hi) = cells
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                (lo.min(x.2), hi.max(x.2))
            });
        let rate = if hi - lo < 1.0 {
            format!("{lo:.0}")
        } else {
            format!("{lo:.0} to {hi:.0}")
        };
        // Where: the point's params but the rate (said already) and the marker.
        let at: Vec<String> = cells[0]
            .0
            .params
            .0
            .iter()
            .filter(|(k, _)| *k != EQUAL_LOAD_PARAM && *k != "rate_per_sec")
            .filter(|(k, _)| !roles.common.iter().any(|(ck, _)| ck == *k))
            .filter(|(k, _)| !roles.per_model.contains(k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let head = if at.is_empty() {
            format!("at equal load ({rate} {unit} offered)")
        } else {
            format!("at equal load ({rate} {unit} offered, {})", at.join(" "))
        };
        let (kept, behind): (Vec<_>, Vec<_>) = cells
            .iter()
            .partition(|x| equal_load::kept_up(x.0) == Some(true));
        if !behind.is_empty() {
            let who: Vec<String> = behind
                .iter()
                .map(|(c, _, _)| {
                    let achieved = equal_load::achieved_rate(c).unwrap_or(0.0);
                    format!("{} (achieved {achieved:.0})", c.label())
                })
                .collect();
            out.push(Verdict {
                text: format!(
                    "{head}: not ranked, fell behind the offered rate (achieved less than {:.0}% \
                     of it in a repetition): {}",
                    equal_load::KEEP_UP * 100.0,
                    who.join(", ")
                ),
                within_noise: false,
            });
        }
        let cpu = |f: &CaseFigures| f.cpu_ns_per_op.total;
        let point = findings::Point {
            at: String::new(),
            level: level_of(kept.iter().map(|x| x.0)),
            entries: kept
                .iter()
                .filter(|x| cpu(x.1) > 0.0)
                .map(|x| findings::Entry {
                    label: x.0.label(),
                    value: cpu(x.1),
                    reps: x.1.runs_cpu_ns_per_op.clone(),
                })
                .collect(),
        };
        let Some(r) = findings::rank(&point, false) else {
            continue;
        };
        let mut text = format!(
            "{head}: ranked by server CPU per {op} (less is better): {} leads ({})",
            r.leader,
            super::table::fmt_ns(r.value)
        );
        text.push_str(&claims_text(&r));
        out.push(Verdict {
            text,
            within_noise: r.behind.is_empty(),
        });
    }
    out
}

/// The sweep's verdicts over `cases` (bars per point, or lines along the sweep parameter).
/// Cells are grouped once (by point, group and label), so the work is linear in the cells,
/// times the number of series for the crossovers between every two of them.
fn sweep_verdicts(workload: &str, cases: &[&CaseResult]) -> Vec<Verdict> {
    sweep_verdicts_by(workload, cases, facts(workload).chart.verdict)
}

/// The sweep's verdicts of `cases` ranked by `m`.
fn sweep_verdicts_by(workload: &str, cases: &[&CaseResult], m: Metric) -> Vec<Verdict> {
    let spec = facts(workload).chart;
    let cells: Vec<Cell> = cases.iter().filter_map(|c| cell(m, c)).collect();
    let roles = ParamRoles::of_cases(cases);
    let params_text = |c: &CaseResult, skip: Option<&str>| roles.point(c, skip);
    let better = |a: f64, b: f64| {
        if higher_is_better(m) {
            a > b
        } else {
            a < b
        }
    };
    let mut out = Vec::new();
    match sweep_param(&spec, cases) {
        None => {
            let mut groups = Ordered::default();
            let mut here: Vec<Vec<&Cell>> = Vec::new();
            for c in &cells {
                let g = groups.add(params_text(c.c, None));
                if g == here.len() {
                    here.push(Vec::new());
                }
                here[g].push(c);
            }
            for (g, here) in groups.order.iter().zip(&here) {
                let at = if g.is_empty() {
                    String::new()
                } else {
                    format!(" at {g}")
                };
                out.extend(ranked(m, here, &at));
            }
        }
        Some(param) => {
            let x = |c: &CaseResult| c.params.0.get(param).and_then(|v| v.as_f64());
            // Labels in first-seen order; per group, each label's cells in run order.
            let mut groups = Ordered::default();
            let mut labels = Ordered::default();
            let mut members: Vec<Members> = Vec::new();
            for c in &cells {
                let g = groups.add(params_text(c.c, Some(param)));
                let l = labels.add(c.c.label());
                if g == members.len() {
                    members.push(Default::default());
                }
                members[g].0.push(c);
                members[g].1.entry(l).or_default().push(c);
            }
            for (g, (in_group, by_label)) in groups.order.iter().zip(&members) {
                let at = if g.is_empty() {
                    String::new()
                } else {
                    format!(" ({g})")
                };
                // Each label's series along the sweep, sorted by x (stable: run order at ties).
                let series: Vec<(usize, Vec<(f64, &Cell)>)> = by_label
                    .iter()
                    .map(|(&l, cs)| {
                        let mut v: Vec<(f64, &Cell)> =
                            cs.iter().filter_map(|c| Some((x(c.c)?, *c))).collect();
                        v.sort_by(|a, b| a.0.total_cmp(&b.0));
                        (l, v)
                    })
                    .collect();
                // What the sweep does to each series, last point against first: one line.
                let mut along = Vec::new();
                let mut all_noise = true;
                for (l, s) in &series {
                    let l = &labels.order[*l];
                    if let (Some(first), Some(last)) = (s.first(), s.last()) {
                        if first.0 == last.0 {
                            continue;
                        }
                        let (b, w) = if better(last.1.v, first.1.v) {
                            (last, first)
                        } else {
                            (first, last)
                        };
                        // Two points, two groups of rounds: an unpaired claim.
                        let claim = crate::stats::claims::unpaired(
                            &w.1.reps,
                            &b.1.reps,
                            higher_is_better(m),
                            level_of([w.1.c, b.1.c]).alpha,
                        );
                        let noise = !claim.as_ref().is_some_and(|c| c.decided());
                        all_noise &= noise;
                        let mark = match claim.as_ref().map(|c| c.outcome) {
                            Some(crate::stats::claims::Outcome::Equivalent) => " (equivalent)",
                            _ if noise => " (undecided)",
                            _ => "",
                        };
                        along.push(format!(
                            "{l}: {param}={} is {} {param}={}{mark}",
                            b.0,
                            compare(m, b.1, w.1),
                            w.0,
                        ));
                    }
                }
                if !along.is_empty() {
                    out.push(Verdict {
                        text: format!(
                            "along {param}{at}, last against first: {}",
                            along.join("; ")
                        ),
                        within_noise: all_noise,
                    });
                }
                // At the far end of the sweep: the best series against the others.
                let far = in_group
                    .iter()
                    .filter_map(|c| x(c.c))
                    .fold(f64::NEG_INFINITY, f64::max);
                let here: Vec<&Cell> = in_group
                    .iter()
                    .copied()
                    .filter(|c| x(c.c) == Some(far))
                    .collect();
                let at_far = format!(
                    " at {param}={far}{}",
                    at.replace(" (", ", ").replace(')', "")
                );
                out.extend(ranked(m, &here, &at_far));
                // Crossovers: where one series overtakes another between neighbouring
                // points, claimed only when the pair is decided at both (paired claims over
                // each point's rounds); the others are counted, not listed.
                let mut xs: Vec<f64> = series
                    .iter()
                    .flat_map(|(_, s)| s.iter().map(|p| p.0))
                    .collect();
                xs.sort_by(f64::total_cmp);
                xs.dedup();
                let per_x: Vec<(f64, Vec<crate::stats::claims::Entry>)> = xs
                    .iter()
                    .map(|&xv| {
                        let entries = series
                            .iter()
                            .filter_map(|(l, s)| {
                                let (_, c) = s.iter().find(|p| p.0 == xv)?;
                                Some(crate::stats::claims::Entry {
                                    label: labels.order[*l].clone(),
                                    rounds: c.reps.clone(),
                                })
                            })
                            .collect();
                        (xv, entries)
                    })
                    .collect();
                let (found, noisy) = crate::stats::claims::crossovers(
                    &per_x,
                    higher_is_better(m),
                    level_of(in_group.iter().map(|c| c.c)),
                );
                for c in found {
                    out.push(Verdict {
                        text: format!(
                            "crossover: {} overtakes {} between {param}={} and {param}={}{at}",
                            c.winner, c.loser, c.before, c.after
                        ),
                        within_noise: false,
                    });
                }
                if noisy > 0 {
                    out.push(Verdict {
                        text: format!(
                            "{noisy} crossing{} along {param} not claimed: the pair is not \
                             decided at both points where the medians cross{at}",
                            if noisy == 1 { "" } else { "s" }
                        ),
                        within_noise: true,
                    });
                }
            }
        }
    }
    out
}

/// The open-loop sweep's answer per model (`stats::equal_load::capacities`), in words.
fn capacity(cases: &[&CaseResult], unit: &str) -> Vec<Verdict> {
    use crate::stats::equal_load::{capacities, Knee, CAPACITY_P99_NS};
    let ms = CAPACITY_P99_NS / 1e6;
    capacities(cases)
        .into_iter()
        .map(|c| {
            let l = &c.label;
            let mut text = match c.knee {
                Knee::Below { rate } => {
                    format!("{l}: fell behind (or p99 > {ms} ms) already at {rate:.0} {unit} offered")
                }
                Knee::Between { capacity, next } => format!(
                    "{l}: capacity {capacity:.0} {unit} with p99 <= {ms} ms; the knee lies between \
                     {capacity:.0} and {next:.0} {unit}"
                ),
                Knee::Beyond { max } => format!(
                    "{l}: kept up with every offered rate up to {max:.0} {unit} with p99 <= {ms} ms \
                     (knee beyond the sweep)"
                ),
            };
            if !c.stalled_at.is_empty() {
                let at: Vec<String> = c.stalled_at.iter().map(|r| format!("{r:.0}")).collect();
                text += &format!(
                    " (a repetition stalled at {} {unit}, and again when run once more: judged by \
                     the typical repetition)",
                    at.join(", ")
                );
            }
            Verdict {
                text,
                within_noise: false,
            }
        })
        .collect()
}
