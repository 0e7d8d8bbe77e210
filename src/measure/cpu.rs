//! CPU time and context switches: `getrusage` for the calling thread or process, and
//! `/proc/<pid>/task/*/stat` + `status` for another process, every task included (io_uring's
//! SQPOLL poller and io-wq workers are tasks of the process that owns the ring).

use std::fs;
use std::io;

/// A CPU reading: totals since the task(s) started.
///
/// `total_ns` is the scheduler's exact runtime (a CPU-time clock). `user_ns` and `sys_ns` come
/// from tick sampling (rusage or /proc): meaningful as a split over long spans only, so the
/// statistics use them only as a ratio applied to `total_ns`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuReading {
    pub total_ns: u64,
    pub user_ns: u64,
    pub sys_ns: u64,
    /// Voluntary plus involuntary context switches.
    pub ctx_switches: u64,
}

impl CpuReading {
    /// `self - earlier`, saturating.
    pub fn since(&self, earlier: &CpuReading) -> CpuReading {
        CpuReading {
            total_ns: self.total_ns.saturating_sub(earlier.total_ns),
            user_ns: self.user_ns.saturating_sub(earlier.user_ns),
            sys_ns: self.sys_ns.saturating_sub(earlier.sys_ns),
            ctx_switches: self.ctx_switches.saturating_sub(earlier.ctx_switches),
        }
    }
}

fn rusage(who: libc::c_int) -> CpuReading {
    // SAFETY: ru is plain old data filled by the kernel.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to an rusage we own.
    unsafe { libc::getrusage(who, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    CpuReading {
        total_ns: 0,
        user_ns: tv(ru.ru_utime),
        sys_ns: tv(ru.ru_stime),
        ctx_switches: (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
    }
}

/// Reads a CPU-time clock, ns; `None` if the clock does not exist (task gone).
fn clock_ns(id: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec we own.
    (unsafe { libc::clock_gettime(id, &mut ts) } == 0)
        .then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// The CPU-time clock of a process (all its threads), as `clock_getcpuclockid(3)` makes it.
fn process_clock(pid: u32) -> libc::clockid_t {
    ((!(pid as libc::clockid_t)) << 3) | 2
}

/// The CPU-time clock of one thread of the calling process (`CPUCLOCK_PERTHREAD | SCHED`).
fn thread_clock(tid: u32) -> libc::clockid_t {
    ((!(tid as libc::clockid_t)) << 3) | 6
}

/// The calling thread.
pub fn this_thread() -> CpuReading {
    CpuReading {
        total_ns: clock_ns(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0),
        ..rusage(libc::RUSAGE_THREAD)
    }
}

/// The whole calling process (every thread, including io_uring's kernel-created tasks).
pub fn this_process() -> CpuReading {
    CpuReading {
        total_ns: clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID).unwrap_or(0),
        ..rusage(libc::RUSAGE_SELF)
    }
}

/// Every current task of another process, from /proc (clock-tick resolution for CPU time).
pub fn process(pid: u32) -> io::Result<CpuReading> {
    let mut r = tasks_matching(pid, |_| true)?;
    r.total_ns = clock_ns(process_clock(pid)).unwrap_or(r.user_ns + r.sys_ns);
    Ok(r)
}

/// Tasks of `pid` that io_uring created (`iou-sqp-*` SQPOLL pollers, `iou-wrk-*` io-wq workers).
/// Only for the calling process: exact totals need a thread CPU clock of our own thread group.
pub fn io_workers() -> io::Result<CpuReading> {
    tasks_matching(std::process::id(), |comm| comm.starts_with("iou-"))
}

fn tasks_matching(pid: u32, keep: impl Fn(&str) -> bool) -> io::Result<CpuReading> {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let mut r = CpuReading::default();
    for e in fs::read_dir(format!("/proc/{pid}/task"))? {
        let dir = e?.path();
        let Ok(stat) = fs::read_to_string(dir.join("stat")) else {
            continue;
        };
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let comm = head.split_once('(').map(|(_, c)| c).unwrap_or("");
        if !keep(comm) {
            continue;
        }
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        r.user_ns += ticks(11) * 1_000_000_000 / hz;
        r.sys_ns += ticks(12) * 1_000_000_000 / hz;
        if pid == std::process::id() {
            let tid = dir
                .file_name()
                .and_then(|n| n.to_str()?.parse::<u32>().ok())
                .unwrap_or(0);
            r.total_ns += clock_ns(thread_clock(tid)).unwrap_or(0);
        }
        if let Ok(status) = fs::read_to_string(dir.join("status")) {
            for line in status.lines() {
                if let Some(v) = line
                    .strip_prefix("voluntary_ctxt_switches:")
                    .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
                {
                    r.ctx_switches += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_grow_and_other_process_is_readable() {
        let a = this_thread();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = this_thread();
        assert!(b.user_ns + b.sys_ns >= a.user_ns + a.sys_ns);
        assert!(
            b.total_ns > a.total_ns,
            "the thread CPU clock advances while computing"
        );
        let me = process(std::process::id()).unwrap();
        assert!(
            me.total_ns >= b.total_ns,
            "the process includes this thread"
        );
        assert!(process(u32::MAX).is_err());
    }
}
