//! What a workload's figures mean, declared on its row (`Workload::facts`) and read by the
//! exporters: whether it measures a server driven by the load generator, what its ops are
//! called, whether its points sweep the offered rate, and which charts it gets (bars per
//! parameter point, or lines of a metric against a sweep parameter). Nothing outside a
//! workload decides these from its id.

use super::schema::CaseFigures;
use serde::{Deserialize, Serialize};

/// A figure a chart can plot, with its unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Median latency per op, ns; whisker up to p99.
    LatencyP50,
    /// 99th percentile latency per op, ns.
    LatencyP99,
    /// Median over repetitions of ops/s; whisker min..max over repetitions.
    OpsPerSec,
    /// Syscalls per 100 ops, measured by the perf counter.
    SyscallsPer100,
    /// CPU time per op over all threads, ns.
    CpuPerOp,
    /// The server's resident memory per idle connection it held, bytes (`conn.idle`'s
    /// `idle_memory`).
    IdleRssBytes,
    /// Kernel memory charged to the server's own memory cgroup per idle connection, bytes
    /// (`conn.idle`'s `idle_memory`).
    IdleKernelBytes,
}

impl Metric {
    const ALL: [Metric; 7] = [
        Metric::LatencyP50,
        Metric::LatencyP99,
        Metric::OpsPerSec,
        Metric::SyscallsPer100,
        Metric::CpuPerOp,
        Metric::IdleRssBytes,
        Metric::IdleKernelBytes,
    ];

    /// The metric whose [`Metric::slug`] is `s`.
    pub(crate) fn from_slug(s: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.slug() == s)
    }

    /// Short name used in titles and file names.
    pub(crate) fn slug(self) -> &'static str {
        match self {
            Metric::LatencyP50 => "latency",
            Metric::LatencyP99 => "p99",
            Metric::OpsPerSec => "ops",
            Metric::SyscallsPer100 => "syscalls",
            Metric::CpuPerOp => "cpu",
            Metric::IdleRssBytes => "idle-rss",
            Metric::IdleKernelBytes => "idle-kernel",
        }
    }

    /// Chart title; bars say what their whiskers show, and their band when they have one
    /// ([`Metric::band`]).
    pub(crate) fn title(self, bars: bool, band: bool) -> &'static str {
        match (self, bars) {
            (Metric::LatencyP50, true) if band => {
                "latency per op (median, dark band its 95% CI, whisker to p99)"
            }
            (Metric::LatencyP50, true) => "latency per op (median, whisker to p99)",
            (Metric::LatencyP50, false) => "latency per op (median)",
            (Metric::LatencyP99, true) if band => "p99 latency per op (dark band its 95% CI)",
            (Metric::LatencyP99, _) => "p99 latency per op",
            (Metric::OpsPerSec, true) => {
                "throughput (median of runs, whisker 95% CI, else min-max)"
            }
            (Metric::OpsPerSec, false) => "throughput (median of runs)",
            (Metric::SyscallsPer100, _) => "syscalls per 100 ops (measured)",
            (Metric::CpuPerOp, true) if band => {
                "CPU time per op (all threads, dark band its 95% CI)"
            }
            (Metric::CpuPerOp, _) => "CPU time per op (all threads)",
            (Metric::IdleRssBytes, _) => "server resident memory per idle connection",
            (Metric::IdleKernelBytes, _) => {
                "kernel memory per idle connection (the server's memory cgroup)"
            }
        }
    }

    /// A time in nanoseconds.
    pub(crate) fn is_time(self) -> bool {
        matches!(
            self,
            Metric::LatencyP50 | Metric::LatencyP99 | Metric::CpuPerOp
        )
    }

    /// A memory figure per idle connection: no claim ranks by it, so no chart fades a
    /// model by the workload's finding on it.
    pub(crate) fn is_memory(self) -> bool {
        matches!(self, Metric::IdleRssBytes | Metric::IdleKernelBytes)
    }

    /// Y axis label; a time's unit is the drawing's, as its ticks show it
    /// ([`Metric::is_time`]).
    pub(crate) fn axis(self) -> &'static str {
        match self {
            Metric::LatencyP50 => "p50 latency per op",
            Metric::LatencyP99 => "p99 latency per op (median of runs)",
            Metric::OpsPerSec => "throughput, ops/s",
            Metric::SyscallsPer100 => "syscalls per 100 ops",
            Metric::CpuPerOp => "CPU time per op",
            Metric::IdleRssBytes => "RSS bytes per idle connection",
            Metric::IdleKernelBytes => "kernel bytes per idle connection",
        }
    }

    /// The value for a measured cell, if it has one.
    pub(crate) fn value(self, f: &CaseFigures) -> Option<f64> {
        let v = match self {
            Metric::LatencyP50 => f.latency_ns.p50,
            Metric::LatencyP99 => f.p99_typical(),
            Metric::OpsPerSec => f.ops_per_sec.median,
            Metric::SyscallsPer100 => *f.syscalls_per_op.value()? * 100.0,
            Metric::CpuPerOp => f.cpu_ns_per_op.total,
            Metric::IdleRssBytes => *f.idle_memory.as_ref()?.server_rss_bytes.value()?,
            Metric::IdleKernelBytes => *f.idle_memory.as_ref()?.server_kernel_bytes.value()?,
        };
        v.is_finite().then_some(v)
    }

    /// The whisker drawn on a bar: p50..p99 for latency, min..max of runs for throughput.
    pub(crate) fn whisker(self, f: &CaseFigures) -> Option<(f64, f64)> {
        match self {
            Metric::LatencyP50 => Some((f.latency_ns.p50, f.latency_ns.p99)),
            // The 95% CI of the median of runs where recorded, else min..max of runs.
            Metric::OpsPerSec => Some(
                f.ci95
                    .as_ref()
                    .and_then(|i| i.ops_per_sec)
                    .unwrap_or((f.ops_per_sec.min, f.ops_per_sec.max)),
            ),
            _ => None,
        }
    }

    /// The 95% confidence interval of the bar's own figure, drawn as a band on it (latency
    /// percentiles: `stats::bootstrap` over repetitions; absent with one repetition).
    pub(crate) fn band(self, f: &CaseFigures) -> Option<(f64, f64)> {
        let ci = f.ci95.as_ref()?;
        match self {
            Metric::LatencyP50 => ci.latency_ns.p50,
            Metric::LatencyP99 if f.runs_p99_ns.is_empty() => ci.latency_ns.p99,
            Metric::LatencyP99 => ci.runs_p99_ns,
            Metric::CpuPerOp => ci.cpu_ns_per_op,
            _ => None,
        }
    }
}

/// Lines of a metric against a numeric parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sweep {
    /// Candidate parameter names; the first one the cases carry is used.
    pub(crate) params: &'static [&'static str],
    /// X axis label with its unit.
    pub(crate) axis: &'static str,
    pub(crate) log_x: bool,
}

/// What charts a workload gets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChartSpec {
    /// Lines against a sweep parameter; `None`: bars per parameter point.
    pub(crate) sweep: Option<Sweep>,
    pub(crate) metrics: &'static [Metric],
    pub(crate) log_y: bool,
    /// Bars: parameters whose values get a chart each (the first that varies), where they
    /// change a figure's scale (page cache against O_DIRECT).
    pub(crate) panels: &'static [&'static str],
    /// The figure verdicts compare (lower is better for latency/CPU, higher for ops/s).
    pub(crate) verdict: Metric,
}

/// What a network workload's ops are called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Units {
    /// Its rate: "msgs/s".
    pub(crate) rate: &'static str,
    /// One op: "message".
    pub(crate) op: &'static str,
}

/// What a workload's figures mean (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Facts {
    /// A network server driven by ringside's load generator (echo, HTTP, pubsub, stream): its
    /// figures are ranked by server CPU per op at equal offered load, or by throughput only
    /// where the load generator had headroom.
    pub(crate) net: bool,
    /// What its ops are called (network workloads).
    pub(crate) units: Units,
    /// Its points sweep the offered rate (`echo.rate`, `http.rate`): each model's capacity is
    /// where it fell behind, and no throughput ranking is made past it.
    pub(crate) rate_sweep: bool,
    /// Its load generator offers a fixed rate and times each op from its intended send time
    /// (`echo.rate`, `http.rate`, `pubsub.fanout`), rather than sending the next op when the
    /// reply came back (closed loop): its sweep is ranked by latency ([`ChartSpec::verdict`]),
    /// a closed-loop one by throughput where the load generator had headroom.
    pub(crate) open_loop: bool,
    /// Its cells are the rungs of an ablation ladder (`model::ladder::RUNGS`): the reports
    /// add each rung's step (`analysis::ladder`).
    pub(crate) ladder: bool,
    pub(crate) chart: ChartSpec,
}

const BAR_METRICS: &[Metric] = &[
    Metric::LatencyP50,
    Metric::OpsPerSec,
    Metric::SyscallsPer100,
    Metric::CpuPerOp,
];

/// Servers: throughput and tail latency against load, and what each op costs.
const NET_METRICS: &[Metric] = &[
    Metric::OpsPerSec,
    Metric::LatencyP99,
    Metric::SyscallsPer100,
    Metric::CpuPerOp,
];

/// Bars per parameter point, ranked by median latency.
pub(crate) const BARS: ChartSpec = ChartSpec {
    sweep: None,
    metrics: BAR_METRICS,
    log_y: false,
    panels: &[],
    verdict: Metric::LatencyP50,
};

/// Lines of `metrics` against the log-scaled sweep parameter `params` (the first the cases
/// carry), ranked by `verdict`.
pub(crate) const fn lines(
    params: &'static [&'static str],
    axis: &'static str,
    metrics: &'static [Metric],
    verdict: Metric,
) -> ChartSpec {
    ChartSpec {
        sweep: Some(Sweep {
            params,
            axis,
            log_x: true,
        }),
        metrics,
        log_y: true,
        panels: &[],
        verdict,
    }
}

/// Network charts: the four server figures against `params`, ranked by throughput.
pub(crate) const fn net_lines(params: &'static [&'static str], axis: &'static str) -> ChartSpec {
    lines(params, axis, NET_METRICS, Metric::OpsPerSec)
}

impl Units {
    pub(crate) const MESSAGES: Units = Units {
        rate: "msgs/s",
        op: "message",
    };
    pub(crate) const REQUESTS: Units = Units {
        rate: "req/s",
        op: "request",
    };
    pub(crate) const CONNECTIONS: Units = Units {
        rate: "conns/s",
        op: "connection",
    };
    pub(crate) const DELIVERIES: Units = Units {
        rate: "deliveries/s",
        op: "delivery",
    };
    pub(crate) const DATAGRAMS: Units = Units {
        rate: "datagrams/s",
        op: "datagram",
    };
    pub(crate) const WRITES: Units = Units {
        rate: "writes/s",
        op: "write",
    };
}

impl Facts {
    /// A loop on the measured thread (the micro suite), and what a results file's unknown
    /// workload gets: bars, no network units.
    pub(crate) const LOCAL: Facts = Facts {
        net: false,
        units: Units::MESSAGES,
        rate_sweep: false,
        open_loop: false,
        ladder: false,
        chart: BARS,
    };
    /// Files (the storage suite): bars, ranked by throughput (latency at queue depth 32 is
    /// mostly queueing; throughput is the comparable figure).
    pub(crate) const STORAGE: Facts = Facts {
        chart: ChartSpec {
            verdict: Metric::OpsPerSec,
            panels: &["direct"],
            ..BARS
        },
        ..Facts::LOCAL
    };

    /// A server driven by the load generator in closed loop, its ops called `units`, charted
    /// `chart`.
    pub(crate) const fn net(units: Units, chart: ChartSpec) -> Facts {
        Facts {
            net: true,
            units,
            rate_sweep: false,
            open_loop: false,
            ladder: false,
            chart,
        }
    }

    /// These facts for a load generator in open loop ([`Facts::open_loop`]).
    pub(crate) const fn open(self) -> Facts {
        Facts {
            open_loop: true,
            ..self
        }
    }
}

/// One copy of each distinct text a results file's facts name (units, sweep parameters), kept
/// for the process: [`Facts`] holds `&'static str`s, and a file holds as many distinct texts
/// as it is long at most (`results::store` caps a file at 64 MiB).
fn intern(s: &str) -> &'static str {
    static POOL: std::sync::Mutex<std::collections::BTreeSet<&'static str>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&k) = pool.get(s) {
        return k;
    }
    let k: &'static str = Box::leak(s.to_string().into_boxed_str());
    pool.insert(k);
    k
}

/// [`intern`] for a list of parameter names.
fn intern_list(v: &[String]) -> &'static [&'static str] {
    static POOL: std::sync::Mutex<Vec<&'static [&'static str]>> = std::sync::Mutex::new(Vec::new());
    let v: Vec<&'static str> = v.iter().map(|s| intern(s)).collect();
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&k) = pool.iter().find(|k| ***k == v[..]) {
        return k;
    }
    let k: &'static [&'static str] = Box::leak(v.into_boxed_slice());
    pool.push(k);
    k
}

impl Facts {
    /// These facts (this build's row's, or [`Facts::LOCAL`] for a workload it does not know)
    /// with what results file recorded for the workload over them: what its figures mean
    /// (server or not, its units, rate sweep, open loop, ladder, the figure it is ranked by,
    /// its sweep parameter) is the file's; how its charts are laid out (axis titles, panels,
    /// scales) stays the build's, or the defaults of its kind.
    pub(crate) fn with_record(self, r: &FactsRecord) -> Facts {
        let units = match (&r.rate_unit, &r.op_unit) {
            (Some(rate), Some(op)) => Units {
                rate: intern(rate),
                op: intern(op),
            },
            _ => self.units,
        };
        let mut chart = self.chart;
        chart.verdict = Metric::from_slug(&r.verdict).unwrap_or(chart.verdict);
        if r.net && !self.net {
            chart.metrics = NET_METRICS;
        }
        let same_sweep = chart.sweep.is_some_and(|s| {
            s.params
                .iter()
                .copied()
                .eq(r.sweep.iter().map(String::as_str))
        });
        if r.sweep.is_empty() {
            chart.sweep = None;
        } else if !same_sweep {
            let params = intern_list(&r.sweep);
            chart.sweep = Some(Sweep {
                params,
                axis: params[0],
                log_x: true,
            });
            chart.log_y = true;
        }
        Facts {
            net: r.net,
            units,
            rate_sweep: r.rate_sweep,
            open_loop: r.open_loop,
            ladder: r.ladder,
            chart,
        }
    }
}

/// A workload's facts as results.json records them (`workloads`, by id), for whoever reads
/// the file: what its figures mean without knowing its id. `report` and `compare` read them
/// ([`Facts::with_record`]); this build's rows only for files that lack them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FactsRecord {
    /// See [`Facts::net`].
    pub(crate) net: bool,
    /// A network workload's rate and one op ("msgs/s", "message"); absent for the others,
    /// whose op is the workload's `op` text of each cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rate_unit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) op_unit: Option<String>,
    pub(crate) rate_sweep: bool,
    /// See [`Facts::open_loop`] (absent from files written before it: closed loop).
    #[serde(default)]
    pub(crate) open_loop: bool,
    pub(crate) ladder: bool,
    /// The parameter its charts draw lines against (the first its cells carry), if any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) sweep: Vec<String>,
    /// The figure its verdicts rank by: "latency" (p50), "p99", "ops", "syscalls" or "cpu".
    pub(crate) verdict: String,
}

impl From<&Facts> for FactsRecord {
    fn from(f: &Facts) -> FactsRecord {
        FactsRecord {
            net: f.net,
            rate_unit: f.net.then(|| f.units.rate.into()),
            op_unit: f.net.then(|| f.units.op.into()),
            rate_sweep: f.rate_sweep,
            open_loop: f.open_loop,
            ladder: f.ladder,
            sweep: f.chart.sweep.map_or(Vec::new(), |s| {
                s.params.iter().map(|p| p.to_string()).collect()
            }),
            verdict: f.chart.verdict.slug().into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workload's row's facts reach results.json and load back; a file written before
    /// them loads with none.
    #[test]
    fn facts_are_recorded_and_older_files_load_without_them() {
        let w = crate::registry::workload("echo.rate").unwrap();
        let r = FactsRecord::from(&w.facts());
        assert!(r.net && r.rate_sweep && r.open_loop && !r.ladder);
        assert_eq!(
            (r.rate_unit.as_deref(), r.op_unit.as_deref()),
            (Some("msgs/s"), Some("message"))
        );
        let micro = crate::registry::workload("micro.pipe").unwrap();
        assert_eq!(FactsRecord::from(&micro.facts()).op_unit, None);
        assert_eq!(
            (r.sweep, r.verdict.as_str()),
            (vec!["rate_per_sec".to_string()], "p99")
        );
        let mut run: crate::results::RunResults =
            crate::results::store::parse(include_str!("../../tests/fixtures/results.json"))
                .unwrap();
        assert!(run.workloads.is_empty());
        run.workloads
            .insert("echo.rate".into(), FactsRecord::from(&w.facts()));
        let back: crate::results::RunResults =
            serde_json::from_str(&serde_json::to_string(&run).unwrap()).unwrap();
        assert_eq!(back.workloads, run.workloads);
    }

    /// A closed-loop network workload is ranked by throughput (where its load generator had
    /// headroom), an open-loop one by latency: each row's declared loop and ranking agree, so
    /// no closed-loop sweep is ranked by latency as if its ops had been offered at a rate.
    #[test]
    fn a_network_workload_ranks_by_what_its_loop_measures() {
        for w in crate::registry::WORKLOADS {
            let f = w.facts();
            if !f.net {
                assert!(!f.open_loop && !f.rate_sweep, "{}", w.id());
                continue;
            }
            let by_throughput = f.chart.verdict == Metric::OpsPerSec;
            assert_eq!(
                by_throughput,
                !f.open_loop,
                "{}: {:?}",
                w.id(),
                f.chart.verdict
            );
            assert!(!f.rate_sweep || f.open_loop, "{}", w.id());
        }
        let cores = crate::registry::workload("echo.cores").unwrap().facts();
        assert!(cores.net && !cores.open_loop && cores.chart.sweep.is_some());
    }
}
