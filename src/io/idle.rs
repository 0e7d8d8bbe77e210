//! Idle-connection timeouts, shared by the server loops (slowloris defence).
//!
//! A connection is idle when the protocol has made no reply for `limit` (counted from accept,
//! then from each reply). Each loop records a connection's last reply on a coarse clock
//! (CLOCK_MONOTONIC_COARSE: a vDSO read of the last tick, no syscall, one per batch of
//! replies) and sweeps its connections every `tick` (a quarter of the limit, clamped to
//! `MIN_TICK..=MAX_TICK`), so an idle connection is closed between `limit` and
//! `limit + tick` plus one clock tick after its last reply. With no limit (echo), the loops
//! neither read the clock nor arm a timer.

use std::time::Duration;

/// Shortest sweep interval: a tiny limit must not turn the sweep into a busy loop.
pub(crate) const MIN_TICK: Duration = Duration::from_millis(10);
/// Longest sweep interval: a long limit is still enforced within a second of lateness.
pub(crate) const MAX_TICK: Duration = Duration::from_secs(1);

/// An enforced idle limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Idle {
    /// The limit, ns.
    pub(crate) limit_ns: u64,
    /// How often the loop sweeps.
    pub(crate) tick: Duration,
}

impl Idle {
    /// `None` when there is no limit (or a zero one), so a loop can test one `Option`.
    pub(crate) fn new(limit: Option<Duration>) -> Option<Idle> {
        let limit = limit.filter(|d| !d.is_zero())?;
        Some(Idle {
            limit_ns: u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX),
            tick: (limit / 4).clamp(MIN_TICK, MAX_TICK),
        })
    }

    /// Whether a connection whose last reply was at `last_ns` is idle at `now_ns` (both from
    /// [`coarse_now_ns`]).
    #[inline]
    pub(crate) fn expired(&self, last_ns: u64, now_ns: u64) -> bool {
        now_ns.saturating_sub(last_ns) >= self.limit_ns
    }
}

/// CLOCK_MONOTONIC_COARSE in ns: the time of the last clock tick (1-4 ms resolution), read
/// from the vDSO without a syscall. Only compared with itself.
#[inline]
pub(crate) fn coarse_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec we own; CLOCK_MONOTONIC_COARSE exists since Linux 2.6.32.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_limit_and_zero_mean_never() {
        assert_eq!(Idle::new(None), None);
        assert_eq!(Idle::new(Some(Duration::ZERO)), None);
    }

    #[test]
    fn tick_is_a_quarter_clamped() {
        let t = |ms| Idle::new(Some(Duration::from_millis(ms))).unwrap().tick;
        assert_eq!(t(300), Duration::from_millis(75));
        assert_eq!(t(1), MIN_TICK);
        assert_eq!(t(60_000), MAX_TICK);
        let i = Idle::new(Some(Duration::from_millis(300))).unwrap();
        assert!(!i.expired(1_000, 1_000 + 299_999_999));
        assert!(i.expired(1_000, 1_000 + 300_000_000));
        assert!(
            !i.expired(5_000, 1_000),
            "a clock read before `last` is not idle"
        );
    }

    #[test]
    fn coarse_clock_moves_forward() {
        let a = coarse_now_ns();
        std::thread::sleep(Duration::from_millis(20));
        let b = coarse_now_ns();
        assert!(b > a && b - a >= 10_000_000, "{a} -> {b}");
    }
}
