//! Workloads: each one sets up, runs one measured repetition, and tears down. Repetitions,
//! warm-up, timeouts and printing belong to the runner; models belong to `io`.

pub mod micro;
pub mod net;
pub mod storage;

use crate::error::CaseError;
use crate::measure::{pin::CpuPlan, Meter, Sample};
use crate::model::ModelSpec;
use crate::profile::Profile;

/// A workload: one row of `registry::WORKLOADS`.
pub trait Workload: Sync {
    /// Stable dotted id used on the CLI and in JSON: "micro.pipe".
    fn id(&self) -> &'static str;
    /// One line for `ringside list` and the report.
    fn about(&self) -> &'static str;
    /// What one op is, shown beside every table ("write + read of one message").
    fn op(&self) -> &'static str;
    /// Whether a model takes part, and if not, why ("n/a: <why>", not a failure).
    fn accepts(&self, m: &ModelSpec) -> Result<(), String>;
    /// Parameter points for a profile and model (message sizes, fd counts, batch sizes).
    fn points(&self, profile: Profile, m: &ModelSpec) -> Vec<Point>;
    /// The repetitions this workload wants out of the profile's budget (default: as given).
    /// Storage repetitions rewrite whole files, so the storage suite takes fewer.
    fn budget(&self, b: crate::profile::Budget) -> crate::profile::Budget {
        b
    }
    /// One repetition: set up, measure `ctx.ops` ops in one window, tear down.
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError>;
}

/// One parameter point of a case. `variant` names a sub-series of the same model (e.g. the
/// `poll` and `select` references of fd scaling run by the blocking model).
#[derive(Clone, Debug)]
pub struct Point {
    pub params: Params,
    pub variant: Option<&'static str>,
    /// An equal-load point: every model is driven at the same offered rate, `fraction` of the
    /// slowest model's measured capacity at the point whose params are `capacity_of` (a
    /// closed-loop point of the same workload, listed before this one). The runner measures
    /// the capacity point first, passes the rate in [`Ctx::offered_rate`] and records it as
    /// the param `rate_per_sec`.
    pub equal_load: Option<EqualLoad>,
}

/// See [`Point::equal_load`].
#[derive(Clone, Debug, PartialEq)]
pub struct EqualLoad {
    /// Of the slowest model's capacity, in (0, 1].
    pub fraction: f64,
    /// The params of the closed-loop point whose capacity sets the rate.
    pub capacity_of: Params,
}

impl Point {
    pub fn new(params: Params) -> Point {
        Point {
            params,
            variant: None,
            equal_load: None,
        }
    }
}

pub use crate::results::Params;

/// What a repetition gets from the runner.
pub struct Ctx<'a> {
    /// Ops to measure in this repetition.
    pub ops: u64,
    /// Ops run before the window opens, to fault in buffers and warm caches.
    pub warm_ops: u64,
    pub plan: &'a CpuPlan,
    pub meter: &'a Meter,
    /// This repetition counts syscalls instead of timing: its latencies are discarded.
    pub count_syscalls: bool,
    /// The storage suite's work directory and cache policy (`None`: no storage workload).
    pub storage: Option<&'a storage::StorageCtx>,
    /// The run's external contenders (`--contender`): the commands of the `ext:` models.
    pub contenders: &'a crate::model::Catalog,
    /// At an equal-load point ([`Point::equal_load`]): the offered rate, requests/s over all
    /// connections, that the runner derived from the capacity point. `None` elsewhere.
    pub offered_rate: Option<f64>,
}

impl Ctx<'_> {
    /// Opens the repetition's measured window.
    pub fn window(&self) -> crate::measure::Window<'_> {
        self.meter.window(self.count_syscalls)
    }
}
