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
    pub(crate) user_ns: u64,
    pub(crate) sys_ns: u64,
    /// Voluntary plus involuntary context switches.
    pub(crate) ctx_switches: u64,
}

impl CpuReading {
    /// `self - earlier`, saturating.
    pub(crate) fn since(&self, earlier: &CpuReading) -> CpuReading {
        CpuReading {
            total_ns: self.total_ns.saturating_sub(earlier.total_ns),
            user_ns: self.user_ns.saturating_sub(earlier.user_ns),
            sys_ns: self.sys_ns.saturating_sub(earlier.sys_ns),
            ctx_switches: self.ctx_switches.saturating_sub(earlier.ctx_switches),
        }
    }
}

/// raw: rustix has no getrusage.
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
///
/// raw: another task's CPU clock (`clock_getcpuclockid(3)`'s encoding, below) is beyond
/// rustix's `ClockId`, and rustix finds the vDSO itself on its first clock read (one
/// `prctl(PR_GET_AUXV)` more) where glibc has it from the start: every CPU clock is read here.
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

/// USER_HZ, the clock tick of /proc's CPU times (`None`: unknown).
///
/// raw: glibc's `sysconf` answers from the aux vector it already holds (no syscall); rustix's
/// `clock_ticks_per_second` fetches one of its own on first use (a `prctl` more).
pub(super) fn user_hz() -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
        .ok()
        .filter(|&hz| hz > 0)
}

/// How long `cpus` have been idle since boot, ns (idle and iowait of /proc/stat, in USER_HZ
/// ticks), summed; `None` when /proc/stat cannot be read or lacks one of them.
pub(crate) fn idle_ns(cpus: &[u32]) -> Option<u64> {
    idle_ticks(&std::fs::read_to_string("/proc/stat").ok()?, cpus)
        .map(|t| t * user_hz().map_or(10_000_000, |hz| 1_000_000_000 / hz))
}

fn idle_ticks(stat: &str, cpus: &[u32]) -> Option<u64> {
    let mut sum = 0;
    let mut seen = 0;
    for l in stat.lines() {
        let mut it = l.split_ascii_whitespace();
        let Some(cpu) = it
            .next()
            .and_then(|n| n.strip_prefix("cpu")?.parse::<u32>().ok())
        else {
            continue;
        };
        if !cpus.contains(&cpu) {
            continue;
        }
        // user nice system idle iowait ...
        let v: Vec<u64> = it.take(5).map_while(|x| x.parse().ok()).collect();
        sum += v.get(3)? + v.get(4)?;
        seen += 1;
    }
    (seen == cpus.len() && seen > 0).then_some(sum)
}

/// The calling thread.
pub(crate) fn this_thread() -> CpuReading {
    CpuReading {
        total_ns: clock_ns(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0),
        ..rusage(libc::RUSAGE_THREAD)
    }
}

/// The calling thread's exact CPU time, ns (one clock read, no rusage).
pub(crate) fn this_thread_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
}

/// The calling thread's id.
pub(crate) fn gettid() -> u32 {
    rustix::thread::gettid().as_raw_pid() as u32
}

/// The exact CPU time of one thread of this process (`None`: it has exited).
pub(crate) fn thread_ns(tid: u32) -> Option<u64> {
    clock_ns(thread_clock(tid))
}

/// The CPUs task `tid` may run on (`None`: it has exited), as a set of CPU numbers.
pub(crate) fn affinity(tid: u32) -> Option<Vec<u32>> {
    crate::child::affinity(tid).ok()
}

/// The distinct CPUs `tids` may use between them (sorted): their CPU time over a span can
/// never exceed the span times their number. An SQPOLL poller pins itself to its CPU only once
/// it first runs: read this at both ends of a span and take the union.
pub(crate) fn cpus_allowed(tids: &[u32]) -> Vec<u32> {
    let mut all: Vec<u32> = tids.iter().filter_map(|&t| affinity(t)).flatten().collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// Caps `total_ns` of CPU at what `cpus` CPUs can give in `wall_ns`: `(capped, excess)`. A
/// reading above the cap is an accounting error (clocks read over another span than the wall
/// time, tasks that are not the window's); the caller records the excess, never drops it
/// silently.
pub(crate) fn cap_to_allowed(total_ns: u64, wall_ns: u64, cpus: usize) -> (u64, u64) {
    let cap = (wall_ns as u128 * cpus.max(1) as u128).min(u64::MAX as u128) as u64;
    if total_ns > cap {
        (cap, total_ns - cap)
    } else {
        (total_ns, 0)
    }
}

/// Excess above [`cap_to_allowed`]'s cap that is still clock-domain noise (the CPU clocks run on
/// the scheduler's clock, the wall on CLOCK_MONOTONIC): 1% of the cap plus 10 us. Past this,
/// the excess is recorded as `cpu_over_allowed_ns`.
pub(crate) fn cap_tolerance(wall_ns: u64, cpus: usize) -> u64 {
    wall_ns.saturating_mul(cpus.max(1) as u64) / 100 + 10_000
}

/// `PF_IO_WORKER` in a task's flags: a thread io_uring created (SQPOLL poller or io-wq
/// worker). Their names (`iou-sqp-*`, `iou-wrk-*`) are set only once they first run.
const PF_IO_WORKER: u64 = 0x10;

/// A task of this process: id, name, and whether io_uring created it.
struct Task {
    tid: u32,
    comm: String,
    io: bool,
}

/// The tasks of this process, from /proc/self/task/*/stat.
fn own_tasks() -> Vec<Task> {
    let Ok(dir) = fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let tid = e.file_name().to_str()?.parse::<u32>().ok()?;
            let stat = fs::read_to_string(e.path().join("stat")).ok()?;
            let (head, rest) = stat.rsplit_once(')')?;
            let comm = head
                .split_once('(')
                .map(|(_, c)| c)
                .unwrap_or("")
                .to_string();
            // Fields after the name: state ppid pgrp session tty_nr tpgid flags.
            let flags = rest.split_whitespace().nth(6)?.parse::<u64>().ok()?;
            Some(Task {
                tid,
                comm,
                io: flags & PF_IO_WORKER != 0,
            })
        })
        .collect()
}

/// The SQPOLL pollers of this process's open rings, as their fdinfo names them (`SqThread:`),
/// one per poller.
fn open_pollers() -> Vec<i64> {
    let mut out = Vec::new();
    let Ok(dir) = fs::read_dir("/proc/self/fd") else {
        return out;
    };
    for e in dir.flatten() {
        let Ok(link) = fs::read_link(e.path()) else {
            continue;
        };
        if link.as_os_str() != "anon_inode:[io_uring]" {
            continue;
        }
        let info = std::path::Path::new("/proc/self/fdinfo").join(e.file_name());
        let Ok(text) = fs::read_to_string(info) else {
            continue;
        };
        if let Some(v) = text
            .lines()
            .find_map(|l| l.strip_prefix("SqThread:"))
            .and_then(|v| v.trim().parse::<i64>().ok())
            .filter(|&v| v > 0)
        {
            out.push(v);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// How long a window waits, at most, for the SQPOLL poller of a ring closed just before it to
/// exit (the kernel stops it in its own time, a few ms; meanwhile it spins on the helper CPU).
pub(crate) const POLLER_EXIT_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// io_uring's kernel tasks of this process whose CPU a window of the calling thread counts:
/// every io-wq worker (shared by the rings of a task), and the SQPOLL pollers of the rings
/// still open, as their fdinfo names them. Tasks are told by the kernel's `PF_IO_WORKER` flag,
/// not by name (a new poller carries its creator's name, and fdinfo names the creator, until
/// it first runs: that is waited for). The poller of a ring closed moments ago is no window's:
/// it is waited for (at most [`POLLER_EXIT_WAIT`]: it spins on the helper CPU until the kernel
/// stops it) and, if still there, left out. When fdinfo names pollers by ids this process
/// cannot see (another pid namespace), the `iou-sqp-*` tasks are counted, once there are no
/// more of them than open rings with a poller (or the wait ends).
pub fn io_tasks() -> Vec<u32> {
    let deadline = std::time::Instant::now() + POLLER_EXIT_WAIT;
    loop {
        let tasks = own_tasks();
        let open = open_pollers();
        let late = std::time::Instant::now() >= deadline;
        let task = |p: i64| tasks.iter().find(|t| i64::from(t.tid) == p);
        let io = tasks.iter().filter(|t| t.io);
        let poller_named = |t: &&Task| t.comm.starts_with("iou-sqp-");
        if open.iter().all(|&p| task(p).is_some()) {
            // fdinfo and /proc agree on ids. A poller that has not run yet is named by its
            // creator's id: wait for it to start.
            let started = open.iter().all(|&p| task(p).is_some_and(|t| t.io));
            let pollers: Vec<u32> = open
                .iter()
                .filter_map(|&p| task(p))
                .map(|t| t.tid)
                .collect();
            // io tasks that are neither an open ring's poller nor a worker: closed rings'.
            let lingering = io
                .clone()
                .any(|t| poller_named(&t) && !pollers.contains(&t.tid));
            if (started && !lingering) || late {
                return io
                    .filter(|t| pollers.contains(&t.tid) || !poller_named(t))
                    .map(|t| t.tid)
                    .collect();
            }
        } else {
            let named = io.clone().filter(poller_named).count();
            if named <= open.len() || late {
                return io.map(|t| t.tid).collect();
            }
        }
        std::thread::sleep(std::time::Duration::from_micros(500));
    }
}

/// Every task (thread) id of this process.
pub(crate) fn task_ids() -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .collect()
}

/// io_uring tasks of this process born since `existing` (every task id then) was listed: all
/// of their CPU is since then.
pub(crate) fn io_tasks_since(existing: &[u32]) -> Vec<u32> {
    own_tasks()
        .into_iter()
        .filter(|t| t.io && !existing.contains(&t.tid))
        .map(|t| t.tid)
        .collect()
}

/// Tick-sampled user/sys and context switches of tasks `tids` of this process (for the split
/// of an exact total, never the total itself).
pub(crate) fn ticks_of(tids: &[u32]) -> CpuReading {
    tasks_where(std::process::id(), |tid, _| tids.contains(&tid)).unwrap_or_default()
}

/// CPU of other processes for a window measured from outside (a server under load):
/// `total_ns` from their process CPU clocks read back to back, `at_ns` the monotonic time at
/// the middle of those reads (time the window's edges by it, not by the slow /proc walk), the
/// tick split and context switches from /proc after, and the CPUs their tasks may use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ProcessesReading {
    pub(crate) cpu: CpuReading,
    pub(crate) at_ns: u64,
    pub(crate) cpus_allowed: usize,
}

/// [`ProcessesReading`] of `pids`; `None` when one of them is gone.
pub(crate) fn processes(pids: &[u32]) -> Option<ProcessesReading> {
    let a = crate::measure::clock::now_ns();
    let mut total = 0u64;
    for &p in pids {
        total += clock_ns(process_clock(p))?;
    }
    let b = crate::measure::clock::now_ns();
    let mut r = ProcessesReading {
        at_ns: a / 2 + b / 2,
        ..Default::default()
    };
    let mut tids = Vec::new();
    for &p in pids {
        let t = tasks_where(p, |tid, _| {
            tids.push(tid);
            true
        })
        .ok()?;
        r.cpu.user_ns += t.user_ns;
        r.cpu.sys_ns += t.sys_ns;
        r.cpu.ctx_switches += t.ctx_switches;
    }
    r.cpu.total_ns = total;
    r.cpus_allowed = cpus_allowed(&tids).len();
    Some(r)
}

/// [`ProcessesReading`] of those of `pids` still there (a group's members, enumerated just
/// before: one may end between the two; zombies read too, their CPU clock holds their whole
/// life until reaped), each with the CPU of the children it has reaped
/// (`cutime` + `cstime`, clock ticks): a server that forks a process per connection is counted
/// whole, a child that ended inside the window included once its parent has waited for it.
/// `None` when none of them could be read.
pub(crate) fn processes_live(pids: &[u32]) -> Option<ProcessesReading> {
    let hz = user_hz().unwrap_or(1);
    let reaped = |p: u32| -> (u64, u64) {
        let Ok(stat) = fs::read_to_string(format!("/proc/{p}/stat")) else {
            return (0, 0);
        };
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ns = |i: usize| {
            f.get(i)
                .and_then(|s| s.parse::<u64>().ok())
                .unwrap_or(0)
                .saturating_mul(1_000_000_000 / hz)
        };
        // Fields 16 and 17 (cutime, cstime); the first after ')' is field 3.
        (ns(13), ns(14))
    };
    let a = crate::measure::clock::now_ns();
    let mut read = Vec::new();
    let mut total = 0u64;
    for &p in pids {
        if let Some(ns) = clock_ns(process_clock(p)) {
            let (cu, cs) = reaped(p);
            total += ns + cu + cs;
            read.push((p, cu, cs));
        }
    }
    let b = crate::measure::clock::now_ns();
    if read.is_empty() {
        return None;
    }
    let mut r = ProcessesReading {
        at_ns: a / 2 + b / 2,
        ..Default::default()
    };
    let mut tids = Vec::new();
    for (p, cu, cs) in read {
        if let Ok(t) = tasks_where(p, |tid, _| {
            tids.push(tid);
            true
        }) {
            r.cpu.user_ns += t.user_ns + cu;
            r.cpu.sys_ns += t.sys_ns + cs;
            r.cpu.ctx_switches += t.ctx_switches;
        }
    }
    r.cpu.total_ns = total;
    r.cpus_allowed = cpus_allowed(&tids).len();
    Some(r)
}

/// [`ProcessesReading`] of a contender's cgroup: its CPU, which holds the time of every process
/// that was ever in it (one that ended, or left its process group, included), timed by its own
/// read; the context switches and allowed CPUs of its members now. `None` when its CPU cannot
/// be read.
pub(crate) fn cgroup(cg: &crate::child::cgroup::Cgroup) -> Option<ProcessesReading> {
    let a = crate::measure::clock::now_ns();
    let c = cg.cpu().ok()?;
    let b = crate::measure::clock::now_ns();
    let mut r = ProcessesReading {
        at_ns: a / 2 + b / 2,
        ..Default::default()
    };
    r.cpu.total_ns = c.total_ns;
    r.cpu.user_ns = c.user_ns;
    r.cpu.sys_ns = c.sys_ns;
    let mut tids = Vec::new();
    for p in cg.members() {
        if let Ok(t) = tasks_where(p, |tid, _| {
            tids.push(tid);
            true
        }) {
            r.cpu.ctx_switches += t.ctx_switches;
        }
    }
    r.cpus_allowed = cpus_allowed(&tids).len();
    Some(r)
}

fn tasks_where(pid: u32, mut keep: impl FnMut(u32, &str) -> bool) -> io::Result<CpuReading> {
    let hz = user_hz().unwrap_or(1);
    let mut r = CpuReading::default();
    for e in fs::read_dir(format!("/proc/{pid}/task"))? {
        let dir = e?.path();
        let tid = dir
            .file_name()
            .and_then(|n| n.to_str()?.parse::<u32>().ok())
            .unwrap_or(0);
        let Ok(stat) = fs::read_to_string(dir.join("stat")) else {
            continue;
        };
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let comm = head.split_once('(').map(|(_, c)| c).unwrap_or("");
        if !keep(tid, comm) {
            continue;
        }
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        r.user_ns += ticks(11) * 1_000_000_000 / hz;
        r.sys_ns += ticks(12) * 1_000_000_000 / hz;
        if pid == std::process::id() {
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
    fn idle_ticks_sum_idle_and_iowait_of_the_cpus_asked() {
        let stat = "cpu  9 9 9 9 9 9 9 0 0 0\n\
                    cpu0 1 2 3 40 5 6 7 0 0 0\n\
                    cpu1 1 2 3 400 50 6 7 0 0 0\n\
                    cpu12 1 2 3 4000 500 6 7 0 0 0\n\
                    intr 1 2 3\n";
        assert_eq!(idle_ticks(stat, &[0]), Some(45));
        assert_eq!(idle_ticks(stat, &[1, 12]), Some(4950));
        // A CPU /proc/stat does not list (offline), or none asked: unknown.
        assert_eq!(idle_ticks(stat, &[0, 3]), None);
        assert_eq!(idle_ticks(stat, &[]), None);
        assert_eq!(idle_ticks("cpu0 1 2 3\n", &[0]), None);
    }

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
        let r = processes(&[std::process::id()]).unwrap();
        assert!(r.cpu.total_ns >= b.total_ns && r.at_ns > 0 && r.cpus_allowed >= 1);
        assert!(processes(&[u32::MAX]).is_none());
        assert_eq!(
            affinity(gettid()).unwrap(),
            crate::measure::pin::allowed_cpus()
        );
    }

    #[test]
    fn cpu_above_what_the_cpus_can_give_is_capped_and_the_excess_returned() {
        assert_eq!(cap_to_allowed(900, 1000, 1), (900, 0));
        assert_eq!(cap_to_allowed(1000, 1000, 1), (1000, 0));
        assert_eq!(cap_to_allowed(1030, 1000, 1), (1000, 30));
        assert_eq!(cap_to_allowed(7980, 1000, 2), (2000, 5980));
        assert_eq!(cap_to_allowed(5, 0, 0), (0, 5));
        assert_eq!(cap_tolerance(1_000_000, 2), 30_000);
    }
}
