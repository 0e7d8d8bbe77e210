//! The echo suite's measurement of a server child process, against the stand-in echo server
//! re-executed from this test binary (so the suite's code is tested before any real server
//! exists): counts, server CPU and syscalls from outside, the server's `counters` line, and a
//! server that dies before listening failing its cell with its stderr tail. Then, when this
//! build has `ringside serve`, a smoke run of `ringside run echo.payload` through the binary.

use crate::common;

use assert_cmd::Command as Cmd;
use ringside::error::CaseError;
use ringside::measure::{pin::CpuPlan, Measured, Meter};
use ringside::workload::net::echo::measure;
use ringside::workload::Ctx;
use std::io::Write;
use std::process::Command;
use std::time::Duration;

const CHILD_ENV: &str = "RINGSIDE_TEST_STAND_IN";

extern "C" fn on_term(_: libc::c_int) {
    let line = b"counters {\"stand_in\":1}\n";
    // SAFETY: write and _exit are async-signal-safe; the buffer is static.
    unsafe {
        libc::write(1, line.as_ptr().cast(), line.len());
        libc::_exit(0);
    }
}

/// Not a test: the body of the stand-in server child, which the tests here re-execute (ignored:
/// it never runs in a plain `cargo test`, where it could only pass).
#[test]
#[ignore = "a re-exec helper, run by the tests here with --ignored --exact"]
fn stand_in_child_process() {
    let mode = std::env::var(CHILD_ENV).expect("run by the tests here, with CHILD_ENV set");
    if mode == "die" {
        eprintln!("stand-in: boom, no port for you");
        std::process::exit(3);
    }
    if mode == "unavailable" {
        eprintln!("error: unavailable: the stand-in lacks a feature");
        std::process::exit(ringside::child::EXIT_UNAVAILABLE);
    }
    // SAFETY: the handler only calls async-signal-safe functions.
    unsafe { libc::signal(libc::SIGTERM, on_term as *const () as libc::sighandler_t) };
    let serving = if mode == "reset_half" {
        common::Mode::ResetHalf { after_bytes: 640 }
    } else {
        common::Mode::Echo
    };
    let addr = match std::env::var("RINGSIDE_TEST_PORT") {
        // As an external contender: the port it is told.
        Ok(port) => common::serve_on(&format!("127.0.0.1:{port}"), serving),
        Err(_) => common::serve(serving),
    };
    // libtest has written "test NAME ... " without a newline: start a fresh line.
    println!("\nlistening on {addr}");
    std::io::stdout().flush().unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

fn stand_in(mode: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--ignored",
        "--exact",
        "echo_suite::stand_in_child_process",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD_ENV, mode);
    c
}

fn plan() -> CpuPlan {
    let cpus = ringside::measure::pin::allowed_cpus();
    CpuPlan::default_for(&cpus)
}

fn ctx<'a>(plan: &'a CpuPlan, meter: &'a Meter, count_syscalls: bool) -> Ctx<'a> {
    Ctx {
        ops: 0,
        warm_ops: 0,
        plan,
        meter,
        count_syscalls,
        count_uring: false,
        storage: None,
        contenders: &ringside::model::contender::NO_CONTENDERS,
        remote: None,
        offered_rate: None,
        repetition: None,
        explain: None,
        load_engine: ringside::load::Engine::Epoll,
    }
}

#[test]
fn a_server_child_is_measured_from_outside() {
    let plan = plan();
    let meter = Meter::new();
    for counting in [false, true] {
        let ctx = ctx(&plan, &meter, counting);
        let s = measure(
            &ctx,
            stand_in("echo"),
            &[plan.measured],
            4,
            64,
            Duration::from_millis(100),
            Duration::from_millis(400),
        )
        .unwrap();
        assert!(s.ops > 0);
        assert_eq!(s.latency.len(), s.ops, "one latency per message");
        assert_eq!(s.bytes, s.ops * 64);
        // The counting repetition's window is at most COUNTING_WINDOW: its figure is a ratio.
        let window = if counting {
            ringside::workload::net::cell::COUNTING_WINDOW
        } else {
            Duration::from_millis(400)
        };
        assert!(s.wall_ns >= window.as_nanos() as u64, "{} ns", s.wall_ns);
        assert!(s.wall_ns < 400_000_000 || !counting, "{} ns", s.wall_ns);
        assert!(s.cpu.total_ns > 0, "the server's CPU is read from outside");
        assert_eq!(load(&s).load_live_conns, 4);
        assert_eq!(load(&s).load_lost_conns, 0);
        assert_eq!(load(&s).load_mismatches, 0);
        assert_eq!(load(&s).load_connect_errors, 0);
        assert!(load(&s).load_cpu_ns > 0);
        assert_eq!(load(&s).shared_cpus, u64::from(plan.shared()));
        assert_eq!(
            s.counters.get("server_stand_in"),
            1,
            "the counters line is read"
        );
        match (counting, &s.syscalls) {
            (false, None) => {}
            (true, Some(Measured::Value(n))) => {
                // A blocking echo thread makes at least one read and one write per message,
                // less the messages in flight at the window's two edges (one per connection),
                // and less what the server-side readings' offset from the client's window
                // moves out of it (they are taken when the coordinating thread wakes, which
                // on a busy machine is late by milliseconds: 3% of a 400 ms window).
                let edge = 2 * 2 * load(&s).load_live_conns;
                assert!(
                    *n + edge >= 2 * s.ops * 97 / 100,
                    "{n} syscalls for {} messages",
                    s.ops
                )
            }
            (true, Some(Measured::Unavailable { unavailable })) => {
                eprintln!("syscall count skipped: {unavailable}")
            }
            other => panic!("unexpected syscalls {other:?}"),
        }
    }
}

#[test]
fn connections_the_server_drops_are_counted_lost() {
    let plan = plan();
    let meter = Meter::new();
    let ctx = ctx(&plan, &meter, false);
    // Half of the 4 connections are reset after ten 64-byte echoes.
    let s = measure(
        &ctx,
        stand_in("reset_half"),
        &[plan.measured],
        4,
        64,
        Duration::from_millis(100),
        Duration::from_millis(400),
    )
    .unwrap();
    assert_eq!(load(&s).load_live_conns, 2, "{:?}", s.counters);
    assert_eq!(load(&s).load_lost_conns, 2, "{:?}", s.counters);
    // The resets come in the warm-up: counted apart from the window's errors.
    assert!(
        load(&s).load_resets + load(&s).load_warmup_errors >= 2,
        "{:?}",
        s.counters
    );
    assert_eq!(load(&s).load_mismatches, 0);
}

#[test]
fn a_server_that_dies_before_listening_fails_its_cell_with_stderr() {
    let plan = plan();
    let meter = Meter::new();
    let ctx = ctx(&plan, &meter, false);
    let e = measure(
        &ctx,
        stand_in("die"),
        &[plan.measured],
        2,
        64,
        Duration::ZERO,
        Duration::from_millis(200),
    )
    .unwrap_err();
    match e {
        CaseError::Failed(e) => {
            let s = format!("{e:#}");
            assert!(s.contains("before listening") && s.contains("boom"), "{s}");
        }
        other => panic!("expected a failed cell, got {other}"),
    }
}

#[test]
fn a_server_that_says_unavailable_makes_its_cell_unavailable() {
    let plan = plan();
    let meter = Meter::new();
    let ctx = ctx(&plan, &meter, false);
    let cmd = stand_in("unavailable");
    let cpus = [plan.measured];
    match measure(
        &ctx,
        cmd,
        &cpus,
        2,
        64,
        Duration::ZERO,
        Duration::from_millis(200),
    ) {
        Err(CaseError::Unavailable(why)) => assert_eq!(why, "the stand-in lacks a feature"),
        Err(other) => panic!("expected unavailable, got {other}"),
        Ok(_) => panic!("expected unavailable, got a measurement"),
    }
}

#[test]
fn smoke_run_of_the_echo_suite_when_servers_exist() {
    let has_serve = Cmd::cargo_bin("ringside")
        .unwrap()
        .args(["serve", "--help"])
        .timeout(Duration::from_secs(30))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !has_serve {
        eprintln!("skipped: this build has no `ringside serve` yet (the echo servers)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let v = common::run::run_json(
        &[
            "echo.payload",
            "--profile",
            "smoke",
            "--runs",
            "1",
            "--models",
            "epoll-et",
        ],
        dir.path(),
    );
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 4, "64, 512, 4096, 16384 bytes");
    for c in cases {
        assert_eq!(c["status"], "measured", "{c}");
        assert_eq!(c["counters"]["load_mismatches"], 0);
        assert_eq!(c["counters"]["load_live_conns"], 50, "one timed repetition");
        assert_eq!(c["counters"]["load_lost_conns"], 0, "{c}");
        assert!(c["op"].as_str().unwrap().contains("over TCP"));
    }
}

/// `--contender`: an external command measured like ringside's own servers; one that exits
/// before opening its port fails its cells with its stderr, and the run goes on.
#[test]
fn external_contenders_are_measured_and_a_broken_one_fails_its_cells_only() {
    let dir = tempfile::tempdir().unwrap();
    // The stand-in echo server, re-executed from this test binary, as an external command.
    // (echo.payload: 50 connections at most, so its thread per connection stays light beside
    // the other tests of this binary.)
    let me = std::env::current_exe().unwrap();
    let good = format!(
        "good={CHILD_ENV}=echo RINGSIDE_TEST_PORT={{port}} {} --ignored --exact echo_suite::stand_in_child_process \
         --nocapture --test-threads=1",
        me.display()
    );
    let broken = "broken=echo 'contender: cannot bind {port}' >&2; exit 3";
    let out = Cmd::cargo_bin("ringside")
        .unwrap()
        .timeout(Duration::from_secs(300))
        .args(["run", "echo.payload", "--profile", "smoke", "--runs", "1"])
        .args(["--models", "epoll-lt", "--quiet", "--format", "json"])
        .args(["--contender", &good, "--contender", broken, "--out"])
        .arg(dir.path())
        .assert()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let cases = v["cases"].as_array().unwrap();
    let of =
        |m: &str| -> Vec<&serde_json::Value> { cases.iter().filter(|c| c["model"] == m).collect() };
    assert_eq!(of("epoll-lt").len(), 4, "64, 512, 4096, 16384 bytes");
    for c in of("epoll-lt") {
        assert_eq!(c["status"], "measured", "{c}");
    }
    let good = of("ext:good");
    assert_eq!(good.len(), 4);
    for c in good {
        assert_eq!(c["status"], "measured", "{c}");
        assert_eq!(c["counters"]["load_mismatches"], 0, "{c}");
        assert!(
            c["ops_per_sec"]["median"].as_f64().unwrap_or(0.0) > 0.0,
            "{c}"
        );
    }
    let broken = of("ext:broken");
    assert_eq!(broken.len(), 4);
    for c in broken {
        assert_eq!(c["status"], "failed", "{c}");
        let why = c["reason"].as_str().unwrap();
        assert!(
            why.contains("cannot bind") && why.contains("exited"),
            "{why}"
        );
    }
}

/// The load generator's counters of a network repetition.
fn load(s: &ringside::measure::Sample) -> ringside::measure::cell::LoadCounters {
    s.counters
        .load
        .expect("a network repetition records the load generator's figures")
}

/// This build's `ringside serve` for `model`, as an external contender (so that a workload's
/// `run_once` starts the real server from a test, where `current_exe` is the test binary).
fn real_serve(model: &str) -> ringside::model::Catalog {
    let bin = assert_cmd::cargo::cargo_bin("ringside");
    let spec = format!(
        "echo:rs={} serve --protocol echo --model {model} --addr 127.0.0.1:{{port}}",
        bin.display()
    );
    ringside::model::Catalog::from_specs(&[spec]).unwrap()
}

/// An equal-load point of `echo.conns`, at smoke (50 connections, 0.4 s).
fn equal_load_point() -> ringside::workload::Point {
    use ringside::workload::Workload;
    let w = ringside::workload::net::echo::EchoConns;
    let m = ringside::registry::model("epoll-lt").unwrap();
    w.points(ringside::profile::Profile::Smoke, m)
        .into_iter()
        .find(|p| p.equal_load.is_some())
        .expect("an equal-load point at smoke")
}

/// An equal-load point is driven open loop at the rate the runner passes, against the real
/// server: every echo verified, the offered and achieved rates and `fell_behind` recorded.
#[test]
fn an_equal_load_point_drives_the_offered_rate_against_a_real_server() {
    use ringside::workload::Workload;
    let plan = plan();
    let meter = Meter::new();
    let catalog = real_serve("epoll-lt");
    let m = catalog.models().next().unwrap();
    let p = equal_load_point();
    let mut ctx = ctx(&plan, &meter, false);
    ctx.contenders = &catalog;
    ctx.offered_rate = Some(2_000.0);
    let s = ringside::workload::net::echo::EchoConns
        .run_once(&ctx, m, &p)
        .unwrap();
    assert!(s.ops > 0);
    assert_eq!(s.bytes, s.ops * 64, "64-byte messages, each one verified");
    assert_eq!(load(&s).load_mismatches, 0);
    assert_eq!(load(&s).load_live_conns, 50);
    let rate = s.counters.open_loop.expect("open-loop counters");
    assert_eq!(rate.offered_per_sec, 2_000);
    let achieved = rate.achieved_per_sec;
    // 2,000 msgs/s over 0.4 s: 800 messages, give or take the edges of the window, which a
    // busy machine can read late (a longer window, a lower rate): never above the offer, and
    // far below what 50 connections do in closed loop.
    assert!((1_000..=2_200).contains(&achieved), "achieved {achieved}/s");
    // Falling behind is the machine's to say; that it is flagged exactly then is the code's.
    // (The flag is judged before rounding: a rate within 1/s of 95% could go either way.)
    if achieved.abs_diff(1_900) > 1 {
        assert_eq!(
            rate.fell_behind,
            u64::from(achieved < 1_900),
            "achieved {achieved}/s of 2,000/s"
        );
    }
    assert!(
        (400..=1_000).contains(&s.ops),
        "{} ops at 2000/s for 0.4 s: open loop, not closed",
        s.ops
    );
}

/// Without a rate from the runner an equal-load point is not run at a made-up rate: it is not
/// applicable, and says why and which capacity point the rate comes from.
#[test]
fn an_equal_load_point_without_an_offered_rate_says_so() {
    use ringside::workload::Workload;
    let plan = plan();
    let meter = Meter::new();
    let ctx = ctx(&plan, &meter, false);
    let m = ringside::registry::model("epoll-lt").unwrap();
    let p = equal_load_point();
    match ringside::workload::net::echo::EchoConns.run_once(&ctx, m, &p) {
        Err(CaseError::NotApplicable(why)) => {
            assert!(why.contains("no offered rate"), "{why}");
            assert!(why.contains("conns=50"), "names the capacity point: {why}");
        }
        Err(e) => panic!("expected not applicable, got {e:?}"),
        Ok(_) => panic!("expected not applicable, got a measurement"),
    }
    let mut bad = ctx;
    bad.offered_rate = Some(0.0);
    assert!(matches!(
        ringside::workload::net::echo::EchoConns.run_once(&bad, m, &p),
        Err(CaseError::Failed(_))
    ));
}

/// Every equal-load point follows the capacity point it takes its rate from: its params are
/// that point's plus the marker (never the rate), at every profile; `full` has one per
/// connection count, `quick` at 50 and 1000.
#[test]
fn equal_load_points_follow_their_capacity_points() {
    use ringside::profile::Profile;
    use ringside::workload::net::echo::EchoConns;
    use ringside::workload::Workload;
    let m = ringside::registry::model("epoll-lt").unwrap();
    for (profile, want) in [
        (Profile::Smoke, vec![50]),
        (Profile::Quick, vec![50, 1000]),
        (Profile::Full, vec![1, 2, 50, 100, 1000, 10_000]),
    ] {
        let pts = EchoConns.points(profile, m);
        let mut got = Vec::new();
        for (i, p) in pts.iter().enumerate() {
            let Some(eq) = &p.equal_load else {
                continue;
            };
            assert!(i > 0, "an equal-load point first in {profile:?}");
            let cap = &pts[i - 1];
            assert!(
                cap.equal_load.is_none(),
                "listed right after its capacity point"
            );
            assert_eq!(eq.capacity_of, cap.params);
            assert_eq!(eq.fraction, 0.3);
            assert_eq!(p.params, cap.params, "the capacity point's params");
            assert!(!p.params.0.contains_key("rate_per_sec"));
            got.push(cap.params.u64("conns").unwrap());
        }
        assert_eq!(got, want, "{profile:?}");
    }
}

/// `echo.rate` through the binary against the real server: open loop at the smoke rate, every
/// echo verified, the offered rate achieved.
#[test]
fn echo_rate_is_measured_open_loop_against_a_real_server() {
    let dir = tempfile::tempdir().unwrap();
    let v = common::run::run_json(
        &[
            "echo.rate",
            "--profile",
            "smoke",
            "--runs",
            "2",
            "--models",
            "epoll-lt",
        ],
        dir.path(),
    );
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1, "one rate at smoke");
    let c = &cases[0];
    assert_eq!(c["status"], "measured", "{c}");
    let k = &c["counters"];
    assert_eq!(k["load_mismatches"], 0, "{c}");
    assert_eq!(k["load_lost_conns"], 0, "{c}");
    let offered = c["params"]["rate_per_sec"].as_u64().unwrap();
    // Per second: the mean over the two repetitions, not their sum.
    assert_eq!(k["offered_per_sec"].as_u64().unwrap(), offered, "{c}");
    let achieved = k["achieved_per_sec"].as_u64().unwrap();
    // Never above the offer (give or take the window's edges). Whether the server kept up
    // is the machine's to say (a busy CI runner can make it fall behind); what must hold is
    // that `fell_behind` counts the repetitions that did: none where the mean kept up to
    // within `KEEP_UP` (95%), at least one where it did not, and never more than ran.
    assert!(
        achieved > 0 && achieved <= offered * 11 / 10,
        "{achieved} of {offered}"
    );
    let fell = k["fell_behind"].as_u64().unwrap();
    assert!(fell <= 2, "{c}");
    if achieved * 100 < offered * 95 {
        assert!(
            fell >= 1,
            "a mean below 95% of the offer: some repetition fell behind {c}"
        );
    }
    if fell == 0 {
        assert!(
            achieved * 100 + 100 >= offered * 95,
            "{achieved} of {offered}: {c}"
        );
    }
    // 64 bytes a message.
    let ops = c["ops_total"].as_f64().unwrap();
    let bps = c["bytes_per_sec"].as_f64().unwrap();
    assert!(
        (bps / 64.0 - ops / 0.8).abs() <= ops / 0.8 * 0.05,
        "{bps} B/s for {ops} ops"
    );
    assert_eq!(
        c["runs_cpu_ns_per_op"].as_array().map(|a| a.len()),
        Some(2),
        "per-repetition CPU per op, for the equal-load ranking's test"
    );
    timeline_of_a_measured_cell(dir.path(), c);
}

/// Each repetition's timeline adds up to the cell's (`common::run::timeline_adds_up`); a
/// troubled cell's are drawn, the suite's summary always.
fn timeline_of_a_measured_cell(dir: &std::path::Path, c: &serde_json::Value) {
    common::run::timeline_adds_up(dir, c);
    let results = dir.join("results.json");
    // Drawn where the cell was troubled: mark it so, and render again.
    let charts = |v: &serde_json::Value| {
        let out = tempfile::tempdir().unwrap();
        let f = out.path().join("results.json");
        std::fs::write(&f, serde_json::to_vec(v).unwrap()).unwrap();
        common::bin::ringside()
            .arg("report")
            .arg(&f)
            .args(["--format", "summary"])
            .assert()
            .success();
        let mut names: Vec<String> = std::fs::read_dir(out.path().join("charts"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&results).unwrap()).unwrap();
    v["cases"][0]["warnings"] = serde_json::json!([]);
    v["cases"][0]["reruns"] = serde_json::json!([]);
    let quiet = charts(&v);
    assert!(quiet.contains(&"summary-echo.svg".to_string()), "{quiet:?}");
    assert!(!quiet.iter().any(|n| n.contains("timeline")), "{quiet:?}");
    v["cases"][0]["warnings"] = serde_json::json!(["high_spread"]);
    let troubled = charts(&v);
    for n in [
        "echo.rate-timeline-ops-1.svg",
        "echo.rate-timeline-latency-1.svg",
    ] {
        assert!(troubled.contains(&n.to_string()), "{troubled:?}");
    }
}
