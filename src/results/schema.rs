//! The results schema. Field names carry their unit; a figure is a number or an
//! `{"unavailable": "<reason>"}`, never a placeholder.

use super::params::Params;
use super::spread::Spread;
use crate::env::EnvReport;
use crate::measure::{clock::TimerCalibration, pin::CpuPlan, Measured};
use serde::{Deserialize, Serialize};
use std::fmt;

/// 2: `ci95`'s percentiles under `latency_ns`, the open-loop rates per second,
/// `syscalls_per_op` a number or null, the storage suite's setting in `facts` rather than
/// `params` (`store::upgrade_v1` reads version 1).
pub const SCHEMA_VERSION: u32 = 2;

/// The `$id` of results.json's JSON Schema (`docs/results.schema.json`), which every
/// results.json names in its `$schema` field.
pub const SCHEMA_ID: &str = "urn:ringside:results:2";

fn schema_id() -> String {
    SCHEMA_ID.to_string()
}

/// The JSON Schema (draft 2020-12) of results.json, derived from these types as they are
/// serialized: `docs/results.schema.json` is this, pretty-printed (a test keeps it so).
pub fn json_schema() -> serde_json::Value {
    let mut s = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<RunResults>();
    s.insert("$id".into(), SCHEMA_ID.into());
    s.insert("title".into(), "ringside results.json".into());
    serde_json::to_value(s).expect("a schema is JSON")
}

/// One `ringside run`.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunResults {
    /// The `$id` of the JSON Schema this file follows (`docs/results.schema.json`); files
    /// written before it name none.
    #[serde(rename = "$schema", default = "schema_id")]
    pub schema: String,
    pub schema_version: u32,
    pub ringside: Version,
    /// The command line, argv[0] first.
    pub command: Vec<String>,
    /// UTC start time, RFC 3339.
    pub started_utc: String,
    /// False while running, and for a run stopped by Ctrl-C or an error.
    pub finished: bool,
    pub profile: String,
    pub plan: CpuPlan,
    pub timer: TimerCalibration,
    pub env: EnvReport,
    pub cases: Vec<CaseResult>,
    /// The hosts of a run that drove other hosts over SSH (`--server-host`): this one (the
    /// client) and each other, with its environment and network path. Empty otherwise (and in
    /// files written before it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostRecord>,
    /// Every round of every point, in run order: the models' shuffled order and the
    /// calibration probe taken before it (empty in files written before rounds were kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<RoundRecord>,
    /// What other programs and steal took of the plan's CPUs in a short look before the run
    /// (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_run: Option<NoiseRecord>,
    /// What each workload's figures mean, by id (`results::facts::FactsRecord`; absent in
    /// older files).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub workloads: std::collections::BTreeMap<String, super::facts::FactsRecord>,
    /// The parameters `run`'s knob flags (`--conns`, `--duration`, ...) set in every point
    /// that takes them, by param name, with the values given (ms for the times); the cells'
    /// `params` hold what each ran with. Absent without knob flags (and in older files).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub overrides: std::collections::BTreeMap<String, Vec<u64>>,
    /// How much the run answered at its equal-load points, computed when it finished from the
    /// cells (`analysis::answer`; absent in interrupted runs and older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
    /// The engine the run's load generator drove echo and HTTP with (`run --load-engine`).
    /// Absent: epoll (files written before engines). Files that kept it in `env` (before
    /// 2026-11-28) are read with it moved here (`results::store`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_engine: Option<crate::load::Engine>,
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

/// How much a run answered: of the comparisons of each model with its point's leader at the
/// equal-load points (server CPU per op, every model offered the same rate), how many were
/// decided (behind or ahead, or equivalent within 5%), and the largest, over those points, of
/// the smallest difference each could see (the median half-width of its claims' intervals).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Answer {
    /// Equal-load points ranked.
    pub points: u32,
    /// Model-vs-leader comparisons at those points.
    pub pairs: u32,
    /// Of them decided behind or ahead.
    pub decided: u32,
    /// Of them decided equivalent (within 5%).
    pub equivalent: u32,
    /// The worst point's smallest visible difference, percent (`None`: a point's claims had
    /// too few rounds to see any difference, or there was no point).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst_invisible_pct: Option<f64>,
}

impl Answer {
    /// Decided (either way, or equivalent) of compared, 0 to 1; `None` with nothing compared.
    pub fn rate(&self) -> Option<f64> {
        (self.pairs > 0).then(|| (self.decided + self.equivalent) as f64 / self.pairs as f64)
    }
}

impl RunResults {
    /// The knob flags' parameters as one line, `conns=100 duration_ms=250`; `None` without.
    pub fn overrides_text(&self) -> Option<String> {
        (!self.overrides.is_empty()).then(|| {
            self.overrides
                .iter()
                .map(|(k, v)| {
                    let v: Vec<String> = v.iter().map(u64::to_string).collect();
                    format!("{k}={}", v.join(","))
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
    }
}

/// One round of one point: every model measured once, in this order.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct RoundRecord {
    pub(crate) workload: String,
    pub(crate) params: Params,
    /// 0-based.
    pub(crate) round: u32,
    /// The cells' labels in the order they ran.
    pub(crate) order: Vec<String>,
    /// The calibration probe taken just before the round.
    pub(crate) probe: crate::measure::calib::Probe,
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

/// One host of a multi-host run.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HostRecord {
    /// `client` (this host: the load generator), `server` (`--server-host`, or this host when
    /// the load runs elsewhere), `load` (`--load-host`), `controller` (this host when both run
    /// elsewhere).
    pub(crate) role: String,
    /// As given (`root@10.0.0.2`); `here` for this host.
    pub(crate) host: String,
    /// Its `ringside --version` (the run refuses hosts whose version differs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ringside: Option<String>,
    /// Its `ringside env` (this host's is the run's `env`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) env: Option<EnvReport>,
    /// Its CPU plan (this host's is the run's `plan`; files written before 2026-11-28 kept it
    /// in `env.cpu_plan`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) plan: Option<CpuPlan>,
    /// Its network path toward the other side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) path: Option<crate::env::netpath::NetPath>,
    /// Why it could not take part (its cells failed with this).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Version {
    pub(crate) version: String,
    pub(crate) git: String,
}

impl Version {
    pub(crate) fn current() -> Version {
        Version {
            version: env!("CARGO_PKG_VERSION").to_string(),
            git: option_env!("RINGSIDE_GIT").unwrap_or("unknown").to_string(),
        }
    }
}

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
}

/// Less than any syscall costs on a CPU this runs on (the cheapest, `getppid`, takes 40 to 70
/// ns with no mitigations; 110 ns on the VM this was built on): a cell whose CPU per op is
/// under its syscalls per op times this did not read the CPU of every process it counted.
/// A floor for a consistency check, never a figure.
pub(crate) const SYSCALL_FLOOR_NS: f64 = 20.0;

impl CaseFigures {
    /// Whether the CPU read per op is below what its counted syscalls alone cost
    /// ([`Warning::CpuBelowSyscalls`]); false where syscalls were not counted.
    pub(crate) fn cpu_below_syscalls(&self) -> bool {
        self.syscalls_per_op
            .value()
            .is_some_and(|&s| s > 0.0 && self.cpu_ns_per_op.total < s * SYSCALL_FLOOR_NS)
    }
}

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
    pub(crate) explain: Option<Measured<super::explain::Explain>>,
}

impl CaseResult {
    /// What tells one cell from another: workload, label and params ("echo.rate uring
    /// conns=50 ..."). A run has each once; `compare` matches cells by it.
    pub(crate) fn key(&self) -> String {
        let p: Vec<String> = self
            .params
            .0
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let mut s = format!("{} {}", self.workload, self.label());
        if !p.is_empty() {
            s.push(' ');
            s.push_str(&p.join(" "));
        }
        s
    }

    /// Column label: the model, and its variant if any ("blocking/poll").
    pub fn label(&self) -> String {
        match &self.variant {
            Some(v) => format!("{}/{v}", self.model),
            None => self.model.clone(),
        }
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

fn is_false(v: &bool) -> bool {
    !*v
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

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
