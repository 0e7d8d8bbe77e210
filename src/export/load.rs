//! The `ringside load` summaries: the readable text (wrk's figures under ringside's names) and
//! the `--json` document, for echo and HTTP. They only arrange what the load generator's
//! [`Report`] holds; every figure is computed in `load`.

use crate::load::{http::HttpGet, Config, Report};
use serde_json::json;

fn secs(ns: u64) -> String {
    format!("{:.3} s", ns as f64 / 1e9)
}

/// The HTTP report as JSON: as the echo one, plus requests/s and transfer/s.
pub(crate) fn http_json(cfg: &Config, g: &HttpGet, r: &Report) -> serde_json::Value {
    let q = |x| r.latency_ns(x);
    let (mean, stddev) = match r.latency_mean_stddev() {
        Some((m, s)) => (Some(m), Some(s)),
        None => (None, None),
    };
    json!({
        "protocol": "http",
        "target": cfg.target.to_string(),
        "host": g.host,
        "path": g.path,
        "duration_s": cfg.duration.as_secs_f64(),
        "warmup_s": cfg.warmup.as_secs_f64(),
        "mode": if cfg.rate.is_some() { "open_loop" } else { "closed_loop" },
        "cpus": cfg.cpus,
        "report": r,
        "requests_per_sec": r.msgs_per_sec(),
        "transfer_bytes_per_sec": r.rx_bytes_per_sec(),
        "errors": r.errors(),
        "unverified": r.unverified(),
        "latency_ns": {
            "mean": mean, "stddev": stddev,
            "p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "p999": q(0.999), "max": q(1.0),
        },
        "histogram": r.latency.to_base64(),
    })
}

fn bytes_h(b: f64) -> String {
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.2} kB", b / 1e3)
    } else {
        format!("{b:.0} B")
    }
}

/// A duration for reading: us below 1 ms, ms below 1 s, else s.
fn dur_h(ns: u64) -> String {
    if ns < 1_000_000 {
        format!("{:.1} us", ns as f64 / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        format!("{:.2} s", ns as f64 / 1e9)
    }
}

/// The lines every summary ends with: the longest gap, the warm-up's errors, the load
/// generator's CPU, the first error, and whether the run was interrupted.
fn tail(cfg: &Config, r: &Report) -> String {
    let mut s = format!(
        "  longest gap with no completion {} (timeout {})\n",
        dur_h(r.longest_gap_ns),
        dur_h(cfg.msg_timeout.as_nanos() as u64)
    );
    if r.warmup_ns > cfg.warmup.as_nanos() as u64 + 50_000_000 || r.n.unsettled_conns > 0 {
        s += &format!(
            "  warm-up {} (asked {}): it lasts until every connection had its first answer{}\n",
            dur_h(r.warmup_ns),
            dur_h(cfg.warmup.as_nanos() as u64),
            if r.n.unsettled_conns > 0 {
                format!(
                    "; {} never had one by the message timeout [warmup_unsettled]",
                    r.n.unsettled_conns
                )
            } else {
                String::new()
            }
        );
    }
    if r.n.warmup_errors > 0 {
        s += &format!(
            "  warm-up (not counted above): {} errors, of which {} responses did not verify\n",
            r.n.warmup_errors, r.n.warmup_invalid
        );
    }
    s += &format!(
        "  load-generator CPU {:.3} s = {:.0}% of {} CPU(s){}\n",
        r.n.cpu_ns as f64 / 1e9,
        r.cpu_fraction * 100.0,
        r.cpus_available,
        if r.client_bound {
            "  [client_bound: the load generator was saturated]"
        } else {
            ""
        }
    );
    if let Some(m) = &r.first_mismatch {
        s += &format!("  first mismatch: {m}\n");
    }
    if let Some(e) = &r.first_error {
        s += &format!("  first error: {e}\n");
    }
    if r.interrupted {
        s += &format!(
            "  interrupted: {} of the {:.1} s window measured\n",
            secs(r.window_ns),
            cfg.duration.as_secs_f64()
        );
    }
    s
}

/// Latency percentiles, or "n/a" when nothing completed.
fn latency_line(r: &Report, mean: bool, what: &str) -> String {
    let (Some(p50), Some(p90), Some(p99), Some(p999), Some(max)) = (
        r.latency_ns(0.5),
        r.latency_ns(0.9),
        r.latency_ns(0.99),
        r.latency_ns(0.999),
        r.latency_ns(1.0),
    ) else {
        return format!("  latency n/a (no {what} completed)\n");
    };
    let head = match r.latency_mean_stddev() {
        Some((m, sd)) if mean => format!("mean {}  stddev {}  ", us(m as u64), us(sd as u64)),
        _ => String::new(),
    };
    format!(
        "  latency {head}p50 {}  p90 {}  p99 {}  p99.9 {}  max {}\n",
        us(p50),
        us(p90),
        us(p99),
        us(p999),
        us(max)
    )
}

/// A readable HTTP summary (wrk's figures, ringside's names).
pub(crate) fn http_summary(cfg: &Config, g: &HttpGet, r: &Report) -> String {
    let mode = match cfg.rate {
        Some(rate) => format!("open loop at {rate} requests/s (latency from intended send time)"),
        None => "closed loop".to_string(),
    };
    let mut s = format!(
        "http load on {} (GET {} Host {}): {} connections, {} {} thread(s), {}, {:.1} s measured after {:.1} s warm-up\n",
        cfg.target,
        g.path,
        g.host,
        cfg.conns,
        r.threads,
        r.engine.name(),
        mode,
        cfg.duration.as_secs_f64(),
        cfg.warmup.as_secs_f64()
    );
    s += &format!(
        "  requests/s {:.0}   transfer/s {}   requests {}   received {}\n",
        r.msgs_per_sec(),
        bytes_h(r.rx_bytes_per_sec()),
        r.n.msgs,
        bytes_h(r.n.rx_bytes as f64)
    );
    s += &latency_line(r, true, "request");
    s += &format!(
        "  errors {}: connect {}  read {}  write {}  timeout {}  non-2xx {}  malformed {}  wrong body {}  unsolicited {}  reconnects {}  live connections {}/{}\n",
        r.errors(),
        r.n.connect_errors,
        r.n.read_errors,
        r.n.write_errors,
        r.n.timeouts,
        r.n.non_2xx,
        r.n.malformed,
        r.n.mismatches,
        r.n.unsolicited,
        r.n.reconnects,
        r.n.live_conns,
        cfg.conns
    );
    s + &tail(cfg, r)
}

/// The report as JSON: the configuration, the counts and the latency percentiles (`null`
/// when no message completed).
pub(crate) fn to_json(cfg: &Config, msg: usize, r: &Report) -> serde_json::Value {
    let q = |x| r.latency_ns(x);
    json!({
        "protocol": "echo",
        "target": cfg.target.to_string(),
        "msg_bytes": msg,
        "duration_s": cfg.duration.as_secs_f64(),
        "warmup_s": cfg.warmup.as_secs_f64(),
        "mode": if cfg.rate.is_some() { "open_loop" } else { "closed_loop" },
        "cpus": cfg.cpus,
        "report": r,
        "msgs_per_sec": r.msgs_per_sec(),
        "bytes_per_sec": r.bytes_per_sec(),
        "errors": r.errors(),
        "unverified": r.unverified(),
        "latency_ns": {
            "p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "p999": q(0.999), "max": q(1.0),
        },
        "histogram": r.latency.to_base64(),
    })
}

fn us(ns: u64) -> String {
    format!("{:.1} us", ns as f64 / 1e3)
}

/// A readable summary.
pub(crate) fn summary(cfg: &Config, msg: usize, r: &Report) -> String {
    let mode = match cfg.rate {
        Some(rate) => format!("open loop at {rate} msgs/s (latency from intended send time)"),
        None => "closed loop".to_string(),
    };
    let mut s = format!(
        "echo load on {}: {} connections x {} B, {} {} thread(s), {}, {:.1} s measured after {:.1} s warm-up\n",
        cfg.target,
        cfg.conns,
        msg,
        r.threads,
        r.engine.name(),
        mode,
        cfg.duration.as_secs_f64(),
        cfg.warmup.as_secs_f64()
    );
    s += &format!(
        "  msgs/s {:.0}   bytes/s {:.0}   messages {}\n",
        r.msgs_per_sec(),
        r.bytes_per_sec(),
        r.n.msgs
    );
    s += &latency_line(r, false, "message");
    s += &format!(
        "  connect errors {}  resets {}  other errors {}  mismatches {}  unsolicited {}  timeouts {}  live connections {}/{}\n",
        r.n.connect_errors,
        r.n.resets,
        r.n.io_errors,
        r.n.mismatches,
        r.n.unsolicited,
        r.n.timeouts,
        r.n.live_conns,
        cfg.conns
    );
    if cfg.churn {
        s += &format!(
            "  a connection per message: {} connects (warm-up included), {} closed with SO_LINGER 0 in the window (no TIME_WAIT)\n",
            r.n.connects, r.n.abortive_closes
        );
    }
    s + &tail(cfg, r)
}

/// `load --explain`: where the load generator's CPUs went over the window, by group (largest
/// first, groups under 0.5% left out), and the busiest kernel symbols; or why perf could not
/// say.
pub(crate) fn explain_text(e: &Result<crate::results::explain::Explain, String>) -> String {
    use crate::results::explain::label;
    let e = match e {
        Ok(e) => e,
        Err(why) => return format!("  where the CPU went: unavailable: {why}\n"),
    };
    let cpus: Vec<String> = e.cpus.iter().map(u32::to_string).collect();
    let mut groups: Vec<_> = e.groups.iter().filter(|g| g.fraction >= 0.005).collect();
    groups.sort_by(|a, b| b.fraction.total_cmp(&a.fraction));
    let mut s = format!(
        "  where the load CPU{} {} went ({} samples): {}\n",
        if cpus.len() == 1 { "" } else { "s" },
        cpus.join(","),
        e.samples,
        groups
            .iter()
            .map(|g| format!("{} {:.1}%", label(&g.name), g.fraction * 100.0))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !e.top_kernel.is_empty() {
        s += &format!(
            "  busiest kernel symbols: {}\n",
            e.top_kernel
                .iter()
                .take(6)
                .map(|k| format!("{} {:.1}%", k.name, k.fraction * 100.0))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    s
}
