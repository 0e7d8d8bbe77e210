//! wrk against the same HTTP server, pinned to the same CPU as ringside's load generator, one
//! thread and the same connections: its requests/s, transfer/s, latency and errors parsed from
//! its text output (`--latency`). The HTTP suite stores them as `wrk_*` counters of the cell,
//! beside ringside's own figures, and flags the cell when the two disagree (see
//! `stats::wrk::DISAGREEMENT`): a load generator is trusted once an independent one agrees with it.

use crate::child;
use crate::measure::cell::WrkCounters;
use crate::measure::CellCounters;
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

/// Bytes of wrk's stdout read: its report is under 2 KiB; more is not a report (it is read and
/// dropped, never stored).
pub(crate) const OUTPUT_MAX: usize = 1 << 20;
/// Bytes of wrk's stderr kept for an error message.
const STDERR_MAX: usize = 16 << 10;
/// How long wrk may run beyond its duration before it is killed.
const OVERRUN: Duration = Duration::from_secs(30);

fn capture(within: Duration, cpus: Option<Vec<u32>>) -> child::Capture {
    child::Capture {
        stdout_max: OUTPUT_MAX,
        stderr_max: STDERR_MAX,
        within,
        cpus,
    }
}

/// Whether wrk can be run (`wrk -v` prints its version and exits 1).
pub fn version() -> Result<String, String> {
    let mut cmd = Command::new("wrk");
    cmd.arg("-v");
    match child::run_captured(cmd, &capture(Duration::from_secs(10), None), |_| {}) {
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout).to_string()
                + &String::from_utf8_lossy(&o.stderr);
            text.lines()
                .find(|l| l.starts_with("wrk "))
                .map(|l| l.split(" Copyright").next().unwrap_or(l).trim().to_string())
                .ok_or_else(|| format!("wrk -v printed no version: {}", text.trim()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err("wrk not installed".into()),
        Err(e) => Err(format!("wrk -v: {e}")),
    }
}

/// What one wrk run measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WrkRun {
    pub(crate) requests: u64,
    pub(crate) requests_per_sec: f64,
    pub(crate) read_bytes: u64,
    pub(crate) latency_mean_ns: u64,
    pub(crate) latency_max_ns: u64,
    pub(crate) latency_p99_ns: u64,
    pub(crate) errors: u64,
    pub(crate) non_2xx: u64,
    /// wrk's own CPU over its whole run (user + sys), ns; 0 when not measured.
    pub(crate) cpu_ns: u64,
    /// wrk's whole run, ns (start to exit); 0 when not measured.
    pub(crate) run_ns: u64,
}

impl WrkRun {
    /// Its time, ns, from its count and rate (wrk prints the duration to 10 ms only).
    pub(crate) fn window_ns(&self) -> u64 {
        if self.requests_per_sec > 0.0 {
            (self.requests as f64 / self.requests_per_sec * 1e9) as u64
        } else {
            0
        }
    }

    pub(crate) fn counters(&self) -> CellCounters {
        CellCounters {
            wrk: Some(WrkCounters {
                wrk_requests: self.requests,
                wrk_window_ns: self.window_ns(),
                wrk_read_bytes: self.read_bytes,
                wrk_errors: self.errors,
                wrk_non_2xx: self.non_2xx,
                wrk_latency_mean_ns: self.latency_mean_ns,
                wrk_latency_p99_ns: self.latency_p99_ns,
                wrk_latency_max_ns: self.latency_max_ns,
                wrk_cpu_ns: self.cpu_ns,
                wrk_run_ns: self.run_ns,
                wrk_saturated: u64::from(self.saturated()),
                wrk_runs: 1,
            }),
            ..CellCounters::default()
        }
    }

    /// Whether wrk's one thread kept its CPU at least 90% busy over its run (a saturated
    /// client measures itself).
    pub(crate) fn saturated(&self) -> bool {
        self.run_ns > 0
            && self.cpu_ns as f64 >= crate::load::CLIENT_BOUND_FRACTION * self.run_ns as f64
    }
}

/// Runs `wrk -t1 -cCONNS -dSECS --latency http://ADDR/PATH` pinned to `cpu`. The duration is
/// whole seconds (wrk's resolution), at least 1. Its output is read bounded ([`OUTPUT_MAX`]),
/// and a wrk still running [`OVERRUN`] after its duration is killed.
pub fn run(
    addr: SocketAddr,
    path: &str,
    conns: usize,
    duration: Duration,
    cpu: u32,
) -> Result<WrkRun, String> {
    let secs = duration.as_secs().max(1);
    let url = format!("http://{addr}{path}");
    let mut cmd = Command::new("wrk");
    cmd.args([
        "-t1",
        &format!("-c{conns}"),
        &format!("-d{secs}s"),
        "--latency",
    ])
    .args(["--timeout", "5s", &url]);
    let cap = capture(Duration::from_secs(secs) + OVERRUN, Some(vec![cpu]));
    let out = child::run_captured(cmd, &cap, |_| {}).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "cannot run wrk: not installed".to_string(),
        _ => format!("wrk: {e}"),
    })?;
    if !out.status.success() {
        return Err(format!(
            "wrk failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    if out.stdout_over {
        return Err(format!(
            "wrk printed more than {} MiB: not its report",
            OUTPUT_MAX >> 20
        ));
    }
    let mut run = parse(&String::from_utf8_lossy(&out.stdout))?;
    run.cpu_ns = out.cpu_ns;
    run.run_ns = out.wall_ns;
    Ok(run)
}

/// Parses wrk's text report.
pub(crate) fn parse(text: &str) -> Result<WrkRun, String> {
    let mut r = WrkRun::default();
    let mut seen_rate = false;
    for line in text.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["Latency", avg, _stdev, max, ..] => {
                r.latency_mean_ns = duration_ns(avg)?;
                r.latency_max_ns = duration_ns(max)?;
            }
            ["99%", v] => r.latency_p99_ns = duration_ns(v)?,
            [n, "requests", "in", _, read, "read"] => {
                r.requests = n.parse().map_err(|_| format!("bad request count '{n}'"))?;
                r.read_bytes = size_bytes(read)?;
            }
            ["Requests/sec:", v] => {
                r.requests_per_sec = v.parse().map_err(|_| format!("bad Requests/sec '{v}'"))?;
                seen_rate = true;
            }
            ["Non-2xx", "or", "3xx", "responses:", n] => {
                r.non_2xx = n.parse().map_err(|_| format!("bad non-2xx count '{n}'"))?;
            }
            ["Socket", "errors:", rest @ ..] => {
                // "connect 0, read 0, write 0, timeout 0"
                for pair in rest.chunks(2) {
                    if let [_, n] = pair {
                        r.errors += n.trim_end_matches(',').parse::<u64>().unwrap_or(0);
                    }
                }
            }
            _ => {}
        }
    }
    if !seen_rate {
        return Err(format!(
            "no 'Requests/sec:' in wrk's output: {}",
            text.trim()
        ));
    }
    Ok(r)
}

fn duration_ns(s: &str) -> Result<u64, String> {
    let bad = || format!("bad wrk duration '{s}'");
    let (num, mult) = if let Some(n) = s.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = s.strip_suffix("ns") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e9)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60e9)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600e9)
    } else {
        return Err(bad());
    };
    let v: f64 = num.parse().map_err(|_| bad())?;
    Ok((v * mult).round() as u64)
}

fn size_bytes(s: &str) -> Result<u64, String> {
    let bad = || format!("bad wrk size '{s}'");
    let units = [
        ("TB", 1u64 << 40),
        ("GB", 1 << 30),
        ("MB", 1 << 20),
        ("KB", 1 << 10),
        ("B", 1),
    ];
    for (u, m) in units {
        if let Some(n) = s.strip_suffix(u) {
            let v: f64 = n.parse().map_err(|_| bad())?;
            return Ok((v * m as f64).round() as u64);
        }
    }
    Err(bad())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::wrk::{agreement, Agreement};

    const OUT: &str = "Running 1s test @ http://127.0.0.1:18080/
  1 threads and 2 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     4.57ms    2.63ms  18.76ms   65.27%
    Req/Sec   439.00     83.77   520.00     90.00%
  Latency Distribution
     50%    4.06ms
     75%    6.28ms
     90%    8.00ms
     99%   12.37ms
  437 requests in 1.00s, 3.87MB read
  Socket errors: connect 1, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 5
Requests/sec:    436.35
Transfer/sec:      3.87MB
";

    #[test]
    fn parses_wrk_output() {
        let r = parse(OUT).unwrap();
        assert_eq!(r.requests, 437);
        assert_eq!(r.requests_per_sec, 436.35);
        assert_eq!(r.read_bytes, (3.87 * 1048576.0f64).round() as u64);
        assert_eq!(r.latency_mean_ns, 4_570_000);
        assert_eq!(r.latency_max_ns, 18_760_000);
        assert_eq!(r.latency_p99_ns, 12_370_000);
        assert_eq!(r.errors, 6);
        assert_eq!(r.non_2xx, 5);
        assert_eq!(r.window_ns(), (437.0 / 436.35 * 1e9) as u64);
        let c = r.counters();
        assert_eq!(
            c.wrk
                .as_ref()
                .and_then(|w| w.requests_per_sec())
                .map(|v| v.round()),
            Some(436.0)
        );
        assert_eq!(
            CellCounters::default()
                .wrk
                .and_then(|w| w.requests_per_sec()),
            None
        );
    }

    #[test]
    fn refuses_output_without_a_rate_and_bad_units() {
        assert!(parse("unable to connect to 127.0.0.1:1 Connection refused")
            .unwrap_err()
            .contains("Requests/sec"));
        assert!(duration_ns("12parsecs").is_err());
        assert_eq!(duration_ns("520.00us").unwrap(), 520_000);
        assert_eq!(duration_ns("1.50s").unwrap(), 1_500_000_000);
        assert_eq!(size_bytes("12.00KB").unwrap(), 12_288);
        assert!(size_bytes("12QB").is_err());
    }

    #[test]
    fn agreement_names_wrk_bound_only_when_wrk_was_saturated_every_time_and_measured_less() {
        // Two repetitions of wrk: 200,000 requests in 2 s = 100,000/s.
        let mut w = WrkCounters {
            wrk_requests: 200_000,
            wrk_window_ns: 2_000_000_000,
            ..WrkCounters::default()
        };
        let c = |w: WrkCounters| CellCounters {
            wrk: Some(w),
            ..CellCounters::default()
        };
        assert_eq!(agreement(&CellCounters::default(), 1.0, 2), None);
        let c0 = c(w);
        assert_eq!(agreement(&c0, 104_000.0, 2), Some(Agreement::Agrees));
        assert_eq!(agreement(&c0, 96_000.0, 2), Some(Agreement::Agrees));
        assert_eq!(agreement(&c0, 130_000.0, 2), Some(Agreement::Disagrees));
        w.wrk_saturated = 1;
        // Saturated in one repetition of two: not explained.
        assert_eq!(agreement(&c(w), 130_000.0, 2), Some(Agreement::Disagrees));
        w.wrk_saturated = 2;
        assert_eq!(agreement(&c(w), 130_000.0, 2), Some(Agreement::WrkBound));
        // wrk saturated yet faster than ringside: that is a disagreement to look into.
        assert_eq!(agreement(&c(w), 70_000.0, 2), Some(Agreement::Disagrees));
    }
}
