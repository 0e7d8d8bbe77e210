//! Tools the tests drive that `.ci/run` installs (fio, wrk, chromium, ssh and sshd, iproute2).
//! Where one is missing a test says it skipped, and why; with `RINGSIDE_REQUIRE_TOOLS` set (CI
//! sets it) a missing tool fails the test instead, so a skip never passes green in CI.

/// The switch `.ci/run` sets.
pub const REQUIRE: &str = "RINGSIDE_REQUIRE_TOOLS";

/// `tool` is missing: fails the test under [`REQUIRE`], else prints `skipped: {what}` (the
/// caller then returns, or checks what it still can).
pub fn missing(tool: &str, what: &str) {
    if std::env::var_os(REQUIRE).is_some() {
        panic!("{tool} is missing, and {REQUIRE} is set (CI installs it): {what}");
    }
    eprintln!("skipped: {what}");
}
