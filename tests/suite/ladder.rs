//! `echo.ladder`: a smoke run yields one cell per rung at each point (capacity and equal load
//! at 50 and 1000 connections), rungs that cannot run here are cells with their reason, and
//! the report draws the ladder table with those gaps.

use assert_cmd::Command as Cmd;
use ringside::workload::net::ladder::RUNGS;
use std::time::Duration;

#[test]
fn a_smoke_run_of_echo_ladder_has_one_cell_per_rung_at_each_point() {
    let dir = tempfile::tempdir().unwrap();
    let out = Cmd::cargo_bin("ringside")
        .unwrap()
        .timeout(Duration::from_secs(600))
        .args(["run", "echo.ladder", "--profile", "smoke", "--runs", "1"])
        // 200 ms windows (smoke's are 400): what is checked is the cells, the gaps and the
        // drawings, not the figures; 36 s at 400 ms (2026-11-28).
        .args(["--duration", "0.2"])
        .args(["--quiet", "--format", "json", "--out"])
        .arg(dir.path())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let cases = v["cases"].as_array().unwrap();
    let points = 4; // 50 and 1000 connections, each at capacity and at equal load
    assert_eq!(cases.len(), points * RUNGS.len(), "{v}");
    for r in RUNGS {
        let mine: Vec<_> = cases.iter().filter(|c| c["model"] == r.model).collect();
        assert_eq!(mine.len(), points, "{}", r.model);
        for c in mine {
            assert_eq!(c["workload"], "echo.ladder");
            match c["status"].as_str().unwrap() {
                "measured" => assert!(c["cpu_ns_per_op"]["total"].as_f64().unwrap() > 0.0),
                "unavailable" => assert!(
                    !c["reason"].as_str().unwrap_or("").is_empty(),
                    "an unavailable rung says why: {c}"
                ),
                s => panic!("{}: {s}: {c}", r.model),
            }
        }
    }
    // Loopback has no NAPI: that rung is a gap with its reason, in the cells and the report.
    assert!(cases
        .iter()
        .filter(|c| c["model"] == "uring-bundle-inc-minwait-napi")
        .all(|c| c["status"] == "unavailable"));
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(md.contains("echo.ladder ladder"), "{md}");
    assert!(
        md.contains("uring-bundle-inc-minwait-napi: unavailable"),
        "{md}"
    );
    // report.html draws a waterfall per point, the NAPI rung a gap with its reason.
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert_eq!(
        html.matches("data-waterfall=").count(),
        points,
        "one waterfall per point"
    );
    assert!(html.contains("gap: unavailable: loopback has no NAPI"));
    assert!(dir
        .path()
        .join("charts/echo.ladder-waterfall-1.svg")
        .exists());
}
