//! One row per case, every figure a column: the CSV export's table.

use super::table::*;
use crate::measure::Measured;
use crate::results::schema::{CaseFigures, IdleMemory};
use crate::results::{CaseResult, RunResults};
use std::collections::BTreeSet;

/// The name an enum value has in the JSON results ("not_applicable").
fn serde_name<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The figure columns, in order, between the facts and `warnings`.
const FIGURES: [&str; 46] = [
    "status",
    "reason",
    "repetitions",
    "ops_total",
    "latency_min_ns",
    "latency_p50_ns",
    "latency_p90_ns",
    "latency_p99_ns",
    "latency_p999_ns",
    "latency_max_ns",
    "latency_mean_ns",
    "latency_stddev_ns",
    "run_p50_median_ns",
    "run_p50_mad_ns",
    "ops_per_sec_median",
    "ops_per_sec_min",
    "ops_per_sec_max",
    "syscalls_per_op",
    "cpu_ns_per_op",
    "cpu_user_ns_per_op",
    "cpu_sys_ns_per_op",
    "ctx_switches_per_op",
    "latency_p50_ns_ci95_lo",
    "latency_p50_ns_ci95_hi",
    "latency_p90_ns_ci95_lo",
    "latency_p90_ns_ci95_hi",
    "latency_p99_ns_ci95_lo",
    "latency_p99_ns_ci95_hi",
    "latency_p999_ns_ci95_lo",
    "latency_p999_ns_ci95_hi",
    "run_p50_ns_ci95_lo",
    "run_p50_ns_ci95_hi",
    "ops_per_sec_ci95_lo",
    "ops_per_sec_ci95_hi",
    "cpu_ns_per_op_ci95_lo",
    "cpu_ns_per_op_ci95_hi",
    "cpu_busy_pct",
    "offered_per_sec",
    "achieved_per_sec",
    "idle_conns",
    "idle_live_at_close_min",
    "idle_server_rss_bytes_per_conn",
    "idle_server_kernel_bytes_per_conn",
    "idle_server_sock_buffer_bytes_per_conn",
    "idle_machine_sock_slab_bytes_per_conn",
    "idle_machine_tcp_buffer_bytes_per_conn",
];

/// The columns a cell without figures leaves empty: all between `reason` and `warnings`,
/// less `repetitions`.
const BLANK: usize = FIGURES.len() - 3;

/// Every case as one row: the long form for CSV and scripts. Each parameter any cell has is
/// a column of its own (`param_NAME`, empty where a cell lacks it), as is each of the cells'
/// `facts` (`fact_NAME`: the storage suite's filesystem...), then the figures, their
/// 95% intervals (`_ci95_lo`, `_ci95_hi`: empty where none was recorded), the CPU busy of the
/// measured side (the server, for a network cell) in percent of one CPU, an open-loop
/// cell's offered and achieved rates, and `conn.idle`'s `idle_memory` (`idle_*`: the idle
/// connections held, the fewest open at the window's close, each reading in bytes per idle
/// connection or `unavailable: <reason>`; empty in cells that held none).
pub(crate) fn case_rows(run: &RunResults) -> Table {
    let params: BTreeSet<&String> = run.cases.iter().flat_map(|c| c.params.0.keys()).collect();
    let facts: BTreeSet<&String> = run.cases.iter().flat_map(|c| c.facts.0.keys()).collect();
    let rows = run
        .cases
        .iter()
        .map(|c| case_row(c, &params, &facts))
        .collect();
    Table {
        title: "cases".into(),
        note: String::new(),
        header: header(&params, &facts),
        rows,
        footnotes: Vec::new(),
    }
}

/// The header: the cell's names, a column per param and fact, the figures, `warnings`.
fn header(params: &BTreeSet<&String>, facts: &BTreeSet<&String>) -> Vec<String> {
    let mut header: Vec<String> = ["workload", "model", "variant"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    header.extend(params.iter().map(|p| format!("param_{p}")));
    header.extend(facts.iter().map(|p| format!("fact_{p}")));
    header.extend(FIGURES.iter().map(|s| s.to_string()));
    header.push("warnings".into());
    header
}

/// A JSON value as a cell: a string as it is, anything else as JSON.
fn value(v: serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s,
        v => v.to_string(),
    }
}

/// One case's row, in the header's order.
fn case_row(c: &CaseResult, params: &BTreeSet<&String>, facts: &BTreeSet<&String>) -> Vec<String> {
    let mut r = vec![
        c.workload.clone(),
        c.model.clone(),
        c.variant.clone().unwrap_or_default(),
    ];
    r.extend(
        params
            .iter()
            .map(|p| c.params.0.get(*p).cloned().map(value).unwrap_or_default()),
    );
    r.extend(
        facts
            .iter()
            .map(|p| c.facts.0.get(*p).cloned().map(value).unwrap_or_default()),
    );
    r.extend([
        serde_name(&c.status),
        c.reason.clone().unwrap_or_default(),
        c.repetitions.to_string(),
    ]);
    match &c.figures {
        Some(f) => figure_cells(c, f, &mut r),
        None => r.extend(std::iter::repeat_n(String::new(), BLANK)),
    }
    r.push(
        c.warnings
            .iter()
            .map(serde_name)
            .collect::<Vec<_>>()
            .join(";"),
    );
    r
}

/// A measured case's figure columns, from `ops_total` to the idle memory readings.
fn figure_cells(c: &CaseResult, f: &CaseFigures, r: &mut Vec<String>) {
    let l = &f.latency_ns;
    r.push(f.ops_total.to_string());
    for v in [l.min, l.p50, l.p90, l.p99, l.p999, l.max, l.mean, l.stddev] {
        r.push(format!("{v:.1}"));
    }
    r.push(format!("{:.1}", f.run_p50_ns.median));
    r.push(format!("{:.1}", f.run_p50_ns.mad));
    for v in [f.ops_per_sec.median, f.ops_per_sec.min, f.ops_per_sec.max] {
        r.push(format!("{v:.1}"));
    }
    r.push(match f.syscalls_per_op.value() {
        Some(v) => format!("{v:.4}"),
        None => f.syscalls_per_op.to_string(),
    });
    r.push(format!("{:.1}", f.cpu_ns_per_op.total));
    for m in [&f.cpu_ns_per_op.user, &f.cpu_ns_per_op.sys] {
        r.push(m.value().map(|v| format!("{v:.1}")).unwrap_or_default());
    }
    r.push(format!("{:.4}", f.ctx_switches_per_op));
    interval_cells(f, r);
    r.push(if f.cpu_busy > 0.0 {
        format!("{:.1}", f.cpu_busy * 100.0)
    } else {
        String::new()
    });
    for rate in [c.offered_rate(), c.achieved_rate()] {
        r.push(rate.map(|v| format!("{v:.0}")).unwrap_or_default());
    }
    idle_cells(f.idle_memory.as_ref(), r);
}

/// The 95% intervals' columns: low and high of each, empty where none was recorded.
fn interval_cells(f: &CaseFigures, r: &mut Vec<String>) {
    let ci = f.ci95.clone().unwrap_or_default();
    let q = &ci.latency_ns;
    for i in [
        q.p50,
        q.p90,
        q.p99,
        q.p999,
        ci.run_p50_ns,
        ci.ops_per_sec,
        ci.cpu_ns_per_op,
    ] {
        match i {
            Some((lo, hi)) => r.extend([format!("{lo:.1}"), format!("{hi:.1}")]),
            None => r.extend([String::new(), String::new()]),
        }
    }
}

/// The `idle_*` columns: the idle connections, the fewest live, each reading; empty if none.
fn idle_cells(idle: Option<&IdleMemory>, r: &mut Vec<String>) {
    match idle {
        Some(m) => {
            r.push(m.idle_conns.to_string());
            r.push(m.live_at_close_min.to_string());
            for (_, get) in IDLE_MEMORY_READINGS {
                r.push(match get(m) {
                    Measured::Value(v) => format!("{v:.1}"),
                    u => u.to_string(),
                });
            }
        }
        None => r.extend(std::iter::repeat_n(
            String::new(),
            2 + IDLE_MEMORY_READINGS.len(),
        )),
    }
}
