//! The run's bottom line, decided once: one answer per question the run can answer, in
//! numbers (a pair of models with the ratio of their figures, its interval and its claim),
//! and how far to trust the run as one level with its main reason. Read from the workloads'
//! findings (`finding`), the answer rate (`basis::answer`) and the trust counts
//! (`stats::findings::trust`); `export::words::bottom` words it, and every report opens with
//! it, the trust box's counters below.
//!
//! The questions: at each equal-load point of a network workload, io_uring's best row
//! against epoll's (by server CPU per op) and each contender against the best row of the
//! run's own models; at any other ranked workload, its headline point's runner-up against
//! its leader.

use super::finding::{ContenderPair, Ranks, WorkloadFinding};
use super::{Basis, On};
use crate::results::facts::Metric;
use crate::results::{RunResults, Status, Warning};
use crate::stats::findings::{Confidence, Trust};

/// One question's answer: `subject` against `against` at a point of `workload`.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub(crate) workload: String,
    /// The point's varying parameters ("" where the workload has one point ranked).
    pub(crate) at: String,
    /// The rate every model was offered there, per second (equal-load points).
    pub(crate) offered: Option<f64>,
    pub(crate) basis: Basis,
    pub(crate) question: Question,
    /// The model the sentence is about, and the model it is measured against.
    pub(crate) subject: String,
    pub(crate) against: String,
    /// How many times `against`'s figure `subject`'s was on the figure's "worse" side (the
    /// claim's `times`): for CPU or latency, `subject` used that many times `against`'s;
    /// for throughput, `against` did that many times `subject`'s.
    pub(crate) confidence: Confidence,
}

/// Which question an answer answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Question {
    /// io_uring's best row against epoll's at equal load.
    UringVsEpoll,
    /// A contender of the user's against the best of the run's own models.
    Contender,
    /// A later contender against the run's first (two builds of one server).
    ContenderVsFirst,
    /// The runner-up against the leader of the headline point.
    RunnerUp,
}

/// How far to trust the run, in one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Low,
    Reduced,
    High,
}

/// The one main reason for the level (the worst that applies), with what its remedy needs.
#[derive(Clone, Debug, PartialEq)]
pub enum Reason {
    /// The run was interrupted: only some cells are here.
    Interrupted,
    /// Nothing was measured.
    NothingMeasured,
    /// One repetition per cell: no difference was tested.
    OneRepetition,
    /// Other programs took the CPUs of `cells` of `of` measured cells; `top` took the most,
    /// `share` the mean share of the plan's CPUs they took in those cells.
    Disturbed {
        cells: usize,
        of: usize,
        top: Option<String>,
        share: f64,
    },
    /// Of `pairs` comparisons with a point's leader at equal load, `decided` were decided
    /// (either way or equivalent); the worst point could not see differences under
    /// `invisible_pct`.
    Undecided {
        decided: u32,
        pairs: u32,
        invisible_pct: Option<f64>,
    },
    /// Models jumped between two levels within the run.
    Unstable { models: usize },
    /// The calibration probes moved: the machine changed state within the run.
    MachineMoved,
    /// Nothing to lower it: `decided` of `pairs` decided, no cell disturbed.
    Clean { decided: u32, pairs: u32 },
}

/// The run's bottom line.
#[derive(Clone, Debug, PartialEq)]
pub struct BottomLine {
    pub(crate) answers: Vec<Answer>,
    pub(crate) level: Level,
    pub(crate) reason: Reason,
}

/// A share of cells at or above which disturbance lowers the trust to `Low`, and at or above
/// which it lowers it to `Reduced`.
const DISTURBED_LOW: f64 = 0.5;
const DISTURBED_REDUCED: f64 = 0.1;
/// Answer rates (decided of compared at equal load) under which trust is `Low`, `Reduced`.
const ANSWERED_LOW: f64 = 0.5;
const ANSWERED_REDUCED: f64 = 0.8;

/// The bottom line of a run whose workloads' findings are `findings` (id and finding, run
/// order), with its trust counts and answer rate.
pub(crate) fn of(
    run: &RunResults,
    findings: &[(&str, &WorkloadFinding)],
    trust: &Trust,
    answer: &crate::results::Answer,
) -> BottomLine {
    let mut answers = Vec::new();
    for (w, f) in findings {
        answers.extend(answers_of(w, f));
    }
    let (level, reason) = level_of(run, trust, answer);
    BottomLine {
        answers,
        level,
        reason,
    }
}

fn answers_of(w: &str, f: &WorkloadFinding) -> Vec<Answer> {
    let Ranks::Ranked { basis, finding, .. } = &f.ranks else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if basis.on == On::EqualLoad && basis.metric == Metric::CpuPerOp {
        for p in &f.families {
            out.push(Answer {
                workload: w.to_string(),
                at: p.place.clone(),
                offered: p.offered,
                basis: *basis,
                question: Question::UringVsEpoll,
                subject: p.uring.clone(),
                against: p.epoll.clone(),
                confidence: p.confidence.clone(),
            });
        }
        let answer = |c: &ContenderPair, question| Answer {
            workload: w.to_string(),
            at: c.place.clone(),
            offered: c.offered,
            basis: *basis,
            question,
            subject: c.contender.clone(),
            against: c.against.clone(),
            confidence: c.confidence.clone(),
        };
        out.extend(
            best_for_contenders(&f.contenders)
                .into_iter()
                .map(|c| answer(c, Question::Contender)),
        );
        out.extend(
            f.contenders
                .iter()
                .filter(|c| c.family.is_none())
                .map(|c| answer(c, Question::ContenderVsFirst)),
        );
        if !out.is_empty() {
            return out;
        }
    }
    // Any other ranked workload: its headline point's nearest model against its leader.
    let h = &finding.headline;
    let nearest = h
        .near
        .iter()
        .chain(&h.behind)
        .min_by(|a, b| a.times.total_cmp(&b.times));
    if let Some(o) = nearest {
        out.push(Answer {
            workload: w.to_string(),
            at: h.at.clone(),
            offered: None,
            basis: *basis,
            question: Question::RunnerUp,
            subject: o.label.clone(),
            against: h.leader.clone(),
            confidence: o.confidence.clone(),
        });
    }
    out
}

/// Of each contender's pairs at a point, the one against the family whose best row used the
/// least CPU per op there (the run's best of its own models).
fn best_for_contenders(pairs: &[ContenderPair]) -> Vec<&ContenderPair> {
    let mut out: Vec<&ContenderPair> = Vec::new();
    for p in pairs.iter().filter(|p| p.family.is_some()) {
        let times = |c: &ContenderPair| c.confidence.claim.as_ref().map_or(0.0, |cl| cl.times);
        match out
            .iter_mut()
            .find(|q| q.at == p.at && q.contender == p.contender)
        {
            // The larger ratio: the contender against the leaner family.
            Some(q) if times(p) > times(q) => *q = p,
            Some(_) => {}
            None => out.push(p),
        }
    }
    out
}

/// The trust level and its main reason: the first that applies of interrupted, nothing
/// measured, one repetition, most cells disturbed, most comparisons undecided (each `Low`);
/// then some cells disturbed, some comparisons undecided, unstable models, a machine that
/// changed state (each `Reduced`); else `High`.
fn level_of(run: &RunResults, t: &Trust, a: &crate::results::Answer) -> (Level, Reason) {
    if !run.finished {
        return (Level::Low, Reason::Interrupted);
    }
    if t.measured == 0 {
        return (Level::Low, Reason::NothingMeasured);
    }
    if t.reps == Some((1, 1)) {
        return (Level::Low, Reason::OneRepetition);
    }
    let disturbed = disturbed(run);
    let share = match &disturbed {
        Reason::Disturbed { cells, of, .. } => *cells as f64 / (*of).max(1) as f64,
        _ => 0.0,
    };
    let undecided = Reason::Undecided {
        decided: a.decided + a.equivalent,
        pairs: a.pairs,
        invisible_pct: a.worst_invisible_pct,
    };
    let rate = a.rate();
    if share >= DISTURBED_LOW {
        return (Level::Low, disturbed);
    }
    if rate.is_some_and(|r| r < ANSWERED_LOW) {
        return (Level::Low, undecided);
    }
    if share >= DISTURBED_REDUCED {
        return (Level::Reduced, disturbed);
    }
    if rate.is_some_and(|r| r < ANSWERED_REDUCED) {
        return (Level::Reduced, undecided);
    }
    if !t.unstable.is_empty() {
        return (
            Level::Reduced,
            Reason::Unstable {
                models: t.unstable.len(),
            },
        );
    }
    if !t.states.is_empty() {
        return (Level::Reduced, Reason::MachineMoved);
    }
    (
        Level::High,
        Reason::Clean {
            decided: a.decided + a.equivalent,
            pairs: a.pairs,
        },
    )
}

/// The measured cells warned `disturbed`, the program that took the most in most of them, and
/// the mean share of the plan's CPUs others took there.
fn disturbed(run: &RunResults) -> Reason {
    let measured: Vec<_> = run
        .cases
        .iter()
        .filter(|c| c.status == Status::Measured)
        .collect();
    let hit: Vec<_> = measured
        .iter()
        .filter(|c| c.warnings.contains(&Warning::Disturbed))
        .collect();
    let mut tops: Vec<(&str, usize)> = Vec::new();
    let mut shares = 0.0;
    for c in &hit {
        if let Some(d) = &c.disturbance {
            shares += d.share;
            if let Some(t) = d.top.as_deref() {
                match tops.iter_mut().find(|x| x.0 == t) {
                    Some(x) => x.1 += 1,
                    None => tops.push((t, 1)),
                }
            }
        }
    }
    let top = tops
        .iter()
        .fold(None::<&(&str, usize)>, |best, x| match best {
            Some(b) if b.1 >= x.1 => Some(b),
            _ => Some(x),
        })
        .map(|x| x.0.to_string());
    Reason::Disturbed {
        cells: hit.len(),
        of: measured.len(),
        top,
        share: if hit.is_empty() {
            0.0
        } else {
            shares / hit.len() as f64
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> RunResults {
        crate::results::store::parse(include_str!("../../tests/fixtures/results.json")).unwrap()
    }

    fn answered(decided: u32, pairs: u32) -> crate::results::Answer {
        crate::results::Answer {
            points: 1,
            pairs,
            decided,
            equivalent: 0,
            worst_invisible_pct: Some(4.0),
        }
    }

    fn clean() -> Trust {
        Trust {
            measured: 10,
            cells: 10,
            reps: Some((6, 6)),
            ..Trust::default()
        }
    }

    #[test]
    fn the_level_is_the_worst_reason_that_applies() {
        let mut r = run();
        for c in &mut r.cases {
            c.warnings.retain(|w| *w != Warning::Disturbed);
        }
        let (t, a) = (clean(), answered(9, 10));
        assert_eq!(
            level_of(&r, &t, &a),
            (
                Level::High,
                Reason::Clean {
                    decided: 9,
                    pairs: 10
                }
            )
        );
        // Most comparisons undecided: low, whatever else holds.
        let (l, why) = level_of(&r, &t, &answered(3, 10));
        assert_eq!(l, Level::Low);
        assert!(
            matches!(
                why,
                Reason::Undecided {
                    decided: 3,
                    pairs: 10,
                    ..
                }
            ),
            "{why:?}"
        );
        // Some undecided: reduced.
        assert_eq!(level_of(&r, &t, &answered(7, 10)).0, Level::Reduced);
        // One repetition and an interrupted run come first.
        let one = Trust {
            reps: Some((1, 1)),
            ..clean()
        };
        assert_eq!(level_of(&r, &one, &a), (Level::Low, Reason::OneRepetition));
        r.finished = false;
        assert_eq!(level_of(&r, &one, &a), (Level::Low, Reason::Interrupted));
    }

    #[test]
    fn disturbed_cells_name_the_program_that_took_most() {
        let mut r = run();
        let n = r.cases.len();
        for c in r.cases.iter_mut() {
            c.warnings.push(Warning::Disturbed);
            c.disturbance = serde_json::from_value(serde_json::json!({
                "share": 0.5, "others_ns": 1, "steal_ns": 0, "wall_ns": 2, "top": "rustc"
            }))
            .ok();
        }
        let (l, why) = level_of(&r, &clean(), &answered(9, 10));
        assert_eq!(l, Level::Low, "{why:?}");
        match why {
            Reason::Disturbed {
                cells, top, share, ..
            } => {
                assert!(cells > 0 && cells <= n);
                assert_eq!(top.as_deref(), Some("rustc"));
                assert!((share - 0.5).abs() < 1e-9);
            }
            other => panic!("{other:?}"),
        }
    }

    /// The A/B recipe: two builds of one server as contenders; the bottom line pairs the
    /// later with the first, beside each against the run's leanest row.
    #[test]
    fn two_contenders_are_answered_against_each_other() {
        let mut r =
            crate::results::store::parse(include_str!("../../tests/fixtures/default-run.json"))
                .unwrap();
        let epoll: Vec<crate::results::CaseResult> = r
            .cases
            .iter()
            .filter(|c| c.workload == "echo.conns" && c.model == "epoll-lt")
            .cloned()
            .collect();
        for name in ["ext:old", "ext:new"] {
            for c in &epoll {
                let mut c = c.clone();
                c.model = name.into();
                r.cases.push(c);
            }
        }
        let a = crate::analysis::Analysis::of(&r);
        let ab: Vec<&Answer> = a
            .bottom
            .answers
            .iter()
            .filter(|x| x.question == Question::ContenderVsFirst)
            .collect();
        assert_eq!(
            ab.len(),
            2,
            "one per equal-load point: {:?}",
            a.bottom.answers
        );
        for x in ab {
            assert_eq!(
                (x.subject.as_str(), x.against.as_str()),
                ("ext:new", "ext:old")
            );
            assert_eq!(x.workload, "echo.conns");
        }
        assert!(a
            .bottom
            .answers
            .iter()
            .any(|x| x.question == Question::Contender && x.subject == "ext:old"));
    }

    #[test]
    fn a_ranked_workload_answers_with_its_runner_up_against_its_leader() {
        let r = run();
        let a = crate::analysis::Analysis::of(&r);
        let first = a.bottom.answers.first().expect("an answer");
        assert_eq!(first.question, Question::RunnerUp);
        assert_ne!(first.subject, first.against);
        assert!(first.confidence.claim.is_some());
    }
}
