//! A stand-in TCP echo server for the load generator's tests (test-only: one thread per
//! connection, std::net), with deliberately broken modes so that the load generator is shown
//! to report what goes wrong rather than hide it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::net::reset;

#[derive(Clone, Copy, Debug)]
pub enum Mode {
    /// Echo every byte back on the connection it came from.
    Echo,
    /// Bytes read from connection i are written to connection i+1 (mod n), once all `n`
    /// expected connections are accepted.
    Swap { conns: usize },
    /// Connections with an even accept index are reset (RST) after echoing `after_bytes`.
    ResetHalf { after_bytes: usize },
    /// Reads and discards; never answers.
    Silent,
    /// Echo, but the first read after `at` (from the first accept) stalls `stall` once.
    StallOnce { at: Duration, stall: Duration },
    /// Echo, accepting one connection every `every` (the others wait in the backlog, as
    /// with a thread-per-connection server on a busy CPU).
    SlowAccept { every: Duration },
    /// Echo with byte `at` of each read's bytes flipped (when the read is that long).
    Corrupt { at: usize },
}

/// Starts the server on 127.0.0.1:0 in background threads; returns its address. The threads
/// live as long as the test process.
pub fn serve(mode: Mode) -> SocketAddr {
    serve_on("127.0.0.1:0", mode)
}

pub fn serve_on(addr: &str, mode: Mode) -> SocketAddr {
    let l = TcpListener::bind(addr).expect("bind");
    let a = l.local_addr().unwrap();
    std::thread::spawn(move || accept_loop(l, mode));
    a
}

fn accept_loop(l: TcpListener, mode: Mode) {
    let stalled = Arc::new(AtomicBool::new(false));
    let mut first: Option<Instant> = None;
    let peers: Arc<Mutex<Vec<TcpStream>>> = Arc::new(Mutex::new(Vec::new()));
    let mut pending: Vec<TcpStream> = Vec::new();
    for (i, s) in l.incoming().enumerate() {
        let Ok(s) = s else { continue };
        let _ = s.set_nodelay(true);
        let t0 = *first.get_or_insert_with(Instant::now);
        match mode {
            Mode::Echo => {
                std::thread::spawn(move || echo(s, usize::MAX, None));
            }
            Mode::SlowAccept { every } => {
                std::thread::spawn(move || echo(s, usize::MAX, None));
                std::thread::sleep(every);
            }
            Mode::Corrupt { at } => {
                std::thread::spawn(move || corrupt(s, at));
            }
            Mode::Silent => {
                std::thread::spawn(move || {
                    let mut s = s;
                    let mut buf = [0u8; 4096];
                    while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
                });
            }
            Mode::ResetHalf { after_bytes } => {
                let limit = if i % 2 == 0 { after_bytes } else { usize::MAX };
                std::thread::spawn(move || echo(s, limit, None));
            }
            Mode::StallOnce { at, stall } => {
                let st = stalled.clone();
                std::thread::spawn(move || echo(s, usize::MAX, Some((t0 + at, stall, st))));
            }
            Mode::Swap { conns } => {
                pending.push(s);
                if pending.len() == conns {
                    let outs: Vec<TcpStream> =
                        pending.iter().map(|s| s.try_clone().unwrap()).collect();
                    *peers.lock().unwrap() = outs;
                    for (k, s) in pending.drain(..).enumerate() {
                        let mut to = peers.lock().unwrap()[(k + 1) % conns].try_clone().unwrap();
                        std::thread::spawn(move || relay(s, &mut to));
                    }
                }
            }
        }
    }
}

pub fn echo(mut s: TcpStream, limit: usize, stall: Option<(Instant, Duration, Arc<AtomicBool>)>) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut done = 0usize;
    loop {
        let n = match s.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if let Some((at, d, flag)) = &stall {
            if Instant::now() >= *at && !flag.swap(true, Ordering::SeqCst) {
                std::thread::sleep(*d);
            }
        }
        if s.write_all(&buf[..n]).is_err() {
            return;
        }
        done += n;
        if done >= limit {
            reset(s);
            return;
        }
    }
}

/// [`Mode::Corrupt`]'s connection.
fn corrupt(mut s: TcpStream, at: usize) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match s.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if at < n {
            buf[at] ^= 0x5a;
        }
        if s.write_all(&buf[..n]).is_err() {
            return;
        }
    }
}

fn relay(mut from: TcpStream, to: &mut TcpStream) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if to.write_all(&buf[..n]).is_err() {
            return;
        }
    }
}
