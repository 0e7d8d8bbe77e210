//! One network cell's repetition, whatever the protocol: start the server under test pinned to
//! the plan's measured CPU, drive it with the load generator pinned to the helper CPU, read the
//! server's CPU (every task of every process it runs, io_uring's kernel threads included) and,
//! in the runner's counting repetition, its syscalls at the window's edges; stop it; turn the
//! load report into a [`Sample`] with the load generator's CPU, errors and warnings as
//! counters. A repetition in which any response did not verify (a mismatched echo, a wrong
//! HTTP body, a non-2xx or malformed response, in the window or the warm-up) fails the cell,
//! with the count and the first wrong byte's offset: those responses are never ops. The echo and HTTP suites differ only in the [`Exchange`] and the counting of
//! bytes. With `run --load-host` the load generator runs on those hosts instead
//! ([`crate::load::remote`]: the same edges, a merged report); with `--server-host` the
//! server's readings are taken on its host.
//!
//! Its parts: [`edges`] reads the server at the window's edges, [`sample`] makes the Sample of
//! those readings and the load report, and [`slices`] keeps a server up for a round of
//! interleaved slices, an open-loop point's repetition.

mod edges;
mod sample;
mod slices;

pub(crate) use slices::{merge_slices, slicing, start_live};
pub use slices::{Live, Slicing};

use super::launch::{Launch, UnderTest};
use crate::error::CaseError;
use crate::load::{self, Config, Edge, Exchange, Report};
use crate::measure::pin;
use crate::measure::syscalls::{Scope, SyscallCounter};
use crate::measure::uring_trace::UringTrace;
use crate::measure::{CellCounters, Sample};
use crate::profile::{Budget, Profile};
use crate::workload::Ctx;
use edges::{remote_figures, Counting, Edges, Tracing};
use sample::sample_of;
use std::time::Duration;

/// The load generator's figures and flags go into each Sample's typed
/// [`crate::measure::cell::LoadCounters`] (their names are results.json's counter names).
pub use crate::measure::cell::LoadCounters;

/// (warm-up, measured) milliseconds per repetition for a profile: an open-loop point's
/// repetition measures its time as interleaved slices ([`slicing`]), a closed-loop one as one
/// window after the warm-up.
pub(crate) fn timing(profile: Profile) -> (u64, u64) {
    match profile {
        Profile::Smoke => (100, 400),
        Profile::Quick => (100, 800),
        Profile::Full => (2_000, 20_000),
    }
}

/// Each repetition starts a server and warms it up itself, so no warm-up repetitions; and a
/// sweep of ~100 cells at seconds each takes fewer rounds than the micro loops: smoke 1, quick
/// 6 and full 10 (plus the one that counts syscalls) — at least six, the fewest with which a
/// paired claim between two models (the signed-rank test over the rounds) can reach p < 0.05
/// (2/2^6 = 0.031); quick keeps its time by shorter windows (0.33 s). `--runs N` as given.
pub(crate) fn budget(b: Budget) -> Budget {
    Budget {
        warmups: 0,
        repetitions: b.rounds(),
        extra_rounds: b.extra_rounds(),
        ..b
    }
}

/// The longest window of the repetition that counts syscalls.
pub const COUNTING_WINDOW: Duration = Duration::from_millis(200);

/// How long a server may take to exit after SIGTERM.
pub(crate) const STOP_WITHIN: Duration = Duration::from_secs(5);

/// A second measurement against the same warmed server after ringside's window (wrk), given
/// the server's address and the load generator's CPU; its counters join the Sample's.
pub(crate) type After = dyn Fn(std::net::SocketAddr, u32) -> Result<CellCounters, String>;

/// What the load generator does in one repetition.
pub(crate) struct Load<'a> {
    pub(crate) conns: usize,
    pub(crate) warmup: Duration,
    pub(crate) duration: Duration,
    /// Open loop: requests/s over all connections; `None`: closed loop.
    pub(crate) rate: Option<f64>,
    pub(crate) exchange: &'a dyn Exchange,
    /// `Sample::bytes`: the payload of each message (echo) or every byte received (HTTP's
    /// transfer/s).
    pub(crate) bytes_received: bool,
    /// See [`After`]; a failure is counted (`after_failures`), not fatal.
    pub(crate) after: Option<&'a After>,
    /// See [`Around`].
    pub(crate) around: Option<&'a dyn Around>,
    /// A connection per message ([`load::Config::churn`]): `conns` are concurrent clients.
    pub(crate) churn: bool,
}

/// Work against the live server around the load generator's run (`conn.idle`: connections
/// held idle through it), on this host. It keeps what it learns itself (the workload reads
/// it once the repetition is over).
pub(crate) trait Around {
    /// Once the server listens (`members`: its processes on this host now, every call), before
    /// the load generator starts; an error fails the repetition, saying why.
    fn before(
        &self,
        addr: std::net::SocketAddr,
        members: &dyn Fn() -> Vec<u32>,
    ) -> Result<(), String>;
    /// Once the load generator is done, before the server is judged and stopped.
    fn after(&self);
}

/// One repetition: the Sample, and the load report it came from.
pub(crate) fn measure(
    ctx: &Ctx<'_>,
    launch: Launch,
    load: &Load<'_>,
) -> Result<(Sample, Report), CaseError> {
    let plan = ctx.plan;
    let mut load_cpus = plan.load_cpus();
    if matches!(launch, Launch::Remote { .. }) {
        // The server runs on another host: the load generator takes the server's CPUs here too.
        load_cpus.extend(plan.server_cpus());
        load_cpus.sort_unstable();
        load_cpus.dedup();
    }
    // This thread (the runner's, pinned to the measured CPU) reads /proc at the window's edges
    // and spawns the server's pipe readers: keep all of that off the server's CPU.
    on_load_cpu(plan, &load_cpus, || {
        measure_pinned(ctx, launch, load, &load_cpus)
    })
}

/// [`measure`] on the load CPU: start the server, drive it, read it at the window's edges,
/// judge the report and make the Sample.
fn measure_pinned(
    ctx: &Ctx<'_>,
    launch: Launch,
    load: &Load<'_>,
    load_cpus: &[u32],
) -> Result<(Sample, Report), CaseError> {
    let plan = ctx.plan;
    // `run --load-host`: the load generator runs on other hosts (`load::remote`).
    let remote_load = ctx.remote.filter(|r| !r.load.is_empty());
    let wire = remote_wire(remote_load, load)?;
    // A SQPOLL server's poller runs on a load generator's CPU when there is no spare one.
    // (Never with the server on another host, nor with the load generator elsewhere.)
    let shared = !matches!(launch, Launch::Remote { .. })
        && remote_load.is_none()
        && (plan.shared() || launch.cpus().iter().any(|c| load_cpus.contains(c)));
    // An external contender is confined to its CPUs too, so this holds for every server.
    let server_cpus = launch.cpus().len();
    // `run --explain`: sample the server's CPUs from before it starts (perf takes a moment to
    // start) and keep the window's samples.
    let sampling = if matches!(launch, Launch::Remote { .. }) {
        ctx.explain.map(|_| {
            Err("the server runs on another host (--server-host): its CPUs are not sampled".into())
        })
    } else {
        let max = load.warmup + load.duration + Duration::from_secs(60);
        ctx.explain_start(launch.cpus(), load_cpus, max)
    };
    let mut server: UnderTest = launch.start()?;
    let pids = server.pids();
    if let Some(a) = load.around {
        if let Err(why) = a.before(server.addr(), &|| server.members()) {
            a.after();
            // With the server's stderr tail, and whether it still ran.
            let e = match server.exited() {
                Some(how) => server.fail(&format!("{why}; the server exited ({how})")),
                None => server.fail(&why),
            };
            let _ = server.stop(STOP_WITHIN);
            return Err(e);
        }
    }
    // A remote server's syscalls are counted on its host (`remote-serve --count-syscalls`).
    let counters: Counting = (ctx.count_syscalls && !server.is_remote()).then(|| {
        pids.iter()
            .map(|&p| SyscallCounter::open(Scope::Process(p)))
            .collect()
    });
    // io_uring's tracepoints over the same tasks, in an io_uring model's counting repetition.
    let uring: Tracing = ctx.count_uring.then(|| {
        if server.is_remote() {
            return Err(
                "the server runs on another host (--server-host): its io_uring \
                        tracepoints are not counted"
                    .into(),
            );
        }
        pids.iter()
            .map(|&p| UringTrace::open(Scope::Process(p)))
            .collect()
    });
    let cfg = load_config(ctx, &server, load, load_cpus);
    let mut edges = Edges::default();
    if remote_load.is_none() && !shared {
        edges.load_cpus = load_cpus.to_vec();
    }
    let mut on_edge = |e: Edge| edges.read(e, &mut server, &counters, &uring);
    let report = match (remote_load, &wire) {
        (Some(r), Some(wire)) => load::remote::run(r, &cfg, wire, &mut on_edge),
        _ => {
            load::run(&cfg, load.exchange, &mut on_edge).map_err(|e| format!("load generator: {e}"))
        }
    };
    ctx.explain_finish(sampling, edges.seen[0], edges.seen[1], &pids);
    if let Some(a) = load.around {
        a.after();
    }
    let report = report.map_err(|e| match server.exited() {
        // With load hosts, a server that died is the cell's story; else a load host's error.
        Some(how) if remote_load.is_some() => {
            server.fail(&format!("server died during the run ({how}); {e}"))
        }
        _ if remote_load.is_some() => CaseError::Failed(anyhow::anyhow!("{e}")),
        _ => server.fail(&e),
    })?;
    let server = judge_report(server, &report)?;
    let mut extra = CellCounters::default();
    if remote_load.is_some() {
        // How many load hosts lacked headroom (summed over repetitions, as counters are; the
        // hosts themselves are in results.json `hosts`).
        extra.add("load_hosts_client_bound", report.bound_hosts.len() as u64);
    }
    // A second load generator from this host (wrk) has no place beside remote load hosts.
    if let Some(after) = load.after.filter(|_| remote_load.is_none()) {
        match after(server.addr(), load_cpus[0]) {
            Ok(c) => extra = c,
            Err(_) => extra.add("after_failures", 1),
        }
    }
    // The server's readings at the window's edges: taken here, or on the server's host and
    // reported when it stops.
    let load_idle = edges.load_idle(report.window_ns);
    let uring = uring.map(|u| u.map(|_| edges.uring[1].since(&edges.uring[0])));
    let mut figures = if server.is_remote() {
        remote_figures(server, &report)?
    } else {
        edges.figures(server, counters, server_cpus)?
    };
    figures.uring = uring;
    let sample = sample_of(load, &report, figures, extra, shared, load_idle);
    Ok((sample, report))
}

/// Runs `f` on this thread pinned to the first load CPU, then back on the measured one: the
/// runner's /proc reads and the server's pipe readers stay off the server's CPU.
fn on_load_cpu<T>(
    plan: &pin::CpuPlan,
    load_cpus: &[u32],
    f: impl FnOnce() -> Result<T, CaseError>,
) -> Result<T, CaseError> {
    let repin = |cpu: u32, whose: &str| {
        pin::pin_this_thread(cpu)
            .map_err(|e| CaseError::Failed(anyhow::anyhow!("the runner's thread ({whose}): {e}")))
    };
    repin(load_cpus[0], "load CPU")?;
    let res = f();
    repin(plan.measured, "measured CPU")?;
    res
}

/// With `--load-host`: what the remote load generators speak (their setup error, or a
/// workload whose load runs on this host only, fails the cell).
fn remote_wire(
    remote_load: Option<&crate::remote::Remote>,
    load: &Load<'_>,
) -> Result<Option<crate::load::Wire>, CaseError> {
    let Some(r) = remote_load else {
        return Ok(None);
    };
    if let Some(why) = &r.load_error {
        return Err(CaseError::Failed(anyhow::anyhow!("{why}")));
    }
    if load.churn {
        return Err(CaseError::Unavailable(
            "a connection per message is driven from this host only, not from --load-host".into(),
        ));
    }
    load.exchange.wire().map(Some).ok_or_else(|| {
        CaseError::Failed(anyhow::anyhow!(
            "this workload's load generator runs on this host only, not on --load-host"
        ))
    })
}

/// The load generator's configuration for one repetition against `server`.
fn load_config(ctx: &Ctx<'_>, server: &UnderTest, load: &Load<'_>, load_cpus: &[u32]) -> Config {
    // The counting repetition's figure is a ratio (syscalls per op over its own ops): a short
    // window is enough, and every network cell pays for one.
    let duration = if ctx.count_syscalls {
        load.duration.min(COUNTING_WINDOW)
    } else {
        load.duration
    };
    let mut cfg = Config::new(server.addr(), load.conns, duration);
    cfg.warmup = load.warmup;
    cfg.rate = load.rate;
    // One load thread per load CPU (the plan gives the load every CPU it can spare).
    cfg.threads = load_cpus.len();
    cfg.cpus = load_cpus.to_vec();
    cfg.engine = ctx.load_engine;
    cfg.churn = load.churn;
    cfg
}

/// Whether the repetition measured anything: the server still runs, its responses verified,
/// a connection survived and a response completed in the window. Otherwise the cell's error
/// (a stall, when a running server answered nothing: the runner tries once more); the server
/// back when it did.
fn judge_report(mut server: UnderTest, report: &Report) -> Result<UnderTest, CaseError> {
    if let Some(how) = server.exited() {
        return Err(server.fail(&format!("server died during the run ({how})")));
    }
    // A server whose responses did not verify is not measured: its cell fails, saying how
    // many and where the first wrong byte was.
    if let Some(why) = report.unverified() {
        let _ = server.stop(STOP_WITHIN);
        return Err(CaseError::Failed(anyhow::anyhow!(
            "the server's responses did not verify: {why}"
        )));
    }
    if report.n.live_conns == 0 {
        let why = format!(
            "no connection survived ({})",
            report.first_error.as_deref().unwrap_or("no error recorded")
        );
        return Err(server.fail(&why));
    }
    if report.n.msgs == 0 {
        let why = format!(
            "no response completed in the measured window of {} ({} timeouts; {} \
             connections never answered in a warm-up of {}{}; {})",
            ms_text(report.window_ns),
            report.n.timeouts,
            report.n.unsettled_conns,
            ms_text(report.warmup_ns),
            datagrams_text(&report.dgram),
            report.first_error.as_deref().unwrap_or("no error recorded")
        );
        // A server still running that answered nothing stalled for the whole window: the
        // runner tries the repetition once more before it fails the cell.
        return Err(match (server.fail(&why), server.exited()) {
            (CaseError::Failed(e), None) => CaseError::Stalled(e),
            (e, _) => e,
        });
    }
    Ok(server)
}

/// `ns` in milliseconds, to the tenth under 10 ms (a short window is not "0 ms").
fn ms_text(ns: u64) -> String {
    if ns < 10_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        format!("{} ms", ns / 1_000_000)
    }
}

/// Where a datagram load's datagrams went, for a window that completed none: how many were
/// sent, lost (no echo within the loss timeout) and echoed after it (late: answered, but
/// too late to be an op). Empty for a stream load.
fn datagrams_text(d: &crate::measure::cell::DatagramCounts) -> String {
    if d.dgram_sent == 0 {
        return String::new();
    }
    format!(
        "; of {} datagrams sent in the window, {} lost (no echo within the loss timeout) and \
         {} echoed after it (late, so not ops)",
        d.dgram_sent, d.dgram_lost, d.dgram_late
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::claims::{rounds_needed, ALPHA};

    /// Issue 46 item 9: a datagram window that completed nothing says where the datagrams
    /// went, late echoes counted, and a short window in its own unit.
    #[test]
    fn a_datagram_window_with_no_op_says_where_they_went() {
        let mut d = crate::measure::cell::DatagramCounts::default();
        assert_eq!(datagrams_text(&d), "");
        d.dgram_sent = 4000;
        d.dgram_lost = 4000;
        d.dgram_late = 3990;
        let t = datagrams_text(&d);
        assert!(
            t.contains("of 4000 datagrams sent in the window, 4000 lost"),
            "{t}"
        );
        assert!(t.contains("3990 echoed after it (late"), "{t}");
        assert_eq!(ms_text(400_000_000), "400 ms");
        assert_eq!(ms_text(2_500_000), "2.5 ms");
    }

    /// Two models' cells at quick and full can be told apart by a paired claim; `--runs` wins.
    #[test]
    fn network_cells_run_enough_rounds_to_decide() {
        for p in [Profile::Quick, Profile::Full] {
            let b = budget(p.budget());
            assert!(
                b.repetitions as usize >= rounds_needed(ALPHA),
                "{p:?}: {b:?}"
            );
            assert!(b.repetitions <= 10, "{p:?}: {b:?}");
        }
        assert_eq!(budget(Profile::Quick.budget()).repetitions, 6);
        let mut given = Profile::Quick.budget();
        (given.repetitions, given.runs_given) = (2, true);
        assert_eq!(budget(given).repetitions, 2);
    }
}
