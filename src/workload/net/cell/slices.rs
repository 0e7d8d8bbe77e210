//! A server kept up for a round of interleaved slices (`runner::slices`): an open-loop
//! point's round starts every model's server once, drives each in turn for short slices, then
//! stops them all. Each slice is measured as a repetition is (the server's CPU at its edges,
//! the same Sample), and a model's slices of the round add up to its repetition
//! ([`merge_slices`]).

use super::edges::{Counting, Edges, ServerFigures, Tracing};
use super::sample::sample_of;
use super::{judge_report, load_config, on_load_cpu, Load, STOP_WITHIN};
use crate::error::CaseError;
use crate::load::{self, Edge, Report};
use crate::measure::{cpu, CellCounters, Sample};
use crate::workload::net::launch::{Launch, UnderTest};
use crate::workload::Ctx;
use std::time::Duration;

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

    /// [`Live::slice`] on the load CPU.
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
        o.fell_behind = u64::from(crate::results::rates::fell_behind(
            o.offered_per_sec as f64,
            o.achieved_per_sec as f64,
        ));
    }
    s.counters.other.merge(server);
    Some(s)
}
