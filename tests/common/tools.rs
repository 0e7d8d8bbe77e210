//! What the tests need that CI has: tools `.ci/run` installs (fio, wrk, chromium, ssh and sshd,
//! iproute2, perf) and capabilities of CI's machine (root, so CAP_NET_ADMIN and network
//! namespaces; sshd running in a namespace; perf able to sample; two CPUs). Where one is
//! missing a test says it skipped, and why; with `RINGSIDE_REQUIRE_TOOLS` set (CI sets it) a
//! missing one fails the test instead, so a skip never passes green in CI.
//!
//! Not for a model this kernel cannot run (an io_uring feature, SQPOLL refused, NAPI over
//! veth): that is an outcome ringside reports as `unavailable: <reason>`, and a test may skip
//! it anywhere.

/// The switch `.ci/run` sets.
pub const REQUIRE: &str = "RINGSIDE_REQUIRE_TOOLS";

/// `tool` is missing: fails the test under [`REQUIRE`], else prints `skipped: {what}` (the
/// caller then returns, or checks what it still can).
pub fn missing(tool: &str, what: &str) {
    skip(&format!("{tool} is missing (CI installs it)"), what);
}

/// This machine cannot do what CI's can (`what` says what and why: not root, no network
/// namespaces, sshd will not start in one, perf cannot sample, one CPU): fails the test under
/// [`REQUIRE`], else prints `skipped: {what}` (the caller then returns, or checks what it
/// still can).
pub fn cannot(what: &str) {
    skip("this machine lacks what CI's has", what);
}

fn skip(lack: &str, what: &str) {
    if std::env::var_os(REQUIRE).is_some() {
        panic!("{lack}, and {REQUIRE} is set: {what}");
    }
    eprintln!("skipped: {what}");
}
