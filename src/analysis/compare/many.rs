//! Many runs side by side (`ringside compare A B C ...`, `ringside report A B C ...`): the
//! first run is the reference, and every later run is compared with it by the same judge as
//! two-file `compare` ([`prepare`] per pair, then [`correct_and_judge`]), with one difference:
//! the decisive tests of every pair (first, k) are one Benjamini-Hochberg family, so the false
//! discovery rate is kept at [`ALPHA`] over the whole matrix, not per pair. With two runs the
//! family is the pair's own and the verdicts are two-file `compare`'s.
//!
//! The [`Matrix`] holds everything its renderings show (`export::compare`): one row per cell
//! with each run's figures and their ratio to the first run's, each later run's claim, and the
//! environment facts that differ between the runs. The exporters compute none of it.

use super::env::context;
use super::*;

/// Runs one matrix compares at most (they are named A to Z).
pub(crate) const MAX_RUNS: usize = 26;

/// One run of the matrix: its letter (A is the reference), the name it was given (the file's
/// path) and whether it finished.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MatrixRun {
    pub(crate) letter: String,
    pub(crate) name: String,
    pub(crate) finished: bool,
}

/// A later run's cell against the first run's.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Claim {
    /// Judged: its verdict ([`CellChange::verdict`]), and whether it is a regression or an
    /// improvement.
    Judged {
        verdict: CellVerdict,
        regression: bool,
        improvement: bool,
    },
    /// In both runs but not measured (with figures) in both: each run's column says why.
    Unmeasured,
    /// In both runs, measured, but not compared, and why (disturbed, offered rates apart;
    /// `None`: no reason recorded).
    NotCompared(Option<Skip>),
    /// The first run has it and this one does not.
    Absent,
    /// This run has it and the first does not: nothing to compare it with.
    NotInFirst,
}

/// Why a run has no figures of a cell.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Missing {
    /// The run has no such cell.
    Absent,
    /// Not measured (with figures): its status and reason.
    Unmeasured(CellState),
}

/// One cell across the runs.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MatrixRow {
    /// "micro.pipe uring msg_bytes=64" ([`CaseResult::key`]).
    pub(crate) cell: String,
    pub(crate) workload: String,
    /// The cell without its workload: "uring msg_bytes=64".
    pub(crate) point: String,
    /// Per run: the figures `compare` tests, each the median of its per-repetition values;
    /// `Err` with why where the run has no measured cell here.
    pub(crate) values: Vec<Result<Vec<(Figure, f64)>, Missing>>,
    /// Per run: each figure's ratio to the first run's (that run over the first); empty for
    /// the first run and where either has no value.
    pub(crate) ratios: Vec<Vec<(Figure, f64)>>,
    /// Per later run (index k - 1 for run k): its claim against the first run.
    pub(crate) claims: Vec<Claim>,
}

impl MatrixRow {
    /// Run `k`'s value of `fig`, where it has one.
    pub(crate) fn value(&self, k: usize, fig: Figure) -> Option<f64> {
        let v = self.values.get(k)?.as_ref().ok()?;
        v.iter().find(|x| x.0 == fig).map(|x| x.1)
    }

    /// Run `k`'s ratio of `fig` to the first run's, where both have it.
    pub(crate) fn ratio(&self, k: usize, fig: Figure) -> Option<f64> {
        self.ratios.get(k)?.iter().find(|x| x.0 == fig).map(|x| x.1)
    }
}

/// Everything `ringside compare A B C ...` reports.
#[derive(Clone, Debug)]
pub(crate) struct Matrix {
    pub(crate) runs: Vec<MatrixRun>,
    /// Cells in the first run's order, then those only later runs have, first seen first.
    pub(crate) rows: Vec<MatrixRow>,
    /// The comparison of each later run with the first (index k - 1 for run k), judged with
    /// the matrix's one correction family.
    pub(crate) pairs: Vec<Comparison>,
    /// (fact, each run's value) for every environment, version, profile, plan and flag fact
    /// whose value is not the same in every run ("(absent)" where a run lacks it).
    pub(crate) env: Vec<(String, Vec<String>)>,
    /// The tests of every pair, corrected as one family.
    pub(crate) tests: usize,
    pub(crate) threshold_pct: f64,
    /// Whether the gate accepts what could not be tested (`compare --allow-untested`).
    pub(crate) allow_untested: bool,
}

impl Matrix {
    /// The figures some row has a value of, in [`Figure`]'s order.
    pub(crate) fn figures(&self) -> Vec<Figure> {
        [
            Figure::P50,
            Figure::OpsPerSec,
            Figure::CpuPerOp,
            Figure::P99,
        ]
        .into_iter()
        .filter(|f| {
            self.rows
                .iter()
                .any(|r| (0..self.runs.len()).any(|k| r.value(k, *f).is_some()))
        })
        .collect()
    }

    /// Each later run's gate against the first (index k - 1 for run k), at the matrix's
    /// threshold and `allow_untested`.
    pub(crate) fn gates(&self) -> Vec<Gate> {
        self.pairs
            .iter()
            .map(|cmp| cmp.gate(self.threshold_pct, self.allow_untested))
            .collect()
    }

    /// The matrix's verdict: the worst of its pairs' (a regression in any pair is a
    /// regression, else any pair inconclusive is inconclusive).
    pub(crate) fn outcome(&self) -> Outcome {
        self.gates()
            .iter()
            .map(|g| g.outcome)
            .max()
            .unwrap_or(Outcome::Inconclusive)
    }

    /// The regressions of every later run: (its letter, the cell).
    pub(crate) fn regressions(&self) -> Vec<(&str, &str)> {
        self.rows
            .iter()
            .flat_map(|r| {
                r.claims
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| {
                        matches!(
                            c,
                            Claim::Judged {
                                regression: true,
                                ..
                            }
                        )
                    })
                    .map(move |(i, _)| (self.runs[i + 1].letter.as_str(), r.cell.as_str()))
            })
            .collect()
    }
}

/// "A".."Z" for run `k`.
fn letter(k: usize) -> String {
    char::from(b'A' + (k % MAX_RUNS) as u8).to_string()
}

/// Compares every run after the first with the first (`runs`: each with the name it was
/// given). `Err` says why the input cannot make a matrix: fewer than two runs, more than
/// [`MAX_RUNS`], or a run with no cell in common with the first.
pub(crate) fn compare_many(
    runs: &[(String, &RunResults)],
    threshold_pct: f64,
) -> Result<Matrix, String> {
    if runs.len() < 2 || runs.len() > MAX_RUNS {
        return Err(format!(
            "{} results file(s) given: compare takes 2 to {MAX_RUNS} (the first is the \
             reference)",
            runs.len()
        ));
    }
    shares_cells(runs)?;
    let first = runs[0].1;
    let mut pairs: Vec<Comparison> = runs[1..].iter().map(|(_, r)| prepare(first, r)).collect();
    // One family over every pair's decisive tests.
    let ps: Vec<Vec<f64>> = pairs.iter().map(Comparison::decisive_ps).collect();
    let all: Vec<f64> = ps.iter().flatten().copied().collect();
    let (_, adj) = crate::stats::claims::benjamini_hochberg(&all, ALPHA);
    let mut at = 0;
    for ((cmp, p), (_, run)) in pairs.iter_mut().zip(&ps).zip(&runs[1..]) {
        correct_and_judge(
            cmp,
            first,
            run,
            threshold_pct,
            &adj[at..at + p.len()],
            all.len(),
        );
        at += p.len();
    }
    let rows = rows_of(runs, &pairs);
    Ok(Matrix {
        runs: runs
            .iter()
            .enumerate()
            .map(|(k, (name, r))| MatrixRun {
                letter: letter(k),
                name: name.clone(),
                finished: r.finished,
            })
            .collect(),
        rows,
        pairs,
        env: env_table(runs),
        tests: all.len(),
        threshold_pct,
        allow_untested: false,
    })
}

/// `Err` naming the first run after the first that has no cell in common with it: bad input
/// to `compare`, whether two files are given or more (exit 2).
pub(crate) fn shares_cells(runs: &[(String, &RunResults)]) -> Result<(), String> {
    let Some((first_name, first)) = runs.first().map(|(n, r)| (n, *r)) else {
        return Ok(());
    };
    let first_keys: std::collections::HashSet<String> =
        first.cases.iter().map(CaseResult::key).collect();
    for (name, run) in &runs[1..] {
        if !run.cases.iter().any(|c| first_keys.contains(&c.key())) {
            let workloads = |r: &RunResults| {
                let mut w: Vec<&str> = r.cases.iter().map(|c| c.workload.as_str()).collect();
                w.sort();
                w.dedup();
                if w.is_empty() {
                    "no cells".to_string()
                } else {
                    w.join(", ")
                }
            };
            return Err(format!(
                "'{name}' has no cell in common with '{first_name}' (its workloads: {}; the \
                 first's: {}): nothing to compare",
                workloads(run),
                workloads(first)
            ));
        }
    }
    Ok(())
}

/// One row per cell of any run: the figures of each, their ratios to the first run's and
/// each later run's claim from its judged pair.
fn rows_of(runs: &[(String, &RunResults)], pairs: &[Comparison]) -> Vec<MatrixRow> {
    // Each run's first cell of each key (as `compare` keeps them).
    let cells: Vec<HashMap<String, &CaseResult>> = runs
        .iter()
        .map(|(_, r)| {
            let mut m = HashMap::new();
            for c in &r.cases {
                m.entry(c.key()).or_insert(c);
            }
            m
        })
        .collect();
    let mut order: Vec<(String, String)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (_, r) in runs {
        for c in &r.cases {
            let key = c.key();
            if seen.insert(key.clone()) {
                order.push((key, c.workload.clone()));
            }
        }
    }
    order
        .into_iter()
        .map(|(key, workload)| {
            let values: Vec<Result<Vec<(Figure, f64)>, Missing>> = cells
                .iter()
                .map(|m| match m.get(&key) {
                    None => Err(Missing::Absent),
                    Some(c) => match (&c.figures, c.status) {
                        (Some(f), Status::Measured) => Ok(figure_runs(c, f)
                            .into_iter()
                            .map(|(fig, v, _, _)| (fig, v))
                            .collect()),
                        (_, _) => Err(Missing::Unmeasured(CellState::of(c))),
                    },
                })
                .collect();
            let ratios = values
                .iter()
                .enumerate()
                .map(|(k, v)| match (k, &values[0], v) {
                    (0, _, _) => Vec::new(),
                    (_, Ok(first), Ok(this)) => this
                        .iter()
                        .filter_map(|(fig, x)| {
                            let (_, b) = first.iter().find(|f| f.0 == *fig)?;
                            (*b > 0.0).then(|| (*fig, x / b))
                        })
                        .collect(),
                    _ => Vec::new(),
                })
                .collect();
            let claims = pairs
                .iter()
                .enumerate()
                .map(|(i, cmp)| claim_of(cmp, &key, &cells[0], &cells[i + 1]))
                .collect();
            let point = key
                .strip_prefix(&format!("{workload} "))
                .unwrap_or(&key)
                .to_string();
            MatrixRow {
                cell: key,
                workload,
                point,
                values,
                ratios,
                claims,
            }
        })
        .collect()
}

/// The claim of a judged pair about the cell `key`.
fn claim_of(
    cmp: &Comparison,
    key: &str,
    first: &HashMap<String, &CaseResult>,
    this: &HashMap<String, &CaseResult>,
) -> Claim {
    if let Some(c) = cmp.cells.iter().find(|c| c.cell == key) {
        return Claim::Judged {
            verdict: c.verdict(),
            regression: c.regression,
            improvement: c.improvement,
        };
    }
    let measured = |m: &HashMap<String, &CaseResult>| {
        m.get(key)
            .is_some_and(|c| c.status == Status::Measured && c.figures.is_some())
    };
    match (first.get(key), this.get(key)) {
        (None, _) => Claim::NotInFirst,
        (_, None) => Claim::Absent,
        // Each run's column says why it has no figures.
        _ if !measured(first) || !measured(this) => Claim::Unmeasured,
        _ => Claim::NotCompared(
            cmp.not_compared
                .iter()
                .find(|n| n.cell == key)
                .map(|n| n.why.clone()),
        ),
    }
}

/// The facts whose value is not the same in every run, each with every run's value.
fn env_table(runs: &[(String, &RunResults)]) -> Vec<(String, Vec<String>)> {
    let contexts: Vec<HashMap<String, String>> = runs
        .iter()
        .map(|(_, r)| context(r).into_iter().collect())
        .collect();
    let mut keys: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (_, r) in runs {
        for (k, _) in context(r) {
            if seen.insert(k.clone()) {
                keys.push(k);
            }
        }
    }
    keys.into_iter()
        .filter_map(|k| {
            let vals: Vec<String> = contexts
                .iter()
                .map(|c| c.get(&k).cloned().unwrap_or_else(|| "(absent)".into()))
                .collect();
            vals.iter().any(|v| *v != vals[0]).then_some((k, vals))
        })
        .collect()
}
