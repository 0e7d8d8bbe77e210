//! io_uring's hidden work, counted by the kernel: perf counters on the `io_uring:*`
//! tracepoints, opened beside the syscall counter in the counting repetition of an io_uring
//! model's cell, over the same tasks (`syscalls::Scope`, with `inherit`, so io-wq workers
//! and threads created later count too).
//!
//! - `io_uring_queue_async_work`: a request punted to an io-wq worker thread (it could not
//!   complete or arm a poll inline: a buffered write, statx, an open). It fires in the
//!   submitter's context. The worker's CPU is part of the cell's CPU already (`measure::cpu`
//!   reads every io_uring task).
//! - `io_uring_complete`: every completion posted (a multishot request posts many, so
//!   completions less punts is not the requests that completed inline).
//! - `io_uring_cqe_overflow`: a completion that found the CQ ring full.
//! - `io_uring_task_work_run` and `io_uring_local_work_run`: runs of a task's task work,
//!   the second for DEFER_TASKRUN rings.
//!
//! Where a tracepoint cannot be opened the whole reading is unavailable, with the reason.

use super::syscalls::{find_tracepoint_id, Scope, TraceCounter};
use super::Measured;

crate::counter_set! {
    /// What the io_uring tracepoints counted over a window (the cell's counting repetition).
    pub struct UringCounters {
        /// Requests punted to io-wq worker threads (`io_uring:io_uring_queue_async_work`).
        uring_punted,
        /// Completions posted (`io_uring:io_uring_complete`).
        uring_completions,
        /// Completions that overflowed the CQ ring (`io_uring:io_uring_cqe_overflow`).
        uring_cqe_overflows,
        /// Task-work runs (`io_uring:io_uring_task_work_run`).
        uring_task_work_runs,
        /// DEFER_TASKRUN rings' local task-work runs (`io_uring:io_uring_local_work_run`).
        uring_local_work_runs,
    }
}

/// The tracepoints, in [`UringCounters`]' field order.
const EVENTS: [&str; 5] = [
    "io_uring/io_uring_queue_async_work",
    "io_uring/io_uring_complete",
    "io_uring/io_uring_cqe_overflow",
    "io_uring/io_uring_task_work_run",
    "io_uring/io_uring_local_work_run",
];

impl UringCounters {
    fn from_array(v: [u64; 5]) -> UringCounters {
        UringCounters {
            uring_punted: v[0],
            uring_completions: v[1],
            uring_cqe_overflows: v[2],
            uring_task_work_runs: v[3],
            uring_local_work_runs: v[4],
        }
    }

    /// What was counted since `earlier`.
    pub(crate) fn since(&self, earlier: &UringCounters) -> UringCounters {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        UringCounters {
            uring_punted: d(self.uring_punted, earlier.uring_punted),
            uring_completions: d(self.uring_completions, earlier.uring_completions),
            uring_cqe_overflows: d(self.uring_cqe_overflows, earlier.uring_cqe_overflows),
            uring_task_work_runs: d(self.uring_task_work_runs, earlier.uring_task_work_runs),
            uring_local_work_runs: d(self.uring_local_work_runs, earlier.uring_local_work_runs),
        }
    }
}

/// The io_uring tracepoints' counters over a scope.
pub(crate) struct UringTrace {
    counters: Vec<TraceCounter>,
}

impl UringTrace {
    /// Opens a counter of every tracepoint over `scope`, or says why one cannot be.
    pub(crate) fn open(scope: Scope) -> Result<UringTrace, String> {
        let counters = EVENTS
            .iter()
            .map(|e| {
                let id = find_tracepoint_id(e)?;
                TraceCounter::open(id, &e.replacen('/', ":", 1), scope)
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(UringTrace { counters })
    }

    /// The totals counted so far.
    pub(crate) fn read(&self) -> UringCounters {
        let mut v = [0u64; 5];
        for (v, c) in v.iter_mut().zip(&self.counters) {
            *v = c.read();
        }
        UringCounters::from_array(v)
    }
}

/// An optional trace as a window's counting carries it: `None` when not counting, or why it
/// could not be opened.
pub(crate) type Tracing = Option<Result<UringTrace, String>>;

/// What a trace reads now (zeros when there is nothing to read).
pub(crate) fn read(t: &Tracing) -> UringCounters {
    match t {
        Some(Ok(t)) => t.read(),
        _ => UringCounters::default(),
    }
}

/// A window's figure: counted since `start`, or why not (`None`: not counted).
pub(crate) fn window(t: &Tracing, start: &UringCounters) -> Option<Measured<UringCounters>> {
    t.as_ref().map(|t| match t {
        Ok(t) => Measured::Value(t.read().since(start)),
        Err(why) => Measured::unavailable(why.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_subtracts_field_by_field() {
        let a = UringCounters::from_array([1, 2, 3, 4, 5]);
        let b = UringCounters::from_array([11, 12, 3, 5, 4]);
        assert_eq!(b.since(&a), UringCounters::from_array([10, 10, 0, 1, 0]));
    }

    #[test]
    fn a_missing_tracepoint_is_named_in_its_reason() {
        let why = find_tracepoint_id("io_uring/io_uring_no_such_event").unwrap_err();
        assert!(why.contains("io_uring:io_uring_no_such_event"), "{why}");
    }
}
