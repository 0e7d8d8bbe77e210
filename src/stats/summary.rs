//! Summaries of one case: latency percentiles over every op of every repetition, and the
//! spread of per-repetition figures (median, min, max, MAD).

use super::bootstrap::median_ci;
use crate::measure::memory::ConnMemory;
use crate::measure::{Hist, Measured, Sample};
use crate::results::schema::{
    CaseFigures, CpuPerOp, IdleMemory, Intervals, LatencyIntervals, LatencyNs, UringPerOp,
};

pub(crate) use crate::results::spread::{mad, median, Spread};

/// Repetitions whose per-run medians disagree by more than this (relative MAD) get a warning.
pub(crate) const HIGH_SPREAD: f64 = 0.10;

/// What each idle connection cost over the repetitions that held some (`conn.idle`): each
/// reading's changes summed and divided by the connections held; unavailable with the first
/// reason where any repetition could not take it. `None` where none held idle connections.
fn idle_memory(samples: &[Sample]) -> Option<IdleMemory> {
    let held: Vec<&ConnMemory> = samples
        .iter()
        .filter_map(|s| s.memory.as_ref())
        .filter(|m| m.conns > 0)
        .collect();
    let conns: u64 = held.iter().map(|m| m.conns).sum();
    if conns == 0 {
        return None;
    }
    let per_conn = |get: fn(&ConnMemory) -> &Measured<i64>| -> Measured<f64> {
        let mut sum = 0i64;
        for m in &held {
            match get(m) {
                Measured::Value(v) => sum += v,
                Measured::Unavailable { unavailable } => {
                    return Measured::unavailable(unavailable.clone())
                }
            }
        }
        Measured::Value(sum as f64 / conns as f64)
    };
    Some(IdleMemory {
        idle_conns: held.iter().map(|m| m.conns).max().unwrap_or(0),
        live_at_close_min: held.iter().map(|m| m.live_at_close).min().unwrap_or(0),
        server_rss_bytes: per_conn(|m| &m.rss),
        server_kernel_bytes: per_conn(|m| &m.kmem),
        server_sock_buffer_bytes: per_conn(|m| &m.sock_buf),
        machine_sock_slab_bytes: per_conn(|m| &m.slab),
        machine_tcp_buffer_bytes: per_conn(|m| &m.sockstat),
    })
}

/// Folds the timed repetitions of one case, and the repetition that counted its syscalls,
/// into its figures.
pub(crate) fn summarize(samples: &[Sample], counted: Option<&Sample>) -> CaseFigures {
    let mut all = Hist::new();
    let mut counters = crate::measure::CellCounters::default();
    let (mut ops, mut total, mut user, mut sys, mut ctx) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let (mut bytes, mut wall) = (0u64, 0u64);
    for s in samples {
        bytes += s.bytes;
        wall += s.wall_ns;
        all.merge(&s.latency);
        counters.merge(&s.counters);
        ops += s.ops;
        total += s.cpu.total_ns;
        user += s.cpu.user_ns;
        sys += s.cpu.sys_ns;
        ctx += s.cpu.ctx_switches;
    }
    // An open-loop cell's rates are per second: the mean over its repetitions, not their sum.
    if let Some(o) = counters.open_loop.as_mut() {
        let n = samples.len().max(1) as u64;
        o.offered_per_sec = (o.offered_per_sec + n / 2) / n;
        o.achieved_per_sec = (o.achieved_per_sec + n / 2) / n;
    }
    let per_op = |x: u64| if ops == 0 { 0.0 } else { x as f64 / ops as f64 };
    let syscalls_per_op = match counted.and_then(|c| c.syscalls.clone().map(|m| (c.ops, m))) {
        Some((n, m)) => m.map(|v| if n == 0 { 0.0 } else { v as f64 / n as f64 }),
        None => Measured::unavailable("no repetition counted syscalls"),
    };
    // io_uring's tracepoints, counted beside the syscalls (io_uring models only): the raw
    // counts join the counters, their ratios to the counting repetition's ops the figures.
    let (uring_per_op, uring_per_op_unavailable) =
        match counted.and_then(|c| c.uring.clone().map(|m| (c.ops, m))) {
            Some((n, Measured::Value(u))) => {
                counters.uring = Some(u);
                let per = |v: u64| if n == 0 { 0.0 } else { v as f64 / n as f64 };
                let figure = UringPerOp {
                    punted: per(u.uring_punted),
                    completions: per(u.uring_completions),
                    cqe_overflows: per(u.uring_cqe_overflows),
                    task_work_runs: per(u.uring_task_work_runs + u.uring_local_work_runs),
                };
                (Some(figure), None)
            }
            Some((_, Measured::Unavailable { unavailable })) => (None, Some(unavailable)),
            None => (None, None),
        };
    // Tick-sampled user/sys only as a ratio applied to the exact total.
    let split = |part: u64| -> Measured<f64> {
        if user + sys == 0 {
            Measured::unavailable("too short for the tick-sampled user/sys split")
        } else {
            Measured::Value(per_op(total) * part as f64 / (user + sys) as f64)
        }
    };
    let run_p50: Vec<f64> = samples
        .iter()
        .map(|s| s.latency.quantile(0.5) as f64)
        .collect();
    let run_ops: Vec<f64> = samples.iter().map(Sample::ops_per_sec).collect();
    let run_cpu: Vec<f64> = samples
        .iter()
        .filter(|s| s.ops > 0)
        .map(|s| s.cpu.total_ns as f64 / s.ops as f64)
        .collect();
    let run_p99: Vec<f64> = samples
        .iter()
        .map(|s| s.latency.quantile(0.99) as f64)
        .collect();
    // Samples beyond the p99 in the thinnest repetition.
    let p99_tail_min = samples
        .iter()
        .map(|s| s.latency.len() / 100)
        .min()
        .unwrap_or(0);
    let h = all.inner();
    let reps: Vec<&Hist> = samples.iter().map(|s| &s.latency).collect();
    let q = super::bootstrap::quantile_cis(&reps, &[0.5, 0.9, 0.99, 0.999]);
    let ci95 = Intervals {
        samples: all.len(),
        latency_ns: LatencyIntervals {
            p50: q[0],
            p90: q[1],
            p99: q[2],
            p999: q[3],
        },
        run_p50_ns: median_ci(&run_p50),
        ops_per_sec: median_ci(&run_ops),
        cpu_ns_per_op: median_ci(&run_cpu),
        runs_p99_ns: median_ci(&run_p99),
    };
    CaseFigures {
        latency_ns: LatencyNs {
            min: h.min() as f64,
            p50: h.value_at_quantile(0.50) as f64,
            p90: h.value_at_quantile(0.90) as f64,
            p99: h.value_at_quantile(0.99) as f64,
            p999: h.value_at_quantile(0.999) as f64,
            max: h.max() as f64,
            mean: h.mean(),
            stddev: h.stdev(),
        },
        run_p50_ns: Spread::of(&run_p50),
        ops_per_sec: Spread::of(&run_ops),
        cpu_ns_per_op: CpuPerOp {
            total: per_op(total),
            user: split(user),
            sys: split(sys),
        },
        ctx_switches_per_op: per_op(ctx),
        syscalls_per_op: syscalls_per_op.into(),
        uring_per_op,
        uring_per_op_unavailable,
        idle_memory: idle_memory(samples),
        ops_total: ops,
        bytes_per_sec: if wall == 0 {
            0.0
        } else {
            bytes as f64 * 1e9 / wall as f64
        },
        cpu_busy: if wall == 0 {
            0.0
        } else {
            total as f64 / wall as f64
        },
        counters,
        histogram: all.to_base64(),
        runs_p50_ns: run_p50,
        runs_ops_per_sec: run_ops,
        runs_cpu_ns_per_op: run_cpu,
        runs_p99_ns: run_p99,
        p99_tail_min,
        // One per repetition or none, so that the k-th is repetition k's.
        runs_timeline: samples
            .iter()
            .map(|s| s.timeline.clone())
            .collect::<Option<Vec<_>>>()
            .unwrap_or_default(),
        claim_alpha: super::claims::ALPHA,
        looks: None,
        ci95: Some(ci95),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::cpu::CpuReading;

    #[test]
    fn median_and_mad_on_known_inputs() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        // |x - 3| = 2,1,0,1,97 -> median 1
        assert_eq!(mad(&[1.0, 2.0, 3.0, 4.0, 100.0]), 1.0);
        let s = Spread::of(&[10.0, 12.0, 11.0]);
        assert_eq!((s.median, s.min, s.max, s.mad), (11.0, 10.0, 12.0, 1.0));
        assert!((s.rel_mad() - 1.0 / 11.0).abs() < 1e-12);
    }

    fn sample(lat: &[u64], syscalls: Option<Measured<u64>>, user_ns: u64) -> Sample {
        let mut h = Hist::new();
        for &l in lat {
            h.record(l);
        }
        Sample {
            ops: lat.len() as u64,
            bytes: 0,
            wall_ns: lat.iter().sum::<u64>() + 1000,
            timed_ns: lat.iter().sum(),
            cpu: CpuReading {
                total_ns: user_ns * 2,
                user_ns,
                sys_ns: user_ns,
                ctx_switches: 2,
            },
            syscalls,
            uring: None,
            memory: None,
            latency: h,
            timeline: None,
            counters: Default::default(),
        }
    }

    #[test]
    fn summarize_known_samples() {
        let a = sample(&[100, 100, 100, 100], None, 400);
        let b = sample(&[200, 200, 200, 200], None, 800);
        let counted = sample(&[999, 999], Some(Measured::Value(4)), 0);
        let f = summarize(&[a.clone(), b], Some(&counted));
        assert_eq!(f.ops_total, 8);
        assert_eq!(f.latency_ns.min, 100.0);
        assert_eq!(f.latency_ns.max, 200.0);
        assert_eq!(f.latency_ns.mean, 150.0);
        assert_eq!(f.run_p50_ns.median, 150.0);
        assert_eq!(f.ops_per_sec.max, 1e7); // 4 ops in 400 ns
        assert_eq!(f.runs_p50_ns, vec![100.0, 200.0]);
        assert_eq!(f.runs_ops_per_sec, vec![1e7, 5e6]);
        assert_eq!(f.runs_cpu_ns_per_op, vec![200.0, 400.0], "per repetition");
        assert_eq!(
            f.latency_ns.max, 200.0,
            "the counting repetition's latencies are not mixed in"
        );
        assert_eq!(f.syscalls_per_op.measured(), Measured::Value(2.0)); // 4 syscalls over its 2 ops
        assert_eq!(f.cpu_ns_per_op.total, 300.0);
        assert_eq!(f.cpu_ns_per_op.user, Measured::Value(150.0));
        assert_eq!(f.ctx_switches_per_op, 0.5);
        // A refused counter makes the figure unavailable, with its reason.
        let c = sample(&[100], Some(Measured::unavailable("perf refused")), 0);
        let g = summarize(std::slice::from_ref(&a), Some(&c));
        assert_eq!(
            g.syscalls_per_op.measured(),
            Measured::unavailable("perf refused")
        );
        let z = sample(&[100], None, 0);
        assert!(summarize(&[z], None).cpu_ns_per_op.user.value().is_none());
    }
}
