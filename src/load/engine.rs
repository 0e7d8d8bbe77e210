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

use super::tally::Tally;
use super::window::{run_threads, stop_requested, Coordinated, Shared, WARM_TICK_NS};
use super::{
    Config, Edge, Exchange, Fault, Mismatch, Report, Response, Verdict, GAP_BUCKETS, READ_CHUNK,
};
use crate::io::sys::{cvt, sockaddr};
use crate::measure::{clock::now_ns, cpu, pin};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
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
    if cfg.conns == 0 || cfg.threads == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "conns and threads must be >= 1",
        ));
    }
    crate::io::sys::raise_nofile(cfg.conns as u64 + 64)?;
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
            worker(cfg, ex, &shared, lo..hi, cpu)
        });
    let (_, t_close) = shared.edges();
    let window_ns = Coordinated::window_ns(&shared);
    let mut r = Report::empty(cfg, threads, cfg.rate, window_ns, coord.interrupted);
    (r.warmup_ns, r.unsettled_conns) = (coord.warmup_ns, coord.unsettled);
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
    r.longest_gap_ns = gaps.map_or(window_ns, |g| g.longest(t_close));
    Ok(r)
}

/// When responses completed inside the window, per bucket of window/[`GAP_BUCKETS`]: the
/// first and last completion time in each. Merged over threads, consecutive non-empty buckets
/// give every gap with no completion on any thread that spans a bucket boundary, exactly; a
/// gap inside one bucket is shorter than the bucket.
struct Gaps {
    t_open: u64,
    res: u64,
    first: Vec<u64>,
    last: Vec<u64>,
}

impl Gaps {
    fn new(t_open: u64, window_ns: u64) -> Gaps {
        Gaps {
            t_open,
            res: window_ns.div_ceil(GAP_BUCKETS as u64).max(1),
            first: vec![u64::MAX; GAP_BUCKETS],
            last: vec![0; GAP_BUCKETS],
        }
    }

    #[inline]
    fn record(&mut self, now: u64) {
        let b = (((now - self.t_open) / self.res) as usize).min(GAP_BUCKETS - 1);
        self.first[b] = self.first[b].min(now);
        self.last[b] = self.last[b].max(now);
    }

    fn merge(&mut self, o: &Gaps) {
        for b in 0..GAP_BUCKETS {
            self.first[b] = self.first[b].min(o.first[b]);
            self.last[b] = self.last[b].max(o.last[b]);
        }
    }

    /// The longest span in [t_open, t_close) with no completion.
    fn longest(&self, t_close: u64) -> u64 {
        if t_close <= self.t_open {
            return 0;
        }
        let (mut prev, mut longest) = (self.t_open, 0u64);
        for b in 0..GAP_BUCKETS {
            if self.first[b] != u64::MAX {
                longest = longest.max(self.first[b].saturating_sub(prev));
                prev = self.last[b];
            }
        }
        longest.max(t_close.saturating_sub(prev))
    }
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
}

struct Loop<'a> {
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
    ep: RawFd,
    target: SocketAddr,
    /// Where discarded response bytes land, READ_CHUNK bytes.
    scratch: Vec<u8>,
}

fn worker(
    cfg: &Config,
    ex: &dyn Exchange,
    shared: &Shared,
    ids: std::ops::Range<usize>,
    cpu: Option<u32>,
) -> ThreadOut {
    let mut synced = false;
    let res = worker_inner(cfg, ex, shared, ids, cpu, &mut synced);
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

/// Registers `fd` with the loop's epoll, edge-triggered, for reading and writing.
fn register(ep: RawFd, fd: &OwnedFd, idx: usize) -> io::Result<()> {
    let mut ev = libc::epoll_event {
        events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLET | libc::EPOLLRDHUP) as u32,
        u64: idx as u64,
    };
    // SAFETY: valid epoll fd, socket fd and event.
    cvt(unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd.as_raw_fd(), &mut ev) }).map(|_| ())
}

fn worker_inner(
    cfg: &Config,
    ex: &dyn Exchange,
    shared: &Shared,
    ids: std::ops::Range<usize>,
    cpu: Option<u32>,
    synced: &mut bool,
) -> ThreadOut {
    if let Some(c) = cpu {
        pin::pin_this_thread(c)?;
    }
    // SAFETY: epoll_create1 has no memory preconditions; the fd is owned below.
    let ep = unsafe { OwnedFd::from_raw_fd(cvt(libc::epoll_create1(libc::EPOLL_CLOEXEC))?) };
    let mut lp = Loop::new(cfg, ex, shared, ep.as_raw_fd());
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS];
    let mut conns = lp.open(cfg, ids)?;
    lp.await_connects(cfg, &ep, &mut conns, &mut events)?;
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
    let cpu0 = lp.traffic(cfg, &ep, &mut conns, &mut events)?;
    let end = cpu::this_thread().total_ns;
    lp.c.n.cpu_ns = end.saturating_sub(cpu0.unwrap_or(end));
    lp.c.n.live = conns
        .iter()
        .filter(|c| match c.st {
            St::Dead => false,
            St::Connecting => c.reconnecting,
            _ => true,
        })
        .count() as u64;
    Ok((lp.c, lp.gaps))
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
        }
    }
}

/// A thread's loop before traffic: its connections set up, the window's edges unknown.
impl<'a> Loop<'a> {
    fn new(cfg: &Config, ex: &'a dyn Exchange, shared: &'a Shared, ep: RawFd) -> Loop<'a> {
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
            ep,
            target: cfg.target,
            scratch: vec![0u8; READ_CHUNK],
        }
    }

    /// Starts a non-blocking connect for each of `ids` (a failure counted, the connection
    /// dead).
    fn open(&mut self, cfg: &Config, ids: std::ops::Range<usize>) -> io::Result<Vec<Conn>> {
        let mut conns: Vec<Conn> = Vec::with_capacity(ids.len());
        for (k, id) in ids.enumerate() {
            let mut c = Conn::new(k, id, source_for(cfg, id));
            match connect(cfg.target, c.source) {
                Ok(fd) => {
                    register(self.ep, &fd, k)?;
                    c.fd = Some(fd);
                    c.st = St::Connecting;
                }
                Err(e) => self.fail_connect(&mut c, e),
            }
            conns.push(c);
        }
        Ok(conns)
    }

    /// Waits for every pending connect to resolve, up to the connect timeout (or a stop);
    /// those still pending then failed (or, stopped, are dropped uncounted).
    fn await_connects(
        &mut self,
        cfg: &Config,
        ep: &OwnedFd,
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
            let n = wait(ep, events, (deadline - now).min(TICK_NS))?;
            for ev in &events[..n] {
                let c = &mut conns[ev.u64 as usize];
                if c.st != St::Connecting {
                    continue;
                }
                match so_error(c.fd.as_ref().map_or(-1, |f| f.as_raw_fd())) {
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
                c.fd = None;
            } else {
                let e = io::Error::new(io::ErrorKind::TimedOut, "connect timed out");
                self.fail_connect(c, e);
            }
        }
        Ok(())
    }
}

/// The traffic phase: from the start the coordinator set to the window's closing.
impl Loop<'_> {
    /// Sends and receives until the window closes; returns this thread's CPU clock at the
    /// opening (`None`: it never opened).
    fn traffic(
        &mut self,
        cfg: &Config,
        ep: &OwnedFd,
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
            let n = wait(ep, events, until.saturating_sub(now))?;
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
            if conns[k].st == St::Idle {
                self.start(&mut conns[k], due);
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
                && now.saturating_sub(c.origin) > connect
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

impl Loop<'_> {
    /// Reads the window's edges (set by the coordinator when the warm-up settles, closed
    /// early by a stop) into `t_open` / `t_close`. Read again before each time is judged, so
    /// a response is judged against the edges even when they were set during this
    /// thread's wait: two relaxed loads. The gap tracker starts with the window.
    fn window(&mut self) {
        if !self.traffic {
            return;
        }
        let (open, planned, close) = self.shared.edges_planned();
        (self.t_open, self.t_close) = (open, close);
        if self.gaps.is_none() && open != u64::MAX {
            self.gaps = Some(Gaps::new(open, planned - open));
        }
    }

    /// The connection no longer awaits its first answer (it got one, or it died).
    fn answered(&mut self, c: &mut Conn) {
        if c.unanswered {
            c.unanswered = false;
            self.shared.unanswered.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Counts one error of `kind` seen at `now`: in the window's counts, or in the warm-up's.
    /// (Connects before the traffic starts have `t_open` 0: they count in the window's.)
    fn count(&mut self, kind: Kind, now: u64) {
        self.window();
        if now < self.t_open {
            self.c.n.warmup_errors += 1;
            if kind.invalid() {
                self.c.n.warmup_invalid += 1;
            }
            return;
        }
        let c = &mut self.c.n;
        match kind {
            Kind::Connect => c.connect_errors += 1,
            Kind::Reset => c.resets += 1,
            Kind::Io => c.io_errors += 1,
            Kind::Timeout => c.timeouts += 1,
            Kind::Mismatch => c.mismatches += 1,
            Kind::Non2xx => c.non_2xx += 1,
            Kind::Malformed => c.malformed += 1,
            Kind::Unsolicited => c.unsolicited += 1,
        }
    }

    fn note_error(&mut self, now: u64, what: impl FnOnce() -> String) {
        self.c.error_at(now, what);
    }

    fn fail_connect(&mut self, c: &mut Conn, e: io::Error) {
        let now = now_ns();
        self.count(Kind::Connect, now);
        self.note_error(now, || format!("connect: {e}"));
        self.answered(c);
        c.st = St::Dead;
        c.fd = None;
        c.reconnecting = false;
    }

    /// A connect under way resolved (the socket became writable or failed).
    fn connected(&mut self, c: &mut Conn) {
        match so_error(c.fd.as_ref().map_or(-1, |f| f.as_raw_fd())) {
            Err(e) => self.fail_connect(c, e),
            Ok(()) => {
                c.reconnecting = false;
                c.st = St::Idle;
                let now = now_ns();
                match self.interval {
                    None => self.start(c, now),
                    Some(_) if c.due <= now => self.start(c, c.due),
                    Some(_) => self.due.push(Reverse((c.due, c.idx))),
                }
            }
        }
    }

    /// The server closes after the response just counted: open the connection again.
    fn reconnect(&mut self, c: &mut Conn) {
        c.fd = None; // closing removes it from the epoll set
        c.checked = false;
        c.inb.clear();
        c.pending = None;
        c.discard = 0;
        let now = now_ns();
        self.window();
        if now >= self.t_open {
            self.c.n.reconnects += 1;
        }
        match connect(self.target, c.source).and_then(|fd| {
            register(self.ep, &fd, c.idx)?;
            Ok(fd)
        }) {
            Ok(fd) => {
                c.fd = Some(fd);
                c.st = St::Connecting;
                c.reconnecting = true;
                c.origin = now; // for the connect timeout
            }
            Err(e) => self.fail_connect(c, e),
        }
    }

    fn fail_io(&mut self, c: &mut Conn, e: Option<io::Error>, writing: bool) {
        let now = now_ns();
        let kind = match &e {
            None => Kind::Reset, // EOF: the server closed it
            Some(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ECONNRESET | libc::EPIPE | libc::ECONNABORTED)
                ) =>
            {
                Kind::Reset
            }
            Some(_) => Kind::Io,
        };
        self.window();
        if now >= self.t_open {
            if writing {
                self.c.n.write_errors += 1;
            } else {
                self.c.n.read_errors += 1;
            }
        }
        self.count(kind, now);
        self.note_error(now, || match e {
            None => "connection closed by the server".into(),
            Some(e) => format!("socket: {e}"),
        });
        self.answered(c);
        c.st = St::Dead;
        c.fd = None;
    }

    /// `bytes` arrived on `c` that no request asked for (`when`: where they were seen):
    /// counted (an error that fails the run, never an op) and named in the first error.
    fn unsolicited(&mut self, c: &Conn, bytes: u64, when: &str) {
        let now = now_ns();
        self.count(Kind::Unsolicited, now);
        self.note_error(now, || {
            format!(
                "{bytes} unsolicited bytes on connection {} {when} (after {} responses)",
                c.id, c.seq
            )
        });
    }

    /// Reads and drops what is waiting on `c` while no request is outstanding, counting it
    /// as unsolicited. A server that keeps sending past [`MAX_UNSOLICITED_READS`] reads is
    /// not read forever: its connection is closed. EOF or an error fails the connection.
    fn drain_unsolicited(&mut self, c: &mut Conn, when: &str) {
        let mut got = 0u64;
        for _ in 0..MAX_UNSOLICITED_READS {
            let Some(fd) = c.fd.as_ref().map(|f| f.as_raw_fd()) else {
                return;
            };
            // SAFETY: scratch holds READ_CHUNK writable bytes.
            let r = unsafe { libc::recv(fd, self.scratch.as_mut_ptr().cast(), READ_CHUNK, 0) };
            match self.received(c, r) {
                Some(n) => got += n as u64,
                None => {
                    if got > 0 {
                        self.unsolicited(c, got, when);
                    }
                    return;
                }
            }
        }
        self.unsolicited(c, got, when);
        self.answered(c);
        c.st = St::Dead;
        c.fd = None;
    }

    /// Whether the first round is over (no first round: always).
    fn round_over(&mut self) -> bool {
        if !self.released {
            self.released = self.shared.round_done();
        }
        self.released
    }

    /// Starts the connection's next message with latency measured from `origin` (in a first
    /// round, a connection answered once is parked instead until the round is over).
    fn start(&mut self, c: &mut Conn, origin: u64) {
        if c.seq > 0 && !self.round_over() {
            c.st = St::Idle;
            self.parked.push(c.idx);
            return;
        }
        if c.seq == 0 && !c.unanswered && self.interval.is_some() {
            // Open loop: its first message fell due.
            c.unanswered = true;
            self.shared.unanswered.fetch_add(1, Ordering::SeqCst);
        }
        if !c.checked {
            // A server may write before it is asked (a canned answer at accept): bytes already
            // here when a connection's first request goes out answer nothing. One recv per
            // connection (and per reconnection); later ones are seen by `drive` and the loop.
            c.checked = true;
            self.drain_unsolicited(c, "before the first request");
            if c.st == St::Dead {
                return;
            }
        }
        c.out.clear();
        self.ex.request(c.id, c.seq, &mut c.out);
        c.sent = 0;
        c.origin = origin;
        c.timed_out = false;
        c.read_pending = false;
        c.st = St::Sending;
        self.drive(c);
    }

    /// Does whatever the connection's state allows until it would block.
    fn drive(&mut self, c: &mut Conn) {
        loop {
            let Some(fd) = c.fd.as_ref().map(|f| f.as_raw_fd()) else {
                return;
            };
            let step = match c.st {
                St::Sending => self.send_step(c, fd),
                St::Receiving if c.pending.is_some() => self.discard_step(c, fd),
                St::Receiving => self.receive_step(c, fd),
                St::Idle | St::Connecting | St::Dead => Step::Wait,
            };
            if step == Step::Wait {
                return;
            }
        }
    }

    /// One send of the rest of the outstanding message.
    fn send_step(&mut self, c: &mut Conn, fd: RawFd) -> Step {
        // SAFETY: the slice is valid for reads of its remaining length.
        let r = unsafe {
            libc::send(
                fd,
                c.out[c.sent..].as_ptr().cast(),
                c.out.len() - c.sent,
                libc::MSG_NOSIGNAL,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock => Step::Wait,
                io::ErrorKind::Interrupted => Step::Again,
                _ => {
                    self.fail_io(c, Some(e), true);
                    Step::Wait
                }
            };
        }
        c.sent += r as usize;
        if c.sent == c.out.len() {
            c.st = St::Receiving;
            if !c.read_pending && c.inb.is_empty() {
                return Step::Wait; // the echo's arrival will wake this connection
            }
        }
        Step::Again
    }

    /// A response already judged: one read of its rest, dropped; complete once it is all
    /// read.
    fn discard_step(&mut self, c: &mut Conn, fd: RawFd) -> Step {
        if c.discard == 0 {
            let d = c.pending.take().expect("pending response");
            return self.finish(c, d);
        }
        // One byte more than the response's rest: a byte past it is unsolicited.
        let want = (c.discard + 1).min(READ_CHUNK as u64) as usize;
        // SAFETY: scratch holds READ_CHUNK >= want writable bytes.
        let r = unsafe { libc::recv(fd, self.scratch.as_mut_ptr().cast(), want, 0) };
        match self.received(c, r) {
            Some(n) if n as u64 > c.discard => {
                let extra = n as u64 - c.discard;
                c.discard = 0;
                self.unsolicited(c, extra, "past the end of a response");
            }
            Some(n) => c.discard -= n as u64,
            None => return Step::Wait,
        }
        Step::Again
    }

    /// Judges what the connection holds; a response not yet complete gets one read more.
    fn receive_step(&mut self, c: &mut Conn, fd: RawFd) -> Step {
        let need = match self.ex.response(&c.out, &c.inb) {
            // Our own message size bounds what an echo holds; nothing a peer announces is
            // reserved beyond READ_CHUNK at a time.
            Response::NeedMore(n) => n.min(READ_CHUNK.max(c.out.len())),
            Response::Complete {
                len,
                verdict,
                close,
            } => {
                let d = Done {
                    len,
                    verdict,
                    close,
                };
                if matches!(verdict, Verdict::Fault(_)) && !self.c.has_error() {
                    let head = describe(&c.inb);
                    self.note_error(now_ns(), || format!("error response: {head}"));
                }
                let held = c.inb.len() as u64;
                if len > held {
                    // Judged from what is held: drop the rest as it arrives.
                    c.discard = len - held;
                    c.inb.clear();
                    c.pending = Some(d);
                    return Step::Again;
                }
                return self.finish(c, d);
            }
            Response::Unreadable(why) => {
                self.fail_unreadable(c, why);
                return Step::Wait;
            }
        };
        // One byte more than the response can still hold: one request is outstanding, so a
        // byte past its response is unsolicited (`complete`).
        let need = need + 1;
        let have = c.inb.len();
        c.inb.reserve(need);
        // SAFETY: `need` bytes of spare capacity were reserved just above.
        let r = unsafe { libc::recv(fd, c.inb.as_mut_ptr().add(have).cast(), need, 0) };
        match self.received(c, r) {
            // SAFETY: the kernel initialized `n` bytes after `have`.
            Some(n) => unsafe { c.inb.set_len(have + n) },
            None => return Step::Wait,
        }
        Step::Again
    }

    /// Completes response `d`; the connection goes on only when it sends again at once.
    fn finish(&mut self, c: &mut Conn, d: Done) -> Step {
        self.complete(c, d);
        if c.st == St::Sending {
            Step::Again
        } else {
            Step::Wait
        }
    }

    /// A recv's result: the bytes received, or `None` when the connection must wait (or
    /// failed, which is counted and closes it). EINTR comes back as 0 bytes.
    fn received(&mut self, c: &mut Conn, r: isize) -> Option<usize> {
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock => None,
                io::ErrorKind::Interrupted => Some(0),
                _ => {
                    self.fail_io(c, Some(e), false);
                    None
                }
            };
        }
        if r == 0 {
            self.fail_io(c, None, false);
            return None;
        }
        Some(r as usize)
    }

    /// A response that cannot be read: count it, close the connection (where the next
    /// response would start is unknown).
    fn fail_unreadable(&mut self, c: &mut Conn, why: &str) {
        let now = now_ns();
        self.count(Kind::Malformed, now);
        let head = describe(&c.inb);
        self.note_error(now, || format!("malformed response ({why}): {head}"));
        self.answered(c);
        c.st = St::Dead;
        c.fd = None;
    }

    /// A whole response arrived: count it (an op when valid and inside the window), then
    /// start or schedule the next message, or reconnect when the server closes.
    fn complete(&mut self, c: &mut Conn, d: Done) {
        let now = now_ns();
        self.answered(c);
        self.window();
        let in_window = now >= self.t_open && now < self.t_close;
        match d.verdict {
            Verdict::Valid if in_window => {
                self.c.n.msgs += 1;
                self.c.n.bytes += c.out.len() as u64;
                self.c.n.rx_bytes += d.len;
                self.c.latency.record(now.saturating_sub(c.origin));
                if let Some(g) = self.gaps.as_mut() {
                    g.record(now);
                }
            }
            Verdict::Valid => {}
            Verdict::Mismatch { at } => {
                self.note_error(now, || {
                    format!(
                        "mismatched response to message {} on connection {} (first wrong byte {at})",
                        c.seq, c.id
                    )
                });
                self.c.mismatch_at(
                    now,
                    Mismatch {
                        conn: c.id,
                        msg: c.seq,
                        offset: at,
                        in_warmup: now < self.t_open,
                    },
                );
                self.count(Kind::Mismatch, now);
            }
            Verdict::Fault(Fault::Non2xx) => self.count(Kind::Non2xx, now),
            Verdict::Fault(Fault::Malformed) => self.count(Kind::Malformed, now),
        }
        let held = (d.len.min(c.inb.len() as u64)) as usize;
        c.inb.drain(..held);
        if !c.inb.is_empty() {
            // Arrived with the response, past its end: nothing asked for them.
            let extra = c.inb.len() as u64;
            c.inb.clear();
            self.unsolicited(c, extra, "past the end of a response");
        }
        c.seq += 1;
        c.st = St::Idle;
        if let Some(iv) = self.interval {
            c.due += iv;
        }
        if d.close {
            return self.reconnect(c);
        }
        match self.interval {
            None => self.start(c, now),
            Some(_) if c.due <= now => self.start(c, c.due),
            Some(_) => self.due.push(Reverse((c.due, c.idx))),
        }
    }
}

/// The start of a response, for a message: its first line, at most 80 bytes.
fn describe(b: &[u8]) -> String {
    let line = b.split(|&x| x == b'\n').next().unwrap_or(b"");
    let line = &line[..line.len().min(80)];
    format!("{:?}", String::from_utf8_lossy(line).trim_end())
}

/// Loopback targets with more than `conns_per_source` connections (default
/// CONNS_PER_SOURCE): connection `id` binds 127.0.0.(1 + id / conns_per_source).
fn source_for(cfg: &Config, id: usize) -> Option<Ipv4Addr> {
    let per = cfg.conns_per_source.max(1);
    match cfg.target.ip() {
        IpAddr::V4(ip) if ip.is_loopback() && cfg.conns > per => {
            let k = 1 + id / per;
            Some(Ipv4Addr::new(127, 0, 0, k.min(254) as u8))
        }
        _ => None,
    }
}

/// A non-blocking socket with TCP_NODELAY whose connect is under way.
fn connect(target: SocketAddr, source: Option<Ipv4Addr>) -> io::Result<OwnedFd> {
    let fd = crate::io::sys::tcp_socket(&target, libc::SOCK_NONBLOCK)?;
    let setopt = |level, name| crate::io::sys::set_int_opt(&fd, level, name, 1);
    setopt(libc::IPPROTO_TCP, libc::TCP_NODELAY)?;
    if let Some(src) = source {
        // The port is picked at connect time from the whole 4-tuple, not at bind time.
        setopt(libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT)?;
        let (ss, len) = sockaddr(SocketAddr::new(IpAddr::V4(src), 0));
        // SAFETY: valid fd and address of the stated length.
        cvt(unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &ss as *const _ as *const libc::sockaddr,
                len,
            )
        })?;
    }
    let (ss, len) = sockaddr(target);
    // SAFETY: valid fd and address of the stated length.
    let r = unsafe {
        libc::connect(
            fd.as_raw_fd(),
            &ss as *const _ as *const libc::sockaddr,
            len,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    Ok(fd)
}

fn so_error(fd: RawFd) -> io::Result<()> {
    let mut err: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: valid pointers to an int and its length.
    cvt(unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&mut err as *mut libc::c_int).cast(),
            &mut len,
        )
    })?;
    if err == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(err))
    }
}

/// epoll_pwait2 with a nanosecond timeout (falls back to epoll_wait, rounded up to 1 ms).
fn wait(ep: &OwnedFd, events: &mut [libc::epoll_event], timeout_ns: u64) -> io::Result<usize> {
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    {
        // SAFETY: valid epoll fd, event buffer of the stated length, timespec and no sigmask.
        let r = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                ep.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                &ts as *const libc::timespec,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => Ok(0),
            Some(libc::ENOSYS) => {
                let ms = timeout_ns.div_ceil(1_000_000).min(i32::MAX as u64) as libc::c_int;
                // SAFETY: as above.
                let r = unsafe {
                    libc::epoll_wait(
                        ep.as_raw_fd(),
                        events.as_mut_ptr(),
                        events.len() as libc::c_int,
                        ms,
                    )
                };
                if r < 0 {
                    let e = io::Error::last_os_error();
                    if e.kind() == io::ErrorKind::Interrupted {
                        Ok(0)
                    } else {
                        Err(e)
                    }
                } else {
                    Ok(r as usize)
                }
            }
            _ => Err(e),
        }
    }
}
