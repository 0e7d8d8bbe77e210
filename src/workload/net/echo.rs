//! The echo suite (`ringside run echo`): each model's TCP echo server (`ringside serve
//! --protocol echo`) as a child process pinned to the plan's measured CPU, driven over loopback
//! by the load generator pinned to the helper CPU, measured from outside.
//!
//! Two workloads, one per sweep, so the suite is selected by the usual first component of the
//! id (`echo.conns`, `echo.payload`; `ringside run echo` runs both, `ringside run echo.conns`
//! one) and each table varies one parameter:
//! - `echo.conns`: connections 1, 2, 50, 100, 1000 (and 10,000 at `full`) at 64-byte messages;
//! - `echo.payload`: messages of 64, 512, 4096 and 16384 bytes at 50 connections.
//!
//! Per repetition: start the server, wait for `listening on`, run the closed-loop load for the
//! profile's duration after a warm-up, read the server's CPU (every task, io_uring's SQPOLL
//! and io-wq threads included) and context switches at the window's edges, and in the
//! runner's counting repetition its syscalls (a perf counter on every task of the server).
//! Latency per message goes into the Sample's histogram; one op is one message. The load
//! generator's CPU, errors, resets, mismatches and live connections go into the counters, and
//! `client_bound` / `shared_cpus` become warnings.

use super::server::Server;
use crate::error::CaseError;
use crate::load::{self, echo::Echo, Config, Edge};
use crate::measure::pin::{self, CpuPlan};
use crate::measure::syscalls::{Scope, SyscallCounter};
use crate::measure::{cpu, Counters, Measured, Sample};
use crate::model::{Knobs, ModelSpec, PeerKind};
use crate::plan::{Budget, Profile};
use crate::workload::{Ctx, Params, Point, Workload};
use std::process::Command;
use std::time::Duration;

/// Counter names this suite stores in each Sample (summed over repetitions by the runner).
pub mod counter {
    pub const LOAD_CPU_NS: &str = "load_cpu_ns";
    pub const CONNECT_ERRORS: &str = "load_connect_errors";
    pub const RESETS: &str = "load_resets";
    pub const IO_ERRORS: &str = "load_io_errors";
    pub const MISMATCHES: &str = "load_mismatches";
    pub const TIMEOUTS: &str = "load_timeouts";
    pub const LIVE_CONNS: &str = "load_live_conns";
    /// 1 in a repetition whose load generator was saturated (`load::CLIENT_BOUND_FRACTION`).
    pub const CLIENT_BOUND: &str = "client_bound";
    /// 1 in a repetition where server and load generator had to share one CPU.
    pub const SHARED_CPUS: &str = "shared_cpus";
}

const OP: &str = "one message echoed over loopback TCP (closed loop: sent, whole echo received \
                  and verified); latency per message at the client; CPU, context switches and \
                  syscalls are the server's, measured from outside";

/// How long a server may take to print `listening on`.
const READY_WITHIN: Duration = Duration::from_secs(10);
/// How long a server may take to exit after SIGTERM.
const STOP_WITHIN: Duration = Duration::from_secs(5);

/// Models with a TCP echo server: ringside's own (`io::serves_tcp`) and the built-in peers,
/// which `ringside serve` runs from `src/peer/`.
fn serves_tcp(m: &ModelSpec) -> bool {
    crate::io::serves_tcp(m) || matches!(m.knobs, Knobs::Peer(PeerKind::Tokio | PeerKind::Monoio))
}

fn accepts(m: &ModelSpec) -> Result<(), String> {
    if serves_tcp(m) {
        Ok(())
    } else {
        Err("this model has no TCP echo server".into())
    }
}

/// (warm-up, measured) milliseconds per repetition for a profile.
fn timing(profile: Profile) -> (u64, u64) {
    match profile {
        Profile::Smoke => (100, 400),
        Profile::Quick => (200, 1_000),
        Profile::Full => (2_000, 20_000),
    }
}

/// Each repetition starts a server and warms it up itself, so no warm-up repetitions; and a
/// sweep of ~120 cells at seconds each takes fewer repetitions than the micro loops: smoke 1,
/// quick 2, full 5 timed repetitions (plus the one that counts syscalls).
fn echo_budget(b: Budget) -> Budget {
    Budget {
        warmups: 0,
        repetitions: (b.repetitions / 5).clamp(1, 5),
        ..b
    }
}

fn point(profile: Profile, conns: u64, msg: u64) -> Point {
    let (warm, dur) = timing(profile);
    Point::new(
        Params::new()
            .with("conns", conns)
            .with("msg_bytes", msg)
            .with("duration_ms", dur)
            .with("warmup_ms", warm),
    )
}

/// `echo.conns`: the connection sweep at 64-byte messages.
pub struct EchoConns;
/// `echo.payload`: the message-size sweep at 50 connections.
pub struct EchoPayload;

impl Workload for EchoConns {
    fn id(&self) -> &'static str {
        "echo.conns"
    }
    fn budget(&self, b: Budget) -> Budget {
        echo_budget(b)
    }
    fn about(&self) -> &'static str {
        "TCP echo server per model, 64-byte messages, 1 to 1000 (full: 10,000) connections, loopback"
    }
    fn op(&self) -> &'static str {
        OP
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        if m.uring_knobs().is_some_and(|k| k.zc_send) {
            return Err("SEND_ZC pays only for large payloads: it runs in echo.payload".into());
        }
        accepts(m)
    }
    fn points(&self, profile: Profile, _: &ModelSpec) -> Vec<Point> {
        let mut conns = vec![1, 2, 50, 100, 1000];
        if profile == Profile::Full {
            conns.push(10_000);
        }
        conns.into_iter().map(|c| point(profile, c, 64)).collect()
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        run_point(ctx, m, p)
    }
}

impl Workload for EchoPayload {
    fn id(&self) -> &'static str {
        "echo.payload"
    }
    fn budget(&self, b: Budget) -> Budget {
        echo_budget(b)
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
        [64, 512, 4096, 16384]
            .into_iter()
            .map(|b| point(profile, 50, b))
            .collect()
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        run_point(ctx, m, p)
    }
}

/// `ringside serve --protocol echo --model ID --addr 127.0.0.1:0 --cpus LIST` from this binary,
/// and the CPUs the child may use (set before exec, so every thread it makes inherits them):
/// the measured CPU; for SQPOLL models also the helper CPU, where the poller goes (shared with
/// the load generator: on two CPUs there is no third; the results record it as `sqpoll_cpu`).
/// The server pins itself to the first CPU of the list.
pub fn serve_command(m: &ModelSpec, plan: &CpuPlan) -> Result<(Command, Vec<u32>), CaseError> {
    let exe = std::env::current_exe()
        .map_err(|e| CaseError::Failed(anyhow::anyhow!("cannot find this executable: {e}")))?;
    let sqpoll = m.uring_knobs().is_some_and(|k| k.sqpoll_idle_ms.is_some());
    let mut cpus = vec![plan.measured];
    if let Some(h) = plan.helper.filter(|_| sqpoll && !plan.shared()) {
        cpus.push(h);
    }
    let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
    let mut c = Command::new(exe);
    c.args(["serve", "--protocol", "echo", "--model", m.id])
        .args(["--addr", "127.0.0.1:0", "--cpus", &list.join(",")]);
    Ok((c, cpus))
}

fn run_point(ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
    let (cmd, cpus) = serve_command(m, ctx.plan)?;
    measure(
        ctx,
        cmd,
        &cpus,
        p.params.u64("conns")? as usize,
        p.params.u64("msg_bytes")? as usize,
        Duration::from_millis(p.params.u64("warmup_ms")?),
        Duration::from_millis(p.params.u64("duration_ms")?),
    )
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
    let plan = ctx.plan;
    let shared = plan.shared();
    let load_cpu = plan.helper.filter(|_| !shared).unwrap_or(plan.measured);
    // This thread (the runner's, pinned to the measured CPU) reads /proc at the window's edges
    // and spawns the server's pipe readers: keep all of that off the server's CPU.
    let _ = pin::pin_this_thread(load_cpu);
    let res = measure_pinned(
        ctx,
        cmd,
        server_cpus,
        conns,
        msg_bytes,
        warmup,
        duration,
        load_cpu,
    );
    let _ = pin::pin_this_thread(plan.measured);
    res
}

#[allow(clippy::too_many_arguments)]
fn measure_pinned(
    ctx: &Ctx<'_>,
    cmd: Command,
    server_cpus: &[u32],
    conns: usize,
    msg_bytes: usize,
    warmup: Duration,
    duration: Duration,
    load_cpu: u32,
) -> Result<Sample, CaseError> {
    let plan = ctx.plan;
    // A SQPOLL server's poller runs on the load generator's CPU when there is no third CPU.
    let shared = plan.shared() || server_cpus.contains(&load_cpu);
    let mut server = Server::start(cmd, server_cpus, READY_WITHIN)?;
    let pid = server.pid();
    let counter = ctx
        .count_syscalls
        .then(|| SyscallCounter::open(Scope::Process(pid)));
    let mut cfg = Config::new(server.addr, conns, duration);
    cfg.warmup = warmup;
    cfg.threads = 1;
    cfg.cpus = vec![load_cpu];
    let (mut cpu0, mut cpu1) = (None, None);
    let (mut sys0, mut sys1) = (0, 0);
    let ex = Echo { msg_bytes };
    let report = load::run(&cfg, &ex, &mut |e| {
        let c = cpu::process(pid).ok();
        let s = match &counter {
            Some(Ok(c)) => c.read(),
            _ => 0,
        };
        match e {
            Edge::Open => (cpu0, sys0) = (c, s),
            Edge::Close => (cpu1, sys1) = (c, s),
        }
    });
    let report = report.map_err(|e| server.fail(&format!("load generator: {e}")))?;
    if let Some(how) = server.exited() {
        return Err(server.fail(&format!("server died during the run ({how})")));
    }
    let (Some(c0), Some(c1)) = (cpu0, cpu1) else {
        return Err(server.fail("cannot read the server's CPU from /proc"));
    };
    if report.live_conns == 0 {
        let why = format!(
            "no connection survived ({})",
            report.first_error.as_deref().unwrap_or("no error recorded")
        );
        return Err(server.fail(&why));
    }
    let syscalls = counter.as_ref().map(|c| match c {
        Ok(c) => Measured::Value(c.window(sys0, sys1)),
        Err(why) => Measured::unavailable(why.clone()),
    });
    drop(counter);
    let (_, server_counters) = server.stop(STOP_WITHIN)?;
    let mut counters = Counters::default();
    counters.merge(&server_counters);
    counters.add(counter::LOAD_CPU_NS, report.cpu_ns);
    counters.add(counter::CONNECT_ERRORS, report.connect_errors);
    counters.add(counter::RESETS, report.resets);
    counters.add(counter::IO_ERRORS, report.io_errors);
    counters.add(counter::MISMATCHES, report.mismatches);
    counters.add(counter::TIMEOUTS, report.timeouts);
    counters.add(counter::LIVE_CONNS, report.live_conns);
    counters.add(counter::CLIENT_BOUND, u64::from(report.client_bound));
    counters.add(counter::SHARED_CPUS, u64::from(shared));
    Ok(Sample {
        ops: report.msgs,
        bytes: report.bytes,
        wall_ns: report.window_ns,
        timed_ns: report.window_ns,
        cpu: c1.since(&c0),
        syscalls,
        latency: report.latency,
        counters,
    })
}
