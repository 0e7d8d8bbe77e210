//! A repetition's figures over time: ops, mean and longest latency per interval of its
//! measured window ([`STEP_NS`], 100 ms; longer for windows past [`MAX_INTERVALS`] of them),
//! so that a stall or a hiccup shows where it happened, not only as a wider tail.
//!
//! A load thread records each op as it completes inside the window ([`Timeline::record`]);
//! the threads' timelines are added up ([`Timeline::merge`]); the repetition's
//! [`Timeline`] goes into its `Sample` and, over the timed repetitions, into the cell's
//! `runs_timeline`. Memory is bounded by [`MAX_INTERVALS`] whatever the window.

use serde::{Deserialize, Serialize};

/// The interval: 100 ms.
pub const STEP_NS: u64 = 100_000_000;
/// At most this many intervals (a minute of window at 100 ms); a longer window gets longer
/// intervals, a whole number of [`STEP_NS`].
pub const MAX_INTERVALS: usize = 600;

/// One repetition's series: interval `i` covers `[i * step_ns, (i + 1) * step_ns)` from the
/// window's opening; the last one may be cut short by the window's end (`window_ns`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Timeline {
    /// The interval's length, ns.
    pub step_ns: u64,
    /// The window's length, ns (the last interval ends there).
    pub window_ns: u64,
    /// Ops completed in each interval.
    pub ops: Vec<u64>,
    /// Sum of those ops' latencies, ns (mean = sum / ops).
    pub latency_sum_ns: Vec<u64>,
    /// The longest latency of an op completed in each interval, ns (0: none completed).
    pub latency_max_ns: Vec<u64>,
    /// When the window opened (the recording thread's clock, ns); not written.
    #[serde(skip)]
    #[schemars(skip)]
    t_open: u64,
}

impl Timeline {
    /// An empty series for a window opening at `t_open` and lasting `window_ns`.
    pub fn new(t_open: u64, window_ns: u64) -> Timeline {
        let max = MAX_INTERVALS as u64;
        let steps = window_ns.div_ceil(STEP_NS).max(1);
        let step_ns = STEP_NS * steps.div_ceil(max).max(1);
        let n = window_ns.div_ceil(step_ns).clamp(1, max) as usize;
        Timeline {
            step_ns,
            window_ns,
            ops: vec![0; n],
            latency_sum_ns: vec![0; n],
            latency_max_ns: vec![0; n],
            t_open,
        }
    }

    /// The series in `slot`: the one there, or a new one for the window opening at `open`
    /// and planned to close at `planned` (a load thread starts its own when it sees the
    /// window open, so a repetition in which none completes still has its empty series).
    pub fn of_window(slot: &mut Option<Timeline>, open: u64, planned: u64) -> &mut Timeline {
        slot.get_or_insert_with(|| Timeline::new(open, planned.saturating_sub(open)))
    }

    /// An op that completed at `now` (same clock as `t_open`) after `latency_ns`; one
    /// before the opening counts in the first interval, one past the end in the last.
    #[inline]
    pub fn record(&mut self, now: u64, latency_ns: u64) {
        self.record_n(now, latency_ns, 1);
    }

    /// `n` ops seen completed at one `now`, after `latency_ns` each (as a histogram's
    /// `record_n`: a stream's chunks that one read or write completed).
    #[inline]
    pub fn record_n(&mut self, now: u64, latency_ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        let i = ((now.saturating_sub(self.t_open) / self.step_ns) as usize).min(self.ops.len() - 1);
        self.ops[i] += n;
        self.latency_sum_ns[i] =
            self.latency_sum_ns[i].saturating_add(latency_ns.saturating_mul(n));
        self.latency_max_ns[i] = self.latency_max_ns[i].max(latency_ns);
    }

    /// Adds another thread's (or host's) series of the same window; intervals the other
    /// lacks or has beyond this one's are dropped (a series of another shape is ignored).
    pub fn merge(&mut self, o: &Timeline) {
        if o.step_ns != self.step_ns {
            return;
        }
        for i in 0..self.ops.len().min(o.ops.len()) {
            self.ops[i] += o.ops[i];
            self.latency_sum_ns[i] = self.latency_sum_ns[i].saturating_add(o.latency_sum_ns[i]);
            self.latency_max_ns[i] = self.latency_max_ns[i].max(o.latency_max_ns[i]);
        }
    }

    /// The series of this window and `o`'s end to end, as one window as long as both (a
    /// repetition made of slices, each with its own window): each interval's ops go where
    /// its start falls in the joined window.
    pub fn append(&mut self, o: &Timeline) {
        let mut joined = Timeline::new(self.t_open, self.window_ns + o.window_ns);
        for (t, offset) in [(&*self, 0), (o, self.window_ns)] {
            for i in 0..t.ops.len() {
                let at = offset + i as u64 * t.step_ns;
                let k = ((at / joined.step_ns) as usize).min(joined.ops.len() - 1);
                joined.ops[k] += t.ops[i];
                joined.latency_sum_ns[k] =
                    joined.latency_sum_ns[k].saturating_add(t.latency_sum_ns[i]);
                joined.latency_max_ns[k] = joined.latency_max_ns[k].max(t.latency_max_ns[i]);
            }
        }
        *self = joined;
    }

    /// The series of a window that closed after `window_ns` (earlier than planned when the
    /// run was stopped): the intervals past it dropped.
    pub fn cut(mut self, window_ns: u64) -> Timeline {
        let n = (window_ns.div_ceil(self.step_ns).max(1) as usize).min(self.ops.len());
        self.ops.truncate(n);
        self.latency_sum_ns.truncate(n);
        self.latency_max_ns.truncate(n);
        self.window_ns = window_ns;
        self
    }

    /// The intervals' lengths, ns: `step_ns` each, the last cut at the window's end.
    pub fn lengths_ns(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.ops.len()).map(|i| {
            let start = i as u64 * self.step_ns;
            self.step_ns
                .min(self.window_ns.saturating_sub(start))
                .max(1)
        })
    }

    /// Ops per second in each interval.
    pub fn ops_per_sec(&self) -> Vec<f64> {
        self.ops
            .iter()
            .zip(self.lengths_ns())
            .map(|(&n, len)| n as f64 * 1e9 / len as f64)
            .collect()
    }

    /// Mean latency in each interval, ns (`None`: no op completed in it).
    pub fn mean_ns(&self) -> Vec<Option<f64>> {
        self.ops
            .iter()
            .zip(&self.latency_sum_ns)
            .map(|(&n, &s)| (n > 0).then(|| s as f64 / n as f64))
            .collect()
    }

    /// Whether the series is consistent: three vectors of one length, within the bound, and
    /// covering the window (a results file is input).
    pub fn well_formed(&self) -> bool {
        let n = self.ops.len();
        n > 0
            && n <= MAX_INTERVALS
            && self.latency_sum_ns.len() == n
            && self.latency_max_ns.len() == n
            && self.step_ns > 0
            && (n as u64 - 1).saturating_mul(self.step_ns) < self.window_ns.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_fall_in_their_interval_and_threads_add_up() {
        let mut a = Timeline::new(1_000, 350_000_000);
        assert_eq!((a.step_ns, a.ops.len()), (STEP_NS, 4));
        a.record(1_000, 10);
        a.record(1_000 + 99_999_999, 30);
        a.record(1_000 + 100_000_000, 5);
        a.record(1_000 + 349_999_999, 7);
        // Before the opening and past the end: clamped to the edges.
        a.record(0, 1);
        a.record(1_000 + 10_000_000_000, 2);
        assert_eq!(a.ops, vec![3, 1, 0, 2]);
        assert_eq!(a.latency_sum_ns, vec![41, 5, 0, 9]);
        assert_eq!(a.latency_max_ns, vec![30, 5, 0, 7]);
        let mut b = Timeline::new(1_000, 350_000_000);
        b.record(1_000 + 250_000_000, 100);
        a.merge(&b);
        assert_eq!(a.ops, vec![3, 1, 1, 2]);
        assert_eq!(a.latency_max_ns, vec![30, 5, 100, 7]);
        // The last interval is 50 ms long: 2 ops there are 40/s.
        assert_eq!(a.ops_per_sec(), vec![30.0, 10.0, 10.0, 40.0]);
        assert_eq!(a.mean_ns()[2], Some(100.0));
        assert!(a.well_formed());
        let cut = a.clone().cut(150_000_000);
        assert_eq!((cut.ops, cut.window_ns), (vec![3, 1], 150_000_000));
        let other = Timeline::new(0, 100 * STEP_NS * MAX_INTERVALS as u64);
        a.merge(&other);
        assert_eq!(a.ops, vec![3, 1, 1, 2], "another shape is ignored");
    }

    #[test]
    fn a_batch_counts_each_op_and_a_thread_starts_its_series_once() {
        let mut slot = None;
        let t = Timeline::of_window(&mut slot, 1_000, 1_000 + 250_000_000);
        assert_eq!((t.window_ns, t.ops.len()), (250_000_000, 3));
        t.record_n(1_000 + 150_000_000, 40, 3);
        t.record_n(1_000 + 150_000_000, 7, 0);
        // Already started: the window given again is not the series' any more.
        let again = Timeline::of_window(&mut slot, 0, 10);
        assert_eq!(again.window_ns, 250_000_000);
        again.record(1_000 + 160_000_000, 100);
        let t = slot.unwrap();
        assert_eq!(t.ops, vec![0, 4, 0]);
        assert_eq!(t.latency_sum_ns, vec![0, 220, 0]);
        assert_eq!(t.latency_max_ns, vec![0, 100, 0]);
        assert_eq!(t.mean_ns()[1], Some(55.0));
    }

    #[test]
    fn long_windows_get_longer_intervals_and_stay_bounded() {
        let t = Timeline::new(0, 3_600 * 1_000_000_000);
        assert!(t.ops.len() <= MAX_INTERVALS);
        assert_eq!(t.step_ns % STEP_NS, 0);
        assert!(t.step_ns * t.ops.len() as u64 >= 3_600 * 1_000_000_000);
        assert!(t.well_formed());
        let empty = Timeline::new(0, 0);
        assert_eq!(empty.ops.len(), 1);
        let bad = Timeline {
            ops: vec![1, 2],
            ..Timeline::new(0, STEP_NS)
        };
        assert!(!bad.well_formed());
    }
}
