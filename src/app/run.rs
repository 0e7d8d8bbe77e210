//! `ringside run`: validate the selection, probe the machine, sweep what a killed run left,
//! measure, save, print; exit 1 when a cell failed.
//!
//! In that order: `Request::of` checks what was asked and makes the cells, `prepare` gets the
//! output directory and the machine ready, the runner measures, and `write_and_say` writes the
//! report and says how it went. run/dry_run.rs words `--dry-run`; run/out_dir.rs names the
//! output directory and deals with an earlier run's files in it.

mod dry_run;
mod out_dir;

use dry_run::dry_run_text;
use out_dir::{clear_earlier_run, fresh_default_dir, refuse_earlier_run, RESULTS};

use crate::cli::RunArgs;
use crate::error::InputError;
use crate::measure::{clock, pin, topology};
use crate::model::contender::CONTENDER_PROTOCOLS;
use crate::model::Catalog;
use crate::plan::{self, Case, Profile};
use crate::registry;
use crate::results::schema::{CaseResult, RunResults, Status, Version, SCHEMA_ID, SCHEMA_VERSION};
use crate::results::store::{lock_out, LockRefused, OutLock, Store};
use crate::runner::{self, Outcome};
use crate::ui::{Observer, Progress, Silent};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

pub fn run(a: RunArgs) -> anyhow::Result<i32> {
    // Everything the user typed is checked before anything is measured.
    let Request {
        profile,
        budget,
        workloads,
        contenders,
        plan,
        load_engine,
        overrides,
        explain,
        mut cases,
    } = Request::of(&a)?;
    if a.dry_run {
        super::stdout::print(&dry_run_text(profile, budget, &cases))?;
        return Ok(0);
    }
    // Other hosts (--server-host, --load-host): parsed, version-checked and probed before
    // anything runs.
    let (hosts, remote) = super::remote::setup(&a, &workloads)?;
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let Prepared {
        _out_lock,
        storage,
        store,
    } = prepare(&a, profile, &workloads, &mut cases, started)?;

    let env = crate::env::probe();
    let plan_for_check = plan.clone();
    let mut results = RunResults {
        schema: SCHEMA_ID.to_string(),
        schema_version: SCHEMA_VERSION,
        ringside: Version::current(),
        command: std::env::args().collect(),
        started_utc: utc_stamp(started),
        finished: false,
        profile: profile.name().to_string(),
        plan,
        timer: clock::calibration().clone(),
        env: env.clone(),
        cases: Vec::new(),
        hosts,
        rounds: Vec::new(),
        before_run: Some(quiet_check(&results_plan_cpus(&plan_for_check))),
        workloads: workloads
            .iter()
            .map(|w| (w.id().to_string(), (&w.facts()).into()))
            .collect(),
        overrides: overrides
            .0
            .iter()
            .map(|o| (o.knob.param().to_string(), o.values.clone()))
            .collect(),
        answer: None,
        load_engine: Some(load_engine),
        explain_models: explain.clone().unwrap_or_default(),
    };
    if let Some(b) = &results.before_run {
        if let Some(line) = noise_line(b) {
            eprintln!("ringside: {line}");
        }
    }
    store.save(&results)?;
    let progress;
    let obs: &dyn Observer = if a.quiet {
        &Silent
    } else {
        progress = Progress::new();
        &progress
    };
    let outcome = runner::run_with(
        &cases,
        budget,
        &env,
        &mut results,
        &store,
        obs,
        storage.as_ref(),
        &contenders,
        remote.as_ref(),
        a.crosscheck.then_some(profile),
        explain.as_deref(),
    )?;
    if crate::shutdown::aborting() {
        // A second signal: the abort thread reports what was saved and ends the process.
        loop {
            std::thread::park();
        }
    }
    drop(storage); // removes the storage work directory

    // Analysed once: the answer saved with the figures is the one the reports word.
    let analysis = crate::analysis::Analysis::of(&results);
    if outcome == runner::Outcome::Finished {
        // What the run answered at its equal-load points, kept with its figures.
        results.answer = Some(analysis.answer.clone());
        store.save(&results)?;
    }
    write_and_say(&a, &results, &analysis, &store, outcome)
}

/// What `run` was asked to measure, checked against the registry, the machine and itself
/// before anything is measured: the cells, once (what `--dry-run` prints is what the run
/// measures), and what they are measured with.
struct Request {
    profile: Profile,
    /// The profile's, with `--runs` as given.
    budget: plan::Budget,
    workloads: Vec<&'static dyn crate::workload::Workload>,
    /// The external contenders (`--contender`), which joined the models.
    contenders: Catalog,
    plan: pin::CpuPlan,
    load_engine: crate::load::Engine,
    /// The knob flags (`--conns`, `--duration`, ...), applied to the cases already.
    overrides: plan::Overrides,
    /// `--explain`: `None` not given, empty alone, else the models it named (each one a
    /// model of the run's cells).
    explain: Option<Vec<String>>,
    cases: Vec<Case>,
}

impl Request {
    fn of(a: &RunArgs) -> anyhow::Result<Request> {
        let profile: Profile = a.profile.into();
        let (explain, items) = explain_and_items(a);
        let workloads = plan::select_workloads(&items)?;
        // A suite named runs its default workloads: the ones it leaves out are named.
        for (suite, runs, left) in plan::left_out(&items) {
            eprintln!(
                "ringside: {suite} runs {}; not {} (name {} to run {})",
                runs.join(", "),
                left.join(", "),
                if left.len() == 1 { "it" } else { "them" },
                if left.len() == 1 { "it" } else { "them" },
            );
        }
        // External contenders join the models they were given for (they are skipped by the
        // suites that cannot measure them): every one, or those `--models` names as ext:NAME.
        let contenders = Catalog::from_specs(&a.contenders)?;
        let models = plan::select_models_with(a.models.as_deref(), &contenders)?;
        let models_named = plan::models_named(a.models.as_deref());
        let mut budget = profile.budget();
        if let Some(n) = a.runs {
            if !(1..=1000).contains(&n) {
                return Err(InputError::BadRuns(n).into());
            }
            budget.repetitions = n as u32;
            budget.runs_given = true;
        }
        let plan = cpu_plan(a)?;
        let load_engine = crate::load::Engine::from(a.load_engine)
            .check()
            .map_err(|e| InputError::BadValue {
                flag: "--load-engine",
                given: crate::load::Engine::from(a.load_engine).name().to_string(),
                valid: format!("epoll here ({e})"),
            })?;
        // A driver on one engine only (the UDP driver: epoll) refuses the other: never ignored.
        if let Some(w) = workloads
            .iter()
            .find(|w| !w.load_engines().contains(&load_engine))
        {
            let valid: Vec<&str> = w.load_engines().iter().map(|e| e.name()).collect();
            return Err(InputError::BadValue {
                flag: "--load-engine",
                given: load_engine.name().to_string(),
                valid: format!("{}'s load runs on: {}", w.id(), valid.join(", ")),
            }
            .into());
        }
        // The knob flags: each value in its range, each knob taken by every selected workload.
        let overrides = plan::Overrides::parse(&a.knobs())?;
        overrides.check(&workloads, profile, &plan)?;
        let cases = keep_contenders_to_their_protocol(
            overrides.apply(plan::expand(
                &workloads,
                &models,
                models_named,
                profile,
                &plan,
            ))?,
            &contenders,
            models_named,
        );
        let explain = explain.map(|e| check_explain(e, &cases)).transpose()?;
        Ok(Request {
            profile,
            budget,
            workloads,
            contenders,
            plan,
            load_engine,
            overrides,
            explain,
            cases,
        })
    }
}

/// `--explain`'s list and the items to run. clap gives a bare `--explain` the word after it:
/// a suite or workload there (`run --explain echo`) is an item to run, put before the others
/// as it was typed, not a model. `all` names every model (as `--explain` alone).
fn explain_and_items(a: &RunArgs) -> (Option<Vec<String>>, Vec<String>) {
    let Some(list) = &a.explain else {
        return (None, a.items.clone());
    };
    let is_item = |x: &String| {
        !registry::MODELS.iter().any(|m| m.id == x)
            && !x.starts_with(plan::CONTENDER_PREFIX)
            && plan::select_workloads(std::slice::from_ref(x)).is_ok()
    };
    let (items, models): (Vec<String>, Vec<String>) = list
        .iter()
        .filter(|x| !x.is_empty())
        .cloned()
        .partition(is_item);
    let mut names: Vec<String> = Vec::new();
    for m in models.into_iter().filter(|m| m != plan::ALL_MODELS) {
        if !names.contains(&m) {
            names.push(m);
        }
    }
    (
        Some(names),
        items.into_iter().chain(a.items.clone()).collect(),
    )
}

/// `--explain`'s models, each a model of a measured cell of the run, or the error (exit 2)
/// naming the valid ones.
fn check_explain(names: Vec<String>, cases: &[Case]) -> Result<Vec<String>, InputError> {
    let mut valid: Vec<&str> = Vec::new();
    for c in cases.iter().filter(|c| c.point.is_some()) {
        if !valid.contains(&c.model.id) {
            valid.push(c.model.id);
        }
    }
    match names.iter().find(|n| !valid.contains(&n.as_str())) {
        Some(bad) => Err(InputError::BadValue {
            flag: "--explain",
            given: bad.clone(),
            valid: format!("not a model this run measures; valid: {}", valid.join(", ")),
        }),
        None => Ok(names),
    }
}

/// What a run holds while it measures: the lock on its output directory, the storage work
/// directory (removed when dropped), and the store results.json is saved through.
struct Prepared {
    _out_lock: OutLock,
    storage: Option<crate::workload::storage::StorageCtx>,
    store: Store,
}

/// Gets the machine and the output directory ready: `--out` locked and checked (an earlier
/// run's results refused without `--force`), other runs named, the stop handler installed,
/// the storage work directory made, what a killed run left swept, an earlier run cleared with
/// `--force`, and the store created; each storage case given the facts of the work directory
/// it runs in.
fn prepare(
    a: &RunArgs,
    profile: Profile,
    workloads: &[&'static dyn crate::workload::Workload],
    cases: &mut [Case],
    started: u64,
) -> anyhow::Result<Prepared> {
    let dir = match &a.out {
        Some(d) => d.clone(),
        None => fresh_default_dir(started),
    };
    // Held for the run's life, before an earlier run is looked at or cleared: two runs on one
    // --out would clear and overwrite each other's files.
    let out_lock = lock_out(&dir).map_err(|r| match r {
        LockRefused::Held(why) => InputError::BadValue {
            flag: "--out",
            given: dir.display().to_string(),
            valid: why,
        },
        LockRefused::Unusable(why) => InputError::OutputDir {
            dir: dir.display().to_string(),
            why,
        },
    })?;
    if a.out.is_some() {
        refuse_earlier_run(&dir, a.force)?;
    }
    for (pid, what) in other_runs() {
        eprintln!(
            "ringside: warning: another ringside run (pid {pid}: {what}) is measuring on this \
             machine: each disturbs the other's figures (the cells it disturbs are marked)"
        );
    }
    let storage_ids: Vec<&str> = workloads
        .iter()
        .filter(|w| w.kind() == crate::workload::Kind::Storage)
        .map(|w| w.id())
        .collect();
    let storage_parent = match &a.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir()?,
    };
    // Before the storage work directory exists: a signal from here on removes it. A second
    // signal says what was kept and renders the report from it (see `on_abort`).
    crate::shutdown::install_stop_handler(Some(on_abort(dir.clone())));
    let storage = if storage_ids.is_empty() {
        None
    } else {
        let need = crate::workload::storage::space_needed(&storage_ids, profile);
        Some(crate::workload::storage::StorageCtx::prepare(
            &storage_parent,
            need,
            a.drop_caches,
        )?)
    };
    // What a ringside killed before it could clean up left: stopped or removed, and named.
    for said in crate::child::sweep_stale().into_iter().chain(
        crate::workload::storage::sweep_stale_work_dirs(&storage_parent)
            .into_iter()
            .chain(crate::crosscheck::perf::sweep_stale_dirs(
                &std::env::temp_dir(),
            ))
            .chain(crate::measure::memory::sweep_stale())
            .chain(crate::child::cgroup::sweep_stale()),
    ) {
        eprintln!("ringside: {said}");
    }
    if a.force {
        clear_earlier_run(&dir)?;
    }
    let store = Store::create(&dir).map_err(|e| InputError::OutputDir {
        dir: dir.display().to_string(),
        why: format!("{e:#}"),
    })?;
    // Each storage cell records the facts of the work directory it ran in (not params: no
    // sweep varies them).
    if let Some(st) = &storage {
        let storage_cases = cases
            .iter_mut()
            .filter(|c| storage_ids.contains(&c.workload.id()));
        for p in storage_cases.filter_map(|c| c.point.as_mut()) {
            p.facts.0.extend(st.facts().0.clone());
        }
    }
    Ok(Prepared {
        _out_lock: out_lock,
        storage,
        store,
    })
}

/// The run's end: the report written beside results.json, `--format` to stdout, where both
/// are, the failed cells named, and the exit code (0 finished, 1 a cell failed, 130
/// interrupted).
fn write_and_say(
    a: &RunArgs,
    results: &RunResults,
    analysis: &crate::analysis::Analysis,
    store: &Store,
    outcome: Outcome,
) -> anyhow::Result<i32> {
    {
        let _one_writer = lock(&REPORTING);
        // A full disk here loses no measurement: results.json is saved; say so, and how to
        // render it once there is room.
        anyhow::Context::with_context(
            super::report::write_all(results, analysis, &store.dir),
            || {
                format!(
                    "results.json was saved ({} cells, {}), but the report could not be \
                     written; render it when there is room with `ringside report {}`",
                    results.cases.len(),
                    store.results_path().display(),
                    store.results_path().display()
                )
            },
        )?;
    }
    let format = a.format;
    // A closed stdout ends printing quietly; the verdict below still stands.
    super::stdout::write(&format.exporter().render(results, analysis)?)?;
    eprintln!("results: {}", store.results_path().display());
    eprintln!("report: {}", store.dir.join("report.html").display());
    let failed: Vec<&CaseResult> = results
        .cases
        .iter()
        .filter(|c| c.status == Status::Failed)
        .collect();
    if !failed.is_empty() {
        eprintln!(
            "failed: {} of {} cells (each with its reason in the report); the first:",
            failed.len(),
            results.cases.len()
        );
        for c in failed.iter().take(5) {
            eprintln!(
                "  {} {}{}: {}",
                c.workload,
                c.model,
                params_note(c),
                c.reason.as_deref().unwrap_or("no reason recorded")
            );
        }
    }
    Ok(match outcome {
        Outcome::Finished if failed.is_empty() => 0,
        Outcome::Finished => 1,
        Outcome::Interrupted => {
            eprintln!(
                "interrupted: {} finished cases kept (\"finished\": false)",
                results.cases.len()
            );
            130
        }
    })
}

fn results_plan_cpus(plan: &crate::measure::pin::CpuPlan) -> Vec<u32> {
    crate::measure::disturb::plan_cpus(plan)
}

/// Half a second's look at the plan's CPUs before the run, and other ringside processes.
fn quiet_check(cpus: &[u32]) -> crate::results::schema::NoiseRecord {
    use crate::measure::disturb;
    let d = disturb::look(cpus, std::time::Duration::from_millis(500));
    let mut r = crate::results::schema::NoiseRecord::of(&d);
    r.other_ringside = disturb::other_ringside();
    r
}

/// What the look before the run says, when it says anything: another ringside running, or
/// other programs and steal taking more than the disturbance share of the plan's CPUs.
pub(crate) fn noise_line(b: &crate::results::schema::NoiseRecord) -> Option<String> {
    let mut parts = Vec::new();
    if b.other_ringside > 0 {
        parts.push(format!(
            "{} other ringside process(es) running: they share this run's CPUs, and both runs' \
             figures will move",
            b.other_ringside
        ));
    }
    if b.share > crate::measure::disturb::SHARE {
        parts.push(format!(
            "other programs and steal took {:.0}% of the plan's CPUs in the half second before \
             the run{}: expect disturbed repetitions (re-run once, then warned `disturbed`)",
            b.share * 100.0,
            b.top
                .as_ref()
                .map(|t| format!(" (most: {t})"))
                .unwrap_or_default()
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// ` (conns=50, msg_bytes=64)`: a case's parameters, for a line naming it.
fn params_note(c: &CaseResult) -> String {
    let mut p: Vec<String> = c.params.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if c.equal_load.is_some() {
        p.push(crate::results::EQUAL_LOAD_WORD.to_string());
    }
    if p.is_empty() {
        String::new()
    } else {
        format!(" ({})", p.join(", "))
    }
}

/// Other `ringside run` processes on this machine (pid, their command line): they compete for
/// the CPUs this run measures.
fn other_runs() -> Vec<(u32, String)> {
    let me = std::process::id();
    crate::child::live_pids()
        .into_iter()
        .filter(|&pid| pid != me)
        .filter_map(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let args: Vec<String> = cmd
                .split(|&b| b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            let exe = std::path::Path::new(args.first()?).file_name()?.to_str()?;
            (exe == "ringside" && args.get(1).map(String::as_str) == Some("run"))
                .then(|| (pid, args.join(" ").chars().take(120).collect()))
        })
        .collect()
}

/// A contender given for one protocol (`echo:NAME=...`) takes part in that protocol's suite
/// only: its cases in the other network suite become one not-applicable row per workload when
/// the models were named, and none otherwise (as `plan::expand` does for any model).
fn keep_contenders_to_their_protocol(
    cases: Vec<Case>,
    contenders: &Catalog,
    models_named: bool,
) -> Vec<Case> {
    let mut out: Vec<Case> = Vec::with_capacity(cases.len());
    for c in cases {
        let suite = registry::suite_of(c.workload.id());
        let other = contenders.get(c.model.id).is_some_and(|e| {
            CONTENDER_PROTOCOLS.contains(&suite) && !e.speaks(suite) && c.point.is_some()
        });
        if !other {
            out.push(c);
        } else if models_named
            && !out
                .iter()
                .any(|o| o.workload.id() == c.workload.id() && o.model.id == c.model.id)
        {
            out.push(Case {
                point: None,
                not_applicable: Some("this contender speaks another protocol".into()),
                ..c
            });
        }
    }
    out
}

/// Held while a report is written: the abort thread and the run's own end never write one
/// at the same time.
static REPORTING: Mutex<()> = Mutex::new(());

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// On a second signal (from the abort thread, while the run's thread may be mid-case): says
/// what was kept and where, and renders the report from the results saved so far.
fn on_abort(dir: PathBuf) -> crate::shutdown::OnAbort {
    Box::new(move || {
        let results = dir.join(RESULTS);
        let kept = match super::load_results(&results) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("interrupted again: stopped at once; nothing was saved ({e:#})");
                return;
            }
        };
        eprintln!(
            "interrupted again: stopped at once; {} finished cases kept in {} (\"finished\": \
             false)",
            kept.cases.len(),
            results.display()
        );
        let _one_writer = lock(&REPORTING);
        match super::report::write_all(&kept, &crate::analysis::Analysis::of(&kept), &dir) {
            Ok(_) => eprintln!(
                "report: {} (render it again with `ringside report {}`)",
                dir.join("report.html").display(),
                results.display()
            ),
            Err(e) => eprintln!(
                "no report written ({e:#}); render one with `ringside report {}`",
                results.display()
            ),
        }
    })
}

/// The run's CPU plan: `--cpus A,B` as it always was (A measured, B its helper), else the plan
/// over the machine's topology with `--server-cpus` / `--load-cpus` / `--allow-shared`.
fn cpu_plan(a: &RunArgs) -> Result<pin::CpuPlan, InputError> {
    let online = pin::allowed_cpus();
    if let Some(s) = &a.cpus {
        return Ok(pin::CpuPlan::from_list(&parse_cpus("--cpus", s, &online)?));
    }
    let list = |flag: &'static str, s: &Option<String>| -> Result<Option<Vec<u32>>, InputError> {
        s.as_deref()
            .map(|s| parse_cpus(flag, s, &online).map_err(|e| InputError::BadPlan(e.to_string())))
            .transpose()
    };
    let req = topology::Request {
        server: list("--server-cpus", &a.server_cpus)?,
        load: list("--load-cpus", &a.load_cpus)?,
        allow_shared: a.allow_shared,
    };
    topology::plan(&topology::Topology::read(), &req)
        .map_err(|e| InputError::BadPlan(e.to_string()))
}

/// "1,0" or "0-1": CPUs this process may use, measured thread first (`flag`: the option they
/// came from, named in a refusal; for `--cpus` a CPU listed twice is the measured one and its
/// helper made the same).
pub(crate) fn parse_cpus(
    flag: &'static str,
    s: &str,
    allowed: &[u32],
) -> Result<Vec<u32>, InputError> {
    let bad = |why: String| InputError::BadCpus {
        flag,
        given: s.to_string(),
        why,
    };
    let mut v = Vec::new();
    for part in s.split(',') {
        if part.trim().is_empty() {
            return Err(bad(
                "an empty element (two commas, or one at an end); write e.g. 1,0 or 0-3".into(),
            ));
        }
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let num = |x: &str| {
            x.trim()
                .parse::<u32>()
                .map_err(|_| bad(format!("'{x}' is not a CPU number")))
        };
        let (lo, hi) = (num(lo)?, num(hi)?);
        if hi < lo {
            return Err(bad(format!("range {lo}-{hi} is empty")));
        }
        for c in lo..=hi {
            if !allowed.contains(&c) {
                let list: Vec<String> = allowed.iter().map(|c| c.to_string()).collect();
                return Err(bad(format!(
                    "CPU {c} is not available; available: {}",
                    list.join(",")
                )));
            }
            if v.contains(&c) {
                return Err(bad(if flag == "--cpus" {
                    format!("CPU {c} is listed twice; the measured CPU and its helper must differ")
                } else {
                    format!("CPU {c} is listed twice; name each CPU once")
                }));
            }
            v.push(c);
        }
    }
    if v.is_empty() {
        return Err(bad("no CPU given".into()));
    }
    Ok(v)
}

/// Seconds since the epoch as RFC 3339 UTC ("2026-11-21T23:08:00Z").
pub(crate) fn utc_stamp(secs: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    humantime::format_rfc3339_seconds(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_stamp(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_stamp(1_795_302_480), "2026-11-21T23:08:00Z");
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpus("--cpus", "1,0", &[0, 1]).unwrap(), vec![1, 0]);
        assert_eq!(parse_cpus("--cpus", "0-1", &[0, 1]).unwrap(), vec![0, 1]);
        let e = parse_cpus("--cpus", "7", &[0, 1]).unwrap_err().to_string();
        assert!(e.contains("'7'") && e.contains("available: 0,1"), "{e}");
        assert!(parse_cpus("--cpus", "x", &[0]).is_err());
        // Issue 28 item 17: an empty element is refused, and each flag is named as given.
        for empty in ["1,,0", "1,", ",1", ""] {
            let e = parse_cpus("--server-cpus", empty, &[0, 1])
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("--server-cpus") && e.contains("empty"), "{e}");
        }
        let e = parse_cpus("--server-cpus", "0,0", &[0, 1])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--server-cpus '0,0'") && !e.contains("helper"),
            "{e}"
        );
        for dup in ["0,0", "0,1,1", "0-1,1", "1,0-1"] {
            let e = parse_cpus("--cpus", dup, &[0, 1]).unwrap_err().to_string();
            assert!(
                e.contains(&format!("'{dup}'")) && e.contains("must differ"),
                "{e}"
            );
        }
    }
}
