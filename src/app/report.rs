//! `ringside report`: re-render from a saved results file alone.

use crate::export::Format;
use crate::results::store::{self, write_atomic};
use anyhow::Context;
use std::io::Write;
use std::path::Path;

pub fn run(results: &Path, out: Option<&Path>, format: Format) -> anyhow::Result<i32> {
    let run = match store::load(results) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(2);
        }
    };
    let dir = out.map(Path::to_path_buf).unwrap_or_else(|| {
        results
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf()
    });
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create '{}'", dir.display()))?;
    let md = Format::Markdown.exporter().render(&run)?;
    let path = dir.join("report.md");
    write_atomic(&path, &md).with_context(|| format!("cannot write '{}'", path.display()))?;
    std::io::stdout().write_all(&format.exporter().render(&run)?)?;
    eprintln!("report: {}", path.display());
    Ok(0)
}
