//! `ringside load`: check the values, drive the target with the load generator, print a
//! summary, and write the report as JSON when asked.

use crate::cli::{LoadArgs, LoadProtocolArg};
use crate::error::InputError;
use crate::load::{self, echo, Config, Report};
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

pub fn run(a: LoadArgs) -> anyhow::Result<i32> {
    let (cfg, msg) = config(&a)?;
    let LoadProtocolArg::Echo = a.protocol;
    let r = load::run(&cfg, &echo::Echo { msg_bytes: msg }, &mut |_| {})?;
    print!("{}", summary(&cfg, msg, &r));
    if let Some(path) = &a.json {
        let v = to_json(&cfg, msg, &r);
        write_atomic(path, &serde_json::to_vec_pretty(&v)?)?;
    }
    Ok(0)
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
