//! The contenders: each built-in peer echoes exactly (odd sizes, messages larger than its
//! buffer, trickled writes, 20 concurrent connections with distinct content) and stops within
//! a second of its flag, closing its connections; an external command is waited for, measured
//! by the pid holding its port, and killed, or fails with its stderr tail.

use crate::common;

use common::inproc::Peer;
use common::net::connect;
use common::servers::{peer_ready, peers};
use ringside::model::PeerKind;
use ringside::peer::external::{External, StartOpts};
use ringside::peer::{availability, serve_echo, Setup};
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Message sizes: odd, around the contenders' 16 KiB buffer, and well beyond it.
const SIZES: &[usize] = &[1, 7, 63, 64, 511, 4097, 16383, 16384, 16385, 65537];
const CONNS: usize = 20;

fn start(kind: PeerKind) -> Peer {
    Peer::start(move |l, stop| serve_echo(kind, l, stop, Setup::TWO).map(drop))
}

/// Content unique to (connection, message), so that bytes crossing connections are caught.
fn message(conn: usize, seq: usize, len: usize) -> Vec<u8> {
    let mut x = (conn as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (seq as u64 + 1).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Sends `msg` (in `chunks` pieces with a pause between them when > 1) and reads back exactly
/// as many bytes, comparing them.
fn round_trip(s: &mut TcpStream, msg: &[u8], chunks: usize) {
    let step = msg.len().div_ceil(chunks.max(1));
    for piece in msg.chunks(step) {
        s.write_all(piece).unwrap();
        if chunks > 1 {
            thread::sleep(Duration::from_millis(2));
        }
    }
    let mut back = vec![0u8; msg.len()];
    s.read_exact(&mut back).unwrap();
    assert!(back == msg, "echo differs for a {}-byte message", msg.len());
}

fn echoes_exactly(kind: PeerKind) {
    if !peer_ready(kind) {
        return;
    }
    let server = start(kind);
    let addr = server.addr;
    let clients: Vec<_> = (0..CONNS)
        .map(|c| {
            thread::spawn(move || {
                let mut s = connect(addr);
                for (i, &len) in SIZES.iter().enumerate() {
                    round_trip(&mut s, &message(c, i, len), 1);
                }
                // Trickled: the server sees partial messages.
                round_trip(&mut s, &message(c, 100, 3001), 3);
                s
            })
        })
        .collect();
    let mut open: Vec<TcpStream> = clients.into_iter().map(|t| t.join().unwrap()).collect();

    // A half-close: the echo of what was sent still arrives, then EOF.
    let mut half = connect(addr);
    let msg = message(99, 0, 777);
    half.write_all(&msg).unwrap();
    half.shutdown(std::net::Shutdown::Write).unwrap();
    let mut back = Vec::new();
    half.read_to_end(&mut back).unwrap();
    assert!(back == msg, "half-closed connection: echo differs");

    server.stop_within_a_second();
    // Stopping closes every connection: each open client now sees EOF (or a reset).
    for s in &mut open {
        let mut b = [0u8; 1];
        match s.read(&mut b) {
            Ok(0) => {}
            Ok(n) => panic!("{n} unexpected bytes after stop"),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
            Err(e) => panic!("connection not closed by stop: {e}"),
        }
    }
}

#[test]
fn tokio_echoes_exactly_and_stops() {
    echoes_exactly(PeerKind::Tokio);
}

#[test]
fn tokio_mt_echoes_exactly_and_stops() {
    echoes_exactly(PeerKind::TokioMt);
}

#[test]
fn monoio_echoes_exactly_and_stops() {
    echoes_exactly(PeerKind::Monoio);
}

#[test]
fn idle_server_stops_within_a_second() {
    for kind in peers() {
        if availability(kind).is_ready() {
            let server = start(kind);
            thread::sleep(Duration::from_millis(120));
            server.stop_within_a_second();
        }
    }
}

/// A client that sends and never reads: the contender must stop reading from it (its writes
/// stall once the socket buffers fill) rather than buffer without bound, and still stop.
#[test]
fn never_reading_client_stalls_and_the_server_still_stops() {
    for kind in peers() {
        if !availability(kind).is_ready() {
            continue;
        }
        let server = start(kind);
        let s = connect(server.addr);
        let p = common::net::push_until_stalled(&s, &[0x5Au8; 1 << 20], 256 << 20, "peer");
        assert!(
            p.stalled,
            "{kind:?} read {} bytes from a client that never reads",
            p.sent
        );
        drop(s);
        server.stop_within_a_second();
    }
}

#[test]
fn external_is_not_served_in_process() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let err = serve_echo(
        PeerKind::External,
        listener,
        Arc::new(AtomicBool::new(false)),
        Setup::TWO,
    )
    .unwrap_err();
    assert!(err.to_string().contains("External::start"), "{err}");
}

// -- external contenders --

const PY_ECHO: &str = r#"
import socketserver, sys
class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            data = self.request.recv(65536)
            if not data:
                return
            self.request.sendall(data)
class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
print("python echo starting", file=sys.stderr, flush=True)
Server(("127.0.0.1", int(sys.argv[1])), Echo).serve_forever()
"#;

fn write_script(dir: &Path) -> String {
    let p = dir.join("echo.py");
    std::fs::write(&p, PY_ECHO).unwrap();
    p.display().to_string()
}

/// Gone: no /proc entry, or a zombie waiting for a reaper that is not us.
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let rest = &stat[stat.rfind(')').unwrap() + 1..];
            matches!(rest.split_whitespace().next(), Some("Z" | "X"))
        }
    }
}

fn wait_gone(pid: u32) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(3) {
        if gone(pid) {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn external_contender_is_waited_for_measured_and_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(dir.path());
    let ext = External::parse(&format!("py-echo=python3 {script} {{port}}")).unwrap();
    let run = ext
        .start(&StartOpts::default())
        .expect("python echo contender");
    let pid = run.pid();
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
    assert!(comm.starts_with("python"), "measured pid {pid} is '{comm}'");
    assert!(run.group_pids().contains(&pid));
    assert!(run.command().ends_with(&run.addr().port().to_string()));

    let mut s = connect(run.addr());
    for (i, &len) in SIZES.iter().enumerate() {
        round_trip(&mut s, &message(7, i, len), 1);
    }
    drop(s);
    assert!(run.stderr_tail().contains("python echo starting"));
    let exit = run.stop().unwrap();
    assert!(!exit.is_empty());
    assert!(
        wait_gone(pid),
        "contender pid {pid} still running after stop"
    );
}

#[test]
fn external_contender_that_ignores_sigterm_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(dir.path());
    let ext = External::parse(&format!(
        "stubborn=trap '' TERM; exec python3 {script} {{port}}"
    ))
    .unwrap();
    let opts = StartOpts {
        grace: Duration::from_millis(300),
        ..StartOpts::default()
    };
    let run = ext.start(&opts).unwrap();
    let pid = run.pid();
    let t0 = Instant::now();
    drop(run);
    assert!(
        t0.elapsed() < Duration::from_secs(3),
        "drop took {:?}",
        t0.elapsed()
    );
    assert!(wait_gone(pid), "pid {pid} survived SIGKILL");
}

#[test]
fn external_contender_that_exits_fails_with_its_stderr_tail() {
    let ext = External::parse(
        "quitter=for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25; \
         do echo line-$i >&2; done; echo boom-marker >&2; exit 3 # {port}",
    )
    .unwrap();
    let err = format!("{:#}", ext.start(&StartOpts::default()).unwrap_err());
    assert!(err.contains("exited"), "{err}");
    assert!(err.contains("boom-marker"), "{err}");
    assert!(err.contains("line-25"), "{err}");
    // The tail is the last 20 lines, not all of them.
    assert!(!err.contains("line-5\n"), "{err}");
}

#[test]
fn external_contender_that_never_opens_its_port_times_out_and_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let ext = External::parse(&format!(
        "sleeper=echo $$ > {}; echo waiting-marker >&2; exec sleep 30 # {{port}}",
        pidfile.display()
    ))
    .unwrap();
    let opts = StartOpts {
        ready_timeout: Duration::from_millis(500),
        ..StartOpts::default()
    };
    let t0 = Instant::now();
    let err = format!("{:#}", ext.start(&opts).unwrap_err());
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t0.elapsed()
    );
    assert!(err.contains("did not accept connections"), "{err}");
    assert!(err.contains("waiting-marker"), "{err}");
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(wait_gone(pid), "contender pid {pid} left running");
}

#[test]
fn external_contender_is_pinned_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(dir.path());
    let ext = External::parse(&format!("pinned=python3 {script} {{port}}")).unwrap();
    let cpu = ringside::measure::pin::allowed_cpus()[0];
    let opts = StartOpts {
        cpus: Some(vec![cpu]),
        ..StartOpts::default()
    };
    let run = ext.start(&opts).unwrap();
    let status = std::fs::read_to_string(format!("/proc/{}/status", run.pid())).unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("Cpus_allowed_list:"))
        .unwrap();
    assert_eq!(
        line.split_whitespace().nth(1),
        Some(cpu.to_string().as_str())
    );
}
