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
//! number, so bytes from another connection or a stale message are mismatches). Only messages
//! that complete inside the measured window (after the warm-up) are counted. The threads' own
//! CPU over that window is read from their CPU-time clocks (exact) and `client_bound` is set
//! when it shows the client was saturated (see [`CLIENT_BOUND_FRACTION`]).

pub mod echo;
mod engine;
pub mod http;

pub use engine::run;

use crate::measure::Hist;
use serde::Serialize;
use std::net::SocketAddr;
use std::time::Duration;

/// Connections per loopback source address: beyond this many, connections bind
/// 127.0.0.2, 127.0.0.3, ... before connecting (the ephemeral port range holds ~28k ports per
/// source address and destination).
pub const CONNS_PER_SOURCE: usize = 28_000;

/// The client is called saturated (`client_bound`) when, over the measured window, its
/// threads used at least this fraction of the CPUs they had (all threads together against
/// min(threads, CPUs given)), or any one thread used at least this fraction of one CPU (an
/// event loop cannot use more than one CPU, so one busy loop caps the rate it drives).
pub const CLIENT_BOUND_FRACTION: f64 = 0.90;

/// A message outstanding longer than this is counted once as a timeout (it still completes
/// and counts if its response arrives).
pub const DEFAULT_MSG_TIMEOUT: Duration = Duration::from_secs(5);

/// The application protocol: what a connection sends and how a response is judged. The
/// engine owns sockets, buffers, timing and counting; an `Exchange` owns bytes only.
pub trait Exchange: Sync {
    /// Writes message `seq` of connection `conn` into `out` (cleared by the caller).
    fn request(&self, conn: u32, seq: u64, out: &mut Vec<u8>);
    /// Judges the bytes `got` received so far for the request `sent`.
    fn response(&self, sent: &[u8], got: &[u8]) -> Response;
}

/// What a protocol makes of the bytes received so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Response {
    /// Not complete: at most this many more bytes are expected (the engine reads no more than
    /// that, so it never consumes bytes of a later message).
    NeedMore(usize),
    /// Complete: the response is `len` bytes; `valid` says whether it was the right one (a
    /// wrong one counts as a mismatch).
    Complete { len: usize, valid: bool },
    /// Complete, `len` bytes, but an error response of this kind (counted by kind).
    Failed { len: usize, kind: Fault },
    /// Cannot be read: malformed, and where it ends cannot be known. Counted as `malformed`;
    /// the engine closes the connection (it is not reopened: `live_conns` shows the loss).
    Unreadable,
}

/// Why a complete response was an error (besides a mismatch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// HTTP: a status outside 2xx.
    Non2xx,
    /// Framed correctly but malformed otherwise.
    Malformed,
}

/// One load run.
#[derive(Clone, Debug)]
pub struct Config {
    pub target: SocketAddr,
    /// Connections, >= 1.
    pub conns: usize,
    /// Measured window after the warm-up.
    pub duration: Duration,
    /// Traffic before the window opens (not counted).
    pub warmup: Duration,
    /// Open loop: messages per second over all connections. `None`: closed loop.
    pub rate: Option<f64>,
    /// Event-loop threads, >= 1 (at most one per connection is used).
    pub threads: usize,
    /// CPUs to pin the threads to, round-robin; empty = not pinned.
    pub cpus: Vec<u32>,
    /// How long connecting may take before the stragglers count as connect errors.
    pub connect_timeout: Duration,
    /// See [`DEFAULT_MSG_TIMEOUT`].
    pub msg_timeout: Duration,
    /// Connections per loopback source address before the next one is used (see
    /// [`CONNS_PER_SOURCE`]; lower only to test the spreading).
    pub conns_per_source: usize,
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

/// What a load run measured. Counts cover the measured window unless said otherwise.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub conns_requested: usize,
    pub threads: usize,
    /// Open-loop target rate, messages/s (`None`: closed loop).
    pub rate_per_sec: Option<f64>,
    /// Measured window, ns.
    pub window_ns: u64,
    /// Messages whose full, valid or not, response arrived inside the window.
    pub msgs: u64,
    /// Payload bytes of those messages, one direction (each is sent and received once).
    pub bytes: u64,
    /// Bytes of those messages' responses as received (HTTP: headers included, as wrk's
    /// transfer/s counts them; echo: equal to `bytes`).
    pub rx_bytes: u64,
    /// Connections that could not be established (refused, timed out, ...), whole run.
    pub connect_errors: u64,
    /// Connections the server reset or closed (ECONNRESET, EPIPE, EOF), whole run.
    pub resets: u64,
    /// Other socket errors, whole run.
    pub io_errors: u64,
    /// Of `resets + io_errors`: those met receiving (EOF included), whole run.
    pub read_errors: u64,
    /// Of `resets + io_errors`: those met sending, whole run.
    pub write_errors: u64,
    /// Responses that were not the message sent (wrong bytes, another connection's, stale),
    /// whole run: a wrong byte in the warm-up is never hidden.
    pub mismatches: u64,
    /// Complete responses with a status outside 2xx (HTTP), whole run.
    pub non_2xx: u64,
    /// Responses that could not be parsed or framed (HTTP), whole run; each closed its
    /// connection when its end could not be known.
    pub malformed: u64,
    /// Messages outstanding longer than the message timeout, whole run.
    pub timeouts: u64,
    /// Connections still open and usable when the window closed.
    pub live_conns: u64,
    /// The first connect or socket error seen, for the reader.
    pub first_error: Option<String>,
    /// CPU of the load generator's threads over the window, ns (CPU-time clocks: exact).
    pub cpu_ns: u64,
    /// CPUs the threads could use: min(threads, CPUs given or allowed).
    pub cpus_available: usize,
    /// Load-generator CPU over the window as a fraction of `cpus_available` CPUs.
    pub cpu_fraction: f64,
    /// The busiest thread's CPU as a fraction of one CPU.
    pub max_thread_fraction: f64,
    /// See [`CLIENT_BOUND_FRACTION`].
    pub client_bound: bool,
    /// Per-message latency, ns.
    #[serde(skip)]
    pub latency: Hist,
}

impl Report {
    pub fn msgs_per_sec(&self) -> f64 {
        per_sec(self.msgs, self.window_ns)
    }
    pub fn bytes_per_sec(&self) -> f64 {
        per_sec(self.bytes, self.window_ns)
    }
    /// Response bytes received per second (HTTP transfer/s).
    pub fn rx_bytes_per_sec(&self) -> f64 {
        per_sec(self.rx_bytes, self.window_ns)
    }
    /// Errors of every kind, whole run (connect, resets, other socket errors, mismatches,
    /// non-2xx, malformed, timeouts).
    pub fn errors(&self) -> u64 {
        self.connect_errors
            + self.resets
            + self.io_errors
            + self.mismatches
            + self.non_2xx
            + self.malformed
            + self.timeouts
    }
    /// Latency at quantile q (0..=1), ns; 0 when no message completed.
    pub fn latency_ns(&self, q: f64) -> u64 {
        if self.latency.is_empty() {
            0
        } else {
            self.latency.quantile(q)
        }
    }
}

fn per_sec(n: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        n as f64 * 1e9 / ns as f64
    }
}
