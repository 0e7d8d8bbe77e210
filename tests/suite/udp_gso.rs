//! UDP GRO/GSO (`udp.echo_gso`, `ringside serve --protocol udp-echo-gro`, `io::udp_gso`) on
//! every server in the registry that has it: a burst sent in one UDP_SEGMENT send arrives at
//! the server as one coalesced run; a run with one corrupted segment has exactly that segment
//! dropped and the others echoed, each verified; the UDP driver refuses the io_uring load
//! engine; and `run udp.echo_gso` measures both offloads.

use crate::common;

use common::child::Server;
use common::servers::servers;
use ringside::io::udp_gso::{put_segment, Ctrl};
use ringside::proto::udp::{encode, verify};
use std::collections::HashSet;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

fn ids() -> Vec<&'static str> {
    ringside::io::udp_gso::probe().expect("this kernel takes UDP_GRO and UDP_SEGMENT");
    let v: Vec<&'static str> = servers()
        .into_iter()
        .filter(|m| {
            m.runs(ringside::model::Shape::Datagram { gro: true })
                .is_ok()
        })
        .map(|m| m.id)
        .collect();
    for want in ["blocking", "epoll-lt", "uring"] {
        assert!(v.contains(&want), "{want} must serve UDP GRO: {v:?}");
    }
    v
}

/// Sends `n` datagrams of `len` bytes (sequences from `seq0`) in one sendmsg with UDP_SEGMENT,
/// corrupting the magic of the one at index `bad`.
fn send_burst(s: &UdpSocket, flow: u32, seq0: u64, n: usize, len: usize, bad: Option<usize>) {
    let mut b = vec![0u8; n * len];
    for i in 0..n {
        encode(flow, seq0 + i as u64, len, &mut b[i * len..(i + 1) * len]);
    }
    if let Some(i) = bad {
        b[i * len] ^= 0xFF;
    }
    let mut ctrl = Ctrl::ZERO;
    let mut iov = libc::iovec {
        iov_base: b.as_mut_ptr().cast(),
        iov_len: b.len(),
    };
    // SAFETY: plain data; the header points at live buffers of the stated sizes.
    let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
    h.msg_iov = &mut iov;
    h.msg_iovlen = 1;
    h.msg_controllen = put_segment(&mut ctrl, len as u16) as _;
    h.msg_control = ctrl.0.as_mut_ptr().cast();
    let r = unsafe { libc::sendmsg(s.as_raw_fd(), &h, 0) };
    assert_eq!(r as usize, b.len(), "{}", std::io::Error::last_os_error());
}

fn recv_seqs(s: &UdpSocket, flow: u32, len: usize, n: usize, id: &str) -> HashSet<u64> {
    let mut buf = vec![0u8; 4096];
    let mut seen = HashSet::new();
    while seen.len() < n {
        // A socket with a read timeout is not restarted after a signal (EINTR): read again.
        let got = match s.recv(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => r.unwrap_or_else(|e| panic!("{id}: at {} of {n}: {e}", seen.len())),
        };
        let seq = verify(flow, len, &buf[..got]).unwrap_or_else(|e| panic!("{id}: {e:?}"));
        assert!(seen.insert(seq), "{id}: sequence {seq} twice");
    }
    seen
}

fn flow_socket(server: SocketAddr) -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.connect(server).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

#[test]
fn a_gro_run_with_one_corrupted_segment_loses_exactly_that_one() {
    for id in ids() {
        let s = Server::start(id, "udp-echo-gro", &[], None);
        let f = flow_socket(s.addr);
        // 8 segments of 200 bytes, the fourth not ours: the other 7 come back, verified.
        send_burst(&f, 1, 0, 8, 200, Some(3));
        let seen = recv_seqs(&f, 1, 200, 7, id);
        assert!(!seen.contains(&3), "{id}: {seen:?}");
        // Then whole bursts of full-size datagrams, all echoed.
        for k in 0..4 {
            send_burst(&f, 1, 100 + k * 16, 16, 1400, None);
        }
        assert_eq!(recv_seqs(&f, 1, 1400, 64, id).len(), 64, "{id}");
        std::thread::sleep(Duration::from_millis(50));
        let (st, c) = s.stop();
        assert!(st.success(), "{id}: {st}");
        assert_eq!(c["dropped_header"], 1, "{id}: exactly the bad segment: {c}");
        assert_eq!(c["dropped_length"], 0, "{id}: {c}");
        assert_eq!(c["datagrams_in"], 8 + 64, "{id}: {c}");
        assert_eq!(c["datagrams_out"], 7 + 64, "{id}: {c}");
        assert_eq!(c["send_errors"], 0, "{id}: {c}");
        // The kernel kept the bursts whole: received as coalesced runs, echoed with GSO.
        assert!(c["gro_buffers"].as_u64().unwrap() >= 1, "{id}: {c}");
        assert_eq!(c["gro_segments"], 8 + 64, "{id}: {c}");
        assert!(c["gso_sends"].as_u64().unwrap() >= 1, "{id}: {c}");
    }
}

#[test]
fn the_udp_driver_refuses_the_io_uring_load_engine() {
    for w in ["udp.echo", "udp.echo_gso"] {
        let out = assert_cmd::Command::cargo_bin("ringside")
            .unwrap()
            .args(["run", w, "--load-engine", "uring", "--dry-run"])
            .timeout(Duration::from_secs(20))
            .assert()
            .code(2)
            .get_output()
            .stderr
            .clone();
        let err = String::from_utf8_lossy(&out);
        assert!(
            err.contains("--load-engine") && err.contains("epoll"),
            "{w}: {err}"
        );
    }
}

/// `ringside run udp.echo_gso` at smoke: both offloads measured for each model with a GRO
/// server; only the gso_gro cells coalesce; the peers not applicable.
#[test]
fn the_gso_workload_measures_both_offloads() {
    let dir = tempfile::tempdir().unwrap();
    let v = common::run::run_json(
        &[
            "udp.echo_gso",
            "--profile",
            "smoke",
            "--models",
            "epoll-lt,uring-multishot,threadpool",
        ],
        dir.path(),
    );
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 5, "{cases:?}");
    for c in cases {
        if c["model"] == "threadpool" {
            assert_eq!(c["status"], "not_applicable", "{c}");
            continue;
        }
        assert_eq!(c["status"], "measured", "{c}");
        let k = &c["counters"];
        assert!(k["dgram_sent"].as_u64().unwrap() > 0, "{k}");
        let gro = k["server_gro_buffers"].as_u64().unwrap_or(0);
        match c["params"]["offload"].as_str().unwrap() {
            "gso_gro" => assert!(gro > 0, "{k}"),
            "none" => assert_eq!(gro, 0, "{k}"),
            o => panic!("offload {o}"),
        }
    }
}
