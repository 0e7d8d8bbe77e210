//! CPU accounting of a measured window: the CPU it records is that of its own tasks over its
//! own wall time, so a window can never hold more CPU than the CPUs those tasks were allowed
//! (`cpu_busy` read 1.02-1.03 on one-thread cells and 2.4-2.9 with an SQPOLL poller: the CPU
//! clocks were read around /proc walks that the wall time did not cover, and a poller of a
//! ring already closed was counted in the next cell).

mod common;

use ringside::measure::{pin, Counters, Meter, Sample};
use std::time::{Duration, Instant};

/// io_uring's kernel tasks are the process's: one test's poller would be another's. The tests
/// here run one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `f` on a new thread pinned to `cpu`, alone.
fn on_cpu<T: Send + 'static>(cpu: u32, f: impl FnOnce() -> T + Send + 'static) -> T {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    std::thread::spawn(move || {
        pin::pin_this_thread(cpu).unwrap();
        f()
    })
    .join()
    .unwrap()
}

/// A short window kept busy with syscalls: about `ops` getpid calls.
fn busy_window(m: &Meter, ops: u64) -> Sample {
    let mut w = m.window(false);
    for _ in 0..ops {
        let t = w.start();
        // SAFETY: getpid has no preconditions.
        unsafe { libc::syscall(libc::SYS_getpid) };
        w.record(t, 1);
    }
    w.finish(ops, 0, Counters::default())
}

fn check(s: &Sample, cpus: f64, what: &str) {
    let busy = s.cpu.total_ns as f64 / s.wall_ns as f64;
    assert!(
        busy <= cpus,
        "{what}: {} ns of CPU in {} ns of wall = {busy:.3} CPUs, above the {cpus} allowed",
        s.cpu.total_ns,
        s.wall_ns
    );
    assert_eq!(
        s.counters.get("cpu_over_allowed_ns"),
        0,
        "{what}: the accounting needed its clamp ({} ns of CPU kept in {} ns of wall)",
        s.cpu.total_ns,
        s.wall_ns
    );
}

#[test]
fn one_thread_never_holds_more_than_one_cpu() {
    let cpu = pin::allowed_cpus()[0];
    on_cpu(cpu, || {
        let m = Meter::new();
        // Short windows are where edge costs show: 30 of ~20-100 us each.
        for i in 0..30 {
            let s = busy_window(&m, 100 + 20 * i);
            check(&s, 1.0, &format!("window {i}"));
        }
    });
}

/// A ring with an SQPOLL poller pinned to `helper`, or why not.
fn sqpoll_ring(helper: u32) -> Result<io_uring::IoUring, String> {
    io_uring::IoUring::builder()
        .setup_sqpoll(1000)
        .setup_sqpoll_cpu(helper)
        .build(8)
        .map_err(|e| e.to_string())
}

#[test]
fn sqpoll_windows_hold_at_most_two_cpus_and_a_closed_rings_poller_is_not_counted() {
    let cpus = pin::allowed_cpus();
    if cpus.len() < 2 {
        common::tools::cannot(&format!("needs two CPUs, have {cpus:?}"));
        return;
    }
    let (measured, helper) = (cpus[0], cpus[1]);
    on_cpu(measured, move || {
        let m = Meter::new();
        for i in 0..10 {
            let ring = match sqpoll_ring(helper) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("skipped: SQPOLL refused: {e}");
                    return;
                }
            };
            // The open ring's poller is the window's: counted (its fdinfo names it).
            let pollers = ringside::measure::cpu::io_tasks().len();
            assert_eq!(pollers, 1, "window {i}: the open ring's poller is counted");
            // It spins on the helper CPU: this thread plus it, two CPUs at most.
            let s = busy_window(&m, 200);
            check(&s, 2.0, &format!("SQPOLL window {i}"));
            drop(ring);
            // The closed ring's poller goes away in its own time; it is not this window's.
            let s = busy_window(&m, 200);
            check(&s, 1.0, &format!("window {i} after the ring closed"));
        }
        // Nothing lingers for long: the windows above did not wait forever.
        let t = Instant::now();
        let s = busy_window(&m, 100);
        check(&s, 1.0, "last window");
        assert!(t.elapsed() < Duration::from_secs(2));
    });
}
