//! `ringside load`: check the values (the --json path included) before anything is measured,
//! drive the target with the load generator, print a summary, and write the report as JSON
//! when asked. Exit 0 when every response verified; 1 when one did not (mismatch, non-2xx,
//! malformed, in the window or the warm-up) or no message completed; 130 on SIGINT/SIGTERM,
//! after printing and saving what was measured until then.

use crate::cli::{LoadArgs, LoadProtocolArg};
use crate::error::InputError;
use crate::export::load::{explain_text, http_json, http_summary, summary, to_json};
use crate::load::{
    self, echo,
    http::{Expect, HttpGet},
    Config, Report,
};
use crate::measure::{clock::now_ns, pin};
use crate::results::store::write_atomic;
use anyhow::Context;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

use crate::load::MAX_CONNS;
/// Most event-loop threads.
pub(crate) const MAX_THREADS: u64 = 256;

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
            num_text(v),
            &format!("must be seconds between {lo} and {hi}"),
        ))
    }
}

/// A number as typed back in a refusal: `1e300`, not its 301 digits.
fn num_text(v: f64) -> String {
    if v.is_finite() && v.abs() < 1e15 {
        v.to_string()
    } else {
        format!("{v:e}")
    }
}

/// The load's configuration from the command line; every bad value names the valid range.
pub(crate) fn config(a: &LoadArgs) -> Result<(Config, usize), InputError> {
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
    let timeout = check_secs("--timeout", a.timeout, 0.1, 3_600.0)?;
    let rate = match a.rate {
        Some(r) if !(r.is_finite() && r > 0.0 && r <= 1e8) => {
            return Err(bad(
                "--rate",
                num_text(r),
                "must be messages/s above 0 and at most 100000000",
            ))
        }
        r => r,
    };
    let cpus = match &a.cpus {
        Some(s) => crate::app::run::parse_cpus("--cpus", s, &pin::allowed_cpus())?,
        None => Vec::new(),
    };
    let threads = match a.threads {
        Some(t) => check_u64("--threads", t, 1, MAX_THREADS)? as usize,
        None if !cpus.is_empty() => cpus.len(),
        None => pin::allowed_cpus().len().max(1),
    };
    let mut cfg = Config::new(target, conns, duration);
    cfg.warmup = warmup;
    cfg.msg_timeout = timeout;
    cfg.rate = rate;
    cfg.threads = threads;
    cfg.cpus = cpus;
    cfg.engine = a.engine.into();
    cfg.churn = a.churn;
    if a.explain && cfg.cpus.is_empty() {
        return Err(bad(
            "--explain",
            "without --cpus",
            "samples the load generator's CPUs: name them with --cpus",
        ));
    }
    Ok((cfg, msg))
}

use crate::load::http::MAX_HELD_BODY_BYTES;

/// The HTTP request from the command line: `--path` must be an origin-form target ("/..."),
/// `--host` a header value; neither may hold spaces or control characters.
pub(crate) fn http_get(a: &LoadArgs) -> Result<HttpGet, InputError> {
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
    let max = crate::proto::http::MAX_BODY_BYTES;
    let expect = match a.body_bytes {
        _ if a.any_body => Expect::Any,
        Some(n) if n > max as u64 => return Err(bad("--body-bytes", n, &format!("0..={max}"))),
        n => Expect::Served(n.map(|n| n as usize)),
    };
    // Each connection holds the body it compares: bounded by what the machine can give.
    let held = crate::proto::http::served_body(a.body_bytes.map(|n| n as usize)).len() as u64;
    if !a.any_body && a.conns.saturating_mul(held) > MAX_HELD_BODY_BYTES {
        return Err(bad(
            "--body-bytes",
            held,
            &format!(
                "each of the {} connections holds the body it checks, {} bytes in all (at most \
                 {MAX_HELD_BODY_BYTES}): fewer connections, or --any-body to check only the framing",
                a.conns,
                a.conns.saturating_mul(held)
            ),
        ));
    }
    Ok(HttpGet::new(host, a.path.clone(), expect))
}

/// `--json FILE` must be writable before anything is measured: its directory must exist and
/// take a new file (the same temporary name the atomic write uses is created and removed).
pub(crate) fn check_json_path(path: &Path) -> Result<(), InputError> {
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
    // A first signal stops the load (the window closes there; it prints and saves what it
    // measured, and exits 130); a second exits at once; after a SIGHUP the summary goes to
    // /dev/null, `--json` is still written.
    cfg.stop = Some(crate::shutdown::install_stop_handler(None));
    // --explain: perf samples the load CPUs from before the load starts (it takes a moment)
    // and keeps the window's samples; it runs on another CPU where there is one.
    let sampling = a.explain.then(|| {
        let others: Vec<u32> = pin::allowed_cpus()
            .into_iter()
            .filter(|c| !cfg.cpus.contains(c))
            .collect();
        let run_on = if others.is_empty() {
            &cfg.cpus
        } else {
            &others
        };
        let max = cfg.warmup + cfg.duration + std::time::Duration::from_secs(60);
        crate::crosscheck::perf::Recording::start(&cfg.cpus, run_on, max)
    });
    let mut at = [0u64; 2];
    let mut edge = |e: load::Edge| at[usize::from(e == load::Edge::Close)] = now_ns();
    let (r, mut v, mut text) = match &get {
        None => {
            let r = load::run(&cfg, &echo::Echo { msg_bytes: msg }, &mut edge)?;
            let v = to_json(&cfg, msg, &r);
            let text = summary(&cfg, msg, &r);
            (r, v, text)
        }
        Some(g) => {
            let r = load::run(&cfg, g, &mut edge)?;
            let v = http_json(&cfg, g, &r);
            let text = http_summary(&cfg, g, &r);
            (r, v, text)
        }
    };
    if let Some(s) = sampling {
        let own = [std::process::id()];
        let e = s.and_then(|rec| rec.finish(at[0], at[1], &own));
        text += &explain_text(&e);
        v["explain"] = match &e {
            Ok(x) => serde_json::to_value(x)?,
            Err(why) => serde_json::json!({ "unavailable": why }),
        };
    }
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
    if r.n.msgs == 0 {
        eprintln!(
            "error: no message completed in the {} window ({})",
            secs(r.window_ns),
            r.first_error.as_deref().unwrap_or(if r.n.timeouts > 0 {
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
