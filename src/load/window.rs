//! The measured window, shared by the three load drivers (the message engine, `stream`,
//! `pubsub`): the threads connect, pass a barrier, warm up; the coordinating thread (the
//! caller's) opens the window once the warm-up has settled, calls `edge` at its opening and
//! closing, and honours [`Config::stop`]. The drivers' loops only read the edges
//! ([`Shared::edges`]) and count what they still await ([`Shared::unanswered`]).

use super::{Config, Edge};
use crate::io::epoll::Epoll;
use crate::measure::clock::now_ns;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Duration;

/// How often the coordinating thread looks at [`Config::stop`].
const STOP_POLL: Duration = Duration::from_millis(20);
/// How far ahead of the opening the coordinator decides when the window opens, and how
/// often a loop that does not know it yet looks (so that every loop knows it beforehand and
/// reads its CPU clock at the opening).
const OPEN_MARGIN_NS: u64 = 10_000_000;
pub(super) const WARM_TICK_NS: u64 = OPEN_MARGIN_NS / 2;
/// How often the coordinator looks whether the warm-up has settled, once it is due.
const SETTLE_POLL: Duration = Duration::from_millis(1);

/// Times every thread shares, set by the coordinating thread: the start once all have
/// connected, the window's edges once the warm-up has settled (`u64::MAX` until then). The
/// message engine, the pubsub driver and the stream driver share it and [`coordinate`]: their
/// loops pass [`Shared::barrier`] twice (connected; then the start is known), count what
/// they await in [`Shared::unanswered`], and read the edges ([`Shared::edges`]) as they judge.
pub(super) struct Shared {
    pub(super) barrier: Barrier,
    pub(super) t_start: AtomicU64,
    t_open: AtomicU64,
    t_close: AtomicU64,
    /// When the run was stopped early (`u64::MAX`: it was not): the window closes there.
    stop_at: AtomicU64,
    /// Live connections whose first message was sent and not yet answered (pubsub: live
    /// subscribers without their first delivery; a stream: connections without their first
    /// bytes): the warm-up ends only when this is 0 (every connection served once), or at
    /// the message timeout.
    pub(super) unanswered: AtomicU64,
    /// The message engine's closed loop ([`Shared::with_first_round`]): the warm-up starts
    /// with one round, each connection's first message and no second one until every
    /// connection was answered once (or the round gave up), then `cfg.warmup` of load.
    first_round: bool,
    /// Set by the coordinator when the first round is over: parked connections go on.
    round_done: AtomicBool,
}

impl Shared {
    /// For `threads` loops and the coordinating thread.
    pub(super) fn new(threads: usize) -> Shared {
        Shared {
            barrier: Barrier::new(threads + 1),
            t_start: AtomicU64::new(0),
            t_open: AtomicU64::new(u64::MAX),
            t_close: AtomicU64::new(u64::MAX),
            stop_at: AtomicU64::new(u64::MAX),
            unanswered: AtomicU64::new(0),
            first_round: false,
            round_done: AtomicBool::new(false),
        }
    }

    /// A closed loop's warm-up starts with one round (see [`settle_warmup`]): a server that
    /// accepts slowly (a thread per connection on one CPU) is not kept from accepting the
    /// last connections by the first ones' closed loops (1,000 connections took it over 4 s
    /// to answer once each, and often gave up, with their loops running).
    pub(super) fn with_first_round(mut self) -> Shared {
        self.first_round = true;
        self
    }

    /// The window's edges as known now: (opening, closing), the closing brought forward by a
    /// stop; both `u64::MAX` in the warm-up until the coordinator sets them.
    pub(super) fn edges(&self) -> (u64, u64) {
        let (open, _, close) = self.edges_planned();
        (open, close)
    }

    /// The opening, the planned closing and the closing (earlier when the run was stopped).
    pub(super) fn edges_planned(&self) -> (u64, u64, u64) {
        let close = self.t_close.load(Ordering::Acquire);
        let open = self.t_open.load(Ordering::Acquire);
        (open, close, close.min(self.stop_at.load(Ordering::Relaxed)))
    }

    /// Whether the warm-up starts with one round ([`Shared::with_first_round`]).
    pub(super) fn first_round(&self) -> bool {
        self.first_round
    }

    /// Whether the first round is over: parked connections go on.
    pub(super) fn round_done(&self) -> bool {
        self.round_done.load(Ordering::Acquire)
    }
}

/// What [`coordinate`] decided: whether the run was stopped early, the warm-up it took (ns)
/// and the connections still unanswered when it gave up (0: settled).
pub(super) struct Coordinated {
    pub(super) interrupted: bool,
    pub(super) warmup_ns: u64,
    pub(super) unsettled: u64,
}

impl Coordinated {
    /// The report's window (opening to closing, or to the stop), ns.
    pub(super) fn window_ns(shared: &Shared) -> u64 {
        let (open, close) = shared.edges();
        close.saturating_sub(open)
    }
}

/// Runs `threads` load threads (`{name}-{t}`, thread t on the plan's load CPU `t % cpus`)
/// while this thread coordinates the warm-up and the window ([`coordinate`]). `body(t, cpu,
/// synced)` is thread t's loop: one that returns without passing the two barriers (`*synced`
/// left false: an early error) passes them on its way out, so that no other thread waits for
/// it. Returns the threads' results in thread order, and the coordination.
pub(super) fn run_threads<T: Send>(
    cfg: &Config,
    shared: &Shared,
    edge: &mut dyn FnMut(Edge),
    threads: usize,
    name: &str,
    body: impl Fn(usize, Option<u32>, &mut bool) -> T + Sync,
) -> (Vec<T>, Coordinated) {
    let mut coord = None;
    let body = &body;
    let parts = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let cpu = (!cfg.cpus.is_empty()).then(|| cfg.cpus[t % cfg.cpus.len()]);
                std::thread::Builder::new()
                    .name(format!("{name}-{t}"))
                    .spawn_scoped(s, move || {
                        // A timed wait may end up to the thread's timer slack late (50 us by
                        // default): an open loop's message would go out that late, and its
                        // latency, timed from when it was due, would carry the client's delay.
                        let _ =
                            rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
                        let mut synced = false;
                        let res = body(t, cpu, &mut synced);
                        if !synced {
                            shared.barrier.wait();
                            shared.barrier.wait();
                        }
                        res
                    })
                    .expect("spawn load thread")
            })
            .collect();
        coord = Some(coordinate(cfg, shared, edge));
        handles
            .into_iter()
            .map(|h| h.join().expect("load thread panicked"))
            .collect()
    });
    (parts, coord.expect("coordinated"))
}

/// The coordinating thread's part of a run, after it started the loops: waits for them to
/// connect (first barrier), sets the start (second barrier), settles the warm-up
/// ([`settle_warmup`]), sets the window's edges ([`window_for`]) and calls `edge` at the
/// opening and the closing; a stop ends the window where it was seen.
pub(super) fn coordinate(cfg: &Config, shared: &Shared, edge: &mut dyn FnMut(Edge)) -> Coordinated {
    let mut out = Coordinated {
        interrupted: false,
        warmup_ns: 0,
        unsettled: 0,
    };
    shared.barrier.wait(); // every thread has connected (or given up)
    let t_start = now_ns();
    shared.t_start.store(t_start, Ordering::SeqCst);
    // No warm-up asked: the window opens at the start, known to every loop beforehand.
    let no_warmup = cfg.warmup.is_zero();
    if no_warmup {
        shared.round_done.store(true, Ordering::SeqCst);
        let t_close = t_start + cfg.duration.as_nanos() as u64;
        shared.t_close.store(t_close, Ordering::SeqCst);
        shared.t_open.store(t_start, Ordering::SeqCst);
    }
    shared.barrier.wait();
    let settled = if no_warmup {
        Some((t_start, 0, t_start))
    } else {
        settle_warmup(cfg, shared, t_start)
    };
    if let Some((t_open, left, at)) = settled.filter(|_| !no_warmup) {
        let window = window_for(cfg, at - t_start, left);
        // t_close first: a loop that sees the opening sees the closing too.
        shared.t_close.store(t_open + window, Ordering::SeqCst);
        shared.t_open.store(t_open, Ordering::SeqCst);
        (out.warmup_ns, out.unsettled) = (t_open - t_start, left);
    }
    let opened = settled
        .is_some_and(|(t_open, _, _)| !stop_requested(cfg.stop) && wait_until(t_open, cfg.stop));
    if opened {
        edge(Edge::Open);
    }
    if !opened || !wait_until(shared.t_close.load(Ordering::SeqCst), cfg.stop) {
        out.interrupted = true;
        shared.stop_at.store(now_ns(), Ordering::SeqCst);
    }
    if opened {
        edge(Edge::Close);
    }
    out
}

/// The measured window, ns: `cfg.duration` once every connection has been served (the server
/// is past its connection set-up: a thread per connection on one CPU took 1-5 s to answer
/// 1,000 first messages while it then served a round of them in ~10 ms); when the warm-up gave
/// up with connections still unanswered (`unsettled`), at least two rounds of the warm-up
/// (`round_ns`, at most two message timeouts): a window shorter than the server's round
/// holds a fraction of a round, or nothing at all.
fn window_for(cfg: &Config, round_ns: u64, unsettled: u64) -> u64 {
    let planned = cfg.duration.as_nanos() as u64;
    if unsettled == 0 || round_ns <= cfg.warmup.as_nanos() as u64 {
        return planned;
    }
    let cap = (2 * cfg.msg_timeout.as_nanos() as u64).max(planned);
    (2 * round_ns).clamp(planned, cap)
}

/// When a warm-up (`cfg.warmup` > 0) ends: not before `cfg.warmup` after the start, and not before every
/// connection that sent its first message had it answered (a server that accepts its
/// connections slowly, e.g. a thread per connection on a busy CPU, would otherwise be
/// measured before it serves them all, or not at all), but at the latest at the message
/// timeout. With a first round ([`Shared::with_first_round`]) the connections send nothing
/// more until it settles (`round_done`), and `cfg.warmup` of load follows it. Returns the
/// opening, the connections still unanswered then (0: settled) and when the warm-up (or its
/// first round) settled, or `None` when stopped first.
fn settle_warmup(cfg: &Config, shared: &Shared, t_start: u64) -> Option<(u64, u64, u64)> {
    let warmup = cfg.warmup.as_nanos() as u64;
    let planned = t_start + warmup;
    let latest = t_start + cfg.warmup.max(cfg.msg_timeout).as_nanos() as u64;
    // Looked at a margin early, so that a warm-up that settled in time opens when planned;
    // a first round from the start, as the loops wait for it.
    let first_look = match shared.first_round {
        true => t_start,
        false => planned.saturating_sub(OPEN_MARGIN_NS).max(t_start),
    };
    let mut settled = None;
    while wait_until(first_look, cfg.stop) {
        let unanswered = shared.unanswered.load(Ordering::SeqCst);
        let now = now_ns();
        if unanswered == 0 || now >= latest {
            let open = match shared.first_round {
                true => now + warmup.max(OPEN_MARGIN_NS),
                false => (now + OPEN_MARGIN_NS).max(planned),
            };
            settled = Some((open, unanswered, now));
            break;
        }
        std::thread::sleep(SETTLE_POLL);
    }
    shared.round_done.store(true, Ordering::SeqCst);
    settled
}

pub(super) fn stop_requested(stop: Option<&AtomicBool>) -> bool {
    stop.is_some_and(|s| s.load(Ordering::SeqCst))
}

/// Sleeps until `t`; with a stop flag, in slices of [`STOP_POLL`], returning false as soon as
/// the flag is set (true: `t` was reached).
pub(super) fn wait_until(t: u64, stop: Option<&AtomicBool>) -> bool {
    loop {
        if stop_requested(stop) {
            return false;
        }
        let now = now_ns();
        if now >= t {
            return true;
        }
        let mut d = Duration::from_nanos(t - now);
        if stop.is_some() {
            d = d.min(STOP_POLL);
        }
        std::thread::sleep(d);
    }
}

/// Waits on `ep` for at most `ns` nanoseconds and returns how many of `events` it filled (0
/// on an error: the loop looks at the clock and waits again). The pubsub and UDP drivers'
/// one wait per turn of their loops.
pub(super) fn epoll_wait_ns(ep: &Epoll, events: &mut [libc::epoll_event], ns: u64) -> usize {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as i64,
        tv_nsec: (ns % 1_000_000_000) as i64,
    };
    // raw: a nanosecond epoll_pwait2(2); rustix's epoll wait makes epoll_pwait(2) with
    // milliseconds where they fit.
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
    if r < 0 {
        0
    } else {
        r as usize
    }
}
