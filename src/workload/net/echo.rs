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

use super::cell;
use super::launch::Launch;
use crate::error::CaseError;
use crate::load::echo::Echo;
use crate::measure::pin::CpuPlan;
use crate::measure::Sample;
use crate::model::{Knobs, ModelSpec, PeerKind};
use crate::profile::{Budget, Profile};
use crate::workload::{Ctx, Params, Point, Workload};
use std::process::Command;
use std::time::Duration;

pub use super::cell::counter;

const OP: &str = "one message echoed over loopback TCP (closed loop: sent, whole echo received \
                  and verified); latency per message at the client; CPU, context switches and \
                  syscalls are the server's, measured from outside";

/// Models with a TCP echo server: ringside's own (`io::serves_tcp`), the built-in peers,
/// which `ringside serve` runs from `src/peer/`, and external contenders (`--contender`) that
/// speak echo.
fn serves_tcp(m: &ModelSpec) -> bool {
    crate::io::serves_tcp(m) || matches!(m.knobs, Knobs::Peer(PeerKind::Tokio | PeerKind::Monoio))
}

fn accepts(m: &ModelSpec) -> Result<(), String> {
    // Which protocol a contender speaks is its catalog entry's to say (the run keeps it to
    // the suites of that protocol).
    if let Knobs::Peer(PeerKind::External) = m.knobs {
        return Ok(());
    }
    if serves_tcp(m) {
        Ok(())
    } else {
        Err("this model has no TCP echo server".into())
    }
}

fn point(profile: Profile, conns: u64, msg: u64) -> Point {
    let (warm, dur) = cell::timing(profile);
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
        cell::budget(b)
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
        cell::budget(b)
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

/// `ringside serve --protocol PROTO --model ID --addr 127.0.0.1:0 --cpus LIST` from this binary,
/// and the CPUs the child may use (set before exec, so every thread it makes inherits them):
/// the measured CPU; for SQPOLL models also the helper CPU, where the poller goes (shared with
/// the load generator: on two CPUs there is no third; the results record it as `sqpoll_cpu`).
/// The server pins itself to the first CPU of the list.
pub fn serve_command(
    m: &ModelSpec,
    plan: &CpuPlan,
    protocol: &str,
) -> Result<(Command, Vec<u32>), CaseError> {
    let exe = std::env::current_exe()
        .map_err(|e| CaseError::Failed(anyhow::anyhow!("cannot find this executable: {e}")))?;
    let sqpoll = m.uring_knobs().is_some_and(|k| k.sqpoll_idle_ms.is_some());
    let mut cpus = vec![plan.measured];
    if let Some(h) = plan.helper.filter(|_| sqpoll && !plan.shared()) {
        cpus.push(h);
    }
    let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
    let mut c = Command::new(exe);
    c.args(["serve", "--protocol", protocol, "--model", m.id])
        .args(["--addr", "127.0.0.1:0", "--cpus", &list.join(",")]);
    Ok((c, cpus))
}

fn run_point(ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
    let launch = launch(ctx, m, "echo")?;
    measure_launch(
        ctx,
        launch,
        p.params.u64("conns")? as usize,
        p.params.u64("msg_bytes")? as usize,
        Duration::from_millis(p.params.u64("warmup_ms")?),
        Duration::from_millis(p.params.u64("duration_ms")?),
    )
}

/// How model `m`'s server for `protocol` is started: an external contender's command (from
/// the run's catalog), or `ringside serve` ([`serve_command`]).
pub fn launch(ctx: &Ctx<'_>, m: &ModelSpec, protocol: &str) -> Result<Launch, CaseError> {
    if let Knobs::Peer(PeerKind::External) = m.knobs {
        let ext = ctx.contenders.get(m.id).cloned().ok_or_else(|| {
            CaseError::Failed(anyhow::anyhow!("no --contender command for {}", m.id))
        })?;
        return Ok(Launch::External {
            ext,
            cpus: vec![ctx.plan.measured],
        });
    }
    let (cmd, cpus) = serve_command(m, ctx.plan, protocol)?;
    Ok(Launch::Child { cmd, cpus })
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
    measure_launch(ctx, launch, conns, msg_bytes, warmup, duration)
}

fn measure_launch(
    ctx: &Ctx<'_>,
    launch: Launch,
    conns: usize,
    msg_bytes: usize,
    warmup: Duration,
    duration: Duration,
) -> Result<Sample, CaseError> {
    let ex = Echo { msg_bytes };
    let load = cell::Load {
        conns,
        warmup,
        duration,
        rate: None,
        exchange: &ex,
        bytes_received: false,
        after: None,
    };
    cell::measure(ctx, launch, &load).map(|(s, _)| s)
}
