//! Workloads: each one sets up, runs one measured repetition, and tears down. Repetitions,
//! warm-up, timeouts and printing belong to the runner; models belong to `io`.

pub(crate) mod micro;
pub mod net;
pub mod storage;

use crate::error::CaseError;
use crate::measure::{pin::CpuPlan, Meter, Sample};
use crate::model::ModelSpec;
use crate::profile::Profile;
use crate::results::facts::{self, Facts, Units};

/// What a workload measures, which decides its defaults: how its repetitions are budgeted
/// ([`Workload::budget`]) and which CPU plans its servers take ([`Workload::accepts_on`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A loop on the measured thread (`micro.*`).
    Micro,
    /// A server driven over sockets by the load generator (echo, HTTP, pubsub, stream).
    Net,
    /// Files in the run's work directory (`storage.*`).
    Storage,
}

/// A workload's own range of a knob flag's parameter (inclusive; `None`: the flag's range).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// `msg_bytes` (`--msg-bytes`).
    pub msg_bytes: Option<(u64, u64)>,
}

/// A workload: one row of `registry::WORKLOADS`.
pub trait Workload: Sync {
    /// Stable dotted id used on the CLI and in JSON: "micro.pipe".
    fn id(&self) -> &'static str;
    /// What it measures: its defaults follow from it.
    fn kind(&self) -> Kind;
    /// One line for `ringside list` and the report.
    fn about(&self) -> &'static str;
    /// What one op is, shown beside every table ("write + read of one message").
    fn op(&self) -> &'static str;
    /// Whether a model takes part, and if not, why ("n/a: <why>", not a failure).
    fn accepts(&self, m: &ModelSpec) -> Result<(), String>;
    /// Parameter points for a profile and model (message sizes, fd counts, batch sizes).
    fn points(&self, profile: Profile, m: &ModelSpec) -> Vec<Point>;
    /// [`Workload::points`] under the run's CPU plan: a sweep over server threads depends on
    /// how many CPUs the plan gives the server (default: the plan does not matter).
    fn points_on(&self, profile: Profile, m: &ModelSpec, _plan: &CpuPlan) -> Vec<Point> {
        self.points(profile, m)
    }
    /// [`Workload::accepts`] under the run's CPU plan (default: the plan does not matter).
    fn accepts_on(&self, m: &ModelSpec, plan: &CpuPlan) -> Result<(), String> {
        match self.kind() {
            Kind::Net => self.accepts(m).and(net::echo::accepts_on_plan(m, plan)),
            Kind::Micro | Kind::Storage => self.accepts(m),
        }
    }
    /// Parameters its points leave out unless asked (an `Option` field of its args, set by
    /// `run`'s knob flags through [`Point::set`]); a knob flag is taken by a workload whose
    /// points carry its parameter or that lists it here (default: none).
    fn optional_params(&self) -> &'static [&'static str] {
        &[]
    }
    /// What it accepts of a knob flag narrower than the flag's own range (default: the
    /// flag's): `run` refuses a value outside it before anything runs, naming this workload
    /// and its range, where every cell would fail.
    fn limits(&self) -> Limits {
        Limits::default()
    }
    /// Whether `ringside run` without a selection runs it (default: yes). A workload whose
    /// quick profile does not fit the default run's time budget runs when named (its id; its
    /// suite's name only where no workload of the suite runs by default: `plan::left_out`).
    fn by_default(&self) -> bool {
        true
    }
    /// Whether it picks its own models (the ablation ladders: their rungs): without
    /// `--models` it runs every row it takes, not the families' leaders (`plan::expand`).
    fn own_models(&self) -> bool {
        false
    }
    /// The load engines (`run --load-engine`) its driver runs on (default: both); `run`
    /// refuses another for it.
    fn load_engines(&self) -> &'static [crate::load::Engine] {
        &[crate::load::Engine::Epoll, crate::load::Engine::Uring]
    }
    /// The repetitions this workload wants out of the profile's budget (default: as given).
    /// Storage repetitions rewrite whole files, so the storage suite takes fewer.
    fn budget(&self, b: crate::profile::Budget) -> crate::profile::Budget {
        match self.kind() {
            Kind::Micro => crate::profile::Budget {
                extra_rounds: b.extra_micro_rounds(),
                ..b
            },
            Kind::Net => net::cell::budget(b),
            Kind::Storage => storage::storage_budget(b),
        }
    }
    /// Whether its load generator can run on other hosts (`run --load-host`): its exchanges
    /// travel as a `load::Wire` (echo and HTTP; default: no).
    fn remote_load(&self) -> bool {
        false
    }
    /// What its figures mean, for the reports (`results::facts`): by default its kind's
    /// (bars; a network workload's ops are messages, in closed loop, ranked by throughput).
    fn facts(&self) -> Facts {
        match self.kind() {
            Kind::Micro => Facts::LOCAL,
            Kind::Net => Facts::net(
                Units::MESSAGES,
                facts::ChartSpec {
                    verdict: facts::Metric::OpsPerSec,
                    ..facts::BARS
                },
            ),
            Kind::Storage => Facts::STORAGE,
        }
    }
    /// One repetition: set up, measure `ctx.ops` ops in one window, tear down.
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError>;
    /// How point `p`'s timed repetitions are made of interleaved slices (`runner`: a round
    /// starts one server per model, drives each in turn for one slice at a time until each
    /// has had its slices, then stops them): open-loop network points, whose offered rate is
    /// the same in every slice. `None` (the default): each repetition runs whole.
    fn slices(&self, _p: &Point) -> Option<net::cell::Slicing> {
        None
    }
    /// Starts model `m`'s server for a round of slices of point `p` (where [`Workload::slices`]).
    fn start_live(
        &self,
        _ctx: &Ctx<'_>,
        _m: &ModelSpec,
        _p: &Point,
    ) -> Result<net::cell::Live, CaseError> {
        Err(CaseError::Failed(anyhow::anyhow!(
            "this workload's repetitions are not sliced"
        )))
    }
    /// One slice of point `p` against `live`, shaped as [`Workload::slices`] says.
    fn slice(
        &self,
        _ctx: &Ctx<'_>,
        _live: &mut net::cell::Live,
        _p: &Point,
        _slicing: net::cell::Slicing,
    ) -> Result<Sample, CaseError> {
        Err(CaseError::Failed(anyhow::anyhow!(
            "this workload's repetitions are not sliced"
        )))
    }
}

/// One parameter point of a case. `variant` names a sub-series of the same model (e.g. the
/// `poll` and `select` references of fd scaling run by the blocking model).
///
/// A workload's parameters are a struct of its own ([`Args`]), made by its `points` and read
/// as fields by its `run_once` ([`Point::args`]): a parameter the workload forgot to set is a
/// compile error. `params` is what the results record (the args under their serde names, over
/// a base such as the storage suite's filesystem); nothing reads a figure back from it.
#[derive(Clone, Debug)]
pub struct Point {
    pub params: Params,
    /// What the point runs on that is not one of its parameters (the storage suite's
    /// filesystem, device, O_DIRECT and page-cache state): recorded as the cell's `facts`.
    pub(crate) facts: Params,
    args: Option<ArgsBox>,
    pub(crate) variant: Option<&'static str>,
    /// An equal-load point: every model is driven at the same offered rate, `fraction` of the
    /// slowest model's measured capacity at the point whose params are `capacity_of` (a
    /// closed-loop point of the same workload, listed before this one). The runner measures
    /// the capacity point first, passes the rate in [`Ctx::offered_rate`] and records it in
    /// the cell's `rate_per_sec`.
    pub equal_load: Option<EqualLoad>,
    /// A point of a sweep over server threads: the runner records its scaling efficiency
    /// against the one-thread point ([`Scaling`]).
    pub(crate) scaling: Option<Scaling>,
}

/// A point measured with `threads` server threads, whose one-thread counterpart (same
/// workload and model) has the params `base`: its scaling efficiency is throughput / (threads
/// x the base's throughput), recorded by the runner as `scaling_efficiency`.
#[derive(Clone, Debug, PartialEq)]
pub struct Scaling {
    pub(crate) threads: u32,
    pub(crate) base: Params,
}

/// See [`Point::equal_load`].
#[derive(Clone, Debug, PartialEq)]
pub struct EqualLoad {
    /// Of the slowest model's capacity, in (0, 1].
    pub fraction: f64,
    /// The params of the closed-loop point whose capacity sets the rate.
    pub capacity_of: Params,
}

/// A workload's typed parameters: any `Serialize` struct (its field names are the recorded
/// param names) that reads back from them (`Deserialize`: `run --conns` and the other knob
/// flags remake a point's args from its params with one of them replaced, [`Point::set`]).
pub(crate) trait Args:
    serde::Serialize + serde::de::DeserializeOwned + std::any::Any + Send + Sync
{
}
impl<T: serde::Serialize + serde::de::DeserializeOwned + std::any::Any + Send + Sync> Args for T {}

#[derive(Clone)]
struct ArgsBox {
    args: std::sync::Arc<dyn std::any::Any + Send + Sync>,
    /// Makes the same type of args from params (`remake::<A>`).
    remake: fn(serde_json::Value) -> Result<ArgsBox, String>,
}

fn remake<A: Args>(v: serde_json::Value) -> Result<ArgsBox, String> {
    serde_json::from_value::<A>(v)
        .map(ArgsBox::of)
        .map_err(|e| e.to_string())
}

impl ArgsBox {
    fn of<A: Args>(a: A) -> ArgsBox {
        ArgsBox {
            args: std::sync::Arc::new(a),
            remake: remake::<A>,
        }
    }
}

impl std::fmt::Debug for ArgsBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Args")
    }
}

impl Point {
    /// What its cells record of [`Point::equal_load`] (`CaseResult::equal_load`).
    pub(crate) fn equal_load_at(&self) -> Option<crate::results::EqualLoadAt> {
        self.equal_load
            .as_ref()
            .map(|e| crate::results::EqualLoadAt {
                of_slowest: e.fraction,
            })
    }

    /// A point with recorded params only (workloads not yet typed, and tests).
    pub(crate) fn new(params: Params) -> Point {
        Point {
            params,
            facts: Params::new(),
            args: None,
            variant: None,
            equal_load: None,
            scaling: None,
        }
    }

    /// A point whose params are `args`, recorded under their serde names.
    pub(crate) fn of<A: Args>(args: A) -> Point {
        let mut params = Params::new();
        if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(&args) {
            params.0.extend(m);
        }
        Point {
            params,
            facts: Params::new(),
            args: Some(ArgsBox::of(args)),
            variant: None,
            equal_load: None,
            scaling: None,
        }
    }

    /// The point's typed parameters. A point made by another workload (or by `Point::new`) is
    /// a programming error; it fails the case, not the run.
    pub(crate) fn args<A: Args>(&self) -> Result<&A, CaseError> {
        self.args
            .as_ref()
            .and_then(|a| a.args.downcast_ref::<A>())
            .ok_or_else(|| {
                CaseError::Failed(anyhow::anyhow!(
                    "this point does not carry {} (made by another workload?)",
                    std::any::type_name::<A>()
                ))
            })
    }

    /// This point with its parameter `name` set to `value`: the args remade from the params
    /// (a parameter the workload takes but left out, an `Option`, is set), and the params of
    /// the capacity point it names ([`Point::equal_load`]) and of its scaling base set alike,
    /// so an equal-load or scaling point still finds its counterpart. `Err`: the args refused
    /// the value (a programming error: the knob names a parameter of another type).
    pub(crate) fn set(&self, name: &str, value: u64) -> Result<Point, String> {
        let mut p = self.clone();
        p.params.0.insert(name.to_string(), value.into());
        if let Some(b) = &self.args {
            let map: serde_json::Map<String, serde_json::Value> = p
                .params
                .0
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            p.args = Some((b.remake)(serde_json::Value::Object(map))?);
        }
        if let Some(e) = p.equal_load.as_mut() {
            if e.capacity_of.0.contains_key(name) {
                e.capacity_of.0.insert(name.to_string(), value.into());
            }
        }
        if let Some(s) = p.scaling.as_mut() {
            if s.base.0.contains_key(name) {
                s.base.0.insert(name.to_string(), value.into());
            }
        }
        Ok(p)
    }

    /// With `variant` set.
    pub(crate) fn variant(mut self, v: Option<&'static str>) -> Point {
        self.variant = v;
        self
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
    /// In the counting repetition of a model on io_uring: the io_uring tracepoints are
    /// counted beside the syscalls (`measure::uring_trace`), over the same tasks.
    pub count_uring: bool,
    /// The storage suite's work directory and cache policy (`None`: no storage workload).
    pub storage: Option<&'a storage::StorageCtx>,
    /// The run's external contenders (`--contender`): the commands of the `ext:` models.
    pub contenders: &'a crate::model::Catalog,
    /// The run's other hosts (`--server-host`, `--load-host`); `None`: this host only.
    pub remote: Option<&'a crate::remote::Remote>,
    /// At an equal-load point ([`Point::equal_load`]): the offered rate, requests/s over all
    /// connections, that the runner derived from the capacity point. `None` elsewhere.
    pub offered_rate: Option<f64>,
    /// Which timed repetition of its case this is (0-based; the runner interleaves them across
    /// models); `None` for warm-ups and the counting repetition.
    pub repetition: Option<u32>,
    /// `run --explain`'s untimed repetition: the workload samples where the CPU goes in its
    /// window ([`Ctx::explain_start`], [`Ctx::explain_finish`]) and leaves the result here.
    /// `None` in every other repetition.
    pub explain: Option<&'a ExplainSlot>,
    /// What the load generator drives echo and HTTP connections with.
    pub load_engine: crate::load::Engine,
}

/// Where an explain repetition leaves its breakdown, or why there is none.
pub(crate) type ExplainSlot = std::sync::Mutex<Option<crate::measure::Measured<Explain>>>;

use crate::results::explain::Explain;

/// A sampling in progress, or why it could not start.
pub(crate) type Sampling = Result<crate::crosscheck::perf::Recording, String>;

impl Ctx<'_> {
    /// Opens the repetition's measured window.
    pub(crate) fn window(&self) -> crate::measure::Window<'_> {
        self.meter
            .window_with(self.count_syscalls, self.count_uring)
    }

    /// In the explain repetition: starts sampling `cpus` (perf running on `run_on`, for at
    /// most `max`); returns once it samples. `None` in every other repetition.
    pub(crate) fn explain_start(
        &self,
        cpus: &[u32],
        run_on: &[u32],
        max: std::time::Duration,
    ) -> Option<Sampling> {
        self.explain
            .map(|_| crate::crosscheck::perf::Recording::start(cpus, run_on, max))
    }

    /// Ends a sampling begun by [`Ctx::explain_start`], keeping the samples between `open_ns`
    /// and `close_ns` (`measure::clock::now_ns`), and leaves the breakdown (or why there is
    /// none) in the slot. `own`: the measured processes (other programs' samples are grouped
    /// apart).
    pub(crate) fn explain_finish(
        &self,
        s: Option<Sampling>,
        open_ns: u64,
        close_ns: u64,
        own: &[u32],
    ) {
        let (Some(slot), Some(s)) = (self.explain, s) else {
            return;
        };
        let m = match s.and_then(|r| r.finish(open_ns, close_ns, own)) {
            Ok(e) => crate::measure::Measured::Value(e),
            Err(why) => crate::measure::Measured::unavailable(why),
        };
        *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct A {
        n: u64,
        phase: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        threads: Option<u64>,
    }

    #[derive(serde::Serialize, serde::Deserialize, Debug)]
    struct B {
        n: u64,
    }

    #[test]
    fn a_point_records_its_args_and_reads_them_back_typed() {
        let p = Point::of(A {
            n: 3,
            phase: "write".into(),
            threads: None,
        });
        let want = Params::new().with("n", 3u64).with("phase", "write");
        assert_eq!(p.params, want);
        assert_eq!(
            p.args::<A>().unwrap(),
            &A {
                n: 3,
                phase: "write".into(),
                threads: None
            }
        );
        // Another workload's args, or a point without args: the case fails, saying so.
        let e = p.args::<B>().unwrap_err().to_string();
        assert!(e.contains("does not carry"), "{e}");
        assert!(Point::new(want).args::<A>().is_err());
    }

    /// The typed points record the names results files always had (old files compare).
    #[test]
    fn typed_workloads_record_the_same_param_names_as_before() {
        let m = crate::registry::model("blocking").unwrap();
        let cases = [
            ("micro.pipe", vec!["msg_bytes"]),
            ("micro.batching", vec!["batch", "msg_bytes"]),
            ("micro.fd_scaling", vec!["fds"]),
            (
                "storage.randread",
                vec!["block_bytes", "depth", "direct", "file_bytes", "reads"],
            ),
            (
                "storage.seqread",
                vec!["block_bytes", "depth", "direct", "file_bytes"],
            ),
            (
                "storage.page_cycle",
                vec!["depth", "file_bytes", "page_bytes"],
            ),
            ("storage.small_files", vec!["file_bytes", "files", "phase"]),
            (
                "echo.payload",
                vec!["conns", "duration_ms", "msg_bytes", "warmup_ms"],
            ),
            (
                "echo.rate",
                vec![
                    "conns",
                    "duration_ms",
                    "msg_bytes",
                    "rate_per_sec",
                    "warmup_ms",
                ],
            ),
            (
                "http.rate",
                vec!["clients", "duration_ms", "rate_per_sec", "warmup_ms"],
            ),
        ];
        for (id, keys) in cases {
            let w = crate::registry::workload(id).unwrap();
            for p in w.points(Profile::Quick, m) {
                let got: Vec<&str> = p.params.0.keys().map(String::as_str).collect();
                assert_eq!(got, keys, "{id}: {:?}", p.params);
            }
        }
    }
}
