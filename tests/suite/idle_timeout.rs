//! Idle timeouts (slowloris defence), driven from the registry: every built-in TCP server
//! this machine can run is started in-process with a line protocol that answers only at a
//! newline and has a 300 ms idle limit. A client that trickles bytes without a newline and a
//! client that sends nothing must both be closed, not before the limit and within 3 s, while
//! a third client doing request/response every 50 ms is served throughout and never closed.
//! With no limit, a silent client is still open (and still served) after a second. Then
//! `ringside serve --idle-timeout-ms` end to end, and its range check.

use crate::common;

use common::child::Server;
use common::inproc::Running;
use common::servers::servers;
use ringside::model::ModelSpec;
use ringside::proto::{Next, Protocol, Reply, Step};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_millis(300);
/// An idle client must be closed within this long of connecting.
const CLOSE_BOUND: Duration = Duration::from_secs(3);
/// A partial line longer than this closes the connection (keeps the test protocol bounded).
const MAX_LINE: usize = 64 * 1024;

/// Answers "ok\n" per complete line; nothing until a newline arrives.
#[derive(Clone, Copy)]
struct Lines {
    idle: Option<Duration>,
}

impl Protocol for Lines {
    /// Bytes of the current partial line.
    type Conn = usize;

    fn id(&self) -> &'static str {
        "lines"
    }

    fn on_bytes(&self, partial: &mut usize, input: &[u8], out: &mut Vec<u8>) -> Step {
        let mut answered = false;
        for &b in input {
            if b == b'\n' {
                out.extend_from_slice(b"ok\n");
                *partial = 0;
                answered = true;
            } else {
                *partial += 1;
            }
        }
        Step {
            reply: if answered { Reply::Out } else { Reply::Nothing },
            next: if *partial > MAX_LINE {
                Next::Close
            } else {
                Next::More
            },
        }
    }

    fn idle_timeout(&self) -> Option<Duration> {
        self.idle
    }
}

/// Whether the server closed `s`: EOF or reset within `wait` (Ok(true)), nothing (Ok(false)).
fn closed_within(s: &mut TcpStream, wait: Duration) -> bool {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut b = [0u8; 64];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(n) => panic!("unexpected {n} bytes: {:?}", &b[..n]),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => false,
        Err(_) => true,
    }
}

/// One request/response; panics (naming `id`) unless "ok\n" comes back within 2 s.
fn round(id: &str, s: &mut TcpStream) {
    s.write_all(b"ping\n")
        .unwrap_or_else(|e| panic!("{id}: active client's write failed: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut b = [0u8; 3];
    s.read_exact(&mut b)
        .unwrap_or_else(|e| panic!("{id}: active client not served: {e}"));
    assert_eq!(&b, b"ok\n", "{id}");
}

/// Sends one byte (never a newline) every 100 ms until the server closes the connection;
/// returns how long after connecting that was, or None past `CLOSE_BOUND`.
fn trickle(mut s: TcpStream) -> Option<Duration> {
    let t0 = Instant::now();
    while t0.elapsed() < CLOSE_BOUND {
        if s.write_all(b"a").is_err() || closed_within(&mut s, Duration::from_millis(100)) {
            return Some(t0.elapsed());
        }
    }
    None
}

#[test]
fn idle_connections_are_closed_and_busy_ones_served_in_every_server() {
    // Four servers at a time: each one's check is mostly waiting (the idle limit, the 1 s of
    // rounds), and every bound here is loose against that much company (3 s to close at a
    // 300 ms limit, 5 rounds where 20 are due).
    common::par::each_at_most(servers(), 4, |m| {
        let id = m.id;
        let srv = Running::start(m, Lines { idle: Some(LIMIT) });
        let mut active = srv.connect();
        round(id, &mut active);
        let trickler = srv.connect();
        let mut silent = srv.connect();
        let t0 = Instant::now();
        let trick = std::thread::spawn(move || trickle(trickler));
        let sil = std::thread::spawn(move || {
            let closed = closed_within(&mut silent, CLOSE_BOUND);
            (closed, t0.elapsed())
        });
        // Request/response every 50 ms until both idle clients are gone, and for at least 1 s.
        let mut rounds = 0;
        while t0.elapsed() < Duration::from_secs(1)
            || (!(trick.is_finished() && sil.is_finished()) && t0.elapsed() < 2 * CLOSE_BOUND)
        {
            round(id, &mut active);
            rounds += 1;
            std::thread::sleep(Duration::from_millis(50));
        }
        let trick = trick.join().unwrap();
        let (sil_closed, sil_after) = sil.join().unwrap();
        let trick = trick.unwrap_or_else(|| panic!("{id}: trickling client open after 3 s"));
        assert!(sil_closed, "{id}: silent client open after 3 s");
        // Never before the limit (the coarse clock may lag a few ms).
        let early = LIMIT - Duration::from_millis(20);
        assert!(trick >= early, "{id}: trickler closed after only {trick:?}");
        assert!(
            sil_after >= early,
            "{id}: silent closed after only {sil_after:?}"
        );
        // About 20 at 50 ms; fewer only on a loaded machine.
        assert!(rounds >= 5, "{id}: only {rounds} rounds");
        // The busy client is still open and served after the idle ones were closed.
        round(id, &mut active);
        let c = srv.stop();
        assert_eq!(c.get("idle_closes"), 2, "{id}: {c:?}");
        println!(
            "{id}: trickler closed after {trick:?}, silent after {sil_after:?}, {rounds} rounds"
        );
    });
}

#[test]
fn without_a_limit_a_silent_client_stays_open_in_every_server() {
    let ms = servers();
    // In parallel: nothing here is timed tightly.
    let runs: Vec<_> = ms
        .into_iter()
        .map(|m| {
            std::thread::spawn(move || {
                let srv = Running::start(m, Lines { idle: None });
                let mut silent = srv.connect();
                assert!(
                    !closed_within(&mut silent, Duration::from_secs(1)),
                    "{}: silent client closed without an idle limit",
                    m.id
                );
                round(m.id, &mut silent);
                let c = srv.stop();
                assert_eq!(c.get("idle_closes"), 0, "{}: {c:?}", m.id);
            })
        })
        .collect();
    for r in runs {
        r.join().unwrap();
    }
}

fn ringside_serve(args: &[&str]) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("ringside"));
    cmd.args(["serve", "--protocol", "echo"]).args(args);
    cmd
}

#[test]
fn serve_flag_closes_idle_echo_connections_and_reports_them() {
    for model in ["epoll-lt", "blocking"] {
        let srv = Server::start(model, "echo", &["--idle-timeout-ms", "200"], None);
        let addr = srv.addr;
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"hi").unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut b = [0u8; 2];
        s.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"hi");
        assert!(closed_within(&mut s, CLOSE_BOUND), "{model}: not closed");
        let (_, v) = srv.stop_within(Duration::from_secs(5));
        assert_eq!(v["idle_closes"], 1, "{model}: {v}");
    }
}

#[test]
fn serve_flag_out_of_range_is_refused_naming_the_range() {
    let out = ringside_serve(&["--model", "epoll-lt", "--idle-timeout-ms", "86400001"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--idle-timeout-ms 86400001") && err.contains("1..=86400000"),
        "{err}"
    );
    let out = ringside_serve(&["--model", "tokio", "--idle-timeout-ms", "100"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("built-in servers"));
}

/// Pipelines lines and never reads: once the server's output to it is backed up, the server
/// stops reading (or blocks in send) and so stops replying; the idle limit must then close it
/// (a write fails with a reset or broken pipe) instead of holding it forever.
#[test]
fn a_client_that_never_reads_is_closed_once_replies_stop() {
    for m in servers() {
        let srv = Running::start(m, Lines { idle: Some(LIMIT) });
        let mut s = srv.connect();
        s.set_write_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let chunk = b"x\n".repeat(32 * 1024);
        let t0 = Instant::now();
        let bound = 2 * CLOSE_BOUND;
        let mut closed = None;
        while closed.is_none() && t0.elapsed() < bound {
            match s.write(&chunk) {
                Ok(_) => {}
                // A timed-out write, or one a signal interrupted (a socket with a timeout is
                // never restarted: signal(7)), is not a close.
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) => {}
                Err(e) => closed = Some(e),
            }
        }
        // Closing our side frees what the server sent (uring-zc's notifications come then).
        drop(s);
        // The server still serves others.
        let mut other = srv.connect();
        round(m.id, &mut other);
        let c = srv.stop();
        let Some(closed) = closed else {
            panic!(
                "{}: a client that never reads is open after {bound:?}: {c:?}",
                m.id
            )
        };
        // uring-multishot may close it first for overrunning its output bound.
        let closes = c.get("idle_closes") + c.get("overrun_closes");
        assert_eq!(closes, 1, "{}: the client saw {closed}: {c:?}", m.id);
        println!(
            "{}: never-reading client closed after {:?}: {c:?}",
            m.id,
            t0.elapsed()
        );
    }
}

/// How often the loop woke (epoll_wait / io_uring_enter calls) while one connection sat
/// silent for 600 ms; `None` for the blocking server, which counts no wake-ups.
fn wakeups_while_silent(m: &'static ModelSpec, proto: Lines) -> Option<u64> {
    let srv = Running::start(m, proto);
    let mut s = srv.connect();
    round(m.id, &mut s);
    std::thread::sleep(Duration::from_millis(600));
    let c = srv.stop();
    // uring-epollwait is the epoll loop (epoll_waits, each through its ring): count both.
    match m.family {
        ringside::model::Family::Epoll | ringside::model::Family::Uring => {
            Some(c.get("epoll_waits") + c.get("io_uring_enter"))
        }
        _ => None,
    }
}

/// Without a limit (echo's case) an idle server arms no timer: it sleeps until something
/// happens. With one, it wakes about every tick (the check can see a timer).
#[test]
fn without_a_limit_an_idle_loop_never_wakes() {
    // Four servers at a time: each sits silent for 600 ms twice, and counts only its own
    // loop's wake-ups (its own epoll or ring), which other servers' connections cannot cause.
    common::par::each_at_most(servers(), 4, |m| {
        let Some(none) = wakeups_while_silent(m, Lines { idle: None }) else {
            return;
        };
        let some = wakeups_while_silent(
            m,
            Lines {
                idle: Some(Duration::from_millis(400)),
            },
        )
        .unwrap();
        println!("{}: {none} wake-ups without a limit, {some} with", m.id);
        // Accept, one request, stop: a handful of wake-ups, none from a timer.
        // (A 10 ms timer would add about 60.)
        assert!(none <= 8, "{}: {none} wake-ups without a limit", m.id);
        // A 100 ms tick, at least until the connection is idle-closed at 400 ms: 4 or more.
        assert!(some >= none + 3, "{}: {some} vs {none}", m.id);
    });
}
