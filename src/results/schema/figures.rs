//! The figures of a measured cell: its latency, throughput and CPU per op summarized over the
//! repetitions, the per-repetition values the claims are tested on, the intervals around them,
//! and the counters beside them (syscalls, io_uring's work, an idle connection's memory).

use super::SYSCALL_FLOOR_NS;
use crate::measure::Measured;
use crate::results::spread::Spread;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The figures of a measured cell.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CaseFigures {
    /// Per-op latency over every op of every repetition, timer overhead excluded.
    pub latency_ns: LatencyNs,
    /// Spread of the per-repetition median latency.
    pub run_p50_ns: Spread,
    /// Per-repetition throughput: ops / timed ns.
    pub ops_per_sec: Spread,
    pub(crate) cpu_ns_per_op: CpuPerOp,
    pub(crate) ctx_switches_per_op: f64,
    #[serde(flatten)]
    pub(crate) syscalls_per_op: SyscallsPerOp,
    /// io_uring's hidden work per op, from the kernel's io_uring tracepoints in the counting
    /// repetition (`measure::uring_trace`); only in cells of models on io_uring, and absent
    /// where they could not be counted (`uring_per_op_unavailable` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) uring_per_op: Option<UringPerOp>,
    /// Why an io_uring model's cell could not count io_uring's tracepoints; absent elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) uring_per_op_unavailable: Option<String>,
    /// `conn.idle`: what each idle connection the server held cost in memory; absent in
    /// other cells and at its points without idle connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) idle_memory: Option<IdleMemory>,
    pub(crate) ops_total: u64,
    /// Bytes moved per second of measured window (network suites: what the client received,
    /// HTTP's transfer/s); 0 where a workload counts no bytes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) bytes_per_sec: f64,
    /// CPU of the measured task(s) per second of measured window, in CPUs (1.0 = one CPU
    /// busy: a server's CPU%/100); 0 where unknown. Never above the CPUs those tasks may use:
    /// a reading above is capped and the cell warned `cpu_over_allowed`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) cpu_busy: f64,
    /// What the repetitions counted beside the figures (summed over them; a maximum stays a
    /// maximum; an open-loop cell's `offered_per_sec` and `achieved_per_sec`, per second, the
    /// mean over them): typed load, open-loop and wrk figures, and the model's own counters
    /// by name.
    pub(crate) counters: crate::measure::CellCounters,
    /// The merged HdrHistogram (V2 deflate, base64), so any percentile can be recomputed.
    pub(crate) histogram: String,
    /// Each measured repetition's median latency, ns, in run order (for significance tests in
    /// `ringside compare`; empty in files written before it was recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs_p50_ns: Vec<f64>,
    /// Each measured repetition's throughput, ops/s, in run order (empty in older files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) runs_ops_per_sec: Vec<f64>,
    /// Each measured repetition's CPU per op (all threads, ns), in run order: what equal-load
    /// rankings test for significance (empty in older files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) runs_cpu_ns_per_op: Vec<f64>,
    /// Each measured repetition's p99 latency, ns, in run order (empty in older files), and
    /// the fewest latency samples beyond it in any repetition: a p99 is claimed only with
    /// enough of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) runs_p99_ns: Vec<f64>,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub(crate) p99_tail_min: u64,
    /// Each measured repetition's figures per 100 ms of its window, in run order
    /// (`measure::timeline`): ops, the sum and the longest of their latencies, so a stall
    /// shows where it happened. Empty where the workload does not record them (micro,
    /// storage) and in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) runs_timeline: Vec<crate::measure::timeline::Timeline>,
    /// The significance level this cell's claims are judged at: 0.05, or a look's share of
    /// it where the point's rounds were adaptive (`stats::claims::ALPHA_FIRST_LOOK`, and
    /// `ALPHA_SECOND_LOOK` after rounds were added).
    #[serde(default = "default_alpha", skip_serializing_if = "is_default_alpha")]
    pub(crate) claim_alpha: f64,
    /// The sequential design its point's claims were looked at with: after every round from
    /// `first` to `last` (`stats::sequential`); absent where the rounds were fixed (and in
    /// older files), whose claims are judged once at `claim_alpha`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) looks: Option<Looks>,
    /// 95% bootstrap confidence intervals over the repetitions and the samples behind the
    /// percentiles (absent in files written before they were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95: Option<Intervals>,
}

/// 95% bootstrap confidence intervals of a cell's figures, resampling its repetitions
/// (`stats::bootstrap`): `[low, high]`, absent with fewer than two repetitions. Each is named
/// as the figure it bounds (`ci95.latency_ns.p99` bounds `latency_ns.p99`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Intervals {
    /// Latency samples behind the percentiles (every timed op of every repetition).
    pub samples: u64,
    /// Percentiles over all samples, each repetition resampled whole.
    #[serde(default, skip_serializing_if = "LatencyIntervals::is_empty")]
    pub latency_ns: LatencyIntervals,
    /// Medians over repetitions: of the per-run medians, of ops/s, of CPU per op (all
    /// threads, ns: `cpu_ns_per_op.total`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_p50_ns: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_per_sec: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ns_per_op: Option<(f64, f64)>,
    /// The median of the repetitions' p99s (`CaseFigures::p99_typical`, the p99 a claim
    /// states); absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_p99_ns: Option<(f64, f64)>,
}

/// The intervals of `latency_ns`'s percentiles, ns, under the same names.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct LatencyIntervals {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999: Option<(f64, f64)>,
}

impl LatencyIntervals {
    fn is_empty(&self) -> bool {
        *self == LatencyIntervals::default()
    }
}

impl Intervals {
    /// Samples beyond quantile `q` (0.99: the slowest 1%).
    pub(crate) fn tail(&self, q: f64) -> f64 {
        self.samples as f64 * (1.0 - q)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct LatencyNs {
    pub(crate) min: f64,
    pub p50: f64,
    pub(crate) p90: f64,
    pub(crate) p99: f64,
    pub(crate) p999: f64,
    pub(crate) max: f64,
    pub(crate) mean: f64,
    pub(crate) stddev: f64,
}

/// Syscalls per op, or why they were not counted: one number type, with the reason beside it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SyscallsPerOp {
    /// Syscalls per op (perf's `raw_syscalls:sys_enter` over the untimed repetition that
    /// counted them); null where they were not counted (`syscalls_per_op_unavailable` says
    /// why).
    syscalls_per_op: Option<f64>,
    /// Why syscalls were not counted; absent where they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    syscalls_per_op_unavailable: Option<String>,
}

impl SyscallsPerOp {
    pub(crate) fn value(&self) -> Option<&f64> {
        self.syscalls_per_op.as_ref()
    }
    /// The figure, or the reason it is missing.
    pub(crate) fn measured(&self) -> Measured<f64> {
        match (self.syscalls_per_op, &self.syscalls_per_op_unavailable) {
            (Some(v), _) => Measured::Value(v),
            (None, why) => Measured::unavailable(why.as_deref().unwrap_or("not counted")),
        }
    }
}

impl From<Measured<f64>> for SyscallsPerOp {
    fn from(m: Measured<f64>) -> SyscallsPerOp {
        match m {
            Measured::Value(v) => SyscallsPerOp {
                syscalls_per_op: Some(v),
                syscalls_per_op_unavailable: None,
            },
            Measured::Unavailable { unavailable } => SyscallsPerOp {
                syscalls_per_op: None,
                syscalls_per_op_unavailable: Some(unavailable),
            },
        }
    }
}

impl fmt::Display for SyscallsPerOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.measured().fmt(f)
    }
}

/// io_uring's work per op beside its syscalls, counted by the kernel's io_uring tracepoints
/// over the counting repetition's ops (raw counts: the cell's `uring_*` counters).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct UringPerOp {
    /// Requests punted to io-wq worker threads (`io_uring_queue_async_work`): work done off
    /// the submitting thread, whose CPU the cell's CPU includes.
    pub punted: f64,
    /// Completions posted (`io_uring_complete`; a multishot request posts several).
    pub completions: f64,
    /// Completions that found the CQ ring full (`io_uring_cqe_overflow`).
    pub cqe_overflows: f64,
    /// Task-work runs (`io_uring_task_work_run`, and `io_uring_local_work_run` for
    /// DEFER_TASKRUN rings).
    pub task_work_runs: f64,
}

/// What each idle connection cost in memory (`conn.idle`): each reading's change from before
/// the idle connections were opened to when all were held and had each answered one verified
/// echo (before the busy connections start), summed over the timed repetitions and divided
/// by the connections they held, bytes per connection. A reading that could not be taken in
/// some repetition is unavailable with the reason (`measure::memory`). Loopback puts both ends
/// of a connection on this machine: the `server_*` figures are the server's own, the
/// `machine_*` ones cover both ends and every other process at the time.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct IdleMemory {
    /// Idle connections held in each repetition.
    pub(crate) idle_conns: u64,
    /// The fewest of them still open and silent at the measured window's close, over the
    /// repetitions (the server held every one through the window when equal to
    /// `idle_conns`).
    pub(crate) live_at_close_min: u64,
    /// The server's resident memory (VmRSS of /proc/PID/status, summed over its processes).
    pub(crate) server_rss_bytes: Measured<f64>,
    /// Kernel memory charged to a memory cgroup holding the server alone
    /// (cgroup v1 `memory.kmem.usage_in_bytes`): slab objects of its sockets, files,
    /// dentries, epoll items, io_uring and page tables.
    pub(crate) server_kernel_bytes: Measured<f64>,
    /// Socket buffers charged to that cgroup (`memory.kmem.tcp.usage_in_bytes`).
    pub(crate) server_sock_buffer_bytes: Measured<f64>,
    /// Machine-wide: the TCP socket slab caches (`TCP`, `sock_inode_cache` of
    /// /proc/slabinfo), both ends of each connection.
    pub(crate) machine_sock_slab_bytes: Measured<f64>,
    /// Machine-wide: TCP socket buffer pages (/proc/net/sockstat `TCP: mem`), both ends.
    pub(crate) machine_tcp_buffer_bytes: Measured<f64>,
}

/// CPU per op, ns: `total` is exact (CPU-time clocks); `user`/`sys` split it by the kernel's
/// tick samples and are unavailable when too few ticks fell in the runs.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct CpuPerOp {
    pub(crate) total: f64,
    pub(crate) user: Measured<f64>,
    pub(crate) sys: Measured<f64>,
}

/// A repetition's p99 at least this many times its cell's typical one is a spike: named
/// beside the cell's figures ([`CaseFigures::p99_spike`]).
pub(crate) const SPIKE_FACTOR: f64 = 3.0;

impl CaseFigures {
    /// The p99 of the cell's typical repetition: the median of its repetitions' p99s, the one
    /// p99 a claim states (a rate sweep's knee, the p99 rankings test the repetitions' p99s);
    /// the pooled p99 (`latency_ns.p99`, over every repetition's samples) where the file has
    /// no per-repetition p99s.
    pub(crate) fn p99_typical(&self) -> f64 {
        if self.runs_p99_ns.is_empty() {
            self.latency_ns.p99
        } else {
            crate::results::spread::median(&self.runs_p99_ns)
        }
    }

    /// The repetition whose p99 was a spike: its p99 at least [`SPIKE_FACTOR`] times the
    /// typical one (`(its p99, repetitions with a spike, repetitions)`: the largest of them),
    /// to name beside the cell's figures; `None` with fewer than three repetitions (no typical
    /// to stand out from) or no spike.
    pub(crate) fn p99_spike(&self) -> Option<(f64, usize, usize)> {
        let runs = &self.runs_p99_ns;
        if runs.len() < 3 {
            return None;
        }
        let typical = self.p99_typical();
        let spikes: Vec<f64> = runs
            .iter()
            .copied()
            .filter(|p| typical > 0.0 && *p >= SPIKE_FACTOR * typical)
            .collect();
        let top = spikes
            .iter()
            .copied()
            .fold(None, |m: Option<f64>, p| Some(m.map_or(p, |m| m.max(p))))?;
        Some((top, spikes.len(), runs.len()))
    }

    /// Whether the CPU read per op is below what its counted syscalls alone cost
    /// ([`super::Warning::CpuBelowSyscalls`]); false where syscalls were not counted.
    pub(crate) fn cpu_below_syscalls(&self) -> bool {
        self.syscalls_per_op
            .value()
            .is_some_and(|&s| s > 0.0 && self.cpu_ns_per_op.total < s * SYSCALL_FLOOR_NS)
    }
}

/// The looks of a sequential design (`stats::sequential`): a point's claims were looked at after
/// every round from `first` to `last` (inclusive). A point measured with a fixed number of rounds
/// has none (its claims are judged once).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
pub struct Looks {
    /// The first round after which the claims were looked at.
    pub first: u32,
    /// The last round the point could have run.
    pub last: u32,
}

impl Looks {
    /// The looks of a point that may run up to `last` rounds, the first at `first` (at least
    /// one look; `first` at most `last`).
    pub(crate) fn new(first: u32, last: u32) -> Looks {
        let last = last.clamp(1, crate::profile::MAX_ROUNDS);
        Looks {
            first: first.clamp(1, last),
            last,
        }
    }

    /// The design covering both (the earliest first look, the latest last): judging a point's
    /// claims by it is valid for either, as more looks only make each claim harder.
    pub(crate) fn union(self, o: Looks) -> Looks {
        Looks::new(self.first.min(o.first), self.last.max(o.last))
    }
}

/// The significance level of every claim unless a cell says otherwise (`stats::claims::ALPHA`
/// is this; it lives here so that the schema's default needs nothing from `stats`).
pub(crate) const DEFAULT_CLAIM_ALPHA: f64 = 0.05;

fn default_alpha() -> f64 {
    DEFAULT_CLAIM_ALPHA
}

fn is_default_alpha(v: &f64) -> bool {
    *v == DEFAULT_CLAIM_ALPHA
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}
