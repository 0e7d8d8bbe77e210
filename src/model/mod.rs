//! What a model is: an id, a one-line summary, a family (the code) and knobs (the data).
//! The table of models lives in `registry.rs`; which shapes a model runs in `shape.rs`
//! (`ModelSpec::runs`); availability is decided in `probe.rs` from the environment probe
//! alone; external contenders become rows of a run's `contender::Catalog`.

pub mod contender;
pub mod ladder;
pub mod probe;
pub mod shape;
pub(crate) mod uring;

pub use crate::avail::Availability;
pub use contender::Catalog;
pub use shape::{FileIo, Proto, Refusal, Shape};
pub use uring::{Bufs, Drive, Files, Loop, Provided, Rx, Tx, UringKnobs, Wait};

use serde::Serialize;

/// An I/O model in the ring: one row of `registry::MODELS`.
#[derive(Debug, Serialize)]
pub struct ModelSpec {
    /// Stable kebab-case id used on the CLI and in results: "epoll-et", "uring-sqpoll".
    pub id: &'static str,
    /// One line for `ringside list` and the report legend.
    pub(crate) summary: &'static str,
    pub family: Family,
    pub knobs: Knobs,
    /// Whether the row is one of its family's leaders, the models a run takes when `--models`
    /// is not given: blocking and the thread pool, epoll-lt, uring-defer and uring-tuned (io_uring
    /// plain-but-modern and with every server knob that pays), tokio and monoio. Every other
    /// variant runs when named (`--models ID,...` or `--models all`), so that time goes to the
    /// comparisons users ask about (read in `plan::select_models_for`).
    #[serde(skip)]
    pub default_run: bool,
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
    /// Every family, in the registry's order.
    pub const ALL: [Family; 4] = [Family::Blocking, Family::Epoll, Family::Uring, Family::Peer];

    /// Its name in a sentence ("io_uring", "the runtimes").
    pub fn words(self) -> &'static str {
        match self {
            Family::Blocking => "blocking",
            Family::Epoll => "epoll",
            Family::Uring => "io_uring",
            Family::Peer => "the runtimes",
        }
    }
}

impl ModelSpec {
    /// Whether the model does its I/O through io_uring: the io_uring family and monoio (on
    /// its io_uring driver), whose counting repetition also counts io_uring's tracepoints.
    pub fn on_uring(&self) -> bool {
        matches!(self.knobs, Knobs::Uring(_) | Knobs::Peer(PeerKind::Monoio))
    }

    /// Blocking syscalls and plain epoll exist on every Linux: tests may never skip them. A row
    /// that needs more from the machine (epoll busy polling needs a NAPI id) may be unavailable.
    pub fn always_available(&self) -> bool {
        match &self.knobs {
            Knobs::Blocking(_) => true,
            Knobs::Epoll(k) => k.busy_poll.is_none(),
            Knobs::Uring(_) | Knobs::Peer(_) => false,
        }
    }
}

#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Knobs {
    Blocking(Threading),
    Epoll(EpollKnobs),
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

/// An epoll row's knobs: its trigger, and epoll's own busy polling. The busy-poll settings are
/// read in one place, `io::epoll::Epoll::with_knobs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpollKnobs {
    pub(crate) trigger: Trigger,
    /// EPIOCSPARAMS on the instance (6.9): `epoll_wait` busy-polls the NAPI queues of the
    /// sockets it watches before sleeping.
    pub(crate) busy_poll: Option<EpollBusyPoll>,
}

/// `struct epoll_params` as a row sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct EpollBusyPoll {
    /// How long one wait busy-polls, us.
    pub(crate) busy_poll_usecs: u32,
    /// Packets per poll (at most 64 without CAP_NET_ADMIN).
    pub(crate) budget: u16,
    /// Prefer busy polling over softirq processing (the device's IRQs deferred meanwhile).
    pub(crate) prefer_busy_poll: bool,
}

impl EpollKnobs {
    pub(crate) const LEVEL: EpollKnobs = EpollKnobs {
        trigger: Trigger::Level,
        busy_poll: None,
    };
    pub(crate) const EDGE: EpollKnobs = EpollKnobs {
        trigger: Trigger::Edge,
        busy_poll: None,
    };

    /// Knobs only the TCP servers use (busy polling polls a NIC queue: pipes have none).
    pub(crate) fn server_only(&self) -> bool {
        self.busy_poll.is_some()
    }
}

/// Results files record a plain epoll row's knobs as its trigger alone (`{"epoll": "level"}`,
/// as before the busy-poll knob), and a busy-polling one as a struct.
impl Serialize for EpollKnobs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        match &self.busy_poll {
            None => self.trigger.serialize(s),
            Some(b) => {
                let mut st = s.serialize_struct("EpollKnobs", 2)?;
                st.serialize_field("trigger", &self.trigger)?;
                st.serialize_field("busy_poll", b)?;
                st.end()
            }
        }
    }
}

/// `epoll-busypoll`'s settings: the busy-poll time of `uring-napi`, the kernel's default budget
/// (NAPI_POLL_WEIGHT, the most an unprivileged caller may set), busy polling preferred.
pub(crate) const EPOLL_BUSY_POLL: EpollBusyPoll = EpollBusyPoll {
    busy_poll_usecs: NAPI_BUSY_POLL_US,
    budget: 64,
    prefer_busy_poll: true,
};

/// `uring-minwait`'s longest wait for a batch of completions, us.
pub(crate) const MIN_WAIT_US: u32 = 20;
/// `uring-napi`'s busy-poll timeout, us.
pub(crate) const NAPI_BUSY_POLL_US: u32 = 50;

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
    /// The family of I/O model the runtime drives its sockets with: tokio's (both runtimes)
    /// epoll through mio, monoio's io_uring; an external server's is not known.
    pub fn drives(self) -> Option<Family> {
        match self {
            PeerKind::Tokio | PeerKind::TokioMt => Some(Family::Epoll),
            PeerKind::Monoio => Some(Family::Uring),
            PeerKind::External => None,
        }
    }

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
