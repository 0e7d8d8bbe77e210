//! `ringside report`: re-render report.md, report.html and the chart SVGs from a saved
//! results file alone (also an unfinished one), and print the chosen format on stdout. Of
//! several files: the runs side by side, the page `compare --out` writes.

use crate::analysis::Analysis;
use crate::export::markdown::chart_file;
use crate::export::{charts, html, waterfall, Format};
use crate::results::store;
use crate::results::RunResults;
use anyhow::Context;
use std::path::{Path, PathBuf};

/// Writes a derived file (re-renderable from results.json at any time) via a temp file and a
/// rename (`store::write_via_temp`: never through a planted link), so a reader never sees
/// half of it; no fsync: the results file is the durable one.
fn write_derived(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    store::write_via_temp(path, bytes, false)
        .with_context(|| format!("cannot write '{}'", path.display()))
}

/// Writes report.md, report.html and charts/*.svg into `dir`; returns the paths written.
pub(crate) fn write_all(
    run: &RunResults,
    a: &Analysis,
    dir: &Path,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let charts_dir = dir.join("charts");
    let charts = charts::build(run, a);
    let waterfalls: Vec<_> = a
        .workloads
        .iter()
        .flat_map(waterfall::for_workload)
        .collect();
    if !charts.is_empty() || !waterfalls.is_empty() {
        store::real_dir(&charts_dir)
            .with_context(|| format!("cannot create '{}'", charts_dir.display()))?;
    }
    for c in &charts {
        let path = dir.join(chart_file(&c.id));
        let svg = html::svg::draw(c, false)?;
        write_derived(&path, svg.as_bytes())?;
        written.push(path);
    }
    for w in &waterfalls {
        let path = dir.join(chart_file(&w.id));
        write_derived(&path, html::waterfall::draw(w, false)?.as_bytes())?;
        written.push(path);
    }
    for (name, format) in [
        ("report.md", Format::Markdown),
        ("report.html", Format::Html),
    ] {
        let path = dir.join(name);
        let bytes = format.exporter().render(run, a)?;
        write_derived(&path, &bytes)?;
        written.push(path);
    }
    Ok(written)
}

/// `ringside report FILE... [--out DIR] [--format F]`: one file re-renders its report; several
/// draw the runs side by side as `compare --out` does ([`many`]).
pub fn run(results: &[PathBuf], out: Option<&Path>, format: Format) -> anyhow::Result<i32> {
    match results {
        [one] => run_one(one, out, format),
        _ => many(results, out, format),
    }
}

/// Several files: compare.html and compare.md (the first file against each later one, at
/// `compare`'s default threshold) into `out`, by default the first file's directory (beside
/// its report.html, which it never replaces); the matrix on stdout (markdown with
/// `--format markdown`). csv and json are one run's formats: refused (exit 2).
fn many(results: &[PathBuf], out: Option<&Path>, format: Format) -> anyhow::Result<i32> {
    if matches!(format, Format::Csv | Format::Json | Format::Html) {
        eprintln!(
            "error: --format {}: several results files are drawn side by side, as summary,              table or markdown; csv and json take one results file",
            format!("{format:?}").to_lowercase()
        );
        return Ok(2);
    }
    let Some(runs) = super::compare::load_all(results) else {
        return Ok(2);
    };
    let m = match super::compare::matrix(&runs, crate::analysis::compare::DEFAULT_THRESHOLD_PCT) {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    let dir = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| beside(&results[0]));
    let written = match super::compare::write_page(&m, &dir) {
        Ok(w) => w,
        Err(code) => return Ok(code),
    };
    let text = match format {
        Format::Markdown => crate::export::compare::markdown(&m),
        _ => crate::export::compare::term(&m),
    };
    super::stdout::write(text.as_bytes())?;
    let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    eprintln!("report: {}", names.join(" and "));
    Ok(0)
}

/// The directory a results file is in ("." for a bare name).
fn beside(results: &Path) -> PathBuf {
    results
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf()
}

fn run_one(results: &Path, out: Option<&Path>, format: Format) -> anyhow::Result<i32> {
    let run = match super::load_results(results) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(2);
        }
    };
    let dir = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| beside(results));
    // As `run --out`: a directory that cannot be made (a file there) is bad input, exit 2.
    if let Err(why) = crate::results::store::make_out_dir(&dir) {
        eprintln!(
            "error: {}",
            crate::error::InputError::OutputDir {
                dir: dir.display().to_string(),
                why,
            }
        );
        return Ok(2);
    }
    let a = Analysis::of(&run);
    write_all(&run, &a, &dir)?;
    super::stdout::write(&format.exporter().render(&run, &a)?)?;
    if !run.finished {
        eprintln!("note: this run is unfinished (interrupted); the report shows the cells it kept");
    }
    eprintln!(
        "report: {} and {}",
        dir.join("report.html").display(),
        dir.join("report.md").display()
    );
    Ok(0)
}

/// `report --hgrm CELL` and `report --timeline CELL`: one cell's text (`render`: its latency
/// distribution in HdrHistogram's percentile format, or its repetitions over time as CSV) on
/// stdout. The cell is named by its key or by the words that tell it from the others
/// (`analysis::cells::select_cell`: `uring conns=100`). A cell the file does not have is bad
/// input (exit 2), named with the cells it has; so is a selector that names several (listed),
/// a cell without what `render` needs, and more than one results file.
pub fn cell_text(
    results: &[PathBuf],
    cell: &str,
    flag: &str,
    render: fn(&crate::results::CaseResult) -> Result<String, String>,
) -> anyhow::Result<i32> {
    let [results] = results else {
        eprintln!(
            "error: {flag} '{cell}': takes one results file ({} given)",
            results.len()
        );
        return Ok(2);
    };
    let run = match super::load_results(results) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(2);
        }
    };
    use crate::analysis::cells::{select_cell, Selected};
    let c = match select_cell(&run, cell) {
        Selected::One(c) => c,
        Selected::None => {
            let keys: Vec<String> = run
                .cases
                .iter()
                .filter(|c| c.figures.is_some())
                .map(|c| format!("  {}", c.key()))
                .collect();
            eprintln!(
                "error: {flag} '{cell}': '{}' has no such cell; its measured cells are:\n{}",
                results.display(),
                keys.join("\n")
            );
            return Ok(2);
        }
        Selected::Several(found) => {
            let keys: Vec<String> = found.iter().map(|c| format!("  {}", c.key())).collect();
            eprintln!(
                "error: {flag} '{cell}': names {} cells of '{}'; add the model, the workload or \
                 a parameter to name one of them:\n{}",
                found.len(),
                results.display(),
                keys.join("\n")
            );
            return Ok(2);
        }
    };
    match render(c) {
        Ok(text) => {
            super::stdout::write(text.as_bytes())?;
            Ok(0)
        }
        Err(e) => {
            eprintln!("error: {flag} '{cell}': {e}");
            Ok(2)
        }
    }
}
