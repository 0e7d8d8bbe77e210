//! `ringside run --explain`: where a cell's CPU went, sampled in an untimed repetition of its
//! own (`crosscheck::perf` records and groups; `analysis::explain` compares; the exporters draw).
//! Stored per cell as `explain`: a breakdown, or `{"unavailable": "<reason>"}` where perf could
//! not sample. Absent in files written without `--explain` (and before it existed).

use serde::{Deserialize, Serialize};

/// The groups, in the order a stacked bar draws them: JSON key and label. Every sample falls
/// in exactly one.
pub const GROUPS: [(&str, &str); 11] = [
    ("user", "user space"),
    ("syscall", "syscall entry/exit and other syscall work"),
    ("tcp_ip", "TCP/IP and loopback transmit"),
    ("softirq", "softirq"),
    ("scheduler", "scheduler and wake-ups"),
    ("io_uring", "io_uring task work and io-wq"),
    ("copies", "copies to/from user"),
    ("lock_slow_path", "lock slow paths"),
    ("other_kernel", "other kernel"),
    ("other_processes", "other processes (not the measured ones)"),
    ("idle", "idle"),
];

/// A group's label ("lock slow paths") from its key; an unknown key (a newer file) as itself.
pub(crate) fn label(key: &str) -> &str {
    GROUPS
        .iter()
        .find(|(k, _)| *k == key)
        .map_or(key, |(_, l)| l)
}

/// One name's share of the sampled CPU.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Share {
    pub(crate) name: String,
    /// Of the samples, 0..=1.
    pub(crate) fraction: f64,
}

/// Where a cell's sampled CPU went.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Explain {
    /// cpu-clock samples (about 4,000 per second per CPU) in the window on the sampled CPUs.
    pub(crate) samples: u64,
    /// The CPUs sampled: the server's (network) or the measured thread's (storage).
    pub(crate) cpus: Vec<u32>,
    /// The window the samples were kept from, ns.
    pub(crate) window_ns: u64,
    /// Every group by key ([`GROUPS`]) with its fraction, in [`GROUPS`] order (0: no sample).
    /// The fractions sum to 1. `other_processes`: programs other than the measured ones that
    /// shared the sampled CPUs (user and kernel mode; kernel threads are grouped by their
    /// frames).
    pub(crate) groups: Vec<Share>,
    /// The leaf kernel symbols with the most samples, most first (at most 10).
    pub(crate) top_kernel: Vec<Share>,
    /// The leaf user-space symbols of the measured programs (the samples of the `user`
    /// group) with the most samples, most first (at most 10), as perf demangles them; a leaf
    /// perf could not name (a binary without symbols) is in `user_unnamed` instead. Absent in
    /// files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) top_user: Option<Vec<Share>>,
    /// Of the samples, those in the measured programs' user space whose leaf had no symbol,
    /// 0..=1 (a stripped binary's are all here). Absent where `top_user` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) user_unnamed: Option<f64>,
}

impl Explain {
    /// A group's fraction of the samples (0 when absent).
    pub(crate) fn fraction(&self, key: &str) -> f64 {
        self.groups
            .iter()
            .find(|s| s.name == key)
            .map_or(0.0, |s| s.fraction)
    }
}
