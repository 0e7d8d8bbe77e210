//! The run's cells grouped as the analysis reads them: by workload, by parameter point (which
//! parameters are common, fixed per model, or the point), along a sweep; and each workload's
//! facts (its registry row's; a workload this build does not know gets bars).

use crate::results::facts::{ChartSpec, Facts};
use crate::results::{CaseResult, RunResults, Status};
use std::collections::HashMap;

/// What workload `id`'s figures mean: its registry row's facts; a results file's workload
/// this build does not know gets bars ([`Facts::LOCAL`]).
pub(crate) fn facts(id: &str) -> Facts {
    crate::registry::workload(id).map_or(Facts::LOCAL, |w| w.facts())
}

/// What workload `id`'s figures mean in `run`: what the file recorded for it
/// ([`Facts::with_record`]), over this build's row; this build's row alone (or bars for an
/// id it does not know) where the file recorded nothing.
pub(crate) fn facts_in(run: &RunResults, id: &str) -> Facts {
    match run.workloads.get(id) {
        Some(r) => facts(id).with_record(r),
        None => facts(id),
    }
}

/// How a workload's parameters split: `common` ones have one value in every cell (shown once),
/// `per_model` ones are fixed per model but differ between models (a queue depth the model
/// needs, a pool's thread count: shown beside the model, not as separate points), and the
/// rest are the parameter points cells are grouped and compared by.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParamRoles {
    pub common: Vec<(String, serde_json::Value)>,
    pub per_model: Vec<String>,
}

impl ParamRoles {
    /// Roles over every cell of `workload` that carries parameters (cells of models that do
    /// not take part at all have none and say nothing about the points).
    pub fn of(run: &RunResults, workload: &str) -> ParamRoles {
        let cases: Vec<&CaseResult> = run
            .cases
            .iter()
            .filter(|c| c.workload == workload)
            .collect();
        ParamRoles::of_cases(&cases)
    }

    /// [`ParamRoles::of`] over the cells of one workload: linear in cells times parameters.
    pub(crate) fn of_cases(cases: &[&CaseResult]) -> ParamRoles {
        let cases: Vec<&CaseResult> = cases
            .iter()
            .copied()
            .filter(|c| !c.params.0.is_empty())
            .collect();
        let labels: Vec<String> = cases.iter().map(|c| c.label()).collect();
        let keys: std::collections::BTreeSet<&String> =
            cases.iter().flat_map(|c| c.params.0.keys()).collect();
        let mut roles = ParamRoles::default();
        for k in keys {
            let first = cases.first().and_then(|c| c.params.0.get(k));
            if let Some(v0) = first {
                if cases.iter().all(|c| c.params.0.get(k) == Some(v0)) {
                    roles.common.push((k.clone(), v0.clone()));
                    continue;
                }
            }
            // Fixed per model: every cell of a label has the value its first cell has.
            let mut per_label: HashMap<&str, Option<&serde_json::Value>> = HashMap::new();
            let fixed_per_model = cases.iter().zip(&labels).all(|(c, l)| {
                let v = c.params.0.get(k);
                *per_label.entry(l.as_str()).or_insert(v) == v
            });
            if fixed_per_model {
                roles.per_model.push(k.clone());
            }
        }
        roles
    }

    /// "k=v k=v" over the point parameters of a cell, except `skip`.
    pub(crate) fn point(&self, c: &CaseResult, skip: Option<&str>) -> String {
        c.params
            .0
            .iter()
            .filter(|(k, _)| Some(k.as_str()) != skip)
            .filter(|(k, _)| !self.common.iter().any(|(ck, _)| ck == *k))
            .filter(|(k, _)| !self.per_model.contains(k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// "k=v k=v" over a cell's per-model parameters ("depth=256 threads=64").
    pub(crate) fn model_params(&self, c: &CaseResult) -> String {
        c.params
            .0
            .iter()
            .filter(|(k, _)| self.per_model.contains(k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// "k=v, k=v" over the common parameters.
    pub fn common_text(&self) -> String {
        self.common
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The cells of each workload, workloads in the order they first appear, cells in run order.
pub(crate) fn by_workload(run: &RunResults) -> Vec<(&str, Vec<&CaseResult>)> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut out: Vec<(&str, Vec<&CaseResult>)> = Vec::new();
    for c in &run.cases {
        let i = *index.entry(c.workload.as_str()).or_insert_with(|| {
            out.push((c.workload.as_str(), Vec::new()));
            out.len() - 1
        });
        out[i].1.push(c);
    }
    out
}

/// Distinct values in first-seen order, with the index of each: `order[index[v]] == v`.
#[derive(Default)]
pub(crate) struct Ordered {
    pub(crate) order: Vec<String>,
    index: HashMap<String, usize>,
}

impl Ordered {
    /// The index of `v`, added at the end if new.
    pub(crate) fn add(&mut self, v: String) -> usize {
        if let Some(&i) = self.index.get(&v) {
            return i;
        }
        self.order.push(v.clone());
        self.index.insert(v, self.order.len() - 1);
        self.order.len() - 1
    }
}

/// The sweep parameter a workload's cases actually carry as numbers, if its spec has one.
pub(crate) fn sweep_param(spec: &ChartSpec, cases: &[&CaseResult]) -> Option<&'static str> {
    let sw = spec.sweep?;
    sw.params.iter().copied().find(|p| {
        cases
            .iter()
            .filter(|c| c.status == Status::Measured)
            .any(|c| c.params.0.get(*p).and_then(|v| v.as_f64()).is_some())
    })
}
