//! The runner: for each case, warm-up repetitions, then measured repetitions (each a fresh
//! setup), statistics, and an atomic save of the results after every case. Ctrl-C stops after
//! the repetition in progress and keeps every finished case (`"finished": false`); a second
//! Ctrl-C stops at once, keeping what was saved.

use crate::crosscheck::wrk::{agreement, Agreement};
use crate::env::EnvReport;
use crate::error::CaseError;
use crate::measure::{pin, Meter, Sample};
use crate::model::Catalog;
use crate::plan::{Budget, Case};
use crate::results::schema::{CaseResult, RunResults, Status, Warning};
use crate::results::store::Store;
use crate::stats::{self, summary::HIGH_SPREAD};
use crate::ui::Observer;
use crate::workload::storage::StorageCtx;
use crate::workload::Ctx;
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::time::Duration;

static STOP: AtomicBool = AtomicBool::new(false);

/// Signals (SIGINT/SIGTERM) received so far.
static SIGNALS: AtomicU32 = AtomicU32::new(0);

/// Write end of the pipe that wakes the abort thread (-1: none).
static ABORT_FD: AtomicI32 = AtomicI32::new(-1);

/// How long the abort thread's work (saying what was kept, rendering the report) may take
/// before the process exits anyway.
pub const ABORT_WITHIN: Duration = Duration::from_secs(10);

/// First signal: request a clean stop (and end a running fio job, which may have been sent the
/// signal only through us). Second: remove the storage work directory and wake the abort
/// thread, which says what was kept, renders the report and exits 130; the run's own thread
/// saves nothing more. Third (or a second with no abort thread): exit now. Async-signal-safe
/// calls only.
extern "C" fn on_sigint(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
    crate::crosscheck::fio::stop_child();
    let n = SIGNALS.fetch_add(1, Ordering::SeqCst);
    if n == 0 {
        return;
    }
    crate::workload::storage::remove_work_dir_now();
    let fd = ABORT_FD.load(Ordering::SeqCst);
    if n == 1 && fd >= 0 {
        let b = 1u8;
        // SAFETY: write(2) of one byte from the stack to our pipe: async-signal-safe.
        if unsafe { libc::write(fd, (&b as *const u8).cast(), 1) } == 1 {
            return;
        }
    }
    // SAFETY: _exit is async-signal-safe; 130 = interrupted, as on a clean stop.
    unsafe { libc::_exit(130) };
}

/// What the abort thread does on a second signal before the process exits 130 (say what was
/// kept and where, render the report), bounded by [`ABORT_WITHIN`].
pub type OnAbort = Box<dyn FnOnce() + Send>;

/// Makes SIGINT and SIGTERM request a clean stop instead of killing the process. A second
/// signal (either) ends it without waiting for the repetition in progress: the storage work
/// directory is removed, `on_abort` runs on a thread of its own, and the process exits 130. A
/// third ends it at once.
pub fn install_stop_handler(on_abort: Option<OnAbort>) {
    if let Some(f) = on_abort {
        if let Ok((r, w)) = crate::child::pipe_cloexec() {
            let spawned = std::thread::Builder::new()
                .name("abort".into())
                .spawn(move || abort_thread(r, f));
            if spawned.is_ok() {
                ABORT_FD.store(w.into_raw_fd(), Ordering::SeqCst);
            }
        }
    }
    // SAFETY: the handler makes only async-signal-safe calls (atomics, kill, write, the raw
    // syscalls of `remove_work_dir_now`, _exit).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigint as *const () as usize;
        sa.sa_flags = 0;
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

fn abort_thread(wake: OwnedFd, f: OnAbort) {
    let mut b = 0u8;
    loop {
        // SAFETY: read(2) of one byte into a stack variable from our pipe.
        let n = unsafe { libc::read(wake.as_raw_fd(), (&mut b as *mut u8).cast(), 1) };
        if n == 1 {
            break;
        }
        if n == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return;
        }
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let _ = std::thread::Builder::new()
        .name("abort-report".into())
        .spawn(move || {
            f();
            let _ = tx.send(());
        });
    let _ = rx.recv_timeout(ABORT_WITHIN);
    crate::workload::storage::remove_work_dir_now();
    std::process::exit(130);
}

/// True once Ctrl-C was pressed.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// True once a second signal came: the process is about to exit; save nothing more.
pub fn aborting() -> bool {
    SIGNALS.load(Ordering::SeqCst) >= 2
}

/// How the run ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Finished,
    Interrupted,
}

/// Measures every case in order, appending results to `run` and saving after each (the
/// storage suite's work directory when storage workloads are selected; the run's external
/// contenders for the `ext:` models).
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
