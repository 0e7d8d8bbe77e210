//! A cell's record: which workload, model and point it is, whether it was measured
//! ([`Status`]), what a reader must know before trusting it ([`Warning`], each with its advice),
//! and what happened while it ran (repetitions run again, the disturbance around them). Its
//! figures, when it was measured, are [`super::CaseFigures`].

use super::CaseFigures;
use crate::measure::Measured;
use crate::results::params::Params;
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Measured,
    Unavailable,
    NotApplicable,
    Failed,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Measured => "measured",
            Status::Unavailable => "unavailable",
            Status::NotApplicable => "n/a",
            Status::Failed => "failed",
        })
    }
}

/// Something about a cell a reader must know before trusting it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Warning {
    /// The measured thread and its helper (SQPOLL poller, load generator) share a CPU.
    SharedCpus,
    /// Repetitions disagree: per-run medians spread by more than 10% (relative MAD).
    HighSpread,
    /// The load generator, not the server, was saturated.
    ClientBound,
    /// Server and load generator were both saturated: the figure is the server at capacity,
    /// with a load generator that had no headroom left.
    BothSaturated,
    /// An independent load generator (wrk) measured a requests/s more than 5% away from
    /// ringside's on the same server and pinning (its figure is in the `wrk_*` counters).
    LoadgenDisagrees,
    /// wrk measured fewer requests/s than ringside's load generator while it used 90%+ of its
    /// one CPU in every repetition: wrk's figure is wrk's limit.
    WrkBound,
    /// The CPU read for the cell's tasks exceeded what the CPUs they may use could give in
    /// the measured time (counter `cpu_over_allowed_ns`): an accounting error, capped.
    CpuOverAllowed,
    /// The warm-up gave up at the message timeout with connections whose first message was
    /// never answered (counter `load_unsettled_conns`): the window opened on a server that had
    /// not yet served every connection.
    WarmupUnsettled,
    /// NAPI busy polling was registered but sockets the server measured carried NAPI id 0
    /// (counter `server_napi_id_zero`): busy polling had no device queue to poll for them.
    NoNapiId,
    /// Other programs or steal took more than 5% of the plan's CPUs in a repetition, and its
    /// re-run was disturbed too (the cell's `disturbance` says how much, and who).
    Disturbed,
    /// A repetition's throughput fell under half of the others' median, and its re-run did
    /// too (`reruns` names it): one of the figures is a stall, not the model's.
    Stalled,
    /// The CPU read per op is less than its counted syscalls could have taken at
    /// [`SYSCALL_FLOOR_NS`] each: the syscalls were counted in processes whose CPU was not
    /// read (a child that left the server's process group, or one reaped by nobody).
    CpuBelowSyscalls,
    /// UDP datagrams were lost in the window (counter `dgram_lost`: not echoed within the
    /// loss timeout; `dgram_send_failed`: refused by the client's own kernel): never ops.
    DatagramsLost,
    /// Echoes of one datagram arrived more than once (counter `dgram_duplicates`), off
    /// loopback (on loopback only the server can duplicate one, and the cell fails): the
    /// network or the server duplicated them; each counted once as an op.
    DatagramsDuplicated,
    /// Echoes arrived out of their flow's order (counter `dgram_reordered`): a server with
    /// several threads, or the network, reordered them; each is still an op.
    DatagramsReordered,
}

/// Less than any syscall costs on a CPU this runs on (the cheapest, `getppid`, takes 40 to 70
/// ns with no mitigations; 110 ns on the VM this was built on): a cell whose CPU per op is
/// under its syscalls per op times this did not read the CPU of every process it counted.
/// A floor for a consistency check, never a figure.
pub(crate) const SYSCALL_FLOOR_NS: f64 = 20.0;

impl Warning {
    /// What it means and what to do.
    pub(crate) fn advice(self) -> &'static str {
        match self {
            Warning::SharedCpus => {
                "the measured side (thread or server) shared CPUs with its helper or load \
                 generator, so its figures include their contention; give each its own CPUs \
                 (--cpus A,B, or --server-cpus and --load-cpus), or read the cell as the cost of \
                 sharing (a cores sweep past the machine's spare CPUs)"
            }
            Warning::HighSpread => {
                "repetitions disagree by more than 10%; use --profile full or a quieter machine"
            }
            Warning::ClientBound => {
                "the load generator was saturated (its threads busy, or its CPUs with no idle \
                 left) while the server had idle CPU: this figure is the client's limit; give \
                 the load generator more CPUs"
            }
            Warning::BothSaturated => {
                "server and load generator both ran at 90%+ CPU (or the load CPUs had no idle \
                 left): the server was at capacity, but the load generator had no headroom; \
                 more CPUs would separate them"
            }
            Warning::LoadgenDisagrees => {
                "wrk and ringside's load generator disagree by more than 5% on this server; \
                 compare the wrk_* counters and check which one was saturated"
            }
            Warning::CpuOverAllowed => {
                "more CPU time was read than the cell's CPUs could give in its wall time (see \
                 cpu_over_allowed_ns): the CPU figures are capped at that limit; please report it"
            }
            Warning::WarmupUnsettled => {
                "the server had not answered every connection's first message by the message \
                 timeout, so the window opened with some connections never served \
                 (load_unsettled_conns); the figures cover the connections it did serve: use \
                 fewer connections, or give the server more CPU"
            }
            Warning::DatagramsLost => {
                "datagrams were lost in the window (dgram_lost: not echoed within the loss \
                 timeout, e.g. dropped by a full socket buffer or a busy server, whose own \
                 drops are server_send_errors and server_no_buffers; dgram_send_failed: refused \
                 by the client's kernel): they are not ops, so the rate counts only what came \
                 back; offer less, or give the server more CPU"
            }
            Warning::DatagramsDuplicated => {
                "echoes of one datagram arrived more than once (dgram_duplicates) over a path \
                 that is not loopback: the network or the server duplicated them; each counted \
                 once, but the server's CPU per op includes what it spent on the copies if they \
                 were its own"
            }
            Warning::DatagramsReordered => {
                "echoes arrived out of their flow's order (dgram_reordered): a server with \
                 several threads or the network reordered them; they are ops, but a protocol \
                 that needs order would have to wait for them"
            }
            Warning::NoNapiId => {
                "busy polling was registered, but sockets the server served carried NAPI id 0 \
                 (server_napi_id_zero of server_napi_socks): it had no device queue to poll \
                 for them, so the row measured a spinning wait, not busy polling; serve over a \
                 NIC, or a veth pair with GRO on and TSO off on the sender"
            }
            Warning::Disturbed => {
                "other programs (or the hypervisor's steal) took more than 5% of the plan's \
                 CPUs during a repetition, even after it was run again: the figures include \
                 their interference; `compare` does not compare this cell; rerun on a quiet \
                 machine (see the cell's disturbance for who)"
            }
            Warning::Stalled => {
                "a repetition stalled (under half of the others' throughput) and stalled again \
                 when it was run again: claims about this cell are made from its rounds as \
                 they are, the stall included"
            }
            Warning::CpuBelowSyscalls => {
                "the CPU read per op is less than its counted syscalls alone take: the server ran \
                 work in processes whose CPU was not read (a child that left its process group, \
                 or one nobody reaped); its CPU figures are too low: keep a contender's \
                 processes in its process group and reap its children"
            }
            Warning::WrkBound => {
                "wrk saturated its CPU and measured fewer requests/s than ringside's load \
                 generator: its figure is wrk's own limit, not the server's (benches/loadgen_vs_wrk.sh \
                 compares the two with the server as the bottleneck)"
            }
        }
    }
}

/// What marks an equal-load point in a cell's key, a point's text and a cell selector
/// ("conns=50 equal-load"): one word, so that keys stay `k=v` words split at spaces.
pub const EQUAL_LOAD_WORD: &str = "equal-load";

/// How an equal-load point's offered rate was chosen: a share of the slowest model's capacity
/// measured at the capacity point with the same params (the rate itself: `rate_per_sec`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct EqualLoadAt {
    /// The share of the slowest model's capacity (0.3: 30%).
    pub of_slowest: f64,
}

/// One cell: a workload, a model, a parameter point.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CaseResult {
    pub workload: String,
    pub model: String,
    /// A sub-series of the model (fd scaling's `poll` and `select` under `blocking`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// The sweep's knobs at this point: what tells it from the workload's other points.
    pub params: Params,
    /// At an equal-load point: how its offered rate was chosen. Such a point has its capacity
    /// point's params; this tells the two apart (keys and headings say `equal-load`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equal_load: Option<EqualLoadAt>,
    /// What the cell ran on that no sweep varies: the storage suite's filesystem (`fs`),
    /// `device`, `o_direct` support and `page_cache` state. Absent where none.
    #[serde(default, skip_serializing_if = "Params::is_empty")]
    pub facts: Params,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What one op is.
    pub(crate) op: String,
    /// The model's knobs, as configured for this cell.
    pub(crate) knobs: serde_json::Value,
    /// The CPU the SQPOLL poller was pinned to, for SQPOLL models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sqpoll_cpu: Option<u32>,
    pub(crate) warmups: u32,
    pub(crate) repetitions: u32,
    /// At an equal-load point: the offered rate, ops/s over all connections, that the runner
    /// derived from the slowest model's capacity at the capacity point (not a param: it
    /// differs from run to run, and `compare` matches cells by params).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_sec: Option<u64>,
    /// At a point of a cores sweep with N > 1 server threads: throughput / (N x the same
    /// model's throughput with one thread), medians of repetitions (1.0: linear scaling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) scaling_efficiency: Option<f64>,
    /// A capacity point measured once per model as a probe: its load generator had no
    /// headroom over the servers (fewer than two models had any), so its figure is the load
    /// generator's limit, which sets the equal-load rate and is not ranked (`runner`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) capacity_probe: bool,
    /// When each timed repetition started, ns since the Unix epoch. The repetitions of the
    /// models at one point run interleaved (A B C A B C ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) runs_started_unix_ns: Vec<u64>,
    /// Per timed repetition (= round), this cell's place (0-based) in the round's shuffled
    /// order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) runs_order: Vec<u32>,
    /// Repetitions run again (disturbed, or stalled), each once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) reruns: Vec<Rerun>,
    /// Other programs' and steal time on the plan's CPUs over the kept repetitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) disturbance: Option<NoiseRecord>,
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub figures: Option<CaseFigures>,
    #[serde(default)]
    pub(crate) warnings: Vec<Warning>,
    /// `run --explain`: where the CPU went in an untimed repetition of its own (network and
    /// storage cells), or why it could not be sampled. Absent without `--explain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) explain: Option<Measured<crate::results::explain::Explain>>,
}

impl CaseResult {
    /// What tells one cell from another: workload, label and params ("echo.rate uring
    /// conns=50 ..."). A run has each once; `compare` matches cells by it.
    pub(crate) fn key(&self) -> String {
        let p = self.params_text();
        let mut s = format!("{} {}", self.workload, self.label());
        if !p.is_empty() {
            s.push(' ');
            s.push_str(&p);
        }
        s
    }

    /// The point the cell belongs to: its workload and params, every model's cell there
    /// ("echo.rate conns=50 ..."; `compare` groups a point's cells by it, and a file's check
    /// counts them).
    pub(crate) fn point_key(&self) -> String {
        format!("{} {}", self.workload, self.params_text())
    }

    /// Its params as keys write them: "conns=50 msg_bytes=64", in the params' order, then
    /// [`EQUAL_LOAD_WORD`] at an equal-load point.
    pub(crate) fn params_text(&self) -> String {
        let mut p: Vec<String> = self
            .params
            .0
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        p.extend(self.equal_load.map(|_| EQUAL_LOAD_WORD.to_string()));
        p.join(" ")
    }

    /// Whether `other` is a cell of the same point: same workload, params and kind of point
    /// (an equal-load point has its capacity point's params).
    pub(crate) fn same_point(&self, other: &CaseResult) -> bool {
        self.workload == other.workload
            && self.params == other.params
            && self.equal_load.is_some() == other.equal_load.is_some()
    }

    /// Column label: the model, and its variant if any ("blocking/poll").
    pub fn label(&self) -> String {
        match &self.variant {
            Some(v) => format!("{}/{v}", self.model),
            None => self.model.clone(),
        }
    }
}

fn is_false(v: &bool) -> bool {
    !*v
}

/// Disturbance summed over a span: other programs' and steal time on the plan's CPUs.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct NoiseRecord {
    /// (other programs' + steal) / (wall x the plan's CPUs).
    pub(crate) share: f64,
    pub(crate) others_ns: u64,
    pub(crate) steal_ns: u64,
    pub(crate) wall_ns: u64,
    /// The other program that took the most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) top: Option<String>,
    /// Repetitions (of a cell) that stayed disturbed after their one re-run.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub(crate) disturbed_repetitions: u32,
    /// Other ringside processes running at the time (another run on the same CPUs).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub(crate) other_ringside: u32,
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

impl NoiseRecord {
    pub(crate) fn of(d: &crate::measure::disturb::Disturbance) -> NoiseRecord {
        NoiseRecord {
            share: d.share(),
            others_ns: d.others_ns,
            steal_ns: d.steal_ns,
            wall_ns: d.wall_ns,
            top: d
                .top
                .as_ref()
                .map(|(c, ns)| format!("{c} ({:.1} ms)", *ns as f64 / 1e6)),
            disturbed_repetitions: 0,
            other_ringside: 0,
        }
    }
}

/// A repetition measured again: why, and what the first attempt gave.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Rerun {
    /// The round (0-based) whose repetition was run again.
    pub(crate) round: u32,
    /// "disturbed: ..." or "stall: ...".
    pub(crate) why: String,
}
