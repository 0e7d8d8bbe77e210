//! The calibration probe: a few milliseconds that every round of a point records, so that a
//! change of the machine between rounds or between runs (a slower state, another program on
//! the CPU, a throttled host) is seen as such and not read as a change of the code. Two
//! figures: the median cost of a trivial syscall on the measured CPU, and the median
//! round trip of a wake-up between the measured CPU and the other side's (a byte over a Unix
//! socket pair, each side blocking in read).

use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

/// Syscalls per probe (in batches, the median batch taken).
const SYSCALLS: usize = 4_000;
const SYSCALL_BATCH: usize = 200;
/// Wake-up round trips per probe.
const WAKES: usize = 60;

/// One round's probe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Probe {
    /// Median ns of one `getppid` on the measured CPU.
    pub(crate) syscall_ns: f64,
    /// Median ns of a wake-up round trip to the other side's CPU and back; absent on a plan
    /// with one CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) wake_ns: Option<f64>,
}

/// The upper median (the middle value, or the higher of the two middle ones); 0 for none.
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the probe from the calling thread (pinned to the measured CPU by the runner), with
/// the wake-up partner pinned to `other` when there is one.
pub(crate) fn probe(other: Option<u32>) -> Probe {
    let mut batches = Vec::with_capacity(SYSCALLS / SYSCALL_BATCH);
    for _ in 0..SYSCALLS / SYSCALL_BATCH {
        let t0 = super::clock::now_ns();
        for _ in 0..SYSCALL_BATCH {
            // raw: the probe times glibc's getppid, as it always has (rustix's inline syscall
            // would shift the recorded figure, not the kernel's cost).
            // SAFETY: getppid has no arguments and cannot fail.
            std::hint::black_box(unsafe { libc::getppid() });
        }
        batches.push((super::clock::now_ns() - t0) as f64 / SYSCALL_BATCH as f64);
    }
    Probe {
        syscall_ns: median(batches),
        wake_ns: other.and_then(wake_round_trip),
    }
}

/// Median round trip of one byte to a thread on `cpu` and back; `None` when the pair or the
/// thread cannot be had.
fn wake_round_trip(cpu: u32) -> Option<f64> {
    let (mut a, mut b) = UnixStream::pair().ok()?;
    let partner = std::thread::Builder::new()
        .name("ringside-probe".into())
        .spawn(move || {
            // Unpinned, the trip is not the one asked for: end, and the probe has none.
            if super::pin::pin_this_thread(cpu).is_err() {
                return;
            }
            let mut buf = [0u8; 1];
            for _ in 0..WAKES + 1 {
                if b.read_exact(&mut buf).is_err() || b.write_all(&buf).is_err() {
                    return;
                }
            }
        })
        .ok()?;
    let mut trips = Vec::with_capacity(WAKES);
    let mut buf = [0u8; 1];
    let mut ok = true;
    // The first trip wakes the partner from its start: not counted.
    for i in 0..WAKES + 1 {
        let t0 = super::clock::now_ns();
        if a.write_all(&[1]).is_err() || a.read_exact(&mut buf).is_err() {
            ok = false;
            break;
        }
        if i > 0 {
            trips.push((super::clock::now_ns() - t0) as f64);
        }
    }
    drop(a);
    let _ = partner.join();
    (ok && !trips.is_empty()).then(|| median(trips))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_measures_both_figures() {
        let cpus = crate::measure::pin::allowed_cpus();
        let p = probe(cpus.last().copied());
        assert!(p.syscall_ns > 0.0 && p.syscall_ns < 1e6, "{p:?}");
        let w = p.wake_ns.expect("a wake-up partner");
        assert!(w > 0.0 && w < 1e9, "{p:?}");
        assert_eq!(probe(None).wake_ns, None);
    }
}
