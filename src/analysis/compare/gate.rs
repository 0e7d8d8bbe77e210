//! The gate `ringside compare` exits by: **PASS** (0) only where every matched cell was
//! tested with power to see the threshold (each figure's minimum detectable effect at most
//! the threshold, see `power`) and none regressed; **REGRESSION** (1) where a cell regressed
//! significantly beyond the threshold or a measured cell failed, whatever else could not be
//! tested; **INCONCLUSIVE** ([`EXIT_INCONCLUSIVE`]) otherwise: the cells it could not test
//! and why, and what would make a change of the threshold visible. `--allow-untested`
//! accepts the cells that could not be tested (PASS where nothing regressed, as before),
//! never an unfinished NEW or a comparison of nothing.

use super::power::{Blind, Power};
use super::*;

/// `ringside compare`'s exit status when it could not test what it was asked to.
pub const EXIT_INCONCLUSIVE: i32 = 3;

/// The gate's verdict; the worse is the greater.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Outcome {
    /// Nothing regressed and every matched cell was tested with power to see the threshold
    /// (or `--allow-untested` accepted those that were not).
    Pass,
    /// Nothing regressed, but something could not be tested.
    Inconclusive,
    /// A significant regression beyond the threshold, or a measured cell that failed.
    Regression,
}

impl Outcome {
    /// `ringside compare`'s exit status: 0, [`EXIT_INCONCLUSIVE`], 1.
    pub(crate) fn exit_code(self) -> i32 {
        match self {
            Outcome::Pass => 0,
            Outcome::Inconclusive => EXIT_INCONCLUSIVE,
            Outcome::Regression => 1,
        }
    }
}

/// What makes a comparison a regression.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum GateFailure {
    /// These cells regressed beyond the threshold.
    Regressions(Vec<String>),
    /// These cells, measured in BASE, failed in NEW.
    BecameFailed(Vec<Lost>),
}

/// What keeps a comparison from passing even with `--allow-untested`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Blocked {
    /// NEW is an unfinished run: cells it never reached are not compared.
    Unfinished,
    /// The two files have no measured cell in common.
    NothingCompared,
}

/// A cell of either file not tested with power to see the threshold.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Unseen {
    /// Compared, but a change beyond the threshold was too few repetitions to test
    /// (`untested`), or else its tests could not see the threshold (`blind`).
    Compared {
        cell: String,
        untested: Option<Untested>,
        blind: Vec<Blind>,
    },
    /// Not compared: disturbed, or offered rates apart.
    NotCompared(NotCompared),
    /// Measured in BASE, not in NEW.
    NoLongerMeasured(Lost),
    OnlyBase(String),
    OnlyNew(String),
}

/// A group of tests whose typical cell moved beyond the threshold between the runs
/// ([`Comparison::noisy`]): its run-to-run noise, percent a run, from so many tests.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct NoisyGroup {
    pub(crate) workload: String,
    pub(crate) figure: Figure,
    pub(crate) relative: bool,
    pub(crate) pct: f64,
    pub(crate) tests: usize,
}

/// What would make a change of the threshold visible where the gate could not see one.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Remedy {
    /// At the noise measured, `fewest` to `most` repetitions a side would let `cells` cells
    /// see it.
    MoreRepetitions {
        fewest: usize,
        most: usize,
        cells: usize,
    },
    /// No number of repetitions would for `cells` cells: the noise between two runs alone
    /// hides changes under `worst_pct` there.
    NoNumberOfRepetitions { cells: usize, worst_pct: f64 },
    /// At least `need` repetitions a side: fewer cannot confirm a change alone among `tests`.
    AtLeast { need: usize, tests: usize },
    /// More cells in both runs: the noise between runs is estimated from at least
    /// `min_tests` tests of a figure.
    MoreCells { min_tests: usize },
    /// A quieter machine (`disturbed` cells were disturbed).
    QuieterMachine { disturbed: usize },
    /// Both builds in one run, paired round by round: for this server cell the gate could
    /// not test, or for a server workload in general.
    BothBuilds(Option<ServerCell>),
}

/// A server cell (echo or http) the gate could not test: its workload, protocol and the
/// model's label.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ServerCell {
    pub(crate) workload: String,
    pub(crate) protocol: &'static str,
    pub(crate) label: String,
}

/// A comparison's gate: its verdict and everything it rests on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Gate {
    pub(crate) outcome: Outcome,
    pub(crate) threshold_pct: f64,
    /// Cells compared, and of them those tested with power to see the threshold (or found
    /// to regress).
    pub(crate) cells: usize,
    pub(crate) tested: usize,
    /// What makes it a regression.
    pub(crate) failures: Vec<GateFailure>,
    /// What keeps it from passing even with `--allow-untested`: an unfinished NEW, nothing
    /// compared.
    pub(crate) blocked: Vec<Blocked>,
    /// Each cell of either file not tested with power to see the threshold.
    pub(crate) untested: Vec<Unseen>,
    /// Groups of tests whose typical cell moved beyond the threshold (nothing there can be
    /// told from that).
    pub(crate) noisy: Vec<NoisyGroup>,
    /// What would make a change of the threshold visible.
    pub(crate) remedies: Vec<Remedy>,
    /// `--allow-untested` accepted `untested` and `noisy`.
    pub(crate) accepted: bool,
}

impl CellChange {
    /// Whether the cell was tested with power to see the threshold: it regressed, or no
    /// reason it could not see the threshold ([`Blind`], or a change beyond it too few
    /// repetitions could test).
    pub(crate) fn tested(&self) -> bool {
        self.regression || (self.blind.is_empty() && self.untested.is_none())
    }
}

impl Comparison {
    /// The gate at `threshold_pct` (see the module's doc).
    pub(crate) fn gate(&self, threshold_pct: f64, allow_untested: bool) -> Gate {
        let mut failures = Vec::new();
        let regs: Vec<String> = self.regressions().map(|c| c.cell.clone()).collect();
        if !regs.is_empty() {
            failures.push(GateFailure::Regressions(regs));
        }
        if !self.became_failed.is_empty() {
            failures.push(GateFailure::BecameFailed(self.became_failed.clone()));
        }
        let mut blocked = Vec::new();
        if !self.new_finished {
            blocked.push(Blocked::Unfinished);
        }
        if self.cells.is_empty() {
            blocked.push(Blocked::NothingCompared);
        }
        let untested = self.unseen();
        let noisy = self.noisy_groups(threshold_pct);
        let gaps = !untested.is_empty() || !noisy.is_empty();
        let outcome = if !failures.is_empty() {
            Outcome::Regression
        } else if !blocked.is_empty() || (gaps && !allow_untested) {
            Outcome::Inconclusive
        } else {
            Outcome::Pass
        };
        Gate {
            outcome,
            threshold_pct,
            cells: self.cells.len(),
            tested: self.cells.iter().filter(|c| c.tested()).count(),
            failures,
            blocked,
            remedies: if gaps {
                self.remedies(threshold_pct)
            } else {
                Vec::new()
            },
            untested,
            noisy,
            accepted: gaps && allow_untested,
        }
    }

    /// Every cell of either file not tested with power to see the threshold: compared ones
    /// first, then those not compared (disturbed, offered rates apart, no longer measured,
    /// in one file only).
    fn unseen(&self) -> Vec<Unseen> {
        let mut out: Vec<Unseen> = self
            .cells
            .iter()
            .filter(|c| !c.tested())
            .map(|c| Unseen::Compared {
                cell: c.cell.clone(),
                untested: c.untested.clone(),
                blind: c.blind.clone(),
            })
            .collect();
        out.extend(self.disturbed.iter().cloned().map(Unseen::NotCompared));
        out.extend(self.rates_differ.iter().cloned().map(Unseen::NotCompared));
        out.extend(
            self.no_longer_measured
                .iter()
                .cloned()
                .map(Unseen::NoLongerMeasured),
        );
        out.extend(self.only_base.iter().cloned().map(Unseen::OnlyBase));
        out.extend(self.only_new.iter().cloned().map(Unseen::OnlyNew));
        out
    }

    /// Each group whose typical cell moved beyond the threshold ([`Comparison::noisy`]).
    fn noisy_groups(&self, threshold_pct: f64) -> Vec<NoisyGroup> {
        self.noisy(threshold_pct)
            .map(|n| NoisyGroup {
                workload: n.workload.clone(),
                figure: n.figure,
                relative: n.relative,
                pct: n.pct().map_or(0.0, |p| p.0),
                tests: n.tests,
            })
            .collect()
    }

    /// What would make a change of `threshold_pct` visible where the gate could not see one:
    /// more repetitions (how many, at the noise measured), more cells, a quieter machine, and
    /// both builds in one run.
    fn remedies(&self, threshold_pct: f64) -> Vec<Remedy> {
        let blind: Vec<(&CellChange, &Blind)> = self
            .cells
            .iter()
            .filter(|c| !c.tested())
            .flat_map(|c| c.blind.iter().map(move |b| (c, b)))
            .collect();
        let powers = || {
            blind.iter().filter_map(|(c, b)| match b {
                Blind::Figure(_, p) => Some((*c, p)),
                _ => None,
            })
        };
        let mut out = Vec::new();
        let more: Vec<(&CellChange, usize)> = powers()
            .filter_map(|(c, p)| p.rounds_needed.map(|n| (c, n)))
            .collect();
        let fewest = more.iter().map(|x| x.1).min();
        if let (Some(lo), Some(hi)) = (fewest, more.iter().map(|x| x.1).max()) {
            out.push(Remedy::MoreRepetitions {
                fewest: lo,
                most: hi,
                cells: count_cells(more.iter().map(|x| x.0)),
            });
        }
        let hopeless: Vec<(&CellChange, f64)> = powers()
            .filter(|(_, p)| p.rounds_needed.is_none())
            .filter_map(|(c, p)| p.floor_pct.filter(|f| *f > threshold_pct).map(|f| (c, f)))
            .collect();
        if let Some(worst) = hopeless.iter().map(|x| x.1).reduce(f64::max) {
            out.push(Remedy::NoNumberOfRepetitions {
                cells: count_cells(hopeless.iter().map(|x| x.0)),
                worst_pct: worst,
            });
        }
        let need = powers()
            .filter(|(_, p)| p.rounds_needed.is_none() && p.floor_pct.is_none())
            .filter_map(|(_, p)| match p.power {
                Power::TooFew { need, .. } => Some((need, p.tests)),
                Power::NoValues(_) => Some((reps_needed(p.alpha), p.tests)),
                _ => None,
            })
            .max();
        if let Some((need, tests)) = need {
            out.push(Remedy::AtLeast { need, tests });
        }
        if powers().any(|(_, p)| p.power == Power::NoiseUnknown) {
            out.push(Remedy::MoreCells {
                min_tests: crate::stats::stability::NOISE_MIN_CELLS,
            });
        }
        let machine = blind.iter().any(|(_, b)| !matches!(b, Blind::Figure(..)))
            || !hopeless.is_empty()
            || self.noisy(threshold_pct).next().is_some();
        if !self.disturbed.is_empty() || machine {
            out.push(Remedy::QuieterMachine {
                disturbed: self.disturbed.len(),
            });
        }
        out.push(Remedy::BothBuilds(self.server_cell()));
        out
    }

    /// The first server cell the gate could not test, for the README's "ab-builds" recipe:
    /// both builds as contenders of one run, so every round measures both.
    fn server_cell(&self) -> Option<ServerCell> {
        let keys = self
            .cells
            .iter()
            .filter(|c| !c.tested())
            .map(|c| c.cell.as_str())
            .chain(
                self.disturbed
                    .iter()
                    .chain(&self.rates_differ)
                    .map(|n| n.cell.as_str()),
            );
        for k in keys {
            let mut words = k.split_whitespace();
            let (Some(w), Some(label)) = (words.next(), words.next()) else {
                continue;
            };
            if let Some(protocol) = ["echo", "http"]
                .into_iter()
                .find(|p| w.strip_prefix(p).is_some_and(|rest| rest.starts_with('.')))
            {
                return Some(ServerCell {
                    workload: w.to_string(),
                    protocol,
                    label: label.to_string(),
                });
            }
        }
        None
    }
}

/// How many distinct cells.
fn count_cells<'a>(cells: impl Iterator<Item = &'a CellChange>) -> usize {
    let mut v: Vec<&str> = cells.map(|c| c.cell.as_str()).collect();
    v.sort_unstable();
    v.dedup();
    v.len()
}
