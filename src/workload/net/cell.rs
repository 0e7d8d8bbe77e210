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

use super::launch::{Launch, UnderTest};
use crate::error::CaseError;
use crate::load::{self, Config, Edge, Exchange, Report};
use crate::measure::clock::now_ns;
use crate::measure::pin;
use crate::measure::syscalls::{Scope, SyscallCounter};
use crate::measure::uring_trace::{UringCounters, UringTrace};
use crate::measure::CounterSet;
use crate::measure::{cpu, CellCounters, Measured, Sample};
use crate::profile::{Budget, Profile};
use crate::workload::Ctx;
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
    /// Once the server listens (`pids`: its processes on this host), before the load
    /// generator starts; an error fails the repetition, saying why.
    fn before(&self, addr: std::net::SocketAddr, pids: &[u32]) -> Result<(), String>;
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
    let repin = |cpu: u32, whose: &str| {
        pin::pin_this_thread(cpu)
            .map_err(|e| CaseError::Failed(anyhow::anyhow!("the runner's thread ({whose}): {e}")))
    };
    repin(load_cpus[0], "load CPU")?;
    let res = measure_pinned(ctx, launch, load, &load_cpus);
    repin(plan.measured, "measured CPU")?;
    res
}

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
        if let Err(why) = a.before(server.addr(), &pids) {
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

/// A server kept up for a round of interleaved slices (`runner`: an open-loop point's round
/// starts one server per model, drives each in turn for [`SLICE`] at a time, then stops
/// them; `Slicer`). Its figures are read at each slice's edges, as a repetition's are; its
/// own counters when it stops.
pub struct Live {
    /// `None` once a slice failed (the server was stopped then).
    server: Option<UnderTest>,
    cpus: usize,
    load_cpus: Vec<u32>,
    shared: bool,
}

/// How an open-loop point's repetition is cut into slices (`Workload::slices`): each model's
/// `per_round` slices of `window`, each after its own `warmup` of fresh connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slicing {
    pub(crate) window: Duration,
    pub(crate) warmup: Duration,
    pub(crate) per_round: u32,
}

/// The shortest slice: on the 2-vCPU VM more, shorter slices cancelled more of the machine's
/// drift (per-round paired sd 0.11-0.14 at two slices of 400 ms, 0.06-0.08 at four of 200 ms,
/// 0.03-0.05 at sixteen of 50 ms, the same 0.8 s measured: docs/method.md).
pub(crate) const SLICE: Duration = Duration::from_millis(50);
/// The warm-up of a slice's fresh connections (the load generator extends it while any has
/// not had its first answer).
pub(crate) const SLICE_WARMUP: Duration = Duration::from_millis(20);
/// A slice is at least this long per connection: each slice opens its connections afresh,
/// and a thousand of them every 50 ms would make the slices mostly connecting.
const SLICE_PER_CONN: Duration = Duration::from_micros(200);

/// The slices of an open-loop point with `conns` connections measured `duration` per
/// repetition: [`SLICE`] (longer with many connections), as many as fit in `duration`.
pub(crate) fn slicing(conns: u64, duration: Duration) -> Slicing {
    let window = SLICE.max(SLICE_PER_CONN * conns.min(10_000) as u32);
    Slicing {
        window,
        warmup: SLICE_WARMUP,
        per_round: (duration.as_nanos() / window.as_nanos()).max(1) as u32,
    }
}

/// Starts the server for a round of slices (this host only: the runner slices no point with
/// other hosts).
pub(crate) fn start_live(ctx: &Ctx<'_>, launch: Launch) -> Result<Live, CaseError> {
    if matches!(launch, Launch::Remote { .. }) || ctx.remote.is_some() {
        return Err(CaseError::Failed(anyhow::anyhow!(
            "a round of slices runs on this host only"
        )));
    }
    let plan = ctx.plan;
    let load_cpus = plan.load_cpus();
    let shared = plan.shared() || launch.cpus().iter().any(|c| load_cpus.contains(c));
    let cpus = launch.cpus().len();
    let server = on_load_cpu(plan, &load_cpus, || launch.start())?;
    Ok(Live {
        server: Some(server),
        cpus,
        load_cpus,
        shared,
    })
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

impl Live {
    /// One slice: `load` (its warm-up, then its window) against the live server, the server's
    /// CPU read at the window's edges; the Sample as a repetition's, without the server's own
    /// counters (they come at [`Live::stop`]). A failure stops the server.
    pub(crate) fn slice(
        &mut self,
        ctx: &Ctx<'_>,
        load: &Load<'_>,
    ) -> Result<(Sample, Report), CaseError> {
        let load_cpus = self.load_cpus.clone();
        on_load_cpu(ctx.plan, &load_cpus, || self.slice_pinned(ctx, load))
    }

    fn slice_pinned(
        &mut self,
        ctx: &Ctx<'_>,
        load: &Load<'_>,
    ) -> Result<(Sample, Report), CaseError> {
        let Some(mut server) = self.server.take() else {
            return Err(CaseError::Failed(anyhow::anyhow!("the server was stopped")));
        };
        let cfg = load_config(ctx, &server, load, &self.load_cpus);
        let mut edges = Edges::default();
        if !self.shared {
            edges.load_cpus = self.load_cpus.clone();
        }
        let (counting, tracing): (Counting, Tracing) = (None, None);
        let report = {
            let mut on_edge = |e: Edge| edges.read(e, &mut server, &counting, &tracing);
            load::run(&cfg, load.exchange, &mut on_edge)
        };
        let report = match report {
            Ok(r) => r,
            Err(e) => {
                let err = server.fail(&format!("load generator: {e}"));
                let _ = server.stop(STOP_WITHIN);
                return Err(err);
            }
        };
        let server = judge_report(server, &report)?;
        let load_idle = edges.load_idle(report.window_ns);
        let [Some(c0), Some(c1)] = edges.cpu else {
            let err = server.fail("cannot read the server's CPU from /proc");
            let _ = server.stop(STOP_WITHIN);
            return Err(err);
        };
        self.server = Some(server);
        let figures = ServerFigures {
            cpu: [c0, c1],
            at: edges.at,
            syscalls: None,
            uring: None,
            counters: Default::default(),
            cpus: self.cpus,
        };
        let sample = sample_of(
            load,
            &report,
            figures,
            CellCounters::default(),
            self.shared,
            load_idle,
        );
        Ok((sample, report))
    }

    /// Stops the server: its own counters (`server_*`), or why it could not be stopped.
    pub(crate) fn stop(self) -> Result<crate::measure::Counters, CaseError> {
        match self.server {
            Some(s) => s.stop(STOP_WITHIN),
            None => Ok(Default::default()),
        }
    }
}

/// One repetition made of a round's slices of one model: ops, bytes, windows, CPU and
/// latency added up, the timeline the slices' windows end to end, the counters summed but the
/// per-repetition flags (`client_bound`, `both_saturated`, `shared_cpus`, the load engine)
/// set once where any slice set them, the live connections the fewest any slice had, and the
/// open-loop rates over all the windows (`fell_behind` judged on them); plus the server's own
/// counters from its stop.
pub(crate) fn merge_slices(
    slices: Vec<Sample>,
    server: &crate::measure::Counters,
) -> Option<Sample> {
    let mut it = slices.into_iter();
    let mut s = it.next()?;
    let mut live = s.counters.load.map(|l| l.load_live_conns);
    let mut offered = Vec::new();
    let note = |x: &Sample, offered: &mut Vec<(u64, u64, u64)>| {
        if let Some(o) = x.counters.open_loop {
            offered.push((o.offered_per_sec, o.achieved_per_sec, x.wall_ns));
        }
    };
    note(&s, &mut offered);
    for x in it {
        note(&x, &mut offered);
        live = match (live, x.counters.load.map(|l| l.load_live_conns)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        s.ops += x.ops;
        s.bytes += x.bytes;
        s.wall_ns += x.wall_ns;
        s.timed_ns += x.timed_ns;
        s.cpu = cpu::CpuReading {
            total_ns: s.cpu.total_ns + x.cpu.total_ns,
            user_ns: s.cpu.user_ns + x.cpu.user_ns,
            sys_ns: s.cpu.sys_ns + x.cpu.sys_ns,
            ctx_switches: s.cpu.ctx_switches + x.cpu.ctx_switches,
        };
        s.latency.merge(&x.latency);
        match (&mut s.timeline, &x.timeline) {
            (Some(a), Some(b)) => a.append(b),
            (a @ None, Some(b)) => *a = Some(b.clone()),
            _ => {}
        }
        s.counters.merge(&x.counters);
    }
    if let Some(l) = s.counters.load.as_mut() {
        l.client_bound = l.client_bound.min(1);
        l.both_saturated = l.both_saturated.min(1);
        l.shared_cpus = l.shared_cpus.min(1);
        l.load_engine_uring = l.load_engine_uring.min(1);
        l.load_live_conns = live.unwrap_or(0);
    }
    if let (Some(o), false) = (s.counters.open_loop.as_mut(), offered.is_empty()) {
        let window: u64 = offered.iter().map(|x| x.2).sum::<u64>().max(1);
        let mean = |f: fn(&(u64, u64, u64)) -> u64| {
            let sum: f64 = offered.iter().map(|x| f(x) as f64 * x.2 as f64).sum();
            (sum / window as f64).round() as u64
        };
        o.offered_per_sec = mean(|x| x.0);
        o.achieved_per_sec = mean(|x| x.1);
        o.fell_behind = u64::from(crate::stats::equal_load::fell_behind(
            o.offered_per_sec as f64,
            o.achieved_per_sec as f64,
        ));
    }
    s.counters.other.merge(server);
    Some(s)
}

/// The syscall counters of the server's processes, in the counting repetition.
type Counting = Option<Result<Vec<SyscallCounter>, String>>;

/// The io_uring tracepoints' counters of the server's processes, in an io_uring model's
/// counting repetition.
type Tracing = Option<Result<Vec<UringTrace>, String>>;

/// What the io_uring counters read now (zeros when not counting).
fn read_uring(t: &Tracing) -> UringCounters {
    let mut sum = UringCounters::default();
    if let Some(Ok(ts)) = t {
        for t in ts {
            sum.merge(&t.read());
        }
    }
    sum
}

/// What the counters read now (0 when not counting).
fn read_syscalls(cs: &Counting) -> u64 {
    match cs {
        Some(Ok(cs)) => cs.iter().map(|c| c.read()).sum(),
        _ => 0,
    }
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

/// The server's readings at the window's edges ([0]: the opening, [1]: the closing), taken
/// on this host; a remote server reads its own when told ([`UnderTest::edge`]).
#[derive(Default)]
struct Edges {
    cpu: [Option<cpu::ProcessesReading>; 2],
    syscalls: [u64; 2],
    uring: [UringCounters; 2],
    /// When each edge's readings were taken: a reading taken late (this thread woke late on
    /// a busy machine) covers a shorter or longer span than the client's window.
    at: [u64; 2],
    /// When each edge was seen, for the explain sampling.
    seen: [u64; 2],
    /// The load CPUs' idle time at each edge (`measure::cpu::idle_ns`) and when it was read;
    /// `None`: not read (load on other hosts, or CPUs shared with the server).
    load_cpus: Vec<u32>,
    load_idle: [Option<(u64, u64)>; 2],
}

/// The server's figures over the window, from either host.
struct ServerFigures {
    cpu: [cpu::ProcessesReading; 2],
    /// When the syscall counts were read at each edge.
    at: [u64; 2],
    syscalls: Option<Result<u64, String>>,
    /// What the io_uring tracepoints counted over the window (an io_uring model's counting
    /// repetition), or why they could not be.
    uring: Option<Result<UringCounters, String>>,
    counters: crate::measure::Counters,
    /// The CPUs the server was given.
    cpus: usize,
}

impl Edges {
    fn read(&mut self, e: Edge, server: &mut UnderTest, counters: &Counting, uring: &Tracing) {
        let i = usize::from(matches!(e, Edge::Close));
        self.seen[i] = now_ns();
        if !self.load_cpus.is_empty() {
            self.load_idle[i] = cpu::idle_ns(&self.load_cpus).map(|ns| (ns, now_ns()));
        }
        if server.is_remote() {
            // Read on the server's host when the line arrives there.
            server.edge(i == 0);
            return;
        }
        // The CPU clocks are read back to back and timed by their own reads
        // (`ProcessesReading::at_ns`), not by the slow /proc walk that follows them.
        self.cpu[i] = server.read_cpu();
        let t0 = now_ns();
        self.syscalls[i] = read_syscalls(counters);
        self.at[i] = t0 / 2 + now_ns() / 2;
        self.uring[i] = read_uring(uring);
    }

    /// The load CPUs' idle time over the edges, scaled to `window_ns`, and how many CPUs it
    /// covers; `None` when it was not read.
    fn load_idle(&self, window_ns: u64) -> Option<(u64, usize)> {
        let [Some((i0, t0)), Some((i1, t1))] = self.load_idle else {
            return None;
        };
        let idle =
            i1.saturating_sub(i0) as f64 * window_ns as f64 / t1.saturating_sub(t0).max(1) as f64;
        Some((idle.round() as u64, self.load_cpus.len()))
    }

    /// The local server's figures: its edges' readings, its counters once stopped.
    fn figures(
        self,
        server: UnderTest,
        counters: Counting,
        cpus: usize,
    ) -> Result<ServerFigures, CaseError> {
        let [Some(c0), Some(c1)] = self.cpu else {
            return Err(server.fail("cannot read the server's CPU from /proc"));
        };
        // Less each counter's own start/read cost.
        let syscalls = counters.as_ref().map(|c| match c {
            Ok(cs) => Ok(self.syscalls[1]
                .saturating_sub(self.syscalls[0])
                .saturating_sub(cs.iter().map(|c| c.window_overhead()).sum())),
            Err(why) => Err(why.clone()),
        });
        drop(counters);
        Ok(ServerFigures {
            cpu: [c0, c1],
            at: self.at,
            syscalls,
            uring: None,
            counters: server.stop(STOP_WITHIN)?,
            cpus,
        })
    }
}

/// A remote server's figures, read on its host at the edges and reported when it stops.
fn remote_figures(server: UnderTest, report: &Report) -> Result<ServerFigures, CaseError> {
    let f = server.finish_remote(STOP_WITHIN)?;
    let (Some(e0), Some(e1)) = (f.open, f.close) else {
        return Err(CaseError::Failed(anyhow::anyhow!(
            "the remote server could not read its CPU at the window's edges"
        )));
    };
    // The CPUs its host's plan gave the server, and a SQPOLL poller one more.
    let plan_cpus = f.server_cpus.len() + f.plan.as_ref().map_or(1, |p| p.sqpoll.iter().count());
    if let Some(why) = crate::remote::implausible_edges(&e0, &e1, plan_cpus, report.window_ns) {
        return Err(CaseError::Failed(anyhow::anyhow!(
            "the remote server's figures are implausible: {why}"
        )));
    }
    let syscalls = f.syscalls.map(|r| {
        r.map(|overhead| {
            e1.syscalls
                .saturating_sub(e0.syscalls)
                .saturating_sub(overhead)
        })
    });
    Ok(ServerFigures {
        cpu: [e0.processes(), e1.processes()],
        at: [e0.sys_at_ns, e1.sys_at_ns],
        syscalls,
        uring: None,
        counters: f.counters,
        cpus: f.server_cpus.len(),
    })
}

/// The repetition's Sample: the server's figures rescaled to the client's window (the two
/// spans differ by the edges' wake-up delays: microseconds on a quiet machine, milliseconds
/// on a busy one), so that per-op ratios divide like by like, with the load's counters.
fn sample_of(
    load: &Load<'_>,
    report: &Report,
    f: ServerFigures,
    extra: CellCounters,
    shared: bool,
    load_idle: Option<(u64, usize)>,
) -> Sample {
    let rescale = |v: u64, span: u64| {
        (v as f64 * report.window_ns as f64 / span.max(1) as f64).round() as u64
    };
    let scale = |v: u64| rescale(v, f.at[1].saturating_sub(f.at[0]));
    let [c0, c1] = &f.cpu;
    let cpu_scale = |v: u64| rescale(v, c1.at_ns.saturating_sub(c0.at_ns));
    let syscalls = f.syscalls.map(|r| match r {
        Ok(n) => Measured::Value(scale(n)),
        Err(why) => Measured::unavailable(why),
    });
    let uring = f.uring.map(|r| match r {
        Ok(u) => Measured::Value(UringCounters {
            uring_punted: scale(u.uring_punted),
            uring_completions: scale(u.uring_completions),
            uring_cqe_overflows: scale(u.uring_cqe_overflows),
            uring_task_work_runs: scale(u.uring_task_work_runs),
            uring_local_work_runs: scale(u.uring_local_work_runs),
        }),
        Err(why) => Measured::unavailable(why),
    });
    let mut c = extra;
    c.other.merge(&f.counters);
    // The server's CPU against the CPUs it was given (SQPOLL's poller may use a second one).
    // A reading above what the CPUs its tasks may use can give in the window is an accounting
    // error: capped, and the excess beyond clock noise kept (warning `cpu_over_allowed`).
    let raw = c1.cpu.since(&c0.cpu);
    let allowed = c0.cpus_allowed.max(c1.cpus_allowed);
    let (total_ns, over) = cpu::cap_to_allowed(cpu_scale(raw.total_ns), report.window_ns, allowed);
    if over > cpu::cap_tolerance(report.window_ns, allowed) {
        c.cpu_over_allowed_ns += over;
    }
    let cpu = cpu::CpuReading {
        total_ns,
        user_ns: cpu_scale(raw.user_ns),
        sys_ns: cpu_scale(raw.sys_ns),
        ctx_switches: cpu_scale(raw.ctx_switches),
    };
    let server_busy = cpu.total_ns as f64 / report.window_ns.max(1) as f64 / f.cpus.max(1) as f64;
    let (idle_ns, idle_cpus) = load_idle.unwrap_or((0, 0));
    let (client_bound, both_saturated) = headroom(report, server_busy, load_idle);
    let h = Headroom {
        idle: (idle_ns, idle_cpus as u64),
        client_bound,
        both_saturated,
        shared_cpus: u64::from(shared),
    };
    c.load = Some(load_counters(report, h));
    Sample {
        ops: report.n.msgs,
        bytes: if load.bytes_received {
            report.n.rx_bytes
        } else {
            report.n.bytes
        },
        wall_ns: report.window_ns,
        timed_ns: report.window_ns,
        cpu,
        syscalls,
        uring,
        memory: None,
        latency: report.latency.clone(),
        timeline: report.timeline.clone(),
        counters: c,
    }
}

/// The repetition's headroom flags, (client_bound, both_saturated), each 0 or 1: the load side
/// had none when its threads were busy (`Report::client_bound`) or its CPUs had under
/// 1 - [`load::CLIENT_BOUND_FRACTION`] of the window idle (`load_idle`: idle ns summed over
/// that many CPUs; other work on them, or kernel work no thread clock counts), whatever the
/// engine; the server was saturated at `server_busy` (its CPUs' busy share) of that fraction.
fn headroom(report: &Report, server_busy: f64, load_idle: Option<(u64, usize)>) -> (u64, u64) {
    let no_idle = load_idle.is_some_and(|(idle_ns, cpus)| {
        cpus > 0
            && (idle_ns as f64)
                < (1.0 - load::CLIENT_BOUND_FRACTION) * report.window_ns as f64 * cpus as f64
    });
    let load_bound = report.client_bound || no_idle;
    let server_saturated = server_busy >= load::CLIENT_BOUND_FRACTION;
    (
        u64::from(load_bound && !server_saturated),
        u64::from(load_bound && server_saturated),
    )
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
            "no response completed in the measured window of {} ms ({} timeouts; {} \
             connections never answered in a warm-up of {} ms; {})",
            report.window_ns / 1_000_000,
            report.n.timeouts,
            report.n.unsettled_conns,
            report.warmup_ns / 1_000_000,
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

/// The load side's headroom over one repetition (see [`headroom`]).
struct Headroom {
    /// The load CPUs' idle ns over the window, and over how many CPUs (0: not read).
    idle: (u64, u64),
    client_bound: u64,
    both_saturated: u64,
    shared_cpus: u64,
}

/// The load generator's figures a network cell records. Both sides are named in full: a
/// count added to [`load::Counts`] or a counter added to [`LoadCounters`] is a compile error
/// here until it is recorded or, with a reason, left out (no `..Default` can drop one).
fn load_counters(report: &Report, h: Headroom) -> LoadCounters {
    let load::Counts {
        // The ops, their bytes and CPU are the sample's own figures (`ops`, `bytes`, `cpu`);
        // the split of errors by direction, unsolicited bytes and the warm-up's invalid
        // responses fail the run (`Report::unverified`) or are in the errors counted.
        msgs: _,
        bytes: _,
        rx_bytes: _,
        read_errors: _,
        write_errors: _,
        unsolicited: _,
        warmup_invalid: _,
        verified_bytes: _,
        // `conn.churn` records its own (`workload::net::churn`).
        abortive_closes: _,
        connects: _,
        cpu_ns,
        connect_errors,
        resets,
        io_errors,
        mismatches,
        non_2xx,
        malformed,
        timeouts,
        reconnects,
        unsettled_conns,
        warmup_errors,
        live_conns,
    } = report.n;
    LoadCounters {
        load_cpu_ns: cpu_ns,
        load_window_ns: report.window_ns,
        load_connect_errors: connect_errors,
        load_resets: resets,
        load_io_errors: io_errors,
        load_mismatches: mismatches,
        load_timeouts: timeouts,
        load_non_2xx: non_2xx,
        load_malformed: malformed,
        load_reconnects: reconnects,
        load_warmup_errors: warmup_errors,
        load_live_conns: live_conns,
        load_lost_conns: (report.conns_requested as u64).saturating_sub(live_conns),
        load_warmup_ns: report.warmup_ns,
        load_unsettled_conns: unsettled_conns,
        load_engine_uring: u64::from(report.engine == load::Engine::Uring),
        load_idle_ns: h.idle.0,
        load_idle_cpus: h.idle.1,
        client_bound: h.client_bound,
        both_saturated: h.both_saturated,
        shared_cpus: h.shared_cpus,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::claims::{rounds_needed, ALPHA};

    /// Two models' cells at quick and full can be told apart by a paired claim; `--runs` wins.
    #[test]
    fn a_load_side_without_idle_cpu_has_no_headroom_whatever_its_threads_say() {
        let cfg = load::Config::new("127.0.0.1:1".parse().unwrap(), 1, Duration::from_secs(1));
        let mut r = Report::empty(&cfg, 1, None, 1_000_000_000, false);
        // Threads at 40% and the CPU half idle: headroom.
        assert_eq!(headroom(&r, 0.5, Some((500_000_000, 1))), (0, 0));
        // The same threads, but the CPU 5% idle (a neighbour, or softirq no thread clock
        // counts): no headroom, and with a saturated server, both.
        assert_eq!(headroom(&r, 0.5, Some((50_000_000, 1))), (1, 0));
        assert_eq!(headroom(&r, 0.95, Some((50_000_000, 1))), (0, 1));
        // Two CPUs: 150 ms idle of 2 s is under 10%.
        assert_eq!(headroom(&r, 0.5, Some((150_000_000, 2))), (1, 0));
        assert_eq!(headroom(&r, 0.5, Some((250_000_000, 2))), (0, 0));
        // Not read: the threads alone decide.
        assert_eq!(headroom(&r, 0.5, None), (0, 0));
        r.client_bound = true;
        assert_eq!(headroom(&r, 0.5, None), (1, 0));
        assert_eq!(headroom(&r, 0.5, Some((900_000_000, 1))), (1, 0));
    }

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
