//! The lifecycle of the processes `ringside run` starts: a `kill -9` of ringside takes its
//! `ringside serve` child and an external contender's whole process group with it; the next
//! start stops children and removes storage work directories that a dead ringside left behind,
//! naming each; a contender whose answers break the load generator fails its cells, not the
//! run.
//!
//! Every test here kills what it started (by pid or process group) on every path, and is
//! bounded in time. They run one at a time (one lock): the sweep test plants a stale child
//! that another test's ringside would otherwise sweep first.

mod common;

use common::bin::bin;

use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// `(state, ppid, pgrp)` from /proc/PID/stat; `None` once the process is gone.
fn stat(pid: u32) -> Option<(char, u32, i32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

/// Running: present and neither a zombie nor dead.
fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|(s, _, _)| s != 'Z' && s != 'X')
}

fn wait_gone(pid: u32, within: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < within {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !alive(pid)
}

fn kill(pid: i32, sig: i32) {
    // SAFETY: kill(2) on a pid or process group this test started.
    unsafe { libc::kill(pid, sig) };
}

/// Every live process whose parent is `ppid`.
fn children_of(ppid: u32) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if stat(pid).is_some_and(|(s, pp, _)| pp == ppid && s != 'Z') {
            v.push(pid);
        }
    }
    v
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

/// Waits up to `within` for `f` to give a value, failing (after `cleanup`) when the child
/// exits first or time runs out.
fn wait_for<T>(
    run: &mut Child,
    within: Duration,
    what: &str,
    mut f: impl FnMut() -> Option<T>,
) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        if t0.elapsed() > within || run.try_wait().unwrap().is_some() {
            let _ = run.kill();
            let _ = run.wait();
            panic!("{what}: not seen within {within:?}, or ringside exited first");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `kill -9` of `ringside run` while a cell's `ringside serve` child serves: the child dies with
/// it (PR_SET_PDEATHSIG), instead of living on with parent 1.
#[test]
fn kill_9_of_run_takes_its_serve_child_with_it() {
    let _one = serial();
    let out = tempfile::tempdir().unwrap();
    let mut run = Command::new(bin())
        .args([
            "run",
            "echo.conns",
            "--profile",
            "quick",
            "--models",
            "epoll-lt",
        ])
        .args(["--quiet", "--out"])
        .arg(out.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let me = run.id();
    let serve = wait_for(&mut run, Duration::from_secs(60), "serve child", || {
        children_of(me)
            .into_iter()
            .find(|&p| cmdline(p).contains(" serve "))
    });
    // Past its start (a child killed before it prints `listening on` dies of SIGPIPE anyway):
    // repetitions last over a second.
    std::thread::sleep(Duration::from_millis(300));
    assert!(alive(serve), "the serve child {serve} ended by itself");
    kill(me as i32, libc::SIGKILL);
    let _ = run.wait();
    let gone = wait_gone(serve, Duration::from_secs(5));
    if !gone {
        kill(serve as i32, libc::SIGKILL);
    }
    assert!(gone, "serve child {serve} outlived ringside's kill -9");
}

/// A contender whose server is a grandchild (its shell forks it) in the contender's process
/// group: a `kill -9` of ringside takes the whole group with it.
#[test]
fn kill_9_of_run_takes_a_contenders_whole_process_group_with_it() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("echo.py");
    std::fs::write(&script, PY_ECHO).unwrap();
    let pidfile = dir.path().join("pid");
    let contender = format!(
        "echo:grp=python3 {} {{port}} & echo $! > {}; wait",
        script.display(),
        pidfile.display()
    );
    let mut run = Command::new(bin())
        .args(["run", "echo.payload", "--profile", "smoke", "--runs", "1"])
        // threadpool has no TCP server: the contender's cells come first.
        .args([
            "--models",
            "threadpool",
            "--quiet",
            "--contender",
            &contender,
        ])
        .arg("--out")
        .arg(dir.path().join("out"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let me = run.id();
    let server = wait_for(&mut run, Duration::from_secs(60), "contender", || {
        let pid: u32 = std::fs::read_to_string(&pidfile)
            .ok()?
            .trim()
            .parse()
            .ok()?;
        alive(pid).then_some(pid)
    });
    let pgrp = stat(server).map(|(_, _, g)| g).unwrap();
    assert_ne!(
        pgrp as u32, me,
        "the contender has a process group of its own"
    );
    kill(me as i32, libc::SIGKILL);
    let _ = run.wait();
    let gone = wait_gone(server, Duration::from_secs(5));
    let leader_gone = wait_gone(pgrp as u32, Duration::from_secs(1));
    if !gone || !leader_gone {
        kill(-pgrp, libc::SIGKILL);
    }
    assert!(
        gone,
        "the contender's server {server} outlived ringside's kill -9"
    );
    assert!(
        leader_gone,
        "the contender's shell {pgrp} outlived ringside"
    );
}

/// What a killed ringside may still leave (a child it started, a storage work directory) is
/// found at the next start by the owner mark it carries, stopped or removed, and named; what
/// belongs to a live ringside is left alone.
#[test]
fn the_next_start_sweeps_stale_children_and_work_dirs_and_names_them() {
    let _one = serial();
    let cwd = tempfile::tempdir().unwrap();
    // A pid that is surely dead, and an owner mark with a start time no process has.
    let dead = {
        let mut c = Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid
    };
    let boot: String = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .unwrap()
        .chars()
        .filter(char::is_ascii_hexdigit)
        .take(8)
        .collect();
    let stale_token = format!("{dead}:1:{boot}");
    let mut stale = Command::new("sleep")
        .arg("60")
        .env("RINGSIDE_OWNER", &stale_token)
        .spawn()
        .unwrap();
    // Issue 28 item 14: marks anyone can write are not enough. Left alone: a process whose
    // mark names an owner that started after it, one whose mark is of another boot, and (as
    // root) another user's.
    let spare = |token: String, uid: Option<u32>| {
        let mut c = Command::new("sleep");
        c.arg("60").env("RINGSIDE_OWNER", token);
        if let Some(u) = uid {
            std::os::unix::process::CommandExt::uid(&mut c, u);
        }
        c.spawn().unwrap()
    };
    let mut spared = vec![
        (
            "started before its owner",
            spare(format!("{dead}:{}:{boot}", u64::MAX / 2), None),
        ),
        ("of another boot", spare(format!("{dead}:1:00000000"), None)),
    ];
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        spared.push(("another user's", spare(stale_token.clone(), Some(65534))));
    } else {
        common::tools::cannot(
            "not root: another user's process cannot be started to check it is spared",
        );
    }
    let stale_dir = cwd.path().join(format!("ringside-storage-{dead}-7"));
    std::fs::create_dir(&stale_dir).unwrap();
    std::fs::write(stale_dir.join(".ringside-owner"), &stale_token).unwrap();
    std::fs::write(stale_dir.join("data-4194304.bin"), vec![0u8; 4096]).unwrap();
    // A work dir whose owner (this test process) is alive stays.
    let me = std::process::id();
    let live_dir = cwd.path().join(format!("ringside-storage-{me}-8"));
    std::fs::create_dir(&live_dir).unwrap();
    std::fs::write(live_dir.join(".ringside-owner"), own_token()).unwrap();

    let out = Command::new(bin())
        .current_dir(cwd.path())
        .args(["run", "micro.syscall", "--profile", "smoke", "--runs", "1"])
        .args(["--quiet", "--out"])
        .arg(cwd.path().join("out"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let killed = {
        let t0 = Instant::now();
        loop {
            if let Some(st) = stale.try_wait().unwrap() {
                break Some(st);
            }
            if t0.elapsed() > Duration::from_secs(5) {
                let _ = stale.kill();
                let _ = stale.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(killed.is_some(), "the stale child was left running: {err}");
    assert!(
        err.contains(&format!("pid {}", stale.id())) && err.contains(&format!("pid {dead}")),
        "the stale child and its dead owner are named: {err}"
    );
    assert!(!stale_dir.exists(), "the stale work dir was left: {err}");
    assert!(
        err.contains(&stale_dir.display().to_string()),
        "the stale work dir is named: {err}"
    );
    assert!(live_dir.exists(), "a live ringside's work dir was removed");
    for (what, c) in &mut spared {
        let alive = c.try_wait().unwrap().is_none();
        let _ = c.kill();
        let _ = c.wait();
        assert!(alive, "a process {what} was stopped: {err}");
    }
}

/// This process's owner mark: `PID:START` (start time in clock ticks after boot, field 22 of
/// /proc/PID/stat), as ringside writes it.
fn own_token() -> String {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &s[s.rfind(')').unwrap() + 1..];
    // Field 3 is the first after ')'; the start time is field 22.
    let start = rest.split_whitespace().nth(19).unwrap();
    format!("{}:{start}", std::process::id())
}

/// A contender answering every request with `Content-Length: 99999999999` must fail its own
/// cells only: the run finishes, writes its results and report, exits 1 (a cell failed), and
/// leaves no contender running.
#[test]
fn a_contender_with_a_huge_content_length_fails_its_cells_not_the_run() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("huge.py");
    std::fs::write(&script, PY_HUGE).unwrap();
    let pidfile = dir.path().join("pid");
    let contender = format!(
        "http:huge=python3 {} {{port}} {}",
        script.display(),
        pidfile.display()
    );
    let out_dir = dir.path().join("out");
    let mut run = Command::new(bin())
        .args(["run", "http.clients", "--profile", "smoke", "--runs", "1"])
        .args([
            "--models",
            "threadpool",
            "--quiet",
            "--contender",
            &contender,
        ])
        .arg("--out")
        .arg(&out_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let reader = common::run::collect(run.stderr.take().unwrap());
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = run.try_wait().unwrap() {
            break Some(st);
        }
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = run.kill();
            let _ = run.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let server: Option<u32> = std::fs::read_to_string(&pidfile)
        .ok()
        .and_then(|s| s.trim().parse().ok());
    let server_gone = server.is_none_or(|p| wait_gone(p, Duration::from_secs(5)));
    if let (Some(p), false) = (server, server_gone) {
        kill(p as i32, libc::SIGKILL);
    }
    let err = reader.join().unwrap();
    let status = status.expect("the run did not end within 120 s");
    assert!(server.is_some(), "the contender never started: {err}");
    assert!(server_gone, "the contender was left running: {err}");
    assert_eq!(status.code(), Some(1), "{status}: {err}");
    let v: serde_json::Value = common::schema::results_json(&out_dir.join("results.json"));
    assert_eq!(v["finished"], true);
    let huge: Vec<_> = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["model"] == "ext:huge")
        // The capacity points (an equal-load point takes its rate from them).
        .filter(|c| c.get("equal_load").is_none())
        .collect();
    assert_eq!(huge.len(), 5, "5 client counts");
    for c in huge {
        assert_eq!(c["status"], "failed", "{c}");
    }
    assert!(out_dir.join("report.html").exists());
}

const PY_ECHO: &str = r#"
import socketserver, sys
class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            data = self.request.recv(65536)
            if not data:
                return
            self.request.sendall(data)
class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
Server(("127.0.0.1", int(sys.argv[1])), Echo).serve_forever()
"#;

/// Answers every read with a 200 whose Content-Length no one should allocate.
const PY_HUGE: &str = r#"
import os, socket, sys, threading
open(sys.argv[2], "w").write(str(os.getpid()))
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(4096)
def serve(c):
    try:
        while c.recv(65536):
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\nHello")
    except OSError:
        pass
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"#;

/// Issue 28 item 15: a remote probe that hangs is killed at its bound with everything it
/// started here: ssh runs in a process group of its own, killed whole (before: only ssh was
/// killed, and what its wrapper had started stayed). The `ssh` here is a stand-in on PATH
/// that starts a helper and hangs, as a ProxyCommand or a wrapper script would.
#[test]
fn a_hung_remote_probe_is_killed_with_what_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("ssh");
    std::fs::write(
        &fake,
        "#!/bin/sh\nsleep 300 &\necho $! > \"$MARK_DIR/helper.pid\"\nexec sleep 300\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let o = Command::new(bin())
        .env("PATH", path)
        .env("MARK_DIR", dir.path())
        .args(["run", "echo.rate", "--profile", "smoke", "--quiet"])
        .args(["--server-host", "nobody@hung.invalid", "--out"])
        .arg(out.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let helper: i32 = std::fs::read_to_string(dir.path().join("helper.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let gone = wait_gone(helper as u32, Duration::from_secs(5));
    if !gone {
        kill(helper, libc::SIGKILL);
    }
    assert!(t0.elapsed() < Duration::from_secs(120), "{err}");
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("did not finish within 30 s"), "{err}");
    assert!(gone, "the hung probe's helper {helper} outlived it: {err}");
}
