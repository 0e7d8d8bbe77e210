//! One load thread's figures, the same for every driver (echo and HTTP in `engine`, `stream`,
//! `pubsub`), and the one place they are added into the run's [`Report`]: each driver used to
//! keep its own struct and its own merge, and the merges disagreed (pubsub added its resets
//! into the read errors, the others counted read errors where they met them; only the engine
//! kept the earliest first error over threads).

use super::{DatagramCounts, Mismatch, Report};
use crate::measure::timeline::Timeline;
use crate::measure::{clock, CounterSet, Hist};
use serde::{Deserialize, Serialize};

crate::counter_set! {
    /// A load run's counts: one thread's ([`Tally::n`]), and summed, the run's
    /// ([`Report::n`], flattened into its JSON under these names). Every count covers the
    /// measured window (after the warm-up), the same window for successes and errors, unless
    /// said otherwise. Threads and hosts add up through [`CounterSet::merge`] alone, so a new
    /// count is one field here; a cell's `load_*` counters are read from these in
    /// `workload::net::cell::load_counters`, which names every one (the compiler points there).
    #[derive(Serialize, Deserialize)]
    pub struct Counts {
        /// Messages whose full and valid response arrived inside the window: the ops. A
        /// response that does not verify (mismatch, non-2xx, malformed) is never one.
        msgs,
        /// Payload bytes of those messages, one direction (each is sent and received once).
        bytes,
        /// Bytes of those messages' responses as received (HTTP: headers included, as wrk's
        /// transfer/s counts them; echo: equal to `bytes`).
        rx_bytes,
        /// Connections that could not be established: at the start (before the warm-up), and
        /// on reconnecting inside the window.
        connect_errors,
        /// Connections the server reset or closed (ECONNRESET, EPIPE, EOF).
        resets,
        /// Other socket errors.
        io_errors,
        /// Of `resets + io_errors`: those met receiving (EOF included).
        read_errors,
        /// Of `resets + io_errors`: those met sending.
        write_errors,
        /// Responses that were not the message sent (wrong bytes, another connection's,
        /// stale; HTTP: a body of another length than expected).
        mismatches,
        /// Complete responses with a status outside 2xx (HTTP).
        non_2xx,
        /// Responses that could not be parsed or framed, or announced a length over the
        /// reader's caps (HTTP); each closed its connection when its end could not be known.
        malformed,
        /// Times bytes arrived that no request asked for: past the end of a response, or while
        /// no request was outstanding (a server that answers twice, or writes canned answers
        /// before it is asked). Never an op; such a run is a failure ([`Report::unverified`]).
        #[serde(default)]
        unsolicited,
        /// Messages outstanding longer than the message timeout.
        timeouts,
        /// Connections closed by a valid `Connection: close` response and opened again (wrk's
        /// behaviour); not errors.
        reconnects,
        /// [`super::Config::churn`]: connections the client closed with SO_LINGER 0 (a RST
        /// instead of a FIN, so no TIME_WAIT is left on either side) after their response, in
        /// the window.
        #[serde(default, skip_serializing_if = "is_zero")]
        abortive_closes,
        /// [`super::Config::churn`]: connects started over the whole run, warm-up included
        /// (the span the server's own `accepts` counter covers).
        #[serde(default, skip_serializing_if = "is_zero")]
        connects,
        /// Connections whose first message was still unanswered when the warm-up gave up at
        /// the message timeout and the window opened anyway (0: every connection had been
        /// served).
        unsettled_conns,
        /// Errors of every kind in the warm-up (not in the counts above).
        warmup_errors,
        /// Of `warmup_errors`: responses that did not verify (mismatch, non-2xx, malformed). A
        /// server that answers wrongly only in the warm-up still fails the run.
        warmup_invalid,
        /// Connections still open and usable when the window closed.
        live_conns,
        /// CPU of the load generator's threads over the window, ns (CPU-time clocks: exact).
        cpu_ns,
        /// Bulk transfer (`stream`): payload bytes verified against the pattern, warm-up and
        /// window (by the client; for uploads by the server, whose trailer the client checks).
        /// 0 for message exchanges, whose every op is a verified response.
        verified_bytes,
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One load thread's figures: its counts, its latencies, its ops over time, and the first
/// error and mismatch it saw, each with when (ns, `clock::now_ns`) so that the run keeps the
/// earliest over threads.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) n: Counts,
    /// The UDP driver's datagrams (0 for every other driver).
    pub(crate) dgram: DatagramCounts,
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
        let (mut n, mut dgram) = (Counts::default(), DatagramCounts::default());
        let mut timeline: Option<Timeline> = None;
        let mut max_thread = 0u64;
        let mut first_error: Option<(u64, String)> = None;
        let mut first_mismatch: Option<(u64, Mismatch)> = None;
        for p in parts {
            n.merge(&p.n);
            dgram.merge(&p.dgram);
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
        r.n.merge(&n);
        r.dgram.merge(&dgram);
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
        b.n.verified_bytes = 8;
        b.n.cpu_ns = 30;
        b.error_at(20, || "early".into());
        b.error_at(10, || "not the first of b".into());
        b.mismatch_at(60, mm(2));
        let cfg = super::super::Config::new("127.0.0.1:9".parse().unwrap(), 2, Default::default());
        let mut r = Report::empty(&cfg, 2, None, 100, false);
        r.add_tallies([a, b]);
        assert_eq!((r.n.msgs, r.n.resets, r.n.read_errors), (7, 1, 2));
        assert_eq!((r.n.verified_bytes, r.n.cpu_ns), (8, 40));
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
