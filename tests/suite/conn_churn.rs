//! A connection per request (`load::Config::churn`, `conn.churn`): against a stand-in echo
//! server that counts its accepts, every op is a connection of its own, closed with SO_LINGER
//! 0 so that no TIME_WAIT socket is left; a server that answers wrong bytes gives mismatches,
//! never ops; open loop keeps to its schedule; and `ringside run conn` at smoke measures a
//! real server with the churn counters. No speed is asserted.

use crate::common;

use common::{serve, Mode};
use ringside::load::{self, echo::Echo, Config, Report};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn cfg(addr: SocketAddr, clients: usize, secs: f64) -> Config {
    let mut c = Config::new(addr, clients, Duration::from_secs_f64(secs));
    c.warmup = Duration::from_millis(100);
    c.threads = 1;
    c.connect_timeout = Duration::from_secs(5);
    c.engine = common::engines::engine();
    c.churn = true;
    c
}

fn run(c: &Config) -> Report {
    load::run(c, &Echo { msg_bytes: 64 }, &mut |_| {}).unwrap()
}

/// An echo server on 127.0.0.1:0 that counts the connections it accepted.
fn counting_echo() -> (SocketAddr, Arc<AtomicU64>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let accepts = Arc::new(AtomicU64::new(0));
    let n = accepts.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            n.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(k) = s.read(&mut buf) {
                    if k == 0 || s.write_all(&buf[..k]).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, accepts)
}

/// Sockets to or from `port` in TIME_WAIT, from /proc/net/tcp (state 06).
/// The TIME_WAIT sockets on `port` (either end), as /proc/net/tcp names them.
fn time_wait(port: u16) -> std::collections::HashSet<String> {
    let t = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let hex = format!(":{port:04X}");
    t.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 3 && f[3] == "06" && (f[1].ends_with(&hex) || f[2].ends_with(&hex)))
                .then(|| format!("{} {}", f[1], f[2]))
        })
        .collect()
}

#[test]
fn every_op_is_a_connection_of_its_own_closed_without_time_wait() {
    common::engines::each_engine(|| {
        let (addr, accepts) = counting_echo();
        // The listener may have been given a port another test's connections left in
        // TIME_WAIT (std binds with SO_REUSEADDR): only sockets this run left count.
        let before = time_wait(addr.port());
        let r = run(&cfg(addr, 4, 0.4));
        assert!(r.n.msgs > 0, "{r:?}");
        assert_eq!(r.n.mismatches + r.errors(), 0, "{r:?}");
        assert_eq!(r.n.live_conns, 4, "{r:?}");
        assert_eq!(r.latency.len(), r.n.msgs);
        // Each op had its own connection: the server accepted one per op at least (plus the
        // warm-up's), and the client counted as many connects as the server saw accepts.
        // The stand-in's accept thread may lag the client's last connects on a busy machine:
        // give it a moment; each client's last connect may have been reset before it was
        // accepted at all (one per client at most).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while accepts.load(Ordering::SeqCst) < r.n.connects && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let seen = accepts.load(Ordering::SeqCst);
        assert!(seen >= r.n.msgs + 4, "{seen} accepts for {} ops", r.n.msgs);
        assert!(r.n.connects >= r.n.msgs, "{r:?}");
        assert!(
            r.n.connects <= seen + 4,
            "{} connects, {seen} accepts",
            r.n.connects
        );
        // Each op's connection was closed abortively (those the window's edges cut aside).
        assert!(r.n.abortive_closes.abs_diff(r.n.msgs) <= 4, "{r:?}");
        assert_eq!(r.n.reconnects, 0, "a churned connection is not a reconnect");
        // SO_LINGER 0: a RST, so neither side holds the port in TIME_WAIT.
        let left: Vec<String> = time_wait(addr.port())
            .difference(&before)
            .cloned()
            .collect();
        assert!(left.is_empty(), "TIME_WAIT sockets left behind: {left:?}");
    });
}

#[test]
fn a_churned_answer_with_wrong_bytes_is_a_mismatch_never_an_op() {
    common::engines::each_engine(|| {
        let addr = serve(Mode::Corrupt { at: 20 });
        let r = run(&cfg(addr, 2, 0.3));
        assert_eq!(r.n.msgs, 0, "{r:?}");
        assert!(r.latency.is_empty());
        assert!(r.n.mismatches + r.n.warmup_invalid > 0, "{r:?}");
        assert_eq!(r.first_mismatch.map(|m| m.offset), Some(20), "{r:?}");
        assert!(r.unverified().is_some(), "{r:?}");
    });
}

#[test]
fn open_loop_churn_keeps_to_the_schedule_a_connection_per_message() {
    common::engines::each_engine(|| {
        let (addr, accepts) = counting_echo();
        let mut c = cfg(addr, 5, 0.6);
        c.rate = Some(500.0);
        let r = run(&c);
        assert_eq!(r.n.mismatches + r.errors(), 0, "{r:?}");
        // 500 connections/s for 0.6 s: about 300, the schedule's, not the server's.
        assert!((200..=320).contains(&r.n.msgs), "{} ops", r.n.msgs);
        let seen = accepts.load(Ordering::SeqCst);
        assert!(seen >= r.n.msgs, "{seen} accepts for {} ops", r.n.msgs);
    });
}

/// `ringside run conn.churn conn.churn_rate` at smoke against a real server: every cell measured, every op a
/// connection of its own, no connect error, no port exhausted.
#[test]
fn smoke_run_of_the_conn_suite() {
    let dir = tempfile::tempdir().unwrap();
    let v = common::run::run_json(
        &[
            "conn.churn",
            "conn.churn_rate",
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
    assert_eq!(cases.len(), 3, "1 and 50 clients, one rate: {v}");
    for c in cases {
        assert_eq!(c["status"], "measured", "{c}");
        let k = &c["counters"];
        assert_eq!(k["load_mismatches"], 0, "{c}");
        assert_eq!(k["load_connect_errors"], 0, "{c}");
        assert_eq!(k["load_lost_conns"], 0, "{c}");
        let ops = c["ops_total"].as_f64().unwrap() as u64;
        let closes = k["churn_abortive_closes"].as_u64().unwrap();
        let clients = c["params"]["clients"].as_u64().unwrap();
        assert!(ops > 0 && closes.abs_diff(ops) <= clients, "{c}");
        // The server accepted the connections the client made (the same span: the run; those
        // still connecting when the run ended may be reset before their accept).
        let connects = k["churn_connects"].as_u64().unwrap();
        let accepts = k["server_accepts"].as_u64().unwrap();
        assert!(connects >= ops, "{c}");
        assert!(
            accepts <= connects && accepts + clients * 2 >= connects,
            "{accepts} accepts for {connects} connects: {c}"
        );
        assert!(c["op"].as_str().unwrap().contains("connection"), "{c}");
    }
}
