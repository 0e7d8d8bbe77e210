//! The load generator: N TCP connections spread over T threads, each thread ONE epoll event
//! loop over its share (never a thread per connection), so that the client is not what a
//! server measurement measures.
//!
//! Two disciplines:
//! - closed loop (rust_echo_bench's model): each connection sends a message and waits for the
//!   whole response before sending the next; latency runs from the first byte sent.
//! - open loop (`rate`, wrk2's model): messages are due on a fixed schedule spread evenly over
//!   the connections; a connection still waiting when its next message is due sends it as soon
//!   as the response arrives, and latency runs from the message's *intended* send time, so a
//!   server stall shows in the percentiles instead of being hidden by the client slowing down
//!   (coordinated omission).
//!
//! Every response is checked by the protocol's [`Exchange`] (the echo one compares every byte
//! with what the connection sent, and each message carries its connection id and sequence
//! number, so bytes from another connection or a stale message are mismatches). A message is
//! an op only when its response verified and completed inside the measured window (after the
//! warm-up); errors of every kind are counted over that same window, the warm-up's apart, and
//! [`Report::unverified`] says why a run whose responses did not all verify is a failure.
//! No length a peer announces is allocated (see [`READ_CHUNK`]). A `Connection: close`
//! response is counted and its connection reopened. [`Config::stop`] ends a run early with
//! the window closed where it stopped. The threads' own CPU over the window is read from
//! their CPU-time clocks (exact) and `client_bound` is set when it shows the client was
//! saturated (see [`CLIENT_BOUND_FRACTION`]).

pub mod echo;

/// Most connections one load run opens (`load --conns`, `run --conns`).
pub(crate) const MAX_CONNS: u64 = 100_000;
mod engine;
pub mod http;
pub(crate) mod idle;
pub mod pubsub;
pub(crate) mod remote;
pub mod stream;
mod tally;
pub mod udp;
mod window;

pub use crate::measure::cell::DatagramCounts;
pub use engine::{run, Engine};
pub use tally::Counts;

use crate::measure::{CounterSet, Hist};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Connections per loopback source address: beyond this many, connections bind
/// 127.0.0.2, 127.0.0.3, ... before connecting (the ephemeral port range holds ~28k ports per
/// source address and destination).
pub(crate) const CONNS_PER_SOURCE: usize = 28_000;

/// The client is called saturated (`client_bound`) when, over the measured window, its
/// threads used at least this fraction of the CPUs they had (all threads together against
/// min(threads, CPUs given)), or any one thread used at least this fraction of one CPU (an
/// event loop cannot use more than one CPU, so one busy loop caps the rate it drives).
pub(crate) const CLIENT_BOUND_FRACTION: f64 = 0.90;

/// A message outstanding longer than this is counted once as a timeout (it still completes
/// and counts if its response arrives).
pub(crate) const DEFAULT_MSG_TIMEOUT: Duration = Duration::from_secs(5);

/// The application protocol: what a connection sends and how a response is judged. The
/// engine owns sockets, buffers, timing and counting; an `Exchange` owns bytes only.
pub trait Exchange: Sync {
    /// Writes message `seq` of connection `conn` into `out` (cleared by the caller).
    fn request(&self, conn: u32, seq: u64, out: &mut Vec<u8>);
    /// Judges the bytes `got` received so far for the request `sent`.
    fn response(&self, sent: &[u8], got: &[u8]) -> Response;
    /// A bulk transfer, which has no messages: [`run`] hands the run to its own driver.
    fn streaming(&self) -> Option<&stream::Streaming> {
        None
    }
    /// Publish/subscribe fan-out: [`run`] hands the run to its own driver.
    fn pubsub(&self) -> Option<&pubsub::Pubsub> {
        None
    }
    /// UDP echo datagrams: [`run`] hands the run to its own driver.
    fn udp(&self) -> Option<&udp::Udp> {
        None
    }
    /// How another host's load generator makes this exchange (`run --load-host`); `None`:
    /// it runs on this host only.
    fn wire(&self) -> Option<Wire> {
        None
    }
}

/// An [`Exchange`] described for another host's `ringside remote-load`, which makes the same
/// one there ([`Wire::exchange`]): the echo and HTTP exchanges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wire {
    Echo {
        msg_bytes: usize,
    },
    /// GET `path` from a server asked to answer `proto::http::served_body(body_bytes)`.
    Http {
        path: String,
        body_bytes: Option<usize>,
    },
}

impl Wire {
    /// The exchange this describes.
    pub(crate) fn exchange(&self) -> Box<dyn Exchange> {
        match self {
            Wire::Echo { msg_bytes } => Box::new(echo::Echo {
                msg_bytes: *msg_bytes,
            }),
            Wire::Http { path, body_bytes } => Box::new(http::HttpGet::new(
                "127.0.0.1",
                path.clone(),
                http::Expect::Served(*body_bytes),
            )),
        }
    }
}

/// Bytes one receive asks for at most beyond a connection's own message size: whatever a
/// peer announces, the engine's buffers grow only with bytes that actually arrived, at most
/// this many at a time.
pub(crate) const READ_CHUNK: usize = 64 * 1024;

/// What a protocol makes of the bytes received so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Response {
    /// Not complete: at most this many more bytes are expected (the engine reads no more than
    /// that, so it never consumes bytes of a later message).
    NeedMore(usize),
    /// The response is `len` bytes and its verdict is known. When `len` is more than was
    /// received, the rest is content the verdict does not depend on (an HTTP body whose length
    /// alone is checked): the engine reads it in pieces of at most [`READ_CHUNK`] and discards
    /// it, and the response completes when its last byte has arrived.
    Complete {
        len: u64,
        verdict: Verdict,
        /// The server closes the connection after this response (HTTP `Connection: close`,
        /// HTTP/1.0 without keep-alive): the engine counts it, then reconnects.
        close: bool,
    },
    /// Cannot be read: malformed, and where it ends cannot be known (the reason says why).
    /// Counted as `malformed`; the engine closes the connection (it is not reopened:
    /// `live_conns` shows the loss).
    Unreadable(&'static str),
}

/// Whether a complete response is the right one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The response expected: the message is one op.
    Valid,
    /// Not the response to the message sent (wrong bytes, another connection's, stale, wrong
    /// length); `at` is the first byte offset in the response that differs from the expected.
    Mismatch { at: u64 },
    /// An error response of this kind.
    Fault(Fault),
}

/// Why a complete response was an error (besides a mismatch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// HTTP: a status outside 2xx.
    Non2xx,
    /// Framed correctly but malformed otherwise.
    Malformed,
}

/// Where the first mismatch was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mismatch {
    /// Connection id (0-based, as carried in echo messages).
    pub(crate) conn: u32,
    /// The message's sequence number on that connection (0-based).
    pub(crate) msg: u64,
    /// First byte offset in the response that differs from the expected one.
    pub offset: u64,
    /// Seen in the warm-up (not in the window's counts, still a failure).
    pub(crate) in_warmup: bool,
}

impl std::fmt::Display for Mismatch {
    /// "byte B of message M on connection C", with " (warm-up)" when seen there.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "byte {} of message {} on connection {}{}",
            self.offset,
            self.msg,
            self.conn,
            if self.in_warmup { " (warm-up)" } else { "" }
        )
    }
}

/// One load run.
#[derive(Clone, Debug)]
pub struct Config {
    pub(crate) target: SocketAddr,
    /// Connections, >= 1.
    pub(crate) conns: usize,
    /// Measured window after the warm-up.
    pub(crate) duration: Duration,
    /// Traffic before the window opens (not counted), at least. The message exchanges
    /// (echo, HTTP) go on warming up until every connection has had its first message
    /// answered, at most until the message timeout ([`Report::warmup_ns`],
    /// [`Report::unsettled_conns`]). Zero: no warm-up, the window opens at the start.
    pub warmup: Duration,
    /// Open loop: messages per second over all connections. `None`: closed loop.
    pub rate: Option<f64>,
    /// Event-loop threads, >= 1 (at most one per connection is used).
    pub threads: usize,
    /// CPUs to pin the threads to, round-robin; empty = not pinned.
    pub(crate) cpus: Vec<u32>,
    /// How long connecting may take before the stragglers count as connect errors.
    pub connect_timeout: Duration,
    /// See [`DEFAULT_MSG_TIMEOUT`].
    pub msg_timeout: Duration,
    /// Connections per loopback source address before the next one is used (see
    /// [`CONNS_PER_SOURCE`]; lower only to test the spreading).
    pub conns_per_source: usize,
    /// Set (by a signal handler) to end the run early: the window closes when it is seen
    /// (the load threads check it between waits) and the report says `interrupted`.
    pub(crate) stop: Option<&'static AtomicBool>,
    /// What drives a message exchange's connections (bulk streams and pubsub have their own
    /// epoll drivers).
    pub engine: Engine,
    /// A connection per request (neper's tcp_crr): after each verified response the client
    /// closes its connection abortively (SO_LINGER 0: a RST, no TIME_WAIT, its port free at
    /// once) and opens a new one for its next message, timed from the connect's start (closed
    /// loop) or from the message's intended start (open loop: the connect starts when it is
    /// due). `conns` are then concurrent clients, each holding at most one socket, so the
    /// ports in use never exceed them. See [`Report::abortive_closes`].
    pub churn: bool,
}

impl Config {
    /// Closed loop, one thread, 1 s warm-up, default timeouts.
    pub fn new(target: SocketAddr, conns: usize, duration: Duration) -> Config {
        Config {
            target,
            conns,
            duration,
            warmup: Duration::from_secs(1),
            rate: None,
            threads: 1,
            cpus: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            msg_timeout: DEFAULT_MSG_TIMEOUT,
            conns_per_source: CONNS_PER_SOURCE,
            stop: None,
            engine: Engine::Epoll,
            churn: false,
        }
    }
}

/// The edges of the measured window, announced to the caller (who reads the server's CPU and
/// syscall counter there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    Open,
    Close,
}

/// What a load run measured. Every count covers the measured window (after the warm-up), the
/// same window for successes and errors, unless said otherwise; what went wrong in the
/// warm-up is summed in `warmup_errors` / `warmup_invalid`. A load host's report comes back
/// as JSON (`ringside remote-load`), its histogram as base64 of its V2 serialisation, and the
/// hosts' reports are added up by [`Report::merge`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub(crate) conns_requested: usize,
    pub threads: usize,
    /// The engine that drove the connections (files written before engines read as epoll).
    #[serde(default = "epoll_engine")]
    pub engine: Engine,
    /// Open-loop target rate, messages/s (`None`: closed loop).
    pub(crate) rate_per_sec: Option<f64>,
    /// Measured window, ns (shorter than asked when interrupted).
    pub window_ns: u64,
    /// The run was stopped early ([`Config::stop`]): the counts cover the window up to then.
    pub(crate) interrupted: bool,
    /// The counts ([`Counts`]: each covers the window unless its doc says otherwise), in
    /// the JSON under their own names.
    #[serde(flatten)]
    pub n: Counts,
    /// The first mismatch seen, warm-up included (`None`: none).
    pub first_mismatch: Option<Mismatch>,
    /// The warm-up the run took, ns: `Config::warmup`, or longer when connections were still
    /// awaiting their first answer then.
    pub warmup_ns: u64,
    /// The longest time inside the window with no response completed on any connection, ns
    /// (the whole window when none completed): a stall shorter than the message timeout shows
    /// here. Exact to within window/[`GAP_BUCKETS`].
    pub longest_gap_ns: u64,
    /// Ops and latency per 100 ms of the window (`measure::timeline`), where the driver
    /// records them (the message engine); hosts' series are added up.
    #[serde(default)]
    pub timeline: Option<crate::measure::timeline::Timeline>,
    /// The first error seen (connect, socket, or a response that did not verify, warm-up
    /// included), for the reader.
    pub first_error: Option<String>,
    /// CPUs the threads could use: min(threads, CPUs given or allowed).
    pub(crate) cpus_available: usize,
    /// Load-generator CPU over the window as a fraction of `cpus_available` CPUs.
    pub cpu_fraction: f64,
    /// The busiest thread's CPU as a fraction of one CPU.
    pub(crate) max_thread_fraction: f64,
    /// See [`CLIENT_BOUND_FRACTION`].
    pub(crate) client_bound: bool,
    /// Per-message latency, ns (valid responses in the window only).
    #[serde(with = "crate::measure::hist::base64_v2")]
    pub latency: Hist,
    /// Merged reports ([`Report::merge`], `run --load-host`): the load hosts that took part
    /// and those of them whose load generator was saturated (`client_bound` there).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) hosts: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) bound_hosts: Vec<String>,
    /// UDP echo ([`udp`]): what happened to its datagrams (see [`DatagramCounts`]); 0 for
    /// every other exchange.
    #[serde(default)]
    pub dgram: DatagramCounts,
    /// The target was a loopback address: nothing between the load and the server can
    /// duplicate a datagram, so a duplicated echo is the server's and does not verify.
    #[serde(default)]
    pub(crate) target_loopback: bool,
}

/// The window is cut into this many buckets to find the longest gap with no completion over
/// every thread (each thread marks the first and last completion in each bucket).
pub(crate) const GAP_BUCKETS: usize = 4096;

impl Report {
    /// A report of a run of `threads` load threads over `window_ns`, every count zero: the
    /// drivers sum their threads' figures into it, then call [`Report::settle_cpu`].
    pub(crate) fn empty(
        cfg: &Config,
        threads: usize,
        rate_per_sec: Option<f64>,
        window_ns: u64,
        interrupted: bool,
    ) -> Report {
        let cpus_available = threads.min(if cfg.cpus.is_empty() {
            crate::measure::pin::allowed_cpus().len()
        } else {
            let mut c = cfg.cpus.clone();
            c.sort();
            c.dedup();
            c.len()
        });
        Report {
            conns_requested: cfg.conns,
            threads,
            engine: Engine::Epoll,
            rate_per_sec,
            window_ns,
            interrupted,
            n: Counts::default(),
            first_mismatch: None,
            warmup_ns: cfg.warmup.as_nanos() as u64,
            longest_gap_ns: 0,
            timeline: None,
            first_error: None,
            cpus_available,
            cpu_fraction: 0.0,
            max_thread_fraction: 0.0,
            client_bound: false,
            latency: Hist::new(),
            hosts: Vec::new(),
            bound_hosts: Vec::new(),
            dgram: DatagramCounts::default(),
            target_loopback: cfg.target.ip().is_loopback(),
        }
    }

    /// Adds the report of another load host that drove the same server over the same window
    /// (`run --load-host`): counts and CPU summed, histograms ADDED (never averaged, so the
    /// percentiles are those of every message of every host), the window the longest of the
    /// hosts' (ops per second over it do not flatter), the first mismatch and error kept.
    /// Headroom is judged per host: the merged report is `client_bound` when any host's load
    /// generator was (named in `bound_hosts`). `longest_gap_ns` becomes the shortest host's:
    /// the true gap over all hosts is at most that. `self` is the first host's report, named
    /// `first`; `other` is `host`'s.
    pub(crate) fn merge(&mut self, first: &str, other: &Report, host: &str) {
        if self.hosts.is_empty() {
            self.hosts.push(first.to_string());
            if self.client_bound {
                self.bound_hosts.push(first.to_string());
            }
        }
        self.hosts.push(host.to_string());
        if other.client_bound {
            self.bound_hosts.push(host.to_string());
        }
        self.conns_requested += other.conns_requested;
        self.threads += other.threads;
        self.rate_per_sec = match (self.rate_per_sec, other.rate_per_sec) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.window_ns = self.window_ns.max(other.window_ns);
        self.interrupted |= other.interrupted;
        self.n.merge(&other.n);
        if self.first_mismatch.is_none() {
            self.first_mismatch = other.first_mismatch;
        }
        if self.first_error.is_none() {
            self.first_error.clone_from(&other.first_error);
        }
        self.dgram.merge(&other.dgram);
        self.longest_gap_ns = self.longest_gap_ns.min(other.longest_gap_ns);
        match (&mut self.timeline, &other.timeline) {
            (Some(a), Some(b)) => a.merge(b),
            (a @ None, Some(b)) => *a = Some(b.clone()),
            _ => {}
        }
        // Each host settles its own warm-up: the longest is the one the window waited for.
        self.warmup_ns = self.warmup_ns.max(other.warmup_ns);
        self.cpus_available += other.cpus_available;
        if self.window_ns > 0 {
            self.cpu_fraction =
                self.n.cpu_ns as f64 / (self.window_ns as f64 * self.cpus_available.max(1) as f64);
        }
        self.max_thread_fraction = self.max_thread_fraction.max(other.max_thread_fraction);
        self.client_bound = !self.bound_hosts.is_empty();
        self.latency.merge(&other.latency);
    }

    /// The load generator's CPU over the window (from the summed `cpu_ns` and the busiest
    /// thread's `max_thread_ns`) and whether it was the bottleneck (`client_bound`).
    pub(crate) fn settle_cpu(&mut self, max_thread_ns: u64) {
        if self.window_ns > 0 {
            self.cpu_fraction =
                self.n.cpu_ns as f64 / (self.window_ns as f64 * self.cpus_available.max(1) as f64);
            self.max_thread_fraction = max_thread_ns as f64 / self.window_ns as f64;
        }
        self.client_bound = self.cpu_fraction >= CLIENT_BOUND_FRACTION
            || self.max_thread_fraction >= CLIENT_BOUND_FRACTION;
    }

    pub(crate) fn msgs_per_sec(&self) -> f64 {
        per_sec(self.n.msgs, self.window_ns)
    }
    pub(crate) fn bytes_per_sec(&self) -> f64 {
        per_sec(self.n.bytes, self.window_ns)
    }
    /// Response bytes received per second (HTTP transfer/s).
    pub(crate) fn rx_bytes_per_sec(&self) -> f64 {
        per_sec(self.n.rx_bytes, self.window_ns)
    }
    /// Errors of every kind in the window (connect, resets, other socket errors, mismatches,
    /// non-2xx, malformed, unsolicited, timeouts).
    pub fn errors(&self) -> u64 {
        self.n.connect_errors
            + self.n.resets
            + self.n.io_errors
            + self.n.mismatches
            + self.n.non_2xx
            + self.n.malformed
            + self.n.unsolicited
            + self.n.timeouts
    }
    /// Latency mean and standard deviation, ns (`None` when no message completed).
    pub(crate) fn latency_mean_stddev(&self) -> Option<(f64, f64)> {
        (!self.latency.is_empty())
            .then(|| (self.latency.inner().mean(), self.latency.inner().stdev()))
    }
    /// Latency at quantile q (0..=1), ns; `None` when no message completed.
    pub fn latency_ns(&self, q: f64) -> Option<u64> {
        (!self.latency.is_empty()).then(|| self.latency.quantile(q))
    }
    /// Why another host's report cannot be figures of the run it was asked for (`conns`
    /// connections at `rate` messages/s, or closed loop, over `cfg`'s window), or `None`:
    /// counts past what a window holds (so that summing hosts cannot wrap), a latency
    /// histogram that does not hold one value per message, more live connections than asked,
    /// CPU beyond its threads' CPUs over the window, a window far from the one asked, or an
    /// open loop completing more than was offered (a forged host claimed 2,000,000 msgs/s at
    /// 2,000 offered).
    pub(crate) fn implausible(
        &self,
        conns: usize,
        rate: Option<f64>,
        cfg: &Config,
    ) -> Option<String> {
        let counts = [
            ("msgs", self.n.msgs),
            ("bytes", self.n.bytes),
            ("rx_bytes", self.n.rx_bytes),
            ("errors", self.errors()),
            ("warmup_errors", self.n.warmup_errors),
            ("reconnects", self.n.reconnects),
            ("cpu_ns", self.n.cpu_ns),
        ];
        // 2^48: far past any window's count, and hundreds of hosts sum without wrapping.
        if let Some((what, n)) = counts.iter().find(|(_, n)| *n >= 1 << 48) {
            return Some(format!("{what} {n}"));
        }
        for (what, v) in [
            ("cpu_fraction", self.cpu_fraction),
            ("max_thread_fraction", self.max_thread_fraction),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Some(format!("{what} {v}"));
            }
        }
        if self.latency.len() != self.n.msgs {
            return Some(format!(
                "{} messages but {} latencies",
                self.n.msgs,
                self.latency.len()
            ));
        }
        if self.n.live_conns > conns as u64 || self.conns_requested != conns {
            return Some(format!(
                "{} live of {} connections, asked for {conns}",
                self.n.live_conns, self.conns_requested
            ));
        }
        let asked = cfg.duration.as_nanos() as u64;
        // A warm-up that gave up stretches the window by at most two message timeouts.
        let longest = asked + 2 * cfg.msg_timeout.as_nanos() as u64 + 1_000_000_000;
        if (self.window_ns == 0 && !self.interrupted) || self.window_ns > longest {
            return Some(format!(
                "a window of {} ns for {asked} ns asked",
                self.window_ns
            ));
        }
        let most_cpu =
            self.window_ns as u128 * self.cpus_available.max(1) as u128 * 105 / 100 + 10_000_000;
        if self.cpus_available > self.threads.max(1) || self.n.cpu_ns as u128 > most_cpu {
            return Some(format!(
                "{} ns of CPU over a {} ns window on {} CPU(s) for {} thread(s)",
                self.n.cpu_ns, self.window_ns, self.cpus_available, self.threads
            ));
        }
        if let Some(r) = rate {
            // Completions in the window: what fell due in it, and at most a message timeout's
            // backlog from before, one per connection more.
            let span = (self.window_ns + cfg.msg_timeout.as_nanos() as u64) as f64 / 1e9;
            let most = (r * span * 1.05).ceil() as u64 + conns as u64;
            if self.n.msgs > most {
                return Some(format!(
                    "{} messages in a {} ns window at {r:.0} offered per second",
                    self.n.msgs, self.window_ns
                ));
            }
        }
        None
    }

    /// Why the responses cannot be trusted, or `None` when every response received verified
    /// (window and warm-up): "N mismatched responses (first at byte B of message M on
    /// connection C), ...". A run with such responses is a failure: a server that answers
    /// wrongly is not measured.
    pub fn unverified(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.n.mismatches > 0 {
            parts.push(format!("{} mismatched responses", self.n.mismatches));
        }
        if self.n.non_2xx > 0 {
            parts.push(format!("{} non-2xx responses", self.n.non_2xx));
        }
        if self.n.malformed > 0 {
            parts.push(format!("{} malformed responses", self.n.malformed));
        }
        if self.n.unsolicited > 0 {
            parts.push(format!(
                "unsolicited bytes {} times (sent with no request outstanding)",
                self.n.unsolicited
            ));
        }
        if self.n.warmup_invalid > 0 {
            parts.push(format!(
                "{} responses in the warm-up did not verify",
                self.n.warmup_invalid
            ));
        }
        if self.target_loopback && self.dgram.dgram_duplicates > 0 {
            parts.push(format!(
                "{} datagrams echoed more than once, of {} sent (on loopback only the server \
                 can duplicate a datagram)",
                self.dgram.dgram_duplicates, self.dgram.dgram_sent
            ));
        }
        if parts.is_empty() {
            return None;
        }
        let mut s = parts.join(", ");
        if let Some(m) = &self.first_mismatch {
            s += &format!("; first mismatch at {m}");
        }
        if let Some(e) = self.first_error.as_deref().filter(|_| {
            self.first_mismatch.is_none()
                || self.n.non_2xx + self.n.malformed + self.n.unsolicited > 0
        }) {
            s += &format!("; first error: {e}");
        }
        Some(s)
    }
}

fn epoll_engine() -> Engine {
    Engine::Epoll
}

fn per_sec(n: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        n as f64 * 1e9 / ns as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report over a 1 s window with `n` messages of `ns` each.
    fn report(n: u64, ns: u64, bound: bool) -> Report {
        let cfg = Config::new("127.0.0.1:1".parse().unwrap(), 10, Duration::from_secs(1));
        let mut r = Report::empty(&cfg, 1, None, 1_000_000_000, false);
        r.n.msgs = n;
        r.n.bytes = n * 64;
        r.n.rx_bytes = n * 64;
        r.n.live_conns = 10;
        r.n.cpu_ns = 500_000_000;
        r.longest_gap_ns = 3_000;
        r.client_bound = bound;
        r.latency.record_n(ns, n);
        r
    }

    /// A duplicated echo does not verify where only the server can have made it (loopback);
    /// over a network it is counted (and the cell warned), not failed.
    #[test]
    fn duplicated_datagrams_fail_on_loopback_only() {
        let mut r = report(100, 10_000, false);
        assert!(r.target_loopback);
        r.dgram.dgram_sent = 100;
        r.dgram.dgram_duplicates = 7;
        let why = r.unverified().expect("fails on loopback");
        assert!(
            why.starts_with("7 datagrams echoed more than once, of 100 sent"),
            "{why}"
        );
        let cfg = Config::new("10.0.0.2:1".parse().unwrap(), 10, Duration::from_secs(1));
        let far = Report::empty(&cfg, 1, None, 1_000_000_000, false);
        assert!(!far.target_loopback);
        r.target_loopback = far.target_loopback;
        assert_eq!(r.unverified(), None);
    }

    #[test]
    fn merged_reports_add_their_histograms_and_counts() {
        // 900 messages at 10 us on one host, 100 at 1 ms on the other: the sum's p50 is
        // 10 us and its p95 1 ms (an average of the two hosts' p95s would say ~505 us).
        let mut a = report(900, 10_000, false);
        let b = report(100, 1_000_000, true);
        a.merge("a", &b, "b");
        assert_eq!(a.latency.len(), 1000);
        assert_eq!(a.n.msgs, 1000);
        assert_eq!(a.n.bytes, 64_000);
        assert_eq!(a.n.live_conns, 20);
        assert_eq!(a.conns_requested, 20);
        assert_eq!(a.n.cpu_ns, 1_000_000_000);
        assert_eq!(a.cpus_available, 2);
        assert!((a.cpu_fraction - 0.5).abs() < 1e-9);
        let within = |v: u64, want: u64| v.abs_diff(want) <= want / 1000;
        assert!(
            within(a.latency.quantile(0.5), 10_000),
            "{}",
            a.latency.quantile(0.5)
        );
        assert!(within(a.latency.quantile(0.95), 1_000_000));
        assert!(within(a.latency.quantile(0.9), 10_000));
        assert!((a.msgs_per_sec() - 1000.0).abs() < 1e-6);
        // Headroom per host: one saturated host makes the merged run client-bound, named.
        assert!(a.client_bound);
        assert_eq!(a.hosts, ["a", "b"]);
        assert_eq!(a.bound_hosts, ["b"]);
        // A third host with headroom changes nothing of that.
        a.merge("a", &report(0, 1, false), "c");
        assert!(a.client_bound);
        assert_eq!(a.hosts, ["a", "b", "c"]);
    }

    /// Issue 28 item 4: what another host reports is checked against what it was asked for.
    /// A plausible report passes; forged ones are refused, each naming what is wrong.
    #[test]
    fn a_forged_load_host_report_is_implausible() {
        let cfg = Config::new("127.0.0.1:1".parse().unwrap(), 10, Duration::from_secs(1));
        let ok = report(900, 10_000, false);
        assert_eq!(ok.implausible(10, None, &cfg), None);
        let mut open = report(2_000, 10_000, false);
        open.rate_per_sec = Some(2_000.0);
        assert_eq!(open.implausible(10, Some(2_000.0), &cfg), None);
        type Forge = fn(&mut Report);
        let forged: [(Forge, Option<f64>, &str); 7] = [
            // 2,000,000 msgs/s at 2,000 offered.
            (
                |r| {
                    r.n.msgs = 2_000_000;
                    r.latency.record_n(10_000, 2_000_000 - 900);
                },
                Some(2_000.0),
                "at 2000 offered",
            ),
            (|r| r.n.msgs = 5_000, None, "latencies"),
            (|r| r.n.msgs = u64::MAX - 3, None, "msgs"),
            (|r| r.n.cpu_ns = 50_000_000_000, None, "ns of CPU"),
            (|r| r.n.live_conns = 11, None, "live of"),
            (|r| r.window_ns = 3_600_000_000_000, None, "a window of"),
            (|r| r.cpu_fraction = f64::INFINITY, None, "cpu_fraction"),
        ];
        for (forge, rate, want) in forged {
            let mut r = report(900, 10_000, false);
            forge(&mut r);
            let why = r.implausible(10, rate, &cfg).unwrap_or_default();
            assert!(why.contains(want), "{want}: {why:?}");
        }
        // Summing hosts never wraps.
        let mut a = report(900, 10_000, false);
        let mut b = report(900, 10_000, false);
        b.n.resets = u64::MAX;
        a.n.resets = 5;
        a.merge("a", &b, "b");
        assert_eq!(a.n.resets, u64::MAX);
    }

    #[test]
    fn a_report_round_trips_through_json_histogram_included() {
        let mut r = report(500, 20_000, true);
        r.latency.record(7_000_000_000);
        r.first_mismatch = Some(Mismatch {
            conn: 3,
            msg: 9,
            offset: 12,
            in_warmup: false,
        });
        r.n.mismatches = 1;
        r.first_error = Some("connection reset".into());
        r.rate_per_sec = Some(2500.0);
        let json = serde_json::to_string(&r).unwrap();
        let back: Report = serde_json::from_str(&json).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
        assert_eq!(back.latency.len(), 501);
        for q in [0.5, 0.99, 1.0] {
            assert_eq!(back.latency.quantile(q), r.latency.quantile(q));
        }
        assert_eq!(back.first_mismatch, r.first_mismatch);
        assert_eq!(back.unverified(), r.unverified());
        assert!(back.client_bound);
        assert_eq!(back.n.msgs, 500);
    }
}
