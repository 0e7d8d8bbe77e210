//! Issue 46 item 4 with its hostile peer: a server host whose `remote-serve` forges its figures
//! (a fake `ssh` on PATH runs the remote command here; a wrapper `--remote-ringside` rewrites
//! the real one's `figures` line). Its cell fails as implausible, naming the figure; the run
//! goes on.

use crate::common::bin::bin;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

/// Writes an executable `sh` script.
fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `run echo.rate --profile smoke` of epoll-lt on "another host" whose figures line is passed
/// through `sed_expr`: the one cell.
fn forged(dir: &Path, sed_expr: &str) -> serde_json::Value {
    // ssh [options] DEST -- COMMAND: runs COMMAND here.
    script(
        &dir.join("ssh"),
        "while [ \"$#\" -gt 0 ] && [ \"$1\" != \"--\" ]; do shift; done\nshift\nexec sh -c \"$1\"",
    );
    let forge = dir.join("forge");
    script(
        &forge,
        &format!(
            "'{}' \"$@\" | sed -u '/^figures /{sed_expr}'",
            bin().display()
        ),
    );
    let out = dir.join("out");
    let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap());
    let o = assert_cmd::Command::new(bin())
        .timeout(Duration::from_secs(300))
        .env("PATH", path)
        .args([
            "run",
            "echo.rate",
            "--profile",
            "smoke",
            "--runs",
            "1",
            "--quiet",
        ])
        .args(["--models", "epoll-lt", "--server-host", "127.0.0.1"])
        .arg(format!("--remote-ringside={}", forge.display()))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let v: serde_json::Value = std::fs::read(out.join("results.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| panic!("no results: {err}"));
    let cells = v["cases"].as_array().unwrap();
    assert_eq!(cells.len(), 1, "{err}\n{v}");
    cells[0].clone()
}

#[test]
fn a_server_host_that_forges_its_figures_fails_its_cell() {
    // Its own counter at u64::MAX (before: summed over repetitions, wrapped).
    let d = tempfile::tempdir().unwrap();
    let c = forged(
        d.path(),
        r#"s/"server_reads":[0-9]*/"server_reads":18446744073709551615/"#,
    );
    assert_eq!(c["status"], "failed", "{c}");
    let why = c["reason"].as_str().unwrap();
    assert!(
        why.contains("implausible") && why.contains("server_reads"),
        "{why}"
    );
    // No CPU at either edge while its counters show the reads and writes that served the
    // window (before: measured, no warning).
    let d = tempfile::tempdir().unwrap();
    let c = forged(d.path(), r#"s/"total_ns":[0-9]*/"total_ns":0/g"#);
    assert_eq!(c["status"], "failed", "{c}");
    let why = c["reason"].as_str().unwrap();
    assert!(
        why.contains("implausible") && why.contains("0 ns of CPU") && why.contains("reads"),
        "{why}"
    );
}
