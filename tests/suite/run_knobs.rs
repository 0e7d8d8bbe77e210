//! `run`'s knob flags (`--conns`, `--clients`, `--msg-bytes`, `--body-bytes`, `--duration`,
//! `--warmup`, ...) and `--dry-run`, driven through the binary.

use crate::common;

use common::bin::ringside;
use predicates::prelude::*;

/// The measured cells of a run's printed results.
fn measured(v: &serde_json::Value) -> Vec<&serde_json::Value> {
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "measured")
        .collect()
}

#[test]
fn knob_flags_set_the_params_every_cell_runs_and_records() {
    let dir = tempfile::tempdir().unwrap();
    let v = common::run::run_json(
        &[
            "echo.payload",
            "--profile",
            "smoke",
            "--models",
            "epoll-lt",
            "--conns",
            "7",
            "--msg-bytes",
            "100",
            "--duration",
            "200ms",
            "--warmup",
            "0.05",
        ],
        &dir.path().join("out"),
    );
    // The profile's message-size sweep collapses to the one size given: one cell.
    let cells = measured(&v);
    assert_eq!(cells.len(), 1, "{}", v["cases"]);
    let p = &cells[0]["params"];
    assert_eq!(
        (
            &p["conns"],
            &p["msg_bytes"],
            &p["duration_ms"],
            &p["warmup_ms"]
        ),
        (
            &serde_json::json!(7),
            &serde_json::json!(100),
            &serde_json::json!(200),
            &serde_json::json!(50)
        ),
        "{p}"
    );
    // The run says it ran with overrides, and the load generator ran what they say.
    assert_eq!(v["overrides"]["conns"], serde_json::json!([7]));
    assert_eq!(v["overrides"]["duration_ms"], serde_json::json!([200]));
    let c = &cells[0]["counters"];
    // Summed over the repetitions: 7 live connections in each.
    let live = c["load_live_conns"].as_u64().unwrap();
    assert!(live > 0 && live % 7 == 0, "{c}");
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.contains("overridden: conns=7"), "{md}");
}

#[test]
fn body_bytes_are_served_and_checked_by_every_http_cell() {
    let dir = tempfile::tempdir().unwrap();
    let v = common::run::run_json(
        &[
            "http.clients",
            "--profile",
            "smoke",
            "--models",
            "epoll-lt,tokio",
            "--clients",
            "5",
            "--body-bytes",
            "2048",
            "--duration",
            "0.2",
        ],
        &dir.path().join("out"),
    );
    let cells = measured(&v);
    assert!(cells.len() >= 2, "{}", v["cases"]);
    for c in cells {
        assert_eq!(c["params"]["body_bytes"], 2048, "{c}");
        assert_eq!(c["params"]["clients"], 5, "{c}");
        // Every response carried the 2 KiB body (a mismatch fails the cell): at least 2 KiB
        // received per request.
        let ops = c["ops_total"].as_f64().unwrap();
        let bytes =
            c["bytes_per_sec"].as_f64().unwrap() / c["ops_per_sec"]["median"].as_f64().unwrap();
        assert!(
            ops > 0.0 && bytes >= 2048.0,
            "{bytes} bytes per request: {c}"
        );
    }
}

#[test]
fn a_knob_a_selected_workload_does_not_take_is_refused_naming_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    ringside()
        .args([
            "run",
            "echo.payload",
            "micro.pipe",
            "--profile",
            "smoke",
            "--conns",
            "100",
        ])
        .arg("--out")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--conns"))
        .stderr(predicate::str::contains("micro.pipe does not take it"))
        .stderr(predicate::str::contains("applies to echo.payload"));
    // HTTP has clients, not connections: the refusal names the workloads that take it.
    ringside()
        .args(["run", "http.clients", "--conns", "100"])
        .arg("--out")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no selected workload takes it"))
        .stderr(predicate::str::contains("echo.conns"));
    for (flag, bad) in [
        ("--conns", "0"),
        ("--conns", "many"),
        ("--conns", "99999999"),
        ("--duration", "0"),
        ("--warmup", "soon"),
        ("--msg-bytes", "1"),
    ] {
        ringside()
            .args(["run", "echo.payload", flag, bad])
            .arg("--out")
            .arg(&out)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!("{flag} '{bad}'")))
            .stderr(predicate::str::contains("between"));
    }
    // Negative values reach the range check, naming the flag (not clap's "unexpected
    // argument"); an empty list element is named as such.
    for (flag, bad, says) in [
        ("--conns", "-1", "between"),
        ("--duration", "-2", "between"),
        ("--conns", "1,,2", "empty element"),
    ] {
        ringside()
            .args(["run", "echo.payload", flag, bad])
            .arg("--out")
            .arg(&out)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!("{flag} '{bad}'")))
            .stderr(predicate::str::contains(says));
    }
    // A value inside the flag's range but outside a selected workload's own is refused
    // before anything runs, in a dry run too, naming the workload and its range (every
    // cell would fail).
    for (workload, flag, bad) in [
        ("udp.echo", "--msg-bytes", "4000"),
        ("udp.echo_gso", "--msg-bytes", "4097"),
    ] {
        for dry in [false, true] {
            let mut c = ringside();
            c.args(["run", workload, flag, bad]).arg("--out").arg(&out);
            if dry {
                c.arg("--dry-run");
            }
            c.assert()
                .code(2)
                .stderr(predicate::str::contains(format!("{flag} {bad}")))
                .stderr(predicate::str::contains(format!(
                    "{workload} takes msg_bytes between 20 and 2048"
                )));
        }
    }
    // Connections beyond the open-file limit this process can reach (the hard limit, unless
    // it may raise it) are refused up front.
    let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .maximum
        .unwrap_or(u64::MAX);
    if hard < 90_000 {
        let can_raise = std::fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .is_some_and(|m| m & (1 << 24) != 0);
        let over = (hard + 1).to_string();
        let mut c = ringside();
        c.args(["run", "echo.rate", "--conns", &over, "--dry-run"]);
        if can_raise {
            c.assert().code(0);
        } else {
            c.assert()
                .code(2)
                .stderr(predicate::str::contains(format!("--conns '{over}'")));
        }
    }
    assert!(!out.exists(), "a refused run made its output directory");
}

#[test]
fn dry_run_prints_the_cells_and_measures_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = ringside()
        .current_dir(dir.path())
        .args([
            "run",
            "echo.payload",
            "--profile",
            "smoke",
            "--models",
            "epoll-lt,uring",
            "--conns",
            "10,100",
            "--dry-run",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    // Each of the profile's message sizes at each connection count given.
    let sizes = ringside::registry::workload("echo.payload")
        .unwrap()
        .points(
            ringside::plan::Profile::Smoke,
            ringside::registry::model("epoll-lt").unwrap(),
        )
        .len();
    assert!(
        text.contains(&format!(
            "{} cells (2 models, {} points)",
            4 * sizes,
            2 * sizes
        )),
        "{text}"
    );
    assert!(
        text.contains("conns=10 ") && text.contains("conns=100 "),
        "{text}"
    );
    assert!(text.contains("models: epoll-lt, uring"), "{text}");
    assert!(text.contains("estimated time: ~"), "{text}");
    // Nothing measured, nothing written.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
