//! The load generator against stand-in echo servers (tests/common): counts add up with zero
//! mismatches; a server that swaps bytes between connections shows mismatches, none of them an
//! op; one that resets
//! connections shows resets and fewer live connections; open loop measures latency from the
//! intended send time, so a single 200 ms stall shows in the tail. No speed is asserted.

use crate::common;

use assert_cmd::Command;
use common::{serve, Mode};
use predicates::prelude::*;
use ringside::load::{self, echo::Echo, Config, Edge, Report};
use std::time::Duration;

fn cfg(addr: std::net::SocketAddr, conns: usize, secs: f64) -> Config {
    let mut c = Config::new(addr, conns, Duration::from_secs_f64(secs));
    c.warmup = Duration::from_millis(200);
    c.threads = 2;
    c.connect_timeout = Duration::from_secs(5);
    c.engine = common::engines::engine();
    c
}

fn run(c: &Config, msg: usize) -> Report {
    let mut edges = Vec::new();
    let r = load::run(c, &Echo { msg_bytes: msg }, &mut |e| edges.push(e)).unwrap();
    assert_eq!(
        edges,
        vec![Edge::Open, Edge::Close],
        "window edges announced once each"
    );
    r
}

#[test]
fn counts_add_up_against_a_correct_server() {
    common::engines::each_engine(|| {
        let addr = serve(Mode::Echo);
        for (conns, msg) in [(10, 64), (3, 16384)] {
            let r = run(&cfg(addr, conns, 0.5), msg);
            assert!(r.n.msgs > 0, "{r:?}");
            assert_eq!(r.n.mismatches, 0);
            assert_eq!(
                r.n.connect_errors + r.n.resets + r.n.io_errors + r.n.timeouts,
                0,
                "{r:?}"
            );
            assert_eq!(r.n.live_conns, conns as u64);
            assert_eq!(r.n.bytes, r.n.msgs * msg as u64);
            assert_eq!(r.latency.len(), r.n.msgs, "one latency per counted message");
            assert!(r.window_ns >= 500_000_000);
            assert!(r.n.cpu_ns > 0, "the threads' CPU is measured");
            assert!(
                r.cpu_fraction > 0.0 && r.cpu_fraction <= 1.5,
                "{}",
                r.cpu_fraction
            );
        }
    });
}

#[test]
fn bytes_swapped_between_connections_are_mismatches() {
    common::engines::each_engine(|| {
        let addr = serve(Mode::Swap { conns: 4 });
        let r = run(&cfg(addr, 4, 0.4), 64);
        // A mismatched echo is never an op; another connection's message differs from the first
        // byte (the connection id).
        assert_eq!(r.n.msgs, 0, "{r:?}");
        assert!(r.n.mismatches > 0, "{r:?}");
        assert_eq!(r.first_mismatch.map(|m| m.offset), Some(0), "{r:?}");
        assert!(r.latency.is_empty());
        assert!(r.unverified().unwrap().contains("mismatched"), "{r:?}");
    });
}

#[test]
fn resets_are_counted_and_live_connections_drop() {
    common::engines::each_engine(|| {
        let addr = serve(Mode::ResetHalf {
            after_bytes: 64 * 20,
        });
        let r = run(&cfg(addr, 4, 0.4), 64);
        // Twenty echoes take far less than the 200 ms warm-up: the resets are the warm-up's.
        assert_eq!((r.n.resets, r.n.warmup_errors), (0, 2), "{r:?}");
        assert_eq!(r.n.live_conns, 2);
        assert_eq!(r.n.mismatches, 0);
        assert!(r.first_error.is_some());
    });
}

#[test]
fn many_connections_spread_over_loopback_source_addresses() {
    common::engines::each_engine(|| {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for s in l.incoming().map_while(Result::ok) {
                let _ = tx.send(s.peer_addr().unwrap().ip());
                std::thread::spawn(move || common::echo(s, usize::MAX, None));
            }
        });
        let mut c = cfg(addr, 6, 0.2);
        c.conns_per_source = 2; // the real threshold is 28,000
        let r = run(&c, 64);
        assert_eq!(r.n.live_conns, 6, "{r:?}");
        let mut peers: Vec<String> = rx.try_iter().map(|ip| ip.to_string()).collect();
        peers.sort();
        assert_eq!(
            peers,
            [
                "127.0.0.1",
                "127.0.0.1",
                "127.0.0.2",
                "127.0.0.2",
                "127.0.0.3",
                "127.0.0.3"
            ]
        );
    });
}

#[test]
fn unanswered_messages_are_timeouts() {
    common::engines::each_engine(|| {
        let addr = serve(Mode::Silent);
        let mut c = cfg(addr, 3, 0.4);
        c.warmup = Duration::ZERO;
        c.msg_timeout = Duration::from_millis(100);
        let r = run(&c, 64);
        assert_eq!(r.n.timeouts, 3, "one per outstanding message: {r:?}");
        assert_eq!(
            (r.warmup_ns, r.n.unsettled_conns),
            (0, 0),
            "no warm-up asked"
        );
        assert_eq!(r.n.msgs, 0);
        assert_eq!(
            r.n.live_conns, 3,
            "a silent server still holds the connections"
        );
    });
}

#[test]
fn the_warm_up_lasts_until_every_connection_was_served_once() {
    common::engines::each_engine(|| {
        // Five connections accepted 150 ms apart: the last one waits 600 ms for its first
        // answer. A fixed 50 ms warm-up would open the window on three connections still in the
        // backlog (their first answers, 150-600 ms late, would be its tail).
        let addr = serve(Mode::SlowAccept {
            every: Duration::from_millis(150),
        });
        let mut c = cfg(addr, 5, 0.3);
        c.warmup = Duration::from_millis(50);
        let r = run(&c, 64);
        assert_eq!(r.n.unsettled_conns, 0, "{r:?}");
        assert!(r.warmup_ns >= 550_000_000, "warm-up {} ns", r.warmup_ns);
        // Every connection served: the window is the one asked (the slow part was set-up).
        assert_eq!(r.window_ns, 300_000_000, "window {} ns", r.window_ns);
        assert_eq!((r.n.mismatches, r.n.timeouts), (0, 0), "{r:?}");
        let max = r.latency_ns(1.0).unwrap();
        assert!(
            max < 250_000_000,
            "no first answer (150-600 ms late) is in the window: max {max} ns"
        );
    });
}

#[test]
fn a_closed_loop_warm_up_starts_with_one_round() {
    common::engines::each_engine(|| {
        // Five connections accepted 100 ms apart, echoed by a thread each that counts the bytes.
        // In the first round every connection sends one message and none sends a second before
        // all five were answered: when the last one is accepted, the first four echoed at most
        // their first 64 bytes each (a closed loop on the first ones from the start kept a
        // thread-per-connection server from accepting its last connections for seconds).
        use std::io::{Read, Write};
        use std::sync::atomic::{AtomicU64, Ordering};
        use std::sync::{mpsc, Arc};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let echoed = Arc::new(AtomicU64::new(0));
        let (tx, before_last) = mpsc::channel();
        let e = echoed.clone();
        std::thread::spawn(move || {
            for (i, s) in l.incoming().take(5).enumerate() {
                let mut s = s.unwrap();
                if i == 4 {
                    tx.send(e.load(Ordering::SeqCst)).unwrap();
                }
                let e = e.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while let Ok(n @ 1..) = s.read(&mut buf) {
                        if s.write_all(&buf[..n]).is_err() {
                            return;
                        }
                        e.fetch_add(n as u64, Ordering::SeqCst);
                    }
                });
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let mut c = cfg(addr, 5, 0.2);
        c.warmup = Duration::from_millis(50);
        let r = run(&c, 64);
        let before = before_last.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(
            (64..=4 * 64).contains(&before),
            "{before} bytes echoed before the last connection was accepted"
        );
        assert_eq!(
            (r.n.unsettled_conns, r.n.mismatches, r.n.timeouts),
            (0, 0, 0),
            "{r:?}"
        );
        // The round (400 ms of accepts), then the 50 ms asked. The warm-up's clock starts after
        // the connects, which the server may have begun accepting (its 400 ms start at the first
        // accept): a busy machine put that start 1 ms before ours once (449.05 ms), so 10 ms of
        // slack; without the round the warm-up would be about 50 ms.
        assert!(r.warmup_ns >= 440_000_000, "warm-up {} ns", r.warmup_ns);
        assert_eq!(r.window_ns, 200_000_000);
        assert!(
            r.n.msgs > 5 && echoed.load(Ordering::SeqCst) > 5 * 64,
            "{r:?}"
        );
    });
}

#[test]
fn a_stream_warm_up_lasts_until_every_connection_got_its_first_bytes() {
    // The stream driver shares the engine's warm-up: duplex connections accepted 150 ms apart
    // get their first echoed bytes up to 600 ms after the start.
    use ringside::load::stream::{Direction, Streaming};
    let addr = serve(Mode::SlowAccept {
        every: Duration::from_millis(150),
    });
    let mut c = cfg(addr, 5, 0.3);
    c.warmup = Duration::from_millis(50);
    let ex = Streaming {
        direction: Direction::Duplex,
        write_bytes: 4096,
    };
    let r = load::run(&c, &ex, &mut |_| {}).unwrap();
    assert_eq!(r.n.unsettled_conns, 0, "{r:?}");
    assert!(r.warmup_ns >= 550_000_000, "warm-up {} ns", r.warmup_ns);
    assert_eq!(r.window_ns, 300_000_000, "window {} ns", r.window_ns);
    assert_eq!((r.n.mismatches, r.errors()), (0, 0), "{r:?}");
    assert_eq!(r.n.live_conns, 5);
    assert!(r.n.msgs > 0);
}

#[test]
fn a_stream_warm_up_that_never_settles_gives_up_at_the_message_timeout() {
    use ringside::load::stream::{Direction, Streaming};
    let addr = serve(Mode::Silent);
    let mut c = cfg(addr, 3, 0.2);
    c.warmup = Duration::from_millis(50);
    c.msg_timeout = Duration::from_millis(300);
    let ex = Streaming {
        direction: Direction::Duplex,
        write_bytes: 4096,
    };
    let r = load::run(&c, &ex, &mut |_| {}).unwrap();
    assert_eq!(r.n.unsettled_conns, 3, "{r:?}");
    assert!(
        (300_000_000..2_000_000_000).contains(&r.warmup_ns),
        "gave up at the message timeout: {} ns",
        r.warmup_ns
    );
    assert_eq!(r.n.msgs, 0);
}

#[test]
fn a_warm_up_that_never_settles_gives_up_at_the_message_timeout() {
    common::engines::each_engine(|| {
        let addr = serve(Mode::Silent);
        let mut c = cfg(addr, 3, 0.2);
        c.warmup = Duration::from_millis(50);
        c.msg_timeout = Duration::from_millis(300);
        let r = run(&c, 64);
        assert_eq!(r.n.unsettled_conns, 3, "{r:?}");
        assert!(
            (300_000_000..2_000_000_000).contains(&r.warmup_ns),
            "gave up at the message timeout: {} ns",
            r.warmup_ns
        );
        // Unsettled: the window holds two rounds of the warm-up (two message timeouts), not the
        // 200 ms asked.
        assert_eq!(r.window_ns, 600_000_000, "window {} ns", r.window_ns);
        assert_eq!(r.n.msgs, 0);
    });
}

#[test]
fn refused_connections_are_connect_errors() {
    common::engines::each_engine(|| {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        let r = run(&cfg(addr, 3, 0.2), 64);
        assert_eq!(r.n.connect_errors, 3);
        assert_eq!(r.n.live_conns, 0);
        assert_eq!(r.n.msgs, 0);
        assert!(r.first_error.unwrap().contains("refused"));
    });
}

#[test]
fn open_loop_latency_runs_from_the_intended_send_time() {
    common::engines::each_engine(|| {
        // The server stalls 200 ms once, inside the window. Open loop at 1000 msgs/s: about 200
        // messages fall due during the stall, each measured from when it was due.
        let addr = serve(Mode::StallOnce {
            at: Duration::from_millis(600),
            stall: Duration::from_millis(200),
        });
        let mut c = cfg(addr, 2, 1.0);
        c.threads = 1;
        c.rate = Some(1000.0);
        let r = run(&c, 64);
        assert_eq!(r.n.mismatches, 0);
        let max = r.latency_ns(1.0).unwrap();
        assert!(max >= 190_000_000, "max {max}");
        let p999 = r.latency_ns(0.999).unwrap();
        assert!(p999 >= 150_000_000, "p99.9 {p999}");
        assert!(
            r.longest_gap_ns < 150_000_000,
            "open loop: messages keep completing on the other connection: {}",
            r.longest_gap_ns
        );
        let late = r.latency.inner().count_between(100_000_000, u64::MAX / 2);
        assert!(
            late >= 50,
            "messages due during the stall wait for it: {late}"
        );
        assert!(
            (700..=1010).contains(&r.n.msgs),
            "the schedule, not the server, sets the count: {}",
            r.n.msgs
        );
    });
}

#[test]
fn cli_prints_a_summary_and_writes_json() {
    common::engines::each_engine(|| {
        let addr = serve(Mode::Echo);
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("load.json");
        let mut cmd = Command::cargo_bin("ringside").unwrap();
        cmd.timeout(Duration::from_secs(30))
            .args(["load", "--protocol", "echo", "--target"])
            .arg(addr.to_string())
            .args(["--conns", "5", "--duration", "0.3", "--warmup", "0.1"])
            .args(common::engines::engine_args())
            .arg("--json")
            .arg(&json)
            .assert()
            .success()
            .stdout(predicate::str::contains("msgs/s").and(predicate::str::contains("p99.9")));
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        // The engine asked for is the one that ran, named in the report.
        assert_eq!(v["report"]["engine"], common::engines::engine().name());
        assert_eq!(v["report"]["live_conns"], 5);
        assert_eq!(v["report"]["mismatches"], 0);
        assert!(v["msgs_per_sec"].as_f64().unwrap() > 0.0);
        assert!(v["latency_ns"]["p99"].as_u64().unwrap() > 0);
    });
}

#[test]
fn bad_values_exit_2_naming_the_value_and_range() {
    for (args, needle) in [
        (
            vec!["--conns", "0"],
            "--conns 0: must be between 1 and 100000",
        ),
        (
            vec!["--msg-bytes", "4"],
            "--msg-bytes 4: must be between 12",
        ),
        (vec!["--rate", "0"], "--rate 0: must be messages/s above 0"),
        (vec!["--duration", "0"], "--duration 0"),
        (vec!["--threads", "0"], "--threads 0"),
        (
            vec!["--timeout", "0"],
            "--timeout 0: must be seconds between 0.1 and 3600",
        ),
    ] {
        let mut cmd = Command::cargo_bin("ringside").unwrap();
        cmd.timeout(Duration::from_secs(30))
            .args(["load", "--protocol", "echo", "--target", "127.0.0.1:9"])
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(needle));
    }
    let mut cmd = Command::cargo_bin("ringside").unwrap();
    cmd.timeout(Duration::from_secs(30))
        .args(["load", "--protocol", "echo", "--target", "nowhere"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--target nowhere: must be HOST:PORT",
        ));
}

/// Hostile pacing, in both engines: a server that echoes one byte at a time (1 ms apart) is
/// measured correctly, each response assembled from its pieces; one that never reads leaves
/// 32 MiB messages stuck in their send (more than loopback's socket buffers hold), each counted
/// once as a timeout, and the run still ends on time (nothing waits for what is in flight).
#[test]
fn a_trickling_server_and_a_never_reading_one_are_survived() {
    use std::io::{Read, Write};
    let listen = |f: fn(std::net::TcpStream)| {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in l.incoming().map_while(Result::ok) {
                std::thread::spawn(move || f(s));
            }
        });
        addr
    };
    let trickle = listen(|mut s| {
        s.set_nodelay(true).unwrap();
        let mut b = [0u8; 256];
        while let Ok(n @ 1..) = s.read(&mut b) {
            for x in &b[..n] {
                std::thread::sleep(Duration::from_millis(1));
                if s.write_all(std::slice::from_ref(x)).is_err() {
                    return;
                }
            }
        }
    });
    let deaf = listen(|s| {
        std::thread::sleep(Duration::from_secs(30));
        drop(s);
    });
    common::engines::each_engine(|| {
        let r = run(&cfg(trickle, 2, 0.4), 16);
        assert!(r.n.msgs > 0, "{r:?}");
        assert_eq!(r.errors(), 0, "{r:?}");
        assert_eq!(r.unverified(), None, "{r:?}");

        let mut c = cfg(deaf, 2, 0.4);
        c.warmup = Duration::ZERO;
        c.msg_timeout = Duration::from_millis(100);
        let t0 = std::time::Instant::now();
        let r = run(&c, 32 << 20);
        assert_eq!((r.n.msgs, r.n.timeouts, r.n.live_conns), (0, 2, 2), "{r:?}");
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    });
}
