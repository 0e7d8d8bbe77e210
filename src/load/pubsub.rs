//! The pubsub load (`pubsub.fanout`): `publishers` publishers, each on its own topic, at a
//! fixed total rate (open loop: message k of publisher p is due at a fixed time, and that time
//! is its `ts_ns`, so a server stall shows in the latency instead of slowing the publishers),
//! and `fanout` subscribers per topic. One op is one message delivered to one subscriber and
//! verified ([`SeqCheck`]: per publisher, no loss, no duplicate, in order, every payload
//! byte); its latency runs from the message's due time to its arrival (the same
//! CLOCK_MONOTONIC). A subscriber that does not verify, or that the broker disconnects (its
//! queue overflowed), fails the run ([`Report::unverified`] / `live_conns`).
//!
//! One thread, pinned to the first load CPU, runs every connection: a level-triggered epoll
//! loop over the subscribers, woken by `epoll_pwait2` at the next publish's due time (no busy
//! loop). A publisher whose socket is full keeps at most [`PUB_BOUND`] bytes pending; later
//! messages wait (they are late, not lost). Subscriptions are made live before the warm-up by
//! a handshake: each subscriber publishes one empty message on its topic from its own
//! connection and waits for it to come back.

use super::{Config, Edge, Exchange, Mismatch, Report, Response};
use crate::measure::clock::now_ns;
use crate::measure::{cpu, pin, Hist};
use crate::proto::pubsub::{encode_pub, encode_sub, fill_payload, Decoder, Frame, Publish};
use crate::proto::pubsub::{SeqCheck, MAX_FRAME, PUB, PUB_HEADER};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Publisher ids at or above this are the subscribers' handshakes.
pub const HANDSHAKE: u32 = 0xFFFF_0000;
/// The most bytes one publisher keeps written and not yet taken by its socket.
pub const PUB_BOUND: usize = 256 << 10;

/// The pubsub load of one run; `Config::rate` is the total publish rate (required),
/// `Config::conns` is ignored (the connections are `publishers x (1 + fanout)`).
pub struct Pubsub {
    pub publishers: u32,
    pub fanout: u32,
    pub payload_bytes: usize,
}

impl Exchange for Pubsub {
    fn request(&self, _conn: u32, _seq: u64, _out: &mut Vec<u8>) {}
    fn response(&self, _sent: &[u8], _got: &[u8]) -> Response {
        Response::Unreadable("pubsub has no request/response messages")
    }
    fn pubsub(&self) -> Option<&Pubsub> {
        Some(self)
    }
}

struct Sub {
    sock: TcpStream,
    id: u32,
    dec: Decoder,
    check: SeqCheck,
    done: bool,
}

struct Publisher {
    sock: TcpStream,
    id: u32,
    seq: u64,
    out: Vec<u8>,
    at: usize,
}

fn bad_input(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, why)
}

impl Pubsub {
    /// Connections this load opens.
    pub fn conns(&self) -> usize {
        self.publishers as usize * (1 + self.fanout as usize)
    }

    /// Runs the load; see [`super::run`] for `edge`.
    pub fn run(&self, cfg: &Config, edge: &mut dyn FnMut(Edge)) -> io::Result<Report> {
        let rate = cfg.rate.filter(|r| *r > 0.0).ok_or_else(|| {
            bad_input("pubsub runs open loop: a total publish rate is required".into())
        })?;
        if self.publishers == 0 || self.fanout == 0 || self.payload_bytes + PUB_HEADER > MAX_FRAME {
            return Err(bad_input(format!(
                "publishers and fanout must be >= 1 and payload_bytes <= {} (given {}, {}, {})",
                MAX_FRAME - PUB_HEADER,
                self.publishers,
                self.fanout,
                self.payload_bytes
            )));
        }
        crate::io::sys::raise_nofile(self.conns() as u64 + 64)?;
        if let Some(&c) = cfg.cpus.first() {
            let _ = pin::pin_this_thread(c);
        }
        let mut first_error: Option<String> = None;
        let mut connect_errors = 0u64;
        let connect = || -> io::Result<TcpStream> {
            let s = TcpStream::connect_timeout(&cfg.target, cfg.connect_timeout)?;
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(cfg.connect_timeout))?;
            Ok(s)
        };
        // Subscribers, each made live by its handshake.
        let mut subs = Vec::new();
        for p in 0..self.publishers {
            for k in 0..self.fanout {
                let id = p * self.fanout + k;
                match connect().and_then(|s| handshake(s, p, id)) {
                    Ok((sock, dec, check)) => subs.push(Sub {
                        sock,
                        id,
                        dec,
                        check,
                        done: false,
                    }),
                    Err(e) => {
                        connect_errors += 1;
                        first_error.get_or_insert_with(|| format!("subscriber {id}: {e}"));
                    }
                }
            }
        }
        let mut pubs = Vec::new();
        for p in 0..self.publishers {
            match connect().and_then(|s| s.set_nonblocking(true).map(|()| s)) {
                Ok(sock) => pubs.push(Publisher {
                    sock,
                    id: p,
                    seq: 0,
                    out: Vec::new(),
                    at: 0,
                }),
                Err(e) => {
                    connect_errors += 1;
                    first_error.get_or_insert_with(|| format!("publisher {p}: {e}"));
                }
            }
        }
        let ep = crate::io::epoll::Epoll::new(crate::model::Trigger::Level)?;
        for (i, s) in subs.iter().enumerate() {
            s.sock.set_nonblocking(true)?;
            ep.ctl(
                libc::EPOLL_CTL_ADD,
                s.sock.as_raw_fd(),
                libc::EPOLLIN as u32,
                i as u64,
            )?;
        }
        let start = now_ns();
        let open = start + cfg.warmup.as_nanos() as u64;
        let close = open + cfg.duration.as_nanos() as u64;
        // Publisher p's message k is due at start + (k * P + p) / rate.
        let step_ns = 1e9 / rate;
        let n_pub = self.publishers as f64;
        let due = |p: u32, k: u64| start + ((k as f64 * n_pub + p as f64) * step_ns) as u64;
        let mut payload = Vec::new();
        let mut buf = vec![0u8; 256 << 10];
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
        let (mut ops, mut bytes, mut mismatches, mut resets, mut warmup_errors) = (0, 0, 0, 0, 0);
        let mut first_mismatch = None;
        let mut latency = Hist::new();
        let (mut opened, mut cpu0, mut interrupted) = (false, 0u64, false);
        let stop = || cfg.stop.is_some_and(|s| s.load(Ordering::SeqCst));
        loop {
            let now = now_ns();
            if !opened && now >= open {
                opened = true;
                edge(Edge::Open);
                cpu0 = cpu::this_thread_ns();
            }
            if now >= close {
                break;
            }
            if stop() {
                interrupted = true;
                break;
            }
            // Publish what is due, within each publisher's bound.
            let mut next = close;
            for p in pubs.iter_mut() {
                loop {
                    let d = due(p.id, p.seq);
                    if d > now || p.out.len() - p.at >= PUB_BOUND {
                        next = next.min(d.max(now));
                        break;
                    }
                    payload.clear();
                    fill_payload(&mut payload, p.id, p.seq, self.payload_bytes);
                    let m = Publish {
                        topic: p.id,
                        publisher: p.id,
                        seq: p.seq,
                        ts_ns: d,
                        payload: &payload,
                    };
                    encode_pub(&mut p.out, PUB, &m);
                    p.seq += 1;
                }
                if p.at < p.out.len() {
                    match p.sock.write(&p.out[p.at..]) {
                        Ok(n) => p.at += n,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(e) => return Err(io::Error::new(e.kind(), format!("publisher: {e}"))),
                    }
                    if p.at == p.out.len() {
                        p.out.clear();
                        p.at = 0;
                    } else {
                        // Try again soon: the socket drains as the server reads.
                        next = next.min(now + 50_000);
                    }
                }
            }
            let wait = next.saturating_sub(now_ns()).min(10_000_000);
            let ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: wait as i64,
            };
            // SAFETY: a valid epoll fd, event buffer and timespec; no signal mask.
            let r = unsafe {
                libc::epoll_pwait2(
                    ep.as_raw_fd(),
                    events.as_mut_ptr(),
                    events.len() as i32,
                    &ts,
                    std::ptr::null(),
                )
            };
            let n = if r < 0 { 0 } else { r as usize };
            for ev in &events[..n] {
                let s = &mut subs[ev.u64 as usize];
                if s.done {
                    continue;
                }
                let got = match s.sock.read(&mut buf) {
                    Ok(0) => Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "closed by the broker (its queue overflowed?)",
                    )),
                    Ok(n) => Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(e) => Err(e),
                };
                let n = match got {
                    Ok(n) => n,
                    Err(e) => {
                        if now_ns() < open {
                            warmup_errors += 1;
                        } else {
                            resets += 1;
                        }
                        first_error.get_or_insert_with(|| format!("subscriber {}: {e}", s.id));
                        s.done = true;
                        ep.ctl(libc::EPOLL_CTL_DEL, s.sock.as_raw_fd(), 0, 0)?;
                        continue;
                    }
                };
                let t = now_ns();
                let in_window = t >= open && t < close;
                let (check, len, id) = (&mut s.check, self.payload_bytes, s.id);
                let mut bad = None;
                let fed = s.dec.feed(&buf[..n], |f| {
                    let Frame::Msg { msg, .. } = f else {
                        bad.get_or_insert(format!("subscriber {id} got a non-MSG frame"));
                        return;
                    };
                    let want = if msg.publisher >= HANDSHAKE { 0 } else { len };
                    if let Err(e) = check.check(&msg, want) {
                        bad.get_or_insert(format!("subscriber {id}: {e}"));
                        first_mismatch.get_or_insert(Mismatch {
                            conn: id,
                            msg: msg.seq,
                            offset: 0,
                            in_warmup: !in_window,
                        });
                        return;
                    }
                    if in_window && msg.publisher < HANDSHAKE {
                        ops += 1;
                        bytes += len as u64;
                        latency.record(t.saturating_sub(msg.ts_ns));
                    }
                });
                if let Err(e) = fed {
                    bad.get_or_insert(format!("subscriber {id}: {e}"));
                }
                if let Some(why) = bad {
                    mismatches += 1;
                    first_error.get_or_insert(why);
                    s.done = true;
                    ep.ctl(libc::EPOLL_CTL_DEL, s.sock.as_raw_fd(), 0, 0)?;
                }
            }
        }
        let end = now_ns().min(close);
        let cpu_ns = if opened {
            edge(Edge::Close);
            cpu::this_thread_ns().saturating_sub(cpu0)
        } else {
            0
        };
        let window_ns = if opened { end.saturating_sub(open) } else { 0 };
        let mut r = Report::empty(cfg, 1, Some(rate), window_ns, interrupted);
        r.conns_requested = self.conns();
        r.msgs = ops;
        r.bytes = bytes;
        r.rx_bytes = bytes;
        r.verified_bytes = bytes;
        r.connect_errors = connect_errors;
        r.resets = resets;
        r.read_errors = resets;
        r.mismatches = mismatches;
        r.first_mismatch = first_mismatch;
        r.warmup_errors = warmup_errors;
        r.live_conns = (subs.iter().filter(|s| !s.done).count() + pubs.len()) as u64;
        r.first_error = first_error;
        r.latency = latency;
        r.cpu_ns = cpu_ns;
        r.settle_cpu(cpu_ns);
        Ok(r)
    }
}

/// Subscribes `s` to `topic` and waits for its own handshake message to come back.
fn handshake(mut s: TcpStream, topic: u32, id: u32) -> io::Result<(TcpStream, Decoder, SeqCheck)> {
    let mut w = Vec::new();
    encode_sub(&mut w, topic, true);
    let m = Publish {
        topic,
        publisher: HANDSHAKE + id,
        seq: 0,
        ts_ns: 0,
        payload: &[],
    };
    encode_pub(&mut w, PUB, &m);
    s.write_all(&w)?;
    let mut dec = Decoder::default();
    let mut check = SeqCheck::default();
    let mut buf = [0u8; 4096];
    let deadline = now_ns() + Duration::from_secs(5).as_nanos() as u64;
    while check.verified(HANDSHAKE + id) == 0 {
        if now_ns() > deadline {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "no handshake"));
        }
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed"));
        }
        let mut bad = None;
        dec.feed(&buf[..n], |f| match f {
            Frame::Msg { msg, .. } if msg.publisher >= HANDSHAKE => {
                if let Err(e) = check.check(&msg, 0) {
                    bad = Some(e.to_string());
                }
            }
            other => bad = Some(format!("unexpected {other:?} before the run")),
        })
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        if let Some(b) = bad {
            return Err(io::Error::new(io::ErrorKind::InvalidData, b));
        }
    }
    Ok((s, dec, check))
}
