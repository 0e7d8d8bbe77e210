//! Issue 28 items 5 and 6: a run holds its `--out` directory for its life (a second run there
//! is refused, naming the first), and nothing a user plants in `--out` makes ringside write
//! outside it: temporary files are created new under unpredictable names, never through a
//! link, and a `charts` that is a link is refused.

use crate::common;

use common::bin::{bin, fixture};

use assert_cmd::Command;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// `ringside run micro.syscall --profile smoke --quiet --out OUT`, to its end.
fn smoke_run(out: &Path) -> std::process::Output {
    Command::new(bin())
        .timeout(Duration::from_secs(120))
        .args(["run", "micro.syscall", "--profile", "smoke", "--quiet"])
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

/// A second `run` on a directory a run is writing to exits 2 naming the first, even with
/// --force (before: both exited 0 and printed `results: DIR/results.json`, the file held one
/// run and charts/ both; with --force the second removed the first's files).
#[test]
fn a_second_run_on_the_same_out_is_refused_naming_the_first() {
    let d = tempfile::tempdir().unwrap();
    let mut first = std::process::Command::new(bin())
        .args([
            "run",
            "micro.pipe",
            "--profile",
            "quick",
            "--quiet",
            "--out",
        ])
        .arg(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lock = d.path().join(".ringside.lock");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(&lock)
        .map(|s| s.trim() != first.id().to_string())
        .unwrap_or(true)
    {
        assert!(
            Instant::now() < deadline,
            "the first run never took its --out"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = Command::new(bin())
        .timeout(Duration::from_secs(60))
        .args([
            "run",
            "micro.syscall",
            "--profile",
            "smoke",
            "--force",
            "--quiet",
        ])
        .arg("--out")
        .arg(d.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(first.id() as i32, libc::SIGKILL) };
    let _ = first.wait();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("another ringside run (pid {})", first.id())),
        "{err}"
    );
    // Its hold ends with it: the directory can be used again.
    let o = Command::new(bin())
        .timeout(Duration::from_secs(120))
        .args([
            "run",
            "micro.syscall",
            "--profile",
            "smoke",
            "--force",
            "--quiet",
        ])
        .arg("--out")
        .arg(d.path())
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Links planted in `--out` at the temporary names the writes used to take, and a `charts`
/// that links to another directory: nothing is written through them.
#[test]
fn links_planted_in_out_are_never_written_through() {
    let out = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let victim = elsewhere.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    for name in [
        ".results.json.partial",
        ".report.md.partial",
        ".report.html.partial",
    ] {
        std::os::unix::fs::symlink(&victim, out.path().join(name)).unwrap();
    }
    let o = smoke_run(out.path());
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(out.path().join("report.md").is_file());
    // `report` into a directory whose charts/ is a link elsewhere: refused, nothing there.
    let target = tempfile::tempdir().unwrap();
    let rdir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(target.path(), rdir.path().join("charts")).unwrap();
    let o = Command::new(bin())
        .timeout(Duration::from_secs(60))
        .arg("report")
        .arg(fixture())
        .arg("--out")
        .arg(rdir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(
        std::fs::read_dir(target.path()).unwrap().count(),
        0,
        "nothing written through the link"
    );
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
}

/// Issue 28 item 9: `--out` removed mid-run lost everything measured so far. It is made again
/// at the next save, with every case measured until then.
#[test]
fn an_out_removed_mid_run_is_made_again_with_everything_measured() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    let mut child = std::process::Command::new(bin())
        .args([
            "run",
            "micro.syscall",
            "micro.pipe",
            "--profile",
            "smoke",
            "--quiet",
        ])
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let results = out.join("results.json");
    let deadline = Instant::now() + Duration::from_secs(120);
    let saved = |p: &Path| -> usize {
        std::fs::read(p)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v["cases"].as_array().map(Vec::len))
            .unwrap_or(0)
    };
    while saved(&results) < 1 {
        assert!(Instant::now() < deadline, "no case saved in 120 s");
        assert!(
            child.try_wait().unwrap().is_none(),
            "ended before a case was saved"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = saved(&results);
    std::fs::remove_dir_all(&out).unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&results).unwrap()).unwrap();
    assert_eq!(v["finished"], true, "{err}");
    let n = v["cases"].as_array().unwrap().len();
    assert!(
        n > before,
        "the cases before the removal are kept too: {n} vs {before}"
    );
    let kinds: Vec<&str> = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["workload"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"micro.syscall") && kinds.contains(&"micro.pipe"),
        "{kinds:?}"
    );
}

/// Issue 28 item 9: when the report cannot be written (here report.md is a directory; a
/// full disk does the same), the run says that results.json was saved and how to render it.
#[test]
fn a_report_that_cannot_be_written_says_the_results_are_saved() {
    let out = tempfile::tempdir().unwrap();
    std::fs::create_dir(out.path().join("report.md")).unwrap();
    std::fs::write(out.path().join("report.md").join("x"), b"x").unwrap();
    let o = smoke_run(out.path());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("results.json was saved") && err.contains("ringside report"),
        "{err}"
    );
    assert!(out.path().join("results.json").is_file());
    let partial = std::fs::read_dir(out.path())
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().ends_with(".partial"));
    assert!(!partial, "a temporary file was left");
}

/// An `--out` that cannot hold the output is refused before anything runs, by every command
/// with the same exit code (2) and in words that say why: a file, a link to nothing, a
/// directory that takes no files (/proc), a planted lock link.
#[test]
fn an_unusable_out_is_refused_alike_by_run_and_report_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("afile");
    std::fs::write(&file, b"x").unwrap();
    let dangling = dir.path().join("dangling");
    std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
    let cases: [(&Path, &str); 4] = [
        (&file, "it is a file, not a directory"),
        (&file.join("sub"), "a part of its path is a file"),
        (&dangling, "which does not exist"),
        (Path::new("/proc"), "does not take new files"),
    ];
    for (out, says) in cases {
        for report in [false, true] {
            let mut c = Command::new(bin());
            c.timeout(Duration::from_secs(60));
            match report {
                true => c.arg("report").arg(fixture()),
                false => c.args(["run", "micro.syscall", "--profile", "smoke", "--quiet"]),
            };
            let o = c.arg("--out").arg(out).output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{out:?} report={report}: {err}");
            assert!(err.contains(says), "{out:?} report={report}: {err}");
        }
    }
    assert!(
        !dir.path().join("nowhere").exists(),
        "written through the link"
    );
    // A lock file planted as a link is named, not followed.
    let planted = dir.path().join("planted");
    std::fs::create_dir(&planted).unwrap();
    std::os::unix::fs::symlink(&file, planted.join(".ringside.lock")).unwrap();
    let o = Command::new(bin())
        .timeout(Duration::from_secs(60))
        .args([
            "run",
            "micro.syscall",
            "--profile",
            "smoke",
            "--quiet",
            "--out",
        ])
        .arg(&planted)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("is a symbolic link"), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}
