//! Measurement: the clock, CPU time, syscall counts, latency histograms and pinning, combined
//! into one `Sample` per repetition. Nothing here computes statistics or prints.

pub(crate) mod calib;
pub mod cell;
pub(crate) mod clock;
pub mod cpu;
pub(crate) mod disturb;
pub(crate) mod hist;
pub(crate) mod memory;
pub mod pin;
pub(crate) mod syscalls;
pub mod timeline;
pub(crate) mod topology;
pub(crate) mod uring_trace;

pub(crate) use hist::Hist;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A figure that was measured, or the reason it could not be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
#[schemars(rename = "Measured_{T}")]
pub enum Measured<T> {
    Value(T),
    Unavailable { unavailable: String },
}

impl<T> Measured<T> {
    pub(crate) fn unavailable(reason: impl Into<String>) -> Self {
        Measured::Unavailable {
            unavailable: reason.into(),
        }
    }
    pub(crate) fn value(&self) -> Option<&T> {
        match self {
            Measured::Value(v) => Some(v),
            Measured::Unavailable { .. } => None,
        }
    }
    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> Measured<U> {
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

/// The schema of `{"unavailable": "<reason>"}`, the other side of [`Measured`] and
/// `env::Reading`.
pub(crate) fn unavailable_schema() -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "properties": {"unavailable": {"type": "string"}},
        "required": ["unavailable"],
        "additionalProperties": false
    })
}

/// Counters the I/O code keeps for itself (io_uring_enter calls, SQEs, retries, ENOBUFS...).
/// They explain figures; they never replace a measured one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters(pub BTreeMap<String, u64>);

impl Counters {
    /// Adds `n` to the counter `name`, saturating: a count from a broken or forged peer (a
    /// remote server's, a load host's) summed over repetitions never wraps.
    #[inline]
    pub(crate) fn add(&mut self, name: &str, n: u64) {
        match self.0.get_mut(name) {
            Some(v) => *v = v.saturating_add(n),
            None => {
                self.0.insert(name.to_string(), n);
            }
        }
    }
    pub fn get(&self, name: &str) -> u64 {
        self.0.get(name).copied().unwrap_or(0)
    }
    pub(crate) fn merge(&mut self, other: &Counters) {
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
    /// Adds `other` into `self`, field by field (merging threads, repetitions or load
    /// hosts), saturating: a count from a broken or forged peer never wraps.
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
                $(self.$field = self.$field.saturating_add(other.$field);)*
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
    /// Wall time of the measured window, ns: the span `cpu` was read over (for windows of
    /// this thread, from the first CPU clock read at the start to the last at the end).
    pub wall_ns: u64,
    /// Sum of per-op times (timer overhead excluded), ns; `wall_ns` less harness bookkeeping.
    pub(crate) timed_ns: u64,
    /// CPU of the measured task(s) over the window, including io_uring's kernel threads.
    pub cpu: cpu::CpuReading,
    /// Syscalls the measured task(s) entered during the window; `None` when this repetition
    /// did not count them (an enabled syscall tracepoint slows every syscall, so counting
    /// happens in a repetition of its own, never in a timed one).
    pub syscalls: Option<Measured<u64>>,
    /// What the io_uring tracepoints counted over the window (`uring_trace`); `None` where
    /// this repetition did not count them (every timed one, and every model not on io_uring).
    pub(crate) uring: Option<Measured<uring_trace::UringCounters>>,
    /// What the connections a workload held beside its load cost in memory (`conn.idle`);
    /// `None` elsewhere.
    pub(crate) memory: Option<memory::ConnMemory>,
    /// Per-op latency, ns.
    pub latency: Hist,
    /// Ops and latency per interval of the window, where the workload records them
    /// (`timeline`: the network suites' load generator).
    pub(crate) timeline: Option<timeline::Timeline>,
    pub counters: CellCounters,
}

impl Sample {
    /// The share of its window its measured tasks ran (one repetition's `cpu_busy`; 0 for
    /// an empty window).
    pub(crate) fn cpu_busy(&self) -> f64 {
        if self.wall_ns == 0 {
            0.0
        } else {
            self.cpu.total_ns as f64 / self.wall_ns as f64
        }
    }

    /// Its throughput: ops per second of timed window (0 for an empty window).
    pub(crate) fn ops_per_sec(&self) -> f64 {
        if self.timed_ns == 0 {
            0.0
        } else {
            self.ops as f64 * 1e9 / self.timed_ns as f64
        }
    }
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
    /// it (and closed with it).
    ///
    /// The CPU it records is that of its tasks (this thread, and io_uring's kernel tasks that
    /// work for it: see [`cpu::io_tasks`]) over exactly its wall time: the slow parts (listing
    /// the tasks, /proc, rusage) happen outside, and the exact CPU clocks are read right at
    /// the edges, inside the span `wall_ns` measures. So CPU over wall can never exceed the
    /// CPUs those tasks may use; if it does, the reading is capped there and the excess kept
    /// as the `cpu_over_allowed_ns` counter. Syscall counting stops before the CPU clocks are
    /// read, so their reads are not counted either.
    pub fn window(&self, count_syscalls: bool) -> Window<'_> {
        self.window_with(count_syscalls, false)
    }

    /// [`Meter::window`], and with `count_uring` (an io_uring model's counting repetition)
    /// the io_uring tracepoints counted (`uring_trace`) over every task of this process: the
    /// SQPOLL thread and io-wq workers a ring made before the window are tasks of its own, and
    /// nothing else in ringside uses io_uring while a micro or storage window is open. Opened
    /// first and read outside the syscall counter's readings, so neither counts the other.
    pub(crate) fn window_with(&self, count_syscalls: bool, count_uring: bool) -> Window<'_> {
        let hist = Hist::new(); // allocated before the counter starts counting
        let uring = count_uring
            .then(|| uring_trace::UringTrace::open(syscalls::Scope::Process(std::process::id())));
        let uring0 = uring_trace::read(&uring);
        let counter =
            count_syscalls.then(|| syscalls::SyscallCounter::open(syscalls::Scope::ThisThread));
        let tid = cpu::gettid();
        let tasks = cpu::io_tasks();
        let existing = cpu::task_ids();
        let mut all = tasks.clone();
        all.push(tid);
        let allowed = cpu::cpus_allowed(&all);
        let ticks0 = ticks(&tasks);
        // This thread's clock first at the start and last at the end, right beside the wall
        // clock: its CPU span is the wall span; the other tasks' are inside it.
        let a0 = clock::now_ns();
        let own0 = cpu::this_thread_ns();
        let clocks0: Vec<Option<u64>> = tasks.iter().map(|&t| cpu::thread_ns(t)).collect();
        let sys0 = match &counter {
            Some(Ok(c)) => c.read(),
            _ => 0,
        };
        Window {
            meter: self,
            counter,
            uring,
            uring0,
            tasks,
            existing,
            allowed,
            ticks0,
            clocks0,
            own0,
            a0,
            sys0,
            hist,
            timed_ns: 0,
        }
    }
}

/// A measured window in progress.
pub struct Window<'m> {
    meter: &'m Meter,
    counter: Option<Result<syscalls::SyscallCounter, String>>,
    /// The io_uring tracepoints' counters (an io_uring model's counting repetition), and
    /// their reading at the start.
    uring: Option<Result<uring_trace::UringTrace, String>>,
    uring0: uring_trace::UringCounters,
    /// io_uring tasks counted, with their CPU clocks at the start.
    tasks: Vec<u32>,
    clocks0: Vec<Option<u64>>,
    /// Every task of the process at the start (a task not among them was born in the window).
    existing: Vec<u32>,
    /// CPUs this thread and `tasks` may use between them, at the start.
    allowed: Vec<u32>,
    /// Tick-sampled split and context switches at the start (this thread and `tasks`).
    ticks0: cpu::CpuReading,
    /// This thread's CPU clock at the start.
    own0: u64,
    /// When the CPU clocks began to be read: the start of the CPU span.
    a0: u64,
    sys0: u64,
    hist: Hist,
    timed_ns: u64,
}

/// Tick-sampled user/sys and context switches of this thread and `tasks`.
fn ticks(tasks: &[u32]) -> cpu::CpuReading {
    let t = cpu::this_thread();
    let w = cpu::ticks_of(tasks);
    cpu::CpuReading {
        total_ns: 0,
        user_ns: t.user_ns + w.user_ns,
        sys_ns: t.sys_ns + w.sys_ns,
        ctx_switches: t.ctx_switches + w.ctx_switches,
    }
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
        let mut counters = CellCounters::from(counters);
        let sys1 = self.counter.as_ref().map(|c| c.as_ref().map(|c| c.read()));
        let uring = uring_trace::window(&self.uring, &self.uring0);
        // The exact clocks first; then the tasks born during the window (io-wq workers a
        // blocking op started), all of whose CPU is the window's (read just after its end).
        let clocks1: Vec<Option<u64>> = self.tasks.iter().map(|&t| cpu::thread_ns(t)).collect();
        let own1 = cpu::this_thread_ns();
        let a1 = clock::now_ns();
        let born = cpu::io_tasks_since(&self.existing);
        let born_ns: u64 = born.iter().filter_map(|&t| cpu::thread_ns(t)).sum();
        let syscalls = self
            .counter
            .as_ref()
            .zip(sys1)
            .map(|(c, s1)| match (c, s1) {
                (Ok(c), Ok(s1)) => Measured::Value(c.window(self.sys0, s1)),
                (Err(r), _) | (_, Err(r)) => Measured::unavailable(r.clone()),
            });
        // A task that exited during the window has no end reading: its share is lost rather
        // than its whole lifetime subtracted from the others'.
        let tasks_ns: u64 = self
            .clocks0
            .iter()
            .zip(&clocks1)
            .map(|(c0, c1)| match (c0, c1) {
                (Some(a), Some(b)) => b.saturating_sub(*a),
                _ => 0,
            })
            .sum();
        let mut all = self.tasks.clone();
        all.extend(&born);
        let t1 = ticks(&all);
        let wall_ns = a1 - self.a0;
        all.push(cpu::gettid());
        let mut allowed = self.allowed.clone();
        allowed.extend(cpu::cpus_allowed(&all));
        allowed.sort_unstable();
        allowed.dedup();
        let allowed = allowed.len();
        let measured = own1.saturating_sub(self.own0) + tasks_ns + born_ns;
        let (total_ns, excess) = cpu::cap_to_allowed(measured, wall_ns, allowed);
        if excess > cpu::cap_tolerance(wall_ns, allowed) {
            counters.cpu_over_allowed_ns += excess;
        }
        let split = t1.since(&self.ticks0);
        Sample {
            ops,
            bytes,
            wall_ns,
            timed_ns: self.timed_ns,
            cpu: cpu::CpuReading { total_ns, ..split },
            syscalls,
            uring,
            memory: None,
            latency: self.hist,
            timeline: None,
            counters,
        }
    }
}

pub(crate) use cell::CellCounters;

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
            std::hint::black_box(rustix::process::getpid());
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
