//! The HTTP suite through the binary at the smoke profile: every cell measured with zero
//! errors, transfer and server CPU recorded, wrk's figures beside ringside's when wrk is
//! installed (and a stated skip when not), the open-loop sweep's offered and achieved rates,
//! and an external contender that speaks another protocol left out of the HTTP tables.

use crate::common;

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
    let (equal, ours): (Vec<_>, Vec<_>) = cases
        .iter()
        .filter(|c| c["model"] == "epoll-et")
        .partition(|c| c.get("equal_load").is_some());
    assert_eq!(ours.len(), 5, "5, 50, 100, 500, 1000 clients");
    // The equal-load point at 50 clients (smoke): driven at the runner's rate when it passes
    // one, else not applicable and saying so; never with wrk.
    assert_eq!(equal.len(), 1, "one equal-load point at smoke");
    let e = equal[0];
    assert_eq!(e["params"]["clients"], 50, "{e}");
    match e["status"].as_str().unwrap() {
        "measured" => {
            assert!(
                e["counters"]["offered_per_sec"].as_u64().unwrap() > 0,
                "{e}"
            );
            assert!(e["counters"].get("wrk_requests").is_none(), "{e}");
        }
        "not_applicable" => {
            assert!(
                e["reason"].as_str().unwrap().contains("no offered rate"),
                "{e}"
            )
        }
        other => panic!("equal-load cell {other}: {e}"),
    }
    let wrk = wrk_installed();
    if !wrk {
        common::tools::missing(
            "wrk",
            "the wrk cross-check: wrk not installed (apt-get install wrk)",
        );
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

/// http.clients: every equal-load point right after its capacity point, its params that
/// point's; quick at 100 clients, full at every count.
#[test]
fn http_equal_load_points_follow_their_capacity_points() {
    use ringside::profile::Profile;
    use ringside::workload::net::http::HttpClients;
    use ringside::workload::Workload;
    let m = ringside::registry::model("epoll-lt").unwrap();
    for (profile, want) in [
        (Profile::Smoke, vec![50]),
        (Profile::Quick, vec![100]),
        (Profile::Full, vec![5, 50, 100, 500, 1000]),
    ] {
        let pts = HttpClients.points(profile, m);
        let mut got = Vec::new();
        for (i, p) in pts.iter().enumerate() {
            let Some(eq) = &p.equal_load else { continue };
            let cap = &pts[i - 1];
            assert!(cap.equal_load.is_none());
            assert_eq!(eq.capacity_of, cap.params);
            assert_eq!(p.params, cap.params);
            got.push(cap.params.u64("clients").unwrap());
        }
        assert_eq!(got, want, "{profile:?}");
    }
}
