//! Watching a `ringside run` child from outside: how many cases its results file holds, and its
//! stderr collected on a thread (so a full pipe never blocks it).

use std::io::Read;
use std::path::Path;
use std::process::ChildStderr;
use std::thread::JoinHandle;

/// Cases saved so far in the results file at `path` (0 while it is missing or half-written).
pub fn cases_saved(path: &Path) -> usize {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .inspect(|v| super::schema::validate(&path.display().to_string(), v))
        .and_then(|v| v["cases"].as_array().map(|a| a.len()))
        .unwrap_or(0)
}

/// `ringside run ARGS --quiet --format json --out OUT` (5 minutes at most), which must succeed:
/// the results it prints.
#[allow(dead_code)]
pub fn run_json(args: &[&str], out: &Path) -> serde_json::Value {
    let stdout = assert_cmd::Command::cargo_bin("ringside")
        .unwrap()
        .timeout(std::time::Duration::from_secs(300))
        .arg("run")
        .args(args)
        .args(["--quiet", "--format", "json", "--out"])
        .arg(out)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v = serde_json::from_slice(&stdout).unwrap();
    super::schema::validate("the results `run --format json` printed", &v);
    super::schema::results_json(out);
    v
}

/// Reads `err` to its end on a thread; join it for the text.
pub fn collect(mut err: ChildStderr) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    })
}
