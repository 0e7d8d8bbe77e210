//! Atomic storage: temp file + fsync + rename + directory fsync, after every case; loading
//! with errors that name the file and what is wrong with it.

use super::schema::{RunResults, SCHEMA_VERSION};
use anyhow::{bail, Context};
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` so readers see the old file or the new one, never half.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("results");
    let tmp = dir.join(format!(".{name}.partial"));
    let mut f = File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    fs::rename(&tmp, path)?;
    File::open(dir)?.sync_all()
}

/// Where a run's files go.
pub struct Store {
    pub dir: PathBuf,
}

impl Store {
    /// Creates `dir` and proves it can be written, before anything is measured.
    pub fn create(dir: &Path) -> anyhow::Result<Store> {
        fs::create_dir_all(dir).with_context(|| format!("cannot create '{}'", dir.display()))?;
        let probe = dir.join(".ringside-write-test");
        write_atomic(&probe, b"ok")
            .with_context(|| format!("cannot write in '{}'", dir.display()))?;
        let _ = fs::remove_file(&probe);
        Ok(Store {
            dir: dir.to_path_buf(),
        })
    }

    pub fn results_path(&self) -> PathBuf {
        self.dir.join("results.json")
    }

    /// Saves the run so far.
    pub fn save(&self, run: &RunResults) -> anyhow::Result<()> {
        let bytes = serde_json::to_vec_pretty(run)?;
        write_atomic(&self.results_path(), &bytes)
            .with_context(|| format!("cannot save '{}'", self.results_path().display()))
    }
}

/// Loads a results file, naming the file and the problem (missing, not JSON, truncated, other
/// schema version).
pub fn load(path: &Path) -> anyhow::Result<RunResults> {
    let bytes =
        fs::read(path).with_context(|| format!("cannot read results file '{}'", path.display()))?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        if e.is_eof() {
            anyhow::anyhow!("'{}' is truncated: JSON ends early ({e})", path.display())
        } else {
            anyhow::anyhow!("'{}' is not JSON: {e}", path.display())
        }
    })?;
    match v.get("schema_version").and_then(|s| s.as_u64()) {
        Some(n) if n == SCHEMA_VERSION as u64 => {}
        Some(n) => bail!(
            "'{}' has schema_version {n}; this ringside reads schema_version {SCHEMA_VERSION}",
            path.display()
        ),
        None => bail!(
            "'{}' is not a ringside results file (no schema_version)",
            path.display()
        ),
    }
    serde_json::from_value(v)
        .with_context(|| format!("'{}' does not match the results schema", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn load_names_the_problem() {
        let d = tempfile::tempdir().unwrap();
        let missing = load(&d.path().join("nope.json")).unwrap_err();
        assert!(format!("{missing:#}").contains("nope.json"));
        let p = d.path().join("t.json");
        fs::write(&p, b"{\"schema_version\": 1, \"cases\": [").unwrap();
        assert!(format!("{:#}", load(&p).unwrap_err()).contains("truncated"));
        fs::write(&p, b"hello").unwrap();
        assert!(format!("{:#}", load(&p).unwrap_err()).contains("not JSON"));
        fs::write(&p, b"{\"schema_version\": 7}").unwrap();
        assert!(format!("{:#}", load(&p).unwrap_err()).contains("schema_version 7"));
    }
}
