//! A smoke-profile run of the micro suite through the real binary: the JSON's structure, a
//! measured cell for every available model, and syscall counts that match each loop's
//! mechanics. No speed is asserted.

use assert_cmd::Command;
use serde_json::Value;
use std::time::Duration;

fn run_smoke(dir: &std::path::Path, extra: &[&str]) -> Value {
    let mut c = Command::cargo_bin("ringside").unwrap();
    c.timeout(Duration::from_secs(300))
        .args([
            "run",
            "micro",
            "micro.fd_scaling",
            "micro.batching",
            "--profile",
            "smoke",
            "--quiet",
            "--format",
            "json",
            "--out",
        ])
        .arg(dir)
        .args(extra);
    let out = c.assert().success().get_output().stdout.clone();
    let printed: Value = serde_json::from_slice(&out).expect("stdout is the results JSON");
    let saved: Value = crate::common::schema::results_json(&dir.join("results.json"));
    assert_eq!(printed, saved, "stdout and results.json agree");
    assert!(dir.join("report.md").exists());
    saved
}

fn cell<'a>(cases: &'a [Value], workload: &str, model: &str, key: &str, val: u64) -> &'a Value {
    cases
        .iter()
        .find(|c| c["workload"] == workload && c["model"] == model && c["params"][key] == val)
        .unwrap_or_else(|| panic!("no {workload} {model} {key}={val} cell"))
}

#[test]
fn micro_smoke_run_is_complete_and_counts_syscalls() {
    let d = tempfile::tempdir().unwrap();
    // Every model (without --models only the families' leaders run).
    let r = run_smoke(d.path(), &["--models", "all"]);
    assert_eq!(r["schema_version"], ringside::results::SCHEMA_VERSION);
    assert_eq!(r["finished"], true);
    assert_eq!(r["profile"], "smoke");
    // What each workload's figures mean, from its row: a micro loop, bars by median latency.
    let facts = &r["workloads"]["micro.pipe"];
    assert_eq!(
        (&facts["net"], &facts["verdict"]),
        (&Value::from(false), &Value::from("latency"))
    );
    for k in ["kernel", "io_uring", "perf_syscalls", "cpus"] {
        assert!(
            r["env"].as_object().unwrap().keys().any(|x| x.contains(k)),
            "env lacks {k}"
        );
    }
    let cases = r["cases"].as_array().unwrap();
    let workloads = [
        "micro.syscall",
        "micro.pipe",
        "micro.fd_scaling",
        "micro.batching",
    ];
    for w in workloads {
        assert!(cases.iter().any(|c| c["workload"] == w), "no case for {w}");
    }

    // Every cell is measured, or says why not; measured cells carry every figure.
    for c in cases {
        let status = c["status"].as_str().unwrap();
        match status {
            "measured" => {
                for f in [
                    "latency_ns",
                    "ops_per_sec",
                    "run_p50_ns",
                    "cpu_ns_per_op",
                    "syscalls_per_op",
                ] {
                    assert!(!c[f].is_null(), "{c} lacks {f}");
                }
                for p in ["min", "p50", "p90", "p99", "p999", "max", "mean", "stddev"] {
                    assert!(c["latency_ns"][p].is_number(), "{c} lacks latency_ns.{p}");
                }
                assert!(c["latency_ns"]["p50"].as_f64().unwrap() > 0.0);
                assert!(c["repetitions"].as_u64().unwrap() >= 1);
            }
            "unavailable" | "failed" | "not_applicable" => {
                assert!(
                    !c["reason"].as_str().unwrap_or("").is_empty(),
                    "{c} has no reason"
                );
            }
            s => panic!("unknown status {s}"),
        }
    }

    // Every available model measured every workload it takes part in; blocking and epoll
    // exist on every Linux and can never be skipped.
    let env: ringside::env::EnvReport = serde_json::from_value(r["env"].clone()).unwrap();
    for m in ringside::registry::MODELS {
        for w in ringside::registry::WORKLOADS {
            if w.accepts(m).is_err() || !w.id().starts_with("micro.") {
                continue; // this run is the micro suite only
            }
            let mine: Vec<&Value> = cases
                .iter()
                .filter(|c| c["workload"] == w.id() && c["model"] == m.id)
                .collect();
            assert!(!mine.is_empty(), "{} x {} missing", w.id(), m.id);
            let ready = m.availability(&env).is_ready();
            if m.always_available() || ready {
                for c in &mine {
                    let ok = c["status"] == "measured"
                        || (c["status"] == "not_applicable" && c["variant"] == "select");
                    assert!(ok, "{} x {} should have been measured: {c}", w.id(), m.id);
                }
            } else {
                eprintln!("skipped {} x {}: {}", w.id(), m.id, m.availability(&env));
            }
        }
    }

    // Syscalls per op match each loop's mechanics.
    let sys = |c: &Value| c["syscalls_per_op"].as_f64();
    if env.perf_syscalls.is_ready() {
        let getpid = cases
            .iter()
            .find(|c| c["workload"] == "micro.syscall")
            .unwrap();
        assert_eq!(sys(getpid), Some(1.0), "getpid: one syscall per op");
        assert_eq!(
            sys(cell(cases, "micro.pipe", "blocking", "msg_bytes", 64)),
            Some(2.0)
        );
        assert_eq!(
            sys(cell(cases, "micro.pipe", "epoll-lt", "msg_bytes", 64)),
            Some(3.0)
        );
        if env.io_uring.is_ready() {
            assert_eq!(
                sys(cell(cases, "micro.pipe", "uring", "msg_bytes", 64)),
                Some(1.0)
            );
            let b64 = sys(cell(cases, "micro.batching", "uring", "batch", 64)).unwrap();
            assert!(b64 < 0.05, "io_uring batched 64: {b64} syscalls per pair");
        }
    } else {
        for c in cases.iter().filter(|c| c["status"] == "measured") {
            assert!(
                c["syscalls_per_op"].is_null() && c["syscalls_per_op_unavailable"].is_string(),
                "{c}"
            );
        }
        eprintln!("syscall counts unchecked: {}", env.perf_syscalls);
    }
}

#[test]
fn unavailable_models_leave_the_run_going() {
    // A model the plan makes unavailable (SQPOLL on one CPU) is a cell with a reason, and the
    // rest of the run still measures.
    let d = tempfile::tempdir().unwrap();
    let r = run_smoke(
        d.path(),
        &["--models", "blocking,uring-sqpoll", "--cpus", "0"],
    );
    let cases = r["cases"].as_array().unwrap();
    let sq: Vec<&Value> = cases
        .iter()
        .filter(|c| c["model"] == "uring-sqpoll" && c["status"] != "not_applicable")
        .collect();
    assert!(!sq.is_empty());
    for c in sq {
        assert_eq!(c["status"], "unavailable", "{c}");
        assert!(c["reason"].as_str().unwrap().contains("SQPOLL"), "{c}");
    }
    assert!(cases
        .iter()
        .any(|c| c["model"] == "blocking" && c["status"] == "measured"));
    // A named model that does not take part says so.
    assert!(cases.iter().any(|c| c["workload"] == "micro.syscall"
        && c["model"] == "uring-sqpoll"
        && c["status"] == "not_applicable"));
}
