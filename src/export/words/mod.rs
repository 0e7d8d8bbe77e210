//! Where the analysis becomes sentences, and nowhere else: each
//! [`Verdict`](crate::analysis::verdict::Verdict) kind
//! (`verdict.rs`), each workload's finding and the run's trust (`finding.rs`), and
//! `ringside compare`'s verdicts, gate and remedies (`compare.rs`). The matches
//! over the analysis's kinds have no `_` arm, so a new kind does not compile until it is
//! worded here:
//!
//! ```compile_fail,E0004
//! // A sentence for verdicts that forgets a kind does not compile (E0004: non-exhaustive
//! // patterns), as `verdict::said` would not with a new kind it has no arm for.
//! use ringside::analysis::verdict::Verdict;
//! fn word(v: &Verdict) -> &'static str {
//!     match v {
//!         Verdict::Ranked { .. } | Verdict::Along { .. } | Verdict::Crossover { .. } => "",
//!         Verdict::Unclaimed { .. } | Verdict::AtEqualLoad { .. } => "",
//!         Verdict::FellBehind { .. } | Verdict::NoHeadroom { .. } => "",
//!     }
//! }
//! ```
//!
//! The same match with every kind compiles (the example above fails for no other reason):
//!
//! ```
//! use ringside::analysis::verdict::Verdict;
//! fn word(v: &Verdict) -> &'static str {
//!     match v {
//!         Verdict::Ranked { .. } | Verdict::Along { .. } | Verdict::Crossover { .. } => "",
//!         Verdict::Unclaimed { .. } | Verdict::AtEqualLoad { .. } => "",
//!         Verdict::FellBehind { .. } | Verdict::NoHeadroom { .. } | Verdict::Knee(_) => "",
//!     }
//! }
//! ```
//!
//! The functions below that take cells or a run analyse them first: they are the library's
//! entry points for one workload's words (tests, tools); the exporters word the run's one
//! [`Analysis`].

#![deny(clippy::wildcard_enum_match_arm)]

pub(crate) mod bottom;
pub(crate) mod compare;
pub(crate) mod finding;
pub(crate) mod verdict;

pub use finding::{Line, Suite};
pub use verdict::{Said, CAPACITY_PREFIX, PAST_CAPACITY_PREFIX};

use crate::analysis::Analysis;
use crate::results::{CaseResult, RunResults};

/// The verdicts of one workload of an analysed run, worded.
pub(crate) fn verdicts_of(w: &crate::analysis::Workload) -> Vec<Said> {
    w.verdicts
        .iter()
        .map(|v| verdict::said(v, &w.facts))
        .collect()
}

/// The verdicts of one workload's cells, worded (the facts of this build's row).
pub fn verdicts(workload: &str, cases: &[&CaseResult]) -> Vec<Said> {
    said_all(workload, crate::analysis::cells::facts(workload), cases)
}

/// The verdicts of one workload of a run, worded (the facts the file recorded for it, as a
/// report reads them).
pub fn verdicts_in(run: &RunResults, workload: &str) -> Vec<Said> {
    let cases: Vec<&CaseResult> = run
        .cases
        .iter()
        .filter(|c| c.workload == workload)
        .collect();
    said_all(
        workload,
        crate::analysis::cells::facts_in(run, workload),
        &cases,
    )
}

fn said_all(id: &str, f: crate::results::facts::Facts, cases: &[&CaseResult]) -> Vec<Said> {
    verdicts_of(&crate::analysis::Workload::of_cases(id, f, cases))
}

/// The finding of one workload's cells, worded.
pub fn finding(workload: &str, cases: &[&CaseResult]) -> Line {
    let w = crate::analysis::Workload::of_cases(
        workload,
        crate::analysis::cells::facts(workload),
        cases,
    );
    finding::line(workload, &w.facts, &w.finding)
}

/// Every workload's finding of a run, by suite, worded.
pub fn findings(run: &RunResults) -> Vec<Suite> {
    finding::suites(&Analysis::of(run))
}

/// "How far to trust this run", in one sentence.
pub fn trust(run: &RunResults) -> String {
    finding::trust_text(run, &Analysis::of(run))
}

/// The first `max` pairs of models at each point of a workload, on the figure its finding
/// ranks by: the figure's name, and per point (where, its pairs, how many pairs it has).
/// Empty where the workload is not ranked.
pub fn pairwise(
    workload: &str,
    cases: &[&CaseResult],
    max: usize,
) -> (
    String,
    Vec<(String, Vec<crate::analysis::vocabulary::Pair>, usize)>,
) {
    let f = crate::analysis::cells::facts(workload);
    match crate::analysis::finding::pairs_of(&f, cases, max) {
        Some(p) => (finding::pairs_basis(&f, &p.basis), p.points),
        None => (String::new(), Vec::new()),
    }
}
