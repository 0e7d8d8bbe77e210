//! `ringside load`: check the values (the --json path included) before anything is measured,
//! drive the target with the load generator, print a summary, and write the report as JSON
//! when asked. Exit 0 when every response verified; 1 when one did not (mismatch, non-2xx,
//! malformed, in the window or the warm-up) or no message completed; 130 on SIGINT/SIGTERM,
//! after printing and saving what was measured until then.

use crate::cli::{LoadArgs, LoadProtocolArg};
use crate::error::InputError;
use crate::load::{self, echo, http::HttpGet, Config, Report};
use crate::measure::pin;
use crate::results::store::write_atomic;
use anyhow::Context;
use serde_json::json;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// Set by SIGINT/SIGTERM: the load stops, prints and saves what it measured, exits 130.
static STOP: AtomicBool = AtomicBool::new(false);

/// First signal: stop the load (the window closes there). A second: exit at once.
extern "C" fn on_signal(_: libc::c_int) {
    if STOP.swap(true, Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe; 130 = interrupted.
        unsafe { libc::_exit(130) };
    }
}

/// Installs the stop handler for SIGINT and SIGTERM explicitly: a background job started by a
/// non-interactive shell begins with SIGINT ignored, and an ignored signal stays ignored
/// unless a handler is installed.
fn install_stop_handler() {
    // SAFETY: the handler only touches an atomic and calls _exit (async-signal-safe).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = 0;
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

/// `--json FILE` must be writable before anything is measured: its directory must exist and
/// take a new file (the same temporary name the atomic write uses is created and removed).
pub fn check_json_path(path: &Path) -> Result<(), InputError> {
    let refuse = |why: String| {
        bad(
            "--json",
            path.display(),
            &format!("cannot be written ({why}); give a file in an existing, writable directory"),
        )
    };
    if path.is_dir() {
        return Err(refuse("it is a directory".into()));
    }
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return Err(refuse("no file name".into()));
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let probe = dir.join(format!(".{name}.partial"));
    match std::fs::File::create(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(refuse(e.to_string())),
    }
}

pub fn run(a: LoadArgs) -> anyhow::Result<i32> {
    let (mut cfg, msg) = config(&a)?;
    let get = match a.protocol {
        LoadProtocolArg::Http => Some(http_get(&a)?),
        LoadProtocolArg::Echo => None,
    };
    if let Some(path) = &a.json {
        check_json_path(path)?;
    }
    install_stop_handler();
    cfg.stop = Some(&STOP);
    let (r, v, text) = match &get {
        None => {
            let r = load::run(&cfg, &echo::Echo { msg_bytes: msg }, &mut |_| {})?;
            let v = to_json(&cfg, msg, &r);
            let text = summary(&cfg, msg, &r);
            (r, v, text)
        }
        Some(g) => {
            let r = load::run(&cfg, g, &mut |_| {})?;
            let v = http_json(&cfg, g, &r);
            let text = http_summary(&cfg, g, &r);
            (r, v, text)
        }
    };
    // A closed stdout (`ringside load ... | head -1`) ends printing quietly; the run's
    // verdict and --json below still stand.
    super::stdout::print(&text)?;
    if let Some(path) = &a.json {
        write_atomic(path, &serde_json::to_vec_pretty(&v)?)
            .with_context(|| format!("cannot write --json '{}'", path.display()))?;
    }
    Ok(exit_code(&r))
}

/// 130 when interrupted; 1 (saying why on stderr) when a response did not verify or no
/// message completed; else 0.
fn exit_code(r: &Report) -> i32 {
    if r.interrupted {
        eprintln!(
            "interrupted: the summary covers the {} measured before the signal",
            secs(r.window_ns)
        );
        return 130;
    }
    if let Some(why) = r.unverified() {
        eprintln!("error: the server's responses did not verify: {why}");
        return 1;
    }
    if r.msgs == 0 {
        eprintln!(
            "error: no message completed in the {} window ({})",
            secs(r.window_ns),
            r.first_error.as_deref().unwrap_or(if r.timeouts > 0 {
                "every message timed out"
            } else {
                "no error recorded"
            })
        );
        return 1;
    }
    0
}

fn secs(ns: u64) -> String {
    format!("{:.3} s", ns as f64 / 1e9)
}

/// The HTTP report as JSON: as the echo one, plus requests/s and transfer/s.
pub fn http_json(cfg: &Config, g: &HttpGet, r: &Report) -> serde_json::Value {
    let q = |x| r.latency_ns(x);
    let (mean, stddev) = match mean_stddev(r) {
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

/// Latency mean and standard deviation, ns (`None` when nothing completed).
fn mean_stddev(r: &Report) -> Option<(f64, f64)> {
    (!r.latency.is_empty()).then(|| (r.latency.inner().mean(), r.latency.inner().stdev()))
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
    if r.warmup_errors > 0 {
        s += &format!(
            "  warm-up (not counted above): {} errors, of which {} responses did not verify\n",
            r.warmup_errors, r.warmup_invalid
        );
    }
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
    let head = match mean_stddev(r) {
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
pub fn http_summary(cfg: &Config, g: &HttpGet, r: &Report) -> String {
    let mode = match cfg.rate {
        Some(rate) => format!("open loop at {rate} requests/s (latency from intended send time)"),
        None => "closed loop".to_string(),
    };
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
    s += &latency_line(r, true, "request");
    s += &format!(
        "  errors {}: connect {}  read {}  write {}  timeout {}  non-2xx {}  malformed {}  wrong body {}  reconnects {}  live connections {}/{}\n",
        r.errors(),
        r.connect_errors,
        r.read_errors,
        r.write_errors,
        r.timeouts,
        r.non_2xx,
        r.malformed,
        r.mismatches,
        r.reconnects,
        r.live_conns,
        cfg.conns
    );
    s + &tail(cfg, r)
}

/// The report as JSON: the configuration, the counts and the latency percentiles (`null`
/// when no message completed).
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
    s += &latency_line(r, false, "message");
    s += &format!(
        "  connect errors {}  resets {}  other errors {}  mismatches {}  timeouts {}  live connections {}/{}\n",
        r.connect_errors, r.resets, r.io_errors, r.mismatches, r.timeouts, r.live_conns, cfg.conns
    );
    s + &tail(cfg, r)
}
