//! Where the CPU goes, for `ringside run --explain`: [`Recording`] runs `perf record` on the
//! sampled CPUs (through the supervisor, so it dies with ringside; bounded in time; its files in
//! a temporary directory removed afterwards) and [`breakdown`] groups its samples. Input is the text
//! of `perf script -F comm,tid,cpu,event,ip,sym` over a `perf record -e cpu-clock -g -C CPUS`
//! (the software clock: VMs have no hardware counters); each sample is its header line and
//! its call chain, leaf first. Every sample falls in exactly one [`Group`], so the groups sum
//! to the samples read; the leaf kernel symbols are counted for the "top symbols" list.
//!
//! Grouping: idle when any frame is the idle loop; softirq when any frame is softirq
//! processing (charged to the CPU that ran it, as the sample was, whatever task it
//! interrupted); other processes when the measured pids are known and the sample is another
//! user-space program's (in user or kernel mode); otherwise the first frame
//! from the leaf that a rule names (a copy inside tcp_sendmsg is a copy; a spin lock slow path
//! under io_uring task work is a lock slow path); user space when the leaf is a user address;
//! the rest of the kernel under a syscall is syscall entry/exit and other syscall work.
//! The user-space samples' leaf symbols are counted too (as perf demangles them; a leaf perf
//! cannot name, in a binary without symbols, counted apart as unnamed).

use crate::child;
use crate::results::explain::{Explain, Share};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Where a sample's CPU went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Group {
    Idle,
    Softirq,
    LockSlowPath,
    Copies,
    IoUring,
    TcpIp,
    Scheduler,
    Syscall,
    OtherKernel,
    User,
    /// A user-space process other than the measured ones (with their pids known): another
    /// program sharing the CPU, in user or kernel mode.
    OtherProcesses,
}

impl Group {
    pub(crate) const ALL: [Group; 11] = [
        Group::User,
        Group::Syscall,
        Group::TcpIp,
        Group::Softirq,
        Group::Scheduler,
        Group::IoUring,
        Group::Copies,
        Group::LockSlowPath,
        Group::OtherKernel,
        Group::OtherProcesses,
        Group::Idle,
    ];

    /// Its label ("lock slow paths"), from `results::explain::GROUPS`.
    #[cfg(test)]
    pub(crate) fn name(self) -> &'static str {
        crate::results::explain::GROUPS
            .iter()
            .find(|(k, _)| *k == self.key())
            .map_or("", |(_, l)| l)
    }

    /// Its key in results.json (`results::explain::GROUPS`).
    pub(crate) fn key(self) -> &'static str {
        match self {
            Group::Idle => "idle",
            Group::Softirq => "softirq",
            Group::LockSlowPath => "lock_slow_path",
            Group::Copies => "copies",
            Group::IoUring => "io_uring",
            Group::TcpIp => "tcp_ip",
            Group::Scheduler => "scheduler",
            Group::Syscall => "syscall",
            Group::OtherKernel => "other_kernel",
            Group::User => "user",
            Group::OtherProcesses => "other_processes",
        }
    }
}

/// Kernel symbol prefixes (or whole names) of each leaf-first rule, in the order tried per
/// frame.
const RULES: &[(Group, &[&str])] = &[
    (
        Group::LockSlowPath,
        &[
            "native_queued_spin_lock_slowpath",
            "queued_spin_lock_slowpath",
            "__pv_queued_spin_lock_slowpath",
            "__mutex_lock",
            "rwsem_down_",
            "queued_read_lock_slowpath",
            "queued_write_lock_slowpath",
        ],
    ),
    (
        Group::Copies,
        &[
            "rep_movs_alternative",
            "copy_user_",
            "_copy_to_user",
            "_copy_from_user",
            "_copy_to_iter",
            "_copy_from_iter",
            "copy_page_to_iter",
            "copy_page_from_iter",
            "skb_copy_datagram_iter",
            "simple_copy_to_iter",
        ],
    ),
    (
        Group::IoUring,
        &[
            "io_uring",
            "io_wq_",
            "io_worker",
            "tctx_task_work",
            "io_submit_sqes",
            "io_issue_sqe",
            "io_poll_",
            "io_recv",
            "io_send",
            "io_req_",
            "io_cqring_",
            "__io_",
        ],
    ),
    (
        Group::TcpIp,
        &[
            "tcp_",
            "__tcp_",
            "ip_",
            "__ip_",
            "ipv4_",
            "inet_",
            "__inet_",
            "sock_",
            "__sock_",
            "sk_",
            "__sk_",
            "skb_",
            "__skb_",
            "__dev_queue_xmit",
            "dev_hard_start_xmit",
            "loopback_xmit",
            "netif_",
            "__netif_",
            "napi_",
            "__napi_",
            "nf_",
            "dst_",
        ],
    ),
    (
        Group::Scheduler,
        &[
            "schedule",
            "__schedule",
            "finish_task_switch",
            "try_to_wake_up",
            "ttwu_",
            "pick_next_task",
            "enqueue_task",
            "dequeue_task",
            "update_curr",
            "__wake_up",
            "wake_up_",
            "select_task_rq",
        ],
    ),
];

const IDLE: &[&str] = &[
    "do_idle",
    "cpu_idle",
    "default_idle",
    "pv_native_safe_halt",
    "cpuidle_enter",
];
const SOFTIRQ: &[&str] = &[
    "__do_softirq",
    "handle_softirqs",
    "do_softirq",
    "net_rx_action",
];
const SYSCALL: &[&str] = &[
    "entry_SYSCALL",
    "do_syscall_64",
    "syscall_exit_to_user_mode",
    "__x64_sys_",
];

fn matches(sym: &str, list: &[&str]) -> bool {
    list.iter().any(|p| sym.starts_with(p))
}

/// One frame: a kernel address (top half) or not, and its symbol.
#[derive(Clone, Debug, PartialEq)]
struct Frame {
    kernel: bool,
    sym: String,
}

/// The breakdown of a capture.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Breakdown {
    pub(crate) samples: u64,
    /// Samples per group (every sample in exactly one).
    pub(crate) groups: Vec<(Group, u64)>,
    /// Leaf kernel symbols with their samples, most first (at most `TOP`).
    pub(crate) top_kernel: Vec<(String, u64)>,
    /// Leaf user-space symbols of the [`Group::User`] samples with their samples, most first
    /// (at most `TOP`), as perf demangles them; a leaf without a symbol is not here.
    pub(crate) top_user: Vec<(String, u64)>,
    /// [`Group::User`] samples whose leaf had no symbol (`[unknown]`: a stripped binary).
    pub(crate) user_unnamed: u64,
}

impl Breakdown {
    /// A group's share of the samples, percent.
    #[cfg(test)]
    pub(crate) fn pct(&self, g: Group) -> f64 {
        let n = self.groups.iter().find(|(x, _)| *x == g).map_or(0, |x| x.1);
        if self.samples == 0 {
            0.0
        } else {
            n as f64 * 100.0 / self.samples as f64
        }
    }
}

/// Leaf kernel symbols kept.
pub(crate) const TOP: usize = 10;

/// Which processes are measured: samples of other user-space processes are
/// [`Group::OtherProcesses`] (kernel threads, which have no user frames, are grouped by their
/// frames like the rest). `None`: every sample is grouped by its frames.
pub(crate) type Own<'a> = Option<&'a [u32]>;

fn classify(comm: &str, pid: Option<u32>, frames: &[Frame], own: Own<'_>) -> Group {
    if comm.starts_with("swapper") || frames.iter().any(|f| f.kernel && matches(&f.sym, IDLE)) {
        return Group::Idle;
    }
    // Softirq work is charged to the CPU that ran it, whichever task it interrupted.
    if frames.iter().any(|f| f.kernel && matches(&f.sym, SOFTIRQ)) {
        return Group::Softirq;
    }
    if let (Some(own), Some(pid)) = (own, pid) {
        if pid != 0 && !own.contains(&pid) && frames.iter().any(|f| !f.kernel) {
            return Group::OtherProcesses;
        }
    }
    match frames.first() {
        None => return Group::OtherKernel,
        Some(f) if !f.kernel => return Group::User,
        _ => {}
    }
    for f in frames.iter().filter(|f| f.kernel) {
        for (g, list) in RULES {
            if matches(&f.sym, list) {
                return *g;
            }
        }
    }
    if comm.starts_with("iou-") {
        return Group::IoUring;
    }
    if frames.iter().any(|f| f.kernel && matches(&f.sym, SYSCALL)) {
        return Group::Syscall;
    }
    Group::OtherKernel
}

/// Parses `perf script -F comm,tid,cpu,event,ip,sym` text and groups its samples.
#[cfg(test)]
pub(crate) fn breakdown(script: &str) -> Breakdown {
    breakdown_of(script, None)
}

/// As [`breakdown`], for `perf script -F comm,pid,tid,...` (headers "comm pid/tid [cpu]"),
/// with the measured processes' pids `own`.
pub(crate) fn breakdown_of(script: &str, own: Own<'_>) -> Breakdown {
    let mut counts: HashMap<Group, u64> = HashMap::new();
    let mut leaves: HashMap<String, u64> = HashMap::new();
    let mut user_leaves: HashMap<String, u64> = HashMap::new();
    let mut user_unnamed = 0u64;
    let mut samples = 0u64;
    let mut comm: Option<(String, Option<u32>)> = None;
    let mut frames: Vec<Frame> = Vec::new();
    let mut flush = |comm: &mut Option<(String, Option<u32>)>, frames: &mut Vec<Frame>| {
        if let Some((c, pid)) = comm.take() {
            samples += 1;
            let g = classify(&c, pid, frames, own);
            *counts.entry(g).or_default() += 1;
            if let Some(f) = frames.first().filter(|f| f.kernel) {
                *leaves.entry(f.sym.clone()).or_default() += 1;
            }
            if let (Group::User, Some(f)) = (g, frames.first()) {
                if unnamed(&f.sym) {
                    user_unnamed += 1;
                } else {
                    *user_leaves.entry(f.sym.clone()).or_default() += 1;
                }
            }
        }
        frames.clear();
    };
    for line in script.lines() {
        if line.trim().is_empty() {
            flush(&mut comm, &mut frames);
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            // A frame: "<hex ip> <symbol...>".
            let t = line.trim();
            let (ip, sym) = t.split_once(' ').unwrap_or((t, "[unknown]"));
            let ip = u64::from_str_radix(ip, 16).unwrap_or(0);
            frames.push(Frame {
                kernel: ip >= 0xffff_8000_0000_0000,
                sym: sym.trim().to_string(),
            });
        } else {
            flush(&mut comm, &mut frames);
            // The header: "comm  tid [cpu] event:" or "comm  pid/tid [cpu] event:"; comm may
            // hold spaces.
            let head = line.split(" [").next().unwrap_or(line).trim_end();
            let (name, ids) = head
                .rsplit_once(' ')
                .map(|(c, ids)| (c.trim_end(), ids))
                .unwrap_or((head, ""));
            let pid = ids.split_once('/').and_then(|(p, _)| p.parse().ok());
            comm = Some((name.to_string(), pid));
        }
    }
    flush(&mut comm, &mut frames);
    Breakdown {
        samples,
        groups: Group::ALL
            .iter()
            .map(|g| (*g, counts.get(g).copied().unwrap_or(0)))
            .filter(|(_, n)| *n > 0)
            .collect(),
        top_kernel: most_first(leaves),
        top_user: most_first(user_leaves),
        user_unnamed,
    }
}

/// Whether perf named no symbol for a frame (`[unknown]`, or nothing).
fn unnamed(sym: &str) -> bool {
    sym.is_empty() || sym.starts_with("[unknown]")
}

/// The [`TOP`] names with the most samples, most first (ties by name).
fn most_first(counts: HashMap<String, u64>) -> Vec<(String, u64)> {
    let mut top: Vec<(String, u64)> = counts.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    top.truncate(TOP);
    top
}

impl Breakdown {
    /// Counts the periods of the window that took no sample (`expected` samples in all) as
    /// idle: a sleeping CPU's clock does not tick.
    pub(crate) fn add_unsampled_idle(&mut self, expected: u64) {
        let missing = expected.saturating_sub(self.samples);
        if missing == 0 {
            return;
        }
        self.samples += missing;
        match self.groups.iter_mut().find(|g| g.0 == Group::Idle) {
            Some(g) => g.1 += missing,
            None => self.groups.push((Group::Idle, missing)),
        }
    }

    /// As stored in results.json: fractions of the samples, groups in `GROUPS` order.
    pub(crate) fn to_explain(&self, cpus: &[u32], window_ns: u64) -> Explain {
        let n = self.samples.max(1) as f64;
        Explain {
            samples: self.samples,
            cpus: cpus.to_vec(),
            window_ns,
            // Every group, those without a sample at 0, so every breakdown names them all.
            groups: Group::ALL
                .iter()
                .map(|g| Share {
                    name: g.key().to_string(),
                    fraction: self.groups.iter().find(|x| x.0 == *g).map_or(0, |x| x.1) as f64 / n,
                })
                .collect(),
            top_kernel: shares(&self.top_kernel, n),
            top_user: Some(shares(&self.top_user, n)),
            user_unnamed: Some(self.user_unnamed as f64 / n),
        }
    }
}

/// Named counts as shares of `n` samples.
fn shares(counts: &[(String, u64)], n: f64) -> Vec<Share> {
    counts
        .iter()
        .map(|(s, k)| Share {
            name: s.clone(),
            fraction: *k as f64 / n,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Recording

/// The sampling period, ns of CPU clock (4,000 samples per second per busy CPU). A CPU that
/// sleeps in the idle loop takes no sample (the clock stops with the tick), so the window's
/// periods without a sample are counted as idle.
pub(crate) const PERIOD_NS: u64 = 250_000;

/// How long perf may take to start sampling (it reads the kernel's symbols first).
const START_WITHIN: Duration = Duration::from_secs(15);
/// How long `perf script` may take to print a recording.
const SCRIPT_WITHIN: Duration = Duration::from_secs(120);
/// The `perf script` text kept (a 1 s window on one CPU prints about 2 MB).
const SCRIPT_MAX: usize = 64 << 20;
/// Between SIGTERM and SIGKILL: perf writes its file on SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Prefix of every recording's directory in the temporary directory: `ringside-perf-PID-N`.
const DIR_PREFIX: &str = "ringside-perf-";
/// The file in it naming the ringside that made it (`child::owner_token`).
const OWNER_FILE: &str = ".ringside-owner";

/// A temporary directory, removed on drop (and by a later run's [`sweep_stale_dirs`] when a
/// ringside killed with SIGKILL could not).
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, String> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "{DIR_PREFIX}{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&p).map_err(|e| format!("cannot make {}: {e}", p.display()))?;
        let d = TempDir(p);
        std::fs::write(d.0.join(OWNER_FILE), child::owner_token())
            .map_err(|e| format!("cannot write in {}: {e}", d.0.display()))?;
        Ok(d)
    }
}

/// Removes the recordings' directories under `parent` (the temporary directory) that a
/// ringside no longer running left: named `ringside-perf-PID-N`, their owner file naming a
/// ringside that is gone (or none, and a PID that runs no process). One sentence per directory.
pub(crate) fn sweep_stale_dirs(parent: &Path) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut said = Vec::new();
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(DIR_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest
            .split_once('-')
            .filter(|(p, n)| {
                !p.is_empty() && p.bytes().chain(n.bytes()).all(|b| b.is_ascii_digit())
            })
            .and_then(|(p, _)| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = e.path();
        let stale = match std::fs::read_to_string(path.join(OWNER_FILE)) {
            Ok(owner) => !child::owner_alive(owner.trim()),
            Err(_) => !Path::new(&format!("/proc/{pid}")).exists(),
        };
        if stale {
            said.push(match std::fs::remove_dir_all(&path) {
                Ok(()) => format!(
                    "removed stale perf directory {} (left by ringside pid {pid}, which is no \
                     longer running)",
                    path.display()
                ),
                Err(e) => format!("cannot remove stale perf directory {}: {e}", path.display()),
            });
        }
    }
    said
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn mkfifo(p: &Path) -> Result<std::fs::File, String> {
    if p.as_os_str().as_encoded_bytes().contains(&0) {
        return Err("a NUL in the temporary directory's path".to_string());
    }
    // mknodat(2), as glibc's mkfifo.
    use rustix::fs::{mkfifoat, Mode, CWD};
    mkfifoat(CWD, p, Mode::RUSR | Mode::WUSR)
        .map_err(|e| format!("mkfifo {}: {}", p.display(), std::io::Error::from(e)))?;
    // Read and write: opening a FIFO so never blocks, and it never sees EOF.
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(p)
        .map_err(|e| format!("open {}: {e}", p.display()))
}

/// The `perf` this process would run: the first on PATH.
fn perf_binary() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("perf"))
        .find(|p| p.is_file())
}

/// Why CPU-wide sampling would be refused before trying (`None`: try it).
fn refusal() -> Option<String> {
    if perf_binary().is_none() {
        return Some("perf is not installed (no `perf` on PATH; install linux-perf)".into());
    }
    let root = rustix::process::geteuid().is_root();
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    match paranoid {
        Some(p) if p > 0 && !root => Some(format!(
            "perf refused: kernel.perf_event_paranoid is {p}; sampling whole CPUs needs 0 or              less, or root (CAP_PERFMON)"
        )),
        _ => None,
    }
}

/// A `perf record -e cpu-clock -g -C CPUS` in progress, sampling since [`Recording::start`]
/// returned. Stopped (and its files removed) by [`Recording::finish`] or on drop.
pub(crate) struct Recording {
    perf: child::Child,
    dir: TempDir,
    cpus: Vec<u32>,
    run_on: Vec<u32>,
}

impl Recording {
    /// Starts sampling `cpus` with call chains (kernel and user), perf itself running on
    /// `run_on` (never on a sampled CPU when there is another), for at most `max`. Returns once
    /// perf samples (it starts with its events disabled and acknowledges `enable` on a FIFO),
    /// or why it cannot.
    pub(crate) fn start(cpus: &[u32], run_on: &[u32], max: Duration) -> Result<Recording, String> {
        if let Some(why) = refusal() {
            return Err(why);
        }
        let dir = TempDir::new()?;
        let mut ctl = mkfifo(&dir.0.join("ctl"))?;
        let ack = mkfifo(&dir.0.join("ack"))?;
        let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let mut cmd = Command::new("perf");
        cmd.arg("record")
            .args([
                "-e",
                "cpu-clock",
                "-g",
                "-k",
                "mono",
                "-B",
                "--no-buildid-cache",
            ])
            .arg("-c")
            .arg(PERIOD_NS.to_string())
            .arg("-C")
            .arg(list(cpus))
            .args(["-D", "-1", "--control"])
            .arg(format!(
                "fifo:{},{}",
                dir.0.join("ctl").display(),
                dir.0.join("ack").display()
            ))
            .arg("-o")
            .arg(dir.0.join("perf.data"))
            .args(["--", "sleep"])
            .arg(format!("{}", max.as_secs().max(1)));
        let mut perf = child::Spec::new("perf record", cmd)
            .cpus(run_on)
            .own_group()
            .grace(STOP_GRACE)
            .spawn()
            .map_err(|e| format!("cannot run perf: {e}"))?;
        ctl.write_all(b"enable\n")
            .map_err(|e| format!("perf control FIFO: {e}"))?;
        // Wait for "ack", watching perf's exit.
        let deadline = Instant::now() + START_WITHIN;
        let mut got = Vec::new();
        loop {
            if let Some(st) = perf.try_exit() {
                let tail = perf.stderr_tail(6);
                return Err(format!("perf record refused ({st}): {}", tail.trim()));
            }
            if got.windows(3).any(|w| w == b"ack") {
                break;
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "perf record did not start sampling within {} s",
                    START_WITHIN.as_secs()
                ));
            }
            let mut pfd = libc::pollfd {
                fd: ack.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // raw: rustix's poll is ppoll(2), another syscall than poll(2).
            // SAFETY: one valid pollfd.
            let r = unsafe { libc::poll(&mut pfd, 1, 50) };
            if r > 0 {
                let mut buf = [0u8; 64];
                let n = (&ack)
                    .read(&mut buf)
                    .map_err(|e| format!("perf ack FIFO: {e}"))?;
                got.extend_from_slice(&buf[..n]);
            }
        }
        Ok(Recording {
            perf,
            dir,
            cpus: cpus.to_vec(),
            run_on: run_on.to_vec(),
        })
    }

    /// Stops perf and groups the samples taken between `open_ns` and `close_ns`
    /// (CLOCK_MONOTONIC, `measure::clock::now_ns`).
    /// Samples of user-space processes other than `own` (the measured ones) are
    /// [`Group::OtherProcesses`].
    pub(crate) fn finish(
        mut self,
        open_ns: u64,
        close_ns: u64,
        own: &[u32],
    ) -> Result<Explain, String> {
        if self.perf.try_exit().is_some() {
            return Err(format!(
                "perf record ended before the window closed: {}",
                self.perf.stderr_tail(6).trim()
            ));
        }
        let stopped = self.perf.stop();
        let data = self.dir.0.join("perf.data");
        if stopped.killed || !data.is_file() {
            return Err(format!(
                "perf record wrote no data{}: {}",
                if stopped.killed { " (killed)" } else { "" },
                self.perf.stderr_tail(6).trim()
            ));
        }
        let secs = |ns: u64| format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
        let mut cmd = Command::new("perf");
        cmd.arg("script")
            .arg("-i")
            .arg(&data)
            .args(["-F", "comm,pid,tid,cpu,event,ip,sym", "--time"])
            .arg(format!("{},{}", secs(open_ns), secs(close_ns)));
        let cap = child::Capture {
            stdout_max: SCRIPT_MAX,
            stderr_max: 4096,
            within: SCRIPT_WITHIN,
            cpus: Some(self.run_on.clone()),
        };
        let out =
            child::run_captured(cmd, &cap, |_| {}).map_err(|e| format!("perf script: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "perf script failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let mut b = breakdown_of(&String::from_utf8_lossy(&out.stdout), Some(own));
        let window = close_ns.saturating_sub(open_ns);
        b.add_unsampled_idle(window / PERIOD_NS * self.cpus.len() as u64);
        if b.samples == 0 {
            return Err("perf recorded no sample in the window".into());
        }
        Ok(b.to_explain(&self.cpus, close_ns.saturating_sub(open_ns)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples in the shape perf 6.1 prints on this machine.
    const SCRIPT: &str = "\
swapper     0 [001] cpu-clock: 
\tffffffff821f6a8e pv_native_safe_halt
\tffffffff821f6c1a default_idle
\tffffffff813c2c31 do_idle

ringside    1748 [001] cpu-clock: 
\t          10a974 __libc_recv
\t    7f0065a80000 [unknown]

ringside serve  1750 [001] cpu-clock: 
\tffffffff81000130 entry_SYSCALL_64_after_hwframe

ringside serve  1750 [001] cpu-clock: 
\tffffffff813f4a10 native_queued_spin_lock_slowpath
\tffffffff813f4b00 _raw_spin_lock
\tffffffff81a0c000 tctx_task_work
\tffffffff821ef691 do_syscall_64

ringside serve  1750 [001] cpu-clock: 
\tffffffff81e40000 rep_movs_alternative
\tffffffff81e30000 tcp_sendmsg_locked
\tffffffff821ef691 do_syscall_64

ksoftirqd/1    22 [001] cpu-clock: 
\tffffffff81e50000 tcp_v4_rcv
\tffffffff81e51000 net_rx_action
\tffffffff81e52000 handle_softirqs

ringside serve  1750 [001] cpu-clock: 
\tffffffff81e30000 tcp_sendmsg_locked
\tffffffff821ef691 do_syscall_64

ringside serve  1750 [001] cpu-clock: 
\tffffffff813a4413 finish_task_switch.isra.0
\tffffffff813a5000 __schedule

iou-wrk-1750  1760 [001] cpu-clock: 
\tffffffff81777000 some_fs_helper

ringside serve  1750 [001] cpu-clock: 
\tffffffff81777000 some_fs_helper
";

    #[test]
    fn every_sample_in_one_group_and_the_groups_sum_to_all() {
        let b = breakdown(SCRIPT);
        assert_eq!(b.samples, 10);
        assert_eq!(b.groups.iter().map(|g| g.1).sum::<u64>(), 10);
        let of = |g: Group| b.groups.iter().find(|x| x.0 == g).map_or(0, |x| x.1);
        assert_eq!(of(Group::Idle), 1);
        assert_eq!(of(Group::User), 1);
        assert_eq!(of(Group::Syscall), 1);
        assert_eq!(
            of(Group::LockSlowPath),
            1,
            "spin lock slow path under task work"
        );
        assert_eq!(of(Group::Copies), 1, "a copy inside tcp_sendmsg is a copy");
        assert_eq!(of(Group::Softirq), 1);
        assert_eq!(of(Group::TcpIp), 1);
        assert_eq!(of(Group::Scheduler), 1);
        assert_eq!(
            of(Group::IoUring),
            1,
            "an io-wq worker's unnamed kernel work"
        );
        assert_eq!(of(Group::OtherKernel), 1);
        assert!((b.pct(Group::Idle) - 10.0).abs() < 1e-9);
        // Leaf kernel symbols: some_fs_helper twice leads.
        assert_eq!(b.top_kernel[0], ("some_fs_helper".to_string(), 2));
        // The one user-space sample's leaf, named.
        assert_eq!(b.top_user, vec![("__libc_recv".to_string(), 1)]);
        assert_eq!(b.user_unnamed, 0);
    }

    /// The measured program's user-space leaves are counted by symbol, most first; a leaf
    /// perf could not name (a stripped binary) is counted apart; another program's are not
    /// the measured program's.
    #[test]
    fn user_space_leaves_are_counted_and_unnamed_ones_apart() {
        let script = "\
srv 10/10 [001] cpu-clock: 
\t          35ed5f <srv::Loop as srv::Run>::run
\t          10a974 main

srv 10/10 [001] cpu-clock: 
\t          35ed5f <srv::Loop as srv::Run>::run

srv 10/10 [001] cpu-clock: 
\t          15354a __memset_avx2_unaligned_erms

srv 10/11 [001] cpu-clock: 
\t    55d47ddfef20 [unknown]

other 20/20 [001] cpu-clock: 
\t          15354a hot_loop
";
        let b = breakdown_of(script, Some(&[10]));
        assert_eq!(
            b.top_user,
            vec![
                ("<srv::Loop as srv::Run>::run".to_string(), 2),
                ("__memset_avx2_unaligned_erms".to_string(), 1)
            ]
        );
        assert_eq!(b.user_unnamed, 1);
        let e = b.to_explain(&[1], 1);
        let top = e.top_user.unwrap();
        assert!((top[0].fraction - 0.4).abs() < 1e-9, "{top:?}");
        assert!((e.user_unnamed.unwrap() - 0.2).abs() < 1e-9);
    }

    #[test]
    fn every_group_has_its_key_and_label_in_the_results_schema() {
        for g in Group::ALL {
            assert!(!g.name().is_empty(), "{g:?}");
            assert_eq!(crate::results::explain::label(g.key()), g.name());
        }
        assert_eq!(Group::ALL.len(), crate::results::explain::GROUPS.len());
        // A window of 20 periods with 10 samples: 10 more idle.
        let mut b = breakdown(SCRIPT);
        b.add_unsampled_idle(20);
        assert_eq!(b.samples, 20);
        assert!((b.pct(Group::Idle) - 55.0).abs() < 1e-9);
        b.add_unsampled_idle(5);
        assert_eq!(b.samples, 20, "never fewer");
        let e = breakdown(SCRIPT).to_explain(&[1], 5);
        let sum: f64 = e.groups.iter().map(|s| s.fraction).sum();
        assert!((sum - 1.0).abs() < 1e-9, "{sum}");
        assert!((e.fraction("idle") - 0.1).abs() < 1e-9);
        assert_eq!(e.top_kernel[0].name, "some_fs_helper");
        assert!((e.top_kernel[0].fraction - 0.2).abs() < 1e-9);
    }

    /// With `pid/tid` headers and the measured pids: another program's samples (user or
    /// kernel mode) are other processes; kernel threads and the measured process are grouped
    /// by their frames.
    #[test]
    fn other_programs_on_the_sampled_cpu_are_grouped_apart() {
        let script = "\
rustc 900/901 [001] cpu-clock: 
\t          10a974 some_rust_fn

rustc 900/901 [001] cpu-clock: 
\tffffffff81e51000 net_rx_action
\tffffffff81e52000 handle_softirqs
\tffffffff81e53000 irq_exit_rcu
\t          10a974 some_rust_fn

rustc 900/901 [001] cpu-clock: 
\tffffffff81e40000 rep_movs_alternative
\tffffffff821ef691 do_syscall_64
\t          10a974 __libc_write

ksoftirqd/1 22/22 [001] cpu-clock: 
\tffffffff81e50000 tcp_v4_rcv
\tffffffff81e52000 handle_softirqs

ringside 1748/1750 [001] cpu-clock: 
\tffffffff81000130 entry_SYSCALL_64_after_hwframe
\t          10a974 __libc_recv

swapper 0/0 [001] cpu-clock: 
\tffffffff821f6a8e pv_native_safe_halt
";
        let b = breakdown_of(script, Some(&[1748]));
        let of = |g: Group| b.groups.iter().find(|x| x.0 == g).map_or(0, |x| x.1);
        assert_eq!(b.samples, 6);
        assert_eq!(of(Group::OtherProcesses), 2);
        assert_eq!(
            of(Group::Softirq),
            2,
            "softirq work is the CPU's, whoever it interrupted"
        );
        assert_eq!(of(Group::Syscall), 1);
        assert_eq!(of(Group::Idle), 1);
        // Without pids, the other program's samples are grouped by their frames.
        let b = breakdown_of(script, None);
        let of = |g: Group| b.groups.iter().find(|x| x.0 == g).map_or(0, |x| x.1);
        assert_eq!((of(Group::OtherProcesses), of(Group::User)), (0, 1));
        assert_eq!(of(Group::Copies), 1);
    }

    /// A directory of a ringside that is gone is removed, this one's and other names are not.
    #[test]
    fn stale_recording_directories_are_swept() {
        let parent = tempfile::tempdir().unwrap();
        let mk = |name: &str, owner: Option<&str>| {
            let p = parent.path().join(name);
            std::fs::create_dir(&p).unwrap();
            if let Some(o) = owner {
                std::fs::write(p.join(OWNER_FILE), o).unwrap();
            }
            p
        };
        // Beyond the largest pid Linux gives (2^22): no such process.
        let gone = mk("ringside-perf-4194305-0", Some("4194305:1"));
        let mine = mk(
            &format!("ringside-perf-{}-7", std::process::id()),
            Some(child::owner_token()),
        );
        let other = mk("ringside-perf-x-0", None);
        let said = sweep_stale_dirs(parent.path());
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].contains("ringside-perf-4194305-0"), "{said:?}");
        assert!(!gone.exists() && mine.exists() && other.exists());
    }

    #[test]
    fn empty_input_is_no_samples() {
        assert_eq!(breakdown(""), Breakdown::default());
    }
}
