//! A [`Verdict`] in words: one line each. The match over its kinds is exhaustive (no `_`
//! arm), so a new kind does not compile until it is worded here.

use super::super::table::{fmt_ns, fmt_times, invisible_text, spike_text, P99_TYPICAL};
use crate::analysis::verdict::{Change, Scope, Verdict, Where};
use crate::analysis::vocabulary::{
    Capacity, Knee, Other, Outcome, Ranking, CAPACITY_P99_NS, KEEP_UP, MARGIN,
};
use crate::results::facts::{Facts, Metric};

/// One verdict worded, with whether it decides nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct Said {
    pub text: String,
    pub within_noise: bool,
}

impl Said {
    /// The sentence with its noise marker.
    pub fn line(&self) -> String {
        if self.within_noise {
            format!("{} (nothing decided)", self.text)
        } else {
            self.text.clone()
        }
    }
}

/// Verdict lines a report shows openly per workload; the rest are collapsed.
pub(crate) const SHOWN: usize = 8;

/// The lines a report shows (decided ones first, in order, at most [`SHOWN`]) and the rest
/// (collapsed), each in its original order.
pub(crate) fn split_shown(vs: &[Said]) -> (Vec<&Said>, Vec<&Said>) {
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

/// The prefix of every capacity verdict of a network workload.
pub const CAPACITY_PREFIX: &str = "capacity, load generator with headroom: ";

/// The prefix of the throughput ranking of an open-loop point where models fell behind.
pub const PAST_CAPACITY_PREFIX: &str =
    "where models fell behind the offered rate, by the rate achieved (load generator with headroom): ";

/// The prefix of the sweep verdicts of an open-loop workload (`echo.rate`, `http.rate`).
pub(crate) const OPEN_LOOP_PREFIX: &str = "open loop, latency from the intended send time: ";

fn prefix(s: Scope) -> &'static str {
    match s {
        Scope::Sweep => "",
        Scope::Headroom => CAPACITY_PREFIX,
        Scope::OpenLoop => OPEN_LOOP_PREFIX,
        Scope::PastCapacity => PAST_CAPACITY_PREFIX,
    }
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

/// "2.2x cheaper per op than" / "2.2x the throughput of".
fn how(m: Metric, times: f64) -> String {
    let how = match m {
        Metric::OpsPerSec => "the throughput of",
        Metric::LatencyP99 => "lower p99 than",
        Metric::CpuPerOp => "less CPU per op than",
        Metric::LatencyP50
        | Metric::SyscallsPer100
        | Metric::IdleRssBytes
        | Metric::IdleKernelBytes => "cheaper per op than",
    };
    format!("{} {how}", fmt_times(times))
}

/// "; behind it by: b 1.3x (evidence); equivalent to it: c 1.01x; undecided against it: d
/// 1.1x (evidence)".
pub(crate) fn claims_text(r: &Ranking) -> String {
    let list = |it: &mut dyn Iterator<Item = &Other>, evidence: bool| {
        it.map(|o| {
            if evidence {
                format!(
                    "{} {} ({})",
                    o.label,
                    fmt_times(o.times),
                    o.confidence.text()
                )
            } else {
                format!("{} {}", o.label, fmt_times(o.times))
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
            MARGIN * 100.0
        ));
    }
    let und = list(&mut r.undecided(), true);
    if !und.is_empty() {
        text.push_str(&format!("; undecided against it: {und}"));
    }
    text.push_str(&invisible_text(r.invisible_pct()));
    text
}

/// " (g)" after a sweep's parameter, "" for one group.
fn in_group(g: &str) -> String {
    if g.is_empty() {
        String::new()
    } else {
        format!(" ({g})")
    }
}

fn where_text(w: &Where) -> String {
    match w {
        Where::Anywhere => String::new(),
        Where::Point(g) => format!(" at {g}"),
        Where::FarEnd { param, x, group } if group.is_empty() => format!(" at {param}={x}"),
        Where::FarEnd { param, x, group } => format!(" at {param}={x}, {group}"),
    }
}

/// "50000 req/s offered" or "49800 to 50200 req/s offered", with the point's parameters.
fn equal_load_head(offered: (f64, f64), at: &[String], unit: &str) -> String {
    let (lo, hi) = offered;
    let rate = if hi - lo < 1.0 {
        format!("{lo:.0}")
    } else {
        format!("{lo:.0} to {hi:.0}")
    };
    if at.is_empty() {
        format!("at equal load ({rate} {unit} offered)")
    } else {
        format!("at equal load ({rate} {unit} offered, {})", at.join(" "))
    }
}

fn change_text(param: &str, m: Metric, c: &Change) -> String {
    let mark = match c.outcome {
        Some(Outcome::Equivalent) => " (equivalent)",
        _ if !c.decided => " (undecided)",
        _ => "",
    };
    format!(
        "{}: {param}={} is {} {param}={}{mark}",
        c.label,
        c.better_x,
        how(m, c.times),
        c.worse_x,
    )
}

fn knee_text(c: &Capacity, unit: &str) -> String {
    let ms = CAPACITY_P99_NS / 1e6;
    let l = &c.label;
    // The p99 the knee judged by, with its definition, and a spike among its repetitions.
    let p99 = c
        .p99_ns
        .map(|p| {
            let spike = c
                .spike
                .map(|(top, n, of)| format!("; {}", spike_text(top, n, of)))
                .unwrap_or_default();
            format!(" (p99 there {}, {P99_TYPICAL}{spike})", fmt_ns(p))
        })
        .unwrap_or_default();
    let mut text = match c.knee {
        Knee::Below { rate } => {
            format!("{l}: fell behind (or p99 > {ms} ms) already at {rate:.0} {unit} offered{p99}")
        }
        Knee::Between { capacity, next } => format!(
            "{l}: capacity {capacity:.0} {unit} with p99 <= {ms} ms{p99}; the knee lies \
             between {capacity:.0} and {next:.0} {unit}"
        ),
        Knee::Beyond { max } => format!(
            "{l}: kept up with every offered rate up to {max:.0} {unit} with p99 <= {ms} ms{p99} \
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
    text
}

/// One verdict of a workload whose facts are `f`, in words.
pub fn said(v: &Verdict, f: &Facts) -> Said {
    let (unit, op) = (f.units.rate, f.units.op);
    let text = match v {
        Verdict::Ranked {
            scope,
            metric,
            at,
            ranking: r,
        } => {
            let at = where_text(at);
            // "Leads" only where a claim puts the first ahead of another model.
            let head = if r.behind.is_empty() {
                format!(
                    "ranked by {}{at}: no decided leader ({} first)",
                    rank_by(*metric),
                    r.leader
                )
            } else {
                format!("ranked by {}{at}: {} leads", rank_by(*metric), r.leader)
            };
            format!("{}{head}{}", prefix(*scope), claims_text(r))
        }
        Verdict::Along {
            scope,
            metric,
            param,
            group,
            series,
        } => {
            let along: Vec<String> = series
                .iter()
                .map(|c| change_text(param, *metric, c))
                .collect();
            format!(
                "{}along {param}{}, last against first: {}",
                prefix(*scope),
                in_group(group),
                along.join("; ")
            )
        }
        Verdict::Crossover {
            scope,
            param,
            group,
            crossing: c,
        } => format!(
            "{}crossover: {} overtakes {} between {param}={} and {param}={}{}",
            prefix(*scope),
            c.winner,
            c.loser,
            c.before,
            c.after,
            in_group(group)
        ),
        Verdict::Unclaimed {
            scope,
            param,
            group,
            crossings,
        } => format!(
            "{}{crossings} crossing{} along {param} not claimed: the pair is not decided at \
             both points where the medians cross{}",
            prefix(*scope),
            if *crossings == 1 { "" } else { "s" },
            in_group(group)
        ),
        Verdict::AtEqualLoad {
            offered,
            at,
            ranking: r,
        } => format!(
            "{}: ranked by server CPU per {op} (less is better): {} leads ({}){}",
            equal_load_head(*offered, at, unit),
            r.leader,
            fmt_ns(r.value),
            claims_text(r)
        ),
        Verdict::FellBehind { offered, at, who } => {
            let who: Vec<String> = who
                .iter()
                .map(|(l, achieved)| format!("{l} (achieved {achieved:.0} in its typical run)"))
                .collect();
            format!(
                "{}: not ranked, fell behind the offered rate (its typical repetition achieved \
                 less than {:.0}% of it): {}",
                equal_load_head(*offered, at, unit),
                KEEP_UP * 100.0,
                who.join(", ")
            )
        }
        Verdict::NoHeadroom { cells, by_point } => {
            let parts: Vec<String> = by_point
                .iter()
                .map(|(p, ls)| {
                    if p.is_empty() {
                        ls.join(", ")
                    } else {
                        format!("{p}: {}", ls.join(", "))
                    }
                })
                .collect();
            format!(
                "capacity not ranked for {cells} cell{} whose load generator had no headroom \
                 (client_bound or both_saturated: the figure is the client's limit; see the \
                 equal-load ranking): {}",
                if *cells == 1 { "" } else { "s" },
                parts.join("; ")
            )
        }
        Verdict::Knee(c) => knee_text(c, unit),
    };
    Said {
        text,
        within_noise: v.decides_nothing(),
    }
}
