//! `report`, `list`, `env` and `compare` against hostile input and a careless shell: a closed
//! stdout (`| head -1`), results files that never end (`/dev/zero`), are not files (a FIFO) or
//! are far too large, and workload ids that try to escape `--out`.

use crate::common;

use common::bin::fixture;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ringside"));
    // A runaway reader must fail here, not take the machine down: 2 GiB of address space.
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        c.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    c
}

/// Waits for the child at most `limit`; kills it (and fails) past that.
fn wait(mut child: std::process::Child, limit: Duration, what: &str) -> (ExitStatus, String) {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            return (st, err);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `args` with its stdout a pipe whose reading end is already closed (`| head -0`).
fn with_closed_stdout(args: &[&str]) -> (ExitStatus, String) {
    let mut child = bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the only reader: every write now fails with EPIPE
    wait(child, Duration::from_secs(60), &args.join(" "))
}

fn assert_quiet(args: &[&str], want: i32) {
    let (st, err) = with_closed_stdout(args);
    assert_eq!(
        st.code(),
        Some(want),
        "`ringside {}` with a closed stdout: {st}; stderr:\n{err}",
        args.join(" ")
    );
    assert!(
        !err.contains("panicked") && !err.to_lowercase().contains("broken pipe"),
        "`ringside {}` complained about the closed pipe:\n{err}",
        args.join(" ")
    );
}

#[test]
fn list_env_report_compare_stop_quietly_on_a_closed_stdout() {
    let fx = fixture();
    let fx = fx.to_str().unwrap();
    assert_quiet(&["list"], 0);
    assert_quiet(&["env"], 0);
    assert_quiet(&["env", "--json"], 0);
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    assert_quiet(&["report", fx, "--out", out.to_str().unwrap()], 0);
    // The files are written all the same.
    assert!(out.join("report.html").is_file() && out.join("report.md").is_file());
    // The fixture against itself: six repetitions a side cannot confirm a change alone
    // among its tests, so the gate is inconclusive (3), read or not.
    assert_quiet(&["compare", fx, fx], 3);
    // The gate's verdict does not depend on anyone reading its table.
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture()).unwrap()).unwrap();
    for c in v["cases"].as_array_mut().unwrap() {
        if c["workload"] == "micro.pipe" && c["model"] == "uring" {
            for x in c["runs_p50_ns"].as_array_mut().unwrap() {
                *x = (x.as_f64().unwrap() * 2.0).into();
            }
        }
    }
    let slow = super::compare_gate::save(d.path(), "slow.json", &v);
    assert_quiet(&["compare", fx, slow.to_str().unwrap()], 1);
}

#[test]
fn run_with_a_closed_stdout_keeps_its_results() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("run");
    assert_quiet(
        &[
            "run",
            "micro.syscall",
            "--profile",
            "smoke",
            "--runs",
            "2",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ],
        0,
    );
    let r = ringside::results::store::load(&out.join("results.json")).unwrap();
    assert!(r.finished && !r.cases.is_empty());
    assert!(out.join("report.html").is_file());
}

fn report_refuses(path: &Path, needles: &[&str]) {
    let d = tempfile::tempdir().unwrap();
    let child = bin()
        .arg("report")
        .arg(path)
        .arg("--out")
        .arg(d.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (st, err) = wait(child, Duration::from_secs(20), &path.display().to_string());
    assert_eq!(st.code(), Some(2), "{}: {st}\n{err}", path.display());
    for n in needles {
        assert!(err.contains(n), "{}: no '{n}' in:\n{err}", path.display());
    }
    assert!(
        !d.path().join("report.html").exists(),
        "nothing is rendered from a refused file"
    );
}

#[test]
fn endless_oversized_and_non_regular_results_files_are_refused() {
    // A device that never ends: refused before reading a byte of it.
    report_refuses(Path::new("/dev/zero"), &["/dev/zero", "not a regular file"]);
    // A FIFO nobody writes to: opening it would block forever.
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    report_refuses(&fifo, &["fifo.json", "not a regular file"]);
    // A regular file far larger than any run writes (sparse: it costs no disk).
    let big = d.path().join("big.json");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(ringside::results::store::MAX_RESULTS_BYTES + 1)
        .unwrap();
    let cap = format!(
        "exceeds {} MiB",
        ringside::results::store::MAX_RESULTS_BYTES >> 20
    );
    report_refuses(&big, &["big.json", &cap]);
    // compare refuses it the same way.
    let out = bin()
        .args(["compare", fixture().to_str().unwrap()])
        .arg(&big)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&cap));
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn hostile_workload_ids_never_name_a_file_outside_out() {
    let d = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture()).unwrap()).unwrap();
    for c in v["cases"].as_array_mut().unwrap() {
        match c["workload"].as_str().unwrap() {
            "micro.pipe" => c["workload"] = "../../../x".into(),
            "micro.syscall" => c["workload"] = "a/b".into(),
            "micro.fd_scaling" => c["workload"] = "/etc/evil".into(),
            _ => {}
        }
    }
    let input = d.path().join("in").join("results.json");
    std::fs::create_dir_all(input.parent().unwrap()).unwrap();
    std::fs::write(&input, serde_json::to_vec(&v).unwrap()).unwrap();
    let out = d.path().join("p").join("q").join("r").join("out");
    let st = bin()
        .arg("report")
        .arg(&input)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}\n{}",
        st.status,
        String::from_utf8_lossy(&st.stderr)
    );
    // Everything written is under --out (the input stays the only file beside it).
    let all = files_under(d.path());
    let outside: Vec<&PathBuf> = all
        .iter()
        .filter(|p| !p.starts_with(&out) && **p != input)
        .collect();
    assert!(outside.is_empty(), "written outside --out: {outside:?}");
    assert!(!Path::new("/etc/evil-latency.svg").exists());
    // Chart files sit directly in out/charts, one per chart, each linked from report.md.
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let charts: Vec<&PathBuf> = all
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .collect();
    assert!(charts.len() > 4, "{charts:?}");
    for c in &charts {
        assert_eq!(c.parent().unwrap(), out.join("charts"), "{}", c.display());
        let name = c.file_name().unwrap().to_str().unwrap();
        assert!(
            name.chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "._-".contains(ch))
                && !name.starts_with('.'),
            "{name}"
        );
        assert!(
            md.contains(&format!("](charts/{name})")),
            "{name} not linked"
        );
    }
    // The sanitized charts of the three hostile workloads are there, and distinct.
    for w in ["x", "a-b", "etc-evil"] {
        assert!(
            charts
                .iter()
                .any(|c| c.file_name().unwrap().to_str().unwrap().contains(w)),
            "no chart for {w}: {charts:?}"
        );
    }
    // The raw ids still show as text (escaped) in the reports.
    assert!(md.contains("## ../../../x"), "{md}");
}
