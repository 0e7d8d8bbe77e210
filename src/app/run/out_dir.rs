//! The run's output directory: its default name, and an earlier run's files there, refused
//! without `--force` and removed with it (only the files a run writes).

use super::utc_stamp;
use crate::error::InputError;
use std::path::{Path, PathBuf};

/// Refuses `--out DIR` when DIR holds the results.json of an earlier run, unless `force`.
pub(super) fn refuse_earlier_run(dir: &Path, force: bool) -> Result<(), InputError> {
    if force || std::fs::symlink_metadata(dir.join(RESULTS)).is_err() {
        return Ok(());
    }
    Err(InputError::BadValue {
        flag: "--out",
        given: dir.display().to_string(),
        valid: "holds the results.json of an earlier run; pass --force to replace that run (its \
                results, report and charts are removed first), or choose another directory"
            .into(),
    })
}

/// What a run writes in its directory: removed by `--force` before a new run writes there.
pub(super) const RESULTS: &str = "results.json";
const REPORTS: [&str; 2] = ["report.md", "report.html"];

/// Removes an earlier run's results.json, report and chart SVGs from `dir` (nothing else).
pub(super) fn clear_earlier_run(dir: &Path) -> Result<(), InputError> {
    let bad = |e: std::io::Error| InputError::OutputDir {
        dir: dir.display().to_string(),
        why: format!("cannot remove the earlier run: {e}"),
    };
    let gone = |r: std::io::Result<()>| match r {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(bad(e)),
        _ => Ok(()),
    };
    for f in std::iter::once(RESULTS).chain(REPORTS) {
        gone(std::fs::remove_file(dir.join(f)))?;
    }
    let charts = dir.join("charts");
    // Only a real directory's SVGs: a link named charts is not followed.
    let real = std::fs::symlink_metadata(&charts).is_ok_and(|m| m.file_type().is_dir());
    if let Some(entries) = real.then(|| std::fs::read_dir(&charts).ok()).flatten() {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().ends_with(".svg") {
                gone(std::fs::remove_file(e.path()))?;
            }
        }
        // Left when it holds something else.
        let _ = std::fs::remove_dir(&charts);
    }
    Ok(())
}

/// `ringside-results/<UTC timestamp>`, or `<timestamp>-2`, `-3`, ... when a run started in the
/// same second already wrote there.
pub(super) fn fresh_default_dir(started: u64) -> PathBuf {
    let base = PathBuf::from("ringside-results").join(utc_stamp(started).replace(':', "-"));
    let mut dir = base.clone();
    let mut n = 2;
    while std::fs::symlink_metadata(dir.join(RESULTS)).is_ok() {
        dir = base.with_file_name(format!(
            "{}-{n}",
            base.file_name().unwrap_or_default().to_string_lossy()
        ));
        n += 1;
    }
    dir
}
