//! Ctrl-C keeps what finished: the results file is valid JSON with `"finished": false` and
//! every case completed before the signal.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn ctrl_c_keeps_finished_cases() {
    let d = tempfile::tempdir().unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("ringside"))
        .args(["run", "micro", "--profile", "quick", "--quiet", "--out"])
        .arg(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let results = d.path().join("results.json");
    let deadline = Instant::now() + Duration::from_secs(120);
    let cases_now = || -> usize {
        std::fs::read(&results)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v["cases"].as_array().map(|a| a.len()))
            .unwrap_or(0)
    };
    while cases_now() < 3 {
        assert!(Instant::now() < deadline, "no case finished in 120 s");
        assert!(
            child.try_wait().unwrap().is_none(),
            "ringside exited before the signal"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: sending SIGINT to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "ringside did not stop after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&results).unwrap()).unwrap();
    assert_eq!(v["finished"], false);
    let n = v["cases"].as_array().unwrap().len();
    assert!(n >= 3, "finished cases kept: {n}");
    for c in v["cases"].as_array().unwrap() {
        assert!(c["status"].is_string());
    }
    assert!(d.path().join("report.md").exists());
    let leftovers: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".partial"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left behind");
}
