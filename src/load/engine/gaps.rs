//! The message engine's window accounting beside its ops: when responses completed, to find
//! the longest stall with no completion on any thread ([`crate::load::Report::longest_gap_ns`]),
//! and the ops and latencies per interval (`measure::timeline`). One per thread, recorded where
//! an op is counted, merged over threads when the run ends.

use crate::load::GAP_BUCKETS;
use crate::measure::timeline::Timeline;

/// When responses completed inside the window, per bucket of window/[`GAP_BUCKETS`]: the
/// first and last completion time in each. Merged over threads, consecutive non-empty buckets
/// give every gap with no completion on any thread that spans a bucket boundary, exactly; a
/// gap inside one bucket is shorter than the bucket.
/// Beside them, the ops and latencies per 100 ms of the window (`measure::timeline`).
pub(super) struct Gaps {
    t_open: u64,
    res: u64,
    first: Vec<u64>,
    last: Vec<u64>,
    pub(super) timeline: Timeline,
}

impl Gaps {
    pub(super) fn new(t_open: u64, window_ns: u64) -> Gaps {
        Gaps {
            t_open,
            res: window_ns.div_ceil(GAP_BUCKETS as u64).max(1),
            first: vec![u64::MAX; GAP_BUCKETS],
            last: vec![0; GAP_BUCKETS],
            timeline: Timeline::new(t_open, window_ns),
        }
    }

    /// An op completed at `now` after `latency_ns`.
    #[inline]
    pub(super) fn record(&mut self, now: u64, latency_ns: u64) {
        self.timeline.record(now, latency_ns);
        let b = (((now - self.t_open) / self.res) as usize).min(GAP_BUCKETS - 1);
        self.first[b] = self.first[b].min(now);
        self.last[b] = self.last[b].max(now);
    }

    pub(super) fn merge(&mut self, o: &Gaps) {
        for b in 0..GAP_BUCKETS {
            self.first[b] = self.first[b].min(o.first[b]);
            self.last[b] = self.last[b].max(o.last[b]);
        }
        self.timeline.merge(&o.timeline);
    }

    /// The longest span in [t_open, t_close) with no completion.
    pub(super) fn longest(&self, t_close: u64) -> u64 {
        if t_close <= self.t_open {
            return 0;
        }
        let (mut prev, mut longest) = (self.t_open, 0u64);
        for b in 0..GAP_BUCKETS {
            if self.first[b] != u64::MAX {
                longest = longest.max(self.first[b].saturating_sub(prev));
                prev = self.last[b];
            }
        }
        longest.max(t_close.saturating_sub(prev))
    }
}
