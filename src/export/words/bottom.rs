//! The bottom line in words (`analysis::bottom`): one sentence per answer, with its numbers
//! as hyperfine says them ("uring-defer used 1.14 ± 0.05 times epoll-lt's server CPU per
//! message"), its interval and its claim; then the confidence in one line, its main reason
//! and the remedy.

use super::super::table::fmt_rate;
use super::finding::{noun, op_word, plural};
use crate::analysis::bottom::{Answer, BottomLine, Level, Question, Reason};
use crate::analysis::vocabulary::{Confidence, Outcome, MARGIN};
use crate::analysis::Analysis;
use crate::results::facts::Metric;

/// "1.14 ± 0.05": the estimate and the larger distance to its interval's ends.
pub(crate) fn times_pm(times: f64, ci: (f64, f64)) -> String {
    let pm = (times - ci.0).max(ci.1 - times).max(0.0);
    format!("{times:.2} ± {pm:.2}")
}

/// A pair's interval and claim in words: "1.09 to 1.19; decided over 8 rounds", "0.98 to
/// 1.14; undecided after 6 rounds: about 20 would decide it at the noise measured".
pub(crate) fn claim_words(c: &Confidence) -> String {
    let Some(cl) = c.claim.as_ref() else {
        return c.text();
    };
    let rounds = |n: usize| format!("{n} round{}", if n == 1 { "" } else { "s" });
    let verdict = match cl.outcome {
        Outcome::Behind | Outcome::Ahead => format!("decided over {}", rounds(cl.rounds)),
        Outcome::Equivalent => format!(
            "equivalent within {:.0}% over {}",
            MARGIN * 100.0,
            rounds(cl.rounds)
        ),
        Outcome::Undecided => match cl.rounds_to_decide() {
            Some(n) => format!(
                "undecided after {}: about {n} would decide it at the noise measured",
                rounds(cl.rounds)
            ),
            None => format!("undecided after {}", rounds(cl.rounds)),
        },
    };
    if cl.rounds < 2 {
        return format!("one round, no interval: {verdict}");
    }
    format!("{:.2} to {:.2}; {verdict}", cl.ci.0, cl.ci.1)
}

/// [`claim_words`] and the test's p after the family's correction: "1.09 to 1.19; decided over
/// 8 rounds; p=0.004" (no p where the claim has none).
pub(crate) fn claim_words_p(c: &Confidence) -> String {
    let w = claim_words(c);
    match c.claim.as_ref().and_then(|cl| cl.p_adj) {
        Some(p) => format!("{w}; p={}", crate::analysis::vocabulary::p_text(p)),
        None => w,
    }
}

/// "A used 1.14 ± 0.05 times B's server CPU per message (1.09 to 1.19; decided over 8
/// rounds)": `subject` against `against` on metric `m`, whose claim's `times` is how many
/// times worse `subject` is.
pub(crate) fn pair_sentence(
    subject: &str,
    against: &str,
    m: Metric,
    op: &str,
    c: &Confidence,
) -> String {
    pair_sentence_with(subject, against, m, op, c, claim_words(c))
}

/// [`pair_sentence`] with its evidence in the parentheses given.
pub(crate) fn pair_sentence_with(
    subject: &str,
    against: &str,
    m: Metric,
    op: &str,
    c: &Confidence,
    evidence: String,
) -> String {
    let Some(cl) = c.claim.as_ref() else {
        return format!(
            "{subject} against {against} by {}: {}",
            noun(m, op),
            c.text()
        );
    };
    // One round has no interval: its ratio alone, said to be one.
    let pm = if cl.rounds < 2 {
        format!("{:.2}", cl.times)
    } else {
        times_pm(cl.times, cl.ci)
    };
    match m {
        // Higher is better: the leader did that many times the other's.
        Metric::OpsPerSec => format!(
            "{against} did {pm} times {subject}'s throughput ({}/s) ({evidence})",
            plural(op)
        ),
        Metric::CpuPerOp => format!(
            "{subject} used {pm} times {against}'s {} ({evidence})",
            noun(m, op)
        ),
        Metric::LatencyP50
        | Metric::LatencyP99
        | Metric::SyscallsPer100
        | Metric::IdleRssBytes
        | Metric::IdleKernelBytes => format!(
            "{subject} took {pm} times {against}'s {} ({evidence})",
            noun(m, op)
        ),
    }
}

/// One answer in a sentence.
pub(crate) fn answer_text(a: &Analysis, ans: &Answer) -> String {
    let op = a
        .workload(&ans.workload)
        .map_or("op", |w| op_word(&w.facts));
    let mut place: Vec<String> = Vec::new();
    if !ans.at.is_empty() {
        place.push(ans.at.clone());
    }
    if let Some(r) = ans.offered {
        place.push(format!(
            "{} {}/s offered to every model",
            fmt_rate(r),
            plural(op)
        ));
    }
    let place = if place.is_empty() {
        String::new()
    } else {
        format!(" ({})", place.join(", "))
    };
    let who = match ans.question {
        Question::UringVsEpoll => "io_uring's best row against epoll's: ",
        Question::Contender => "your server against the run's leanest row: ",
        Question::ContenderVsFirst => "your servers against each other: ",
        Question::RunnerUp => "",
    };
    format!(
        "{}{place}: {who}{}",
        ans.workload,
        pair_sentence(
            &ans.subject,
            &ans.against,
            ans.basis.metric,
            op,
            &ans.confidence
        )
    )
}

/// The confidence line: "Confidence: low. 94 of 96 measured cells were disturbed: other
/// programs took 62% of the CPUs (most: rustc). Rerun on a quiet machine."
pub(crate) fn confidence_text(b: &BottomLine) -> String {
    let level = match b.level {
        Level::High => "high",
        Level::Reduced => "reduced",
        Level::Low => "low",
    };
    let (why, remedy) = match &b.reason {
        Reason::Interrupted => (
            "the run was interrupted, so only the cells it kept are here".to_string(),
            "run it to the end".to_string(),
        ),
        Reason::NothingMeasured => (
            "no cell was measured".to_string(),
            "see the failed and unavailable cells below".to_string(),
        ),
        Reason::OneRepetition => (
            "one repetition per cell, so no difference was tested".to_string(),
            "use --profile quick or full".to_string(),
        ),
        Reason::Disturbed {
            cells,
            of,
            top,
            share,
        } => (
            format!(
                "{cells} of {of} measured cells were disturbed: other programs took {:.0}% of \
                 their CPUs{}",
                share * 100.0,
                top.as_ref()
                    .map(|t| format!(" (most: {})", t.split(" (").next().unwrap_or(t)))
                    .unwrap_or_default()
            ),
            "rerun on a quiet machine".to_string(),
        ),
        Reason::Undecided {
            decided,
            pairs,
            invisible_pct,
        } => (
            format!(
                "{decided} of {pairs} comparisons at equal load were decided{}",
                invisible_pct
                    .map(|v| format!(
                        ", and the worst point could not see differences under {v:.1}%"
                    ))
                    .unwrap_or_default()
            ),
            "more rounds decide more: --profile full, or a quieter machine".to_string(),
        ),
        Reason::Unstable { models } => (
            format!(
                "{models} model{} jumped between two levels within the run",
                if *models == 1 { "" } else { "s" }
            ),
            "compare several runs (ringside compare) before trusting a small difference"
                .to_string(),
        ),
        Reason::MachineMoved => (
            "the calibration probes moved: the machine changed state within the run".to_string(),
            "rerun on a quiet machine".to_string(),
        ),
        Reason::Clean { decided, pairs } if *pairs > 0 => (
            format!("{decided} of {pairs} comparisons at equal load were decided, and no cell was disturbed"),
            "nothing to do".to_string(),
        ),
        Reason::Clean { .. } => ("no cell was disturbed".to_string(), "nothing to do".to_string()),
    };
    format!(
        "Confidence: {level}. {}. {}.",
        capital(&why),
        capital(&remedy)
    )
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// The bottom line's sentences: each answer, then the confidence line; a run that answers
/// nothing says so.
pub(crate) fn lines(a: &Analysis) -> Vec<String> {
    let b = &a.bottom;
    let mut out: Vec<String> = b.answers.iter().map(|x| answer_text(a, x)).collect();
    if out.is_empty() {
        out.push("No question this run could answer: no workload had two models ranked.".into());
    }
    out.push(confidence_text(b));
    out
}
