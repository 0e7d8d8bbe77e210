//! The binary under test and the results fixture, for every test file that drives them.

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The `ringside` this test build made.
pub fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("ringside")
}

/// `ringside` as a command that fails the test after 60 s.
pub fn ringside() -> Command {
    let mut c = Command::new(bin());
    c.timeout(Duration::from_secs(60));
    c
}

/// The results file the report and compare tests read (`tests/fixtures/results.json`).
pub fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results.json")
}
