//! The pubsub load (`pubsub.fanout`): `publishers` publishers, each on its own topic, at a
//! fixed total rate (open loop: message k of publisher p is due at a fixed time, and that time
//! is its `ts_ns`, so a server stall shows in the latency instead of slowing the publishers),
//! and `fanout` subscribers per topic. One op is one message delivered to one subscriber and
//! verified ([`SeqCheck`]: per publisher, no loss, no duplicate, in order, every payload
//! byte); its latency runs from the message's due time to its arrival (the same
//! CLOCK_MONOTONIC). A subscriber that does not verify, or that the broker disconnects (its
//! queue overflowed), fails the run ([`Report::unverified`] / `live_conns`).
//!
//! The subscribers are spread over the load threads the CPU plan gives the load side
//! ([`Config::threads`], pinned to [`Config::cpus`] round-robin, as the message engine's): thread
//! t of T takes the t-th contiguous share of the subscribers and publishers t, t+T, ..., so the
//! total publish rate is split by publisher and each schedule stays open loop. Each thread
//! verifies its own subscribers' deliveries and keeps its own counts and histogram; the run's
//! report adds them (`Report::add_tallies`, as every driver: counts summed, histograms added), and headroom is judged
//! per thread (`max_thread_fraction`, as in the engine). Each thread is a level-triggered
//! epoll loop over its subscribers, woken by `epoll_pwait2` at its next publish's due time
//! (no busy loop). A publisher whose socket is full keeps at most [`PUB_BOUND`] bytes
//! pending; later messages wait (they are late, not lost). Subscriptions are made live before
//! the start by a handshake: each subscriber publishes one empty message on its topic from
//! its own connection and waits for it to come back. The warm-up is the engine's
//! ([`super::window::coordinate`]): at least [`Config::warmup`], and until every live
//! subscriber has had its first delivery, at most the message timeout
//! (`unsettled_conns` then counts those still waiting).

use super::tally::Tally;
use super::window::{epoll_wait_ns, run_threads, Coordinated, Shared, WARM_TICK_NS};
use super::{Config, Edge, Exchange, Mismatch, Report, Response};
use crate::io::epoll::{Ctl, Epoll};
use crate::measure::clock::now_ns;
use crate::measure::timeline::Timeline;
use crate::measure::{cpu, pin};
use crate::proto::pubsub::{encode_pub, encode_sub, fill_payload, Decoder, Frame, Publish};
use crate::proto::pubsub::{SeqCheck, MAX_FRAME, PUB, PUB_HEADER};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Publisher ids at or above this are the subscribers' handshakes.
pub(crate) const HANDSHAKE: u32 = 0xFFFF_0000;
/// The most bytes one publisher keeps written and not yet taken by its socket.
pub(crate) const PUB_BOUND: usize = 256 << 10;

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
    /// Counted in [`Shared::unanswered`]: no delivery of a publisher yet.
    waiting: bool,
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
        let subs = self.publishers as u64 * self.fanout as u64;
        if self.publishers == 0
            || self.fanout == 0
            || subs > u64::from(u32::MAX - HANDSHAKE)
            || self.payload_bytes + PUB_HEADER > MAX_FRAME
        {
            return Err(bad_input(format!(
                "publishers and fanout must be >= 1 with at most {} subscribers in all, and \
                 payload_bytes <= {} (given {}, {}, {})",
                u32::MAX - HANDSHAKE,
                MAX_FRAME - PUB_HEADER,
                self.publishers,
                self.fanout,
                self.payload_bytes
            )));
        }
        crate::io::sys::raise_nofile(self.conns() as u64 + 64)?;
        let threads = cfg.threads.clamp(1, subs as usize);
        let shared = Shared::new(threads);
        let (parts, coord): (Vec<io::Result<Tally>>, _) =
            run_threads(cfg, &shared, edge, threads, "pubsub", |t, cpu, synced| {
                self.worker(cfg, &shared, (t, threads), cpu, rate, synced)
            });
        let window_ns = Coordinated::window_ns(&shared);
        let mut r = Report::empty(cfg, threads, Some(rate), window_ns, coord.interrupted);
        (r.warmup_ns, r.n.unsettled_conns) = (coord.warmup_ns, coord.unsettled);
        r.conns_requested = self.conns();
        r.add_tallies(parts.into_iter().collect::<io::Result<Vec<Tally>>>()?);
        Ok(r)
    }

    /// Load thread `t` of `threads`: connects its share, passes the barriers, then publishes
    /// and verifies until the window closes.
    fn worker(
        &self,
        cfg: &Config,
        shared: &Shared,
        (t, threads): (usize, usize),
        cpu: Option<u32>,
        rate: f64,
        synced: &mut bool,
    ) -> io::Result<Tally> {
        if let Some(c) = cpu {
            pin::pin_this_thread(c)?;
        }
        let mut part = Tally::default();
        let (mut subs, mut pubs) = self.connect_share(cfg, (t, threads), &mut part);
        let ep = Epoll::new(crate::model::Trigger::Level)?;
        for (i, s) in subs.iter().enumerate() {
            s.sock.set_nonblocking(true)?;
            ep.ctl(Ctl::Add, &s.sock, libc::EPOLLIN as u32, i as u64)?;
        }
        // The warm-up waits for every live subscriber's first delivery.
        shared
            .unanswered
            .fetch_add(subs.len() as u64, Ordering::SeqCst);
        let answered = |s: &mut Sub| {
            if std::mem::take(&mut s.waiting) {
                shared.unanswered.fetch_sub(1, Ordering::SeqCst);
            }
        };
        shared.barrier.wait();
        shared.barrier.wait();
        *synced = true;
        let sched = Schedule {
            start: shared.t_start.load(Ordering::SeqCst),
            step_ns: 1e9 / rate,
            publishers: self.publishers as f64,
        };
        let mut payload = Vec::new();
        let mut buf = vec![0u8; 256 << 10];
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
        let mut cpu0 = None;
        loop {
            let (open, planned, close) = shared.edges_planned();
            let mut now = now_ns();
            if cpu0.is_none() && now >= open {
                cpu0 = Some(cpu::this_thread_ns());
                Timeline::of_window(&mut part.timeline, open, planned);
                now = now_ns();
            }
            if now >= close {
                break;
            }
            let mut next = close.min(now + 10_000_000);
            if cpu0.is_none() {
                // Until the coordinator has set the opening, look for it every WARM_TICK_NS.
                next = next.min(open).min(now + WARM_TICK_NS);
            }
            for p in pubs.iter_mut() {
                next = next.min(p.publish(now, &sched, self.payload_bytes, &mut payload)?);
            }
            let n = epoll_wait_ns(&ep, &mut events, next.saturating_sub(now_ns()));
            // The edges again: the coordinator may have set them during the wait.
            let edges = shared.edges_planned();
            for ev in &events[..n] {
                let s = &mut subs[ev.u64 as usize];
                if s.done {
                    continue;
                }
                match s.receive(&mut buf, self.payload_bytes, edges, &mut part) {
                    Received::Nothing => {}
                    Received::Delivery => answered(s),
                    Received::End => {
                        s.done = true;
                        answered(s);
                        ep.ctl(Ctl::Del, &s.sock, 0, 0)?;
                    }
                }
            }
        }
        part.n.cpu_ns = cpu0.map_or(0, |c0| cpu::this_thread_ns().saturating_sub(c0));
        part.n.live_conns = (subs.iter().filter(|s| !s.done).count() + pubs.len()) as u64;
        // Each delivered byte was received and verified.
        (part.n.rx_bytes, part.n.verified_bytes) = (part.n.bytes, part.n.bytes);
        Ok(part)
    }

    /// Connects thread `t`'s share: its subscribers (subscriber i is on topic i / fanout),
    /// each made live by its handshake, and its publishers (t, t + threads, ...),
    /// non-blocking. A connection that fails is counted (`connect_errors`) and left out.
    fn connect_share(
        &self,
        cfg: &Config,
        (t, threads): (usize, usize),
        part: &mut Tally,
    ) -> (Vec<Sub>, Vec<Publisher>) {
        let connect = || -> io::Result<TcpStream> {
            let s = TcpStream::connect_timeout(&cfg.target, cfg.connect_timeout)?;
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(cfg.connect_timeout))?;
            Ok(s)
        };
        let n = self.publishers as usize * self.fanout as usize;
        let mut subs = Vec::new();
        for i in n * t / threads..n * (t + 1) / threads {
            let (id, topic) = (i as u32, (i / self.fanout as usize) as u32);
            match connect().and_then(|s| handshake(s, topic, id)) {
                Ok((sock, dec, check)) => subs.push(Sub {
                    sock,
                    id,
                    dec,
                    check,
                    done: false,
                    waiting: true,
                }),
                Err(e) => {
                    part.n.connect_errors += 1;
                    part.error(|| format!("subscriber {id}: {e}"));
                }
            }
        }
        let mut pubs = Vec::new();
        for p in (t..self.publishers as usize).step_by(threads) {
            let p = p as u32;
            match connect().and_then(|s| s.set_nonblocking(true).map(|()| s)) {
                Ok(sock) => pubs.push(Publisher {
                    sock,
                    id: p,
                    seq: 0,
                    out: Vec::new(),
                    at: 0,
                }),
                Err(e) => {
                    part.n.connect_errors += 1;
                    part.error(|| format!("publisher {p}: {e}"));
                }
            }
        }
        (subs, pubs)
    }
}

/// The open-loop schedule: publisher p's message k is due at start + (k * P + p) / rate.
struct Schedule {
    start: u64,
    step_ns: f64,
    /// P, the publishers over all threads.
    publishers: f64,
}

impl Schedule {
    #[inline]
    fn due(&self, p: u32, k: u64) -> u64 {
        self.start + ((k as f64 * self.publishers + p as f64) * self.step_ns) as u64
    }
}

impl Publisher {
    /// The send path: encodes each message due by `now` (while at most [`PUB_BOUND`] bytes
    /// wait unsent; `payload` is the thread's scratch), writes what the socket takes, and
    /// returns when this publisher next needs a turn.
    #[inline]
    fn publish(
        &mut self,
        now: u64,
        sched: &Schedule,
        payload_bytes: usize,
        payload: &mut Vec<u8>,
    ) -> io::Result<u64> {
        let mut next;
        loop {
            let d = sched.due(self.id, self.seq);
            if d > now || self.out.len() - self.at >= PUB_BOUND {
                next = d.max(now);
                break;
            }
            payload.clear();
            fill_payload(payload, self.id, self.seq, payload_bytes);
            let m = Publish {
                topic: self.id,
                publisher: self.id,
                seq: self.seq,
                ts_ns: d,
                payload,
            };
            encode_pub(&mut self.out, PUB, &m);
            self.seq += 1;
        }
        if self.at < self.out.len() {
            match self.sock.write(&self.out[self.at..]) {
                Ok(n) => self.at += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(io::Error::new(e.kind(), format!("publisher: {e}"))),
            }
            if self.at == self.out.len() {
                self.out.clear();
                self.at = 0;
            } else {
                // Try again soon: the socket drains as the server reads.
                next = next.min(now + 50_000);
            }
        }
        Ok(next)
    }
}

/// What one wake-up of a subscriber brought.
enum Received {
    /// Nothing to act on (nothing to read, or no delivery of a publisher's yet).
    Nothing,
    /// At least one publisher's message, verified.
    Delivery,
    /// The subscriber is done: an error or a message that did not verify (counted).
    End,
}

impl Sub {
    /// The receive path: reads what arrived and verifies it (`edges`: the window's open,
    /// planned close and close), counting into `part`.
    #[inline]
    fn receive(
        &mut self,
        buf: &mut [u8],
        payload_bytes: usize,
        edges: (u64, u64, u64),
        part: &mut Tally,
    ) -> Received {
        let got = match self.sock.read(buf) {
            Ok(0) => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "closed by the broker (its queue overflowed?)",
            )),
            Ok(n) => Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Received::Nothing,
            Err(e) => Err(e),
        };
        match got {
            Ok(n) => self.verify(&buf[..n], payload_bytes, edges, part),
            Err(e) => {
                if now_ns() < edges.0 {
                    part.n.warmup_errors += 1;
                } else {
                    // A subscriber's reset is met receiving.
                    part.n.resets += 1;
                    part.n.read_errors += 1;
                }
                part.error(|| format!("subscriber {}: {e}", self.id));
                Received::End
            }
        }
    }

    /// Feeds `bytes` to the decoder and checks each message ([`SeqCheck`]); a publisher's
    /// message in the window is an op, its latency from its due time.
    #[inline]
    fn verify(
        &mut self,
        bytes: &[u8],
        len: usize,
        (open, planned, close): (u64, u64, u64),
        part: &mut Tally,
    ) -> Received {
        let t = now_ns();
        let in_window = t >= open && t < close;
        let (check, id) = (&mut self.check, self.id);
        let mut bad = None;
        let mut delivered = false;
        let (ops, counted, latency, timeline) = (
            &mut part.n.msgs,
            &mut part.n.bytes,
            &mut part.latency,
            &mut part.timeline,
        );
        let mut first_mismatch = None;
        let fed = self.dec.feed(bytes, |f| {
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
            if msg.publisher < HANDSHAKE {
                delivered = true;
                if in_window {
                    *ops += 1;
                    *counted += len as u64;
                    let ns = t.saturating_sub(msg.ts_ns);
                    latency.record(ns);
                    Timeline::of_window(timeline, open, planned).record(t, ns);
                }
            }
        });
        if let Err(e) = fed {
            bad.get_or_insert(format!("subscriber {id}: {e}"));
        }
        if let Some(m) = first_mismatch {
            part.mismatch_at(t, m);
        }
        if let Some(why) = bad {
            part.n.mismatches += 1;
            part.error(|| why);
            return Received::End;
        }
        match delivered {
            true => Received::Delivery,
            false => Received::Nothing,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn part(msgs: u64, ns: u64, cpu_ns: u64, err: Option<&str>) -> Tally {
        let mut p = Tally::default();
        p.n.msgs = msgs;
        (p.n.bytes, p.n.rx_bytes, p.n.verified_bytes) = (msgs * 100, msgs * 100, msgs * 100);
        (p.n.live_conns, p.n.cpu_ns) = (5, cpu_ns);
        if let Some(e) = err {
            p.error(|| e.to_string());
        }
        p.latency.record_n(ns, msgs);
        p
    }

    #[test]
    fn the_threads_parts_add_up_to_the_report() {
        let cfg = Config::new("127.0.0.1:1".parse().unwrap(), 10, Duration::from_secs(1));
        let mut r = Report::empty(&cfg, 2, Some(1000.0), 1_000_000_000, false);
        let a = part(900, 10_000, 300_000_000, None);
        let b = part(100, 1_000_000, 950_000_000, Some("subscriber 7: reset"));
        r.add_tallies([a, b]);
        assert_eq!(
            (r.n.msgs, r.n.bytes, r.n.verified_bytes),
            (1000, 100_000, 100_000)
        );
        assert_eq!(r.n.live_conns, 10);
        assert_eq!(r.latency.len(), 1000, "histograms added, not averaged");
        let p95 = r.latency.quantile(0.95);
        assert!(p95.abs_diff(1_000_000) < 1_000, "{p95}");
        assert_eq!(r.first_error.as_deref(), Some("subscriber 7: reset"));
        // Headroom per thread: one thread at 95% of its CPU makes the run client-bound even
        // though the two together used 62.5% of two CPUs.
        assert!((r.cpu_fraction - 0.625).abs() < 1e-9, "{}", r.cpu_fraction);
        assert!(r.client_bound);
    }
}
