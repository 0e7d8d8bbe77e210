//! The results schema. Field names carry their unit; a figure is a number or an
//! `{"unavailable": "<reason>"}`, never a placeholder.
//!
//! This file is the run record ([`RunResults`]: what ran, where and with what, in which rounds,
//! and what it answered) and the schema's identity; a cell's record (its status, warnings,
//! re-runs and disturbance) is in schema/case.rs, and the figures a measured cell carries in
//! schema/figures.rs. Every type is named from here, `results::schema::NAME`, wherever its
//! file is.

mod case;
mod figures;

pub(crate) use case::SYSCALL_FLOOR_NS;
pub use case::{CaseResult, EqualLoadAt, NoiseRecord, Rerun, Status, Warning, EQUAL_LOAD_WORD};
pub(crate) use figures::DEFAULT_CLAIM_ALPHA;
pub use figures::{
    CaseFigures, CpuPerOp, IdleMemory, Intervals, LatencyIntervals, LatencyNs, Looks,
    SyscallsPerOp, UringPerOp,
};

use super::params::Params;
use crate::env::EnvReport;
use crate::measure::{clock::TimerCalibration, pin::CpuPlan};
use serde::{Deserialize, Serialize};

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
    /// cells (`Analysis::of`; absent in interrupted runs and older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
    /// The engine the run's load generator drove echo and HTTP with (`run --load-engine`).
    /// Absent: epoll (files written before engines). Files that kept it in `env` (before
    /// 2026-11-28) are read with it moved here (`results::store`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_engine: Option<crate::load::Engine>,
    /// The models `run --explain MODEL,...` named: each `--explain` caption explains one of
    /// them against its point's leader. Absent: `--explain` named none (the captions explain
    /// each point's leader against its runner-up), or was not given, or an older file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub explain_models: Vec<String>,
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
    /// At an equal-load point: how its rate was chosen (as its cells say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) equal_load: Option<EqualLoadAt>,
    /// 0-based.
    pub(crate) round: u32,
    /// The cells' labels in the order they ran.
    pub(crate) order: Vec<String>,
    /// The calibration probe taken just before the round.
    pub(crate) probe: crate::measure::calib::Probe,
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
