//! The command line: help, bad values named with the valid ones, exit codes, and errors that
//! come before any measuring.

use crate::common;

use common::bin::ringside;

use predicates::prelude::*;
use std::time::Duration;

#[test]
fn help_lists_the_subcommands() {
    ringside()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("run").and(predicate::str::contains("env")))
        .stdout(predicate::str::contains("list").and(predicate::str::contains("report")));
    ringside()
        .args(["run", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--profile"));
}

#[test]
fn unknown_workload_is_named_with_the_valid_ones() {
    ringside()
        .args(["run", "micro.nope", "--profile", "smoke"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("'micro.nope'"))
        .stderr(predicate::str::contains("micro.pipe").and(predicate::str::contains("micro")));
}

#[test]
fn unknown_model_is_named_with_the_valid_ones() {
    ringside()
        .args(["run", "micro", "--models", "blocking,epol"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("'epol'"))
        .stderr(predicate::str::contains("epoll-lt").and(predicate::str::contains("uring-sqpoll")));
}

#[test]
fn unknown_profile_and_format_are_refused_by_name() {
    ringside()
        .args(["run", "--profile", "turbo"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("turbo").and(predicate::str::contains("smoke")));
    ringside()
        .args(["run", "--format", "xml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("xml").and(predicate::str::contains("markdown")));
}

#[test]
fn bad_cpus_and_runs_are_refused() {
    ringside()
        .args(["run", "micro.syscall", "--cpus", "4096"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("4096").and(predicate::str::contains("available")));
    ringside()
        .args(["run", "micro.syscall", "--runs", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--runs 0"));
}

#[test]
fn unwritable_output_directory_fails_before_measuring() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let out = file.join("sub"); // a directory under a regular file cannot exist
    ringside()
        .args(["run", "micro", "--profile", "smoke", "--quiet", "--out"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("cannot be written").and(predicate::str::contains("a-file")),
        )
        .stdout(predicate::str::is_empty());
}

#[test]
fn report_refuses_missing_truncated_and_foreign_files() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("missing.json");
    ringside()
        .arg("report")
        .arg(&missing)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("missing.json"));
    let t = d.path().join("t.json");
    std::fs::write(&t, b"{\"schema_version\": 1, \"cases\": [").unwrap();
    ringside()
        .arg("report")
        .arg(&t)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("truncated"));
    std::fs::write(&t, b"{\"schema_version\": 99}").unwrap();
    ringside()
        .arg("report")
        .arg(&t)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("schema_version 99"));
}

#[test]
fn list_shows_every_registered_model_and_workload() {
    let out = ringside()
        .arg("list")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    for m in ringside::registry::MODELS {
        assert!(text.contains(m.id), "list misses model {}", m.id);
    }
    for w in ringside::registry::WORKLOADS {
        assert!(text.contains(w.id()), "list misses workload {}", w.id());
    }
}

#[test]
fn list_marks_what_joins_the_default_run() {
    let out = ringside()
        .arg("list")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    for m in ringside::registry::MODELS {
        let mark = if m.default_run { '*' } else { ' ' };
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("{mark} {} ", m.id))),
            "{} should be marked '{mark}': {text}",
            m.id
        );
    }
    assert!(text.contains("* a family's leader"), "{text}");
    assert!(text.contains("* runs in the default run"), "{text}");
}

#[test]
fn duplicate_cpus_are_refused_saying_they_must_differ() {
    let cpus = ringside::measure::pin::allowed_cpus();
    let c = cpus[0];
    let mut lists = vec![format!("{c},{c}")];
    if let Some(d) = cpus.get(1) {
        lists.push(format!("{c},{d},{d}"));
    }
    for list in &lists {
        ringside()
            .args(["run", "micro.syscall", "--profile", "smoke", "--quiet"])
            .args(["--cpus", list])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!("'{list}'")))
            .stderr(predicate::str::contains("must differ"))
            .stdout(predicate::str::is_empty());
        ringside()
            .args(["serve", "--protocol", "echo", "--model", "epoll-lt"])
            .args(["--cpus", list])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("must differ"))
            .stdout(predicate::str::is_empty());
    }
}

#[test]
fn two_contenders_with_one_name_are_refused_by_name() {
    ringside()
        .args(["run", "micro.syscall", "--profile", "smoke", "--quiet"])
        .args(["--contender", "twin=./a {port}"])
        .args(["--contender", "echo:twin=./b {port}"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("'twin'").and(predicate::str::contains("twice")))
        .stdout(predicate::str::is_empty());
}

/// Issue 45: `--models ext:NAME` selects a declared contender, alone or beside others (the
/// dry run lists the models each workload runs); an undeclared one exits 2 naming it and the
/// valid ones.
#[test]
fn models_select_a_contender_by_its_ext_name() {
    let dry = |models: &str| {
        let a = ringside()
            .args(["run", "echo.conns", "--profile", "smoke", "--dry-run"])
            .args(["--models", models])
            .args(["--contender", "echo:mine=./mine {port}"])
            .args(["--contender", "theirs=./theirs {port}"])
            .assert()
            .success();
        let out = String::from_utf8_lossy(&a.get_output().stdout).to_string();
        out.lines()
            .find_map(|l| l.trim().strip_prefix("models: ").map(String::from))
            .unwrap_or_else(|| panic!("{out}"))
    };
    assert_eq!(dry("ext:mine"), "ext:mine");
    assert_eq!(dry("epoll-lt,ext:theirs"), "epoll-lt, ext:theirs");
    assert_eq!(dry("epoll-lt"), "epoll-lt, ext:mine, ext:theirs");
    ringside()
        .args(["run", "echo.conns", "--profile", "smoke", "--dry-run"])
        .args(["--models", "epoll-lt,ext:yours"])
        .args(["--contender", "echo:mine=./mine {port}"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("'ext:yours'")
                .and(predicate::str::contains("ext:mine"))
                .and(predicate::str::contains("epoll-lt")),
        )
        .stdout(predicate::str::is_empty());
}

/// Issue 45: a suite's name runs its workloads of the default run and says, on one line,
/// which of it are left out; a suite with none in the default run runs them all, silently.
#[test]
fn a_suite_runs_its_default_workloads_and_names_those_it_leaves_out() {
    let a = ringside()
        .args(["run", "echo", "--profile", "smoke", "--dry-run"])
        .assert()
        .success();
    let out = String::from_utf8_lossy(&a.get_output().stdout).to_string();
    let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    assert!(
        out.contains(" in 1 workload\n") && out.contains("\necho.conns: "),
        "{out}"
    );
    let line: Vec<&str> = err.lines().filter(|l| l.contains("echo.rate")).collect();
    assert_eq!(line.len(), 1, "{err}");
    assert!(
        line[0].starts_with("ringside: echo runs echo.conns; not ")
            && line[0].contains("echo.ladder")
            && line[0].contains("echo.cores"),
        "{err}"
    );
    // Named by id, a workload runs and is not listed as left out.
    let a = ringside()
        .args([
            "run",
            "echo",
            "echo.rate",
            "--profile",
            "smoke",
            "--dry-run",
        ])
        .assert()
        .success();
    let out = String::from_utf8_lossy(&a.get_output().stdout).to_string();
    let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    assert!(out.contains("\necho.rate: "), "{out}");
    let left = err.split("; not ").nth(1).unwrap_or_default();
    assert!(
        !left.contains("echo.rate") && left.contains("echo.ladder"),
        "{err}"
    );
    let a = ringside()
        .args(["run", "stream", "--profile", "smoke", "--dry-run"])
        .assert()
        .success();
    let out = String::from_utf8_lossy(&a.get_output().stdout).to_string();
    assert!(
        out.contains("\nstream.send: ") && out.contains("\nstream.duplex: "),
        "{out}"
    );
    assert!(a.get_output().stderr.is_empty());
}

/// `--out DIR` holding an earlier run's results.json is refused (nothing in it touched) unless
/// `--force`, which also removes that run's charts; a directory without results.json is used
/// as it is.
#[test]
fn an_out_dir_with_earlier_results_needs_force_which_clears_its_charts() {
    let d = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        let mut c = ringside();
        c.args(["run", "micro.syscall", "--profile", "smoke", "--runs", "1"])
            .args(["--quiet", "--format", "json", "--out"])
            .arg(d.path())
            .args(extra);
        c
    };
    std::fs::write(d.path().join("notes.txt"), b"mine").unwrap();
    run(&[]).assert().success();
    let results = d.path().join("results.json");
    let first = std::fs::read(&results).unwrap();
    let stale = d.path().join("charts").join("stale-old-run.svg");
    std::fs::create_dir_all(stale.parent().unwrap()).unwrap();
    std::fs::write(&stale, b"<svg/>").unwrap();
    run(&[])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(d.path().display().to_string()))
        .stderr(predicate::str::contains("--force"))
        .stdout(predicate::str::is_empty());
    assert_eq!(std::fs::read(&results).unwrap(), first, "results untouched");
    assert!(stale.exists(), "nothing removed without --force");
    run(&["--force"]).assert().success();
    assert!(!stale.exists(), "the old run's chart is gone");
    assert_ne!(std::fs::read(&results).unwrap(), first, "a new run");
    assert!(d.path().join("report.html").exists());
    assert_eq!(std::fs::read(d.path().join("notes.txt")).unwrap(), b"mine");
}

/// `ringside serve --model uring-sqpoll` with one CPU cannot start its model (the SQPOLL poller
/// needs a second CPU): it must say so without ever printing `listening on`, and exit with the
/// unavailable code, so that a suite reads the cell as unavailable. A model that comes up (one
/// of each server family) still announces, and stops on SIGTERM.
#[test]
fn serve_announces_listening_only_once_its_model_is_up() {
    use ringside::model::Availability;
    use std::io::Read;
    let env = ringside::env::probe();
    let ready = |id: &str| {
        let m = ringside::registry::model(id).unwrap();
        matches!(m.availability(&env), Availability::Ready)
    };
    let cpu = ringside::measure::pin::allowed_cpus()[0].to_string();
    let out = ringside()
        .args(["serve", "--protocol", "echo", "--model", "uring-sqpoll"])
        .args(["--cpus", &cpu])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stdout.contains("listening on"),
        "announced before the model was up: {stdout}"
    );
    assert_eq!(
        out.status.code(),
        Some(ringside::child::EXIT_UNAVAILABLE),
        "{stderr}"
    );
    assert!(stderr.contains("unavailable"), "{stderr}");
    if ready("uring-sqpoll") {
        assert!(stderr.contains("SQPOLL"), "refused at setup: {stderr}");
    }
    for model in ["blocking", "epoll-lt", "uring"] {
        if !ready(model) {
            eprintln!("{model} skipped: unavailable here");
            continue;
        }
        let mut s = std::process::Command::new(assert_cmd::cargo::cargo_bin("ringside"))
            .args(["serve", "--protocol", "echo", "--model", model])
            .args(["--cpus", &cpu])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut so = s.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut b = [0u8; 256];
            let n = so.read(&mut b).unwrap_or(0);
            let _ = tx.send(String::from_utf8_lossy(&b[..n]).to_string());
            // Read on: the counters line comes on SIGTERM.
            let _ = so.read_to_end(&mut Vec::new());
        });
        let line = rx.recv_timeout(Duration::from_secs(10));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(s.id() as i32, libc::SIGTERM) };
        let t0 = std::time::Instant::now();
        let stopped = loop {
            if let Some(st) = s.try_wait().unwrap() {
                break Some(st);
            }
            if t0.elapsed() > Duration::from_secs(5) {
                let _ = s.kill();
                let _ = s.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let line = line.unwrap_or_else(|_| panic!("{model} announced nothing within 10 s"));
        assert!(line.starts_with("listening on "), "{model}: {line}");
        assert!(
            stopped.is_some_and(|st| st.success()),
            "{model}: {stopped:?} on SIGTERM"
        );
    }
}

/// CPU plans that cannot be: a CPU outside the allowed mask, overlapping server and load sets
/// without --allow-shared, more than one server CPU, --cpus with the new flags. Each is exit 2
/// naming the value and the valid ones, before anything is measured.
#[test]
fn bad_cpu_plans_are_refused_by_name() {
    let out = std::env::temp_dir().join(format!("ringside-cli-plan-{}", std::process::id()));
    let run = |args: &[&str]| {
        let mut c = ringside();
        c.args([
            "run",
            "micro.syscall",
            "--profile",
            "smoke",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .args(args);
        c.assert().code(2)
    };
    run(&["--server-cpus", "4095"])
        .stderr(predicate::str::contains("4095").and(predicate::str::contains("available")));
    run(&["--load-cpus", "0", "--server-cpus", "0"]).stderr(
        predicate::str::contains("share CPU(s) 0").and(predicate::str::contains("--allow-shared")),
    );
    run(&["--cpus", "1,0", "--server-cpus", "1"]).stderr(predicate::str::contains("--cpus"));
    run(&["--load-cpus", "x"]).stderr(predicate::str::contains("--load-cpus"));
    assert!(!out.join("results.json").exists());
}

/// The plan a run used is in results.json (the top-level `plan`, the topology in `env`) and the report.
#[test]
fn the_cpu_plan_is_recorded_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    ringside()
        .args([
            "run",
            "micro.syscall",
            "--profile",
            "smoke",
            "--quiet",
            "--out",
        ])
        .arg(dir.path())
        .assert()
        .success();
    let v: serde_json::Value =
        crate::common::schema::results_json(&dir.path().join("results.json"));
    let plan = &v["plan"];
    assert!(
        v["env"].get("cpu_plan").is_none(),
        "the plan is the run's, not the machine's"
    );
    assert!(
        plan["server"].as_array().is_some_and(|s| s.len() == 1),
        "{plan}"
    );
    assert!(
        plan["load"].as_array().is_some_and(|l| !l.is_empty()),
        "{plan}"
    );
    assert_eq!(plan["measured"], plan["server"][0]);
    assert!(v["env"]["topology"]["cores"].is_array());
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(md.contains("- CPU plan: server CPU"), "{md}");
}

#[test]
fn serve_threads_out_of_range_is_refused_by_name() {
    for n in ["0", "1025"] {
        ringside()
            .args([
                "serve",
                "--protocol",
                "echo",
                "--model",
                "epoll-lt",
                "--threads",
                n,
            ])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!("--threads {n}")))
            .stderr(predicate::str::contains("1..=1024"));
    }
}

/// Issue 28 item 17: errors that named the wrong thing or let bad input through. Each is now
/// refused with exit 2, naming the flag as given, the bad value as typed and the valid ones.
#[test]
fn bad_input_is_refused_in_its_own_words() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        (
            vec![
                "run".into(),
                "micro.syscall".into(),
                "--server-cpus".into(),
                "1,,0".into(),
            ],
            vec!["--server-cpus '1,,0'", "empty element"],
        ),
        (
            vec![
                "run".into(),
                "micro.syscall".into(),
                "--server-cpus".into(),
                "0,0".into(),
            ],
            vec!["--server-cpus '0,0'", "listed twice"],
        ),
        (
            vec![
                "run".into(),
                "micro.syscall".into(),
                "--models".into(),
                "epoll-lt,epoll-lt".into(),
            ],
            vec!["--models epoll-lt,epoll-lt", "twice"],
        ),
        (
            vec![
                "run".into(),
                "micro.syscall".into(),
                "--runs".into(),
                "4294967296".into(),
            ],
            vec!["--runs 4294967296: must be between 1 and 1000"],
        ),
        (
            vec![
                "load".into(),
                "--protocol".into(),
                "echo".into(),
                "--target".into(),
                "127.0.0.1:9".into(),
                "--rate".into(),
                "1e300".into(),
            ],
            vec!["--rate 1e300:"],
        ),
        (
            vec![
                "report".into(),
                "tests/fixtures/results.json".into(),
                "--out".into(),
                file.display().to_string(),
            ],
            vec!["cannot be written", "a-file"],
        ),
        (
            [
                "load",
                "--protocol",
                "http",
                "--target",
                "127.0.0.1:9",
                "--conns",
                "2000",
            ]
            .iter()
            .chain(&["--body-bytes", "1048576"])
            .map(|s| s.to_string())
            .collect(),
            vec!["--body-bytes 1048576", "--any-body"],
        ),
    ];
    for (args, want) in cases {
        let o = ringside().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        for w in want {
            assert!(err.contains(w), "{args:?}: wants {w:?}: {err}");
        }
        assert!(err.len() < 600, "{args:?}: short: {err}");
        if args.iter().any(|a| a == "0,0") {
            assert!(!err.contains("--cpus") && !err.contains("helper"), "{err}");
        }
    }
}
