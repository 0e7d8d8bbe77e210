//! `ringside run`: validate the selection, probe the machine, measure, save, print.

use crate::cli::RunArgs;
use crate::error::InputError;
use crate::export::Format;
use crate::measure::{clock, pin};
use crate::plan::{self, Profile};
use crate::results::schema::{RunResults, Version, SCHEMA_VERSION};
use crate::results::store::Store;
use crate::runner::{self, Outcome};
use crate::ui::{Observer, Progress, Silent};
use std::io::Write;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

pub fn run(a: RunArgs) -> anyhow::Result<i32> {
    // Everything the user typed is checked before anything is measured.
    let profile: Profile = a.profile.into();
    let workloads = plan::select_workloads(&a.items)?;
    let mut models = plan::select_models(a.models.as_deref())?;
    // External contenders join the models they were given for (they are skipped by the suites
    // that cannot measure them).
    for spec in &a.contenders {
        let ext = crate::peer::external::External::parse(spec)?;
        let m = ext.register();
        if !models.iter().any(|x| x.id == m.id) {
            models.push(m);
        }
    }
    let mut budget = profile.budget();
    if let Some(n) = a.runs {
        if !(1..=1000).contains(&n) {
            return Err(InputError::BadRuns(n).into());
        }
        budget.repetitions = n;
        budget.runs_given = true;
    }
    let online = pin::allowed_cpus();
    let plan = match &a.cpus {
        Some(s) => pin::CpuPlan::from_list(&parse_cpus(s, &online)?),
        None => pin::CpuPlan::default_for(&online),
    };
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let dir = a.out.clone().unwrap_or_else(|| {
        PathBuf::from("ringside-results").join(utc_stamp(started).replace(':', "-"))
    });
    let store = Store::create(&dir).map_err(|e| InputError::OutputDir {
        dir: dir.display().to_string(),
        why: format!("{e:#}"),
    })?;
    // Before the storage work directory exists: a signal from here on removes it.
    runner::install_stop_handler();
    let storage_ids: Vec<&str> = workloads
        .iter()
        .map(|w| w.id())
        .filter(|id| id.starts_with("storage."))
        .collect();
    let storage = if storage_ids.is_empty() {
        None
    } else {
        let parent = match &a.dir {
            Some(d) => d.clone(),
            None => std::env::current_dir()?,
        };
        let need = crate::workload::storage::space_needed(&storage_ids, profile);
        Some(crate::workload::storage::StorageCtx::prepare(
            &parent,
            need,
            a.drop_caches,
        )?)
    };
    let cases = plan::expand(&workloads, &models, a.models.is_some(), profile);

    let env = crate::env::probe();
    let mut results = RunResults {
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
    };
    store.save(&results)?;
    let progress;
    let obs: &dyn Observer = if a.quiet {
        &Silent
    } else {
        progress = Progress::new();
        &progress
    };
    let mut outcome = runner::run_with(
        &cases,
        budget,
        &env,
        &mut results,
        &store,
        obs,
        storage.as_ref(),
    )?;
    if a.crosscheck && outcome == Outcome::Finished {
        if let Some(st) = storage.as_ref() {
            let plan = results.plan.clone();
            let rows = crate::crosscheck::fio::randread_rows(&cases, st, profile, &plan);
            results.cases.extend(rows);
            if runner::stop_requested() {
                // Ctrl-C during the cross-check: the jobs that finished are kept.
                outcome = Outcome::Interrupted;
                results.finished = false;
            }
            store.save(&results)?;
        }
    }
    drop(storage); // removes the storage work directory

    super::report::write_all(&results, &store.dir)?;
    let format: Format = a.format.into();
    std::io::stdout().write_all(&format.exporter().render(&results)?)?;
    eprintln!("results: {}", store.results_path().display());
    eprintln!("report: {}", store.dir.join("report.html").display());
    Ok(match outcome {
        Outcome::Finished => 0,
        Outcome::Interrupted => {
            eprintln!(
                "interrupted: {} finished cases kept (\"finished\": false)",
                results.cases.len()
            );
            130
        }
    })
}

/// "1,0" or "0-1": CPUs this process may use, measured thread first.
pub(crate) fn parse_cpus(s: &str, allowed: &[u32]) -> Result<Vec<u32>, InputError> {
    let bad = |why: String| InputError::BadCpus {
        given: s.to_string(),
        why,
    };
    let mut v = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
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
            if !v.contains(&c) {
                v.push(c);
            }
        }
    }
    if v.is_empty() {
        return Err(bad("no CPU given".into()));
    }
    Ok(v)
}

/// Seconds since the epoch as RFC 3339 UTC ("2026-11-21T23:08:00Z").
pub fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
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
        assert_eq!(parse_cpus("1,0", &[0, 1]).unwrap(), vec![1, 0]);
        assert_eq!(parse_cpus("0-1", &[0, 1]).unwrap(), vec![0, 1]);
        let e = parse_cpus("7", &[0, 1]).unwrap_err().to_string();
        assert!(e.contains("'7'") && e.contains("available: 0,1"), "{e}");
        assert!(parse_cpus("x", &[0]).is_err());
    }
}
