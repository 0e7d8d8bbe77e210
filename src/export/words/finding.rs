//! Findings in words, at the top of every report: per suite, one line per workload with the
//! answer its cells support (`stats::findings` ranks; this module only arranges the cells into
//! points and words the result), and one line on how far to trust the run.
//!
//! Which figure a workload is ranked by is its chart row's verdict metric; network servers
//! are ranked by server CPU per op at equal load when the run has such points (every model
//! offered the same rate, only the models that kept up), else by throughput between cells
//! whose load generator had headroom, as the verdicts do.

use super::super::table::{fmt_ns, fmt_rate, fmt_times, invisible_text};
use super::bottom::{pair_sentence, times_pm};
use super::verdict::{CAPACITY_PREFIX, PAST_CAPACITY_PREFIX};
use crate::analysis::finding::{
    ContenderPair, FamilyPair, Leader, Only, PeerPair, Ranks, WorkloadFinding,
};
use crate::analysis::vocabulary::{
    p_text, Confidence, Finding, Other, Outcome, Standing, Trust, MARGIN,
};
use crate::analysis::{Analysis, Basis, NotRanked, On};
use crate::results::facts::{Facts, Metric};
use crate::results::{Answer, RunResults};

/// The words before a ranking on `b` ("at equal load, ").
fn prefix(b: &Basis) -> &'static str {
    match b.on {
        On::Figure => "",
        On::EqualLoad => "at equal load, ",
        On::PastCapacity => PAST_CAPACITY_PREFIX,
        On::Headroom => CAPACITY_PREFIX,
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

pub(super) fn noun(m: Metric, op: &str) -> String {
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
pub(super) fn plural(op: &str) -> String {
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
        Metric::LatencyP50 | Metric::LatencyP99 | Metric::CpuPerOp => fmt_ns(v),
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
    let list = |it: &mut dyn Iterator<Item = &Other>| {
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
            MARGIN * 100.0
        );
    }
    if !undecided.is_empty() {
        s += &format!("; undecided against it: {undecided}");
    }
    let each: Vec<String> = h
        .near
        .iter()
        .chain(&h.behind)
        .map(|o| pair_sentence(&o.label, &h.leader, m, op, &o.confidence))
        .collect();
    if !each.is_empty() {
        s += &format!("; each against {}: {}", h.leader, each.join("; "));
    }
    s += &invisible_text(h.invisible_pct());
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
/// the leader everywhere, how many are not decided either way, and each model decided behind
/// the leader with how far (its range over the points where it was, and at how many).
fn standings_words(f: &Finding) -> String {
    let every = if f.points > 1 { " at every point" } else { "" };
    let leaders: Vec<&Standing> = f.standings.iter().filter(|s| s.led > 0).collect();
    let mut out = match leaders.as_slice() {
        [] if f.points > 1 => "no decided leader at any point".to_string(),
        [] => "no decided leader".to_string(),
        [one] if one.led == f.points => format!("{} leads{every}", one.label),
        _ if f.points == 1 => format!("{} leads", leaders[0].label),
        many => {
            let mut by: Vec<&&Standing> = many.iter().collect();
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
            MARGIN * 100.0,
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
    if f.points == 1 {
        let behind: Vec<String> = f
            .headline
            .behind
            .iter()
            .map(|o| match o.confidence.claim.as_ref() {
                Some(cl) if cl.rounds >= 2 => {
                    format!("{} {} times", o.label, times_pm(cl.times, cl.ci))
                }
                _ => format!("{} {}", o.label, fmt_times(o.times)),
            })
            .collect();
        if !behind.is_empty() {
            out += &format!("; behind {} by: {}", f.headline.leader, and_list(&behind));
        }
        return out;
    }
    // Each model decided behind, by how much (least to most over the points where it was),
    // nearest the leader first.
    let mut behind: Vec<&Standing> = f
        .standings
        .iter()
        .filter(|s| s.behind > 0 && s.times.is_some())
        .collect();
    behind.sort_by(|a, b| {
        let key = |s: &Standing| s.times.map_or(1.0, |t| t.1);
        key(a).total_cmp(&key(b))
    });
    let behind: Vec<String> = behind
        .iter()
        .map(|s| {
            let (lo, hi) = s.times.unwrap_or((1.0, 1.0));
            let range = if fmt_times(lo) == fmt_times(hi) {
                fmt_times(lo)
            } else {
                format!("{} to {}", fmt_times(lo), fmt_times(hi))
            };
            if s.behind < s.ranked {
                format!(
                    "{} {range} (at {} of {} points)",
                    s.label, s.behind, s.ranked
                )
            } else {
                format!("{} {range}", s.label)
            }
        })
        .collect();
    if !behind.is_empty() {
        out += &format!("; behind the leader where decided: {}", and_list(&behind));
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
fn alone(only: Option<&Only>, b: &Basis) -> String {
    match only {
        None => "not ranked: nothing measured".into(),
        Some(o) => {
            let ci =
                o.ci.map(|(lo, hi)| {
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
                o.label,
                if o.at.is_empty() {
                    String::new()
                } else {
                    format!(" at {}", o.at)
                },
                noun(b.metric, "op"),
                value_text(b.metric, o.value)
            )
        }
    }
}

/// What one op of a workload is called in a finding.
pub(super) fn op_word(f: &Facts) -> &'static str {
    if f.net {
        f.units.op
    } else {
        "op"
    }
}

/// The answer rate in words, ending "; " ("" without an equal-load point): "at equal load, 17
/// of 20 comparisons with a point's leader decided (85%: 12 behind or ahead, 5 equivalent
/// within 5%); the smallest difference the worst point could see: 4.1%; ".
fn answer_text(a: &Answer) -> String {
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
        MARGIN * 100.0
    )
}

/// A workload's finding in a few words, for the run's closing summary: its leader with the
/// points it led of those ranked ("blocking 4/5", "monoio" at one point), "no decided
/// leader", "blocking alone", "not ranked".
pub(crate) fn headline(f: &WorkloadFinding) -> String {
    match f.leader() {
        Leader::NotRanked => "not ranked".into(),
        Leader::Alone(l) => format!("{l} alone"),
        Leader::NoneDecided => "no decided leader".into(),
        Leader::Led {
            label, points: 1, ..
        } => label,
        Leader::Led { label, led, points } => format!("{label} {led}/{points}"),
    }
}

/// The finding of one workload, worded.
pub(crate) fn line(workload: &str, facts: &Facts, f: &WorkloadFinding) -> Line {
    let op = op_word(facts);
    let (short, text, within_noise) = match &f.ranks {
        Ranks::NotRanked(n) => {
            let why = not_ranked(*n);
            (why.clone(), why, false)
        }
        Ranks::Ranked {
            basis: b,
            finding,
            p99,
        } => {
            let (text, noise) = words(finding, b, op);
            (short_words(finding, b, op, p99.as_ref()), text, noise)
        }
        Ranks::Alone { basis, only } => {
            let t = alone(only.as_ref(), basis);
            (t.clone(), t, false)
        }
    };
    let extra = [
        probe_words(facts, f.probed),
        family_words(op, &f.families),
        contender_words(op, &f.contenders),
        peer_words(op, &f.peers),
    ]
    .concat();
    Line {
        workload: workload.to_string(),
        short: short + &extra,
        text: text + &extra,
        within_noise,
    }
}

/// "; capacity probed once per model, not ranked: ..." where the workload's capacity points
/// were probes (the load generator had no headroom over the servers: `runner`); "" otherwise.
fn probe_words(facts: &Facts, probed: Option<(f64, f64)>) -> String {
    let Some((lo, hi)) = probed else {
        return String::new();
    };
    let unit = plural(facts.units.op);
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

/// "at conns=50, " before a pair's sentence; "" where the point needs no name.
fn at_prefix(at: &str) -> String {
    if at.is_empty() {
        String::new()
    } else {
        format!("at {at}, ")
    }
}

/// Each family's best row at each equal-load point, io_uring's against epoll's: "; io_uring's
/// best row against epoll's (...): at conns=50, uring-tuned used 1.03 ± 0.04 times epoll-lt's
/// server CPU per message (0.99 to 1.07; undecided ...)". "" where the workload has no
/// equal-load point with both families.
fn family_words(op: &str, pairs: &[FamilyPair]) -> String {
    clause(
        &format!(
            "io_uring's best row against epoll's (each family's lowest server CPU per {op} at \
             the point)"
        ),
        pairs.iter().map(|p| {
            format!(
                "{}{}",
                at_prefix(&p.at),
                pair_sentence(&p.uring, &p.epoll, Metric::CpuPerOp, op, &p.confidence)
            )
        }),
    )
}

/// "; HEAD: PART; PART..." of a finding's line; "" without a part.
fn clause(head: &str, parts: impl Iterator<Item = String>) -> String {
    let parts: Vec<String> = parts.collect();
    if parts.is_empty() {
        return String::new();
    }
    format!("; {head}: {}", parts.join("; "))
}

/// Each contender against each family's best row at each equal-load point, and each later
/// contender against the first: "; your servers against each family's best row: ext:mine
/// used 1.14 ± 0.06 times epoll-lt's server CPU per message (...)". "" without a contender.
fn contender_words(op: &str, pairs: &[ContenderPair]) -> String {
    clause(
        &format!(
            "your servers against each family's best row (its lowest server CPU per {op} at the \
             point)"
        ),
        pairs.iter().map(|p| {
            format!(
                "{}against {}: {}",
                at_prefix(&p.at),
                p.family.map_or("your first server", |f| f.words()),
                pair_sentence(
                    &p.contender,
                    &p.against,
                    Metric::CpuPerOp,
                    op,
                    &p.confidence
                )
            )
        }),
    )
}

/// Each family's best row against the runtime that drives the same family: "; ringside's
/// best row of each family against the runtime on it (...): at rate_per_sec=70000,
/// uring-tuned used 0.93 ± 0.02 times monoio's server CPU per message (0.91 to 0.95; decided
/// over 11 rounds; p=0.002)". "" without a runtime at an equal-load point.
fn peer_words(op: &str, pairs: &[PeerPair]) -> String {
    clause(
        &format!(
            "ringside's best row of each family against the runtime on it (the family's lowest \
             server CPU per {op} at the point, paired over rounds)"
        ),
        pairs.iter().map(|p| {
            let sentence = super::bottom::pair_sentence_with(
                &p.best,
                &p.peer,
                Metric::CpuPerOp,
                op,
                &p.confidence,
                super::bottom::claim_words_p(&p.confidence),
            );
            format!(
                "{}{} on {}: {sentence}",
                at_prefix(&p.at),
                p.peer,
                p.family.words()
            )
        }),
    )
}

/// What a workload's pairs compare, in words that read after "by" ("server CPU per message
/// at equal load"): the figure first, then which cells.
pub(crate) fn pairs_basis(f: &Facts, b: &Basis) -> String {
    let noun = noun(b.metric, op_word(f));
    match b.on {
        On::Figure => noun,
        On::EqualLoad => format!("{noun} at equal load"),
        On::PastCapacity => format!(
            "{noun} achieved where models fell behind the offered rate (load generator with \
             headroom)"
        ),
        On::Headroom => format!("{noun} at capacity (load generator with headroom)"),
    }
}

/// A pair's evidence in a few words ("behind, p=0.031", "equivalent", "undecided").
pub(crate) fn pair_evidence(c: &Confidence) -> String {
    match &c.claim {
        None => c.text(),
        Some(cl) => {
            let p = cl
                .p_adj
                .map(|p| format!(", p={}", p_text(p)))
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
pub(crate) fn suites(a: &Analysis) -> Vec<Suite> {
    let mut out: Vec<Suite> = Vec::new();
    for w in &a.workloads {
        let line = line(&w.id, &w.facts, &w.finding);
        match out.last_mut() {
            Some(s) if s.suite == w.suite => s.lines.push(line),
            _ => out.push(Suite {
                suite: w.suite.clone(),
                lines: vec![line],
            }),
        }
    }
    out
}

/// "How far to trust this run", in one sentence.
pub(crate) fn trust_text(run: &RunResults, a: &Analysis) -> String {
    let t: &Trust = &a.trust;
    let mut s = answer_text(&a.answer);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 45: the pairs' heading reads as English after "by": the figure, then the cells
    /// ("by server CPU per message at equal load", not "by at equal load, ...").
    #[test]
    fn the_pairs_basis_reads_after_by() {
        let echo = crate::analysis::cells::facts("echo.conns");
        let at = |metric, on| pairs_basis(&echo, &Basis { metric, on });
        assert_eq!(
            at(Metric::CpuPerOp, On::EqualLoad),
            "server CPU per message at equal load"
        );
        assert_eq!(
            at(Metric::OpsPerSec, On::Headroom),
            "throughput (messages/s) at capacity (load generator with headroom)"
        );
        assert!(at(Metric::OpsPerSec, On::PastCapacity)
            .starts_with("throughput (messages/s) achieved where models fell behind"));
        let pipe = crate::analysis::cells::facts("micro.pipe");
        assert_eq!(
            pairs_basis(
                &pipe,
                &Basis {
                    metric: Metric::LatencyP50,
                    on: On::Figure
                }
            ),
            "median latency per op"
        );
        for on in [On::Figure, On::EqualLoad, On::PastCapacity, On::Headroom] {
            let s = at(Metric::CpuPerOp, on);
            assert!(
                !s.contains(':') && !s.starts_with("at ") && !s.contains(", "),
                "{s}"
            );
        }
    }
}
