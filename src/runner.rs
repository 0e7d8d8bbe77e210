//! The runner: for each case, warm-up repetitions, then measured repetitions (each a fresh
//! setup), statistics, and an atomic save of the results after every case. Ctrl-C stops after
//! the repetition in progress and keeps every finished case (`"finished": false`); a second
//! Ctrl-C stops at once, keeping what was saved.

mod fio;

pub use fio::randread_rows as fio_randread_rows;

use crate::env::EnvReport;
use crate::error::CaseError;
use crate::measure::{pin, Meter, Sample};
use crate::model::Catalog;
use crate::plan::{Budget, Case};
use crate::profile::Profile;
use crate::results::schema::{CaseResult, RunResults, Status, Warning};
use crate::results::store::Store;
use crate::shutdown::{aborting, stop_requested};
use crate::stats::wrk::{agreement, Agreement};
use crate::stats::{self, summary::HIGH_SPREAD};
use crate::ui::Observer;
use crate::workload::storage::StorageCtx;
use crate::workload::Ctx;

/// How the run ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Finished,
    Interrupted,
}

/// Measures every case in order, appending results to `run` and saving after each (the
/// storage suite's work directory when storage workloads are selected; the run's external
/// contenders for the `ext:` models). With `fio_crosscheck` (`--crosscheck`, the run's
/// profile) and a storage suite, the fio rows of `storage.randread` follow the cases.
#[allow(clippy::too_many_arguments)]
pub fn run_with(
    cases: &[Case],
    budget: Budget,
    env: &EnvReport,
    run: &mut RunResults,
    store: &Store,
    obs: &dyn Observer,
    storage: Option<&StorageCtx>,
    contenders: &Catalog,
    fio_crosscheck: Option<Profile>,
) -> anyhow::Result<Outcome> {
    // The measured thread is this one: pin it, then open its syscall counter.
    let _ = pin::pin_this_thread(run.plan.measured);
    let meter = Meter::new();
    let plan = run.plan.clone();
    obs.run_started(cases.len());
    for (i, case) in cases.iter().enumerate() {
        if stop_requested() {
            break;
        }
        obs.case_started(i, case);
        let ctx = Setting {
            budget,
            env,
            plan: &plan,
            meter: &meter,
            storage,
            contenders,
        };
        let Some(result) = measure_case(case, &ctx) else {
            break; // interrupted mid-case: the partial case is dropped
        };
        if aborting() {
            // A second signal: what this case met after it (its files removed) is no result.
            return Ok(Outcome::Interrupted);
        }
        obs.case_finished(i, &result);
        run.cases.push(result);
        store.save(run)?;
    }
    // The fio cross-check, once every case was measured: a job cut short by Ctrl-C is not a
    // row, the jobs that finished are kept.
    if let (Some(profile), Some(st), false) = (fio_crosscheck, storage, stop_requested()) {
        run.cases
            .extend(fio::randread_rows(cases, st, profile, &plan));
    }
    let outcome = if stop_requested() {
        Outcome::Interrupted
    } else {
        Outcome::Finished
    };
    run.finished = outcome == Outcome::Finished;
    if !aborting() {
        store.save(run)?;
    }
    Ok(outcome)
}

/// What every case of a run is measured with.
#[derive(Clone, Copy)]
struct Setting<'a> {
    budget: Budget,
    env: &'a EnvReport,
    plan: &'a pin::CpuPlan,
    meter: &'a Meter,
    storage: Option<&'a StorageCtx>,
    contenders: &'a Catalog,
}

fn measure_case(case: &Case, set: &Setting<'_>) -> Option<CaseResult> {
    let Setting {
        budget,
        env,
        plan,
        meter,
        storage,
        contenders,
    } = *set;
    let w = case.workload;
    let m = case.model;
    let budget = w.budget(budget);
    let mut r = CaseResult {
        workload: w.id().to_string(),
        model: m.id.to_string(),
        variant: case
            .point
            .as_ref()
            .and_then(|p| p.variant)
            .map(str::to_string),
        params: case
            .point
            .as_ref()
            .map(|p| p.params.clone())
            .unwrap_or_default(),
        status: Status::Measured,
        reason: None,
        op: w.op().to_string(),
        knobs: serde_json::to_value(m.knobs).unwrap_or_default(),
        // ring::build pins every SQPOLL poller to the plan's helper CPU.
        sqpoll_cpu: m
            .uring_knobs()
            .and_then(|k| k.sqpoll_idle_ms)
            .and(plan.helper),
        warmups: budget.warmups,
        repetitions: 0,
        figures: None,
        warnings: Vec::new(),
    };
    let (point, why_na) = (&case.point, &case.not_applicable);
    let Some(point) = point else {
        r.status = Status::NotApplicable;
        r.reason = why_na.clone();
        return Some(r);
    };
    if let Some(why) = m.availability(env).reason() {
        r.status = Status::Unavailable;
        r.reason = Some(why.to_string());
        return Some(r);
    }
    let mut samples: Vec<Sample> = Vec::with_capacity(budget.repetitions as usize);
    let mut counted = None;
    // Warm-ups, timed repetitions, then one repetition that counts syscalls (an enabled
    // syscall tracepoint slows every syscall, so it never shares a repetition with timing).
    let total = budget.warmups + budget.repetitions + 1;
    for rep in 0..total {
        if stop_requested() {
            return None;
        }
        let counting = rep == total - 1;
        let ctx = Ctx {
            ops: budget.ops,
            warm_ops: budget.warm_ops,
            plan,
            meter,
            count_syscalls: counting,
            storage,
            contenders,
            offered_rate: None,
        };
        match w.run_once(&ctx, m, point) {
            Ok(s) if counting => counted = Some(s),
            Ok(s) if rep >= budget.warmups => samples.push(s),
            Ok(_) => {}
            Err(e) => {
                let (status, reason) = match e {
                    CaseError::Unavailable(why) => (Status::Unavailable, why),
                    CaseError::NotApplicable(why) => (Status::NotApplicable, why),
                    CaseError::Failed(e) => (Status::Failed, format!("{e:#}")),
                };
                r.status = status;
                r.reason = Some(reason);
                return Some(r);
            }
        }
    }
    r.repetitions = samples.len() as u32;
    let f = stats::summarize(&samples, counted.as_ref());
    if f.run_p50_ns.rel_mad() > HIGH_SPREAD {
        r.warnings.push(Warning::HighSpread);
    }
    // Workloads that drive a server flag these per repetition in their counters.
    if f.counters.get("shared_cpus") > 0 {
        r.warnings.push(Warning::SharedCpus);
    }
    if f.counters.get("client_bound") > 0 {
        r.warnings.push(Warning::ClientBound);
    }
    if f.counters.get("both_saturated") > 0 {
        r.warnings.push(Warning::BothSaturated);
    }
    if f.counters.get(crate::measure::CPU_OVER_ALLOWED_NS) > 0 {
        r.warnings.push(Warning::CpuOverAllowed);
    }
    match agreement(&f.counters, f.ops_per_sec.median, samples.len() as u64) {
        Some(Agreement::WrkBound) => r.warnings.push(Warning::WrkBound),
        Some(Agreement::Disagrees) => r.warnings.push(Warning::LoadgenDisagrees),
        Some(Agreement::Agrees) | None => {}
    }
    r.figures = Some(f);
    Some(r)
}
