//! Measurement: the clock, CPU time, syscall counts, latency histograms and pinning, combined
//! into one `Sample` per repetition. Nothing here computes statistics or prints.

pub mod clock;
pub mod cpu;
pub mod hist;
pub mod pin;
pub mod syscalls;

pub use hist::Hist;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A figure that was measured, or the reason it could not be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Measured<T> {
    Value(T),
    Unavailable { unavailable: String },
}

impl<T> Measured<T> {
    pub fn unavailable(reason: impl Into<String>) -> Self {
        Measured::Unavailable {
            unavailable: reason.into(),
        }
    }
    pub fn value(&self) -> Option<&T> {
        match self {
            Measured::Value(v) => Some(v),
            Measured::Unavailable { .. } => None,
        }
    }
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Measured<U> {
        match self {
            Measured::Value(v) => Measured::Value(f(v)),
            Measured::Unavailable { unavailable } => Measured::Unavailable { unavailable },
        }
    }
}

impl<T: fmt::Display> fmt::Display for Measured<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Measured::Value(v) => v.fmt(f),
            Measured::Unavailable { unavailable } => write!(f, "unavailable: {unavailable}"),
        }
    }
}

/// Counters the I/O code keeps for itself (io_uring_enter calls, SQEs, retries, ENOBUFS...).
/// They explain figures; they never replace a measured one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters(pub BTreeMap<String, u64>);

impl Counters {
    #[inline]
    pub fn add(&mut self, name: &str, n: u64) {
        match self.0.get_mut(name) {
            Some(v) => *v += n,
            None => {
                self.0.insert(name.to_string(), n);
            }
        }
    }
    pub fn get(&self, name: &str) -> u64 {
        self.0.get(name).copied().unwrap_or(0)
    }
    pub fn merge(&mut self, other: &Counters) {
        for (k, v) in &other.0 {
            self.add(k, *v);
        }
    }
}

/// A fixed set of plain `u64` counters, declared with [`counter_set!`]: what a hot loop keeps
/// for itself (one value per thread, bumped as `c.accepts += 1`: no lookup, no allocation,
/// no atomics), merged field by field, and turned into the name -> value [`Counters`] map only
/// at the edges (the `ringside serve` counters line, a Sample's counters).
pub trait CounterSet: Default {
    /// The counters' names, which are their JSON names (each field is named as its key).
    const NAMES: &'static [&'static str];
    /// Adds `other` into `self`, field by field (merging threads or repetitions).
    fn merge(&mut self, other: &Self);
    /// Calls `f` with each counter's name and value, in declaration order.
    fn for_each(&self, f: &mut dyn FnMut(&'static str, u64));
    /// The counter called `name`, for the few set by name outside any hot loop (setup flags).
    fn by_name(&mut self, name: &str) -> Option<&mut u64>;
    /// The name -> value map of the edges. A counter still at zero is left out (`get` reads
    /// it as 0), as it was when the map itself counted and held only what was touched.
    fn to_counters(&self) -> Counters {
        let mut c = Counters::default();
        self.for_each(&mut |k, v| {
            if v != 0 {
                c.0.insert(k.to_string(), v);
            }
        });
        c
    }
}

/// Declares a struct of `u64` counters whose field names are their JSON names, and implements
/// [`CounterSet`] for it: the field list is written once.
///
/// ```
/// ringside::counter_set! {
///     /// What a loop counted.
///     pub struct Loop { accepts, bytes_in }
/// }
/// use ringside::measure::CounterSet;
/// let mut a = Loop::default();
/// a.accepts += 2;
/// let mut b = Loop { bytes_in: 5, ..Loop::default() };
/// b.merge(&a);
/// assert_eq!(b.to_counters().get("accepts"), 2);
/// assert_eq!(Loop::NAMES, &["accepts", "bytes_in"]);
/// ```
#[macro_export]
macro_rules! counter_set {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($(#[$fmeta:meta])* $field:ident),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        $vis struct $name {
            $($(#[$fmeta])* pub $field: u64,)*
        }

        impl $crate::measure::CounterSet for $name {
            const NAMES: &'static [&'static str] = &[$(stringify!($field)),*];

            fn merge(&mut self, other: &Self) {
                $(self.$field += other.$field;)*
            }

            fn for_each(&self, f: &mut dyn FnMut(&'static str, u64)) {
                $(f(stringify!($field), self.$field);)*
            }

            fn by_name(&mut self, name: &str) -> Option<&mut u64> {
                match name {
                    $(stringify!($field) => Some(&mut self.$field),)*
                    _ => None,
                }
            }
        }
    };
}

/// One repetition of one case.
#[derive(Clone, Debug)]
pub struct Sample {
    /// Operations completed (what one op is depends on the workload and is stated there).
    pub ops: u64,
    /// Bytes moved, when the workload moves data.
    pub bytes: u64,
    /// Wall time of the measured window, ns.
    pub wall_ns: u64,
    /// Sum of per-op times (timer overhead excluded), ns; `wall_ns` less harness bookkeeping.
    pub timed_ns: u64,
    /// CPU of the measured task(s) over the window, including io_uring's kernel threads.
    pub cpu: cpu::CpuReading,
    /// Syscalls the measured task(s) entered during the window; `None` when this repetition
    /// did not count them (an enabled syscall tracepoint slows every syscall, so counting
    /// happens in a repetition of its own, never in a timed one).
    pub syscalls: Option<Measured<u64>>,
    /// Per-op latency, ns.
    pub latency: Hist,
    pub counters: Counters,
}

/// Makes measured windows in the calling thread: timed ones, and counting ones that open a
/// syscall counter for their duration only.
pub struct Meter {
    overhead_ns: u64,
}

impl Default for Meter {
    fn default() -> Self {
        Self::new()
    }
}

impl Meter {
    pub fn new() -> Meter {
        Meter {
            overhead_ns: clock::calibration().overhead_ns,
        }
    }

    /// Starts a window; with `count_syscalls`, a syscall counter on this thread is opened for
    /// it (and closed with it). Readings are taken in an order that keeps the /proc reads and
    /// the counter's own syscalls out of the window.
    pub fn window(&self, count_syscalls: bool) -> Window<'_> {
        let hist = Hist::new(); // allocated before the counter starts counting
        let counter =
            count_syscalls.then(|| syscalls::SyscallCounter::open(syscalls::Scope::ThisThread));
        let cpu0 = thread_and_io_workers(true);
        let sys0 = match &counter {
            Some(Ok(c)) => c.read(),
            _ => 0,
        };
        Window {
            meter: self,
            counter,
            cpu0,
            sys0,
            hist,
            timed_ns: 0,
            t0: clock::now_ns(),
        }
    }
}

/// A measured window in progress.
pub struct Window<'m> {
    meter: &'m Meter,
    counter: Option<Result<syscalls::SyscallCounter, String>>,
    cpu0: cpu::CpuReading,
    sys0: u64,
    hist: Hist,
    timed_ns: u64,
    t0: u64,
}

impl Window<'_> {
    /// Reads the clock: the start of an op.
    #[inline(always)]
    pub fn start(&self) -> u64 {
        clock::now_ns()
    }

    /// Ends an interval begun at `t0` that completed `ops` operations; records the amortized
    /// per-op time (timer overhead excluded) once per op.
    #[inline(always)]
    pub fn record(&mut self, t0: u64, ops: u64) {
        let d = (clock::now_ns() - t0).saturating_sub(self.meter.overhead_ns);
        self.timed_ns += d;
        self.hist.record_n(d / ops.max(1), ops.max(1));
    }

    /// Closes the window.
    pub fn finish(self, ops: u64, bytes: u64, counters: Counters) -> Sample {
        let t1 = clock::now_ns();
        let syscalls = self.counter.as_ref().map(|c| match c {
            Ok(c) => Measured::Value(c.window(self.sys0, c.read())),
            Err(r) => Measured::unavailable(r.clone()),
        });
        let cpu = thread_and_io_workers(false).since(&self.cpu0);
        Sample {
            ops,
            bytes,
            wall_ns: t1 - self.t0,
            timed_ns: self.timed_ns,
            cpu,
            syscalls,
            latency: self.hist,
            counters,
        }
    }
}

/// The calling thread plus io_uring's kernel-created tasks of this process (`iou-sqp-*`,
/// `iou-wrk-*`), whose CPU belongs to the model that created them. Reading /proc costs this
/// thread CPU time, so at the `start` of a window it happens before this thread's clock is
/// read, and at the end after.
fn thread_and_io_workers(start: bool) -> cpu::CpuReading {
    let (t, w) = if start {
        let w = cpu::io_workers().unwrap_or_default();
        (cpu::this_thread(), w)
    } else {
        let t = cpu::this_thread();
        (t, cpu::io_workers().unwrap_or_default())
    };
    cpu::CpuReading {
        total_ns: t.total_ns + w.total_ns,
        user_ns: t.user_ns + w.user_ns,
        sys_ns: t.sys_ns + w.sys_ns,
        ctx_switches: t.ctx_switches + w.ctx_switches,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_serializes_as_value_or_reason() {
        assert_eq!(serde_json::to_string(&Measured::Value(2.0)).unwrap(), "2.0");
        let u: Measured<f64> = Measured::unavailable("perf refused");
        assert_eq!(
            serde_json::to_string(&u).unwrap(),
            r#"{"unavailable":"perf refused"}"#
        );
        let back: Measured<f64> = serde_json::from_str(r#"{"unavailable":"x"}"#).unwrap();
        assert_eq!(back, Measured::unavailable("x"));
    }

    counter_set! {
        struct Two { accepts, bytes_out }
    }

    #[test]
    fn a_counter_set_merges_and_maps_by_its_field_names() {
        let mut a = Two {
            accepts: 1,
            bytes_out: 0,
        };
        a.merge(&Two {
            accepts: 2,
            bytes_out: 7,
        });
        assert_eq!(
            a,
            Two {
                accepts: 3,
                bytes_out: 7
            }
        );
        let c = a.to_counters();
        assert_eq!(c.get("accepts"), 3);
        assert_eq!(c.get("bytes_out"), 7);
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            r#"{"accepts":3,"bytes_out":7}"#
        );
        // Zeros are left out of the map, as untouched names were before.
        let zero = Two::default().to_counters();
        assert!(zero.0.is_empty(), "{zero:?}");
        *a.by_name("bytes_out").unwrap() += 1;
        assert_eq!(a.bytes_out, 8);
        assert!(a.by_name("nope").is_none());
        assert_eq!(Two::NAMES, &["accepts", "bytes_out"]);
    }

    #[test]
    fn a_window_counts_the_syscalls_it_contains() {
        let m = Meter::new();
        let mut w = m.window(true);
        for _ in 0..100 {
            let t = w.start();
            // SAFETY: getpid has no preconditions.
            unsafe { libc::syscall(libc::SYS_getpid) };
            w.record(t, 1);
        }
        let s = w.finish(100, 0, Counters::default());
        assert_eq!(s.latency.len(), 100);
        match s.syscalls {
            Some(Measured::Value(n)) => assert_eq!(n, 100, "exactly the getpid calls"),
            Some(Measured::Unavailable { unavailable }) => {
                eprintln!("skipped count check: {unavailable}")
            }
            None => panic!("a counting window must report syscalls"),
        }
        let untimed = m.window(false).finish(0, 0, Counters::default());
        assert!(untimed.syscalls.is_none());
    }
}
