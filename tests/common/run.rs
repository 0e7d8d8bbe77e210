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
        .and_then(|v| v["cases"].as_array().map(|a| a.len()))
        .unwrap_or(0)
}

/// Reads `err` to its end on a thread; join it for the text.
pub fn collect(mut err: ChildStderr) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    })
}
