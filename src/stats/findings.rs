//! Findings: per workload, the answer its cells support on this machine, computed from the
//! figures, never written by hand. The caller (`analysis::basis::points`) arranges a
//! workload's measured cells into points (one parameter point each, sweep points in sweep
//! order) with the figure to rank by; this module ranks every point, picks the headline (the
//! first point), says by how much the leader leads and with what confidence, which models are
//! equivalent to it or undecided against it, and where along the points another model takes
//! the lead. [`trust`] sums up how far a run can be trusted.
//!
//! Every comparison is a paired claim of `stats::claims` over the point's rounds (repetition k
//! of every model ran in round k): "behind" only when the signed-rank test, corrected over
//! the point's comparisons, decides it; "equivalent" when the ratio's interval lies within
//! +-5%; "undecided" otherwise.

use super::bootstrap::median_ci;
use super::claims::{self, Claim, Outcome, ALPHA};
use crate::results::{RunResults, Status, Warning};

/// One model's figure at one point.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub(crate) label: String,
    /// The figure ranked (the cell's summary: a median, a CPU per op).
    pub(crate) value: f64,
    /// The same figure per repetition, one per round (empty when the file has none).
    pub(crate) reps: Vec<f64>,
}

/// One parameter point: where it is ("msg_bytes=64"), its entries, and the level its claims
/// are judged at (the smallest of its cells' `claim_alpha`, under their sequential design:
/// `claims::level_of`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Point {
    pub(crate) at: String,
    pub(crate) entries: Vec<Entry>,
    pub(crate) level: claims::Level,
}

/// How two entries' rounds tell them apart: the paired claim, when they have rounds.
#[derive(Clone, Debug, PartialEq)]
pub struct Confidence {
    pub(crate) claim: Option<Claim>,
    /// Repetitions on each side.
    pub(crate) n: (usize, usize),
}

impl Confidence {
    /// `b` against `a`, on a figure where `higher_is_better` (uncorrected: a point's family
    /// is corrected by [`rank`] and [`pairs`]).
    pub(crate) fn of(
        a: &[f64],
        b: &[f64],
        higher_is_better: bool,
        level: impl Into<claims::Level>,
    ) -> Confidence {
        Confidence {
            claim: claims::pair(a, b, higher_is_better, level),
            n: (a.len(), b.len()),
        }
    }

    /// True when the difference is not decided (equivalent, undecided or untested).
    #[cfg(test)]
    fn within_noise(&self) -> bool {
        !self.claim.as_ref().is_some_and(Claim::decided)
    }

    pub(crate) fn outcome(&self) -> Option<Outcome> {
        self.claim.as_ref().map(|c| c.outcome)
    }

    /// "Wilcoxon signed-rank over 6 paired rounds, p=0.031 (FDR-adjusted); ratio 1.28x, 95%
    /// interval 1.20x to 1.35x", or why there is no test.
    pub(crate) fn text(&self) -> String {
        match &self.claim {
            None if self.n.0 == 0 || self.n.1 == 0 => {
                "shown, not claimed: no per-repetition values of this figure (a p99 needs 50 \
                 samples beyond it in every repetition)"
                    .into()
            }
            None if self.n.0 < 2 || self.n.1 < 2 => "untested: one repetition".into(),
            None => "untested: no round in common".into(),
            Some(c) => claim_text(c),
        }
    }
}

/// A claim's evidence in words.
pub(crate) fn claim_text(c: &Claim) -> String {
    let need = claims::rounds_needed(ALPHA);
    // The pair's p is that of the claim it supports: "not equivalent" where that one is the
    // smaller.
    let of_eq = c.p_eq.is_some_and(|e| c.p.is_none_or(|p| e <= p));
    let p = c
        .p_adj
        .or(c.p)
        .map(|p| {
            format!(
                "p={}{}",
                claims::p_text(p),
                if of_eq { " (of equivalence)" } else { "" }
            )
        })
        .unwrap_or_else(|| "every round tied".into());
    if !c.paired {
        return format!(
            "Mann-Whitney over {}+ repetitions a side (not paired), {p}; {} to {} at 95%",
            c.rounds,
            ratio(c.ci.0),
            ratio(c.ci.1)
        );
    }
    if !c.level().enough(c.rounds) {
        return match c.looks {
            Some(_) => format!(
                "undecided: {} paired round{}, and a claim needs at least {} (rounds looked at \
                 after each one need more)",
                c.rounds,
                if c.rounds == 1 { "" } else { "s" },
                c.level().first_claim().max(need as u32)
            ),
            _ => format!(
                "undecided: {} paired round{}, and a claim needs {} (the smallest p {} rounds \
                 can give is {:.3})",
                c.rounds,
                if c.rounds == 1 { "" } else { "s" },
                claims::rounds_needed(c.alpha),
                c.rounds,
                claims::min_p(c.rounds)
            ),
        };
    }
    let look = match c.looks {
        Some(l) => format!(
            ", looked at after every round from {} to {} (sequential: repeated p and interval)",
            l.first, l.last
        ),
        None if c.alpha == ALPHA => String::new(),
        None => format!(" (alpha {})", c.alpha),
    };
    let what = if c.outcome == Outcome::Equivalent {
        "equivalence within 5% (two one-sided tests)"
    } else {
        "signed-rank"
    };
    format!(
        "{what} over {} paired rounds{look}, {p} after FDR; {} to {} at {}%",
        c.rounds,
        ratio(c.ci.0),
        ratio(c.ci.1),
        ((1.0 - c.alpha) * 1000.0).round() / 10.0
    )
}

fn ratio(r: f64) -> String {
    if (0.9..1.1).contains(&r) {
        format!("{r:.2}x")
    } else {
        format!("{r:.1}x")
    }
}

/// An entry ranked against the leader of its point.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Other {
    pub(crate) label: String,
    /// How many times better the leader is: the paired claim's estimate over the rounds,
    /// or the cells' figures' ratio where there are no rounds.
    pub(crate) times: f64,
    pub(crate) confidence: Confidence,
}

/// One point ranked: the leader, the entries not decided against it (equivalent or
/// undecided), the rest (decided behind) in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranking {
    pub(crate) at: String,
    pub(crate) leader: String,
    pub(crate) value: f64,
    /// 95% bootstrap interval of the leader's median over its repetitions.
    pub(crate) ci: Option<(f64, f64)>,
    pub(crate) reps: usize,
    pub(crate) near: Vec<Other>,
    pub(crate) behind: Vec<Other>,
}

impl Ranking {
    fn beats_clearly(&self, label: &str) -> bool {
        self.behind.iter().any(|o| o.label == label)
    }

    fn at_par(&self, label: &str) -> bool {
        self.leader == label || self.near.iter().any(|o| o.label == label)
    }

    /// The entries equivalent to the leader.
    pub(crate) fn equivalent(&self) -> impl Iterator<Item = &Other> {
        self.near
            .iter()
            .filter(|o| o.confidence.outcome() == Some(Outcome::Equivalent))
    }

    /// The smallest difference, in percent, the leader's claims could have told apart: the
    /// median of their intervals' half-widths (`Claim::invisible_pct`), where they have
    /// enough rounds; `None` otherwise.
    pub(crate) fn invisible_pct(&self) -> Option<f64> {
        let mut v: Vec<f64> = self
            .near
            .iter()
            .chain(&self.behind)
            .filter_map(|o| o.confidence.claim.as_ref())
            .map(|c| c.invisible_pct())
            .filter(|x| x.is_finite())
            .collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(v[v.len() / 2])
    }

    /// The entries neither behind nor equivalent: undecided or untested.
    pub(crate) fn undecided(&self) -> impl Iterator<Item = &Other> {
        self.near
            .iter()
            .filter(|o| o.confidence.outcome() != Some(Outcome::Equivalent))
    }
}

/// Entries in rank order (stable: ties keep the caller's order).
fn ordered(p: &Point, higher_is_better: bool) -> Vec<&Entry> {
    let mut order: Vec<&Entry> = p.entries.iter().collect();
    order.sort_by(|a, b| {
        if higher_is_better {
            b.value.total_cmp(&a.value)
        } else {
            a.value.total_cmp(&b.value)
        }
    });
    order
}

fn times(a: &Entry, b: &Entry, higher_is_better: bool) -> f64 {
    if higher_is_better {
        a.value / b.value
    } else {
        b.value / a.value
    }
}

/// Corrects a point's family of confidences (Benjamini-Hochberg over its claims).
fn correct(cs: &mut [&mut Confidence], alpha: f64) {
    let mut fam: Vec<&mut Claim> = cs.iter_mut().filter_map(|c| c.claim.as_mut()).collect();
    claims::correct(&mut fam, alpha);
}

/// Ranks one point's entries (`None` with fewer than two): the leader by the cells' figures,
/// each other entry's paired claim against it, corrected as one family.
pub(crate) fn rank(p: &Point, higher_is_better: bool) -> Option<Ranking> {
    if p.entries.len() < 2 {
        return None;
    }
    let order = ordered(p, higher_is_better);
    let lead = order[0];
    let mut others: Vec<Other> = order[1..]
        .iter()
        .map(|e| {
            let confidence = Confidence::of(&lead.reps, &e.reps, higher_is_better, p.level);
            Other {
                label: e.label.clone(),
                // The paired estimate where there is one (so the factor and its interval
                // agree), else the cells' figures.
                times: confidence
                    .claim
                    .as_ref()
                    .filter(|c| c.paired)
                    .map_or_else(|| times(lead, e, higher_is_better), |c| c.times),
                confidence,
            }
        })
        .collect();
    correct(
        &mut others
            .iter_mut()
            .map(|o| &mut o.confidence)
            .collect::<Vec<_>>(),
        p.level.alpha,
    );
    let (near, behind): (Vec<Other>, Vec<Other>) = others
        .into_iter()
        .partition(|o| o.confidence.outcome() != Some(Outcome::Behind));
    // A model decided *ahead* of the leader by the paired rounds (the cells' figures put
    // it second) stays with the near ones: it is not behind.
    Some(Ranking {
        at: p.at.clone(),
        leader: lead.label.clone(),
        value: lead.value,
        ci: median_ci(&lead.reps),
        reps: lead.reps.len(),
        near,
        behind,
    })
}

/// `b` against `a` at point `p` (labels of its entries), judged in one family with the
/// point's comparisons of each model against its leader ([`rank`]'s): the pair is one of them
/// when either is the leader, else one test more in the family. `None` when either is
/// missing.
pub(crate) fn pair_at(p: &Point, a: &str, b: &str, higher_is_better: bool) -> Option<Confidence> {
    let find = |l: &str| p.entries.iter().find(|e| e.label == l);
    let (ea, eb) = (find(a)?, find(b)?);
    let order = ordered(p, higher_is_better);
    let lead = order[0];
    let mut fam: Vec<Confidence> = order[1..]
        .iter()
        .filter(|e| !(lead.label == a && e.label == b || lead.label == b && e.label == a))
        .map(|e| Confidence::of(&lead.reps, &e.reps, higher_is_better, p.level))
        .collect();
    fam.push(Confidence::of(
        &ea.reps,
        &eb.reps,
        higher_is_better,
        p.level,
    ));
    let mut refs: Vec<&mut Confidence> = fam.iter_mut().collect();
    correct(&mut refs, p.level.alpha);
    fam.pop()
}

/// Two entries of one point: `better` ahead of `worse` by `times`.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    pub(crate) better: String,
    pub(crate) worse: String,
    pub(crate) times: f64,
    pub(crate) confidence: Confidence,
}

/// The first `max` pairs of a point's entries, better first, in rank order (the leader's
/// pairs first), each a paired claim, corrected over all the point's pairs; and how many
/// pairs the point has. Only the pairs returned are built (a point of 2,000 models has
/// 1,999,000: a report lists a few hundred), the others counted in the correction as tests
/// that found nothing (`claims::correct_among`).
pub(crate) fn pairs(p: &Point, higher_is_better: bool, max: usize) -> (Vec<Pair>, usize) {
    let order = ordered(p, higher_is_better);
    let n = order.len();
    let total = n * n.saturating_sub(1) / 2;
    let mut out = Vec::new();
    'all: for (i, a) in order.iter().enumerate() {
        for b in &order[i + 1..] {
            if out.len() == max {
                break 'all;
            }
            out.push(Pair {
                better: a.label.clone(),
                worse: b.label.clone(),
                times: times(a, b, higher_is_better),
                confidence: Confidence::of(&a.reps, &b.reps, higher_is_better, p.level),
            });
        }
    }
    let unbuilt = total - out.len();
    let mut fam: Vec<&mut Claim> = out
        .iter_mut()
        .filter_map(|o| o.confidence.claim.as_mut())
        .collect();
    claims::correct_among(&mut fam, p.level.alpha, unbuilt);
    (out, total)
}

/// Where another model takes the lead from the headline's leader, clearly (the headline's
/// leader is behind it beyond noise there).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Flip {
    pub(crate) at: String,
    pub(crate) leader: String,
    pub(crate) times: f64,
}

/// What one workload's cells say.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Finding {
    /// The first ranked point.
    pub(crate) headline: Ranking,
    /// Points ranked, and at how many of them the headline's leader leads or is within noise
    /// of the leader.
    pub(crate) points: usize,
    pub(crate) leads: usize,
    /// Later points where another model leads and the headline's leader is clearly behind.
    pub(crate) flips: Vec<Flip>,
    /// Every model's standing over the ranked points, for the one-sentence summary: those
    /// never decided behind first (most leads first), then those decided behind somewhere,
    /// nearest first.
    pub(crate) standings: Vec<Standing>,
}

/// One model over a workload's ranked points.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Standing {
    pub(crate) label: String,
    /// Points where it was ranked, where it led (first, and decided ahead of at least one
    /// model), where it was equivalent to the leader (within the margin; the first of a point
    /// with no decided leader counts here when another is equivalent to it), and where it was
    /// decided behind the leader.
    pub(crate) ranked: usize,
    pub(crate) led: usize,
    pub(crate) equivalent: usize,
    pub(crate) behind: usize,
    /// How many times behind the leader, least and most, over the points where it was
    /// decided behind.
    pub(crate) times: Option<(f64, f64)>,
}

impl Standing {
    /// Never decided behind, and led or was equivalent to the leader at every point it ran.
    pub(crate) fn at_front(&self) -> bool {
        self.behind == 0 && self.led + self.equivalent == self.ranked
    }
}

/// Every model's standing over `ranked` points (see [`Finding::standings`]).
fn standings(ranked: &[Ranking]) -> Vec<Standing> {
    fn of<'a>(out: &'a mut Vec<Standing>, label: &str) -> &'a mut Standing {
        let i = match out.iter().position(|s| s.label == label) {
            Some(i) => i,
            None => {
                out.push(Standing {
                    label: label.to_string(),
                    ..Standing::default()
                });
                out.len() - 1
            }
        };
        let s = &mut out[i];
        s.ranked += 1;
        s
    }
    let mut out: Vec<Standing> = Vec::new();
    for r in ranked {
        // First by median is "led" only where a claim puts it ahead of someone; otherwise
        // the point has no decided leader, and the first is one of the equivalent (if any).
        let decided = !r.behind.is_empty();
        let with_equivalent = r.equivalent().next().is_some();
        let first = of(&mut out, &r.leader);
        if decided {
            first.led += 1;
        } else if with_equivalent {
            first.equivalent += 1;
        }
        for o in r.equivalent() {
            of(&mut out, &o.label).equivalent += 1;
        }
        for o in r.undecided() {
            of(&mut out, &o.label);
        }
        for o in &r.behind {
            let s = of(&mut out, &o.label);
            s.behind += 1;
            s.times = Some(s.times.map_or((o.times, o.times), |(lo, hi)| {
                (lo.min(o.times), hi.max(o.times))
            }));
        }
    }
    // Never behind first (most leads first), then behind, nearest first; stable otherwise.
    out.sort_by(|a, b| {
        (a.behind > 0)
            .cmp(&(b.behind > 0))
            .then(b.led.cmp(&a.led))
            .then_with(|| {
                let lo = |s: &Standing| s.times.map_or(1.0, |t| t.0);
                lo(a).total_cmp(&lo(b))
            })
    });
    out
}

/// The finding over a workload's points, in the order given (`None`: no point with two
/// entries to rank).
pub(crate) fn of_points(points: &[Point], higher_is_better: bool) -> Option<Finding> {
    of_rankings(
        points
            .iter()
            .filter_map(|p| rank(p, higher_is_better))
            .collect(),
    )
}

/// The finding over a workload's points already ranked (`ranked`, in order): see
/// [`of_points`].
pub(crate) fn of_rankings(ranked: Vec<Ranking>) -> Option<Finding> {
    let headline = ranked.first()?.clone();
    let who = headline.leader.clone();
    let leads = ranked.iter().filter(|r| r.at_par(&who)).count();
    let flips = ranked[1..]
        .iter()
        .filter(|r| r.beats_clearly(&who))
        .map(|r| Flip {
            at: r.at.clone(),
            leader: r.leader.clone(),
            times: r
                .behind
                .iter()
                .find(|o| o.label == who)
                .map(|o| o.times)
                .unwrap_or(1.0),
        })
        .collect();
    Some(Finding {
        headline,
        points: ranked.len(),
        leads,
        flips,
        standings: standings(&ranked),
    })
}

/// How far to trust a run: its cells by status, the repetitions behind the measured ones,
/// and the warnings they carry.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Trust {
    pub(crate) cells: usize,
    pub(crate) measured: usize,
    pub(crate) failed: usize,
    /// Measured cells' timed repetitions, fewest and most.
    pub(crate) reps: Option<(u32, u32)>,
    /// Each warning with the number of measured cells that carry it, in a fixed order.
    pub(crate) warnings: Vec<(Warning, usize)>,
    /// Measured cells with any warning.
    pub(crate) warned: usize,
    /// Repetitions run again (disturbed or stalled), and those kept disturbed.
    pub(crate) reruns: usize,
    pub(crate) disturbed_reps: u32,
    /// What the calibration probes say of the machine's state over the run.
    pub(crate) states: Vec<String>,
    /// Models whose rounds jumped between two levels within the run (relative to their
    /// point's other models), per workload: their figures vary that much between runs.
    pub(crate) unstable: Vec<super::stability::Unstable>,
}

/// Every warning, in the order [`Trust`] lists them.
const WARNINGS: [Warning; 15] = [
    Warning::Disturbed,
    Warning::Stalled,
    Warning::HighSpread,
    Warning::ClientBound,
    Warning::BothSaturated,
    Warning::SharedCpus,
    Warning::LoadgenDisagrees,
    Warning::WrkBound,
    Warning::CpuOverAllowed,
    Warning::CpuBelowSyscalls,
    Warning::WarmupUnsettled,
    Warning::NoNapiId,
    Warning::DatagramsLost,
    Warning::DatagramsDuplicated,
    Warning::DatagramsReordered,
];

pub(crate) fn trust(run: &RunResults) -> Trust {
    let measured: Vec<_> = run
        .cases
        .iter()
        .filter(|c| c.status == Status::Measured)
        .collect();
    let reps = measured.iter().map(|c| c.repetitions).fold(None, |acc, r| {
        Some(match acc {
            None => (r, r),
            Some((lo, hi)) => (r.min(lo), r.max(hi)),
        })
    });
    let warnings = WARNINGS
        .iter()
        .map(|w| {
            (
                *w,
                measured.iter().filter(|c| c.warnings.contains(w)).count(),
            )
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    Trust {
        cells: run.cases.len(),
        measured: measured.len(),
        failed: run
            .cases
            .iter()
            .filter(|c| c.status == Status::Failed)
            .count(),
        reps,
        warnings,
        warned: measured.iter().filter(|c| !c.warnings.is_empty()).count(),
        reruns: measured.iter().map(|c| c.reruns.len()).sum(),
        disturbed_reps: measured
            .iter()
            .filter_map(|c| c.disturbance.as_ref())
            .map(|d| d.disturbed_repetitions)
            .sum(),
        states: super::stability::run_states(run, "this run"),
        unstable: super::stability::unstable(run),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(label: &str, reps: &[f64]) -> Entry {
        let mut s = reps.to_vec();
        s.sort_by(f64::total_cmp);
        Entry {
            label: label.into(),
            value: s[s.len() / 2],
            reps: reps.to_vec(),
        }
    }

    fn pt(at: &str, entries: Vec<Entry>) -> Point {
        Point {
            level: ALPHA.into(),
            at: at.into(),
            entries,
        }
    }

    #[test]
    fn standings_sum_up_every_point() {
        // Six rounds a point: a leads at both; b is a within 1% (equivalent); c is 1.3x
        // behind at the first point and 2x at the second; d's rounds go both ways (undecided).
        let r = |x: f64| -> Vec<f64> { (0..6).map(|k| x * (1.0 + 0.002 * k as f64)).collect() };
        let d = |x: f64| -> Vec<f64> {
            (0..6)
                .map(|k| x * if k % 2 == 0 { 0.8 } else { 1.3 })
                .collect()
        };
        let pts = [
            pt(
                "n=1",
                vec![
                    e("a", &r(100.0)),
                    e("b", &r(100.5)),
                    e("c", &r(130.0)),
                    e("d", &d(100.0)),
                ],
            ),
            pt(
                "n=2",
                vec![
                    e("a", &r(200.0)),
                    e("b", &r(201.0)),
                    e("c", &r(400.0)),
                    e("d", &d(200.0)),
                ],
            ),
        ];
        let f = of_points(&pts, false).unwrap();
        let by = |l: &str| f.standings.iter().find(|s| s.label == l).unwrap().clone();
        let (a, b, c, dd) = (by("a"), by("b"), by("c"), by("d"));
        assert_eq!((a.led, a.ranked, a.behind), (2, 2, 0));
        assert!(a.at_front() && b.at_front());
        assert_eq!((b.equivalent, b.behind), (2, 0));
        assert_eq!(c.behind, 2);
        let (lo, hi) = c.times.unwrap();
        assert!(
            (lo - 1.3).abs() < 0.02 && (hi - 2.0).abs() < 0.03,
            "{lo} {hi}"
        );
        assert!(!dd.at_front() && dd.behind == 0);
        // Never behind first, most leads first; then behind.
        assert_eq!(f.standings[0].label, "a");
        assert_eq!(f.standings.last().unwrap().label, "c");
    }

    #[test]
    fn leader_near_and_behind() {
        let p = pt(
            "x=1",
            vec![
                e("slow", &[300.0, 310.0, 305.0, 302.0, 301.0, 304.0]),
                e("fast", &[100.0, 101.0, 102.0, 99.0, 100.0, 101.0]),
                e("close", &[101.0, 102.0, 104.0, 100.0, 101.0, 101.5]),
            ],
        );
        let r = rank(&p, false).unwrap();
        assert_eq!(r.leader, "fast");
        assert_eq!(r.near.len(), 1);
        assert_eq!(r.near[0].label, "close");
        assert_eq!(r.behind.len(), 1);
        assert_eq!(r.behind[0].label, "slow");
        assert!(
            (r.behind[0].times - 3.01).abs() < 0.02,
            "{}",
            r.behind[0].times
        );
        assert!(
            r.behind[0]
                .confidence
                .claim
                .as_ref()
                .unwrap()
                .p_adj
                .unwrap()
                < 0.05
        );
        let (lo, hi) = r.ci.unwrap();
        assert!(lo <= 100.0 && hi >= 100.0 && lo >= 99.0 && hi <= 102.0);
    }

    #[test]
    fn higher_is_better_ranks_the_largest_first() {
        let p = pt(
            "",
            vec![
                e("a", &[1.0, 1.1, 1.0, 1.05, 1.02, 1.0]),
                e("b", &[3.0, 3.1, 3.0, 3.2, 3.1, 3.05]),
            ],
        );
        let r = rank(&p, true).unwrap();
        assert_eq!(r.leader, "b");
        assert!(r.behind[0].times > 2.5);
    }

    #[test]
    fn a_flip_needs_the_headline_leader_clearly_behind() {
        let pts = vec![
            pt(
                "n=1",
                vec![
                    e("a", &[10.0, 11.0, 10.5, 10.2, 10.4, 10.3]),
                    e("b", &[20.0, 21.0, 20.5, 20.2, 20.6, 20.4]),
                ],
            ),
            // b leads but within noise of a: no flip.
            pt(
                "n=8",
                vec![
                    e("a", &[10.0, 11.0, 10.5, 10.2, 10.4, 10.3]),
                    e("b", &[9.9, 11.1, 10.3, 10.3, 10.4, 10.2]),
                ],
            ),
            // b clearly ahead: a flip.
            pt(
                "n=64",
                vec![
                    e("a", &[30.0, 31.0, 30.5, 30.2, 30.6, 30.4]),
                    e("b", &[10.0, 11.0, 10.5, 10.2, 10.4, 10.3]),
                ],
            ),
        ];
        let f = of_points(&pts, false).unwrap();
        assert_eq!(f.headline.leader, "a");
        assert_eq!((f.points, f.leads), (3, 2));
        assert_eq!(f.flips.len(), 1);
        assert_eq!(f.flips[0].at, "n=64");
        assert_eq!(f.flips[0].leader, "b");
        assert!(f.flips[0].times > 2.9);
    }

    #[test]
    fn pairs_are_every_two_entries_better_first() {
        let p = pt(
            "",
            vec![
                e("c", &[30.0, 31.0]),
                e("a", &[10.0, 11.0]),
                e("b", &[20.0, 21.0]),
            ],
        );
        let (v, total) = pairs(&p, false, usize::MAX);
        assert_eq!(total, 3);
        // Only what is asked for is built; the rest still counts in the correction.
        let (first, all) = pairs(&p, false, 1);
        assert_eq!((first.len(), all), (1, 3));
        let names: Vec<(&str, &str)> = v
            .iter()
            .map(|x| (x.better.as_str(), x.worse.as_str()))
            .collect();
        assert_eq!(names, [("a", "b"), ("a", "c"), ("b", "c")]);
        assert!(v.iter().all(|x| x.times >= 1.0));
    }

    #[test]
    fn one_entry_points_are_not_ranked() {
        assert_eq!(of_points(&[pt("", vec![e("a", &[1.0])])], false), None);
    }

    #[test]
    fn too_few_rounds_are_undecided_and_say_so() {
        let c = Confidence::of(&[1.0], &[2.0], false, ALPHA);
        assert!(c.within_noise());
        assert_eq!(c.outcome(), Some(Outcome::Undecided));
        assert!(c.text().contains("a claim needs 6"), "{}", c.text());
        let five = Confidence::of(&[1.0; 5], &[2.0; 5], false, ALPHA);
        assert!(five.within_noise(), "5 rounds can never reach p < 0.05");
        let none = Confidence::of(&[], &[], false, ALPHA);
        assert!(none.within_noise() && none.text().contains("not claimed"));
    }

    #[test]
    fn a_point_ranks_leader_equivalent_undecided_and_behind() {
        let r = rank(
            &pt(
                "",
                vec![
                    e("slow", &[300.0, 330.0, 290.0, 310.0, 305.0, 320.0]),
                    e("fast", &[100.0, 110.0, 97.0, 103.0, 101.0, 107.0]),
                    e("twin", &[101.0, 111.0, 98.0, 104.0, 102.0, 108.0]),
                    e("noisy", &[90.0, 150.0, 80.0, 140.0, 100.0, 130.0]),
                ],
            ),
            false,
        )
        .unwrap();
        assert_eq!(r.leader, "fast");
        let outcome = |l: &str| {
            r.near
                .iter()
                .chain(&r.behind)
                .find(|o| o.label == l)
                .and_then(|o| o.confidence.outcome())
                .unwrap()
        };
        assert_eq!(outcome("twin"), Outcome::Equivalent);
        assert_eq!(outcome("slow"), Outcome::Behind);
        assert_eq!(outcome("noisy"), Outcome::Undecided);
        assert!(r.behind.iter().all(|o| o.label == "slow"));
        assert!(r.at_par("noisy") && r.at_par("twin") && !r.at_par("slow"));
    }

    #[test]
    fn drift_shared_by_rounds_does_not_hide_a_lead() {
        // Round 3 ran with the machine 50% slower for everyone: paired, the lead holds.
        let p = pt(
            "",
            vec![
                e("a", &[100.0, 101.0, 150.0, 99.0, 100.0, 102.0]),
                e("b", &[120.0, 121.0, 181.0, 119.0, 121.0, 122.0]),
            ],
        );
        let r = rank(&p, false).unwrap();
        assert_eq!(r.leader, "a");
        assert_eq!(r.behind.len(), 1, "{r:?}");
        assert!(r.behind[0].confidence.text().contains("6 paired rounds"));
    }
}
