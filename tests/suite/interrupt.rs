//! Ctrl-C keeps what finished: the results file is valid JSON with `"finished": false` and
//! every case completed before the signal.

use crate::common;

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
    let cases_now = || common::run::cases_saved(&results);
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

/// A second Ctrl-C ends the run at once, mid-repetition: it says what was kept and where and
/// how to render it, writes the report from the kept cases, and leaves no server running.
#[test]
fn a_second_ctrl_c_says_what_was_kept_and_writes_the_report() {
    let d = tempfile::tempdir().unwrap();
    // Closed-loop echo repetitions of two seconds, one window each (an open-loop point's
    // slices stop within 50 ms of the first signal): both signals land inside one.
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("ringside"))
        .args([
            "run",
            "echo.payload",
            "--profile",
            "quick",
            "--models",
            "epoll-lt",
            "--duration",
            "2",
        ])
        .args(["--quiet", "--out"])
        .arg(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let reader = common::run::collect(child.stderr.take().unwrap());
    let results = d.path().join("results.json");
    let deadline = Instant::now() + Duration::from_secs(120);
    let cases_now = || common::run::cases_saved(&results);
    while cases_now() < 1 {
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no case finished in 120 s, or ringside exited first");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Into the next case's repetition.
    std::thread::sleep(Duration::from_millis(300));
    let pid = child.id() as i32;
    let kids = children_of(pid as u32);
    for _ in 0..2 {
        // SAFETY: sending SIGINT to our own child.
        unsafe { libc::kill(pid, libc::SIGINT) };
        std::thread::sleep(Duration::from_millis(50));
    }
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ringside did not exit within 20 s of the second Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Its server child went with it.
    let t0 = Instant::now();
    let left = || -> Vec<u32> { kids.iter().copied().filter(|&p| alive(p)).collect() };
    while !left().is_empty() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = left();
    for &p in &left {
        // SAFETY: killing what our child left behind.
        unsafe { libc::kill(p as i32, libc::SIGKILL) };
    }
    let err = reader.join().unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        err.contains(&results.display().to_string()) && err.contains("ringside report"),
        "says where the kept results are and how to render them: {err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&results).unwrap()).unwrap();
    assert_eq!(v["finished"], false);
    assert!(!v["cases"].as_array().unwrap().is_empty());
    assert!(
        d.path().join("report.md").exists(),
        "the report of the kept cases: {err}"
    );
    assert!(left.is_empty(), "left running: {left:?}");
}

/// Running: present and neither a zombie nor dead.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let rest = &s[s.rfind(')').unwrap_or(0) + 1..];
        !matches!(rest.split_whitespace().next(), Some("Z" | "X"))
    })
}

/// Live processes whose parent is `ppid`.
fn children_of(ppid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                let rest = &s[s.rfind(')').unwrap_or(0) + 1..];
                let mut f = rest.split_whitespace();
                f.next() != Some("Z") && f.next() == Some(ppid.to_string().as_str())
            })
        })
        .collect()
}

/// SIGHUP (the terminal closed, the ssh session dropped) and SIGQUIT stop a run as SIGTERM
/// does: exit 130, finished cases kept, report written. After SIGHUP the terminal is gone:
/// here stderr's reader has closed it, and the run must not die printing to it. (Before:
/// killed by the signal at once, no report, the storage work file left behind.)
#[test]
fn sighup_and_sigquit_stop_a_run_like_sigterm() {
    for sig in [libc::SIGHUP, libc::SIGQUIT] {
        let d = tempfile::tempdir().unwrap();
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("ringside"))
            .args(["run", "micro", "--profile", "quick", "--out"])
            .arg(d.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let results = d.path().join("results.json");
        let deadline = Instant::now() + Duration::from_secs(120);
        while common::run::cases_saved(&results) < 1 {
            assert!(Instant::now() < deadline, "no case finished in 120 s");
            assert!(
                child.try_wait().unwrap().is_none(),
                "exited before the signal"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        if sig == libc::SIGHUP {
            // The terminal goes away: nobody reads what the run prints any more.
            drop(child.stdout.take());
            drop(child.stderr.take());
        }
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "signal {sig}: did not stop");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(130), "signal {sig}: {status:?}");
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&results).unwrap()).unwrap();
        assert_eq!(v["finished"], false, "signal {sig}");
        assert!(!v["cases"].as_array().unwrap().is_empty(), "signal {sig}");
        assert!(d.path().join("report.md").exists(), "signal {sig}");
    }
}

/// Ctrl-C during `--explain`'s repetition keeps the point's finished cells, each breakdown not
/// taken saying `interrupted` (before: "0 finished cases kept", the point's timed cells
/// thrown away with the explain repetition).
#[test]
fn ctrl_c_during_explain_keeps_the_points_finished_cells() {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("perf").is_file()));
    if !on_path {
        common::tools::missing(
            "perf",
            "perf is not installed, so no explain repetition runs here",
        );
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("ringside"))
        .args([
            "run",
            "echo.rate",
            "--profile",
            "smoke",
            "--runs",
            "1",
            "--explain",
        ])
        .args(["--models", "epoll-lt,uring", "--quiet", "--out"])
        .arg(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    // The explain repetition is the only one that runs perf.
    let perf_running = |pid: u32| {
        children_of(pid).iter().any(|&k| {
            std::fs::read_to_string(format!("/proc/{k}/comm")).is_ok_and(|c| c.trim() == "perf")
        })
    };
    while !perf_running(child.id()) {
        assert!(Instant::now() < deadline, "no explain repetition in 120 s");
        assert!(
            child.try_wait().unwrap().is_none(),
            "exited before explaining"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "did not stop after SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    let v: serde_json::Value = crate::common::schema::results_json(&d.path().join("results.json"));
    let measured: Vec<&serde_json::Value> = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "measured")
        .collect();
    assert_eq!(measured.len(), 2, "the point's timed cells are kept: {v}");
    assert!(
        measured.iter().any(|c| c["explain"]["unavailable"]
            .as_str()
            .is_some_and(|w| w.contains("interrupted"))),
        "{v}"
    );
}
