//! The cores sweeps, `echo.cores` and `http.cores`: each model's server with 1, 2, 4, ...
//! shared-nothing server threads (`ringside serve --threads N`; `tokio-mt`: one runtime of N
//! workers), one CPU per thread, at a fixed load per thread (100 connections or clients each,
//! closed loop, 64-byte echoes or keep-alive GETs). Throughput, server CPU per op, latency and
//! the scaling efficiency (throughput at N / (N x throughput at 1), recorded by the runner as
//! `scaling_efficiency`) per model.
//!
//! The thread counts and the CPUs of each come from the run's plan
//! ([`CpuPlan::server_thread_sweep`], [`CpuPlan::with_server_threads`]): up to the server's CPU
//! set when `--server-cpus` names several, else up to half the machine, the server taking load
//! CPUs; on a 2-CPU machine 1 thread, then 2 sharing the CPUs with the load generator (those
//! cells are `shared_cpus`, and their efficiency says what sharing costs, not how the model
//! scales). Neither sweep is in the default run (its time budget): `ringside run echo.cores
//! http.cores`, or name the suite.

use super::cell::{self, Load};
use super::echo::{self, launch_http};
use crate::error::CaseError;
use crate::measure::pin::CpuPlan;
use crate::measure::Sample;
use crate::model::ModelSpec;
use crate::profile::Profile;
use crate::workload::{Ctx, Point, Scaling, Workload};
use std::time::Duration;

/// Connections (echo) or clients (HTTP) per server thread.
pub(crate) const CONNS_PER_THREAD: u64 = 100;

const OP_ECHO: &str = "one 64-byte message echoed over TCP by a server of N threads, \
    100 connections per thread (closed loop: sent, whole echo received and verified); CPU, \
    context switches and syscalls are the server's (all its threads), measured from outside";
const OP_HTTP: &str = "one HTTP/1.1 GET answered over a keep-alive TCP connection by a \
    server of N threads, 100 clients per thread (closed loop, every response parsed and \
    validated); CPU and syscalls are the server's (all its threads), measured from outside";

/// The parameters of `echo.cores`.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct EchoArgs {
    pub(crate) threads: u64,
    pub(crate) conns: u64,
    pub(crate) msg_bytes: u64,
    pub(crate) duration_ms: u64,
    pub(crate) warmup_ms: u64,
}

/// The parameters of `http.cores`.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct HttpArgs {
    pub(crate) threads: u64,
    pub(crate) clients: u64,
    pub(crate) duration_ms: u64,
    pub(crate) warmup_ms: u64,
    /// `run --body-bytes`, recorded only when set (see `http::Args`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) body_bytes: Option<u64>,
}

/// One point per thread count of the plan's sweep; every point past one thread names the
/// one-thread point as its scaling base.
fn sweep(plan: &CpuPlan, point: impl Fn(u64) -> Point) -> Vec<Point> {
    let base = point(1).params;
    plan.server_thread_sweep()
        .into_iter()
        .map(|t| {
            let mut p = point(t as u64);
            if t > 1 {
                p.scaling = Some(Scaling {
                    threads: t,
                    base: base.clone(),
                });
            }
            p
        })
        .collect()
}

/// The plan `points` sweeps without a run's plan: the last two allowed CPUs.
fn machine_plan() -> CpuPlan {
    CpuPlan::default_for(&crate::measure::pin::allowed_cpus())
}

/// The repetition's context with the plan for `threads` server threads.
fn with_threads<R>(
    ctx: &Ctx<'_>,
    threads: u64,
    f: impl FnOnce(&Ctx<'_>) -> Result<R, CaseError>,
) -> Result<R, CaseError> {
    let plan = ctx.plan.with_server_threads(threads as u32);
    f(&Ctx {
        plan: &plan,
        ..*ctx
    })
}

/// `echo.cores`.
pub(crate) struct EchoCores;
/// `http.cores`.
pub(crate) struct HttpCores;

impl Workload for EchoCores {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Net
    }
    fn facts(&self) -> crate::results::facts::Facts {
        use crate::results::facts::{net_lines, Facts, Units};
        Facts::net(Units::MESSAGES, net_lines(&["conns"], "connections"))
    }
    /// A cores sweep runs every model at each thread count its plan gives (tokio-mt on one
    /// server CPU included: the sweep's first point), unlike the other network workloads.
    fn accepts_on(
        &self,
        m: &ModelSpec,
        _plan: &crate::measure::pin::CpuPlan,
    ) -> Result<(), String> {
        self.accepts(m)
    }
    fn id(&self) -> &'static str {
        "echo.cores"
    }
    fn remote_load(&self) -> bool {
        true
    }
    fn about(&self) -> &'static str {
        "TCP echo server per model on 1, 2, 4, ... server threads (one CPU each), 100 connections \
         per thread, 64 B: throughput, CPU per message and scaling efficiency (runs when named)"
    }
    fn op(&self) -> &'static str {
        OP_ECHO
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        echo::accepts_small_messages(m)
    }
    fn by_default(&self) -> bool {
        false
    }
    fn points(&self, profile: Profile, m: &ModelSpec) -> Vec<Point> {
        self.points_on(profile, m, &machine_plan())
    }
    fn points_on(&self, profile: Profile, _: &ModelSpec, plan: &CpuPlan) -> Vec<Point> {
        let (warmup_ms, duration_ms) = cell::timing(profile);
        sweep(plan, |threads| {
            Point::of(EchoArgs {
                threads,
                conns: CONNS_PER_THREAD * threads,
                msg_bytes: 64,
                duration_ms,
                warmup_ms,
            })
        })
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        let a = p.args::<EchoArgs>()?;
        with_threads(ctx, a.threads, |ctx| {
            echo::closed_loop(
                ctx,
                m,
                a.conns as usize,
                a.msg_bytes as usize,
                Duration::from_millis(a.warmup_ms),
                Duration::from_millis(a.duration_ms),
            )
        })
    }
}

impl Workload for HttpCores {
    fn optional_params(&self) -> &'static [&'static str] {
        super::http::OPTIONAL_PARAMS
    }
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Net
    }
    fn facts(&self) -> crate::results::facts::Facts {
        super::http::CLIENTS_FACTS
    }
    /// A cores sweep runs every model at each thread count its plan gives (tokio-mt on one
    /// server CPU included: the sweep's first point), unlike the other network workloads.
    fn accepts_on(
        &self,
        m: &ModelSpec,
        _plan: &crate::measure::pin::CpuPlan,
    ) -> Result<(), String> {
        self.accepts(m)
    }
    fn id(&self) -> &'static str {
        "http.cores"
    }
    fn remote_load(&self) -> bool {
        true
    }
    fn about(&self) -> &'static str {
        "keep-alive HTTP/1.1 server per model on 1, 2, 4, ... server threads (one CPU each), 100 \
         clients per thread: throughput, CPU per request and scaling efficiency (runs when named)"
    }
    fn op(&self) -> &'static str {
        OP_HTTP
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        super::http::accepts(m)
    }
    fn by_default(&self) -> bool {
        false
    }
    fn points(&self, profile: Profile, m: &ModelSpec) -> Vec<Point> {
        self.points_on(profile, m, &machine_plan())
    }
    fn points_on(&self, profile: Profile, _: &ModelSpec, plan: &CpuPlan) -> Vec<Point> {
        let (warmup_ms, duration_ms) = cell::timing(profile);
        sweep(plan, |threads| {
            Point::of(HttpArgs {
                threads,
                clients: CONNS_PER_THREAD * threads,
                duration_ms,
                warmup_ms,
                body_bytes: None,
            })
        })
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        let a = p.args::<HttpArgs>()?;
        with_threads(ctx, a.threads, |ctx| {
            let ex = super::http::get(a.body_bytes.map(|n| n as usize));
            let load = Load {
                conns: a.clients as usize,
                warmup: Duration::from_millis(a.warmup_ms),
                duration: Duration::from_millis(a.duration_ms),
                rate: None,
                exchange: &ex,
                bytes_received: true,
                after: None,
                around: None,
                churn: false,
            };
            cell::measure(ctx, launch_http(ctx, m, a.body_bytes)?, &load).map(|(s, _)| s)
        })
    }
}
