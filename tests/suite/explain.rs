//! `run --explain`: a smoke run of one small network workload with two models stores, per
//! cell, where the server's sampled CPU went (every group named, the shares summing to the
//! samples), and the report draws it; without perf the run goes on and each breakdown says why.
//! The breakdown is checked on a closed-loop workload: its server is busy whenever the load
//! generator is not, so its window surely holds kernel work. (At echo.rate's smoke load of
//! 2,000 messages/s a fast machine's server works for a few milliseconds of the 400 ms window,
//! and perf's 4 kHz may catch none of it.)
//! Skips, saying why, where this machine cannot sample CPUs with perf (a failure under
//! `RINGSIDE_REQUIRE_TOOLS`, as in CI).

use assert_cmd::Command as Cmd;
use ringside::results::explain::GROUPS;
use serde_json::Value;
use std::time::Duration;

/// `ringside run WORKLOAD --profile smoke --models epoll-lt,uring --explain` with `path` as
/// PATH (`None`: inherited); the results and report.md.
fn run(workload: &str, path: Option<&std::path::Path>) -> (Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Cmd::cargo_bin("ringside").unwrap();
    c.timeout(Duration::from_secs(300))
        .args(["run", workload, "--profile", "smoke", "--runs", "1"])
        .args(["--models", "epoll-lt,uring", "--explain"])
        .args(["--quiet", "--format", "json", "--out"])
        .arg(dir.path());
    if let Some(p) = path {
        c.env("PATH", p);
    }
    let out = c.assert().success().get_output().stdout.clone();
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    (serde_json::from_slice(&out).unwrap(), md)
}

/// Reasons that mean this machine cannot sample (not a defect of ringside).
fn cannot_sample(why: &str) -> bool {
    [
        "perf is not installed",
        "perf refused",
        "perf record refused",
    ]
    .iter()
    .any(|s| why.contains(s))
}

/// The two `run --explain` runs, one after the other in one test: two echo runs side by side
/// put each other's loopback softirqs on the sampled server CPU, and the breakdown is then
/// partly the other run's. (As two tests behind a lock, the second held a test thread idle
/// for the first's 22 s.)
#[test]
fn run_explain_with_and_without_perf() {
    a_smoke_run_with_explain_stores_a_breakdown_per_cell_that_sums_to_the_samples();
    without_perf_the_run_goes_on_and_each_breakdown_says_why();
    explain_a_named_contender_against_the_leader();
}

/// `run --explain ext:mine` with a contender (a stripped copy of ringside's own server): the
/// run records the model named, every cell of its points is sampled, the caption explains
/// ext:mine (against the leader, or against the runner-up where it leads), the bars carry
/// their percentages in report.html, ringside's own server (epoll-lt, with symbols) has
/// user-space symbols, and the stripped contender's own code has none.
fn explain_a_named_contender_against_the_leader() {
    let dir = tempfile::tempdir().unwrap();
    let stripped = dir.path().join("mine");
    std::fs::copy(assert_cmd::cargo::cargo_bin("ringside"), &stripped).unwrap();
    let st = std::process::Command::new("strip").arg(&stripped).status();
    if !st.is_ok_and(|s| s.success()) {
        crate::common::tools::missing("strip", "a contender binary without symbols");
        return;
    }
    let out = dir.path().join("out");
    let contender = format!(
        "echo:mine={} serve --protocol echo --model epoll-lt --addr 127.0.0.1:{{port}}",
        stripped.display()
    );
    let o = Cmd::cargo_bin("ringside")
        .unwrap()
        .timeout(Duration::from_secs(300))
        .args(["run", "echo.payload", "--profile", "smoke", "--runs", "1"])
        .args(["--models", "epoll-lt,ext:mine", "--contender", &contender])
        .args([
            "--explain",
            "ext:mine",
            "--quiet",
            "--format",
            "json",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["explain_models"], serde_json::json!(["ext:mine"]), "{v}");
    let measured: Vec<&Value> = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "measured")
        .collect();
    assert!(measured.iter().any(|c| c["model"] == "ext:mine"), "{v}");
    for c in &measured {
        let e = &c["explain"];
        if let Some(why) = e["unavailable"].as_str() {
            if cannot_sample(why) {
                crate::common::tools::cannot(&format!("perf cannot sample here: {why}"));
                return;
            }
            panic!("{}: breakdown unavailable: {why}", c["model"]);
        }
        let top: Vec<&str> = e["top_user"]
            .as_array()
            .unwrap_or_else(|| panic!("top_user recorded: {e}"))
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert!(
            top.iter()
                .all(|n| !n.is_empty() && !n.contains("[unknown]")),
            "{e}"
        );
        if c["model"] == "epoll-lt" {
            assert!(
                !top.is_empty(),
                "ringside's own server has user-space symbols: {e}"
            );
        } else {
            // Stripped: none of ringside's own functions is named (libc's may be).
            assert!(!top.iter().any(|n| n.contains("ringside::")), "{e}");
        }
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        [
            "ext:mine spends",
            "ext:mine (leader)",
            "ext:mine (ranked first",
            "ext:mine was not",
            "ext:mine's breakdown",
            "no comparison between ext:mine"
        ]
        .iter()
        .any(|w| md.contains(w)),
        "a caption on ext:mine: {md}"
    );
    assert!(!md.contains("no leader to explain"), "{md}");
    assert!(md.contains("top user-space symbols"), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let explain = &html[html
        .find("Where the CPU went")
        .expect("the explain section")..];
    let labelled = explain
        .split("</text>")
        .filter(|t| t.trim_end().ends_with('%') && t.contains("<text"))
        .count();
    assert!(
        labelled >= 2,
        "segments labelled with their shares: {explain}"
    );
}

/// A name `--explain` is given that is not a model of the run exits 2 naming the valid ones
/// (before anything runs); a workload right after a bare `--explain` is what to run.
#[test]
fn explain_names_only_models_of_the_run() {
    let o = Cmd::cargo_bin("ringside")
        .unwrap()
        .args(["run", "echo.payload", "--models", "epoll-lt,uring"])
        .args(["--explain", "blocking", "--dry-run"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--explain blocking") && err.contains("valid: epoll-lt, uring"),
        "{err}"
    );
    assert!(o.stdout.is_empty(), "{o:?}");
    let o = Cmd::cargo_bin("ringside")
        .unwrap()
        .args([
            "run",
            "--models",
            "epoll-lt",
            "--explain",
            "echo.payload",
            "--dry-run",
        ])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("echo.payload"), "{out}");
}

fn a_smoke_run_with_explain_stores_a_breakdown_per_cell_that_sums_to_the_samples() {
    let (v, md) = run("echo.payload", None);
    let cases: Vec<&Value> = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "measured")
        .collect();
    assert!(cases.len() >= 2 && cases.len() % 2 == 0, "{v}");
    for c in &cases {
        let e = &c["explain"];
        if let Some(why) = e["unavailable"].as_str() {
            if cannot_sample(why) {
                crate::common::tools::cannot(&format!("perf cannot sample here: {why}"));
                return;
            }
            panic!("{}: breakdown unavailable: {why}", c["model"]);
        }
        let model = c["model"].as_str().unwrap();
        assert!(e["samples"].as_u64().unwrap() > 0, "{model}: {e}");
        assert!(e["window_ns"].as_u64().unwrap() > 0, "{model}: {e}");
        let groups = e["groups"].as_array().unwrap();
        let keys: Vec<&str> = groups.iter().map(|g| g["name"].as_str().unwrap()).collect();
        let want: Vec<&str> = GROUPS.iter().map(|g| g.0).collect();
        assert_eq!(keys, want, "{model}: every group named, in order");
        assert!(keys.contains(&"syscall") && keys.contains(&"idle"));
        let f = |k: &str| {
            groups
                .iter()
                .find(|g| g["name"] == k)
                .and_then(|g| g["fraction"].as_f64())
                .unwrap()
        };
        let sum: f64 = want.iter().map(|k| f(k)).sum();
        assert!(
            (sum - 1.0).abs() < 0.01,
            "{model}: shares sum to {sum}: {e}"
        );
        assert!(want.iter().all(|k| (0.0..=1.0).contains(&f(k))), "{e}");
        // A closed-loop echo server works whenever a message is in flight: enough samples of
        // its own work (neither idle nor another program's) for the report to compare.
        let own = 1.0 - f("idle") - f("other_processes");
        let own_samples = own * e["samples"].as_f64().unwrap();
        assert!(
            own_samples >= ringside::analysis::explain::MIN_WORK_SAMPLES,
            "{model}: {own_samples:.0} samples of its own work: {e}"
        );
        let kernel: f64 = [
            "syscall",
            "tcp_ip",
            "softirq",
            "scheduler",
            "io_uring",
            "copies",
            "lock_slow_path",
            "other_kernel",
        ]
        .iter()
        .map(|k| f(k))
        .sum();
        assert!(
            kernel > 0.0,
            "{model}: an echo server's window has kernel work: {e}"
        );
        let top: Vec<f64> = e["top_kernel"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["fraction"].as_f64().unwrap())
            .collect();
        assert!(!top.is_empty() && top.len() <= 10, "{e}");
        assert!(top.windows(2).all(|w| w[0] >= w[1]), "most first: {top:?}");
    }
    assert!(md.contains("Where the CPU went"), "{md}");
    assert!(
        ["(runner-up)", "no comparison", "no leader", "no runner-up"]
            .iter()
            .any(|w| md.contains(w)),
        "a sentence on the point: {md}"
    );
}

fn without_perf_the_run_goes_on_and_each_breakdown_says_why() {
    let empty = tempfile::tempdir().unwrap();
    let (v, md) = run("echo.rate", Some(empty.path()));
    let cases = v["cases"].as_array().unwrap();
    let measured: Vec<&Value> = cases.iter().filter(|c| c["status"] == "measured").collect();
    assert_eq!(measured.len(), 2, "{v}");
    for c in measured {
        let why = c["explain"]["unavailable"].as_str().unwrap_or_default();
        assert!(why.contains("perf is not installed"), "{c}");
    }
    assert!(md.contains("unavailable: perf is not installed"), "{md}");
}

/// `ringside load --explain` samples the load generator's own CPUs over its window: every
/// group named, in order, summing to the samples, and the summary says where they went.
/// Without --cpus there is nothing to sample: exit 2, naming the flag.
#[test]
fn load_explain_breaks_down_the_load_generator_cpus() {
    let addr = crate::common::serve(crate::common::Mode::Echo);
    let cpu = ringside::measure::pin::allowed_cpus()
        .last()
        .copied()
        .unwrap()
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("load.json");
    let base = [
        "load",
        "--protocol",
        "echo",
        "--target",
        &addr.to_string(),
        "--conns",
        "4",
        "--duration",
        "0.5",
        "--warmup",
        "0.2",
        "--explain",
    ];
    let o = Cmd::cargo_bin("ringside")
        .unwrap()
        .args(base)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--explain"),
        "{o:?}"
    );
    let o = Cmd::cargo_bin("ringside")
        .unwrap()
        .args(base)
        .args(["--cpus", &cpu, "--json"])
        .arg(&json)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let e = &v["explain"];
    if let Some(why) = e["unavailable"].as_str() {
        if cannot_sample(why) {
            crate::common::tools::cannot(&format!("perf cannot sample here: {why}"));
            return;
        }
        panic!("breakdown unavailable: {why}");
    }
    assert!(e["samples"].as_u64().unwrap() > 0, "{e}");
    assert_eq!(
        e["cpus"],
        serde_json::json!([cpu.parse::<u32>().unwrap()]),
        "{e}"
    );
    let groups = e["groups"].as_array().unwrap();
    let keys: Vec<&str> = groups.iter().map(|g| g["name"].as_str().unwrap()).collect();
    let want: Vec<&str> = GROUPS.iter().map(|g| g.0).collect();
    assert_eq!(keys, want);
    let sum: f64 = groups.iter().map(|g| g["fraction"].as_f64().unwrap()).sum();
    assert!((sum - 1.0).abs() < 1e-6, "{sum}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("where the load CPU"), "{out}");
}
