//! `ringside load`: check the values, drive the target with the load generator, print a
//! summary, and write the report as JSON when asked.

use crate::cli::{LoadArgs, LoadProtocolArg};
use crate::error::InputError;
use crate::load::{self, echo, http::HttpGet, Config, Report};
use crate::measure::pin;
use crate::results::store::write_atomic;
use serde_json::json;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

/// Most connections one load run opens.
pub const MAX_CONNS: u64 = 100_000;
/// Most event-loop threads.
pub const MAX_THREADS: u64 = 256;

fn bad(flag: &'static str, given: impl ToString, valid: &str) -> InputError {
    InputError::BadValue {
        flag,
        given: given.to_string(),
        valid: valid.to_string(),
    }
}

fn check_u64(flag: &'static str, v: u64, lo: u64, hi: u64) -> Result<u64, InputError> {
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(bad(flag, v, &format!("must be between {lo} and {hi}")))
    }
}

fn check_secs(flag: &'static str, v: f64, lo: f64, hi: f64) -> Result<Duration, InputError> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(bad(
            flag,
            v,
            &format!("must be seconds between {lo} and {hi}"),
        ))
    }
}

/// The load's configuration from the command line; every bad value names the valid range.
pub fn config(a: &LoadArgs) -> Result<(Config, usize), InputError> {
    let target: SocketAddr = a
        .target
        .to_socket_addrs()
        .ok()
        .and_then(|mut it| it.next())
        .ok_or_else(|| {
            bad(
                "--target",
                &a.target,
                "must be HOST:PORT, e.g. 127.0.0.1:7000",
            )
        })?;
    let conns = check_u64("--conns", a.conns, 1, MAX_CONNS)? as usize;
    let msg = check_u64(
        "--msg-bytes",
        a.msg_bytes,
        echo::MIN_MSG_BYTES as u64,
        echo::MAX_MSG_BYTES as u64,
    )? as usize;
    let duration = check_secs("--duration", a.duration, 0.1, 86_400.0)?;
    let warmup = check_secs("--warmup", a.warmup, 0.0, 3_600.0)?;
    let rate = match a.rate {
        Some(r) if !(r.is_finite() && r > 0.0 && r <= 1e8) => {
            return Err(bad(
                "--rate",
                r,
                "must be messages/s above 0 and at most 100000000",
            ))
        }
        r => r,
    };
    let cpus = match &a.cpus {
        Some(s) => crate::app::run::parse_cpus(s, &pin::allowed_cpus())?,
        None => Vec::new(),
    };
    let threads = match a.threads {
        Some(t) => check_u64("--threads", t, 1, MAX_THREADS)? as usize,
        None if !cpus.is_empty() => cpus.len(),
        None => pin::allowed_cpus().len().max(1),
    };
    let mut cfg = Config::new(target, conns, duration);
    cfg.warmup = warmup;
    cfg.rate = rate;
    cfg.threads = threads;
    cfg.cpus = cpus;
    Ok((cfg, msg))
}

/// The HTTP request from the command line: `--path` must be an origin-form target ("/..."),
/// `--host` a header value; neither may hold spaces or control characters.
pub fn http_get(a: &LoadArgs) -> Result<HttpGet, InputError> {
    let clean = |v: &str| !v.is_empty() && v.bytes().all(|b| b.is_ascii_graphic());
    if !(a.path.starts_with('/') && clean(&a.path)) {
        return Err(bad(
            "--path",
            &a.path,
            "must start with '/' and hold no spaces or control characters",
        ));
    }
    let host = a.host.clone().unwrap_or_else(|| a.target.clone());
    if !clean(&host) {
        return Err(bad(
            "--host",
            &host,
            "must be a host name or HOST:PORT without spaces or control characters",
        ));
    }
    Ok(HttpGet {
        host,
        path: a.path.clone(),
        expect_body_bytes: None,
    })
}

pub fn run(a: LoadArgs) -> anyhow::Result<i32> {
    let (cfg, msg) = config(&a)?;
    let (v, text) = match a.protocol {
        LoadProtocolArg::Echo => {
            let r = load::run(&cfg, &echo::Echo { msg_bytes: msg }, &mut |_| {})?;
            let v = to_json(&cfg, msg, &r);
            let text = summary(&cfg, msg, &r);
            (v, text)
        }
        LoadProtocolArg::Http => {
            let g = http_get(&a)?;
            let r = load::run(&cfg, &g, &mut |_| {})?;
            let v = http_json(&cfg, &g, &r);
            let text = http_summary(&cfg, &g, &r);
            (v, text)
        }
    };
    print!("{text}");
    if let Some(path) = &a.json {
        write_atomic(path, &serde_json::to_vec_pretty(&v)?)?;
    }
    Ok(0)
}

/// The HTTP report as JSON: as the echo one, plus requests/s and transfer/s.
pub fn http_json(cfg: &Config, g: &HttpGet, r: &Report) -> serde_json::Value {
    let q = |x| r.latency_ns(x);
    let (mean, stddev) = mean_stddev(r);
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
        "latency_ns": {
            "mean": mean, "stddev": stddev,
            "p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "p999": q(0.999), "max": q(1.0),
        },
        "histogram": r.latency.to_base64(),
    })
}

/// Latency mean and standard deviation, ns (0 when nothing completed).
fn mean_stddev(r: &Report) -> (f64, f64) {
    if r.latency.is_empty() {
        (0.0, 0.0)
    } else {
        (r.latency.inner().mean(), r.latency.inner().stdev())
    }
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

/// A readable HTTP summary (wrk's figures, ringside's names).
pub fn http_summary(cfg: &Config, g: &HttpGet, r: &Report) -> String {
    let mode = match cfg.rate {
        Some(rate) => format!("open loop at {rate} requests/s (latency from intended send time)"),
        None => "closed loop".to_string(),
    };
    let (mean, stddev) = mean_stddev(r);
    let mut s = format!(
        "http load on {} (GET {} Host {}): {} connections, {} thread(s), {}, {:.1} s measured after {:.1} s warm-up\n",
        cfg.target,
        g.path,
        g.host,
        cfg.conns,
        r.threads,
        mode,
        cfg.duration.as_secs_f64(),
        cfg.warmup.as_secs_f64()
    );
    s += &format!(
        "  requests/s {:.0}   transfer/s {}   requests {}   received {}\n",
        r.msgs_per_sec(),
        bytes_h(r.rx_bytes_per_sec()),
        r.msgs,
        bytes_h(r.rx_bytes as f64)
    );
    s += &format!(
        "  latency mean {}  stddev {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}\n",
        us(mean as u64),
        us(stddev as u64),
        us(r.latency_ns(0.5)),
        us(r.latency_ns(0.9)),
        us(r.latency_ns(0.99)),
        us(r.latency_ns(0.999)),
        us(r.latency_ns(1.0))
    );
    s += &format!(
        "  errors {}: connect {}  read {}  write {}  timeout {}  non-2xx {}  malformed {}  wrong body {}  live connections {}/{}\n",
        r.errors(),
        r.connect_errors,
        r.read_errors,
        r.write_errors,
        r.timeouts,
        r.non_2xx,
        r.malformed,
        r.mismatches,
        r.live_conns,
        cfg.conns
    );
    s += &format!(
        "  load-generator CPU {:.3} s = {:.0}% of {} CPU(s){}\n",
        r.cpu_ns as f64 / 1e9,
        r.cpu_fraction * 100.0,
        r.cpus_available,
        if r.client_bound {
            "  [client_bound: the load generator was saturated]"
        } else {
            ""
        }
    );
    if let Some(e) = &r.first_error {
        s += &format!("  first error: {e}\n");
    }
    s
}

/// The report as JSON: the configuration, the counts and the latency percentiles.
pub fn to_json(cfg: &Config, msg: usize, r: &Report) -> serde_json::Value {
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
pub fn summary(cfg: &Config, msg: usize, r: &Report) -> String {
    let mode = match cfg.rate {
        Some(rate) => format!("open loop at {rate} msgs/s (latency from intended send time)"),
        None => "closed loop".to_string(),
    };
    let mut s = format!(
        "echo load on {}: {} connections x {} B, {} thread(s), {}, {:.1} s measured after {:.1} s warm-up\n",
        cfg.target,
        cfg.conns,
        msg,
        r.threads,
        mode,
        cfg.duration.as_secs_f64(),
        cfg.warmup.as_secs_f64()
    );
    s += &format!(
        "  msgs/s {:.0}   bytes/s {:.0}   messages {}\n",
        r.msgs_per_sec(),
        r.bytes_per_sec(),
        r.msgs
    );
    s += &format!(
        "  latency p50 {}  p90 {}  p99 {}  p99.9 {}  max {}\n",
        us(r.latency_ns(0.5)),
        us(r.latency_ns(0.9)),
        us(r.latency_ns(0.99)),
        us(r.latency_ns(0.999)),
        us(r.latency_ns(1.0))
    );
    s += &format!(
        "  connect errors {}  resets {}  other errors {}  mismatches {}  timeouts {}  live connections {}/{}\n",
        r.connect_errors, r.resets, r.io_errors, r.mismatches, r.timeouts, r.live_conns, cfg.conns
    );
    s += &format!(
        "  load-generator CPU {:.3} s = {:.0}% of {} CPU(s){}\n",
        r.cpu_ns as f64 / 1e9,
        r.cpu_fraction * 100.0,
        r.cpus_available,
        if r.client_bound {
            "  [client_bound: the load generator was saturated]"
        } else {
            ""
        }
    );
    if let Some(e) = &r.first_error {
        s += &format!("  first error: {e}\n");
    }
    s
}
