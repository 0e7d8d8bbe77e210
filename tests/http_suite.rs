//! The HTTP suite through the binary at the smoke profile: every cell measured with zero
//! errors, transfer and server CPU recorded, wrk's figures beside ringside's when wrk is
//! installed (and a stated skip when not), the open-loop sweep's offered and achieved rates,
//! and an external contender that speaks another protocol left out of the HTTP tables.

use assert_cmd::Command as Cmd;
use std::time::Duration;

fn run_json(args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let out = Cmd::cargo_bin("ringside")
        .unwrap()
        .timeout(Duration::from_secs(300))
        .args(["run", "--profile", "smoke", "--runs", "1", "--quiet"])
        .args(["--format", "json", "--out"])
        .arg(dir.path())
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

fn wrk_installed() -> bool {
    ringside::crosscheck::wrk::version().is_ok()
}

#[test]
fn http_clients_sweep_is_measured_with_wrk_beside_it() {
    let v = run_json(&[
        "http.clients",
        "--models",
        "epoll-et",
        // An echo-only contender: not an HTTP server, so not in the HTTP suite.
        "--contender",
        "echo:cat-echo=true {port}",
    ]);
    let cases = v["cases"].as_array().unwrap();
    let ours: Vec<_> = cases.iter().filter(|c| c["model"] == "epoll-et").collect();
    assert_eq!(ours.len(), 5, "5, 50, 100, 500, 1000 clients");
    let wrk = wrk_installed();
    if !wrk {
        eprintln!("wrk cross-check skipped: wrk not installed (apt-get install wrk)");
    }
    for c in &ours {
        assert_eq!(c["status"], "measured", "{c}");
        let k = &c["counters"];
        for e in [
            "load_connect_errors",
            "load_io_errors",
            "load_mismatches",
            "load_timeouts",
            "load_non_2xx",
            "load_malformed",
        ] {
            assert_eq!(k[e].as_u64().unwrap_or(0), 0, "{e} in {c}");
        }
        assert!(c["bytes_per_sec"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["cpu_busy"].as_f64().unwrap() > 0.0, "{c}");
        if wrk {
            assert!(k["wrk_requests"].as_u64().unwrap() > 0, "{c}");
            assert_eq!(k["wrk_non_2xx"].as_u64().unwrap(), 0, "{c}");
        }
    }
    let ext: Vec<_> = cases
        .iter()
        .filter(|c| c["model"] == "ext:cat-echo")
        .collect();
    assert_eq!(
        ext.len(),
        1,
        "one not-applicable row for the echo-only contender"
    );
    for c in ext {
        assert_eq!(c["status"], "not_applicable", "{c}");
    }
}

#[test]
fn http_rate_sweep_records_offered_and_achieved_rates() {
    let v = run_json(&["http.rate", "--models", "epoll-lt"]);
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2, "two offered rates at smoke");
    for c in cases {
        assert_eq!(c["status"], "measured", "{c}");
        let k = &c["counters"];
        let offered = k["offered_per_sec"].as_u64().unwrap();
        assert_eq!(offered, c["params"]["rate_per_sec"].as_u64().unwrap());
        let achieved = k["achieved_per_sec"].as_u64().unwrap();
        assert!(
            achieved > 0 && achieved <= offered * 11 / 10,
            "{achieved} vs {offered}"
        );
    }
}
