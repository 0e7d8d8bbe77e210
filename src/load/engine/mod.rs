//! The event loops. Each thread owns an epoll instance and its share of the connections, all
//! registered once, edge-triggered, for reading and writing; a connection's state says what to
//! try when it is woken. A loop blocks in `epoll_pwait2` with a nanosecond timeout that honours
//! the window edges, the open-loop schedule and a 100 ms housekeeping tick: no busy loop.
//!
//! Counting: a response counts as an op only when it verified and completed inside the
//! window; every error (socket errors, timeouts, responses that did not verify) is counted
//! over the same window, and what happened in the warm-up is summed apart. No length a peer
//! sends is allocated: a receive asks for at most what the protocol still needs, capped at
//! [`READ_CHUNK`] (or the connection's own message size), and the rest of a response the
//! protocol judged from its head is read into a per-thread scratch buffer and dropped.

mod conn;
mod gaps;
mod sock;
mod uring;

use super::tally::Tally;
use super::window::{run_threads, stop_requested, Coordinated, Shared, WARM_TICK_NS};
use super::{Config, Edge, Exchange, Fault, Mismatch, Report, Response, Verdict, READ_CHUNK};
use crate::measure::{clock::now_ns, cpu, pin};
use gaps::Gaps;
use serde::{Deserialize, Serialize};
use sock::{so_error, source_for, Epoll};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::mem::MaybeUninit;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;

const TICK_NS: u64 = 100_000_000;
const EVENTS: usize = 256;
/// Events after which a receive can make progress (data, EOF, or an error to collect).
const READABLE: u32 = (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32;
/// Runs the load and returns its report. `edge` is called at the opening and the closing of
/// the measured window, from the calling thread, while the load runs (when the run is stopped
/// before the window opens, neither is called).
pub fn run(cfg: &Config, ex: &dyn Exchange, edge: &mut dyn FnMut(Edge)) -> io::Result<Report> {
    if let Some(s) = ex.streaming() {
        return s.run(cfg, edge);
    }
    if let Some(p) = ex.pubsub() {
        return p.run(cfg, edge);
    }
    if let Some(u) = ex.udp() {
        return u.run(cfg, edge);
    }
    if cfg.conns == 0 || cfg.threads == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "conns and threads must be >= 1",
        ));
    }
    crate::io::sys::raise_nofile(cfg.conns as u64 + 64)?;
    let engine = cfg.engine.check()?;
    let threads = cfg.threads.min(cfg.conns);
    let shared = match cfg.rate {
        // Closed loop: one round first (open loop: the schedule sends every message).
        None => Shared::new(threads).with_first_round(),
        Some(_) => Shared::new(threads),
    };
    let (parts, coord): (Vec<ThreadOut>, _) =
        run_threads(cfg, &shared, edge, threads, "load", |t, cpu, synced| {
            // The worker passes both barriers itself, early errors included.
            *synced = true;
            let lo = cfg.conns * t / threads;
            let hi = cfg.conns * (t + 1) / threads;
            worker(cfg, engine, ex, &shared, lo..hi, cpu)
        });
    let (_, t_close) = shared.edges();
    let window_ns = Coordinated::window_ns(&shared);
    let mut r = Report::empty(cfg, threads, cfg.rate, window_ns, coord.interrupted);
    (r.warmup_ns, r.n.unsettled_conns) = (coord.warmup_ns, coord.unsettled);
    r.engine = engine;
    let mut gaps: Option<Gaps> = None;
    let mut tallies = Vec::with_capacity(parts.len());
    for p in parts {
        let (t, g) = p?;
        tallies.push(t);
        match (&mut gaps, g) {
            (Some(a), Some(b)) => a.merge(&b),
            (a @ None, b) => *a = b,
            _ => {}
        }
    }
    r.add_tallies(tallies);
    r.longest_gap_ns = gaps.as_ref().map_or(window_ns, |g| g.longest(t_close));
    r.timeline = gaps.map(|g| g.timeline.cut(window_ns));
    Ok(r)
}

/// A thread's tally and its gaps between completions.
type ThreadOut = io::Result<(Tally, Option<Gaps>)>;

/// What went wrong, for counting.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Connect,
    Reset,
    Io,
    Timeout,
    Mismatch,
    Non2xx,
    Malformed,
    /// Bytes that arrived with no request outstanding.
    Unsolicited,
}

impl Kind {
    /// A response that did not verify (not a socket error).
    fn invalid(self) -> bool {
        matches!(
            self,
            Kind::Mismatch | Kind::Non2xx | Kind::Malformed | Kind::Unsolicited
        )
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum St {
    Connecting,
    /// Connected, no message outstanding (open loop: waiting for its due time).
    Idle,
    Sending,
    Receiving,
    Dead,
}

/// What [`Loop::drive`] does after one step on a connection: go on, or wait for its next
/// event.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    Again,
    Wait,
}

/// A response judged before all of it arrived: the rest is discarded, then it completes.
#[derive(Clone, Copy)]
struct Done {
    len: u64,
    verdict: Verdict,
    close: bool,
}

struct Conn {
    fd: Option<OwnedFd>,
    /// Index in this thread's connection table.
    idx: usize,
    /// Global connection id (carried in every message).
    id: u32,
    /// Source address bound before connecting (see [`source_for`]).
    source: Option<Ipv4Addr>,
    st: St,
    seq: u64,
    out: Vec<u8>,
    sent: usize,
    inb: Vec<u8>,
    /// A response whose verdict is known and whose last `discard` bytes are still to be read
    /// and dropped.
    pending: Option<Done>,
    discard: u64,
    /// Latency origin of the outstanding message: first send (closed) or due time (open).
    origin: u64,
    /// Open loop: when the next message is due.
    due: u64,
    timed_out: bool,
    /// Readable while still sending (a large message echoes before it is all sent).
    read_pending: bool,
    /// Connecting again after a `Connection: close` response (live, not lost).
    reconnecting: bool,
    /// Counted in [`Shared::unanswered`]: its first message is sent (closed loop: due at
    /// the start) and no response came yet.
    unanswered: bool,
    /// Looked for bytes that came before its first request on this socket.
    checked: bool,
    /// Closed with SO_LINGER 0 ([`Config::churn`]): set on its socket when it connects.
    abortive: bool,
    /// When its current connect started (for the connect timeout).
    opened: u64,
}

/// How a loop's sockets do their I/O: by readiness and syscalls ([`Epoll`]) or by
/// completions on a ring ([`uring::Uring`]). The connection's state machine (`conn`) is the
/// same for both: it asks for bytes and gets them or `WOULDBLOCK`, and is woken by the events
/// [`Sockets::wait`] hands out (epoll's, or the same flags made from completions).
trait Sockets {
    /// Starts connection `c`'s connect from its source address (its fd set, the loop told
    /// when it resolves); an error is a connect error.
    fn open(&mut self, c: &mut Conn, target: SocketAddr) -> io::Result<()>;
    /// `c` is connected: from now on its bytes are wanted.
    fn ready(&mut self, c: &Conn) -> io::Result<()>;
    /// Bytes received on `c` into `buf`, at most its length: `Ok(0)` at EOF, `WOULDBLOCK`
    /// when none are waiting.
    fn recv(&mut self, c: &Conn, buf: &mut [MaybeUninit<u8>]) -> rustix::io::Result<usize>;
    /// Sends `c.out[from..]`: the bytes sent, or `WOULDBLOCK` (the loop is woken when it may
    /// try again; an io_uring send in flight is one).
    fn send(&mut self, c: &Conn, from: usize) -> rustix::io::Result<usize>;
    /// Closes `c`'s socket (none afterwards).
    fn close(&mut self, c: &mut Conn);
    /// Waits up to `timeout_ns` for events (`u64`: the connection's slot), returns how many
    /// were written into `events`.
    fn wait(&mut self, events: &mut [libc::epoll_event], timeout_ns: u64) -> io::Result<usize>;
    /// The loop is over and its sockets closed: whether nothing the kernel may still touch is
    /// left (otherwise the connections' buffers must not be freed).
    fn finish(&mut self) -> bool {
        true
    }
}

/// Which engine drives the connections of a message exchange (`ringside load --engine`,
/// `run --load-engine`). The default is epoll: on the 2-vCPU VM this was built on, the io_uring
/// engine drove as many closed-loop messages per load core (within 3%: the core's time is
/// ~85% TCP/IP and softirq either way, `load --explain`) and as many open-loop ones for the
/// same CPU and latency (docs/notes/2026-11-load-engine.md), so the engine earlier results
/// were measured with stays; io_uring is there to be measured where that differs.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    #[default]
    Epoll,
    Uring,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Epoll => "epoll",
            Engine::Uring => "uring",
        }
    }

    /// `self`, where this machine has what it uses; for io_uring, an error naming what is
    /// missing otherwise.
    pub fn check(self) -> io::Result<Engine> {
        match self {
            Engine::Epoll => Ok(Engine::Epoll),
            Engine::Uring => match uring::available() {
                Ok(()) => Ok(Engine::Uring),
                Err(why) => Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("unavailable: the io_uring load engine needs {why}"),
                )),
            },
        }
    }
}

struct Loop<'a, S: Sockets> {
    ex: &'a dyn Exchange,
    shared: &'a Shared,
    c: Tally,
    /// Completion times over the window, for its longest gap (set when it opens).
    gaps: Option<Gaps>,
    /// The window's edges as last read from [`Shared`] (by [`Loop::window`]): 0 and
    /// `u64::MAX` while connecting (connect errors count in the window's figures), `u64::MAX`
    /// both in the warm-up until the coordinator sets them.
    t_open: u64,
    t_close: u64,
    /// Connecting is over: the edges are read from [`Shared`].
    traffic: bool,
    /// Open loop: ns between two messages of one connection.
    interval: Option<u64>,
    due: BinaryHeap<Reverse<(u64, usize)>>,
    /// A first round ([`Shared::with_first_round`]): connections answered once that wait for
    /// the round to end (`Shared::round_done`) before their next message.
    parked: Vec<usize>,
    /// The first round is over (or there is none).
    released: bool,
    io: S,
    target: SocketAddr,
    /// Where discarded response bytes land: READ_CHUNK bytes of capacity, never read.
    scratch: Vec<u8>,
    /// [`Config::churn`]: a connection per message.
    churn: bool,
}

fn worker(
    cfg: &Config,
    engine: Engine,
    ex: &dyn Exchange,
    shared: &Shared,
    ids: std::ops::Range<usize>,
    cpu: Option<u32>,
) -> ThreadOut {
    let mut synced = false;
    let res = worker_inner(cfg, engine, ex, shared, ids, cpu, &mut synced);
    if !synced {
        // Keep the coordinator from waiting forever: an early error still passes both
        // barriers.
        shared.barrier.wait();
        shared.barrier.wait();
    }
    res
}

/// Reads of unsolicited bytes (of [`READ_CHUNK`] each) after which a connection that still
/// has more is closed: a server flooding it would otherwise hold its thread.
const MAX_UNSOLICITED_READS: usize = 16;

fn worker_inner(
    cfg: &Config,
    engine: Engine,
    ex: &dyn Exchange,
    shared: &Shared,
    ids: std::ops::Range<usize>,
    cpu: Option<u32>,
    synced: &mut bool,
) -> ThreadOut {
    if let Some(c) = cpu {
        pin::pin_this_thread(c)?;
    }
    match engine {
        Engine::Uring => {
            let io = uring::Uring::new(ids.len())?;
            drive_loop(Loop::new(cfg, ex, shared, io), cfg, shared, ids, synced)
        }
        _ => drive_loop(
            Loop::new(cfg, ex, shared, Epoll::new()?),
            cfg,
            shared,
            ids,
            synced,
        ),
    }
}

/// One thread's connections from connecting to the window's closing, on `lp`'s sockets,
/// which are closed and finished whatever happened.
fn drive_loop<S: Sockets>(
    mut lp: Loop<'_, S>,
    cfg: &Config,
    shared: &Shared,
    ids: std::ops::Range<usize>,
    synced: &mut bool,
) -> ThreadOut {
    let mut conns = lp.open(cfg, ids);
    let res = lp.run_conns(cfg, shared, &mut conns, synced);
    for c in conns.iter_mut() {
        lp.io.close(c);
    }
    if !lp.io.finish() {
        // The kernel may still read what a send points at.
        std::mem::forget(conns);
    }
    res.map(|()| (lp.c, lp.gaps))
}

impl<S: Sockets> Loop<'_, S> {
    /// Connects, passes the barriers, and runs the traffic until the window closes.
    fn run_conns(
        &mut self,
        cfg: &Config,
        shared: &Shared,
        conns: &mut [Conn],
        synced: &mut bool,
    ) -> io::Result<()> {
        let lp = self;
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS];
        lp.await_connects(cfg, conns, &mut events)?;
        // Closed loop: every live connection sends at the start, so each one is awaited before
        // the coordinator can look (open loop: counted as each first message falls due).
        if lp.interval.is_none() {
            let mut n = 0;
            for c in conns.iter_mut().filter(|c| c.st == St::Idle) {
                c.unanswered = true;
                n += 1;
            }
            shared.unanswered.fetch_add(n, Ordering::SeqCst);
        }
        shared.barrier.wait();
        shared.barrier.wait();
        *synced = true;
        let cpu0 = lp.traffic(cfg, conns, &mut events)?;
        let end = cpu::this_thread().total_ns;
        lp.c.n.cpu_ns = end.saturating_sub(cpu0.unwrap_or(end));
        lp.c.n.live_conns = conns
            .iter()
            .filter(|c| match c.st {
                St::Dead => false,
                St::Connecting => c.reconnecting,
                _ => true,
            })
            .count() as u64;
        Ok(())
    }
}

impl Conn {
    /// Connection `id`, slot `idx` of its thread, not yet connected.
    fn new(idx: usize, id: usize, source: Option<Ipv4Addr>) -> Conn {
        Conn {
            fd: None,
            idx,
            id: id as u32,
            source,
            st: St::Dead,
            seq: 0,
            out: Vec::new(),
            sent: 0,
            inb: Vec::new(),
            pending: None,
            discard: 0,
            origin: 0,
            due: 0,
            timed_out: false,
            read_pending: false,
            reconnecting: false,
            unanswered: false,
            checked: false,
            abortive: false,
            opened: 0,
        }
    }
}

/// A thread's loop before traffic: its connections set up, the window's edges unknown.
impl<'a, S: Sockets> Loop<'a, S> {
    fn new(cfg: &Config, ex: &'a dyn Exchange, shared: &'a Shared, io: S) -> Loop<'a, S> {
        Loop {
            ex,
            shared,
            c: Tally::default(),
            gaps: None,
            t_open: 0,
            t_close: u64::MAX,
            traffic: false,
            interval: cfg
                .rate
                .map(|r| (cfg.conns as f64 * 1e9 / r.max(1e-9)).max(1.0) as u64),
            due: BinaryHeap::new(),
            parked: Vec::new(),
            released: !shared.first_round(),
            io,
            target: cfg.target,
            scratch: Vec::with_capacity(READ_CHUNK),
            churn: cfg.churn,
        }
    }

    /// Starts a non-blocking connect for each of `ids` (a failure counted, the connection
    /// dead).
    fn open(&mut self, cfg: &Config, ids: std::ops::Range<usize>) -> Vec<Conn> {
        let mut conns: Vec<Conn> = Vec::with_capacity(ids.len());
        for (k, id) in ids.enumerate() {
            let mut c = Conn::new(k, id, source_for(cfg, id));
            c.abortive = cfg.churn;
            c.opened = now_ns();
            match self.io.open(&mut c, cfg.target) {
                Ok(()) => {
                    c.st = St::Connecting;
                    self.c.n.connects += u64::from(cfg.churn);
                }
                Err(e) => self.fail_connect(&mut c, e),
            }
            conns.push(c);
        }
        conns
    }

    /// Waits for every pending connect to resolve, up to the connect timeout (or a stop);
    /// those still pending then failed (or, stopped, are dropped uncounted).
    fn await_connects(
        &mut self,
        cfg: &Config,
        conns: &mut [Conn],
        events: &mut [libc::epoll_event],
    ) -> io::Result<()> {
        let deadline = now_ns() + cfg.connect_timeout.as_nanos() as u64;
        let mut pending = conns.iter().filter(|c| c.st == St::Connecting).count();
        while pending > 0 && !stop_requested(cfg.stop) {
            let now = now_ns();
            if now >= deadline {
                break;
            }
            let n = self.io.wait(events, (deadline - now).min(TICK_NS))?;
            for ev in &events[..n] {
                let c = &mut conns[ev.u64 as usize];
                if c.st != St::Connecting {
                    continue;
                }
                match so_error(c.fd.as_ref()).and_then(|()| self.io.ready(c)) {
                    Ok(()) => c.st = St::Idle,
                    Err(e) => self.fail_connect(c, e),
                }
                pending -= 1;
            }
        }
        let stopped = stop_requested(cfg.stop);
        for c in conns.iter_mut().filter(|c| c.st == St::Connecting) {
            if stopped {
                // Interrupted while connecting: not a connect error.
                c.st = St::Dead;
                self.io.close(c);
            } else {
                let e = io::Error::new(io::ErrorKind::TimedOut, "connect timed out");
                self.fail_connect(c, e);
            }
        }
        Ok(())
    }
}

/// The traffic phase: from the start the coordinator set to the window's closing.
impl<S: Sockets> Loop<'_, S> {
    /// Sends and receives until the window closes; returns this thread's CPU clock at the
    /// opening (`None`: it never opened).
    fn traffic(
        &mut self,
        cfg: &Config,
        conns: &mut [Conn],
        events: &mut [libc::epoll_event],
    ) -> io::Result<Option<u64>> {
        let t_start = self.shared.t_start.load(Ordering::SeqCst);
        self.traffic = true;
        self.window();
        self.schedule(cfg, conns, t_start);
        let mut cpu0: Option<u64> = None;
        let mut next_tick = t_start + TICK_NS;
        let timeouts = (
            cfg.msg_timeout.as_nanos() as u64,
            cfg.connect_timeout.as_nanos() as u64,
        );
        loop {
            self.window();
            self.release_parked(conns);
            let mut now = now_ns();
            if cpu0.is_none() && now >= self.t_open {
                cpu0 = Some(cpu::this_thread().total_ns);
                now = now_ns();
            }
            if now >= self.t_close {
                return Ok(cpu0);
            }
            self.start_due(conns, now);
            if now >= next_tick {
                next_tick = now + TICK_NS;
                self.time_out(conns, now, timeouts);
            }
            let mut until = self.t_close.min(next_tick);
            if cpu0.is_none() {
                // Until the coordinator has set the opening, look for it every WARM_TICK_NS.
                until = until.min(self.t_open).min(now + WARM_TICK_NS);
            }
            if let Some(&Reverse((due, _))) = self.due.peek() {
                until = until.min(due);
            }
            let n = self.io.wait(events, until.saturating_sub(now))?;
            // A stop during the wait closes the window before these events are counted.
            self.window();
            for ev in &events[..n] {
                self.on_event(&mut conns[ev.u64 as usize], ev.events);
            }
        }
    }

    /// Closed loop: every idle connection sends now. Open loop: message 0 of connection `id`
    /// is due at `t_start + id/rate`, so the whole schedule is evenly spread.
    fn schedule(&mut self, cfg: &Config, conns: &mut [Conn], t_start: u64) {
        for c in conns.iter_mut().filter(|c| c.st == St::Idle) {
            match self.interval {
                None => self.start(c, t_start),
                Some(iv) => {
                    c.due = t_start + (iv as u128 * c.id as u128 / cfg.conns as u128) as u64;
                    self.due.push(Reverse((c.due, c.idx)));
                }
            }
        }
    }

    /// Once the first round is over, the connections it parked send their next message.
    fn release_parked(&mut self, conns: &mut [Conn]) {
        if self.parked.is_empty() || !self.round_over() {
            return;
        }
        let now = now_ns();
        for k in std::mem::take(&mut self.parked) {
            if conns[k].st == St::Idle {
                self.start(&mut conns[k], now);
            }
        }
    }

    /// Open loop: sends every message due by `now`, each timed from its due time.
    fn start_due(&mut self, conns: &mut [Conn], now: u64) {
        while let Some(&Reverse((due, k))) = self.due.peek() {
            if due > now {
                break;
            }
            self.due.pop();
            match conns[k].st {
                // A connection per message: its connect starts when it is due.
                St::Idle if conns[k].fd.is_none() && self.churn => {
                    self.open_for(&mut conns[k], due)
                }
                St::Idle => self.start(&mut conns[k], due),
                _ => {}
            }
        }
    }

    /// Counts the messages outstanding past the message timeout (once each) and fails the
    /// reconnects past the connect timeout.
    fn time_out(&mut self, conns: &mut [Conn], now: u64, (msg, connect): (u64, u64)) {
        for c in conns.iter_mut() {
            if matches!(c.st, St::Sending | St::Receiving)
                && !c.timed_out
                && now.saturating_sub(c.origin) > msg
            {
                c.timed_out = true;
                self.count(Kind::Timeout, now);
            } else if c.st == St::Connecting
                && c.reconnecting
                && now.saturating_sub(c.opened) > connect
            {
                let e = io::Error::new(io::ErrorKind::TimedOut, "reconnect timed out");
                self.fail_connect(c, e);
            }
        }
    }

    /// One epoll event (`events`) on connection `c`.
    fn on_event(&mut self, c: &mut Conn, events: u32) {
        let readable = events & READABLE != 0;
        match c.st {
            St::Connecting => {
                self.connected(c);
                return;
            }
            St::Sending if readable => c.read_pending = true,
            // Write space came back while waiting for the echo: nothing to do, and a recv
            // would only return EAGAIN.
            St::Receiving if !readable => return,
            // Bytes with no request outstanding: never an answer to a later one.
            St::Idle if readable => {
                self.drain_unsolicited(c, "while no request was outstanding");
                return;
            }
            _ => {}
        }
        self.drive(c);
    }
}
