//! What a model is: an id, a one-line summary, a family (the code) and knobs (the data).
//! The table of models lives in `registry.rs`; availability is decided in `probe.rs` from the
//! environment probe alone; external contenders become rows of a run's `contender::Catalog`.

pub mod contender;
pub mod probe;

pub use crate::avail::Availability;
pub use contender::Catalog;

use serde::Serialize;

/// An I/O model in the ring: one row of `registry::MODELS`.
#[derive(Debug, Serialize)]
pub struct ModelSpec {
    /// Stable kebab-case id used on the CLI and in results: "epoll-et", "uring-sqpoll".
    pub id: &'static str,
    /// One line for `ringside list` and the report legend.
    pub summary: &'static str,
    pub family: Family,
    pub knobs: Knobs,
}

/// The code families. Variants within a family are knobs, not code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    Blocking,
    Epoll,
    Uring,
    Peer,
}

impl Family {
    /// Blocking syscalls and epoll exist on every Linux: tests may never skip them.
    pub fn always_available(self) -> bool {
        matches!(self, Family::Blocking | Family::Epoll)
    }
}

#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Knobs {
    Blocking(Threading),
    Epoll(Trigger),
    Uring(UringKnobs),
    Peer(PeerKind),
}

/// How a blocking model uses threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Threading {
    /// One thread does everything (micro loops); servers: one thread per connection.
    PerConnection,
    /// Blocking calls handed to a pool of worker threads (`None`: one per CPU).
    Pool { threads: Option<u16> },
}

/// epoll's notification mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    Level,
    Edge,
}

/// Every io_uring knob a model row may set. Read in exactly one place per knob: ring setup
/// flags in `io::uring::ring::build`, the others where the shape that uses them is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct UringKnobs {
    /// IORING_SETUP_SQPOLL: a kernel thread polls the SQ; no io_uring_enter to submit while
    /// it is awake. Idle time before it sleeps, ms.
    pub sqpoll_idle_ms: Option<u32>,
    /// IORING_SETUP_DEFER_TASKRUN | SINGLE_ISSUER (kernel 6.1): completions run only when
    /// the task asks for them.
    pub defer_taskrun: bool,
    /// Registered files (IOSQE_FIXED_FILE): no fd lookup per op.
    pub fixed_files: bool,
    /// Registered buffers (READ_FIXED/WRITE_FIXED): no page pinning per op.
    pub fixed_bufs: bool,
    /// Multishot accept/recv: one SQE, many completions.
    pub multishot: bool,
    /// Provided buffer ring: the kernel picks the receive buffer.
    pub buf_ring: bool,
    /// SEND_ZC: zero-copy send (pays only for large payloads).
    pub zc_send: bool,
    /// IORING_SETUP_IOPOLL: completions are polled from the device (O_DIRECT reads and writes
    /// on a device with poll queues only; never fsync).
    pub iopoll: bool,
}

impl UringKnobs {
    /// Plain io_uring: every knob off.
    pub const PLAIN: UringKnobs = UringKnobs {
        sqpoll_idle_ms: None,
        defer_taskrun: false,
        fixed_files: false,
        fixed_bufs: false,
        multishot: false,
        buf_ring: false,
        zc_send: false,
        iopoll: false,
    };
}

/// Contenders that are not ringside's own code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PeerKind {
    /// tokio's current_thread runtime (`--threads N`: N of them on SO_REUSEPORT listeners).
    Tokio,
    /// tokio's multi-thread runtime: one listener, N workers with work stealing.
    TokioMt,
    Monoio,
    /// `ext:NAME`: any server command given on the command line.
    External,
}

impl PeerKind {
    /// A contender `ringside serve` runs in-process (from `src/peer/`), as opposed to an
    /// external command.
    pub fn in_process(self) -> bool {
        !matches!(self, PeerKind::External)
    }
}

impl ModelSpec {
    pub fn uring_knobs(&self) -> Option<&UringKnobs> {
        match &self.knobs {
            Knobs::Uring(k) => Some(k),
            _ => None,
        }
    }
}
