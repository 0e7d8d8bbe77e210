//! wrk's figures as a case's counters hold them (`wrk_*`, written by `crosscheck::wrk`): their
//! names, and what the runner and the exporters read back from them (wrk's requests/s, its CPU
//! share, and whether it agrees with ringside's own load generator).

use crate::measure::Counters;

/// Relative difference in requests/s beyond which ringside and wrk are said to disagree.
pub const DISAGREEMENT: f64 = 0.05;

/// Counter names (summed over repetitions like every counter).
pub mod counter {
    /// Requests wrk completed.
    pub const REQUESTS: &str = "wrk_requests";
    /// wrk's measured time, ns (from its requests and its requests/s).
    pub const WINDOW_NS: &str = "wrk_window_ns";
    /// Bytes wrk read.
    pub const READ_BYTES: &str = "wrk_read_bytes";
    /// Socket errors of every kind (connect, read, write, timeout).
    pub const ERRORS: &str = "wrk_errors";
    pub const NON_2XX: &str = "wrk_non_2xx";
    /// wrk's mean and max latency, ns (summed over repetitions: divide by them).
    pub const LATENCY_MEAN_NS: &str = "wrk_latency_mean_ns";
    pub const LATENCY_MAX_NS: &str = "wrk_latency_max_ns";
    pub const LATENCY_P99_NS: &str = "wrk_latency_p99_ns";
    /// wrk's own CPU (user + sys of the process, from wait4), ns.
    pub const CPU_NS: &str = "wrk_cpu_ns";
    /// wrk's whole run, start to exit, ns.
    pub const RUN_NS: &str = "wrk_run_ns";
    /// 1 in a repetition where wrk used at least 90% of its one CPU: its figure is then its
    /// own limit, not the server's.
    pub const SATURATED: &str = "wrk_saturated";
    /// 1 per repetition wrk ran in (it runs beside some repetitions of a cell, not all).
    pub const RUNS: &str = "wrk_runs";
}

/// wrk's requests/s over a case's repetitions, from the summed counters; `None` when wrk did
/// not run.
pub fn requests_per_sec(c: &Counters) -> Option<f64> {
    let (n, ns) = (c.get(counter::REQUESTS), c.get(counter::WINDOW_NS));
    (ns > 0).then(|| n as f64 * 1e9 / ns as f64)
}

/// How ringside's requests/s (`ours`, the median of `reps` timed repetitions) stands against
/// wrk's on the same server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agreement {
    /// Within [`DISAGREEMENT`].
    Agrees,
    /// wrk measured less while it used 90%+ of its CPU in every repetition: its figure is its
    /// own limit, not the server's.
    WrkBound,
    /// Apart by more than [`DISAGREEMENT`], and not explained by wrk's saturation.
    Disagrees,
}

/// `None` when wrk did not run.
pub fn agreement(c: &Counters, ours: f64, reps: u64) -> Option<Agreement> {
    let wrk = requests_per_sec(c)?;
    Some(if (ours - wrk).abs() <= DISAGREEMENT * wrk {
        Agreement::Agrees
    } else if ours > wrk && wrk_runs(c, reps) > 0 && c.get(counter::SATURATED) >= wrk_runs(c, reps)
    {
        Agreement::WrkBound
    } else {
        Agreement::Disagrees
    })
}

/// The repetitions wrk ran in: its own count, or (results written before it was kept, when
/// wrk ran in every repetition) the case's.
fn wrk_runs(c: &Counters, reps: u64) -> u64 {
    match c.get(counter::RUNS) {
        0 => reps,
        n => n,
    }
}

/// wrk's CPU over its runs, as a fraction of its one CPU; `None` when not measured.
pub fn cpu_busy(c: &Counters) -> Option<f64> {
    let (cpu, run) = (c.get(counter::CPU_NS), c.get(counter::RUN_NS));
    (run > 0).then(|| cpu as f64 / run as f64)
}
