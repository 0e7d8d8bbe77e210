//! The command line: help, bad values named with the valid ones, exit codes, and errors that
//! come before any measuring.

use assert_cmd::Command;
use predicates::prelude::*;
use std::time::Duration;

fn ringside() -> Command {
    let mut c = Command::cargo_bin("ringside").unwrap();
    c.timeout(Duration::from_secs(60));
    c
}

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
