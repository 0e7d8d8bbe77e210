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
    pub(crate) fn word(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Inconclusive => "INCONCLUSIVE",
            Outcome::Regression => "REGRESSION",
        }
    }

    /// `ringside compare`'s exit status: 0, [`EXIT_INCONCLUSIVE`], 1.
    pub(crate) fn exit_code(self) -> i32 {
        match self {
            Outcome::Pass => 0,
            Outcome::Inconclusive => EXIT_INCONCLUSIVE,
            Outcome::Regression => 1,
        }
    }
}

/// A comparison's gate: its verdict and everything it rests on, in sentences.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Gate {
    pub(crate) outcome: Outcome,
    pub(crate) threshold_pct: f64,
    /// Cells compared, and of them those tested with power to see the threshold (or found
    /// to regress).
    pub(crate) cells: usize,
    pub(crate) tested: usize,
    /// What makes it a regression, one sentence each.
    pub(crate) failures: Vec<String>,
    /// What keeps it from passing even with `--allow-untested`: an unfinished NEW, nothing
    /// compared.
    pub(crate) blocked: Vec<String>,
    /// Each cell of either file not tested with power to see the threshold: "cell: why".
    pub(crate) untested: Vec<String>,
    /// Groups of tests whose typical cell moved beyond the threshold (nothing there can be
    /// told from that), one sentence each.
    pub(crate) noisy: Vec<String>,
    /// What would make a change of the threshold visible, one sentence each.
    pub(crate) remedies: Vec<String>,
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
        let regs: Vec<&str> = self.regressions().map(|c| c.cell.as_str()).collect();
        if !regs.is_empty() {
            failures.push(format!(
                "{} regression(s) beyond {threshold_pct}%: {}",
                regs.len(),
                regs.join("; ")
            ));
        }
        if !self.became_failed.is_empty() {
            failures.push(format!(
                "{} cell(s) measured in BASE failed in NEW: {}",
                self.became_failed.len(),
                self.became_failed.join("; ")
            ));
        }
        let mut blocked = Vec::new();
        if !self.new_finished {
            blocked.push(
                "NEW is an unfinished run (\"finished\": false): cells it never reached are \
                 not compared"
                    .into(),
            );
        }
        if self.cells.is_empty() {
            blocked
                .push("no cell was compared: the two files have no measured cell in common".into());
        }
        let untested = self.untested_lines(threshold_pct);
        let noisy = self.noisy_lines(threshold_pct);
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

    /// "cell: why" for every cell of either file not tested with power to see the threshold:
    /// compared ones first, then those not compared (disturbed, offered rates apart, no
    /// longer measured, in one file only).
    fn untested_lines(&self, threshold_pct: f64) -> Vec<String> {
        let mut out: Vec<String> = self
            .cells
            .iter()
            .filter(|c| !c.tested())
            .map(|c| {
                let why = match &c.untested {
                    Some(u) => u.clone(),
                    None => super::text::blind_text(&c.blind, threshold_pct),
                };
                format!("{}: {why}", c.cell)
            })
            .collect();
        out.extend(self.disturbed.iter().cloned());
        out.extend(self.rates_differ.iter().cloned());
        out.extend(
            self.no_longer_measured
                .iter()
                .map(|l| format!("{l} (measured in BASE, not in NEW)")),
        );
        out.extend(self.only_base.iter().map(|k| format!("{k}: in BASE only")));
        out.extend(self.only_new.iter().map(|k| format!("{k}: in NEW only")));
        out
    }

    /// One sentence per group whose typical cell moved beyond the threshold
    /// ([`Comparison::noisy`]).
    fn noisy_lines(&self, threshold_pct: f64) -> Vec<String> {
        let groups: Vec<String> = self
            .noisy(threshold_pct)
            .map(|n| {
                format!(
                    "{} {}{} (±{:.1}% per run, from {} tests)",
                    n.workload,
                    n.figure.name(),
                    if n.relative {
                        " relative to its point"
                    } else {
                        ""
                    },
                    n.pct().map_or(0.0, |p| p.0),
                    n.tests
                )
            })
            .collect();
        if groups.is_empty() {
            return Vec::new();
        }
        vec![format!(
            "the two runs differ by more than the {threshold_pct}% threshold in a typical cell \
             of {}: either the machine was not the same or most cells changed, and no change \
             there can be told from that",
            groups.join("; ")
        )]
    }

    /// What would make a change of `threshold_pct` visible where the gate could not see one:
    /// more repetitions (how many, at the noise measured), more cells, a quieter machine, and
    /// both builds in one run.
    fn remedies(&self, threshold_pct: f64) -> Vec<String> {
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
            let range = if lo == hi {
                format!("{hi}")
            } else {
                format!("{lo} to {hi} (each cell's line says its own)")
            };
            out.push(format!(
                "more repetitions: at the noise measured, {range} a side (`ringside run ... \
                 --runs {hi}` for both builds) would let {} cell(s) see a {threshold_pct}% \
                 change (a test's variance from its rounds shrinks as 1/repetitions, so that \
                 share of what it can see as sqrt(n_now/n); the share from the noise between \
                 runs does not)",
                count_cells(more.iter().map(|x| x.0))
            ));
        }
        let hopeless: Vec<(&CellChange, f64)> = powers()
            .filter(|(_, p)| p.rounds_needed.is_none())
            .filter_map(|(c, p)| p.floor_pct.filter(|f| *f > threshold_pct).map(|f| (c, f)))
            .collect();
        if let Some(worst) = hopeless.iter().map(|x| x.1).reduce(f64::max) {
            out.push(format!(
                "no number of repetitions would for {} cell(s): the noise between two runs \
                 alone hides changes under {} there",
                count_cells(hopeless.iter().map(|x| x.0)),
                pct_words(worst)
            ));
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
            out.push(format!(
                "at least {need} repetitions a side (`--runs {need}`): fewer cannot confirm a \
                 change alone among {tests} tests"
            ));
        }
        if powers().any(|(_, p)| p.power == Power::NoiseUnknown) {
            out.push(format!(
                "more cells in both runs (whole suites): the noise between two runs is \
                 estimated from at least {} tests of a figure",
                crate::stats::stability::NOISE_MIN_CELLS
            ));
        }
        let machine = blind.iter().any(|(_, b)| !matches!(b, Blind::Figure(..)))
            || !hopeless.is_empty()
            || self.noisy(threshold_pct).next().is_some();
        if !self.disturbed.is_empty() || machine {
            out.push(format!(
                "a quieter machine: nothing else running on the plan's CPUs during either \
                 run{}, the same machine state for both",
                match self.disturbed.len() {
                    0 => String::new(),
                    n => format!(" ({n} cell(s) were disturbed)"),
                }
            ));
        }
        out.push(self.paired_recipe());
        out
    }

    /// The README's "ab-builds" recipe for the first server cell the gate could not test:
    /// both builds as contenders of one run, so every round measures both.
    fn paired_recipe(&self) -> String {
        let keys = self
            .cells
            .iter()
            .filter(|c| !c.tested())
            .map(|c| c.cell.as_str())
            .chain(
                self.disturbed
                    .iter()
                    .chain(&self.rates_differ)
                    .map(|l| l.split(": ").next().unwrap_or("")),
            );
        let mut server = None;
        for k in keys {
            let mut words = k.split_whitespace();
            let (Some(w), Some(label)) = (words.next(), words.next()) else {
                continue;
            };
            if let Some(proto) = ["echo", "http"]
                .into_iter()
                .find(|p| w.starts_with(&format!("{p}.")))
            {
                server = Some((w.to_string(), proto, label.to_string()));
                break;
            }
        }
        let why = "every round then measures both, so the noise between runs and the \
                   machine's drift cancel, and equal-load cells share one rate";
        let Some((w, proto, label)) = server else {
            return format!(
                "for a server workload, both builds in one run (the README's \"ab-builds\" \
                 recipe: `ringside run WORKLOAD --contender \"old=...\" --contender \
                 \"new=...\"`): {why}"
            );
        };
        let cmd = match label.strip_prefix("ext:") {
            Some(_) => format!(
                "ringside run {w} --contender \"{proto}:old=OLD_SERVER --port {{port}}\" \
                 --contender \"{proto}:new=NEW_SERVER --port {{port}}\""
            ),
            None => {
                let model = label.split('/').next().unwrap_or(&label);
                let serve = |build: &str| {
                    format!(
                        "{proto}:{build}=/path/to/{build}/ringside serve --protocol {proto} \
                         --model {model} --addr 127.0.0.1:{{port}}"
                    )
                };
                format!(
                    "ringside run {w} --models {model} --contender \"{}\" --contender \"{}\"",
                    serve("old"),
                    serve("new")
                )
            }
        };
        format!(
            "both builds in one run, paired round by round (the README's \"ab-builds\" \
             recipe): `{cmd}`: {why}"
        )
    }
}

/// How many distinct cells.
fn count_cells<'a>(cells: impl Iterator<Item = &'a CellChange>) -> usize {
    let mut v: Vec<&str> = cells.map(|c| c.cell.as_str()).collect();
    v.sort_unstable();
    v.dedup();
    v.len()
}

/// "14%", "3.4%".
pub(crate) fn pct_words(p: f64) -> String {
    if p < 10.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

impl Gate {
    /// The verdict in one line, as every rendering opens with it.
    pub(crate) fn headline(&self) -> String {
        let t = self.threshold_pct;
        let gaps = self.untested.len();
        let word = self.outcome.word();
        match self.outcome {
            Outcome::Regression => {
                let mut s = format!("{word}: {}", self.failures.join("; "));
                if gaps > 0 {
                    s += &format!("; {gaps} more cell(s) could not be tested");
                }
                s
            }
            Outcome::Inconclusive if !self.blocked.is_empty() => {
                format!("{word}: {}", self.blocked.join("; "))
            }
            Outcome::Inconclusive => format!(
                "{word}: no regression found, but {gaps} cell(s){} could not be tested with \
                 power to see a {t}% change ({} of {} compared cells could)",
                if self.noisy.is_empty() {
                    ""
                } else {
                    " and the run-to-run noise"
                },
                self.tested,
                self.cells
            ),
            Outcome::Pass if self.accepted => format!(
                "{word} (--allow-untested): no significant regression beyond {t}% in {} \
                 compared cells; {gaps} cell(s) could not be tested with power to see it \
                 (accepted)",
                self.cells
            ),
            Outcome::Pass => format!(
                "{word}: no regression beyond {t}%, and each of the {} compared cells was \
                 tested with power to see one",
                self.cells
            ),
        }
    }
}
