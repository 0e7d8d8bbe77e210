//! `ringside compare BASE.json NEW.json [--threshold PCT] [--allow-untested]`: per common
//! cell, the change in p50, ops/s, CPU per op and p99 with its significance (corrected over
//! every test), whether the machine explains it, what each test could see, the cells only
//! one run has, and what differs between the two environments. It opens and ends with the
//! verdict ([`crate::analysis::compare::Comparison::gate`]) and exits by it: 0 PASS (nothing
//! regressed and every compared cell was tested with power to see the threshold), 1
//! REGRESSION (a significant regression beyond the threshold, or a measured cell that
//! failed), 3 INCONCLUSIVE (no regression found, but cells it could not test: disturbed,
//! offered rates apart, too few repetitions, noise too high for the threshold, in one file
//! only; or an unfinished NEW, or nothing compared). `--allow-untested` passes what could not
//! be tested, never an unfinished NEW or a comparison of nothing. 2 for a bad file or
//! threshold.
//!
//! `ringside compare A B C ... [--out DIR]`: the first file against each later one, judged
//! the same way but with every pair's tests one correction family
//! (`analysis::compare::compare_many`), printed as one matrix: a row per cell with each run's
//! figures and their ratios to A's, each later run's verdict, the environment facts that
//! differ, and the gate of every pair; it exits by the worst pair's verdict (1, else 3, else
//! 0). A file that shares no cell with the first is bad input (exit 2), two files or more;
//! files that share cells but no measured one are INCONCLUSIVE (3). `--out DIR` (two
//! files or more) writes the matrix there as compare.html (a chart per workload and figure)
//! and compare.md, atomically, each opening with the verdict; without it nothing is written.

use crate::analysis::compare::{compare, compare_many, Matrix, MAX_RUNS};
use crate::results::{store, RunResults};
use std::path::{Path, PathBuf};

/// `ringside compare FILE FILE... [--out DIR]`: two files print the pair's detailed table
/// and gate ([`two`]); more print the matrix ([`many`]). With `--out` the runs side by side
/// are also written there as compare.html and compare.md.
pub fn run(
    files: &[PathBuf],
    threshold: f64,
    allow_untested: bool,
    out: Option<&Path>,
) -> anyhow::Result<i32> {
    if !threshold.is_finite() || threshold < 0.0 {
        eprintln!("error: --threshold {threshold} is not a percentage >= 0 (e.g. 5)");
        return Ok(2);
    }
    let Some(runs) = load_all(files) else {
        return Ok(2);
    };
    // Files that share no cell are bad input, two files or more.
    let refs: Vec<(String, &RunResults)> = runs.iter().map(|(n, r)| (n.clone(), r)).collect();
    if let Err(why) = crate::analysis::compare::shares_cells(&refs) {
        eprintln!("error: {why}");
        return Ok(2);
    }
    if runs.len() == 2 && out.is_none() {
        return two(
            &files[0],
            &files[1],
            (&runs[0].1, &runs[1].1),
            threshold,
            allow_untested,
        );
    }
    let mut m = match matrix(&runs, threshold) {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    m.allow_untested = allow_untested;
    if let Some(dir) = out {
        match write_page(&m, dir) {
            Ok(written) => {
                for p in written {
                    eprintln!("wrote {}", p.display());
                }
            }
            Err(code) => return Ok(code),
        }
    }
    if runs.len() == 2 {
        return two(
            &files[0],
            &files[1],
            (&runs[0].1, &runs[1].1),
            threshold,
            allow_untested,
        );
    }
    super::stdout::print(&crate::export::compare::term(&m))?;
    Ok(m.outcome().exit_code())
}

/// Every file loaded, each with the name it was given; `None` after printing why one cannot
/// be (bad input, exit 2).
pub(crate) fn load_all(files: &[PathBuf]) -> Option<Vec<(String, RunResults)>> {
    if files.len() > MAX_RUNS {
        eprintln!(
            "error: {} results files given: at most {MAX_RUNS} are compared at once (named A              to Z)",
            files.len()
        );
        return None;
    }
    let mut runs = Vec::with_capacity(files.len());
    for f in files {
        match super::load_results(f) {
            Ok(r) => runs.push((f.display().to_string(), r)),
            Err(e) => {
                eprintln!("error: {e:#}");
                return None;
            }
        }
    }
    Some(runs)
}

/// The matrix of the loaded runs, or exit 2 after saying why there is none.
pub(crate) fn matrix(runs: &[(String, RunResults)], threshold: f64) -> Result<Matrix, i32> {
    let refs: Vec<(String, &RunResults)> = runs.iter().map(|(n, r)| (n.clone(), r)).collect();
    compare_many(&refs, threshold).map_err(|why| {
        eprintln!("error: {why}");
        2
    })
}

/// Writes compare.html and compare.md into `dir` (made if missing), each atomically; a
/// directory that cannot be made is bad input (exit 2).
pub(crate) fn write_page(m: &Matrix, dir: &Path) -> Result<Vec<PathBuf>, i32> {
    if let Err(why) = crate::results::store::make_out_dir(dir) {
        eprintln!(
            "error: {}",
            crate::error::InputError::OutputDir {
                dir: dir.display().to_string(),
                why,
            }
        );
        return Err(2);
    }
    let html = match crate::export::html::compare::page(m) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: cannot draw the page: {e:#}");
            return Err(1);
        }
    };
    let mut written = Vec::new();
    for (name, bytes) in [
        ("compare.html", html),
        (
            "compare.md",
            crate::export::compare::markdown(m).into_bytes(),
        ),
    ] {
        let path = dir.join(name);
        if let Err(e) = store::write_via_temp(&path, &bytes, false) {
            eprintln!("error: cannot write '{}': {e:#}", path.display());
            return Err(1);
        }
        written.push(path);
    }
    Ok(written)
}

/// Two files: the pair's verdict, detailed table, noise and probes, and gate; its exit
/// status is the verdict's.
fn two(
    base: &Path,
    new: &Path,
    (b, n): (&RunResults, &RunResults),
    threshold: f64,
    allow_untested: bool,
) -> anyhow::Result<i32> {
    let cmp = compare(b, n, threshold);
    let gate = cmp.gate(threshold, allow_untested);
    let names = (base.display().to_string(), new.display().to_string());
    super::stdout::print(&crate::export::compare::pair_term(
        &cmp,
        &gate,
        (&names.0, &names.1),
    ))?;
    Ok(gate.outcome.exit_code())
}
