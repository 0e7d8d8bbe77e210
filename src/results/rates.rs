//! The rates a cell's record holds, read one way by everyone: an open-loop cell's offered and
//! achieved rates and whether it kept up (the one rule, [`KEEP_UP`]), the load generator's
//! errors in its windows, and wrk's requests/s and CPU share beside an HTTP cell. Readings of
//! a recorded cell, no statistics: the workloads flag a repetition with [`fell_behind`], the
//! analysis ranks by them and the exporters show them, all through here.

use crate::measure::cell::{OpenLoopCounters, WrkCounters};
use crate::results::{CaseResult, Status};

/// Share of the offered rate a server must achieve to count as keeping up with it.
pub(crate) const KEEP_UP: f64 = 0.95;

/// Whether a repetition that achieved `achieved` of `offered` per second fell behind.
pub(crate) fn fell_behind(offered: f64, achieved: f64) -> bool {
    achieved < KEEP_UP * offered
}

impl CaseResult {
    /// One of an open-loop cell's rates (`pick` from its counters: per second, the mean over
    /// its repetitions).
    fn open_loop_rate(&self, pick: fn(&OpenLoopCounters) -> u64) -> Option<f64> {
        let f = self
            .figures
            .as_ref()
            .filter(|_| self.status == Status::Measured)?;
        f.counters
            .open_loop
            .as_ref()
            .map(|r| pick(r) as f64)
            .filter(|v| *v > 0.0)
    }

    /// The rate an open-loop cell was offered, per second over all connections; `None` for a
    /// closed-loop cell: the rate the runner derived for an equal-load point (`rate_per_sec`
    /// on the case), else what the workload recorded that it drove (its counters: the rate
    /// sweeps).
    pub(crate) fn offered_rate(&self) -> Option<f64> {
        self.rate_per_sec
            .filter(|_| self.status == Status::Measured)
            .map(|r| r as f64)
            .or_else(|| self.open_loop_rate(|r| r.offered_per_sec))
    }

    /// The rate an open-loop cell achieved (mean over its repetitions).
    pub(crate) fn achieved_rate(&self) -> Option<f64> {
        self.open_loop_rate(|r| r.achieved_per_sec)
    }

    /// The rate an open-loop cell achieved in its typical repetition: the median of its
    /// repetitions' throughput where the file has them (one stalled or spiking repetition
    /// does not move it), else the mean over its repetitions.
    pub(crate) fn typical_achieved_rate(&self) -> Option<f64> {
        self.offered_rate()?;
        let f = self.figures.as_ref()?;
        if f.runs_ops_per_sec.is_empty() {
            self.achieved_rate()
        } else {
            Some(super::spread::median(&f.runs_ops_per_sec))
        }
    }

    /// Whether an open-loop cell kept up with its offered rate (`None`: not an open-loop
    /// cell), the one rule every view uses (the knee of a rate sweep, the rankings at equal
    /// load, "fell behind", the tables' footnotes and the charts' rings): its typical
    /// repetition ([`Self::typical_achieved_rate`]) achieved [`KEEP_UP`] of the offer.
    /// Repetitions that fell behind in a cell that kept up are named beside it
    /// ([`Self::repetitions_behind`]).
    pub(crate) fn kept_up(&self) -> Option<bool> {
        let offered = self.offered_rate()?;
        Some(!fell_behind(
            offered,
            self.typical_achieved_rate().unwrap_or(0.0),
        ))
    }

    /// How many of an open-loop cell's repetitions fell behind its offer, of how many: a
    /// figure to name beside the cell ("1 of 6 repetitions fell behind"); `None` for a
    /// closed-loop cell or one with no repetition behind.
    pub(crate) fn repetitions_behind(&self) -> Option<(u64, u32)> {
        self.offered_rate()?;
        let f = self.figures.as_ref()?;
        let n = f.counters.open_loop.as_ref()?.fell_behind;
        (n > 0).then_some((n, self.repetitions))
    }

    /// The errors the load generator counted in a measured cell's windows, summed over its
    /// repetitions: connect errors, resets, other I/O errors, mismatched bytes, timeouts and,
    /// for HTTP, non-2xx and malformed responses (the warm-up's apart); `None` where no load
    /// generator ran (micro and storage cells) or the cell was not measured.
    pub(crate) fn load_errors(&self) -> Option<u64> {
        let f = self
            .figures
            .as_ref()
            .filter(|_| self.status == Status::Measured)?;
        f.counters.load.as_ref().map(|l| {
            [
                l.load_connect_errors,
                l.load_resets,
                l.load_io_errors,
                l.load_mismatches,
                l.load_timeouts,
                l.load_non_2xx,
                l.load_malformed,
            ]
            .into_iter()
            .fold(0u64, u64::saturating_add)
        })
    }
}

impl WrkCounters {
    /// wrk's requests/s over the repetitions it ran in; `None` without a measured window.
    pub(crate) fn requests_per_sec(&self) -> Option<f64> {
        (self.wrk_window_ns > 0).then(|| self.wrk_requests as f64 * 1e9 / self.wrk_window_ns as f64)
    }

    /// wrk's CPU over its runs, as a fraction of its one CPU; `None` when not measured.
    pub(crate) fn cpu_busy(&self) -> Option<f64> {
        (self.wrk_run_ns > 0).then(|| self.wrk_cpu_ns as f64 / self.wrk_run_ns as f64)
    }
}
