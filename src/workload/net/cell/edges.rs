//! The server's readings at a measured window's edges: its CPU (every task of every process),
//! and in the counting repetition its syscalls and io_uring's tracepoints, read on this host
//! when the load generator reaches each edge, or on the server's host and reported when it
//! stops (`--server-host`); the load CPUs' idle time beside them. What they add up to over
//! the window is the server's [`ServerFigures`].

use super::STOP_WITHIN;
use crate::error::CaseError;
use crate::load::{Edge, Report};
use crate::measure::clock::now_ns;
use crate::measure::cpu;
use crate::measure::syscalls::SyscallCounter;
use crate::measure::uring_trace::{UringCounters, UringTrace};
use crate::measure::CounterSet;
use crate::workload::net::launch::UnderTest;

/// The syscall counters of the server's processes, in the counting repetition.
pub(super) type Counting = Option<Result<Vec<SyscallCounter>, String>>;

/// The io_uring tracepoints' counters of the server's processes, in an io_uring model's
/// counting repetition.
pub(super) type Tracing = Option<Result<Vec<UringTrace>, String>>;

/// What the io_uring counters read now (zeros when not counting).
fn read_uring(t: &Tracing) -> UringCounters {
    let mut sum = UringCounters::default();
    if let Some(Ok(ts)) = t {
        for t in ts {
            sum.merge(&t.read());
        }
    }
    sum
}

/// What the counters read now (0 when not counting).
fn read_syscalls(cs: &Counting) -> u64 {
    match cs {
        Some(Ok(cs)) => cs.iter().map(|c| c.read()).sum(),
        _ => 0,
    }
}

/// The server's readings at the window's edges ([0]: the opening, [1]: the closing), taken
/// on this host; a remote server reads its own when told ([`UnderTest::edge`]).
#[derive(Default)]
pub(super) struct Edges {
    pub(super) cpu: [Option<cpu::ProcessesReading>; 2],
    pub(super) syscalls: [u64; 2],
    pub(super) uring: [UringCounters; 2],
    /// When each edge's readings were taken: a reading taken late (this thread woke late on
    /// a busy machine) covers a shorter or longer span than the client's window.
    pub(super) at: [u64; 2],
    /// When each edge was seen, for the explain sampling.
    pub(super) seen: [u64; 2],
    /// The load CPUs' idle time at each edge (`measure::cpu::idle_ns`) and when it was read;
    /// `None`: not read (load on other hosts, or CPUs shared with the server).
    pub(super) load_cpus: Vec<u32>,
    pub(super) load_idle: [Option<(u64, u64)>; 2],
}

/// The server's figures over the window, from either host.
pub(super) struct ServerFigures {
    pub(super) cpu: [cpu::ProcessesReading; 2],
    /// When the syscall counts were read at each edge.
    pub(super) at: [u64; 2],
    pub(super) syscalls: Option<Result<u64, String>>,
    /// What the io_uring tracepoints counted over the window (an io_uring model's counting
    /// repetition), or why they could not be.
    pub(super) uring: Option<Result<UringCounters, String>>,
    pub(super) counters: crate::measure::Counters,
    /// The CPUs the server was given.
    pub(super) cpus: usize,
}

impl Edges {
    pub(super) fn read(
        &mut self,
        e: Edge,
        server: &mut UnderTest,
        counters: &Counting,
        uring: &Tracing,
    ) {
        let i = usize::from(matches!(e, Edge::Close));
        self.seen[i] = now_ns();
        if !self.load_cpus.is_empty() {
            self.load_idle[i] = cpu::idle_ns(&self.load_cpus).map(|ns| (ns, now_ns()));
        }
        if server.is_remote() {
            // Read on the server's host when the line arrives there.
            server.edge(i == 0);
            return;
        }
        // The CPU clocks are read back to back and timed by their own reads
        // (`ProcessesReading::at_ns`), not by the slow /proc walk that follows them.
        self.cpu[i] = server.read_cpu();
        let t0 = now_ns();
        self.syscalls[i] = read_syscalls(counters);
        self.at[i] = t0 / 2 + now_ns() / 2;
        self.uring[i] = read_uring(uring);
    }

    /// The load CPUs' idle time over the edges, scaled to `window_ns`, and how many CPUs it
    /// covers; `None` when it was not read.
    pub(super) fn load_idle(&self, window_ns: u64) -> Option<(u64, usize)> {
        let [Some((i0, t0)), Some((i1, t1))] = self.load_idle else {
            return None;
        };
        let idle =
            i1.saturating_sub(i0) as f64 * window_ns as f64 / t1.saturating_sub(t0).max(1) as f64;
        Some((idle.round() as u64, self.load_cpus.len()))
    }

    /// The local server's figures: its edges' readings, its counters once stopped.
    pub(super) fn figures(
        self,
        server: UnderTest,
        counters: Counting,
        cpus: usize,
    ) -> Result<ServerFigures, CaseError> {
        let [Some(c0), Some(c1)] = self.cpu else {
            return Err(server.fail("cannot read the server's CPU from /proc"));
        };
        // Less each counter's own start/read cost.
        let syscalls = counters.as_ref().map(|c| match c {
            Ok(cs) => Ok(self.syscalls[1]
                .saturating_sub(self.syscalls[0])
                .saturating_sub(cs.iter().map(|c| c.window_overhead()).sum())),
            Err(why) => Err(why.clone()),
        });
        drop(counters);
        Ok(ServerFigures {
            cpu: [c0, c1],
            at: self.at,
            syscalls,
            uring: None,
            counters: server.stop(STOP_WITHIN)?,
            cpus,
        })
    }
}

/// A remote server's figures, read on its host at the edges and reported when it stops.
pub(super) fn remote_figures(
    server: UnderTest,
    report: &Report,
) -> Result<ServerFigures, CaseError> {
    let f = server.finish_remote(STOP_WITHIN)?;
    let (Some(e0), Some(e1)) = (f.open, f.close) else {
        return Err(CaseError::Failed(anyhow::anyhow!(
            "the remote server could not read its CPU at the window's edges"
        )));
    };
    // The CPUs its host's plan gave the server, and a SQPOLL poller one more.
    let plan_cpus = f.server_cpus.len() + f.plan.as_ref().map_or(1, |p| p.sqpoll.iter().count());
    if let Some(why) = crate::remote::implausible_edges(&e0, &e1, plan_cpus, report.window_ns) {
        return Err(CaseError::Failed(anyhow::anyhow!(
            "the remote server's figures are implausible: {why}"
        )));
    }
    let syscalls = f.syscalls.map(|r| {
        r.map(|overhead| {
            e1.syscalls
                .saturating_sub(e0.syscalls)
                .saturating_sub(overhead)
        })
    });
    if let Some(why) = idle_while_busy(
        report.n.msgs,
        e1.total_ns - e0.total_ns,
        syscalls.as_ref().and_then(|s| s.as_ref().ok().copied()),
        &f.counters,
    ) {
        return Err(CaseError::Failed(anyhow::anyhow!(
            "the remote server's figures are implausible: {why}"
        )));
    }
    if let Some(why) =
        counters_past_life(&f.counters, report.warmup_ns + report.window_ns, plan_cpus)
    {
        return Err(CaseError::Failed(anyhow::anyhow!(
            "the remote server's figures are implausible: {why}"
        )));
    }
    Ok(ServerFigures {
        cpu: [e0.processes(), e1.processes()],
        at: [e0.sys_at_ns, e1.sys_at_ns],
        syscalls,
        uring: None,
        counters: f.counters,
        cpus: f.server_cpus.len(),
    })
}

/// Time a server lives beyond its load's warm-up and window (starting, the load's own start,
/// draining, stopping), allowed generously: its counters cover its whole life.
const LIFE_SLACK_NS: u64 = 60_000_000_000;

/// Why a remote server's own counters (`server_` names, over its whole life) cannot be
/// true: one past what its CPUs could do while it lived (`run_ns`, the load's warm-up and
/// window, plus [`LIFE_SLACK_NS`]): a call costs more than 20 ns, and no CPU moves 100 bytes
/// a nanosecond. `None`: plausible. (A forged end reported u64::MAX.)
fn counters_past_life(
    counters: &crate::measure::Counters,
    run_ns: u64,
    cpus: usize,
) -> Option<String> {
    let cpu_ns = (run_ns as u128 + LIFE_SLACK_NS as u128) * cpus.max(1) as u128;
    counters
        .0
        .iter()
        .filter(|(k, _)| k.starts_with("server_"))
        .find_map(|(k, &n)| {
            let (most, unit) = if k.ends_with("bytes") || k.contains("_bytes_") {
                (cpu_ns * 100, "100 bytes a ns")
            } else {
                (cpu_ns / 20, "one a 20 ns")
            };
            (n as u128 > most).then(|| {
                format!(
                    "its counter {k} reads {n}, past what {cpus} CPU(s) could do ({unit}) in \
                     the {} s it could have lived",
                    (run_ns + LIFE_SLACK_NS) / 1_000_000_000
                )
            })
        })
}

/// A server's own counters of the calls that do I/O (`server_` names): any of them above 0
/// means it entered the kernel.
const IO_CALLS: [&str; 5] = [
    "server_reads",
    "server_writes",
    "server_epoll_waits",
    "server_io_uring_enter",
    "server_accepts",
];

/// Why a remote server's CPU or syscalls cannot be its window's: `ops` messages served, yet 0
/// ns of CPU (`cpu_ns`) or 0 syscalls counted (`syscalls`) while its own counters show I/O
/// calls. `None`: plausible. (A forged `remote-serve` reported 0 CPU and 0 syscalls for 800
/// ops beside 1,052 reads, 1,002 writes and 1,028 epoll waits.)
fn idle_while_busy(
    ops: u64,
    cpu_ns: u64,
    syscalls: Option<u64>,
    counters: &crate::measure::Counters,
) -> Option<String> {
    let calls: Vec<String> = IO_CALLS
        .iter()
        .filter(|k| counters.get(k) > 0)
        .map(|k| format!("{} {}", counters.get(k), k.trim_start_matches("server_")))
        .collect();
    if ops == 0 || calls.is_empty() {
        return None;
    }
    let none = match (cpu_ns, syscalls) {
        (0, _) => "0 ns of CPU",
        (_, Some(0)) => "0 syscalls",
        _ => return None,
    };
    Some(format!(
        "{none} over a window in which it served {ops} messages, while its own counters show \
         {}",
        calls.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 46 item 4: a remote server that says it used no CPU, or made no syscall, while
    /// its own counters show the I/O calls that served the window's messages, is implausible;
    /// the same figures with no I/O counted, or no message served, are not judged here.
    #[test]
    fn a_remote_server_idle_while_its_counters_are_busy_is_implausible() {
        let mut c = crate::measure::Counters::default();
        for (k, n) in [
            ("server_reads", 1052),
            ("server_writes", 1002),
            ("server_epoll_waits", 1028),
        ] {
            c.add(k, n);
        }
        let why = idle_while_busy(800, 0, Some(0), &c).unwrap();
        assert!(why.starts_with("0 ns of CPU"), "{why}");
        assert!(
            why.contains("1052 reads, 1002 writes, 1028 epoll_waits"),
            "{why}"
        );
        let why = idle_while_busy(800, 5_000_000, Some(0), &c).unwrap();
        assert!(why.starts_with("0 syscalls"), "{why}");
        assert_eq!(idle_while_busy(800, 5_000_000, Some(2900), &c), None);
        assert_eq!(idle_while_busy(800, 5_000_000, None, &c), None);
        assert_eq!(idle_while_busy(0, 0, Some(0), &c), None);
        let mut bytes_only = crate::measure::Counters::default();
        bytes_only.add("server_bytes_in", 51_200);
        assert_eq!(idle_while_busy(800, 0, Some(0), &bytes_only), None);
    }

    /// Issue 46 item 4: a remote server's counter past what its CPUs could do while it lived
    /// is implausible; a true one is not.
    #[test]
    fn counters_past_a_servers_life_are_implausible() {
        let mut c = crate::measure::Counters::default();
        c.add("server_reads", 1052);
        c.add("server_bytes_in", 51_200);
        c.add("load_cpu_ns", u64::MAX);
        assert_eq!(counters_past_life(&c, 500_000_000, 1), None);
        c.add("server_writes", u64::MAX);
        let why = counters_past_life(&c, 500_000_000, 1).unwrap();
        assert!(
            why.contains("server_writes") && why.contains("60 s"),
            "{why}"
        );
        let mut b = crate::measure::Counters::default();
        b.add("server_bytes_out", 8_000_000_000_000);
        assert!(counters_past_life(&b, 500_000_000, 1).is_some());
        assert_eq!(counters_past_life(&b, 500_000_000, 2), None);
    }

    /// Counters from a peer summed over repetitions saturate, never wrap.
    #[test]
    fn counters_summed_from_a_peer_saturate() {
        let mut c = crate::measure::Counters::default();
        for _ in 0..3 {
            c.add("server_reads", u64::MAX - 1);
        }
        assert_eq!(c.get("server_reads"), u64::MAX);
    }
}
