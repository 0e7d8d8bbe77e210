//! The one place results become tables: one table per workload and parameter point in the
//! published studies' shape (metrics as rows, models as columns), plus a long table with one
//! row per case for CSV. Also the number formats every view shares.

use crate::analysis::Analysis;
use crate::results::{CaseResult, RunResults, Status};

pub(crate) use super::format::{
    fmt_bytes, fmt_ns, fmt_rate, fmt_ratio, spike_text, Table, P99_TYPICAL,
};
use crate::measure::Measured;
use crate::results::schema::IdleMemory;

/// The row of the p99 a claim states ([`P99_TYPICAL`]).
pub(crate) const P99_TYPICAL_ROW: &str = "p99 (median of runs)";

/// A cell's typical p99 as the tables and the claims both show it: the same text.
pub(crate) fn p99_typical_text(f: &crate::results::schema::CaseFigures) -> String {
    fmt_ns(f.p99_typical())
}

/// Metric rows of the per-point tables: (label, cell for a measured case).
type Metric = (&'static str, fn(&CaseResult) -> String);

const METRICS: &[Metric] = &[
    ("median (p50)", |c| fig(c, |f| fmt_ns(f.latency_ns.p50))),
    ("mean", |c| fig(c, |f| fmt_ns(f.latency_ns.mean))),
    ("stddev", |c| fig(c, |f| fmt_ns(f.latency_ns.stddev))),
    ("p99 (pooled)", |c| {
        fig(c, |f| {
            let spike = f
                .p99_spike()
                .map(|(top, n, of)| format!(" ({})", spike_text(top, n, of)))
                .unwrap_or_default();
            thin(f, 0.99, fmt_ns(f.latency_ns.p99)) + &spike
        })
    }),
    (P99_TYPICAL_ROW, |c| fig(c, p99_typical_text)),
    ("p99.9 (pooled)", |c| {
        fig(c, |f| thin(f, 0.999, fmt_ns(f.latency_ns.p999)))
    }),
    ("ops/s (median of runs)", |c| {
        fig(c, |f| fmt_rate(f.ops_per_sec.median))
    }),
    ("run-to-run MAD of p50", |c| {
        fig(c, |f| fmt_ns(f.run_p50_ns.mad))
    }),
    ("syscalls/op (measured)", |c| {
        fig(c, |f| {
            f.syscalls_per_op
                .value()
                .map(|v| fmt_ratio(*v))
                .unwrap_or_else(|| "unavailable".into())
        })
    }),
    ("CPU/op (all threads)", |c| {
        fig(c, |f| fmt_ns(f.cpu_ns_per_op.total))
    }),
];

/// Rows of the tables where a cell counted io_uring's tracepoints (models on io_uring), set
/// beside syscalls/op: what io_uring did besides the syscalls (`UringPerOp`); "-" in the
/// columns of other models.
const URING_METRICS: &[Metric] = &[
    ("io_uring punted to io-wq/op", |c| uring(c, |u| u.punted)),
    ("io_uring completions/op", |c| uring(c, |u| u.completions)),
    ("io_uring CQ overflows/op", |c| {
        uring(c, |u| u.cqe_overflows)
    }),
    ("io_uring task-work runs/op", |c| {
        uring(c, |u| u.task_work_runs)
    }),
];

fn uring(c: &CaseResult, pick: fn(&crate::results::schema::UringPerOp) -> f64) -> String {
    fig(c, |f| {
        match (&f.uring_per_op, &f.uring_per_op_unavailable) {
            (Some(u), _) => fmt_ratio(pick(u)),
            (None, Some(_)) => "unavailable".into(),
            (None, None) => "-".into(),
        }
    })
}

/// Rows of the tables where a cell held idle connections (`conn.idle`'s `idle_memory`): the
/// connections held and still open at the window's close, then each memory reading per idle
/// connection as recorded (bytes; "unavailable" with the reason in a footnote); "-" in cells
/// that held none.
const IDLE_MEMORY_METRICS: &[Metric] = &[
    ("idle conns held (open at close)", |c| {
        idle(c, |m| format!("{} ({})", m.idle_conns, m.live_at_close_min))
    }),
    ("server RSS/idle conn", |c| {
        idle(c, |m| bytes(&m.server_rss_bytes))
    }),
    ("server kernel mem/idle conn", |c| {
        idle(c, |m| bytes(&m.server_kernel_bytes))
    }),
    ("server socket buffers/idle conn", |c| {
        idle(c, |m| bytes(&m.server_sock_buffer_bytes))
    }),
    ("machine socket slab/idle conn (both ends)", |c| {
        idle(c, |m| bytes(&m.machine_sock_slab_bytes))
    }),
    ("machine TCP buffers/idle conn (both ends)", |c| {
        idle(c, |m| bytes(&m.machine_tcp_buffer_bytes))
    }),
];

/// One of `idle_memory`'s readings.
pub(super) type Reading = fn(&IdleMemory) -> &Measured<f64>;

/// `idle_memory`'s readings with their row names, for the footnotes of unavailable ones.
pub(super) const IDLE_MEMORY_READINGS: &[(&str, Reading)] = &[
    ("server RSS", |m| &m.server_rss_bytes),
    ("server kernel mem", |m| &m.server_kernel_bytes),
    ("server socket buffers", |m| &m.server_sock_buffer_bytes),
    ("machine socket slab", |m| &m.machine_sock_slab_bytes),
    ("machine TCP buffers", |m| &m.machine_tcp_buffer_bytes),
];

fn idle(c: &CaseResult, show: fn(&IdleMemory) -> String) -> String {
    fig(c, |f| {
        f.idle_memory.as_ref().map_or_else(|| "-".into(), show)
    })
}

fn bytes(m: &Measured<f64>) -> String {
    match m {
        Measured::Value(v) => fmt_bytes(*v),
        Measured::Unavailable { .. } => "unavailable".into(),
    }
}

/// What a percentile cell carries when fewer than [`THIN_TAIL`] samples lie beyond it: the
/// figure is then mostly one or two hiccups (HTML greys such a cell).
pub(crate) const THIN: &str = " (thin tail: ";
/// Samples a percentile's tail must hold to be shown plainly.
pub(crate) const THIN_TAIL: f64 = 10.0;

fn thin(f: &crate::results::schema::CaseFigures, q: f64, text: String) -> String {
    match &f.ci95 {
        Some(i) if i.tail(q) < THIN_TAIL => {
            format!("{text}{THIN}{:.0} samples beyond)", i.tail(q).floor())
        }
        _ => text,
    }
}

fn ci_text(ci: Option<(f64, f64)>, fmt: fn(f64) -> String) -> String {
    ci.map(|(lo, hi)| format!("{}..{}", fmt(lo), fmt(hi)))
        .unwrap_or_else(|| "-".into())
}

/// Rows of cells that carry confidence intervals (`ci95`): 95% bootstrap intervals over the
/// repetitions, and the samples behind the percentiles.
const CI_METRICS: &[Metric] = &[
    ("p50 95% CI", |c| {
        fig(c, |f| {
            ci_text(f.ci95.as_ref().and_then(|i| i.latency_ns.p50), fmt_ns)
        })
    }),
    ("p99 95% CI", |c| {
        fig(c, |f| {
            ci_text(f.ci95.as_ref().and_then(|i| i.latency_ns.p99), fmt_ns)
        })
    }),
    ("p99.9 95% CI", |c| {
        fig(c, |f| {
            ci_text(f.ci95.as_ref().and_then(|i| i.latency_ns.p999), fmt_ns)
        })
    }),
    ("ops/s 95% CI (median of runs)", |c| {
        fig(c, |f| {
            ci_text(f.ci95.as_ref().and_then(|i| i.ops_per_sec), fmt_rate)
        })
    }),
    ("CPU/op 95% CI (median of runs)", |c| {
        fig(c, |f| {
            ci_text(f.ci95.as_ref().and_then(|i| i.cpu_ns_per_op), fmt_ns)
        })
    }),
    ("latency samples (beyond p99 / p99.9)", |c| {
        fig(c, |f| match &f.ci95 {
            Some(i) => format!(
                "{} ({:.0} / {:.0})",
                i.samples,
                i.tail(0.99).floor(),
                i.tail(0.999).floor()
            ),
            None => "-".into(),
        })
    }),
];

/// Rows added to the tables of the network suites (servers measured from outside), where the
/// figures exist: the student table's columns (max latency, transfer/s, server CPU%) and the
/// independent load generator's figure beside ringside's.
const NET_METRICS: &[Metric] = &[
    ("max", |c| fig(c, |f| fmt_ns(f.latency_ns.max))),
    ("transfer/s", |c| {
        fig(c, |f| fmt_bytes_rate(f.bytes_per_sec))
    }),
    ("server CPU %", |c| {
        fig(c, |f| format!("{:.0}%", f.cpu_busy * 100.0))
    }),
    ("load gen CPU %", |c| {
        fig(c, |f| {
            let (cpu, win) = f
                .counters
                .load
                .map_or((0, 0), |l| (l.load_cpu_ns, l.load_window_ns));
            if win == 0 {
                "-".into()
            } else {
                format!("{:.0}%", cpu as f64 * 100.0 / win as f64)
            }
        })
    }),
];

/// Rows of open-loop cells (equal-load points, rate sweeps): the rate offered to every model
/// (the runner's `rate_per_sec` at an equal-load point) and the rate each achieved.
const OPEN_LOOP_METRICS: &[Metric] = &[
    ("offered rate/s (equal load)", |c| {
        fig(c, |_| {
            c.offered_rate().map(fmt_rate).unwrap_or_else(|| "-".into())
        })
    }),
    ("achieved rate/s", |c| {
        fig(c, |_| {
            c.achieved_rate()
                .map(fmt_rate)
                .unwrap_or_else(|| "-".into())
        })
    }),
];

/// The row of a cores sweep's points past one thread (the runner's `scaling_efficiency`).
const SCALING_METRICS: &[Metric] = &[("scaling efficiency (1.0 = linear)", |c| {
    fig(c, |_| {
        c.scaling_efficiency
            .map(|e| format!("{e:.2}"))
            .unwrap_or_else(|| "-".into())
    })
})];

/// wrk's requests/s in the same cell, and its own CPU, when it ran.
const WRK_METRICS: &[Metric] = &[
    ("wrk req/s (same server)", |c| {
        fig(c, |f| {
            f.counters
                .wrk
                .as_ref()
                .and_then(|w| w.requests_per_sec())
                .map(fmt_rate)
                .unwrap_or_else(|| "-".into())
        })
    }),
    ("wrk CPU % (its one thread)", |c| {
        fig(c, |f| {
            f.counters
                .wrk
                .as_ref()
                .and_then(|w| w.cpu_busy())
                .map(|b| format!("{:.0}%", b * 100.0))
                .unwrap_or_else(|| "-".into())
        })
    }),
];

/// Bytes per second, binary units ("4.31 MiB/s").
pub(crate) fn fmt_bytes_rate(b: f64) -> String {
    let units = ["B/s", "KiB/s", "MiB/s", "GiB/s"];
    let mut v = b;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} {}", units[i])
    } else {
        format!("{v:.2} {}", units[i])
    }
}

fn fig(c: &CaseResult, f: impl Fn(&crate::results::schema::CaseFigures) -> String) -> String {
    match (&c.status, &c.figures) {
        (Status::Measured, Some(x)) => f(x),
        (s, _) => s.to_string(),
    }
}

/// One table per (workload, parameter point), in the order the cases ran.
pub fn metric_tables(run: &RunResults, a: &Analysis) -> Vec<Table> {
    metric_tables_by_workload(run, a)
        .into_iter()
        .flat_map(|(_, ts)| ts)
        .collect()
}

/// [`metric_tables`] with the workload each table belongs to: workloads in the order they
/// first ran, each with its tables in the order their points first ran. Linear in the cells:
/// each cell is keyed once, and found through a hash map.
pub(crate) fn metric_tables_by_workload(
    run: &RunResults,
    a: &Analysis,
) -> Vec<(String, Vec<Table>)> {
    use super::charts::{by_workload, Ordered, ParamRoles};
    let mut out = Vec::new();
    for (workload, cases) in by_workload(run) {
        let analysed = a.workload(workload);
        // A server's tables add its figures (the file's record of what they mean).
        let net = crate::analysis::cells::facts_in(run, workload).net;
        let roles = ParamRoles::of_cases(&cases);
        // Grouped by parameter point: parameters common to the workload or fixed per model
        // (see `charts::ParamRoles`) go to the note and the column headers instead. Cells of
        // models that take no part at all (n/a, no params) are listed in the footnotes.
        let mut points = Ordered::default();
        let mut groups: Vec<Vec<&CaseResult>> = Vec::new();
        let mut not_applicable: Vec<&CaseResult> = Vec::new();
        for c in cases.iter().copied() {
            if c.status == Status::NotApplicable && c.params.0.is_empty() {
                not_applicable.push(c);
                if c.figures.is_none() {
                    continue;
                }
            }
            let g = points.add(roles.point(c, None));
            if g == groups.len() {
                groups.push(Vec::new());
            }
            groups[g].push(c);
        }
        let tables = points
            .order
            .iter()
            .zip(groups)
            .flat_map(|(params, cases)| {
                let ladder = analysed.and_then(|w| super::ladder::table(w, params));
                std::iter::once(table_of(
                    workload,
                    net,
                    params,
                    &cases,
                    &roles,
                    &not_applicable,
                ))
                .chain(ladder)
            })
            .collect();
        out.push((workload.to_string(), tables));
    }
    out
}

/// The table of one parameter point of a workload.
fn table_of(
    workload: &str,
    net: bool,
    params: &str,
    cases: &[&CaseResult],
    roles: &super::charts::ParamRoles,
    not_applicable: &[&CaseResult],
) -> Table {
    let rows = metrics_of(net, cases)
        .into_iter()
        .map(|(name, cell)| {
            let mut r = vec![name.to_string()];
            r.extend(cases.iter().map(|c| cell(c)));
            r
        })
        .collect();
    let mut footnotes = status_notes(cases);
    footnotes.extend(unavailable_notes(cases));
    footnotes.extend(cell_notes(cases));
    for c in not_applicable {
        footnotes.push(format!(
            "{}: n/a: {}",
            c.label(),
            c.reason.as_deref().unwrap_or("")
        ));
    }
    let title = if params.is_empty() {
        workload.to_string()
    } else {
        format!("{workload} {params}")
    };
    let common = roles.common_text();
    Table {
        title,
        note: if common.is_empty() {
            format!("one op = {}", cases[0].op)
        } else {
            format!("one op = {}; {common}", cases[0].op)
        },
        header: column_header(cases, roles),
        rows,
        footnotes,
    }
}

/// The header: "metric", then each cell's label with its model's own params.
fn column_header(cases: &[&CaseResult], roles: &super::charts::ParamRoles) -> Vec<String> {
    let mut header = vec!["metric".to_string()];
    header.extend(cases.iter().map(|c| {
        let mp = roles.model_params(c);
        if mp.is_empty() {
            c.label()
        } else {
            format!("{} ({mp})", c.label())
        }
    }));
    header
}

/// `metrics` where `on`, else none.
fn when(on: bool, metrics: &'static [Metric]) -> &'static [Metric] {
    if on {
        metrics
    } else {
        &[]
    }
}

/// The metric rows a point's cells have figures for, in the table's order.
fn metrics_of(net: bool, cases: &[&CaseResult]) -> Vec<&'static Metric> {
    let any = |p: &dyn Fn(&crate::results::schema::CaseFigures) -> bool| {
        cases.iter().any(|c| c.figures.as_ref().is_some_and(p))
    };
    let wrk = when(
        any(&|f| {
            f.counters
                .wrk
                .as_ref()
                .and_then(|w| w.requests_per_sec())
                .is_some()
        }),
        WRK_METRICS,
    );
    let net = when(net, NET_METRICS);
    let open_loop = when(
        cases.iter().any(|c| c.offered_rate().is_some()),
        OPEN_LOOP_METRICS,
    );
    let scaling = when(
        cases.iter().any(|c| c.scaling_efficiency.is_some()),
        SCALING_METRICS,
    );
    let ci = when(any(&|f| f.ci95.is_some()), CI_METRICS);
    let uring = when(
        any(&|f| f.uring_per_op.is_some() || f.uring_per_op_unavailable.is_some()),
        URING_METRICS,
    );
    let idle_memory = when(any(&|f| f.idle_memory.is_some()), IDLE_MEMORY_METRICS);
    // The io_uring rows go right after syscalls/op.
    let (head, tail) = METRICS.split_at(
        METRICS
            .iter()
            .position(|(n, _)| n.starts_with("syscalls/op"))
            .map_or(METRICS.len(), |i| i + 1),
    );
    head.iter()
        .chain(uring)
        .chain(tail)
        .chain(ci)
        .chain(net)
        .chain(open_loop)
        .chain(scaling)
        .chain(wrk)
        .chain(idle_memory)
        .collect()
}

/// A footnote per cell not measured: its status and reason.
fn status_notes(cases: &[&CaseResult]) -> Vec<String> {
    cases
        .iter()
        .filter(|c| c.status != Status::Measured)
        .map(|c| {
            format!(
                "{}: {}: {}",
                c.label(),
                c.status,
                c.reason.as_deref().unwrap_or("")
            )
        })
        .collect()
}

/// Why a figure is unavailable (syscalls, io_uring tracepoints, idle memory), each reason once.
fn unavailable_notes(cases: &[&CaseResult]) -> Vec<String> {
    let mut sys_reasons: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut add = |line: String| {
        if seen.insert(line.clone()) {
            sys_reasons.push(line);
        }
    };
    for c in cases.iter().filter_map(|c| c.figures.as_ref()) {
        if let crate::measure::Measured::Unavailable { unavailable } = c.syscalls_per_op.measured()
        {
            add(format!("syscalls/op unavailable: {unavailable}"));
        }
        if let Some(unavailable) = &c.uring_per_op_unavailable {
            add(format!("io_uring tracepoints unavailable: {unavailable}"));
        }
        for (name, get) in IDLE_MEMORY_READINGS {
            if let Some(Measured::Unavailable { unavailable }) = c.idle_memory.as_ref().map(get) {
                add(format!("{name}/idle conn unavailable: {unavailable}"));
            }
        }
    }
    sys_reasons
}

/// What a reader must know of a cell: punted io_uring requests, the SQPOLL CPU, a cell that
/// fell behind its offered rate, its warnings.
fn cell_notes(cases: &[&CaseResult]) -> Vec<String> {
    let mut footnotes = Vec::new();
    for c in cases.iter().filter(|c| c.status == Status::Measured) {
        let punted = c
            .figures
            .as_ref()
            .and_then(|f| f.uring_per_op.as_ref())
            .map_or(0.0, |u| u.punted);
        if punted > 0.0 {
            footnotes.push(format!(
                "{}: {} requests per op went to io-wq worker threads (punted by io_uring, \
                 not completed by the submitting thread); their CPU is included in the \
                 cell's CPU/op",
                c.label(),
                fmt_ratio(punted)
            ));
        }
    }
    for c in cases.iter().filter(|c| c.status == Status::Measured) {
        if let Some(cpu) = c.sqpoll_cpu {
            footnotes.push(format!("{}: SQPOLL poller pinned to CPU {cpu}", c.label()));
        }
    }
    for c in cases {
        let keep = crate::results::rates::KEEP_UP * 100.0;
        let typical = fmt_rate(c.typical_achieved_rate().unwrap_or(0.0));
        match (c.kept_up(), c.repetitions_behind()) {
            (Some(false), _) => footnotes.push(format!(
                "{}: fell behind the offered rate (its typical repetition achieved {typical}/s, \
                 less than {keep:.0}% of it): not ranked at equal load",
                c.label(),
            )),
            (Some(true), Some((n, of))) => footnotes.push(format!(
                "{}: kept up (its typical repetition achieved {typical}/s, at least {keep:.0}% \
                 of the offer), though {n} of {of} repetitions fell behind",
                c.label(),
            )),
            _ => {}
        }
    }
    for c in cases.iter().filter(|c| !c.warnings.is_empty()) {
        for w in &c.warnings {
            footnotes.push(format!("{}: warning: {}", c.label(), w.advice()));
        }
    }
    footnotes
}

/// "1.07x" under 1.1, "1.4x" from there: how many times better or worse.
pub(crate) fn fmt_times(r: f64) -> String {
    if r < 1.1 {
        format!("{r:.2}x")
    } else {
        format!("{r:.1}x")
    }
}

/// "; differences under 6% are invisible here" for a ranking's `invisible_pct` (at least 1%);
/// nothing without one.
pub(crate) fn invisible_text(pct: Option<f64>) -> String {
    pct.map(|p| format!("; differences under {:.0}% are invisible here", p.max(1.0)))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formats() {
        assert_eq!(fmt_ns(512.4), "512 ns");
        assert_eq!(fmt_ns(12_345.0), "12.3 us");
        assert_eq!(fmt_ns(41_000_000.0), "41.00 ms");
        assert_eq!(fmt_rate(1_950_000.0), "1.95 M");
        assert_eq!(fmt_rate(81_200.0), "81 k");
        assert_eq!(fmt_ratio(2.0), "2.00");
        assert_eq!(fmt_ratio(1.0 / 64.0), "0.0156");
        assert_eq!(fmt_ratio(0.0), "0");
        assert_eq!(fmt_bytes(5_335.0), "5.21 KiB");
        assert_eq!(fmt_bytes(-312.4), "-312 B");
        assert_eq!(fmt_bytes(0.2), "0 B");
        assert_eq!(fmt_bytes(-0.2), "0 B");
        assert_eq!(fmt_bytes(1_572_864.0), "1.50 MiB");
    }

    /// A measured cell of the frozen fixture made a `conn.idle` cell: with idle connections
    /// (one reading unavailable) and, at another point, without.
    fn idle_run() -> RunResults {
        let mut run =
            crate::results::store::parse(include_str!("../../tests/fixtures/results.json"))
                .unwrap();
        let c = run
            .cases
            .iter()
            .find(|c| c.status == Status::Measured)
            .unwrap()
            .clone();
        let mut cases = Vec::new();
        for (n, mem) in [(0u64, None), (10_000, Some(()))] {
            let mut c = c.clone();
            c.workload = "conn.idle".into();
            c.params = crate::results::Params::default().with("idle_conns", n);
            c.facts = crate::results::Params::default();
            let f = c.figures.as_mut().unwrap();
            f.idle_memory = mem.map(|()| IdleMemory {
                idle_conns: n,
                live_at_close_min: n - 1,
                server_rss_bytes: Measured::Value(70_000.0),
                server_kernel_bytes: Measured::unavailable("no memory cgroup v1 here"),
                server_sock_buffer_bytes: Measured::Value(0.0),
                machine_sock_slab_bytes: Measured::Value(2_560.0),
                machine_tcp_buffer_bytes: Measured::Value(-8.4),
            });
            cases.push(c);
        }
        run.cases = cases;
        run
    }

    #[test]
    fn idle_memory_is_shown_per_idle_connection_with_unavailable_reasons() {
        let run = idle_run();
        let tables = metric_tables(&run, &Analysis::of(&run));
        assert_eq!(tables.len(), 2);
        let row =
            |t: &Table, name: &str| t.rows.iter().find(|r| r[0] == name).map(|r| r[1].clone());
        // Without idle connections: no memory rows.
        assert_eq!(row(&tables[0], "server RSS/idle conn"), None);
        let t = &tables[1];
        for (name, want) in [
            ("idle conns held (open at close)", "10000 (9999)"),
            ("server RSS/idle conn", "68.36 KiB"),
            ("server kernel mem/idle conn", "unavailable"),
            ("server socket buffers/idle conn", "0 B"),
            ("machine socket slab/idle conn (both ends)", "2.50 KiB"),
            ("machine TCP buffers/idle conn (both ends)", "-8 B"),
        ] {
            assert_eq!(row(t, name).as_deref(), Some(want), "{name}: {t:?}");
        }
        assert!(
            t.footnotes
                .iter()
                .any(|f| f == "server kernel mem/idle conn unavailable: no memory cgroup v1 here"),
            "{:?}",
            t.footnotes
        );
        // The CSV's columns: the figures as recorded, empty where none were held.
        let csv = crate::export::rows::case_rows(&run);
        let col = |name: &str| csv.header.iter().position(|h| h == name).unwrap();
        let (held, without) = (&csv.rows[1], &csv.rows[0]);
        assert_eq!(held[col("idle_conns")], "10000");
        assert_eq!(held[col("idle_live_at_close_min")], "9999");
        assert_eq!(held[col("idle_server_rss_bytes_per_conn")], "70000.0");
        assert_eq!(
            held[col("idle_server_kernel_bytes_per_conn")],
            "unavailable: no memory cgroup v1 here"
        );
        assert_eq!(held[col("idle_machine_tcp_buffer_bytes_per_conn")], "-8.4");
        assert_eq!(without[col("idle_conns")], "");
        assert_eq!(without[col("idle_machine_tcp_buffer_bytes_per_conn")], "");
        assert!(csv.rows.iter().all(|r| r.len() == csv.header.len()));
    }
}
