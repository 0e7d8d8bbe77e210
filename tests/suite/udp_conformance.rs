//! The UDP echo (`ringside serve --protocol udp-echo`, `udp.echo`) on every server in the
//! registry that serves it (`ModelSpec::runs`: the families, the thread pool, tokio,
//! tokio-mt and monoio): a burst of every size is echoed whole to
//! each flow; datagrams of the wrong length and a flood from an unknown source port are
//! dropped or echoed without breaking the server, which then still echoes; a model without a
//! UDP server is refused with exit 2. And the UDP load (`load::udp`) against stand-in servers
//! that drop, duplicate or corrupt datagrams: a lost datagram is counted as lost and never an
//! op, a duplicate is named, a corrupted echo fails the run.

use crate::common;

use common::child::Server;
use common::servers::udp_servers;
use ringside::load::udp::Udp;
use ringside::proto::udp::{encode, verify, HEADER};
use std::collections::HashSet;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Every registry model with a UDP server that can run here (blocking, the thread pool, epoll,
/// io_uring rows and the peers); `UDP_ONLY=<id>` runs one of them.
fn ids() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = udp_servers().into_iter().map(|m| m.id).collect();
    let mut want = vec!["blocking", "threadpool", "epoll-lt", "epoll-et"];
    if cfg!(feature = "peer-tokio") {
        want.extend(["tokio", "tokio-mt"]);
    }
    for want in want {
        assert!(v.contains(&want), "{want} must serve UDP: {v:?}");
    }
    if let Ok(only) = std::env::var("UDP_ONLY") {
        v.retain(|id| *id == only);
    }
    v
}

/// How each server is started: tokio-mt with two workers, so that two tasks share the socket.
fn start(id: &'static str) -> Server {
    let args: &[&str] = match id {
        "tokio-mt" => &["--threads", "2"],
        _ => &[],
    };
    Server::start(id, "udp-echo", args, None)
}

fn flow_socket(server: SocketAddr) -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.connect(server).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// Sends `n` datagrams of `len` bytes on each flow, then reads every echo back and verifies
/// it: every sequence once, every byte right.
fn burst(server: SocketAddr, flows: u32, n: u64, len: usize, id: &str) {
    let socks: Vec<UdpSocket> = (0..flows).map(|_| flow_socket(server)).collect();
    let mut d = vec![0u8; len];
    for (f, s) in socks.iter().enumerate() {
        for seq in 0..n {
            encode(f as u32, seq, len, &mut d);
            s.send(&d).unwrap();
        }
    }
    let mut buf = vec![0u8; 4096];
    for (f, s) in socks.iter().enumerate() {
        let mut seen = HashSet::new();
        while (seen.len() as u64) < n {
            // A signal another test's child or handler sends this process can land on this
            // thread: a socket with a read timeout is not restarted (EINTR), so read again.
            let got = match s.recv(&mut buf) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                r => r.unwrap_or_else(|e| {
                    panic!("{id}: flow {f} at {} of {n} ({len} B): {e}", seen.len())
                }),
            };
            let seq = verify(f as u32, len, &buf[..got])
                .unwrap_or_else(|e| panic!("{id}: flow {f}: {e:?}"));
            assert!(seen.insert(seq), "{id}: flow {f}: sequence {seq} twice");
        }
    }
}

#[test]
fn every_udp_server_echoes_each_flows_burst_whole() {
    for id in ids() {
        let s = start(id);
        for len in [HEADER, 64, 1400] {
            burst(s.addr, 4, 32, len, id);
        }
        let (st, c) = s.stop();
        assert!(st.success(), "{id}: {st}");
        assert_eq!(c["datagrams_out"], 3 * 4 * 32, "{id}: {c}");
        assert_eq!(c["send_errors"], 0, "{id}: {c}");
        // The servers of several threads on the one socket say how many served.
        match id {
            "threadpool" => assert!(c["server_threads"].as_u64().unwrap() > 1, "{c}"),
            "tokio-mt" => assert_eq!(c["server_threads"], 2, "{c}"),
            _ => {}
        }
    }
}

#[test]
fn hostile_datagrams_and_a_flood_from_an_unknown_port_do_not_break_the_server() {
    for id in ids() {
        let s = start(id);
        let hostile = UdpSocket::bind("127.0.0.1:0").unwrap();
        // Wrong lengths: shorter than the header, longer than any buffer (truncated), and a
        // length field that disagrees with the size; then bytes that are not ours at all.
        let mut d = vec![0u8; 3000];
        encode(9, 0, 64, &mut d);
        let mut wrong_field = d[..64].to_vec();
        wrong_field[4] = 100;
        encode(9, 1, 2048, &mut d);
        let mut too_long = d[..2048].to_vec();
        too_long.resize(3000, 7);
        for _ in 0..50 {
            hostile.send_to(&[1, 2, 3], s.addr).unwrap();
            hostile.send_to(&too_long, s.addr).unwrap();
            hostile.send_to(&wrong_field, s.addr).unwrap();
            hostile.send_to(&[0xAB; 64], s.addr).unwrap();
        }
        // A flood of sound datagrams from a port that never reads its echoes.
        let mut sound = vec![0u8; 64];
        for seq in 0..5_000 {
            encode(77, seq, 64, &mut sound);
            let _ = hostile.send_to(&sound, s.addr);
        }
        std::thread::sleep(Duration::from_millis(100));
        // Still echoing, verified.
        burst(s.addr, 2, 16, 64, id);
        let (st, c) = s.stop();
        assert!(st.success(), "{id}: {st}");
        assert!(c["dropped_length"].as_u64().unwrap() >= 50, "{id}: {c}");
        assert!(c["dropped_header"].as_u64().unwrap() >= 50, "{id}: {c}");
        let dropped = c["dropped_length"].as_u64().unwrap() + c["dropped_header"].as_u64().unwrap();
        assert!(
            dropped <= 200,
            "{id}: only the hostile datagrams are dropped: {c}"
        );
    }
}

#[test]
fn a_model_without_a_udp_server_is_refused_naming_those_with_one() {
    let out = assert_cmd::Command::cargo_bin("ringside")
        .unwrap()
        .args(["serve", "--protocol", "udp-echo", "--model", "uring-fixed"])
        .args(["--addr", "127.0.0.1:0"])
        .timeout(Duration::from_secs(20))
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(
        err.contains("uring-fixed") && err.contains("epoll-et") && err.contains("threadpool"),
        "{err}"
    );
    // The GRO server: the native families only, and the list says which.
    let out = assert_cmd::Command::cargo_bin("ringside")
        .unwrap()
        .args(["serve", "--protocol", "udp-echo-gro", "--model", "tokio"])
        .args(["--addr", "127.0.0.1:0"])
        .timeout(Duration::from_secs(20))
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    let (_, valid) = err.split_once("served by:").expect("the servers named");
    assert!(
        err.contains("tokio") && valid.contains("epoll-et") && !valid.contains("tokio"),
        "{err}"
    );
}

/// What a stand-in server does with every n-th datagram it receives.
#[derive(Clone, Copy)]
enum Fault {
    /// Drops every n-th.
    Drop(u64),
    /// Echoes every n-th twice.
    Twice(u64),
    /// Flips a pattern byte of every n-th.
    Corrupt(u64),
}

/// A stand-in UDP echo server with a fault, until the flag is set.
fn standin(fault: Fault) -> (SocketAddr, Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    let addr = s.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let h = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let mut n = 0u64;
        while !stop2.load(Ordering::Relaxed) {
            let Ok((len, from)) = s.recv_from(&mut buf) else {
                continue;
            };
            n += 1;
            let d = &mut buf[..len];
            match fault {
                Fault::Drop(k) if n % k == 0 => continue,
                Fault::Twice(k) if n % k == 0 => {
                    let _ = s.send_to(d, from);
                }
                Fault::Corrupt(k) if n % k == 0 => d[len - 1] ^= 1,
                _ => {}
            }
            let _ = s.send_to(d, from);
        }
    });
    (addr, stop, h)
}

fn load(addr: SocketAddr, rate: Option<f64>) -> ringside::load::Report {
    let mut cfg = ringside::load::Config::new(addr, 4, Duration::from_millis(400));
    cfg.warmup = Duration::from_millis(100);
    cfg.rate = rate;
    let u = Udp {
        datagram_bytes: 64,
        window: 2,
        segments: 1,
        loss_timeout: Duration::from_millis(20),
    };
    ringside::load::run(&cfg, &u, &mut |_| {}).unwrap()
}

#[test]
fn a_dropped_datagram_is_counted_lost_and_never_an_op() {
    for rate in [None, Some(2_000.0)] {
        let (addr, stop, h) = standin(Fault::Drop(10));
        let r = load(addr, rate);
        stop.store(true, Ordering::Relaxed);
        h.join().unwrap();
        let d = &r.dgram;
        assert!(d.dgram_lost > 0, "{rate:?}: {d:?}");
        assert!(r.n.msgs > 0, "{rate:?}");
        // Every datagram sent in the window is an op, lost, or still in flight at its end
        // (at most the flows' windows, or the timeout's worth of the open loop).
        assert!(
            r.n.msgs + d.dgram_lost <= d.dgram_sent + 8 + 50,
            "{rate:?}: {} {d:?}",
            r.n.msgs
        );
        assert!(
            r.n.msgs < d.dgram_sent,
            "{rate:?}: the lost ones are not ops: {} {d:?}",
            r.n.msgs
        );
        // About one in ten is lost; the echoes of the others are all ops.
        let share = d.dgram_lost as f64 / d.dgram_sent as f64;
        assert!((0.05..0.2).contains(&share), "{rate:?}: {share} {d:?}");
        assert_eq!(r.unverified(), None, "{rate:?}");
        assert_eq!(r.latency.len(), r.n.msgs);
    }
}

#[test]
fn a_duplicated_or_corrupted_echo_on_loopback_fails_the_run() {
    // On loopback only the server can echo a datagram twice: like a wrong byte, it does not
    // verify (the cell fails; `ringside load` exits 1).
    let (addr, stop, h) = standin(Fault::Twice(5));
    let r = load(addr, None);
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    assert!(r.dgram.dgram_duplicates > 0, "{:?}", r.dgram);
    assert_eq!(r.dgram.dgram_lost, 0, "{:?}", r.dgram);
    let why = r
        .unverified()
        .expect("a duplicated echo on loopback fails the run");
    assert!(why.contains("echoed more than once"), "{why}");
    assert_eq!(
        r.n.mismatches, 0,
        "each copy verified, the count is its own"
    );

    let (addr, stop, h) = standin(Fault::Corrupt(7));
    let r = load(addr, None);
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    assert!(r.n.mismatches > 0);
    let why = r.unverified().expect("a corrupted echo fails the run");
    assert!(why.contains("mismatched"), "{why}");
}

/// `ringside run udp.echo` at smoke: every UDP server measured at both points, the open-loop
/// point at the offered rate with its loss counted (the thread pool and tokio among them);
/// a model without one not applicable.
#[test]
fn the_udp_suite_measures_every_udp_server_and_counts_its_datagrams() {
    let dir = tempfile::tempdir().unwrap();
    let models = match cfg!(feature = "peer-tokio") {
        true => "blocking,epoll-et,threadpool,tokio,uring-fixed",
        false => "blocking,epoll-et,threadpool,uring-fixed",
    };
    let v = common::run::run_json(
        &["udp.echo", "--profile", "smoke", "--models", models],
        dir.path(),
    );
    let cases = v["cases"].as_array().unwrap();
    // Two points for each UDP server; one not-applicable cell for uring-fixed.
    let labels: Vec<String> = cases
        .iter()
        .map(|c| format!("{} {}", c["model"], c["status"]))
        .collect();
    let servers = models.split(',').count() - 1;
    assert_eq!(cases.len(), 2 * servers + 1, "{labels:?}");
    for c in cases {
        if c["model"] == "uring-fixed" {
            assert_eq!(c["status"], "not_applicable", "{c}");
            assert!(c["reason"].as_str().unwrap().contains("UDP"), "{c}");
            continue;
        }
        assert_eq!(c["status"], "measured", "{c}");
        let k = &c["counters"];
        assert!(k["dgram_sent"].as_u64().unwrap() > 0, "{k}");
        assert!(k["dgram_lost"].is_u64(), "{k}");
        assert!(k["server_datagrams_out"].as_u64().unwrap() > 0, "{k}");
        if c["model"] == "threadpool" {
            let n = k["server_server_threads"].as_u64().unwrap();
            assert!(n > 1, "the pool is several threads: {k}");
        }
        let lost = k["dgram_lost"].as_u64().unwrap() + k["dgram_send_failed"].as_u64().unwrap();
        let warned = c["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w == "datagrams_lost");
        assert_eq!(warned, lost > 0, "a cell with loss says so: {c}");
        if c["equal_load"].is_object() {
            assert!(k["offered_per_sec"].as_u64().unwrap() > 0, "{k}");
        }
        // An echoed datagram is an op in the timeline as in the count (`load::udp`).
        common::run::timeline_adds_up(dir.path(), c);
    }
}
