//! What to run: profiles, the user's selection validated against the registry, and the cases
//! that selection expands to.

use crate::error::InputError;
use crate::measure::pin::CpuPlan;
use crate::model::ModelSpec;
use crate::registry::{self, MODELS, WORKLOADS};
use crate::workload::{Point, Workload};

pub use crate::profile::{Budget, Profile};

mod estimate;
pub mod knobs;
pub use estimate::{estimate, Estimate};
pub use knobs::{Knob, Overrides};

/// One cell to measure (or to report as unavailable / not applicable).
#[derive(Clone)]
pub struct Case {
    pub workload: &'static dyn Workload,
    pub(crate) model: &'static ModelSpec,
    pub point: Option<Point>,
    /// Set when the model does not take part in the workload (and the user asked for it).
    pub not_applicable: Option<String>,
}

/// Whether naming `w`'s suite runs it: a workload of the default run does, and every
/// workload of a suite that has none in the default run (`stream`, `udp`, ...); the others
/// (`echo.rate`, `micro.fd_scaling`) run when their id is named.
fn suite_runs(w: &dyn Workload) -> bool {
    let suite = registry::suite_of(w.id());
    w.by_default()
        || !WORKLOADS
            .iter()
            .any(|x| registry::suite_of(x.id()) == suite && x.by_default())
}

/// For each suite `items` names, the workloads of it that [`select_workloads`] leaves out
/// (run when their id is named): (suite, the ones it runs, the ones left out); suites that
/// leave none out are not listed.
pub fn left_out(items: &[String]) -> Vec<(&'static str, Vec<&'static str>, Vec<&'static str>)> {
    let mut out = Vec::new();
    for suite in registry::suites() {
        if !items.iter().any(|it| it == suite) {
            continue;
        }
        let of_suite = || {
            WORKLOADS
                .iter()
                .copied()
                .filter(move |w| registry::suite_of(w.id()) == suite)
        };
        let left: Vec<&'static str> = of_suite()
            .filter(|w| !suite_runs(*w) && !items.iter().any(|it| it == w.id()))
            .map(|w| w.id())
            .collect();
        if !left.is_empty() {
            let runs = of_suite()
                .filter(|w| !left.contains(&w.id()))
                .map(|w| w.id())
                .collect();
            out.push((suite, runs, left));
        }
    }
    out
}

/// Resolves `items` (suites like `micro` or workload ids like `micro.pipe`; empty = every
/// workload that runs by default, [`Workload::by_default`]) into workloads in registry order.
/// A suite runs its workloads of the default run (all of them where it has none there); the
/// others run when their id is named ([`left_out`] lists them).
pub fn select_workloads(items: &[String]) -> Result<Vec<&'static dyn Workload>, InputError> {
    if items.is_empty() {
        return Ok(WORKLOADS
            .iter()
            .copied()
            .filter(|w| w.by_default())
            .collect());
    }
    for it in items {
        let known = registry::suites().contains(&it.as_str()) || registry::workload(it).is_some();
        if !known {
            let mut valid: Vec<String> = registry::suites().iter().map(|s| s.to_string()).collect();
            valid.extend(WORKLOADS.iter().map(|w| w.id().to_string()));
            return Err(InputError::UnknownSelection {
                given: it.clone(),
                valid: valid.join(", "),
            });
        }
    }
    Ok(WORKLOADS
        .iter()
        .copied()
        .filter(|w| {
            items
                .iter()
                .any(|it| it == w.id() || (it == registry::suite_of(w.id()) && suite_runs(*w)))
        })
        .collect())
}

/// Resolves a comma-separated model list (`None` = every model).
pub fn select_models(list: Option<&[String]>) -> Result<Vec<&'static ModelSpec>, InputError> {
    let Some(list) = list else {
        return Ok(MODELS.iter().collect());
    };
    let mut out = Vec::new();
    for id in list {
        let m = registry::model(id).ok_or_else(|| InputError::UnknownModel {
            given: id.clone(),
            valid: MODELS.iter().map(|m| m.id).collect::<Vec<_>>().join(", "),
        })?;
        if out.iter().any(|x: &&ModelSpec| x.id == m.id) {
            return Err(InputError::BadValue {
                flag: "--models",
                given: list.join(","),
                valid: format!("names '{id}' twice; name each model once"),
            });
        }
        out.push(m);
    }
    Ok(out)
}

/// The word `--models` takes for every row.
pub const ALL_MODELS: &str = "all";

/// The models of a run: `--models` as given (`all`: every row); without it, the families'
/// leaders (`ModelSpec::default_run`), and for a workload that picks its own models (the
/// ablation ladders: `Workload::own_models`) every row it takes ([`expand`]).
pub fn select_models_for(list: Option<&[String]>) -> Result<Vec<&'static ModelSpec>, InputError> {
    match list {
        Some([one]) if one == ALL_MODELS => select_models(None),
        Some(_) => select_models(list),
        None => {
            let mut v = select_models(None)?;
            v.retain(|m| m.default_run);
            Ok(v)
        }
    }
}

/// The prefix of a contender's model id (`ext:NAME`, `model::contender`).
pub const CONTENDER_PREFIX: &str = "ext:";

/// The models of a run with its contenders (`--contender`): [`select_models_for`] over the
/// registry's ids, where `--models` may also name a declared contender as `ext:NAME`. A
/// `--models` list that names a contender runs the contenders it names and no other (alone:
/// `--models ext:mine`; or beside built-in models); one that names none, or no `--models`,
/// runs every declared contender beside its models. An `ext:NAME` that names no declared
/// contender is refused, naming the ones that are.
pub fn select_models_with(
    list: Option<&[String]>,
    contenders: &crate::model::Catalog,
) -> Result<Vec<&'static ModelSpec>, InputError> {
    let declared: Vec<&'static ModelSpec> = contenders.models().collect();
    let (ext, builtin): (Vec<String>, Vec<String>) = list
        .unwrap_or_default()
        .iter()
        .cloned()
        .partition(|id| id.starts_with(CONTENDER_PREFIX));
    let mut models = match list {
        Some(_) if builtin.is_empty() => Vec::new(),
        Some(_) => select_models_for(Some(&builtin))?,
        None => select_models_for(None)?,
    };
    if ext.is_empty() {
        models.extend(declared);
        return Ok(models);
    }
    for id in &ext {
        let Some(m) = declared.iter().find(|m| m.id == id) else {
            let mut valid: Vec<&str> = MODELS.iter().map(|m| m.id).collect();
            valid.extend(declared.iter().map(|m| m.id));
            let hint = if declared.is_empty() {
                format!(
                    " (no contender was declared: add --contender {}='command with {{port}}')",
                    &id[CONTENDER_PREFIX.len()..]
                )
            } else {
                String::new()
            };
            return Err(InputError::UnknownModel {
                given: id.clone(),
                valid: valid.join(", ") + &hint,
            });
        };
        if models.iter().any(|x| x.id == m.id) {
            return Err(InputError::BadValue {
                flag: "--models",
                given: list.unwrap_or_default().join(","),
                valid: format!("names '{id}' twice; name each model once"),
            });
        }
        models.push(m);
    }
    Ok(models)
}

/// Whether the user named the models (`--models` other than `all`): a named model a workload
/// does not take is then a not-applicable row.
pub fn models_named(list: Option<&[String]>) -> bool {
    match list {
        None => false,
        Some([one]) => one != ALL_MODELS,
        Some(_) => true,
    }
}

/// Every case of the selection. A model that does not take part in a workload yields one
/// not-applicable case only when the user named the model explicitly.
pub fn expand(
    workloads: &[&'static dyn Workload],
    models: &[&'static ModelSpec],
    models_named: bool,
    profile: Profile,
    cpus: &CpuPlan,
) -> Vec<Case> {
    let mut cases = Vec::new();
    let every: Vec<&'static ModelSpec> = MODELS.iter().collect();
    for &w in workloads {
        let models = if !models_named && w.own_models() {
            &every[..]
        } else {
            models
        };
        for &m in models {
            match w.accepts_on(m, cpus) {
                Ok(()) => {
                    for p in w.points_on(profile, m, cpus) {
                        cases.push(Case {
                            workload: w,
                            model: m,
                            point: Some(p),
                            not_applicable: None,
                        });
                    }
                }
                Err(why) if models_named => cases.push(Case {
                    workload: w,
                    model: m,
                    point: None,
                    not_applicable: Some(why),
                }),
                Err(_) => {}
            }
        }
    }
    cases
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_by_suite_and_id_and_bad_values_named() {
        assert_eq!(
            select_workloads(&[]).unwrap().len(),
            WORKLOADS.iter().filter(|w| w.by_default()).count()
        );
        // Issue 45: a suite runs its workloads of the default run, and the others of it when
        // their id is named (a suite with none in the default run: all of them); the ones
        // left out are listed.
        for w in WORKLOADS.iter().filter(|w| !w.by_default()) {
            let suite = registry::suite_of(w.id());
            let by_suite = select_workloads(&[suite.into()]).unwrap();
            let has_default = WORKLOADS
                .iter()
                .any(|x| registry::suite_of(x.id()) == suite && x.by_default());
            assert_eq!(
                by_suite.iter().any(|x| x.id() == w.id()),
                !has_default,
                "{}",
                w.id()
            );
            let left = left_out(&[suite.into()]);
            assert_eq!(
                left.iter()
                    .any(|(s, _, l)| *s == suite && l.contains(&w.id())),
                has_default,
                "{}",
                w.id()
            );
            let named = select_workloads(&[suite.into(), w.id().into()]).unwrap();
            assert!(named.iter().any(|x| x.id() == w.id()));
            assert!(!left_out(&[suite.into(), w.id().into()])
                .iter()
                .any(|(_, _, l)| l.contains(&w.id())));
        }
        let echo: Vec<&str> = select_workloads(&["echo".into()])
            .unwrap()
            .iter()
            .map(|w| w.id())
            .collect();
        assert_eq!(echo, ["echo.conns"]);
        let left = left_out(&["echo".into(), "micro.pipe".into()]);
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].0, "echo");
        assert_eq!(left[0].1, ["echo.conns"]);
        assert!(left[0].2.contains(&"echo.rate") && left[0].2.contains(&"echo.ladder"));
        assert!(left_out(&["stream".into()]).is_empty());
        assert!(select_workloads(&["stream".into()]).unwrap().len() >= 2);
        let micro = select_workloads(&["micro".into()]).unwrap();
        assert!(micro.iter().all(|w| w.id().starts_with("micro.")));
        let one = select_workloads(&["micro.pipe".into()]).unwrap();
        assert_eq!(one.len(), 1);
        let e = select_workloads(&["micro.nope".into()])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("micro.nope") && e.contains("micro.pipe"), "{e}");
        let e = select_models(Some(&["epol".into()]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("'epol'") && e.contains("epoll-lt"), "{e}");
    }

    #[test]
    fn the_leaders_run_unless_models_are_named_and_all_is_one_word() {
        let bare = select_models_for(None).unwrap();
        assert!(bare.iter().all(|m| m.default_run));
        assert!(MODELS.iter().any(|m| !m.default_run));
        let ids: Vec<&str> = bare.iter().map(|m| m.id).collect();
        for leader in [
            "blocking",
            "epoll-lt",
            "uring-defer",
            "uring-tuned",
            "tokio",
            "monoio",
        ] {
            assert!(ids.contains(&leader), "{ids:?}");
        }
        let all = select_models_for(Some(&["all".into()])).unwrap();
        assert_eq!(all.len(), MODELS.len());
        assert!(!models_named(Some(&["all".into()])) && !models_named(None));
        let named = select_models_for(Some(&["uring-bundle".into()])).unwrap();
        assert_eq!(named[0].id, "uring-bundle");
        assert!(models_named(Some(&["uring-bundle".into()])));
        // A ladder picks its rungs itself: every rung runs without --models.
        let ladder = registry::workload("echo.ladder").unwrap();
        let cases = expand(
            &[ladder],
            &bare,
            false,
            Profile::Smoke,
            &CpuPlan::pair(1, Some(0)),
        );
        let mut rungs: Vec<&str> = cases.iter().map(|c| c.model.id).collect();
        rungs.dedup();
        assert!(rungs.len() > bare.iter().filter(|m| ladder.accepts(m).is_ok()).count());
    }

    /// Issue 45: `--models ext:NAME` selects a declared contender, alone or beside other
    /// models; without one named, every contender joins; an undeclared one is refused
    /// naming the valid ones.
    #[test]
    fn models_name_contenders_as_ext_name() {
        let c = crate::model::Catalog::from_specs(&["a=x {port}".into(), "echo:b=y {port}".into()])
            .unwrap();
        let ids = |list: Option<&[String]>| -> Vec<&str> {
            select_models_with(list, &c)
                .unwrap()
                .iter()
                .map(|m| m.id)
                .collect()
        };
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(ids(Some(&v(&["ext:a"]))), ["ext:a"]);
        assert_eq!(ids(Some(&v(&["epoll-lt", "ext:b"]))), ["epoll-lt", "ext:b"]);
        assert_eq!(ids(Some(&v(&["epoll-lt"]))), ["epoll-lt", "ext:a", "ext:b"]);
        let bare = ids(None);
        assert!(bare.ends_with(&["ext:a", "ext:b"]) && bare.contains(&"epoll-lt"));
        assert_eq!(ids(Some(&v(&["all"]))).len(), MODELS.len() + 2);
        let e = select_models_with(Some(&v(&["ext:nope"])), &c)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'ext:nope'") && e.contains("ext:a") && e.contains("epoll-lt"),
            "{e}"
        );
        let e = select_models_with(Some(&v(&["ext:a", "ext:a"])), &c)
            .unwrap_err()
            .to_string();
        assert!(e.contains("twice"), "{e}");
        let none = crate::model::Catalog::default();
        let e = select_models_with(Some(&v(&["ext:mine"])), &none)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'ext:mine'") && e.contains("--contender mine="),
            "{e}"
        );
    }

    #[test]
    fn every_workload_has_cases_and_named_models_show_not_applicable() {
        let ws = WORKLOADS.to_vec();
        let all = select_models(None).unwrap();
        let cases = expand(&ws, &all, false, Profile::Smoke, &CpuPlan::pair(1, Some(0)));
        for w in &ws {
            assert!(
                cases
                    .iter()
                    .any(|c| c.workload.id() == w.id() && c.point.is_some()),
                "{}",
                w.id()
            );
        }
        assert!(cases.iter().all(|c| c.not_applicable.is_none()));
        let named = expand(&ws, &all, true, Profile::Smoke, &CpuPlan::pair(1, Some(0)));
        assert!(named.iter().any(|c| c.not_applicable.is_some()));
    }
}
