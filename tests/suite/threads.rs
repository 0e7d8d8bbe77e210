//! `ringside serve --threads 2`: every server in the registry (ringside's own and the tokio and
//! monoio peers) with two shared-nothing threads on SO_REUSEPORT listeners echoes and answers
//! HTTP exactly, survives a hostile client, and reports how the connections spread over its
//! threads (both got some; they sum to `accepts`). `tokio-mt` is one runtime of two workers on
//! one listener: it accepts every connection once.

use crate::common;

use common::child::Server;
use common::servers::{peer_ready, peers, servers};
use ringside::model::PeerKind;
use std::io::{Read, Write};

/// The CPUs the threads run on: two where the machine has them (on one CPU both share it).
fn cpus() -> String {
    let c = ringside::measure::pin::allowed_cpus();
    let two: Vec<String> = c.iter().take(2).map(|c| c.to_string()).collect();
    two.join(",")
}

/// `serve` arguments for two threads of model `id`: SQPOLL rows put both threads on the last
/// CPU and their pollers on the first (a poller never shares its ring's thread's CPU); `None`
/// when a SQPOLL row has no second CPU here.
fn two_threads(id: &str) -> Option<Vec<String>> {
    let sqpoll = ringside::registry::model(id)
        .and_then(|m| m.uring_knobs())
        .is_some_and(|k| k.sqpoll_idle_ms().is_some());
    let mut a: Vec<String> = vec!["--threads".into(), "2".into(), "--cpus".into()];
    if !sqpoll {
        a.push(cpus());
        return Some(a);
    }
    let c = ringside::measure::pin::allowed_cpus();
    let (&first, &last) = (c.first()?, c.last()?);
    if first == last {
        common::tools::cannot(&format!("{id}: SQPOLL needs a second CPU for its pollers"));
        return None;
    }
    a.extend([last.to_string(), "--sqpoll-cpu".into(), first.to_string()]);
    Some(a)
}

/// Connections per server: enough that the 4-tuple hash leaves no thread without one (each
/// lands on a given thread with probability 1/2: all 32 on one is a 2^-31 event).
const CONNS: usize = 32;

fn ids() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = servers().iter().map(|m| m.id).collect();
    for k in peers() {
        if peer_ready(k) {
            v.push(match k {
                PeerKind::Tokio => "tokio",
                PeerKind::TokioMt => "tokio-mt",
                PeerKind::Monoio => "monoio",
                PeerKind::External => continue,
            });
        }
    }
    v
}

#[test]
fn two_threads_echo_exactly_and_both_accept() {
    for id in ids() {
        let Some(args) = two_threads(id) else {
            continue;
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let s = Server::start(id, "echo", &args, None);
        let mut conns: Vec<_> = (0..CONNS).map(|_| s.connect()).collect();
        // A hostile client: half a message, then a reset; the others go on.
        {
            let mut bad = s.connect();
            bad.write_all(b"half").unwrap();
            common::net::reset(bad);
        }
        for round in 0..3u8 {
            for (i, c) in conns.iter_mut().enumerate() {
                let msg = [round, i as u8, 0xA5, 0x5A, 7, 8, 9, round ^ i as u8];
                c.write_all(&msg).unwrap();
                let mut got = [0u8; 8];
                c.read_exact(&mut got).unwrap();
                assert_eq!(got, msg, "{id}: connection {i} round {round}");
            }
        }
        drop(conns);
        let (st, counters) = s.stop();
        assert!(st.success(), "{id}: {st:?}");
        assert_eq!(counters["server_threads"], 2, "{id}: {counters}");
        if id == "tokio-mt" {
            // One listener, two workers stealing work: no per-thread accepts.
            assert_eq!(counters["accepts"], CONNS as u64 + 1, "{id}: {counters}");
        } else {
            let (a0, a1) = (
                counters["accepts_thread_0"].as_u64().unwrap(),
                counters["accepts_thread_1"].as_u64().unwrap(),
            );
            assert!(
                a0 > 0 && a1 > 0,
                "{id}: uneven to the point of one idle thread: {counters}"
            );
            assert_eq!(
                a0 + a1,
                counters["accepts"].as_u64().unwrap(),
                "{id}: {counters}"
            );
            assert_eq!(a0 + a1, CONNS as u64 + 1, "{id}: {counters}");
        }
    }
}

#[test]
fn two_threads_answer_http() {
    for id in ids() {
        let Some(args) = two_threads(id) else {
            continue;
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let s = Server::start(id, "http", &args, None);
        for i in 0..8 {
            let mut c = s.connect();
            c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut got = Vec::new();
            c.read_to_end(&mut got).unwrap();
            let text = String::from_utf8_lossy(&got);
            assert!(
                text.starts_with("HTTP/1.1 200"),
                "{id}: request {i}: {text}"
            );
            assert!(text.ends_with("Hello, World!"), "{id}: request {i}: {text}");
        }
        let (st, counters) = s.stop();
        assert!(st.success(), "{id}: {st:?}");
        assert_eq!(counters["server_threads"], 2, "{id}: {counters}");
    }
}

#[test]
fn a_thread_that_cannot_start_fails_the_server_with_its_reason() {
    // SQPOLL with no CPU for its poller is unavailable in every thread: exit 69, saying why.
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("ringside"))
        .args(["serve", "--protocol", "echo", "--model", "uring-sqpoll"])
        .args(["--threads", "2", "--cpus", &cpus()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(69), "{err}");
    assert!(err.contains("SQPOLL"), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("listening on"));
}
