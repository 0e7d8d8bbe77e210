//! Findings in words, at the top of every report: per suite, one line per workload with the
//! answer its cells support (`stats::findings` ranks; this module only arranges the cells into
//! points and words the result), and one line on how far to trust the run.
//!
//! Which figure a workload is ranked by is its chart row's verdict metric; network servers
//! are ranked by server CPU per op at equal load when the run has such points (every model
//! offered the same rate, only the models that kept up), else by throughput between cells
//! whose load generator had headroom, as the verdicts do.

use super::charts::{facts, Metric};
use super::table::{fmt_ns, fmt_rate, fmt_times};
use crate::analysis::basis::measured;
use crate::analysis::{basis, higher_is_better, points, Basis, NotRanked, On};
use crate::results::{CaseResult, RunResults};
use crate::stats::claims::Outcome;
use crate::stats::findings::{self, Confidence, Finding, Point};

/// The words before a ranking on `b` ("at equal load, ").
fn prefix(b: &Basis) -> &'static str {
    match b.on {
        On::Figure => "",
        On::EqualLoad => "at equal load, ",
        On::PastCapacity => super::verdict::PAST_CAPACITY_PREFIX,
        On::Headroom => super::verdict::CAPACITY_PREFIX,
    }
}

/// Why a workload is not ranked, in words.
fn not_ranked(_: NotRanked) -> String {
    "not ranked: no point where two models kept up with the same offered rate, and fewer \
     than two cells whose load generator had headroom at capacity or past it"
        .into()
}

/// One workload's finding, worded (without the workload's name, which renderers link).
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub workload: String,
    /// The answer in one plain sentence: who leads or is equivalent at every point, who is
    /// behind and by how much over the points (and the p99 where a p99 claim is decided).
    pub short: String,
    /// The headline with its evidence.
    pub text: String,
    /// No model is clearly ahead at the headline point.
    pub within_noise: bool,
}

/// The findings of one suite (`micro`, `storage`, `echo`, `http`), workloads in run order.
#[derive(Clone, Debug, PartialEq)]
pub struct Suite {
    pub(crate) suite: String,
    pub lines: Vec<Line>,
}

fn noun(m: Metric, op: &str) -> String {
    match m {
        Metric::LatencyP50 => "median latency per op".into(),
        Metric::LatencyP99 => "p99 latency per op".into(),
        Metric::OpsPerSec => format!("throughput ({}/s)", plural(op)),
        Metric::SyscallsPer100 => "syscalls per op".into(),
        Metric::CpuPerOp => format!("server CPU per {op}"),
        Metric::IdleRssBytes => "server resident memory per idle connection".into(),
        Metric::IdleKernelBytes => "kernel memory per idle connection".into(),
    }
}

/// "delivery" -> "deliveries", "message" -> "messages".
fn plural(op: &str) -> String {
    match op.strip_suffix('y') {
        Some(stem) => format!("{stem}ies"),
        None => format!("{op}s"),
    }
}

fn value_text(m: Metric, v: f64) -> String {
    match m {
        Metric::OpsPerSec => format!("{}/s", fmt_rate(v)),
        Metric::SyscallsPer100 => format!("{:.2} syscalls/op", v / 100.0),
        Metric::IdleRssBytes | Metric::IdleKernelBytes => format!("{v:.0} bytes"),
        _ => fmt_ns(v),
    }
}

fn confidence_text(c: &Confidence) -> String {
    c.text()
}

/// One finding in words.
fn words(f: &Finding, b: &Basis, op: &str) -> (String, bool) {
    let h = &f.headline;
    let m = b.metric;
    let at = if h.at.is_empty() {
        String::new()
    } else {
        format!(" at {}", h.at)
    };
    let ci = match h.ci {
        Some((lo, hi)) => format!(
            ", 95% CI {} to {} over {} repetitions",
            value_text(m, lo),
            value_text(m, hi),
            h.reps
        ),
        None if h.reps == 1 => ", one repetition: no interval".into(),
        None => String::new(),
    };
    let list = |it: &mut dyn Iterator<Item = &findings::Other>| {
        it.map(|o| format!("{} {}", o.label, fmt_times(o.times)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let equivalent = list(&mut h.equivalent());
    let undecided = list(&mut h.undecided());
    let mut s = if h.behind.is_empty() {
        format!(
            "{}no decided leader by {}{at}: {} ({}{ci}) is not decided ahead of the others",
            prefix(b),
            noun(m, op),
            h.leader,
            value_text(m, h.value),
        )
    } else {
        let first = &h.behind[0];
        format!(
            "{}{} leads by {}{at} ({}{ci}), {} ahead of {} ({})",
            prefix(b),
            h.leader,
            noun(m, op),
            value_text(m, h.value),
            fmt_times(first.times),
            first.label,
            confidence_text(&first.confidence)
        )
    };
    if !equivalent.is_empty() {
        s += &format!(
            "; equivalent to it (within {:.0}%): {equivalent}",
            crate::stats::claims::MARGIN * 100.0
        );
    }
    if !undecided.is_empty() {
        s += &format!("; undecided against it: {undecided}");
    }
    s += &super::table::invisible_text(h.invisible_pct());
    if f.points > 1 && f.leads == f.points && !h.behind.is_empty() {
        s += &format!(
            "; the same at all {} points (leads, or is not decided behind the leader)",
            f.points
        );
    }
    const SHOWN: usize = 3;
    if !f.flips.is_empty() {
        let list: Vec<String> = f
            .flips
            .iter()
            .take(SHOWN)
            .map(|x| {
                format!(
                    "{} at {} ({} ahead of {})",
                    x.leader,
                    x.at,
                    fmt_times(x.times),
                    h.leader
                )
            })
            .collect();
        s += &format!("; the lead changes: {}", list.join(", "));
        if f.flips.len() > SHOWN {
            s += &format!(" and at {} more points", f.flips.len() - SHOWN);
        }
    }
    (s, h.behind.is_empty())
}

/// "a, b and c".
fn and_list(v: &[String]) -> String {
    match v {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The standings of a finding in one plain clause: who leads where and who is equivalent to
/// the leader everywhere, how many are not decided either way, and the models decided behind
/// the leader grouped by how far (within 1.1x, 1.1x to 1.5x, 1.5x to 2x, 2x and more, each
/// band with the range its models showed over the points).
fn standings_words(f: &Finding) -> String {
    let every = if f.points > 1 { " at every point" } else { "" };
    let leaders: Vec<&findings::Standing> = f.standings.iter().filter(|s| s.led > 0).collect();
    let mut out = match leaders.as_slice() {
        [] if f.points > 1 => "no decided leader at any point".to_string(),
        [] => "no decided leader".to_string(),
        [one] if one.led == f.points => format!("{} leads{every}", one.label),
        _ if f.points == 1 => format!("{} leads", leaders[0].label),
        many => {
            let mut by: Vec<&&findings::Standing> = many.iter().collect();
            by.sort_by_key(|s| std::cmp::Reverse(s.led));
            let list: Vec<String> = by
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    if i == 0 {
                        format!("{} leads at {} of {} points", s.label, s.led, f.points)
                    } else {
                        format!("{} at {}", s.label, s.led)
                    }
                })
                .collect();
            list.join(", ")
        }
    };
    let front: Vec<String> = f
        .standings
        .iter()
        .filter(|s| s.at_front() && s.led == 0)
        .map(|s| s.label.clone())
        .collect();
    if !front.is_empty() {
        out += &format!(
            "; equivalent {}(within {:.0}%){every}: {}",
            if leaders.is_empty() {
                ""
            } else {
                "to the leader "
            },
            crate::stats::claims::MARGIN * 100.0,
            and_list(&front)
        );
    }
    let open: Vec<String> = f
        .standings
        .iter()
        .filter(|s| s.behind == 0 && !s.at_front() && s.led == 0)
        .map(|s| s.label.clone())
        .collect();
    match open.len() {
        0 => {}
        n if n > 4 => out += &format!("; {n} models not decided either way"),
        _ => out += &format!("; not decided either way: {}", and_list(&open)),
    }
    const BANDS: [(f64, &str); 4] = [
        (1.1, "within 1.1x"),
        (1.5, "1.1x to 1.5x"),
        (2.0, "1.5x to 2x"),
        (f64::INFINITY, "2x and more"),
    ];
    let mut bands: Vec<String> = Vec::new();
    let mut lower = 0.0;
    for (upper, name) in BANDS {
        let here: Vec<&findings::Standing> = f
            .standings
            .iter()
            .filter(|s| s.behind > 0)
            .filter(|s| {
                let hi = s.times.map_or(1.0, |t| t.1);
                hi >= lower && hi < upper
            })
            .collect();
        lower = upper;
        if here.is_empty() {
            continue;
        }
        let (lo, hi) = here
            .iter()
            .filter_map(|s| s.times)
            .fold((f64::INFINITY, 0.0f64), |(lo, hi), t| {
                (lo.min(t.0), hi.max(t.1))
            });
        let range = if fmt_times(lo) == fmt_times(hi) {
            fmt_times(lo)
        } else {
            format!("{} to {}", fmt_times(lo), fmt_times(hi))
        };
        let names: Vec<String> = here.iter().map(|s| s.label.clone()).collect();
        bands.push(format!("{name}: {} ({range})", and_list(&names)));
    }
    if !bands.is_empty() {
        out += &format!("; behind the leader where decided, {}", bands.join("; "));
    }
    out
}

/// The one-sentence answer of a workload: its basis, its standings, and its p99's where
/// a p99 claim is decided.
fn short_words(f: &Finding, b: &Basis, op: &str, p99: Option<&Finding>) -> String {
    let points = if f.points == 1 {
        "one point".to_string()
    } else {
        format!("{} points", f.points)
    };
    let mut s = format!(
        "{}by {} over {points}: {}",
        prefix(b),
        noun(b.metric, op),
        standings_words(f)
    );
    if let Some(p) = p99.filter(|p| p.standings.iter().any(|s| s.behind > 0)) {
        s += &format!("; by p99 latency: {}", standings_words(p));
    }
    s
}

/// A workload with one model measured per point: its figure, nothing to rank.
fn alone(pts: &[Point], b: &Basis) -> String {
    match pts.first().and_then(|p| p.entries.first().map(|e| (p, e))) {
        None => "not ranked: nothing measured".into(),
        Some((p, e)) => {
            let ci = crate::stats::bootstrap::median_ci(&e.reps)
                .map(|(lo, hi)| {
                    format!(
                        ", 95% CI {} to {}",
                        value_text(b.metric, lo),
                        value_text(b.metric, hi)
                    )
                })
                .unwrap_or_default();
            format!(
                "{}only {} measured{}: {} {}{ci}; nothing to rank it against",
                prefix(b),
                e.label,
                if p.at.is_empty() {
                    String::new()
                } else {
                    format!(" at {}", p.at)
                },
                noun(b.metric, "op"),
                value_text(b.metric, e.value)
            )
        }
    }
}

/// What one op of a workload is called in a finding.
fn op_word(workload: &str) -> &'static str {
    if facts(workload).net {
        facts(workload).units.op
    } else {
        "op"
    }
}

/// The answer rate in words, ending "; " ("" without an equal-load point): "at equal load, 17
/// of 20 comparisons with a point's leader decided (85%: 12 behind or ahead, 5 equivalent
/// within 5%); the smallest difference the worst point could see: 4.1%; ".
fn answer_text(a: &crate::results::Answer) -> String {
    let Some(rate) = a.rate() else {
        return String::new();
    };
    let see = match a.worst_invisible_pct {
        Some(v) => format!("the smallest difference the worst point could see: {v:.1}%"),
        None => "a point had too few rounds to see any difference".into(),
    };
    format!(
        "at equal load, {} of {} comparisons with a point's leader decided ({:.0}%: {} behind \
         or ahead, {} equivalent within {:.0}%); {see}; ",
        a.decided + a.equivalent,
        a.pairs,
        rate * 100.0,
        a.decided,
        a.equivalent,
        crate::stats::claims::MARGIN * 100.0
    )
}

/// A workload's finding in a few words, for the run's closing summary: its leader with the
/// points it led of those ranked ("blocking 4/5", "monoio" at one point), "no decided
/// leader", "blocking alone", "not ranked".
pub(crate) fn headline(workload: &str, cases: &[&CaseResult]) -> String {
    let Ok((b, cells)) = basis(workload, cases) else {
        return "not ranked".into();
    };
    let pts = points(workload, &cells, b.metric);
    let Some(f) = findings::of_points(&pts, higher_is_better(b.metric)) else {
        return match pts.first().and_then(|p| p.entries.first()) {
            Some(e) => format!("{} alone", e.label),
            None => "not ranked".into(),
        };
    };
    // The most leads; the first of equals (standings put the never-behind first).
    let top =
        f.standings
            .iter()
            .filter(|s| s.led > 0)
            .fold(None::<&findings::Standing>, |best, s| match best {
                Some(b) if b.led >= s.led => Some(b),
                _ => Some(s),
            });
    match top {
        None => "no decided leader".into(),
        Some(s) if f.points == 1 => s.label.clone(),
        Some(s) => format!("{} {}/{}", s.label, s.led, f.points),
    }
}

/// The finding of one workload's cells.
pub fn for_cases(workload: &str, cases: &[&CaseResult]) -> Line {
    let (short, text, within_noise) = match basis(workload, cases) {
        Err(n) => {
            let why = not_ranked(n);
            (why.clone(), why, false)
        }
        Ok((b, cells)) => {
            let pts = points(workload, &cells, b.metric);
            match findings::of_points(&pts, higher_is_better(b.metric)) {
                Some(f) => {
                    // The same cells' p99s, where the workload is a server's and the basis
                    // is not the p99 already.
                    let p99 = (facts(workload).net && b.metric != Metric::LatencyP99)
                        .then(|| {
                            let pp = points(workload, &cells, Metric::LatencyP99);
                            findings::of_points(&pp, false)
                        })
                        .flatten();
                    let op = op_word(workload);
                    let (text, noise) = words(&f, &b, op);
                    (short_words(&f, &b, op, p99.as_ref()), text, noise)
                }
                None => {
                    let t = alone(&pts, &b);
                    (t.clone(), t, false)
                }
            }
        }
    };
    let extra = [probe_words(workload, cases), family_words(workload, cases)].concat();
    Line {
        workload: workload.to_string(),
        short: short + &extra,
        text: text + &extra,
        within_noise,
    }
}

/// "; capacity probed once per model, not ranked: ..." where the workload's capacity points
/// were probes (the load generator had no headroom over the servers: `runner`); "" otherwise.
fn probe_words(workload: &str, cases: &[&CaseResult]) -> String {
    // The most any model achieved at each probed point: the load generator's limit there.
    let mut tops: Vec<(String, f64)> = Vec::new();
    for c in cases.iter().filter(|c| c.capacity_probe) {
        let Some((_, f)) = measured(c) else { continue };
        let r = f.ops_per_sec.median;
        if !(r.is_finite() && r > 0.0) {
            continue;
        }
        match tops.iter_mut().find(|t| t.0 == key_of_point(c)) {
            Some(t) => t.1 = t.1.max(r),
            None => tops.push((key_of_point(c), r)),
        }
    }
    let lo = tops.iter().map(|t| t.1).reduce(f64::min);
    let hi = tops.iter().map(|t| t.1).reduce(f64::max);
    let (Some(lo), Some(hi)) = (lo, hi) else {
        return String::new();
    };
    let unit = plural(facts(workload).units.op);
    let limit = if fmt_rate(lo) == fmt_rate(hi) {
        fmt_rate(hi)
    } else {
        format!("{} to {}", fmt_rate(lo), fmt_rate(hi))
    };
    format!(
        "; capacity was probed once per model and is not ranked: the load generator had no \
         headroom over the servers, so what capacity measured is its limit (the most a server \
         reached: about {limit} {unit}/s); more load CPUs, --load-cpus, or --load-host would \
         rank it"
    )
}

/// A cell's point: its workload and params (every model's cell at the point shares it).
fn key_of_point(c: &CaseResult) -> String {
    format!("{} {:?}", c.workload, c.params)
}

/// Each family's best row at each equal-load point (lowest server CPU per op there), io_uring's
/// against epoll's: "; io_uring's best against epoll's: at conns=50, uring-tuned used 1.03x
/// epoll-lt's server CPU per message (0.99x to 1.07x: undecided, ...)". "" where the workload
/// has no equal-load point with both families.
fn family_words(workload: &str, cases: &[&CaseResult]) -> String {
    let Ok((b, cells)) = basis(workload, cases) else {
        return String::new();
    };
    if b.metric != Metric::CpuPerOp {
        return String::new();
    }
    let family = |label: &str| crate::registry::model(label).map(|m| m.family);
    let best = |p: &Point, f: crate::model::Family| {
        p.entries
            .iter()
            .filter(|e| family(&e.label) == Some(f))
            .min_by(|x, y| x.value.total_cmp(&y.value))
            .map(|e| e.label.clone())
    };
    let op = op_word(workload);
    let mut parts = Vec::new();
    for p in points(workload, &cells, b.metric) {
        let (Some(u), Some(e)) = (
            best(&p, crate::model::Family::Uring),
            best(&p, crate::model::Family::Epoll),
        ) else {
            continue;
        };
        let Some(c) = findings::pair_at(&p, &e, &u, false) else {
            continue;
        };
        let at = if p.at.is_empty() {
            String::new()
        } else {
            format!("at {}, ", p.at)
        };
        parts.push(format!(
            "{at}{u} used {e}'s server CPU per {op} times {}",
            pair_verdict(&c)
        ));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "; io_uring's best row against epoll's (each family's lowest server CPU per {op} at \
         the point): {}",
        parts.join("; ")
    )
}

/// A pair's ratio and its verdict in words: "1.03 (0.99 to 1.07; undecided after 14 rounds,
/// about 30 would decide it at the noise measured)".
fn pair_verdict(c: &Confidence) -> String {
    let Some(cl) = c.claim.as_ref() else {
        return format!("? ({})", c.text());
    };
    let verdict = match cl.outcome {
        Outcome::Equivalent => format!(
            "equivalent within {:.0}%",
            crate::stats::claims::MARGIN * 100.0
        ),
        Outcome::Behind | Outcome::Ahead => format!("decided over {} rounds", cl.rounds),
        Outcome::Undecided => match cl.rounds_to_decide() {
            Some(n) => format!(
                "undecided after {} rounds, about {n} would decide it at the noise measured",
                cl.rounds
            ),
            None => format!("undecided after {} rounds", cl.rounds),
        },
    };
    format!(
        "{:.2} ({:.2} to {:.2}; {verdict})",
        cl.times, cl.ci.0, cl.ci.1
    )
}

/// The first `max` pairs of models at each point of a workload, on the figure its finding
/// ranks by: (point, pairs, how many pairs the point has), and the figure's name. Empty where
/// the workload is not ranked.
pub fn pairwise(
    workload: &str,
    cases: &[&CaseResult],
    max: usize,
) -> (String, Vec<(String, Vec<findings::Pair>, usize)>) {
    let Ok((b, cells)) = basis(workload, cases) else {
        return (String::new(), Vec::new());
    };
    let hib = higher_is_better(b.metric);
    let pts = points(workload, &cells, b.metric)
        .iter()
        .map(|p| {
            let (v, total) = findings::pairs(p, hib, max);
            (p.at.clone(), v, total)
        })
        .filter(|(_, v, _)| !v.is_empty())
        .collect();
    (
        format!("{}{}", prefix(&b), noun(b.metric, op_word(workload))),
        pts,
    )
}

/// A pair's evidence in a few words ("behind, p=0.031", "equivalent", "undecided").
pub(crate) fn pair_evidence(c: &Confidence) -> String {
    use crate::stats::claims::Outcome;
    match &c.claim {
        None => c.text(),
        Some(cl) => {
            let p = cl
                .p_adj
                .map(|p| format!(", p={}", crate::stats::claims::p_text(p)))
                .unwrap_or_default();
            match cl.outcome {
                Outcome::Behind | Outcome::Ahead => format!("decided{p}, {} rounds", cl.rounds),
                Outcome::Equivalent => format!("equivalent{p}, {} rounds", cl.rounds),
                Outcome::Undecided => format!("undecided{p}, {} rounds", cl.rounds),
            }
        }
    }
}

/// Every workload's finding, by suite, in run order.
pub fn for_run(run: &RunResults) -> Vec<Suite> {
    let mut out: Vec<Suite> = Vec::new();
    for (w, cases) in super::charts::by_workload(run) {
        let suite = w.split('.').next().unwrap_or(w).to_string();
        let line = for_cases(w, &cases);
        match out.last_mut() {
            Some(s) if s.suite == suite => s.lines.push(line),
            _ => out.push(Suite {
                suite,
                lines: vec![line],
            }),
        }
    }
    out
}

/// "How far to trust this run", in one sentence.
pub fn trust_text(run: &RunResults) -> String {
    let t = findings::trust(run);
    let mut s = answer_text(&crate::analysis::answer(run));
    s += &format!("{} of {} cells measured", t.measured, t.cells);
    if t.failed > 0 {
        s += &format!(" ({} failed)", t.failed);
    }
    match t.reps {
        Some((1, 1)) => s += "; one repetition per cell: no figure has a confidence interval and no difference is tested (use --profile quick or full)",
        Some((lo, hi)) if lo == hi => s += &format!("; {lo} repetitions per cell"),
        Some((lo, hi)) => s += &format!("; {lo} to {hi} repetitions per cell"),
        None => {}
    }
    if t.warnings.is_empty() {
        s += "; no cell carries a warning";
    } else {
        let list: Vec<String> = t
            .warnings
            .iter()
            .map(|(w, n)| {
                let name = serde_json::to_value(w)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                format!("{name} {n}")
            })
            .collect();
        s += &format!(
            "; {} measured cell{} warnings ({})",
            t.warned,
            if t.warned == 1 { " carries" } else { "s carry" },
            list.join(", ")
        );
    }
    if t.reruns > 0 {
        s += &format!(
            "; {} repetition{} run again (disturbed by other programs, starved of CPU, or \
             stalled)",
            t.reruns,
            if t.reruns == 1 { " was" } else { "s were" },
        );
    }
    if t.disturbed_reps > 0 {
        // Counted apart from the re-runs: once a re-run was disturbed too, a cell keeps its
        // later disturbed repetitions rather than re-running each.
        s += &format!(
            "; {} disturbed repetition{} kept (the disturbance outlasted a re-run)",
            t.disturbed_reps,
            if t.disturbed_reps == 1 { "" } else { "s" },
        );
    }
    for st in &t.states {
        s += &format!("; {st}");
    }
    if !t.unstable.is_empty() {
        let list: Vec<String> = t.unstable.iter().map(|u| u.text()).collect();
        s += &format!(
            "; {} jumped between two levels within the run, so {} figures vary that much \
             between runs: {}",
            if t.unstable.len() == 1 {
                "one model"
            } else {
                "some models"
            },
            if t.unstable.len() == 1 {
                "its"
            } else {
                "their"
            },
            list.join("; ")
        );
    }
    if let Some(b) = run
        .before_run
        .as_ref()
        .filter(|b| b.share > 0.05 || b.other_ringside > 0)
    {
        s += &format!(
            "; before the run, other programs took {:.0}% of its CPUs{}",
            b.share * 100.0,
            if b.other_ringside > 0 {
                format!(" and {} other ringside process(es) ran", b.other_ringside)
            } else {
                String::new()
            }
        );
    }
    if !run.finished {
        s += "; the run was interrupted: only the cells it kept are here";
    }
    s
}
