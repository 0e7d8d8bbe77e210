//! The bulk-transfer protocols (`ringside serve --protocol sink|source`, `stream.*`) on every
//! server in the registry — ringside's own TCP servers and the contenders (tokio, monoio) —
//! over real sockets: the sink verifies every byte and reports the count at EOF, names the
//! first wrong byte, survives a client that resets mid-stream; the source answers requests
//! split anywhere with the continuing pattern, closes on a bad request, and a client that asks
//! without reading cannot grow it. A model this machine cannot run is skipped with its reason.

use crate::common;

use common::child::Server;
use common::net::{read_n, reset};
use common::servers::{peer_ready, peers, servers};
use ringside::model::PeerKind;
use ringside::proto::stream::{fill_pattern, read_trailer, MAX_REQUEST, TRAILER_BYTES};
use std::io::{Read, Write};
use std::net::Shutdown;
use std::time::Duration;

fn pattern(from: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::new();
    fill_pattern(&mut v, from, len);
    v
}

/// Every server id to test: built-in TCP servers and the contenders that can run here.
fn ids() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = servers().iter().map(|m| m.id).collect();
    for k in peers() {
        if k == PeerKind::TokioMt || !peer_ready(k) {
            continue;
        }
        v.push(match k {
            PeerKind::Tokio => "tokio",
            PeerKind::Monoio => "monoio",
            _ => continue,
        });
    }
    assert!(v.contains(&"tokio"), "{v:?}");
    v
}

/// Sends `data` in uneven pieces, shuts the sending side, returns everything the server sent.
fn upload(srv: &Server, data: &[u8]) -> Vec<u8> {
    let mut s = srv.connect();
    let mut w = s.try_clone().unwrap();
    let d = data.to_vec();
    let t = std::thread::spawn(move || {
        let mut off = 0;
        for piece in [1usize, 4096, 7, 65_536, 100_003].into_iter().cycle() {
            if off == d.len() {
                break;
            }
            let end = (off + piece).min(d.len());
            if w.write_all(&d[off..end]).is_err() {
                break;
            }
            off = end;
        }
        let _ = w.shutdown(Shutdown::Write);
    });
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    t.join().unwrap();
    got
}

#[test]
fn the_sink_verifies_every_byte_on_every_server() {
    for id in ids() {
        let srv = Server::start(id, "sink", &[], None);
        // A client that resets mid-stream, first: the server goes on.
        let mut r = srv.connect();
        r.write_all(&pattern(0, 100_000)).unwrap();
        std::thread::sleep(Duration::from_millis(10));
        reset(r);
        let n = 1_500_000;
        let got = upload(&srv, &pattern(0, n));
        assert_eq!(
            read_trailer(&got),
            Some((*b"RSOK", n as u64)),
            "{id}: trailer {got:?}"
        );
        // One wrong byte: named, and the connection closed.
        let mut bad = pattern(0, 300_000);
        bad[123_457] ^= 0x40;
        let got = upload(&srv, &bad);
        assert_eq!(
            got.get(..TRAILER_BYTES).and_then(read_trailer),
            Some((*b"RSBD", 123_457)),
            "{id}: {got:?}"
        );
        let (status, _) = srv.stop();
        assert!(status.success(), "{id}: {status}");
        println!("{id}: sink ok");
    }
}

#[test]
fn the_source_streams_the_pattern_on_request_on_every_server() {
    for id in ids() {
        let srv = Server::start(id, "source", &[], None);
        let mut s = srv.connect();
        // Requests split over writes; answers continue one stream.
        let mut reqs = Vec::new();
        for n in [5u32, 70_000, 1, 1 << 20] {
            reqs.extend_from_slice(&n.to_le_bytes());
        }
        for piece in reqs.chunks(3) {
            s.write_all(piece).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        let total = 5 + 70_000 + 1 + (1 << 20);
        let got = read_n(&mut s, total, id);
        assert!(got == pattern(0, total), "{id}: the stream differs");
        // A bad request closes the connection; the server goes on.
        let mut b = srv.connect();
        b.write_all(&(MAX_REQUEST + 1).to_le_bytes()).unwrap();
        let mut rest = Vec::new();
        let r = b.read_to_end(&mut rest);
        assert!(
            r.is_ok_and(|n| n == 0) || rest.is_empty(),
            "{id}: answered a bad request"
        );
        s.write_all(&7u32.to_le_bytes()).unwrap();
        assert!(read_n(&mut s, 7, id) == pattern(total as u64, 7), "{id}");
        let (status, _) = srv.stop();
        assert!(status.success(), "{id}: {status}");
        println!("{id}: source ok");
    }
}

#[test]
fn a_source_client_that_asks_without_reading_cannot_grow_the_server() {
    for id in ids() {
        let srv = Server::start(id, "source", &[], None);
        let mut warm = srv.connect();
        warm.write_all(&4096u32.to_le_bytes()).unwrap();
        read_n(&mut warm, 4096, id);
        let rss0 = srv.rss_kib();
        // 64 KiB requests, 4 bytes each: 1 MiB of them asks for 16 GiB.
        let s = srv.connect();
        let reqs: Vec<u8> = (0..(1 << 18))
            .flat_map(|_| (64u32 << 10).to_le_bytes())
            .collect();
        let pushed = common::net::push_until_stalled(&s, &reqs, 1 << 20, id);
        std::thread::sleep(Duration::from_millis(200));
        let grown = srv.rss_kib().saturating_sub(rss0);
        assert!(grown < 64 << 10, "{id}: RSS grew {} MiB", grown >> 10);
        // Still serving.
        warm.write_all(&100u32.to_le_bytes()).unwrap();
        assert!(read_n(&mut warm, 100, id) == pattern(4096, 100), "{id}");
        println!(
            "{id}: {} KiB of requests in (dropped: {}), server RSS +{grown} KiB",
            pushed.sent >> 10,
            pushed.dropped
        );
        drop(s);
        let (status, _) = srv.stop();
        assert!(status.success(), "{id}: {status}");
    }
}

/// `ringside run stream` end to end at smoke: every direction measured on an epoll server,
/// io_uring servers (uring-multishot's sink once stalled for good: an ENOBUFS completion a
/// batch after its buffers came back was never re-armed) and a contender, every byte verified.
#[test]
fn the_stream_suite_measures_and_verifies_every_direction() {
    let out = tempfile::tempdir().unwrap();
    let r = common::run::run_json(
        &[
            "stream",
            "--profile",
            "smoke",
            "--models",
            "epoll-et,uring,tokio",
        ],
        out.path(),
    );
    let cases = r["cases"].as_array().unwrap();
    let mut dirs = std::collections::BTreeSet::new();
    for c in cases {
        let id = format!("{} {} {}", c["workload"], c["model"], c["params"]);
        let uring = c["model"].as_str().unwrap().starts_with("uring");
        if uring && c["status"] == "unavailable" {
            continue;
        }
        assert_eq!(c["status"], "measured", "{id}: {}", c["reason"]);
        assert!(
            c["counters"]["bytes_verified"].as_u64().unwrap() > 0,
            "{id}"
        );
        assert!(c["bytes_per_sec"].as_f64().unwrap() > 0.0, "{id}");
        assert_eq!(
            c["counters"]["load_mismatches"].as_u64().unwrap_or(0),
            0,
            "{id}"
        );
        dirs.insert(c["params"]["direction"].as_str().unwrap().to_string());
        // A chunk is an op in the timeline as in the count (`load::stream`).
        common::run::timeline_adds_up(out.path(), c);
    }
    assert_eq!(
        dirs.into_iter().collect::<Vec<_>>(),
        ["down", "duplex", "up"],
        "every direction ran"
    );
}

/// The full grid's corners — 100 connections, 1 MiB writes, every direction — move and verify
/// bytes, with no error, on an epoll server and a contender.
#[test]
fn a_hundred_connections_of_one_mib_writes_verify_every_direction() {
    use ringside::load::stream::{Direction, Streaming};
    use ringside::load::{run, Config};
    for id in ["epoll-et", "monoio"] {
        if id == "monoio" && !peer_ready(PeerKind::Monoio) {
            continue;
        }
        for dir in [Direction::Up, Direction::Down, Direction::Duplex] {
            let srv = Server::start(id, dir.protocol().as_str(), &[], None);
            let mut cfg = Config::new(srv.addr, 100, Duration::from_millis(500));
            cfg.warmup = Duration::from_millis(100);
            cfg.threads = 2;
            let ex = Streaming {
                direction: dir,
                write_bytes: 1 << 20,
            };
            let r = run(&cfg, &ex, &mut |_| {}).unwrap();
            let what = format!("{id} {dir:?}");
            assert_eq!(r.unverified(), None, "{what}");
            assert_eq!(r.errors(), 0, "{what}: {:?}", r.first_error);
            assert_eq!(r.n.live_conns, 100, "{what}");
            // A write that straddles the window's opening counts once, with only its bytes
            // inside the window: within one write per connection of msgs x write_bytes.
            let w = 1u64 << 20;
            assert!(r.n.msgs > 0, "{what}: no write completed");
            assert!(
                r.n.bytes + 100 * w >= r.n.msgs * w && r.n.bytes <= (r.n.msgs + 100) * w,
                "{what}: {} bytes for {} writes",
                r.n.bytes,
                r.n.msgs
            );
            assert!(r.n.verified_bytes >= r.n.bytes, "{what}");
            let (status, _) = srv.stop();
            assert!(status.success(), "{what}: {status}");
        }
    }
}

/// Uploads into a sink that keeps up: a write never blocks, and a loop that stayed in one
/// write call across the window's opening once counted nothing (the edges it judged by were
/// read before the opening was known): the window's writes are counted on every run.
#[test]
fn an_upload_that_never_blocks_counts_its_window_every_time() {
    use ringside::load::stream::{Direction, Streaming};
    use ringside::load::{run, Config};
    for id in ["epoll-et", "tokio"] {
        if id == "tokio" && !peer_ready(PeerKind::Tokio) {
            continue;
        }
        let srv = Server::start(id, "sink", &[], None);
        for i in 0..6 {
            let mut cfg = Config::new(srv.addr, 10, Duration::from_millis(300));
            cfg.warmup = Duration::from_millis(100);
            cfg.threads = 1;
            let ex = Streaming {
                direction: Direction::Up,
                write_bytes: 64 << 10,
            };
            let r = run(&cfg, &ex, &mut |_| {}).unwrap();
            assert_eq!(r.unverified(), None, "{id} run {i}");
            assert!(r.n.msgs > 0 && r.n.bytes > 0, "{id} run {i}: {r:?}");
            assert!(r.n.verified_bytes >= r.n.bytes, "{id} run {i}");
        }
        let (status, _) = srv.stop();
        assert!(status.success(), "{id}: {status}");
    }
}
