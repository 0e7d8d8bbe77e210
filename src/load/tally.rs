//! One load thread's figures, the same for every driver (echo and HTTP in `engine`, `stream`,
//! `pubsub`), and the one place they are added into the run's [`Report`]: each driver used to
//! keep its own struct and its own merge, and the merges disagreed (pubsub added its resets
//! into the read errors, the others counted read errors where they met them; only the engine
//! kept the earliest first error over threads).

use super::{Mismatch, Report};
use crate::measure::timeline::Timeline;
use crate::measure::{clock, CounterSet, Hist};

crate::counter_set! {
    /// One load thread's counts. Each sums into the [`Report`] field of the same name, except
    /// `live` (into `live_conns`) and `verified` (into `verified_bytes`).
    pub(crate) struct Counts {
        msgs,
        bytes,
        rx_bytes,
        connect_errors,
        resets,
        io_errors,
        read_errors,
        write_errors,
        mismatches,
        non_2xx,
        malformed,
        unsolicited,
        timeouts,
        reconnects,
        abortive_closes,
        connects,
        warmup_errors,
        warmup_invalid,
        live,
        cpu_ns,
        verified,
        dgram_sent,
        dgram_lost,
        dgram_warmup_lost,
        dgram_late,
        dgram_duplicates,
        dgram_reordered,
        dgram_send_failed,
    }
}

/// One load thread's figures: its counts, its latencies, its ops over time, and the first
/// error and mismatch it saw, each with when (ns, `clock::now_ns`) so that the run keeps the
/// earliest over threads.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) n: Counts,
    pub(crate) latency: Hist,
    /// The window's ops and latencies per interval (`measure::timeline`), recorded where the
    /// ops are counted; started when the thread sees the window open
    /// ([`Timeline::of_window`]). The message engine keeps its own (beside its gaps).
    pub(crate) timeline: Option<Timeline>,
    first_error: Option<(u64, String)>,
    first_mismatch: Option<(u64, Mismatch)>,
}

impl Tally {
    /// Keeps `what()` as this thread's first error, seen at `now`, unless it has one.
    pub(crate) fn error_at(&mut self, now: u64, what: impl FnOnce() -> String) {
        if self.first_error.is_none() {
            self.first_error = Some((now, what()));
        }
    }

    /// As [`Tally::error_at`], seen now.
    pub(crate) fn error(&mut self, what: impl FnOnce() -> String) {
        self.error_at(clock::now_ns(), what);
    }

    pub(crate) fn has_error(&self) -> bool {
        self.first_error.is_some()
    }

    /// Keeps `m` as this thread's first mismatch, seen at `now`, unless it has one.
    pub(crate) fn mismatch_at(&mut self, now: u64, m: Mismatch) {
        if self.first_mismatch.is_none() {
            self.first_mismatch = Some((now, m));
        }
    }

    /// As [`Tally::mismatch_at`], seen now.
    pub(crate) fn mismatch(&mut self, m: Mismatch) {
        self.mismatch_at(clock::now_ns(), m);
    }
}

impl Report {
    /// Adds the threads' tallies: counts summed, latencies and timelines added (the
    /// timeline cut at the window's end, `window_ns`), the earliest first error and first
    /// mismatch kept; then settles the CPU fractions from the busiest thread.
    pub(crate) fn add_tallies(&mut self, parts: impl IntoIterator<Item = Tally>) {
        let mut n = Counts::default();
        let mut timeline: Option<Timeline> = None;
        let mut max_thread = 0u64;
        let mut first_error: Option<(u64, String)> = None;
        let mut first_mismatch: Option<(u64, Mismatch)> = None;
        for p in parts {
            n.merge(&p.n);
            max_thread = max_thread.max(p.n.cpu_ns);
            self.latency.merge(&p.latency);
            match (&mut timeline, p.timeline) {
                (Some(a), Some(b)) => a.merge(&b),
                (a @ None, b) => *a = b,
                _ => {}
            }
            if let Some(e) = p.first_error {
                if first_error.as_ref().is_none_or(|f| e.0 < f.0) {
                    first_error = Some(e);
                }
            }
            if let Some(m) = p.first_mismatch {
                if first_mismatch.as_ref().is_none_or(|f| m.0 < f.0) {
                    first_mismatch = Some(m);
                }
            }
        }
        let r = self;
        r.msgs += n.msgs;
        r.bytes += n.bytes;
        r.rx_bytes += n.rx_bytes;
        r.connect_errors += n.connect_errors;
        r.resets += n.resets;
        r.io_errors += n.io_errors;
        r.read_errors += n.read_errors;
        r.write_errors += n.write_errors;
        r.mismatches += n.mismatches;
        r.non_2xx += n.non_2xx;
        r.malformed += n.malformed;
        r.unsolicited += n.unsolicited;
        r.timeouts += n.timeouts;
        r.reconnects += n.reconnects;
        r.abortive_closes += n.abortive_closes;
        r.connects += n.connects;
        r.warmup_errors += n.warmup_errors;
        r.warmup_invalid += n.warmup_invalid;
        r.live_conns += n.live;
        r.cpu_ns += n.cpu_ns;
        r.verified_bytes += n.verified;
        r.dgram.dgram_sent += n.dgram_sent;
        r.dgram.dgram_lost += n.dgram_lost;
        r.dgram.dgram_warmup_lost += n.dgram_warmup_lost;
        r.dgram.dgram_late += n.dgram_late;
        r.dgram.dgram_duplicates += n.dgram_duplicates;
        r.dgram.dgram_reordered += n.dgram_reordered;
        r.dgram.dgram_send_failed += n.dgram_send_failed;
        if let Some(t) = timeline.map(|t| t.cut(r.window_ns)) {
            match &mut r.timeline {
                Some(a) => a.merge(&t),
                None => r.timeline = Some(t),
            }
        }
        r.first_error = r.first_error.take().or(first_error.map(|e| e.1));
        r.first_mismatch = r.first_mismatch.or(first_mismatch.map(|m| m.1));
        r.settle_cpu(max_thread);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mm(conn: u32) -> Mismatch {
        Mismatch {
            conn,
            msg: 0,
            offset: 0,
            in_warmup: false,
        }
    }

    /// Every driver's threads add up alike: sums, the earliest error and mismatch over
    /// threads (not the first thread's), the busiest thread's CPU.
    #[test]
    fn tallies_add_up_alike_and_keep_the_earliest_error() {
        let mut a = Tally::default();
        a.n.msgs = 3;
        a.n.resets = 1;
        a.n.cpu_ns = 10;
        a.error_at(50, || "late".into());
        a.mismatch_at(70, mm(1));
        let mut b = Tally::default();
        b.n.msgs = 4;
        b.n.read_errors = 2;
        b.n.verified = 8;
        b.n.cpu_ns = 30;
        b.error_at(20, || "early".into());
        b.error_at(10, || "not the first of b".into());
        b.mismatch_at(60, mm(2));
        let cfg = super::super::Config::new("127.0.0.1:9".parse().unwrap(), 2, Default::default());
        let mut r = Report::empty(&cfg, 2, None, 100, false);
        r.add_tallies([a, b]);
        assert_eq!((r.msgs, r.resets, r.read_errors), (7, 1, 2));
        assert_eq!((r.verified_bytes, r.cpu_ns), (8, 40));
        assert_eq!(r.first_error.as_deref(), Some("early"));
        assert_eq!(r.first_mismatch, Some(mm(2)));
        assert!((r.max_thread_fraction - 0.3).abs() < 1e-9);
    }

    /// The threads' timelines add up interval by interval, cut at the window's end (a run
    /// stopped early); a thread that saw the window open and completed nothing adds zeros.
    #[test]
    fn the_threads_timelines_add_up_and_end_with_the_window() {
        let (open, planned) = (1_000, 1_000 + 500_000_000);
        let mut a = Tally::default();
        let t = Timeline::of_window(&mut a.timeline, open, planned);
        t.record(open + 10, 5);
        t.record_n(open + 250_000_000, 8, 2);
        let mut b = Tally::default();
        Timeline::of_window(&mut b.timeline, open, planned).record(open + 120_000_000, 30);
        let mut idle = Tally::default();
        Timeline::of_window(&mut idle.timeline, open, planned);
        let cfg = super::super::Config::new("127.0.0.1:9".parse().unwrap(), 2, Default::default());
        // Stopped after 300 ms of the planned 500.
        let mut r = Report::empty(&cfg, 3, None, 300_000_000, false);
        r.add_tallies([a, b, idle, Tally::default()]);
        let t = r.timeline.expect("a timeline");
        assert_eq!((t.ops.clone(), t.window_ns), (vec![1, 1, 2], 300_000_000));
        assert_eq!(t.latency_sum_ns, vec![5, 30, 16]);
        assert_eq!(t.latency_max_ns, vec![5, 30, 8]);
        let mut none = Report::empty(&cfg, 1, None, 300_000_000, false);
        none.add_tallies([Tally::default()]);
        assert_eq!(none.timeline, None, "no thread saw the window: none");
    }
}
