//! The storage suite: every model that claims the file shape moves real bytes through it and
//! reads them back; bad directories are refused before anything runs; the fio cross-check
//! stores fio's rows (or says why it could not); no test file is left behind.

use crate::common;

use assert_cmd::Command;
use predicates::prelude::*;
use ringside::io::file::{FileConfig, FileOp, OpKind};
use ringside::measure::pin::CpuPlan;
use ringside::registry::MODELS;
use ringside::workload::Workload;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

fn ringside() -> Command {
    let mut c = Command::cargo_bin("ringside").unwrap();
    c.timeout(Duration::from_secs(240));
    c
}

fn op(kind: OpKind, file: u32, user: u64, link: bool) -> FileOp {
    FileOp {
        kind,
        file,
        user,
        link,
    }
}

#[test]
fn every_storage_model_writes_fsyncs_and_reads_back_the_same_bytes() {
    let pc = ringside::workload::storage::page_cycle::PageCycle;
    let plan = CpuPlan::default_for(&ringside::measure::pin::allowed_cpus());
    let mut ran = 0;
    for m in MODELS.iter().filter(|m| pc.accepts(m).is_ok()) {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<CString> = (0..3)
            .map(|i| CString::new(dir.path().join(format!("f{i}")).as_os_str().as_bytes()).unwrap())
            .collect();
        let cfg = FileConfig {
            paths,
            open_flags: libc::O_RDWR | libc::O_CREAT,
            bufs: 4,
            buf_len: 4096,
            depth: 16,
        };
        let mut e =
            match ringside::workload::storage::file_engine(m, cfg, &plan, Err("test".into())) {
                Ok(e) => e,
                Err(ringside::error::CaseError::Unavailable(why)) => {
                    eprintln!("{}: skipped, unavailable: {why}", m.id);
                    assert!(!m.always_available(), "{} must run", m.id);
                    continue;
                }
                Err(e) => panic!("{}: {e}", m.id),
            };
        // Slot 0 opened as setup; write -> fsync -> read linked, two pages.
        e.open_now(0).unwrap();
        // SAFETY (every `slice` here): no op is in flight (each batch is reaped in full
        // before the buffers are touched), and each slice is a temporary of one statement.
        for (i, b) in unsafe { e.bufs().slice(0) }[..4096].iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        for (i, b) in unsafe { e.bufs().slice(2) }[..4096].iter_mut().enumerate() {
            *b = (i % 13) as u8 + 7;
        }
        let mut ops = Vec::new();
        for (j, (wb, rb)) in [(0u32, 1u32), (2, 3)].into_iter().enumerate() {
            let off = j as u64 * 4096;
            let j = j as u64 * 3;
            ops.push(op(
                OpKind::Write {
                    buf: wb,
                    offset: off,
                    len: 4096,
                },
                0,
                j,
                true,
            ));
            ops.push(op(OpKind::Fsync, 0, j + 1, true));
            ops.push(op(
                OpKind::Read {
                    buf: rb,
                    offset: off,
                    len: 4096,
                },
                0,
                j + 2,
                false,
            ));
        }
        e.submit(&ops).unwrap();
        let mut done = Vec::new();
        e.reap(ops.len(), &mut done).unwrap();
        assert_eq!(done.len(), 6, "{}", m.id);
        for d in &done {
            let want = if d.user % 3 == 1 { 0 } else { 4096 };
            assert_eq!(d.res, want, "{}: op {}", m.id, d.user);
        }
        assert_eq!(
            unsafe { e.bufs().slice(0) }[..4096],
            unsafe { e.bufs().slice(1) }[..4096],
            "{}",
            m.id
        );
        assert_eq!(
            unsafe { e.bufs().slice(2) }[..4096],
            unsafe { e.bufs().slice(3) }[..4096],
            "{}",
            m.id
        );
        // Slots 1 and 2 opened, written and closed by linked chains (direct descriptors on
        // io_uring).
        let mut ops = Vec::new();
        for f in [1u32, 2] {
            let u = 10 * f as u64;
            ops.push(op(OpKind::Open, f, u, true));
            ops.push(op(
                OpKind::Write {
                    buf: 0,
                    offset: 0,
                    len: 4096,
                },
                f,
                u + 1,
                true,
            ));
            ops.push(op(OpKind::Close, f, u + 2, false));
        }
        e.submit(&ops).unwrap();
        done.clear();
        e.reap(ops.len(), &mut done).unwrap();
        assert_eq!(done.len(), 6, "{}", m.id);
        assert!(done.iter().all(|d| d.res >= 0), "{}: {done:?}", m.id);
        // SAFETY: as above.
        let want = unsafe { e.bufs().slice(0) }[..4096].to_vec();
        drop(e);
        for f in 1..3 {
            let got = std::fs::read(dir.path().join(format!("f{f}"))).unwrap();
            assert_eq!(got, want, "{}: file {f}", m.id);
        }
        ran += 1;
    }
    assert!(ran >= 2, "blocking and threadpool at least");
    for id in ["tokio", "monoio"] {
        let m = ringside::registry::model(id).unwrap();
        assert!(pc.accepts(m).is_ok(), "{id} runs its own file API");
    }
}

#[test]
fn storage_suite_runs_every_model_verifies_and_leaves_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    ringside()
        .args([
            "run",
            "storage",
            "--profile",
            "smoke",
            "--quiet",
            "--format",
            "json",
        ])
        .arg("--dir")
        .arg(dir.path())
        .arg("--out")
        .arg(out.path())
        .assert()
        .success();
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "files left behind: {left:?}");
    let r: serde_json::Value =
        crate::common::schema::results_json(&out.path().join("results.json"));
    let cases = r["cases"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        let id = format!("{} {} {}", c["workload"], c["model"], c["params"]);
        assert_ne!(c["status"], "failed", "{id}: {}", c["reason"]);
        assert!(c["facts"]["fs"].as_str().is_some(), "{id}: fs named");
        if c["status"] == "measured" {
            assert!(
                c["counters"]["bytes_verified"].as_u64().unwrap() > 0,
                "{id}"
            );
        }
        if c["workload"] == "storage.page_cycle" && c["status"] == "measured" {
            let pages = c["params"]["file_bytes"].as_u64().unwrap() / 4096;
            let reps = c["repetitions"].as_u64().unwrap();
            assert_eq!(
                c["counters"]["fsyncs_completed"].as_u64().unwrap(),
                pages * reps,
                "{id}"
            );
        }
    }
    for m in ["blocking", "threadpool"] {
        assert!(
            cases
                .iter()
                .any(|c| c["model"] == m && c["status"] == "measured"),
            "{m} measured"
        );
    }
    uring_work_is_counted(cases);
}

/// io_uring's hidden work (`measure::uring_trace`): every measured cell of a model on
/// io_uring records it per op, or why not; others do not. Where the tracepoints opened, the
/// page cycle's fsync (and, on 6.18's ext4, its buffered write) went to io-wq: punts > 0.
fn uring_work_is_counted(cases: &[serde_json::Value]) {
    let mut counted = 0;
    for c in cases.iter().filter(|c| c["status"] == "measured") {
        let id = format!("{} {} {}", c["workload"], c["model"], c["params"]);
        let on_uring = MODELS.iter().any(|m| m.id == c["model"] && m.on_uring());
        let u = &c["uring_per_op"];
        let why = &c["uring_per_op_unavailable"];
        if !on_uring {
            assert!(
                u.is_null() && why.is_null(),
                "{id}: not on io_uring, yet {u} {why}"
            );
            continue;
        }
        if u.is_null() {
            assert!(!why.as_str().unwrap().is_empty(), "{id}: a reason");
            continue;
        }
        counted += 1;
        assert!(u["completions"].as_f64().unwrap() > 0.0, "{id}: {u}");
        assert!(u["cqe_overflows"].as_f64().is_some(), "{id}: {u}");
        assert!(u["task_work_runs"].as_f64().is_some(), "{id}: {u}");
        let punted = u["punted"].as_f64().unwrap();
        assert_eq!(
            punted > 0.0,
            c["counters"]["uring_punted"].as_u64().unwrap_or(0) > 0,
            "{id}: the figure and its count agree"
        );
        if c["workload"] == "storage.page_cycle" && c["model"] == "uring" {
            assert!(punted > 0.0, "{id}: the fsyncs go to io-wq: {u}");
        }
    }
    eprintln!("{counted} cells counted io_uring's tracepoints");
}

/// A chain whose open fails cancels the rest of the chain (-ECANCELED, as IOSQE_IO_LINK does)
/// and leaves the next chain alone, on every engine the small-files workload runs (the
/// contenders' file APIs included).
#[test]
fn a_failed_open_cancels_its_chain_and_not_the_next() {
    let sf = ringside::workload::storage::small_files::SmallFiles;
    let plan = CpuPlan::default_for(&ringside::measure::pin::allowed_cpus());
    let mut ran = Vec::new();
    for m in MODELS.iter().filter(|m| sf.accepts(m).is_ok()) {
        let dir = tempfile::tempdir().unwrap();
        let paths = vec![
            CString::new(dir.path().join("missing/f").as_os_str().as_bytes()).unwrap(),
            CString::new(dir.path().join("ok").as_os_str().as_bytes()).unwrap(),
        ];
        let cfg = FileConfig {
            paths,
            open_flags: libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
            bufs: 1,
            buf_len: 4096,
            depth: 8,
        };
        let mut e = match ringside::workload::storage::file_engine(m, cfg, &plan, Err("t".into())) {
            Ok(e) => e,
            Err(ringside::error::CaseError::Unavailable(why)) => {
                eprintln!("{}: skipped, unavailable: {why}", m.id);
                continue;
            }
            Err(e) => panic!("{}: {e}", m.id),
        };
        let write = OpKind::Write {
            buf: 0,
            offset: 0,
            len: 4096,
        };
        let mut ops = Vec::new();
        for f in [0u32, 1] {
            let u = 10 * f as u64;
            ops.push(op(OpKind::Open, f, u, true));
            ops.push(op(write, f, u + 1, true));
            ops.push(op(OpKind::Close, f, u + 2, false));
        }
        e.submit(&ops).unwrap();
        let mut done = Vec::new();
        e.reap(ops.len(), &mut done).unwrap();
        done.sort_by_key(|d| d.user);
        let res: Vec<i64> = done.iter().map(|d| d.res).collect();
        assert_eq!(res[0], -(libc::ENOENT as i64), "{}: {done:?}", m.id);
        assert_eq!(
            res[1..3],
            [-(libc::ECANCELED as i64); 2],
            "{}: {done:?}",
            m.id
        );
        assert!(
            res[3] >= 0 && res[4] == 4096 && res[5] == 0,
            "{}: {done:?}",
            m.id
        );
        drop(e);
        assert_eq!(std::fs::read(dir.path().join("ok")).unwrap().len(), 4096);
        ran.push(m.id);
    }
    use ringside::model::PeerKind;
    for (id, kind) in [("tokio", PeerKind::Tokio), ("monoio", PeerKind::Monoio)] {
        assert!(
            ran.contains(&id) || !ringside::peer::availability(kind).is_ready(),
            "{id} ran: {ran:?}"
        );
    }
    assert!(ran.contains(&"blocking"), "{ran:?}");
}

#[test]
fn a_missing_or_full_directory_is_refused_by_name_before_anything_runs() {
    let out = tempfile::tempdir().unwrap();
    ringside()
        .args(["run", "storage.page_cycle", "--profile", "smoke", "--quiet"])
        .args(["--dir", "/nonexistent/ringside-dir"])
        .arg("--out")
        .arg(out.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/nonexistent/ringside-dir"));
    // /proc takes no files: no free space, and the refusal says how much is needed and free.
    ringside()
        .args(["run", "storage.page_cycle", "--profile", "smoke", "--quiet"])
        .args(["--dir", "/proc"])
        .arg("--out")
        .arg(out.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("'/proc'"))
        .stderr(predicate::str::contains("need").and(predicate::str::contains("free")));
    // Unwritable: only a non-root user can be refused by permissions.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        use std::os::unix::fs::PermissionsExt;
        let ro = tempfile::tempdir().unwrap();
        std::fs::set_permissions(ro.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
        ringside()
            .args(["run", "storage.page_cycle", "--profile", "smoke", "--quiet"])
            .arg("--dir")
            .arg(ro.path())
            .arg("--out")
            .arg(out.path())
            .assert()
            .code(2)
            .stderr(predicate::str::contains(ro.path().to_str().unwrap()))
            .stderr(predicate::str::contains("not writable"));
    } else {
        eprintln!(
            "unwritable-by-permission case skipped: running as root, which may write anywhere"
        );
    }
}

#[test]
fn fio_crosscheck_rows_sit_beside_ringside_rows() {
    let fio = std::process::Command::new("fio").arg("--version").output();
    let present = fio.map(|o| o.status.success()).unwrap_or(false);
    if !present {
        common::tools::missing(
            "fio",
            "the fio cross-check: fio is not installed (apt-get install fio); checking the rows \
             say so",
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    ringside()
        .args([
            "run",
            "storage.randread",
            "--profile",
            "smoke",
            "--quiet",
            "--crosscheck",
        ])
        .args(["--models", "uring", "--format", "json"])
        .arg("--dir")
        .arg(dir.path())
        .arg("--out")
        .arg(out.path())
        .assert()
        .success();
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "no files left"
    );
    let r: serde_json::Value =
        crate::common::schema::results_json(&out.path().join("results.json"));
    let rows: Vec<_> = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["model"].as_str().unwrap().starts_with("fio:"))
        .collect();
    assert_eq!(rows.len(), 8, "2 engines x 4 randread points");
    for c in rows {
        if present {
            assert_eq!(c["status"], "measured", "{}", c["reason"]);
            assert!(c["ops_per_sec"]["median"].as_f64().unwrap() > 0.0);
            assert!(c["latency_ns"]["p50"].as_f64().unwrap() > 0.0);
        } else {
            assert_eq!(c["status"], "unavailable");
            assert_eq!(c["reason"], "fio not installed");
        }
    }
}

/// Runs ringside with a file-size limit (RLIMIT_FSIZE) so that writes fail mid-run with EFBIG,
/// as they would with ENOSPC on a full disk.
#[test]
fn a_write_error_mid_run_fails_that_case_with_the_errno_and_the_others_go_on() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("ringside"));
    cmd.args([
        "run",
        "storage.page_cycle",
        "storage.small_files",
        "--profile",
        "smoke",
    ])
    .args([
        "--models",
        "blocking,uring",
        "--quiet",
        "--format",
        "json",
        "--dir",
    ])
    .arg(dir.path())
    .arg("--out")
    .arg(out.path());
    // SAFETY: only async-signal-safe calls (setrlimit, signal) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 512 << 10,
                rlim_max: 512 << 10,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    // A failed cell is a failed run: exit 1, saying which cells failed.
    Command::from_std(cmd)
        .timeout(Duration::from_secs(120))
        .assert()
        .code(1)
        .stderr(predicates::str::contains("failed"));
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "the failed case's files were removed"
    );
    let r: serde_json::Value =
        crate::common::schema::results_json(&out.path().join("results.json"));
    let cases = r["cases"].as_array().unwrap();
    for c in cases {
        let id = format!("{} {} {}", c["workload"], c["model"], c["params"]["phase"]);
        if c["workload"] == "storage.page_cycle" {
            assert_eq!(
                c["status"], "failed",
                "{id}: 1 MiB file over a 512 KiB limit"
            );
            let why = c["reason"].as_str().unwrap();
            assert!(why.contains("errno 27"), "{id}: {why}");
        } else {
            assert_eq!(
                c["status"], "measured",
                "{id}: 64 KiB files fit: {}",
                c["reason"]
            );
        }
    }
    assert_eq!(cases.len(), 2 + 4);
}

#[test]
fn ctrl_c_removes_the_files_and_keeps_finished_cases() {
    use std::process::Stdio;
    use std::time::Instant;
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ringside"))
        .args(["run", "storage", "--profile", "quick", "--quiet", "--dir"])
        .arg(dir.path())
        .arg("--out")
        .arg(out.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let results = out.path().join("results.json");
    let deadline = Instant::now() + Duration::from_secs(120);
    let cases_now = || common::run::cases_saved(&results);
    while cases_now() < 2 {
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("no two cases finished before the deadline, or ringside exited early");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: sending SIGINT to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("ringside did not stop after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "files left behind: {left:?}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&results).unwrap()).unwrap();
    assert_eq!(v["finished"], false);
    assert!(v["cases"].as_array().unwrap().len() >= 2);
}

/// Spawns `ringside run ARGS --quiet --dir DIR --out OUT` and waits until `ready(results)`
/// holds, failing (and killing the child) after 120 s or if ringside exits first.
fn spawn_until(
    args: &[&str],
    dir: &std::path::Path,
    out: &std::path::Path,
    ready: impl Fn(&serde_json::Value) -> bool,
) -> std::process::Child {
    use std::process::Stdio;
    use std::time::Instant;
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ringside"))
        .arg("run")
        .args(args)
        .args(["--quiet", "--dir"])
        .arg(dir)
        .arg("--out")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let results = out.join("results.json");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let v = std::fs::read(&results)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
        if v.as_ref().is_some_and(&ready) {
            return child;
        }
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("ringside did not reach the awaited state in time, or exited early");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits up to 60 s for the child to exit; its exit code (None: killed by a signal).
fn exit_code(child: &mut std::process::Child) -> Option<i32> {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("ringside did not exit after the signals");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn cases(v: &serde_json::Value) -> usize {
    v["cases"].as_array().map_or(0, |a| a.len())
}

/// A second signal right after the first (an impatient Ctrl-C Ctrl-C, or SIGTERM from a
/// supervisor after SIGINT) ends ringside at once, mid-case, and still removes the data file
/// and the work directory.
#[test]
fn a_second_signal_mid_case_still_removes_the_files() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let dir = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        // O_DIRECT reads at QD1 take long enough that both signals land inside a case.
        let mut child = spawn_until(
            &[
                "storage.randread",
                "--profile",
                "quick",
                "--models",
                "blocking",
            ],
            dir.path(),
            out.path(),
            |v| cases(v) >= 1,
        );
        let pid = child.id() as i32;
        // The same signal twice, apart: sent back to back, the second would merge with the
        // first while it is still pending. (Killed by the second, ringside has no exit code.)
        for _ in 0..2 {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid, sig) };
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(exit_code(&mut child), Some(130), "signal {sig} twice");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "signal {sig} twice: left behind {left:?}");
    }
}

/// A signal while the fio cross-check runs ends the fio job (ringside may be the only one
/// signalled) and the run: the rows of finished jobs are kept, the run says it did not finish,
/// and no file is left.
#[test]
fn a_signal_during_the_fio_crosscheck_stops_fio_and_removes_the_files() {
    let present = std::process::Command::new("fio")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !present {
        common::tools::missing("fio", "fio is not installed (apt-get install fio)");
        return;
    }
    for signals in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        // Quick: 3-second fio jobs, 8 of them; ringside's 4 cases come first.
        let mut child = spawn_until(
            &[
                "storage.randread",
                "--profile",
                "quick",
                "--models",
                "uring",
                "--crosscheck",
            ],
            dir.path(),
            out.path(),
            |v| cases(v) >= 4,
        );
        let pid = child.id() as i32;
        // Give ringside the moment it takes to start fio.
        std::thread::sleep(Duration::from_millis(500));
        let fio_children = || -> Vec<i32> {
            std::fs::read_dir("/proc")
                .unwrap()
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .filter(|p| {
                    std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                        .is_ok_and(|c| c.contains(dir.path().to_str().unwrap()))
                })
                .collect()
        };
        let before = fio_children();
        for _ in 0..signals {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid, libc::SIGTERM) };
            std::thread::sleep(Duration::from_millis(10));
        }
        let t = std::time::Instant::now();
        assert_eq!(exit_code(&mut child), Some(130), "{signals} signal(s)");
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "{signals} signal(s): ringside went on with the cross-check"
        );
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{signals} signal(s): left behind {left:?}");
        // fio ends on SIGTERM within its own second or so.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !fio_children().is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "{signals} signal(s): fio (pids {before:?}) still running"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        if signals == 1 {
            let v: serde_json::Value =
                crate::common::schema::results_json(&out.path().join("results.json"));
            assert_eq!(v["finished"], false);
            let fio_rows = v["cases"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["model"].as_str().unwrap().starts_with("fio:"))
                .count();
            assert!(fio_rows < 8, "the cross-check stopped: {fio_rows} rows");
        }
    }
}
