//! What the run's cells support, decided once and typed: which cells form a point, what a
//! workload is ranked by (its basis), each point's ranking, each workload's verdicts and
//! finding, and how far to trust the run. [`Analysis::of`] computes it once per run; the
//! runner reads the rankings while measuring (a point's undecided claims decide whether it
//! adds a round) and the exporters word and draw what it decides (`export::words`); what it
//! holds is decided nowhere else. It also holds each ladder point's steps (`ladder`) and each
//! point's `--explain` caption: the breakdown difference it names (`explain`). Beside it: the
//! comparison of runs (`compare`).
//!
//! It sits between the numbers (`stats`: summaries, rank tests, claims) and their readers
//! (`runner`, `export`), and uses neither of those (`tests/suite/module_graph.rs`).

pub mod basis;
pub mod bottom;
pub(crate) mod cells;
pub(crate) mod compare;
pub mod explain;
pub(crate) mod finding;
pub(crate) mod ladder;
pub mod verdict;

/// The claims' vocabulary, as the readers of an analysis word it: the rankings, confidences,
/// standings and knees the analysis holds, and the margins they were judged by. `export`
/// reads claims through here, never from `stats` (`tests/suite/module_graph.rs`).
pub(crate) mod vocabulary {
    pub(crate) use crate::results::rates::KEEP_UP;
    pub(crate) use crate::stats::claims::{p_text, Outcome, MARGIN, TAIL_MIN};
    pub(crate) use crate::stats::equal_load::{Capacity, Evidence, Knee, CAPACITY_P99_NS};
    pub(crate) use crate::stats::findings::{
        Confidence, Finding, Other, Pair, Ranking, Standing, Trust,
    };
}

pub use basis::past_capacity_cells;
pub(crate) use basis::{answer, rank_point};
pub(crate) use basis::{Basis, NotRanked, On};

use crate::results::facts::Facts;
use crate::results::{Answer, RunResults};
use crate::stats::findings::Trust;
use finding::{Pairs, Ranks, WorkloadFinding};
use verdict::Verdict;

/// Pairs of models kept per point for the reports' pair tables (the first, nearest ones).
pub(crate) const PAIR_ROWS: usize = 200;

/// One run's analysis: every workload's verdicts, finding, ladder steps and `--explain`
/// captions, in run order, and the run's trust and answer rate.
#[derive(Clone, Debug)]
pub struct Analysis {
    pub(crate) workloads: Vec<Workload>,
    pub(crate) trust: Trust,
    pub(crate) answer: Answer,
    /// The bottom line every report opens with (`bottom`).
    pub(crate) bottom: bottom::BottomLine,
}

/// One workload's analysis.
#[derive(Clone, Debug)]
pub(crate) struct Workload {
    pub(crate) id: String,
    /// What its figures mean: the file's record of them ([`cells::facts_in`]).
    pub(crate) facts: Facts,
    /// Its suite (`micro`, `echo`, ...): the id's first part.
    pub(crate) suite: String,
    pub(crate) verdicts: Vec<Verdict>,
    pub(crate) finding: WorkloadFinding,
    /// The first [`PAIR_ROWS`] pairs of models at each point (`None`: not ranked).
    pub(crate) pairs: Option<Pairs>,
    /// A ladder's points with their steps, in run order (empty: not a ladder).
    pub(crate) ladder: Vec<ladder::Point>,
    /// The points with `--explain` breakdowns, in run order, each with its caption.
    pub(crate) explained: Vec<explain::Explained>,
}

impl Workload {
    /// The analysis of workload `id`'s cells (`cases`, run order) alone, ranked here (as
    /// [`Analysis::of`] analyses each workload of a run).
    pub(crate) fn of_cases(id: &str, facts: Facts, cases: &[&crate::results::CaseResult]) -> Self {
        let ranked = basis::Ranked::of(&facts, cases);
        Workload::of(id, facts, cases, &ranked, &[])
    }

    /// The analysis of workload `id`'s cells (`cases`, run order), whose facts are `facts`
    /// and whose basis and rankings are `ranked`.
    pub(crate) fn of(
        id: &str,
        facts: Facts,
        cases: &[&crate::results::CaseResult],
        ranked: &Result<basis::Ranked<'_>, NotRanked>,
        explain_models: &[String],
    ) -> Workload {
        let r = ranked.as_ref().ok();
        Workload {
            id: id.to_string(),
            suite: id.split('.').next().unwrap_or(id).to_string(),
            verdicts: verdict::for_cases(&facts, cases, r),
            finding: WorkloadFinding::of(&facts, cases, ranked),
            pairs: finding::pairs(ranked, PAIR_ROWS),
            // Whether it is a ladder: this build's row, as the reports always asked.
            ladder: if cells::facts(id).ladder {
                ladder::of_cases(cases)
            } else {
                Vec::new()
            },
            explained: explain::of_cases(&facts, cases, r, explain_models),
            facts,
        }
    }

    /// The models decided behind on the workload's ranking, and the figure they were
    /// decided on (the basis: server CPU per op at equal load, a micro loop's own figure):
    /// every other model led a ranked point or was never decided behind a point's leader
    /// (the finding's standings). A chart of that figure draws those models faded; a chart
    /// of any other figure draws every model in full (nothing was decided on it). `None`
    /// where nothing was ranked.
    pub(crate) fn highlighted(&self) -> Option<Highlighted> {
        let Ranks::Ranked { basis, finding, .. } = &self.finding.ranks else {
            return None;
        };
        Some(Highlighted {
            metric: basis.metric,
            full: finding
                .standings
                .iter()
                .filter(|s| s.led > 0 || s.behind == 0)
                .map(|s| s.label.clone())
                .collect(),
        })
    }
}

/// A ranked workload's standings as its charts read them ([`Workload::highlighted`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Highlighted {
    /// The figure the ranking decided on.
    pub(crate) metric: crate::results::facts::Metric,
    /// The models not decided behind on it (each led a point or was never behind).
    pub(crate) full: Vec<String>,
}

impl Highlighted {
    /// Whether `label` was decided behind on `metric` (only the ranking's own figure).
    pub(crate) fn behind_on(&self, label: &str, metric: crate::results::facts::Metric) -> bool {
        metric == self.metric && !self.full.iter().any(|l| l == label)
    }
}

impl Analysis {
    /// Analyses a run: every workload in run order. Each workload's basis and points are
    /// chosen and ranked once (`basis::Ranked`); its verdicts, finding, pairs, captions and
    /// the run's answer read those rankings.
    pub fn of(run: &RunResults) -> Analysis {
        let groups = cells::by_workload(run);
        let mut equal_load = Vec::new();
        let workloads: Vec<Workload> = groups
            .iter()
            .map(|(w, cases)| {
                let facts = cells::facts_in(run, w);
                let ranked = basis::Ranked::of(&facts, cases);
                equal_load.extend(basis::equal_load_rankings(&ranked).cloned());
                Workload::of(w, facts, cases, &ranked, &run.explain_models)
            })
            .collect();
        let trust = crate::stats::findings::trust(run);
        let answer = answer(equal_load.iter());
        let findings: Vec<(&str, &WorkloadFinding)> = workloads
            .iter()
            .map(|w| (w.id.as_str(), &w.finding))
            .collect();
        let bottom = bottom::of(run, &findings, &trust, &answer);
        Analysis {
            workloads,
            trust,
            answer,
            bottom,
        }
    }

    /// The analysis of workload `id`, if the run has it.
    pub(crate) fn workload(&self, id: &str) -> Option<&Workload> {
        self.workloads.iter().find(|w| w.id == id)
    }
}
