//! The HTTP suite (`ringside run http`): each model's keep-alive HTTP/1.1 server (`ringside
//! serve --protocol http`, a 13-byte `Hello, World!` body) as a child process pinned to the
//! plan's measured CPU, driven over loopback by the load generator (wrk's model: keep-alive
//! connections, one request outstanding each, every response parsed and validated) pinned to
//! the helper CPU, measured from outside exactly as the echo suite is ([`super::cell`]).
//!
//! - `http.clients`: closed loop at 5, 50, 100, 500 and 1000 connections. One op is one
//!   request answered; bytes are every byte received (wrk's transfer/s). When `wrk` is
//!   installed, each repetition also runs wrk (one thread, same connections, pinned to the same
//!   CPU) against the same warmed server after ringside's window; its figures are the cell's
//!   `wrk_*` counters and a disagreement beyond 5% in requests/s is flagged
//!   (`loadgen_disagrees`). After some of the client counts (every one at `full`, see
//!   [`EQUAL_LOAD_CLIENTS`]), an equal-load point: every model driven open loop at the same
//!   offered rate, 30% of the slowest model's capacity at the point before it (the runner's,
//!   in `Ctx::offered_rate`); wrk runs beside the capacity points only.
//! - `http.rate`: open loop (wrk2's model) at 100 connections, offered rates rising past the
//!   point where a server keeps up; latency runs from each request's intended send time, so
//!   the knee shows as the p99 leaving the floor and the achieved rate falling behind the
//!   offered one.

use super::cell::{self, Load};
use super::echo::launch_http;
use super::equal_load::{equal_load_at, offered_rate, open_loop_counters, with_equal_load};
use crate::crosscheck::wrk;
use crate::error::CaseError;
use crate::load::http::HttpGet;
use crate::measure::Sample;
use crate::model::{ModelSpec, Proto, Shape};
use crate::profile::Profile;
use crate::workload::{Ctx, Point, Workload};
use std::time::Duration;

const OP_CLOSED: &str = "one HTTP/1.1 GET answered over a keep-alive TCP connection \
    (closed loop: request sent, whole response received, parsed and validated: 200 and the \
    13-byte body); latency per request at the client; bytes are all bytes received; CPU, \
    context switches and syscalls are the server's, measured from outside";
const OP_OPEN: &str = "one HTTP/1.1 GET answered at an offered rate over 100 keep-alive TCP \
    connections (open loop: latency from the request's intended send time, so a \
    server that falls behind shows it); CPU and syscalls are the server's";

/// The path requested (every server answers any path with the same body).
pub(crate) const PATH: &str = "/";

/// Models with an HTTP server (`ModelSpec::runs`): ringside's own but SEND_ZC, which pays
/// only for large payloads, the built-in peers (tokio with hyper, monoio), and external
/// contenders that speak HTTP (their catalog entry says which).
pub(super) fn accepts(m: &ModelSpec) -> Result<(), String> {
    if m.uring_knobs().is_some_and(|k| k.zero_copy_send()) {
        return Err("SEND_ZC pays only for large payloads, not a 13-byte body".into());
    }
    m.applies(Shape::Tcp(Proto::Http))
        .map_err(|why| format!("no HTTP server: {why}"))
}

/// The client counts of `http.clients` that get an equal-load point: at `full` every one; at
/// `quick` 50 and 500 (each costs as much as its capacity point); at `smoke` 50.
pub(crate) const EQUAL_LOAD_CLIENTS: &[(Profile, &[u64])] =
    &[(Profile::Smoke, &[50]), (Profile::Quick, &[100])];

/// Timed repetitions of an `http.clients` capacity cell that wrk runs beside (wrk's runs last
/// whole seconds, at least one: beside every repetition they would double the suite's time).
pub(crate) const WRK_REPETITIONS: u32 = 1;

/// The parameters of the HTTP workloads.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Args {
    /// `http.rate`: the offered rate, requests/s over all connections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) rate_per_sec: Option<u64>,
    pub(crate) clients: u64,
    pub(crate) duration_ms: u64,
    pub(crate) warmup_ms: u64,
    /// The response body's bytes (`run --body-bytes`; recorded only when set, so results of
    /// the default body keep their params).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) body_bytes: Option<u64>,
}

/// The parameters an HTTP workload's points leave out unless `run` sets them.
pub(crate) const OPTIONAL_PARAMS: &[&str] = &["body_bytes"];

/// The HTTP workloads' charts (but `http.rate`'s): the server figures against the clients
/// (or connections) of a point.
pub(crate) const CLIENTS_FACTS: crate::results::facts::Facts = crate::results::facts::Facts::net(
    crate::results::facts::Units::REQUESTS,
    crate::results::facts::net_lines(&["clients", "conns", "connections"], "clients"),
);

/// `http.clients`.
pub struct HttpClients;
/// `http.rate`.
pub(crate) struct HttpRate;

impl Workload for HttpClients {
    fn optional_params(&self) -> &'static [&'static str] {
        OPTIONAL_PARAMS
    }
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Net
    }
    fn facts(&self) -> crate::results::facts::Facts {
        super::http::CLIENTS_FACTS
    }
    fn id(&self) -> &'static str {
        "http.clients"
    }
    fn remote_load(&self) -> bool {
        true
    }
    fn about(&self) -> &'static str {
        "keep-alive HTTP/1.1 server per model, 5 to 1000 clients, loopback; wrk beside it"
    }
    fn op(&self) -> &'static str {
        OP_CLOSED
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        accepts(m)
    }
    fn points(&self, profile: Profile, _: &ModelSpec) -> Vec<Point> {
        let (warmup_ms, duration_ms) = cell::timing(profile);
        // quick leaves out 5 and 100 clients (the default run's time budget).
        let clients: &[u64] = match profile {
            Profile::Quick => &[100],
            _ => &[5, 50, 100, 500, 1000],
        };
        let points = clients
            .iter()
            .copied()
            .map(|clients| {
                Point::of(Args {
                    rate_per_sec: None,
                    clients,
                    duration_ms,
                    warmup_ms,
                    body_bytes: None,
                })
            })
            .collect();
        with_equal_load(points, |p| {
            p.args::<Args>()
                .is_ok_and(|a| equal_load_at(EQUAL_LOAD_CLIENTS, profile, a.clients))
        })
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        let a = p.args::<Args>()?;
        if p.equal_load.is_some() {
            let rate = offered_rate(ctx, p)?;
            return run_open(ctx, m, a, rate);
        }
        let conns = a.clients as usize;
        let duration = Duration::from_millis(a.duration_ms);
        let ex = get(a.body_bytes.map(|n| n as usize));
        // wrk runs beside the first WRK_REPETITIONS timed repetitions only (never the counting
        // one, slowed by its tracepoint): its runs last whole seconds.
        let with_wrk =
            ctx.repetition.is_some_and(|r| r < WRK_REPETITIONS) && wrk::version().is_ok();
        let after =
            move |addr, cpu| wrk::run(addr, PATH, conns, duration, cpu).map(|r| r.counters());
        let load = Load {
            conns,
            warmup: Duration::from_millis(a.warmup_ms),
            duration,
            rate: None,
            exchange: &ex,
            bytes_received: true,
            after: with_wrk.then_some(&after as &cell::After),
            around: None,
            churn: false,
        };
        cell::measure(ctx, launch_http(ctx, m, a.body_bytes)?, &load).map(|(s, _)| s)
    }
    fn slices(&self, p: &Point) -> Option<cell::Slicing> {
        let a = p.args::<Args>().ok()?;
        p.equal_load
            .as_ref()
            .map(|_| cell::slicing(a.clients, Duration::from_millis(a.duration_ms)))
    }
    fn start_live(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<cell::Live, CaseError> {
        cell::start_live(ctx, launch_http(ctx, m, p.args::<Args>()?.body_bytes)?)
    }
    fn slice(
        &self,
        ctx: &Ctx<'_>,
        live: &mut cell::Live,
        p: &Point,
        slicing: cell::Slicing,
    ) -> Result<Sample, CaseError> {
        http_slice(ctx, live, p.args::<Args>()?, offered_rate(ctx, p)?, slicing)
    }
}

/// Offered rates of the open-loop sweep, requests/s over all connections.
pub(crate) fn rates(profile: Profile) -> &'static [u64] {
    match profile {
        Profile::Smoke => &[2_000, 20_000],
        Profile::Quick => &[10_000, 40_000, 80_000],
        Profile::Full => &[
            5_000, 10_000, 20_000, 30_000, 40_000, 50_000, 60_000, 70_000, 80_000, 100_000, 120_000,
        ],
    }
}

impl Workload for HttpRate {
    fn optional_params(&self) -> &'static [&'static str] {
        OPTIONAL_PARAMS
    }
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Net
    }
    /// Latency against offered load: the knee is where p99 leaves the floor and the achieved
    /// rate stops following the offered one.
    fn facts(&self) -> crate::results::facts::Facts {
        use crate::results::facts::{lines, Facts, Metric, Units};
        Facts {
            rate_sweep: true,
            open_loop: true,
            ..Facts::net(
                Units::REQUESTS,
                lines(
                    &["rate_per_sec"],
                    "offered requests/s",
                    &[Metric::LatencyP99, Metric::OpsPerSec, Metric::CpuPerOp],
                    Metric::LatencyP99,
                ),
            )
        }
    }
    fn by_default(&self) -> bool {
        false
    }
    fn id(&self) -> &'static str {
        "http.rate"
    }
    fn remote_load(&self) -> bool {
        true
    }
    fn about(&self) -> &'static str {
        "HTTP latency against offered load (open loop, 100 clients): where each model saturates"
    }
    fn op(&self) -> &'static str {
        OP_OPEN
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        accepts(m)
    }
    fn points(&self, profile: Profile, _: &ModelSpec) -> Vec<Point> {
        let (warmup_ms, duration_ms) = cell::timing(profile);
        rates(profile)
            .iter()
            .map(|&r| {
                Point::of(Args {
                    rate_per_sec: Some(r),
                    clients: 100,
                    duration_ms,
                    warmup_ms,
                    body_bytes: None,
                })
            })
            .collect()
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        let a = p.args::<Args>()?;
        let rate = a.rate_per_sec.ok_or_else(|| {
            CaseError::Failed(anyhow::anyhow!("an http.rate point without its rate"))
        })?;
        run_open(ctx, m, a, rate as f64)
    }
    fn slices(&self, p: &Point) -> Option<cell::Slicing> {
        let a = p.args::<Args>().ok()?;
        Some(cell::slicing(
            a.clients,
            Duration::from_millis(a.duration_ms),
        ))
    }
    fn start_live(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<cell::Live, CaseError> {
        cell::start_live(ctx, launch_http(ctx, m, p.args::<Args>()?.body_bytes)?)
    }
    fn slice(
        &self,
        ctx: &Ctx<'_>,
        live: &mut cell::Live,
        p: &Point,
        slicing: cell::Slicing,
    ) -> Result<Sample, CaseError> {
        let a = p.args::<Args>()?;
        let rate = a.rate_per_sec.ok_or_else(|| {
            CaseError::Failed(anyhow::anyhow!("an http.rate point without its rate"))
        })?;
        http_slice(ctx, live, a, rate as f64, slicing)
    }
}

/// One slice of an open-loop HTTP point at `rate` against a live server, with the open-loop
/// counters.
fn http_slice(
    ctx: &Ctx<'_>,
    live: &mut cell::Live,
    a: &Args,
    rate: f64,
    slicing: cell::Slicing,
) -> Result<Sample, CaseError> {
    let ex = get(a.body_bytes.map(|n| n as usize));
    let load = Load {
        conns: a.clients as usize,
        warmup: slicing.warmup,
        duration: slicing.window,
        rate: Some(rate),
        exchange: &ex,
        bytes_received: true,
        after: None,
        around: None,
        churn: false,
    };
    let (mut s, report) = live.slice(ctx, &load)?;
    open_loop_counters(&mut s, rate, &report);
    Ok(s)
}

/// One open-loop repetition at `rate` requests/s over the point's clients, with the open-loop
/// counters (offered, achieved, fell behind).
fn run_open(ctx: &Ctx<'_>, m: &ModelSpec, a: &Args, rate: f64) -> Result<Sample, CaseError> {
    let ex = get(a.body_bytes.map(|n| n as usize));
    let load = Load {
        conns: a.clients as usize,
        warmup: Duration::from_millis(a.warmup_ms),
        duration: Duration::from_millis(a.duration_ms),
        rate: Some(rate),
        exchange: &ex,
        bytes_received: true,
        after: None,
        around: None,
        churn: false,
    };
    let (mut s, report) = cell::measure(ctx, launch_http(ctx, m, a.body_bytes)?, &load)?;
    open_loop_counters(&mut s, rate, &report);
    Ok(s)
}

/// A GET of what ringside's servers answer with `body` (`serve --body-bytes`; `None`: the
/// default body), checked byte for byte: every HTTP server of a run is asked for that.
pub(super) fn get(body: Option<usize>) -> HttpGet {
    HttpGet::new("127.0.0.1", PATH, crate::load::http::Expect::Served(body))
}
