//! Comparing two runs: per common cell, the change in median latency, ops/s (closed loop
//! only: an open-loop cell's rate is what it was offered), server CPU per op and p99 (where
//! every repetition had enough samples beyond it), each shown with its raw Mann-Whitney p
//! and bootstrap interval, and the differences between the two environments.
//!
//! **The test that decides** ([`Test`]) is on the cell's per-round values relative to its
//! point's other models in the same rounds (the figure itself for a model alone at its
//! point), so drift every model of a round shared cancels. Its p is the larger of
//! Mann-Whitney over the rounds of the two runs and a normal test whose variance adds the
//! run-to-run noise the rounds of one run cannot show: the larger of the workload's
//! ([`RunNoise`], estimated from every test of its figure, `stability::run_noise`) and the
//! model's own ([`ModelNoise`], the scatter of its changes over its points).
//!
//! **No crying wolf.** Every decisive test is one family: the false discovery rate over all
//! of them is kept at [`ALPHA`] (Benjamini-Hochberg), and the number of tests is printed. A
//! change is a regression only when it is significant after that, beyond the threshold both
//! as measured and relative to the point's others (a model alone: beyond the threshold plus
//! the drift the calibration probes measured between the runs), and not within a jump
//! between two levels the model showed within a run of the workload
//! (`stability::unstable`: "unstable here"). A workload whose typical cell moved between the
//! runs by more than the threshold cannot be judged ([`Comparison::noisy`]). Cells disturbed
//! in either run are not compared; equal-load cells whose offered rates differ by more than
//! [`RATE_TOLERANCE`] are not compared either (each run derives its rate from its own
//! capacity point); a closed-loop cell whose load generator had no headroom in either run is
//! compared on its CPU per op only.
//!
//! A test can only find what its sample sizes allow: the smallest two-sided p Mann-Whitney
//! can give for n1 and n2 values is 2 / C(n1 + n2, n1) (0.1 for 3 against 3), so below 4
//! repetitions a side no change is ever significant at alpha 0.05. Such a change beyond the
//! threshold is reported as untested, never as "no significant change".
//!
//! **A gate that passes only what it could see** (`power`, `gate`): each figure's test has a
//! minimum detectable effect, the smallest change it would call alone among the family's
//! tests at the noise measured; a cell whose tests could not see the threshold (or that was
//! not compared) is untested, and [`Comparison::gate`] says PASS only where none is:
//! REGRESSION (exit 1), INCONCLUSIVE (exit 3) or PASS (0).

use crate::results::schema::CaseFigures;
use crate::results::{CaseResult, RunResults, Status, Warning};
use crate::stats::median;
use crate::stats::rank::normal_sf;
pub(crate) use crate::stats::rank::{mann_whitney, min_p, reps_needed, testable};
use std::collections::HashMap;

/// Significance level of every test here, and the false discovery rate `compare` keeps.
pub(crate) const ALPHA: f64 = 0.05;
/// The change `compare` calls a regression unless `--threshold` says otherwise, percent
/// (also `report A B C`'s).
pub const DEFAULT_THRESHOLD_PCT: f64 = 5.0;
/// Equal-load cells are compared only when their offered rates are within 10%.
pub(crate) const RATE_TOLERANCE: f64 = 0.10;
/// A probe whose median moved by more than this (and significantly) means the machine
/// changed between the runs.
pub(crate) const PROBE_DRIFT: f64 = 0.10;

/// How a change was judged significant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    /// Mann-Whitney U on per-run values.
    MannWhitney,
    /// Files without per-run values: the per-run min..max ranges do not overlap.
    Spread,
}

/// One figure of one cell in both runs.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Change {
    pub(crate) base: f64,
    pub(crate) new: f64,
    /// (new - base) / base, percent.
    pub(crate) pct: f64,
    /// Two-sided p-value, when per-run values allow a test.
    pub(crate) p: Option<f64>,
    pub(crate) significant: bool,
    pub(crate) method: Method,
    /// (base, new) repetitions when they are too few for the test to ever reach [`ALPHA`]:
    /// then `significant` is false whatever the change.
    pub(crate) too_few: Option<(usize, usize)>,
    /// 95% bootstrap interval of `pct` over the repetitions (`stats::bootstrap`), when each
    /// side has at least two.
    pub(crate) ci_pct: Option<(f64, f64)>,
    /// Repetitions (base, new) behind the test.
    pub(crate) sizes: (usize, usize),
    /// Every repetition of one side beyond every one of the other (complete separation: the
    /// strongest evidence these repetitions can give).
    pub(crate) apart: bool,
    /// The p after the false-discovery-rate correction over every test of the comparison
    /// (`significant` is judged on it).
    pub(crate) p_adj: Option<f64>,
}

fn change(
    base: f64,
    new: f64,
    base_runs: &[f64],
    new_runs: &[f64],
    ranges: ((f64, f64), (f64, f64)),
) -> Change {
    let pct = if base == 0.0 {
        0.0
    } else {
        (new - base) / base * 100.0
    };
    let sizes = (base_runs.len(), new_runs.len());
    let ci_pct = crate::stats::bootstrap::change_pct_ci(base_runs, new_runs);
    let range = |v: &[f64]| {
        v.iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                (lo.min(*x), hi.max(*x))
            })
    };
    let ((b_lo, b_hi), (n_lo, n_hi)) = (range(base_runs), range(new_runs));
    let apart = sizes.0 >= 2 && sizes.1 >= 2 && (b_hi < n_lo || n_hi < b_lo);
    match mann_whitney(base_runs, new_runs) {
        Some(p) => Change {
            base,
            new,
            pct,
            p: Some(p),
            significant: p < ALPHA,
            method: Method::MannWhitney,
            too_few: (!testable(sizes.0, sizes.1, ALPHA)).then_some(sizes),
            ci_pct,
            sizes,
            apart,
            p_adj: Some(p),
        },
        None => {
            let ((b0, b1), (n0, n1)) = ranges;
            // One repetition on a side (its runs recorded), or none recorded (a file written
            // before they were, or stripped of them): nothing to test with, and a range of
            // one value is "apart" from any other. Untested, never "no change".
            let too_few = (sizes.0 <= 1 || sizes.1 <= 1).then_some(sizes);
            Change {
                base,
                new,
                pct,
                p: None,
                significant: too_few.is_none() && (b1 < n0 || n1 < b0),
                method: Method::Spread,
                too_few,
                ci_pct,
                sizes,
                apart,
                p_adj: None,
            }
        }
    }
}

/// Which figure a [`Change`] is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Figure {
    P50,
    OpsPerSec,
    CpuPerOp,
    P99,
}

impl Figure {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Figure::P50 => "p50",
            Figure::OpsPerSec => "ops/s",
            Figure::CpuPerOp => "CPU/op",
            Figure::P99 => "p99",
        }
    }

    fn higher_is_better(self) -> bool {
        self == Figure::OpsPerSec
    }

    /// Whether a change of `pct` percent is a change for the worse.
    pub(crate) fn worse(self, pct: f64) -> bool {
        if self.higher_is_better() {
            pct < 0.0
        } else {
            pct > 0.0
        }
    }
}

/// One figure of a cell in both runs, and the same figure relative to the point's other
/// models in the same rounds (where there are any).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FigureChange {
    pub(crate) figure: Figure,
    /// The figure itself in both runs: shown, with its raw Mann-Whitney p.
    pub(crate) change: Change,
    /// (what it is relative to: the one other model, or the point's other models; the
    /// change of this figure over their geometric mean, per round).
    pub(crate) relative: Option<(RelativeTo, Change)>,
    /// The test that decides (see [`Test`]).
    pub(crate) test: Test,
    /// What the test could see (its minimum detectable effect); `None` until judged.
    pub(crate) power: Option<FigurePower>,
}

/// What a figure's relative change is relative to.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RelativeTo {
    /// The one other model at its point (its label).
    Model(String),
    /// The point's other models, this many.
    Others(usize),
}

/// The test that decides whether a figure changed: on the values relative to the point's
/// other models in the same rounds where it has any (drift the machine gave every model
/// cancels), else on the figure itself. Its p is the larger of two: Mann-Whitney over the
/// rounds of each run, and a normal test whose variance adds the run-to-run noise estimated
/// from every cell of the workload ([`crate::stats::stability::run_noise`]), which the rounds of
/// one run cannot show. Both must reject (an intersection-union test, so the larger p is a
/// valid p); every test of a comparison is then one Benjamini-Hochberg family.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Test {
    /// Relative to the point's other models (else the figure itself).
    pub(crate) relative: bool,
    /// The change's log ratio (NEW over BASE, medians of the per-round values; see
    /// [`Test::pct`]) and its variance from the rounds of the two runs.
    pub(crate) log_change: f64,
    pub(crate) within_var: f64,
    /// The run-to-run noise (log sd per run) it was judged with: the larger of its
    /// workload's ([`RunNoise`]) and its model's own ([`ModelNoise`]); `None` where too few
    /// cells allowed an estimate (judged with the rounds alone).
    pub(crate) run_noise: Option<f64>,
    /// Mann-Whitney over the per-round values (`None` with fewer than two a side).
    pub(crate) p_rounds: Option<f64>,
    /// The normal test with the run-to-run noise.
    pub(crate) p_runs: Option<f64>,
    /// max(p_rounds, p_runs), and after the family's correction.
    pub(crate) p: Option<f64>,
    pub(crate) p_adj: Option<f64>,
    pub(crate) significant: bool,
    /// Every per-round value of one run beyond every one of the other.
    pub(crate) apart: bool,
    /// Per-round values (base, new) behind it.
    pub(crate) sizes: (usize, usize),
}

/// One cell present and measured in both runs.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CellChange {
    /// "micro.pipe uring msg_bytes=64".
    pub(crate) cell: String,
    pub(crate) workload: String,
    /// The model's label ("uring", "ext:nginx").
    pub(crate) label: String,
    /// Median of per-run median latencies, ns.
    pub(crate) p50: Change,
    /// Median of per-run ops/s.
    pub(crate) ops: Change,
    /// Every figure tested (p50, ops/s of closed-loop cells, CPU per op, p99 with a tail).
    pub(crate) figures: Vec<FigureChange>,
    /// Worse, significantly after the correction, beyond the threshold, and not the
    /// machine's drift.
    pub(crate) regression: bool,
    /// Better, the same way.
    pub(crate) improvement: bool,
    /// A change beyond the threshold (either way) that the repetitions are too few to test.
    pub(crate) untested: Option<Untested>,
    /// A significant change beyond the threshold that the reference model or the probes
    /// explain: the machine's drift, said as such.
    pub(crate) drift: Option<Drift>,
    /// A significant change beyond the threshold but within the jump between two levels the
    /// model showed within a run of this workload (`stats::stability::unstable`): unstable
    /// here, not called.
    pub(crate) unstable: Option<Jumped>,
    /// Its ops cross to a SQPOLL poller on another CPU (a `sqpoll_cpu` in either run) where
    /// some of its point's other models' stay on one: the relative test does not cancel the
    /// machine's cross-CPU state for it (see [`ProbeDrift::wake_pct`]).
    pub(crate) poller: bool,
    /// Why it could not see a change of the threshold (empty: it could, see
    /// [`CellChange::tested`]); set when judged.
    pub(crate) blind: Vec<Blind>,
    /// Its point's other models measured in both runs but not compared (disturbed): where it
    /// has no compared others, it is judged alone without being alone at its point.
    pub(crate) peers_not_compared: usize,
}

/// Repetitions `(base, new)` too few for the test to ever reach [`ALPHA`] (a side with
/// none: no per-repetition values recorded), and the fewest a side with which it could.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TooFew {
    pub(crate) sizes: (usize, usize),
    pub(crate) need: usize,
}

impl TooFew {
    pub(crate) fn of(sizes: (usize, usize)) -> TooFew {
        TooFew {
            sizes,
            need: reps_needed(ALPHA),
        }
    }
}

/// Why a change beyond the threshold (either way) was not tested.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Untested {
    /// Its repetitions are too few for the test to ever reach [`ALPHA`].
    TooFew(TooFew),
    /// Every repetition of one run apart from the other's, beyond the threshold as measured
    /// and relative to the point's others, yet the smallest p those repetitions can give
    /// (`floor`) is above what a lone discovery among `tests` tests needs (`lone`).
    Apart {
        figure: Figure,
        pct: f64,
        floor: f64,
        sizes: (usize, usize),
        tests: usize,
        lone: f64,
    },
    /// A significant change `pct` beyond the threshold of a cell judged alone because its
    /// point's `peers` other models, measured in both runs, were not compared (disturbed):
    /// nothing of the same rounds tells the machine's drift (a slower disk, a busier host)
    /// from its change, and the probes measure neither.
    Unpaired {
        figure: Figure,
        pct: f64,
        peers: usize,
    },
}

/// Why a significant change beyond the threshold is the machine's, not the code's.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Drift {
    /// Its ops cross to a SQPOLL poller on another CPU (its point's other models' do not)
    /// and the wake-up probe moved `wake_pct` the same way as its change `pct`.
    Poller {
        figure: Figure,
        pct: f64,
        wake_pct: f64,
    },
    /// It moved `pct` as measured but `relative_pct` relative to its point's others (`to`;
    /// `None`: no relative change recorded) in the same rounds.
    Relative {
        figure: Figure,
        pct: f64,
        relative_pct: f64,
        to: Option<RelativeTo>,
    },
    /// A model alone at its point whose change `pct` is within the threshold plus the
    /// probes' drift (`drift_pct`).
    WithinProbes {
        figure: Figure,
        pct: f64,
        drift_pct: f64,
    },
}

/// A significant change beyond the threshold (`pct`) within the jump (`gap_pct`) between two
/// levels its model showed within one run (`which`: "BASE" or "NEW").
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Jumped {
    pub(crate) figure: Figure,
    pub(crate) pct: f64,
    pub(crate) gap_pct: f64,
    pub(crate) which: &'static str,
    pub(crate) unstable: crate::stats::stability::Unstable,
}

/// A cell's status where `compare` could not use its figures, with the reason recorded.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CellState {
    pub(crate) status: Status,
    pub(crate) reason: Option<String>,
}

impl CellState {
    fn of(c: &CaseResult) -> CellState {
        CellState {
            status: c.status,
            reason: c.reason.clone(),
        }
    }
}

/// Why a cell both runs have was not compared.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Skip {
    /// Not measured (with figures) in one run or both.
    Unmeasured { base: CellState, new: CellState },
    /// Disturbed (other programs took its CPUs) in BASE, NEW or both.
    Disturbed { base: bool, new: bool },
    /// An equal-load cell offered these rates, more than [`RATE_TOLERANCE`] apart.
    RatesDiffer { base: f64, new: f64 },
}

/// A cell both runs have that was not compared, and why.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct NotCompared {
    pub(crate) cell: String,
    pub(crate) why: Skip,
}

/// A cell measured in BASE that NEW did not measure, with NEW's status and reason.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Lost {
    pub(crate) cell: String,
    pub(crate) new: CellState,
}

/// Everything `ringside compare` reports.
#[derive(Clone, Debug, Default)]
pub(crate) struct Comparison {
    pub(crate) cells: Vec<CellChange>,
    pub(crate) only_base: Vec<String>,
    pub(crate) only_new: Vec<String>,
    /// Cells in both runs but not compared, and why.
    pub(crate) not_compared: Vec<NotCompared>,
    /// Cells measured in BASE that `failed` in NEW, with NEW's reason (part of `not_compared`).
    pub(crate) became_failed: Vec<Lost>,
    /// Cells measured in BASE that NEW did not measure for another reason (unavailable, not
    /// applicable): no longer tested (part of `not_compared`).
    pub(crate) no_longer_measured: Vec<Lost>,
    /// Whether each file is a finished run (`"finished": true`).
    pub(crate) base_finished: bool,
    pub(crate) new_finished: bool,
    /// (what, base value, new value) for every environment fact that differs.
    pub(crate) env_diff: Vec<(String, String, String)>,
    /// Tests made (every figure of every cell), all corrected as one family.
    pub(crate) tests: usize,
    /// Cells not compared because a run was disturbed there (part of `not_compared`).
    pub(crate) disturbed: Vec<NotCompared>,
    /// Equal-load cells not compared because their offered rates differ by more than
    /// [`RATE_TOLERANCE`] (part of `not_compared`).
    pub(crate) rates_differ: Vec<NotCompared>,
    /// The tests of the correction family the comparison was judged in: its own, or every
    /// pair's of `compare A B C` (a lone change among them needs `ALPHA / family`).
    pub(crate) family: usize,
    /// The calibration probes of both runs and what they say.
    pub(crate) probes: Option<ProbeDrift>,
    /// The run-to-run noise of each workload's figures, estimated from the cells.
    pub(crate) noise: Vec<RunNoise>,
    /// Each model's own noise per workload and figure (see [`ModelNoise`]).
    pub(crate) model_noise: Vec<ModelNoise>,
    /// Models that jumped between two levels within a run ("BASE" or "NEW"), per workload.
    pub(crate) unstable: Vec<(&'static str, crate::stats::stability::Unstable)>,
}

/// The calibration probes' medians in each run (`syscall_ns`, `wake_ns`), and the drift
/// between them.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ProbeDrift {
    /// (probe, base median, new median, change %, Mann-Whitney p over the rounds).
    pub(crate) probes: Vec<(&'static str, f64, f64, f64, Option<f64>)>,
    /// The largest significant change of a probe beyond [`PROBE_DRIFT`], percent (0: the
    /// machine did not change between the runs).
    pub(crate) drift_pct: f64,
    /// A probe whose rounds within one run spread over more than 30% (max / min of the
    /// rounds' medians): the machine changed state within the run.
    pub(crate) within: Vec<String>,
    /// The wake-up probe's change, percent, where significant and beyond [`PROBE_DRIFT`]:
    /// the machine's cross-CPU state changed between the runs. A cell whose ops cross to a
    /// poller on another CPU while its point-mates' do not moves with that state, in the
    /// probe's direction but not by its amount (an A/A pair on the 2-vCPU VM: wake-up +34%,
    /// uring-sqpoll's micro.pipe +65% against its point's others), so such a change is the
    /// machine's, not the code's.
    pub(crate) wake_pct: Option<f64>,
}

mod env;
mod figures;
mod gate;
mod judge;
mod many;
mod noise;
mod power;
#[cfg(test)]
mod tests;
mod verdict;

pub(crate) use crate::stats::stability::NOISE_MIN_CELLS;
use env::env_diff;
pub(crate) use env::{flatten, probe_drift};
use figures::{figure_runs, relative_to, test_of, Peer};
pub(crate) use gate::{
    Blocked, Gate, GateFailure, NoisyGroup, Outcome, Remedy, ServerCell, Unseen,
};
use judge::correct_and_judge;
pub(crate) use many::{compare_many, shares_cells, Claim, Matrix, MatrixRow, Missing, MAX_RUNS};
use noise::add_run_noise;
pub(crate) use noise::{ModelNoise, RunNoise};
pub(crate) use power::{Blind, FigurePower, More, Power};
pub(crate) use verdict::CellVerdict;

/// Compares `new` against `base`; a cell regresses when one of its figures gets worse by more
/// than `threshold_pct` percent, significantly after the correction over every test, and not
/// as the machine did (see the module's doc).
pub(crate) fn compare(base: &RunResults, new: &RunResults, threshold_pct: f64) -> Comparison {
    let mut cmp = prepare(base, new);
    let ps = cmp.decisive_ps();
    let (_, adj) = crate::stats::claims::benjamini_hochberg(&ps, ALPHA);
    correct_and_judge(&mut cmp, base, new, threshold_pct, &adj, ps.len());
    cmp
}

/// [`compare`] before the correction: every cell's changes and their decisive tests, the
/// run-to-run noise, the cells one run lacks and the environment's differences; nothing
/// judged yet (`ringside compare A B C` corrects every pair's tests as one family).
pub(super) fn prepare(base: &RunResults, new: &RunResults) -> Comparison {
    let mut cmp = Comparison {
        base_finished: base.finished,
        new_finished: new.finished,
        probes: probe_drift(base, new),
        ..Comparison::default()
    };
    // First cell of each key in NEW (a key seen twice keeps its first cell, as before).
    let mut in_new: HashMap<String, &CaseResult> = HashMap::new();
    for n in &new.cases {
        in_new.entry(n.key()).or_insert(n);
    }
    let in_base: std::collections::HashSet<String> =
        base.cases.iter().map(CaseResult::key).collect();
    let (peers, measured) = peers_of(base, &in_new);
    for b in &base.cases {
        compare_cell(&mut cmp, b, &in_new, (&peers, &measured));
    }
    add_run_noise(&mut cmp);
    for n in &new.cases {
        let key = n.key();
        if !in_base.contains(&key) {
            cmp.only_new.push(key);
        }
    }
    cmp.env_diff = env_diff(base, new);
    cmp
}

/// Each point's cells measured, undisturbed, in both runs, by point: every cell is judged
/// against the others of its point in the same rounds; and how many cells of each point
/// were measured in both runs, disturbed or not.
fn peers_of<'a>(
    base: &'a RunResults,
    in_new: &HashMap<String, &'a CaseResult>,
) -> (HashMap<String, Vec<Peer<'a>>>, HashMap<String, usize>) {
    let measured = |c: &CaseResult| c.status == Status::Measured && c.figures.is_some();
    let mut peers: HashMap<String, Vec<Peer>> = HashMap::new();
    let mut both: HashMap<String, usize> = HashMap::new();
    for b in base.cases.iter().filter(|c| measured(c)) {
        if let Some(&n) = in_new.get(&b.key()).filter(|n| measured(n)) {
            *both.entry(b.point_key()).or_default() += 1;
            let disturbed = |c: &CaseResult| c.warnings.contains(&Warning::Disturbed);
            if let (false, false, Some(fb), Some(fnew)) =
                (disturbed(b), disturbed(n), &b.figures, &n.figures)
            {
                peers.entry(b.point_key()).or_default().push(Peer {
                    cell: b,
                    base: figure_runs(b, fb),
                    new: figure_runs(n, fnew),
                });
            }
        }
    }
    (peers, both)
}

/// Compares BASE's cell `b` with NEW's cell of its key: a [`CellChange`] with each figure's
/// change and test (not yet corrected), or the line that says why it is not compared.
fn compare_cell(
    cmp: &mut Comparison,
    b: &CaseResult,
    in_new: &HashMap<String, &CaseResult>,
    (peers, measured): (&HashMap<String, Vec<Peer>>, &HashMap<String, usize>),
) {
    let key = b.key();
    let Some(&n) = in_new.get(&key) else {
        cmp.only_base.push(key);
        return;
    };
    let figs = (
        b.figures.as_ref().filter(|_| b.status == Status::Measured),
        n.figures.as_ref().filter(|_| n.status == Status::Measured),
    );
    let (Some(fb), Some(fnew)) = figs else {
        if figs.0.is_some() {
            let lost = Lost {
                cell: key.clone(),
                new: CellState::of(n),
            };
            if n.status == Status::Failed {
                cmp.became_failed.push(lost);
            } else {
                cmp.no_longer_measured.push(lost);
            }
        }
        cmp.not_compared.push(NotCompared {
            cell: key,
            why: Skip::Unmeasured {
                base: CellState::of(b),
                new: CellState::of(n),
            },
        });
        return;
    };
    let disturbed = |c: &CaseResult| c.warnings.contains(&Warning::Disturbed);
    if disturbed(b) || disturbed(n) {
        let skip = NotCompared {
            cell: key,
            why: Skip::Disturbed {
                base: disturbed(b),
                new: disturbed(n),
            },
        };
        cmp.disturbed.push(skip.clone());
        cmp.not_compared.push(skip);
        return;
    }
    let rates = (b.offered_rate(), n.offered_rate());
    if let (Some(rb), Some(rn)) = rates {
        if rb > 0.0 && ((rn - rb) / rb).abs() > RATE_TOLERANCE {
            let skip = NotCompared {
                cell: key,
                why: Skip::RatesDiffer { base: rb, new: rn },
            };
            cmp.rates_differ.push(skip.clone());
            cmp.not_compared.push(skip);
            return;
        }
    }
    let others: Vec<&Peer> = peers
        .get(&b.point_key())
        .map(|v| v.iter().filter(|p| !std::ptr::eq(p.cell, b)).collect())
        .unwrap_or_default();
    let peers_not_compared = measured
        .get(&b.point_key())
        .map_or(0, |n| n.saturating_sub(1 + others.len()));
    let poller = [b, n].iter().any(|c| c.sqpoll_cpu.is_some())
        && others.iter().any(|p| p.cell.sqpoll_cpu.is_none());
    // A closed-loop cell whose load generator had no headroom in either run: its
    // throughput and latency are the client's limit too; only its CPU per op is the
    // server's.
    let headroom = [b, n].iter().all(|c| {
        c.warnings
            .iter()
            .all(|w| !matches!(w, Warning::ClientBound | Warning::BothSaturated))
    });
    let figures = figure_changes(b, n, (fb, fnew), &others, headroom);
    let pick = |f: Figure| {
        figures
            .iter()
            .find(|x| x.figure == f)
            .map(|x| x.change.clone())
    };
    let p50 = pick(Figure::P50).unwrap_or_else(|| {
        let v = fb.run_p50_ns.median;
        let x = fnew.run_p50_ns.median;
        change(v, x, &[], &[], ((v, v), (x, x)))
    });
    let ops = pick(Figure::OpsPerSec).unwrap_or_else(|| {
        let v = fb.ops_per_sec.median;
        let x = fnew.ops_per_sec.median;
        change(v, x, &[], &[], ((v, v), (x, x)))
    });
    cmp.cells.push(CellChange {
        cell: key,
        workload: b.workload.clone(),
        label: b.label(),
        p50,
        ops,
        figures,
        regression: false,
        improvement: false,
        untested: None,
        drift: None,
        unstable: None,
        poller,
        blind: Vec::new(),
        peers_not_compared,
    });
}

/// Each figure's change from BASE's cell `b` to NEW's `n` and its test: relative to the
/// point's other models where it has them (`others`), else on the cell's own rounds. Without
/// headroom, only the CPU per op.
fn figure_changes(
    b: &CaseResult,
    n: &CaseResult,
    (fb, fnew): (&CaseFigures, &CaseFigures),
    others: &[&Peer],
    headroom: bool,
) -> Vec<FigureChange> {
    let runs_b = figure_runs(b, fb);
    let runs_n = figure_runs(n, fnew);
    let mut figures = Vec::new();
    for (fig, vb, rb, range_b) in &runs_b {
        if !headroom && *fig != Figure::CpuPerOp {
            continue;
        }
        let Some((_, vn, rn, range_n)) = runs_n.iter().find(|x| x.0 == *fig) else {
            continue;
        };
        let change = change(*vb, *vn, rb, rn, (*range_b, *range_n));
        let (relative, test) = match relative_to(others, *fig, rb, rn) {
            Some((name, c, xb, xn)) => (Some((name, c)), test_of(true, &xb, &xn)),
            None => (None, test_of(false, rb, rn)),
        };
        figures.push(FigureChange {
            figure: *fig,
            change,
            relative,
            test,
            power: None,
        });
    }
    figures
}
