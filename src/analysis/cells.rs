//! The run's cells grouped as the analysis reads them: by workload, by parameter point (which
//! parameters are common, fixed per model, or the point), along a sweep; and each workload's
//! facts (its registry row's; a workload this build does not know gets bars).

use crate::results::facts::{ChartSpec, Facts};
use crate::results::{CaseResult, RunResults, Status, EQUAL_LOAD_WORD};
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
    /// Where the cells' equal-load marker (`CaseResult::equal_load`) goes: like a parameter,
    /// to the common ones where every cell has the same, else to the point.
    pub equal_load: EqualLoadRole,
}

/// See [`ParamRoles::equal_load`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum EqualLoadRole {
    /// No cell is of an equal-load point.
    #[default]
    Nowhere,
    /// Every cell is.
    Everywhere,
    /// Some are: it tells their points apart ([`EQUAL_LOAD_WORD`] in a point's text).
    Point,
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
        let equal = cases.iter().filter(|c| c.equal_load.is_some()).count();
        roles.equal_load = match equal {
            0 => EqualLoadRole::Nowhere,
            n if n == cases.len() => EqualLoadRole::Everywhere,
            _ => EqualLoadRole::Point,
        };
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

    /// "k=v k=v" over the point parameters of a cell, except `skip`, then [`EQUAL_LOAD_WORD`]
    /// at an equal-load point where that tells points apart.
    pub(crate) fn point(&self, c: &CaseResult, skip: Option<&str>) -> String {
        let mut words: Vec<String> = c
            .params
            .0
            .iter()
            .filter(|(k, _)| Some(k.as_str()) != skip)
            .filter(|(k, _)| !self.common.iter().any(|(ck, _)| ck == *k))
            .filter(|(k, _)| !self.per_model.contains(k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if self.equal_load == EqualLoadRole::Point && c.equal_load.is_some() {
            words.push(EQUAL_LOAD_WORD.to_string());
        }
        words.join(" ")
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

    /// "k=v, k=v" over the common parameters, then [`EQUAL_LOAD_WORD`] where every cell is of
    /// an equal-load point.
    pub fn common_text(&self) -> String {
        let mut words: Vec<String> = self
            .common
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if self.equal_load == EqualLoadRole::Everywhere {
            words.push(EQUAL_LOAD_WORD.to_string());
        }
        words.join(", ")
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

/// What a cell selector (`report --hgrm SELECTOR`) found: the one cell it names, none, or
/// several (each listed by its key).
#[derive(Debug)]
pub(crate) enum Selected<'a> {
    One(&'a CaseResult),
    None,
    Several(Vec<&'a CaseResult>),
}

/// The words of a selector, split at spaces outside double quotes: `path="/a b" conns=50`
/// is two words, as a cell's key writes them.
fn selector_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let (mut word, mut quoted) = (String::new(), false);
    for ch in s.chars() {
        match ch {
            '"' => {
                quoted = !quoted;
                word.push(ch);
            }
            c if c.is_whitespace() && !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Whether selector word `w` holds for cell `c`: `k=v` where the cell's param `k` is `v`
/// (a string with or without its quotes), or a word naming the cell's workload, suite, model
/// or label (`blocking/poll`).
fn word_holds(w: &str, c: &CaseResult) -> bool {
    match w.split_once('=') {
        Some((k, v)) => c.params.0.get(k).is_some_and(|x| match x.as_str() {
            Some(s) => s == v.trim_matches('"'),
            None => {
                let shown = x.to_string();
                shown == v
            }
        }),
        None => {
            (w == EQUAL_LOAD_WORD && c.equal_load.is_some())
                || w == c.workload
                || c.workload.split('.').next() == Some(w)
                || w == c.model
                || w == c.label()
        }
    }
}

/// The cell `selector` names in `run`: its whole key (`micro.pipe uring msg_bytes=64`, as
/// `report` and `compare` name cells), or any of its words: the workload, the model and the
/// parameters that tell it from the others (`uring msg_bytes=64`, `conns=100`), without
/// those every cell of its workload shares (`duration_ms=330`). Where several cells match,
/// the one whose varying parameters are all named is it (`epoll-lt conns=100` is the
/// capacity point, not the equal-load one beside it, which `equal-load` names); else they
/// are [`Selected::Several`].
pub(crate) fn select_cell<'a>(run: &'a RunResults, selector: &str) -> Selected<'a> {
    let selector = selector.trim();
    if let Some(c) = run.cases.iter().find(|c| c.key() == selector) {
        return Selected::One(c);
    }
    let words = selector_words(selector);
    if words.is_empty() {
        return Selected::None;
    }
    let found: Vec<&CaseResult> = run
        .cases
        .iter()
        .filter(|c| words.iter().all(|w| word_holds(w, c)))
        .collect();
    match found.len() {
        0 => return Selected::None,
        1 => return Selected::One(found[0]),
        _ => {}
    }
    let named: Vec<&str> = words
        .iter()
        .filter_map(|w| w.split_once('=').map(|(k, _)| k))
        .collect();
    let mut roles: HashMap<&str, ParamRoles> = HashMap::new();
    let whole: Vec<&CaseResult> = found
        .iter()
        .copied()
        .filter(|c| {
            let r = roles
                .entry(c.workload.as_str())
                .or_insert_with(|| ParamRoles::of(run, &c.workload));
            let marker_named = c.equal_load.is_none()
                || r.equal_load != EqualLoadRole::Point
                || words.iter().any(|w| w == EQUAL_LOAD_WORD);
            marker_named
                && c.params.0.keys().all(|k| {
                    named.contains(&k.as_str())
                        || r.common.iter().any(|(ck, _)| ck == k)
                        || r.per_model.contains(k)
                })
        })
        .collect();
    match whole[..] {
        [one] => Selected::One(one),
        _ => Selected::Several(found),
    }
}

#[cfg(test)]
mod selector_tests {
    use super::*;

    fn fixture() -> RunResults {
        crate::results::store::parse(include_str!("../../tests/fixtures/results.json")).unwrap()
    }

    fn key(s: Selected) -> String {
        match s {
            Selected::One(c) => c.key(),
            other => panic!("{other:?}"),
        }
    }

    /// Issue 45: a cell is named by the words that tell it from the others, not its whole key.
    #[test]
    fn a_cell_is_selected_by_its_varying_parameters() {
        let run = fixture();
        for c in &run.cases {
            assert_eq!(key(select_cell(&run, &c.key())), c.key());
        }
        assert_eq!(
            key(select_cell(&run, "uring msg_bytes=4096")),
            "micro.pipe uring msg_bytes=4096"
        );
        assert_eq!(
            key(select_cell(&run, "blocking/poll fds=100")),
            "micro.fd_scaling blocking/poll fds=100"
        );
        // micro.batching's cells have msg_bytes=64 too, but vary batch, which is not named.
        assert_eq!(
            key(select_cell(&run, "  blocking msg_bytes=64 ")),
            "micro.pipe blocking msg_bytes=64"
        );
        assert_eq!(
            key(select_cell(&run, "micro.batching uring batch=64")),
            "micro.batching uring batch=64 msg_bytes=64"
        );
        // Several: every model at the point; none: a word no cell has.
        match select_cell(&run, "msg_bytes=64") {
            Selected::Several(v) => assert!(v.len() >= 4, "{v:?}"),
            other => panic!("{other:?}"),
        }
        match select_cell(&run, "fds=100") {
            Selected::Several(v) => {
                let keys: Vec<String> = v.iter().map(|c| c.key()).collect();
                assert_eq!(keys.len(), 3, "{keys:?}");
                assert!(keys.iter().all(|k| k.ends_with("fds=100")), "{keys:?}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            select_cell(&run, "micro.pipe nosuch"),
            Selected::None
        ));
        assert!(matches!(select_cell(&run, "fds=7"), Selected::None));
        assert!(matches!(select_cell(&run, " "), Selected::None));
    }

    /// An equal-load point is named by `equal-load`, as its key writes it; the capacity
    /// point beside it (same params) is the one without.
    #[test]
    fn an_equal_load_cell_is_named_by_its_marker() {
        let mut run = fixture();
        let base = run
            .cases
            .iter()
            .find(|c| c.status == Status::Measured)
            .unwrap()
            .clone();
        run.cases.clear();
        for equal in [false, true] {
            let mut c = base.clone();
            c.workload = "echo.conns".into();
            c.model = "epoll-lt".into();
            c.variant = None;
            c.params = crate::results::Params::default()
                .with("conns", 100)
                .with("duration_ms", 330);
            c.equal_load = equal.then_some(crate::results::EqualLoadAt { of_slowest: 0.3 });
            run.cases.push(c);
        }
        let mut other = run.cases[0].clone();
        other.params = crate::results::Params::default()
            .with("conns", 50)
            .with("duration_ms", 330);
        run.cases.push(other);
        assert_eq!(
            key(select_cell(&run, "conns=100")),
            "echo.conns epoll-lt conns=100 duration_ms=330"
        );
        let equal = "echo.conns epoll-lt conns=100 duration_ms=330 equal-load";
        assert_eq!(key(select_cell(&run, equal)), equal);
        assert_eq!(key(select_cell(&run, "conns=100 equal-load")), equal);
        assert_eq!(key(select_cell(&run, "echo epoll-lt equal-load")), equal);
        assert!(matches!(
            select_cell(&run, "duration_ms=330"),
            Selected::Several(_)
        ));
        let roles = ParamRoles::of(&run, "echo.conns");
        assert_eq!(roles.equal_load, EqualLoadRole::Point);
        assert_eq!(roles.point(&run.cases[1], None), "conns=100 equal-load");
        assert_eq!(roles.point(&run.cases[0], None), "conns=100");
    }
}
