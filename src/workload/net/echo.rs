//! The echo suite (`ringside run echo`): each model's TCP echo server (`ringside serve
//! --protocol echo`) as a child process pinned to the plan's measured CPU, driven over loopback
//! by the load generator pinned to the helper CPU, measured from outside.
//!
//! Three workloads, one per sweep, so the suite is selected by the usual first component of
//! the id (`echo.conns`, `echo.payload`, `echo.rate`; `ringside run echo` runs all three,
//! `ringside run echo.conns` one) and each table varies one parameter:
//! - `echo.conns`: connections 1, 2, 50, 100, 1000 (and 10,000 at `full`) at 64-byte messages,
//!   closed loop (capacity); after some of them (every one at `full`, see [`EQUAL_LOAD_CONNS`])
//!   an equal-load point: every model driven open loop at the same offered rate, 30% of the
//!   slowest model's capacity measured at the point before it (the runner measures it, in a
//!   one-round probe where the load generator had no headroom, and passes the rate in
//!   `Ctx::offered_rate`), its rounds made of interleaved slices (`Workload::slices`);
//! - `echo.payload`: messages of 64, 512, 4096 and 16384 bytes at 50 connections;
//! - `echo.rate`: open loop at fixed offered rates every model sustains, 50 connections,
//!   64-byte messages: server CPU per message and latency (from each message's intended send
//!   time) at equal load, the headline network figure. A server that achieves less than
//!   `results::rates::KEEP_UP` of the offered rate is flagged (`fell_behind`) and not
//!   ranked at equal load.
//!
//! Per repetition: start the server, wait for `listening on`, run the closed-loop load for the
//! profile's duration after a warm-up, read the server's CPU (every task, io_uring's SQPOLL
//! and io-wq threads included) and context switches at the window's edges, and in the
//! runner's counting repetition its syscalls (a perf counter on every task of the server).
//! Latency per message goes into the Sample's histogram; one op is one message. The load
//! generator's CPU, errors, resets, mismatches and live connections go into the counters, and
//! `client_bound` / `shared_cpus` become warnings.

use super::cell;
use super::equal_load::{
    equal_load_at, offered_rate, open_loop_counters, with_equal_load, EQUAL_LOAD_CONNS,
};
use super::launch::Launch;
use crate::error::CaseError;
use crate::load::echo::Echo;
use crate::load::Report;
use crate::measure::pin::CpuPlan;
use crate::measure::Sample;
use crate::model::{Knobs, ModelSpec, PeerKind, Proto, Shape};
use crate::profile::Profile;
use crate::proto::ServeProtocol;
use crate::workload::{Ctx, Point, Workload};
use std::process::Command;
use std::time::Duration;

const OP_OPEN: &str = "one 64-byte message echoed over TCP at an offered rate over \
    50 connections (open loop: latency from the message's intended send time, so a server \
    that falls behind shows it; whole echo received and verified); CPU, context switches and \
    syscalls are the server's, measured from outside";

const OP: &str = "one message echoed over TCP (closed loop: sent, whole echo received \
                  and verified); latency per message at the client; CPU, context switches and \
                  syscalls are the server's, measured from outside";

/// Models with a TCP echo server (`ModelSpec::runs`): ringside's own, the built-in peers,
/// which `ringside serve` runs from `src/peer/`, and external contenders (`--contender`) that
/// speak echo (which protocol a contender speaks is its catalog entry's to say: the run keeps
/// it to the suites of that protocol).
fn accepts(m: &ModelSpec) -> Result<(), String> {
    m.applies(Shape::Tcp(Proto::Echo))
        .map_err(|why| format!("no TCP echo server: {why}"))
}

/// Every echo server but SEND_ZC's, which pays only for large payloads (it runs in
/// `echo.payload`).
pub(super) fn accepts_small_messages(m: &ModelSpec) -> Result<(), String> {
    if m.uring_knobs().is_some_and(|k| k.zero_copy_send()) {
        return Err("SEND_ZC pays only for large payloads: it runs in echo.payload".into());
    }
    accepts(m)
}

/// `tokio-mt` takes part in a network workload only where the server has several CPUs: on one
/// it is the current_thread runtime plus a hand-off between threads. It always runs in the
/// cores sweeps (`echo.cores`, `http.cores`).
pub(crate) fn accepts_on_plan(m: &ModelSpec, plan: &CpuPlan) -> Result<(), String> {
    if matches!(m.knobs, Knobs::Peer(PeerKind::TokioMt)) && plan.server_cpus().len() < 2 {
        return Err(
            "tokio-mt on one server CPU is tokio plus a hand-off between threads: it \
                    runs in echo.cores and http.cores, and wherever --server-cpus gives the \
                    server several CPUs"
                .into(),
        );
    }
    Ok(())
}

/// The parameters of the echo workloads.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Args {
    pub(crate) conns: u64,
    pub(crate) msg_bytes: u64,
    pub(crate) duration_ms: u64,
    pub(crate) warmup_ms: u64,
    /// `echo.rate`: the offered rate, messages/s over all connections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) rate_per_sec: Option<u64>,
}

impl Args {
    fn warmup(&self) -> Duration {
        Duration::from_millis(self.warmup_ms)
    }
    fn duration(&self) -> Duration {
        Duration::from_millis(self.duration_ms)
    }
}

fn point(profile: Profile, conns: u64, msg_bytes: u64) -> Point {
    let (warmup_ms, duration_ms) = cell::timing(profile);
    Point::of(Args {
        conns,
        msg_bytes,
        duration_ms,
        warmup_ms,
        rate_per_sec: None,
    })
}

/// `echo.conns`: the connection sweep at 64-byte messages.
pub struct EchoConns;
/// `echo.payload`: the message-size sweep at 50 connections.
pub(crate) struct EchoPayload;

impl Workload for EchoConns {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Net
    }
    fn facts(&self) -> crate::results::facts::Facts {
        use crate::results::facts::{net_lines, Facts, Units};
        Facts::net(Units::MESSAGES, net_lines(&["conns"], "connections"))
    }
    fn id(&self) -> &'static str {
        "echo.conns"
    }
    fn remote_load(&self) -> bool {
        true
    }
    fn about(&self) -> &'static str {
        "TCP echo server per model, 64-byte messages, 1 to 1000 (full: 10,000) connections, loopback"
    }
    fn op(&self) -> &'static str {
        OP
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        accepts_small_messages(m)
    }
    fn points(&self, profile: Profile, _: &ModelSpec) -> Vec<Point> {
        let conns = match profile {
            Profile::Smoke => vec![1, 2, 50, 100, 1000],
            // quick: the default run's two connection counts, each a capacity probe and
            // an equal-load point (its time goes where a claim can be decided).
            Profile::Quick => vec![50, 1000],
            Profile::Full => vec![1, 2, 50, 100, 1000, 10_000],
        };
        let points = conns.into_iter().map(|c| point(profile, c, 64)).collect();
        with_equal_load(points, |p| {
            p.args::<Args>()
                .is_ok_and(|a| equal_load_at(EQUAL_LOAD_CONNS, profile, a.conns))
        })
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        run_point(ctx, m, p)
    }
    fn slices(&self, p: &Point) -> Option<cell::Slicing> {
        let a = p.args::<Args>().ok()?;
        p.equal_load
            .as_ref()
            .map(|_| cell::slicing(a.conns, a.duration()))
    }
    fn start_live(&self, ctx: &Ctx<'_>, m: &ModelSpec, _: &Point) -> Result<cell::Live, CaseError> {
        cell::start_live(ctx, launch(ctx, m, ServeProtocol::Echo)?)
    }
    fn slice(
        &self,
        ctx: &Ctx<'_>,
        live: &mut cell::Live,
        p: &Point,
        slicing: cell::Slicing,
    ) -> Result<Sample, CaseError> {
        echo_slice(ctx, live, p.args::<Args>()?, open_rate(ctx, p)?, slicing)
    }
}

impl Workload for EchoPayload {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Net
    }
    fn facts(&self) -> crate::results::facts::Facts {
        use crate::results::facts::{net_lines, Facts, Units};
        Facts::net(
            Units::MESSAGES,
            net_lines(&["msg_bytes"], "message size, bytes"),
        )
    }
    fn by_default(&self) -> bool {
        false
    }
    fn id(&self) -> &'static str {
        "echo.payload"
    }
    fn remote_load(&self) -> bool {
        true
    }
    fn about(&self) -> &'static str {
        "TCP echo server per model, 50 connections, messages of 64 B to 16 KiB, loopback"
    }
    fn op(&self) -> &'static str {
        OP
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        accepts(m)
    }
    fn points(&self, profile: Profile, _: &ModelSpec) -> Vec<Point> {
        // quick leaves out 512 B (the default run's time budget).
        let sizes: &[u64] = match profile {
            // 64 B at 50 connections is echo.conns' point already.
            Profile::Quick => &[4096, 16384],
            _ => &[64, 512, 4096, 16384],
        };
        sizes
            .iter()
            .copied()
            .map(|b| point(profile, 50, b))
            .collect()
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        run_point(ctx, m, p)
    }
}

/// `echo.rate`: the open-loop sweep at rates every model sustains.
pub(crate) struct EchoRate;

/// Connections of `echo.rate`.
pub(crate) const RATE_CONNS: u64 = 50;

/// Offered rates of `echo.rate`, messages/s over all connections: rates every model sustains,
/// so that every model is compared at the same load. On a 2-vCPU VM every available model
/// achieved at least 99.9% of both quick rates with p99 under 10 ms (tokio's and monoio's p99
/// at 30 k were 5 to 8 ms: near their knee there); `full` adds rates on both sides, and a
/// model that falls behind one is flagged (`fell_behind`) and left out of its ranking.
pub(crate) fn rates(profile: Profile) -> &'static [u64] {
    match profile {
        Profile::Smoke => &[2_000],
        Profile::Quick => &[10_000, 30_000],
        Profile::Full => &[5_000, 10_000, 20_000, 30_000, 40_000],
    }
}

impl Workload for EchoRate {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Net
    }
    /// At rates every model sustains: server CPU per message and tail latency at equal load
    /// (verdicts rank CPU per op per rate; the sweep's verdicts follow p99).
    fn facts(&self) -> crate::results::facts::Facts {
        use crate::results::facts::{lines, Facts, Metric, Units};
        Facts {
            rate_sweep: true,
            open_loop: true,
            ..Facts::net(
                Units::MESSAGES,
                lines(
                    &["rate_per_sec"],
                    "offered messages/s",
                    &[Metric::CpuPerOp, Metric::LatencyP99, Metric::OpsPerSec],
                    Metric::LatencyP99,
                ),
            )
        }
    }
    fn by_default(&self) -> bool {
        false
    }
    fn id(&self) -> &'static str {
        "echo.rate"
    }
    fn remote_load(&self) -> bool {
        true
    }
    fn about(&self) -> &'static str {
        "TCP echo server per model at equal offered load (open loop, 50 connections, 64 B): \
         server CPU per message and latency"
    }
    fn op(&self) -> &'static str {
        OP_OPEN
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        accepts_small_messages(m)
    }
    fn points(&self, profile: Profile, _: &ModelSpec) -> Vec<Point> {
        let (warmup_ms, duration_ms) = cell::timing(profile);
        rates(profile)
            .iter()
            .map(|&r| {
                Point::of(Args {
                    conns: RATE_CONNS,
                    msg_bytes: 64,
                    duration_ms,
                    warmup_ms,
                    rate_per_sec: Some(r),
                })
            })
            .collect()
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        let a = p.args::<Args>()?;
        let rate = a.rate_per_sec.ok_or_else(|| {
            CaseError::Failed(anyhow::anyhow!("an echo.rate point without its rate"))
        })?;
        run_open(ctx, m, a, rate as f64)
    }
    fn slices(&self, p: &Point) -> Option<cell::Slicing> {
        let a = p.args::<Args>().ok()?;
        Some(cell::slicing(a.conns, a.duration()))
    }
    fn start_live(&self, ctx: &Ctx<'_>, m: &ModelSpec, _: &Point) -> Result<cell::Live, CaseError> {
        cell::start_live(ctx, launch(ctx, m, ServeProtocol::Echo)?)
    }
    fn slice(
        &self,
        ctx: &Ctx<'_>,
        live: &mut cell::Live,
        p: &Point,
        slicing: cell::Slicing,
    ) -> Result<Sample, CaseError> {
        echo_slice(ctx, live, p.args::<Args>()?, open_rate(ctx, p)?, slicing)
    }
}

/// `ringside serve --protocol PROTO --model ID --addr 127.0.0.1:0 --cpus LIST` from this binary,
/// and the CPUs the child may use (set before exec, so every thread it makes inherits them):
/// the measured CPU; for SQPOLL models also the helper CPU, where the poller goes (shared with
/// the load generator: on two CPUs there is no third; the results record it as `sqpoll_cpu`).
/// The server pins itself to the first CPU of the list.
pub(crate) fn serve_command(
    m: &ModelSpec,
    plan: &CpuPlan,
    protocol: ServeProtocol,
) -> Result<(Command, Vec<u32>), CaseError> {
    serve_command_on(m, plan, protocol, "127.0.0.1:0")
}

/// [`serve_command`] bound to `addr` (`ringside remote-serve` binds the address its SSH client
/// reached it at).
pub(crate) fn serve_command_on(
    m: &ModelSpec,
    plan: &CpuPlan,
    protocol: ServeProtocol,
    addr: &str,
) -> Result<(Command, Vec<u32>), CaseError> {
    let exe = std::env::current_exe()
        .map_err(|e| CaseError::Failed(anyhow::anyhow!("cannot find this executable: {e}")))?;
    let sqpoll = m
        .uring_knobs()
        .is_some_and(|k| k.sqpoll_idle_ms().is_some());
    let mut c = Command::new(exe);
    c.args(["serve", "--protocol", protocol.as_str(), "--model", m.id])
        .args(["--addr", addr]);
    let poller = plan.sqpoll_cpu().filter(|_| sqpoll);
    if plan.server.len() > 1 {
        // A server set of several CPUs: one server thread per CPU (`serve --threads`).
        let list: Vec<String> = plan.server.iter().map(|c| c.to_string()).collect();
        c.args(["--threads", &plan.server.len().to_string()])
            .args(["--cpus", &list.join(",")]);
        let mut cpus = plan.server.clone();
        if let Some(p) = poller {
            c.args(["--sqpoll-cpu", &p.to_string()]);
            if !cpus.contains(&p) {
                cpus.push(p);
            }
        }
        return Ok((c, cpus));
    }
    let mut cpus = vec![plan.measured];
    if let Some(h) = poller {
        cpus.push(h);
    }
    let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
    c.args(["--cpus", &list.join(",")]);
    Ok((c, cpus))
}

fn run_point(ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
    let a = p.args::<Args>()?;
    if p.equal_load.is_some() {
        let rate = offered_rate(ctx, p)?;
        return run_open(ctx, m, a, rate);
    }
    closed_loop(
        ctx,
        m,
        a.conns as usize,
        a.msg_bytes as usize,
        a.warmup(),
        a.duration(),
    )
}

/// One closed-loop repetition against model `m`'s echo server.
pub(super) fn closed_loop(
    ctx: &Ctx<'_>,
    m: &ModelSpec,
    conns: usize,
    msg_bytes: usize,
    warmup: Duration,
    duration: Duration,
) -> Result<Sample, CaseError> {
    let launch = launch(ctx, m, ServeProtocol::Echo)?;
    measure_launch(ctx, launch, conns, msg_bytes, warmup, duration, None).map(|(s, _)| s)
}

/// One open-loop repetition at `rate` messages/s over the point's connections, with the
/// open-loop counters.
fn run_open(ctx: &Ctx<'_>, m: &ModelSpec, a: &Args, rate: f64) -> Result<Sample, CaseError> {
    let (mut s, report) = measure_launch(
        ctx,
        launch(ctx, m, ServeProtocol::Echo)?,
        a.conns as usize,
        a.msg_bytes as usize,
        a.warmup(),
        a.duration(),
        Some(rate),
    )?;
    open_loop_counters(&mut s, rate, &report);
    Ok(s)
}

/// One slice of an open-loop echo point at `rate` against a live server (a round of slices:
/// `Workload::slice`), with the open-loop counters.
pub(super) fn echo_slice(
    ctx: &Ctx<'_>,
    live: &mut cell::Live,
    a: &Args,
    rate: f64,
    slicing: cell::Slicing,
) -> Result<Sample, CaseError> {
    let ex = Echo {
        msg_bytes: a.msg_bytes as usize,
    };
    let load = cell::Load {
        conns: a.conns as usize,
        warmup: slicing.warmup,
        duration: slicing.window,
        rate: Some(rate),
        exchange: &ex,
        bytes_received: false,
        after: None,
        around: None,
        churn: false,
    };
    let (mut s, report) = live.slice(ctx, &load)?;
    open_loop_counters(&mut s, rate, &report);
    Ok(s)
}

/// The offered rate of an open-loop echo point: the runner's at an equal-load point, else
/// the point's own (`echo.rate`).
fn open_rate(ctx: &Ctx<'_>, p: &Point) -> Result<f64, CaseError> {
    if p.equal_load.is_some() {
        return offered_rate(ctx, p);
    }
    p.args::<Args>()?
        .rate_per_sec
        .map(|r| r as f64)
        .ok_or_else(|| CaseError::Failed(anyhow::anyhow!("a closed-loop point is not sliced")))
}

/// How model `m`'s server for `protocol` is started: an external contender's command (from
/// the run's catalog), or `ringside serve` ([`serve_command`]).
pub(crate) fn launch(
    ctx: &Ctx<'_>,
    m: &ModelSpec,
    protocol: ServeProtocol,
) -> Result<Launch, CaseError> {
    if let Some(l) = remote_launch(ctx, m, protocol)? {
        return Ok(l);
    }
    let remote = ctx.remote;
    if let Knobs::Peer(PeerKind::External) = m.knobs {
        if let Some(h) = remote.and_then(|r| r.load.first()) {
            return Err(CaseError::Unavailable(format!(
                "an external contender listens where its command says, which --load-host {} \
                 cannot be told: it runs with the load generator on this host only",
                h.spec
            )));
        }
        let ext = ctx.contenders.get(m.id).cloned().ok_or_else(|| {
            CaseError::Failed(anyhow::anyhow!("no --contender command for {}", m.id))
        })?;
        return Ok(Launch::External {
            ext,
            cpus: ctx.plan.server_cpus(),
        });
    }
    // With --load-host: on the address the load hosts reach this host at.
    let (cmd, cpus) = match remote.and_then(|r| r.listen_addr()) {
        Some(addr) => serve_command_on(m, ctx.plan, protocol, &addr)?,
        None => serve_command(m, ctx.plan, protocol)?,
    };
    Ok(Launch::Child { cmd, cpus })
}

/// [`launch`] of an HTTP server asked to answer `body` bytes (`serve --body-bytes`; `None`:
/// its default body). Only ringside's own servers and peers on this host can be asked: an
/// external contender answers what its command does, and `remote-serve` serves the default.
pub(crate) fn launch_http(
    ctx: &Ctx<'_>,
    m: &ModelSpec,
    body: Option<u64>,
) -> Result<Launch, CaseError> {
    let l = launch(ctx, m, ServeProtocol::Http)?;
    let Some(n) = body else {
        return Ok(l);
    };
    match l {
        Launch::Child { mut cmd, cpus } => {
            cmd.args(["--body-bytes", &n.to_string()]);
            Ok(Launch::Child { cmd, cpus })
        }
        Launch::External { .. } => Err(CaseError::NotApplicable(
            "run --body-bytes sets the body of ringside's servers; an external contender              answers its own"
                .into(),
        )),
        Launch::Remote { host, .. } => Err(CaseError::Unavailable(format!(
            "run --body-bytes is not passed to the server on --server-host {host}"
        ))),
    }
}

/// With `run --server-host HOST`: `ringside remote-serve` on HOST over SSH, with this plan's
/// server thread count (the CPUs come from HOST's own plan). `None` without a server host.
fn remote_launch(
    ctx: &Ctx<'_>,
    m: &ModelSpec,
    protocol: ServeProtocol,
) -> Result<Option<Launch>, CaseError> {
    let Some((r, host)) = ctx.remote.and_then(|r| Some((r, r.server.as_ref()?))) else {
        return Ok(None);
    };
    if let Knobs::Peer(PeerKind::External) = m.knobs {
        return Err(CaseError::Unavailable(format!(
            "an external contender runs on this host only, not on --server-host {}",
            host.spec
        )));
    }
    if let Some(why) = &r.server_error {
        return Err(CaseError::Failed(anyhow::anyhow!(
            "server host {}: {why}",
            host.spec
        )));
    }
    let threads = ctx.plan.server_cpus().len().to_string();
    let mut args = vec![
        "remote-serve",
        "--protocol",
        protocol.as_str(),
        "--model",
        m.id,
        "--server-threads",
        &threads,
    ];
    if ctx.count_syscalls {
        args.push("--count-syscalls");
    }
    // With --load-host and --bind: where the load hosts reach the server host.
    let addr = r.listen_addr();
    if let Some(a) = &addr {
        args.extend(["--addr", a]);
    }
    Ok(Some(Launch::Remote {
        cmd: r.ssh.command(host, &args),
        host: host.spec.clone(),
    }))
}

/// One repetition against the server `cmd` starts, confined to `server_cpus`: the whole
/// measurement, usable with any server command that prints `listening on ADDR` (the tests use
/// a stand-in).
pub fn measure(
    ctx: &Ctx<'_>,
    cmd: Command,
    server_cpus: &[u32],
    conns: usize,
    msg_bytes: usize,
    warmup: Duration,
    duration: Duration,
) -> Result<Sample, CaseError> {
    let launch = Launch::Child {
        cmd,
        cpus: server_cpus.to_vec(),
    };
    measure_launch(ctx, launch, conns, msg_bytes, warmup, duration, None).map(|(s, _)| s)
}

fn measure_launch(
    ctx: &Ctx<'_>,
    launch: Launch,
    conns: usize,
    msg_bytes: usize,
    warmup: Duration,
    duration: Duration,
    rate: Option<f64>,
) -> Result<(Sample, Report), CaseError> {
    let ex = Echo { msg_bytes };
    let load = cell::Load {
        conns,
        warmup,
        duration,
        rate,
        exchange: &ex,
        bytes_received: false,
        after: None,
        around: None,
        churn: false,
    };
    cell::measure(ctx, launch, &load)
}
