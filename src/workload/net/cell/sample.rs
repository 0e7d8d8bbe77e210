//! A repetition's [`Sample`] from what was read: the server's figures rescaled to the load
//! generator's window, the load generator's counters, and the headroom flags that say whether
//! the load side or the server set the pace.

use super::edges::ServerFigures;
use super::{Load, LoadCounters};
use crate::load::{self, Report};
use crate::measure::uring_trace::UringCounters;
use crate::measure::{cpu, CellCounters, Measured, Sample};

/// The repetition's Sample: the server's figures rescaled to the client's window (the two
/// spans differ by the edges' wake-up delays: microseconds on a quiet machine, milliseconds
/// on a busy one), so that per-op ratios divide like by like, with the load's counters.
pub(super) fn sample_of(
    load: &Load<'_>,
    report: &Report,
    f: ServerFigures,
    extra: CellCounters,
    shared: bool,
    load_idle: Option<(u64, usize)>,
) -> Sample {
    let rescale = |v: u64, span: u64| {
        (v as f64 * report.window_ns as f64 / span.max(1) as f64).round() as u64
    };
    let scale = |v: u64| rescale(v, f.at[1].saturating_sub(f.at[0]));
    let [c0, c1] = &f.cpu;
    let cpu_scale = |v: u64| rescale(v, c1.at_ns.saturating_sub(c0.at_ns));
    let syscalls = f.syscalls.map(|r| match r {
        Ok(n) => Measured::Value(scale(n)),
        Err(why) => Measured::unavailable(why),
    });
    let uring = f.uring.map(|r| match r {
        Ok(u) => Measured::Value(UringCounters {
            uring_punted: scale(u.uring_punted),
            uring_completions: scale(u.uring_completions),
            uring_cqe_overflows: scale(u.uring_cqe_overflows),
            uring_task_work_runs: scale(u.uring_task_work_runs),
            uring_local_work_runs: scale(u.uring_local_work_runs),
        }),
        Err(why) => Measured::unavailable(why),
    });
    let mut c = extra;
    c.other.merge(&f.counters);
    // The server's CPU against the CPUs it was given (SQPOLL's poller may use a second one).
    // A reading above what the CPUs its tasks may use can give in the window is an accounting
    // error: capped, and the excess beyond clock noise kept (warning `cpu_over_allowed`).
    let raw = c1.cpu.since(&c0.cpu);
    let allowed = c0.cpus_allowed.max(c1.cpus_allowed);
    let (total_ns, over) = cpu::cap_to_allowed(cpu_scale(raw.total_ns), report.window_ns, allowed);
    if over > cpu::cap_tolerance(report.window_ns, allowed) {
        c.cpu_over_allowed_ns += over;
    }
    let cpu = cpu::CpuReading {
        total_ns,
        user_ns: cpu_scale(raw.user_ns),
        sys_ns: cpu_scale(raw.sys_ns),
        ctx_switches: cpu_scale(raw.ctx_switches),
    };
    let server_busy = cpu.total_ns as f64 / report.window_ns.max(1) as f64 / f.cpus.max(1) as f64;
    let (idle_ns, idle_cpus) = load_idle.unwrap_or((0, 0));
    let (client_bound, both_saturated) = headroom(report, server_busy, load_idle);
    let h = Headroom {
        idle: (idle_ns, idle_cpus as u64),
        client_bound,
        both_saturated,
        shared_cpus: u64::from(shared),
    };
    c.load = Some(load_counters(report, h));
    Sample {
        ops: report.n.msgs,
        bytes: if load.bytes_received {
            report.n.rx_bytes
        } else {
            report.n.bytes
        },
        wall_ns: report.window_ns,
        timed_ns: report.window_ns,
        cpu,
        syscalls,
        uring,
        memory: None,
        latency: report.latency.clone(),
        timeline: report.timeline.clone(),
        counters: c,
    }
}

/// The repetition's headroom flags, (client_bound, both_saturated), each 0 or 1: the load side
/// had none when its threads were busy (`Report::client_bound`) or its CPUs had under
/// 1 - [`load::CLIENT_BOUND_FRACTION`] of the window idle (`load_idle`: idle ns summed over
/// that many CPUs; other work on them, or kernel work no thread clock counts), whatever the
/// engine; the server was saturated at `server_busy` (its CPUs' busy share) of that fraction.
fn headroom(report: &Report, server_busy: f64, load_idle: Option<(u64, usize)>) -> (u64, u64) {
    let no_idle = load_idle.is_some_and(|(idle_ns, cpus)| {
        cpus > 0
            && (idle_ns as f64)
                < (1.0 - load::CLIENT_BOUND_FRACTION) * report.window_ns as f64 * cpus as f64
    });
    let load_bound = report.client_bound || no_idle;
    let server_saturated = server_busy >= load::CLIENT_BOUND_FRACTION;
    (
        u64::from(load_bound && !server_saturated),
        u64::from(load_bound && server_saturated),
    )
}

/// The load side's headroom over one repetition (see [`headroom`]).
struct Headroom {
    /// The load CPUs' idle ns over the window, and over how many CPUs (0: not read).
    idle: (u64, u64),
    client_bound: u64,
    both_saturated: u64,
    shared_cpus: u64,
}

/// The load generator's figures a network cell records. Both sides are named in full: a
/// count added to [`load::Counts`] or a counter added to [`LoadCounters`] is a compile error
/// here until it is recorded or, with a reason, left out (no `..Default` can drop one).
fn load_counters(report: &Report, h: Headroom) -> LoadCounters {
    let load::Counts {
        // The ops, their bytes and CPU are the sample's own figures (`ops`, `bytes`, `cpu`);
        // the split of errors by direction, unsolicited bytes and the warm-up's invalid
        // responses fail the run (`Report::unverified`) or are in the errors counted.
        msgs: _,
        bytes: _,
        rx_bytes: _,
        read_errors: _,
        write_errors: _,
        unsolicited: _,
        warmup_invalid: _,
        verified_bytes: _,
        // `conn.churn` records its own (`workload::net::churn`).
        abortive_closes: _,
        connects: _,
        cpu_ns,
        connect_errors,
        resets,
        io_errors,
        mismatches,
        non_2xx,
        malformed,
        timeouts,
        reconnects,
        unsettled_conns,
        warmup_errors,
        live_conns,
    } = report.n;
    LoadCounters {
        load_cpu_ns: cpu_ns,
        load_window_ns: report.window_ns,
        load_connect_errors: connect_errors,
        load_resets: resets,
        load_io_errors: io_errors,
        load_mismatches: mismatches,
        load_timeouts: timeouts,
        load_non_2xx: non_2xx,
        load_malformed: malformed,
        load_reconnects: reconnects,
        load_warmup_errors: warmup_errors,
        load_live_conns: live_conns,
        load_lost_conns: (report.conns_requested as u64).saturating_sub(live_conns),
        load_warmup_ns: report.warmup_ns,
        load_unsettled_conns: unsettled_conns,
        load_engine_uring: u64::from(report.engine == load::Engine::Uring),
        load_idle_ns: h.idle.0,
        load_idle_cpus: h.idle.1,
        client_bound: h.client_bound,
        both_saturated: h.both_saturated,
        shared_cpus: h.shared_cpus,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The load side had headroom only where its threads were not busy and its CPUs had idle
    /// time; without headroom, the server's busy share says which flag it is.
    #[test]
    fn a_load_side_without_idle_cpu_has_no_headroom_whatever_its_threads_say() {
        let cfg = load::Config::new("127.0.0.1:1".parse().unwrap(), 1, Duration::from_secs(1));
        let mut r = Report::empty(&cfg, 1, None, 1_000_000_000, false);
        // Threads at 40% and the CPU half idle: headroom.
        assert_eq!(headroom(&r, 0.5, Some((500_000_000, 1))), (0, 0));
        // The same threads, but the CPU 5% idle (a neighbour, or softirq no thread clock
        // counts): no headroom, and with a saturated server, both.
        assert_eq!(headroom(&r, 0.5, Some((50_000_000, 1))), (1, 0));
        assert_eq!(headroom(&r, 0.95, Some((50_000_000, 1))), (0, 1));
        // Two CPUs: 150 ms idle of 2 s is under 10%.
        assert_eq!(headroom(&r, 0.5, Some((150_000_000, 2))), (1, 0));
        assert_eq!(headroom(&r, 0.5, Some((250_000_000, 2))), (0, 0));
        // Not read: the threads alone decide.
        assert_eq!(headroom(&r, 0.5, None), (0, 0));
        r.client_bound = true;
        assert_eq!(headroom(&r, 0.5, None), (1, 0));
        assert_eq!(headroom(&r, 0.5, Some((900_000_000, 1))), (1, 0));
    }
}
