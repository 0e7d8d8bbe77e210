//! The clock every figure is read from: `CLOCK_MONOTONIC` in nanoseconds (a vDSO call when the
//! clocksource allows it, which the syscall counter would reveal otherwise), and the cost of
//! reading it, calibrated so per-op latencies can exclude it.
//!
//! raw: glibc's `clock_gettime`, whose vDSO is set up before `main`; rustix's would look for it
//! on the first read (a `prctl(PR_GET_AUXV)` more) and time another code path than the
//! recorded calibrations did.

use std::sync::OnceLock;

/// Monotonic time in nanoseconds.
#[inline(always)]
pub(crate) fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec we own; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// What one timed interval costs by itself: the median of `t1 - t0` for two back-to-back reads,
/// in nanoseconds. A per-op latency is `t1 - t0 - overhead`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
pub struct TimerCalibration {
    /// Median of an empty `t0..t1` interval, ns.
    pub(crate) overhead_ns: u64,
    /// Smallest non-zero step the clock showed, ns (its effective resolution).
    pub(crate) resolution_ns: u64,
    /// The clocksource the kernel uses (`tsc`, `kvm-clock`, ...).
    pub(crate) clocksource: String,
}

/// Calibrates once per process (about a millisecond) and returns the same figures after.
pub(crate) fn calibration() -> &'static TimerCalibration {
    static CAL: OnceLock<TimerCalibration> = OnceLock::new();
    CAL.get_or_init(calibrate)
}

fn calibrate() -> TimerCalibration {
    const N: usize = 20_001;
    let mut d = Vec::with_capacity(N);
    for _ in 0..1000 {
        std::hint::black_box(now_ns());
    }
    for _ in 0..N {
        let a = now_ns();
        let b = now_ns();
        d.push(b - a);
    }
    d.sort_unstable();
    let resolution_ns = d.iter().copied().find(|&x| x > 0).unwrap_or(1);
    TimerCalibration {
        overhead_ns: d[N / 2],
        resolution_ns,
        clocksource: std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into()),
    }
}

/// Wall-clock time, ns since the Unix epoch (for records, never for intervals).
pub(crate) fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic_and_calibration_is_sane() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a);
        let c = calibration();
        // Structure, not speed: an empty interval is shorter than a millisecond on any machine.
        assert!(c.overhead_ns < 1_000_000, "{c:?}");
        assert!(c.resolution_ns >= 1);
    }
}
