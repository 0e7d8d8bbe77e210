//! Child processes: the one supervisor of every process ringside starts and must not outlive —
//! a network cell's `ringside serve`, an external contender's command, and the cross-check
//! tools (wrk, fio).
//!
//! - **Spawn** from one long-lived thread (`PR_SET_PDEATHSIG` fires when the *thread* that
//!   forked ends, not the process), and between fork and exec: `PR_SET_PDEATHSIG(SIGKILL)`,
//!   then a check that the parent is still ours (it may have died before the prctl), then the
//!   CPU affinity (inherited by every thread and process the child makes). Every child carries
//!   an owner mark in its environment, `RINGSIDE_OWNER=PID:START` ([`owner_token`]), which
//!   whatever it starts inherits.
//! - **Process group** ([`Spec::own_group`], contenders): the child leads a group of its own
//!   and is stopped as a group. A guard process outside the group (`sh`, ignoring the terminal's
//!   signals) holds a pipe from ringside and kills the whole group when it reads EOF, which is
//!   when ringside ends, however it ends (`kill -9` included): PDEATHSIG reaches only the
//!   direct child, not what a contender's shell forks.
//! - **Readiness** ([`Child::wait_ready`]): a stdout line (`listening on ADDR`) or a port that
//!   accepts connections, watching for the child's exit, bounded in time.
//! - **Stop** ([`Child::stop`]): SIGTERM (to the group), SIGKILL after a bound, reap, wait
//!   (bounded) for the group to empty; also on drop.
//! - **Output**: stdout lines kept by prefix (the last of each) and the stderr tail, read by
//!   threads and bounded in bytes however much the child writes ([`run_captured`] for tools
//!   whose whole output is read, with caps).
//! - **Unavailable** is an exit code, [`EXIT_UNAVAILABLE`], never a guess from stderr.
//! - **Sweep** ([`sweep_stale`]): at the next start, children whose owner mark names a ringside
//!   that is no longer running are stopped and named.

use std::collections::VecDeque;
use std::fs;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Condvar, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Exit code by which a child says that what it was asked to run cannot run on this machine
/// (`ringside serve` for a model whose setup the kernel refuses; a contender may use it too):
/// its cell is `unavailable`, with the last line of its stderr as the reason. 69 is
/// EX_UNAVAILABLE of sysexits.h.
pub const EXIT_UNAVAILABLE: i32 = 69;

/// The environment variable that marks a process as started by a ringside: `PID:START` of
/// that ringside.
pub const OWNER_ENV: &str = "RINGSIDE_OWNER";

/// Bytes of a child's stderr kept (the most recent ones).
pub const STDERR_TAIL_BYTES: usize = 16 * 1024;

/// Longest stdout line kept; a longer one is dropped whole.
pub const STDOUT_LINE_BYTES: usize = 64 * 1024;

/// Default time between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// Interval between two checks while waiting (for a port, a group to empty).
const POLL: Duration = Duration::from_millis(20);
/// Longest single connect attempt while waiting for a port.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(200);
/// How long the rest of a group (not our children) has to disappear after SIGKILL.
const GROUP_EMPTY_WITHIN: Duration = Duration::from_secs(1);
/// How long the output readers have to reach EOF once the child has ended.
const READERS_WITHIN: Duration = Duration::from_millis(500);

// ---------------------------------------------------------------------------------------
// Owner marks

/// This process's owner mark, `PID:START:BOOT` (START: its start time in clock ticks after
/// boot, field 22 of /proc/PID/stat, so that a reused pid is not mistaken for it; BOOT: this
/// boot's id, so that a mark from before a reboot is nobody's).
pub fn owner_token() -> &'static str {
    static TOKEN: OnceLock<String> = OnceLock::new();
    TOKEN.get_or_init(|| {
        let pid = std::process::id();
        format!(
            "{pid}:{}:{}",
            Stat::of(pid).map_or(0, |s| s.start),
            boot_id()
        )
    })
}

/// This boot's id: the first 8 hex digits of /proc/sys/kernel/random/boot_id ("0" unread).
fn boot_id() -> &'static str {
    static BOOT: OnceLock<String> = OnceLock::new();
    BOOT.get_or_init(|| {
        fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .ok()
            .map(|s| s.chars().filter(char::is_ascii_hexdigit).take(8).collect())
            .filter(|s: &String| !s.is_empty())
            .unwrap_or_else(|| "0".into())
    })
}

/// Whether `pid` carries this ringside's owner mark: started by our supervisor, or by what it
/// started, even once its parent is gone (a contender's shell reaped before the server it
/// forked has exited leaves that server to init for a moment).
pub fn carries_our_mark(pid: u32) -> bool {
    owner_of(pid).is_some_and(|o| o == owner_token())
}

/// When this ringside started, in /proc's clock ticks since boot (stat field 22).
pub fn our_start_ticks() -> u64 {
    parse_token(owner_token()).map_or(0, |t| t.1)
}

/// `(pid, start)` of an owner mark (`PID:START`, or `PID:START:BOOT`).
pub fn parse_token(token: &str) -> Option<(u32, u64)> {
    let mut f = token.trim().split(':');
    let (pid, start) = (f.next()?, f.next()?);
    if f.clone().count() > 1 {
        return None;
    }
    Some((pid.parse().ok()?, start.parse().ok()?))
}

/// Whether an owner mark was made in this boot (a mark without one, from an older ringside,
/// is not).
fn of_this_boot(token: &str) -> bool {
    token.trim().split(':').nth(2) == Some(boot_id())
}

/// The real uid a process runs as (`Uid:` of /proc/PID/status).
fn uid_of(pid: u32) -> Option<u32> {
    let s = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Whether the ringside an owner mark names is still running (same pid, same start time).
pub fn owner_alive(token: &str) -> bool {
    parse_token(token)
        .is_some_and(|(pid, start)| Stat::of(pid).is_some_and(|s| s.start == start && s.live()))
}

/// The fields of /proc/PID/stat ringside reads.
#[derive(Clone, Copy, Debug)]
struct Stat {
    state: char,
    pgrp: i32,
    session: i32,
    start: u64,
}

impl Stat {
    /// Fields are counted after the last ')' (the command name may hold spaces and ')').
    fn of(pid: u32) -> Option<Stat> {
        let s = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let rest = &s[s.rfind(')')? + 1..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        Some(Stat {
            state: f.first()?.chars().next()?,
            pgrp: f.get(2)?.parse().ok()?,
            session: f.get(3)?.parse().ok()?,
            // Field 22; the first after ')' is field 3.
            start: f.get(19)?.parse().ok()?,
        })
    }

    /// Neither a zombie nor dead.
    fn live(&self) -> bool {
        self.state != 'Z' && self.state != 'X'
    }
}

/// Whether `pid` is stopped (state T or t: SIGSTOP, SIGTSTP, a debugger): it cannot act on a
/// signal until continued.
pub fn is_stopped(pid: u32) -> bool {
    Stat::of(pid).is_some_and(|s| matches!(s.state, 'T' | 't'))
}

/// Whether `pid` runs (not a zombie).
pub fn is_live(pid: u32) -> bool {
    Stat::of(pid).is_some_and(|s| s.live())
}

fn proc_pids() -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
        .collect()
}

/// Stops (SIGKILL) every process that carries this ringside's owner mark but runs in another
/// session: a daemon a contender left (`setsid cmd &`), out of the process group that is
/// stopped with it. Our own children stay in our session. Returns "PID (COMM)" of each.
pub fn stop_our_daemons() -> Vec<String> {
    let me = std::process::id();
    let Some(ours) = Stat::of(me).map(|s| s.session) else {
        return Vec::new();
    };
    let mut stopped = Vec::new();
    for pid in live_pids() {
        let theirs = Stat::of(pid).map(|s| s.session);
        if pid == me || !carries_our_mark(pid) || theirs.is_none_or(|s| s == ours) {
            continue;
        }
        let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        // SAFETY: SIGKILL to a process carrying our own owner mark.
        if unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) } == 0 {
            stopped.push(format!("{pid} ({})", comm.trim()));
        }
    }
    stopped
}

/// Live (non-zombie) processes, ascending by pid.
pub fn live_pids() -> Vec<u32> {
    let mut v: Vec<u32> = proc_pids().into_iter().filter(|&p| is_live(p)).collect();
    v.sort_unstable();
    v
}

/// Live (non-zombie) processes of process group `pgid`, ascending by pid.
pub fn group_members(pgid: i32) -> Vec<u32> {
    let mut v: Vec<u32> = proc_pids()
        .into_iter()
        .filter(|&p| Stat::of(p).is_some_and(|s| s.pgrp == pgid && s.live()))
        .collect();
    v.sort_unstable();
    v
}

/// Every process of process group `pgid`, zombies included, ascending by pid: a zombie's CPU
/// clock still reads its whole life until its parent waits for it (and then the parent's
/// `cutime`/`cstime` carry it), so a reading over these loses no CPU of a worker that
/// ended.
pub fn group_processes(pgid: i32) -> Vec<u32> {
    let mut v: Vec<u32> = proc_pids()
        .into_iter()
        .filter(|&p| Stat::of(p).is_some_and(|s| s.pgrp == pgid && s.state != 'X'))
        .collect();
    v.sort_unstable();
    v
}

/// The owner mark in a process's environment, if it has one (only our own processes', or
/// every process's as root, can be read).
fn owner_of(pid: u32) -> Option<String> {
    let mut env = Vec::new();
    fs::File::open(format!("/proc/{pid}/environ"))
        .ok()?
        .take(1 << 20)
        .read_to_end(&mut env)
        .ok()?;
    let key = format!("{OWNER_ENV}=");
    env.split(|&b| b == 0)
        .find_map(|kv| kv.strip_prefix(key.as_bytes()))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// Stops (SIGKILL; its process group too when it leads one) every process that carries the
/// owner mark of a ringside that is no longer running: what a ringside killed before it could
/// stop its children (and past the guards) left behind. Returns one sentence per process
/// stopped. Processes of a live ringside, this one's included, are left alone, and so is any
/// process that could not be a dead ringside's child: another user's (a mark in an
/// environment is anyone's to write: `su nobody -c 'env RINGSIDE_OWNER=999998:1 sleep'` was
/// killed by root's next run), one started before the ringside its mark names, or one whose
/// mark is not of this boot.
pub fn sweep_stale() -> Vec<String> {
    let me = std::process::id();
    let mut found = Vec::new();
    for pid in proc_pids() {
        if pid == me {
            continue;
        }
        // The pidfd pins the process: the checks below and the signal are about one process,
        // even if the pid is reused meanwhile.
        let pidfd = pidfd_open(pid);
        let Some(token) = owner_of(pid) else {
            continue;
        };
        if token == owner_token() || owner_alive(&token) || !of_this_boot(&token) {
            continue;
        }
        let Some((_, owner_start)) = parse_token(&token) else {
            continue;
        };
        let Some(st) = Stat::of(pid).filter(|s| s.live() && s.start >= owner_start) else {
            continue;
        };
        // SAFETY: getuid cannot fail.
        if uid_of(pid) != Some(unsafe { libc::getuid() }) {
            continue;
        }
        let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let sent = match &pidfd {
            // SAFETY: pidfd_send_signal on a pidfd we own; no memory is passed.
            Some(fd) => unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                ) == 0
            },
            // SAFETY: kill(2) on a pid just checked; no memory is involved.
            None => unsafe { libc::kill(pid as i32, libc::SIGKILL) == 0 },
        };
        if !sent {
            continue;
        }
        if st.pgrp == pid as i32 {
            // SAFETY: as above, on the group it leads.
            unsafe { libc::kill(-st.pgrp, libc::SIGKILL) };
        }
        let owner = parse_token(&token).map_or_else(|| token.clone(), |(p, _)| p.to_string());
        found.push(format!(
            "stopped stale child pid {pid} ({}) left by ringside pid {owner}, which is no \
             longer running",
            comm.trim()
        ));
    }
    found
}

// ---------------------------------------------------------------------------------------
// Spawning

type Job = (Command, mpsc::Sender<io::Result<std::process::Child>>);

/// The long-lived thread every child is forked from (`None`: it could not be started; spawns
/// then happen on the caller's thread).
fn spawner() -> Option<&'static mpsc::Sender<Job>> {
    static SPAWNER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("spawner".into())
                .spawn(move || {
                    for (mut cmd, reply) in rx {
                        let _ = reply.send(cmd.spawn());
                    }
                })
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

/// Marks `cmd` ([`OWNER_ENV`]) and arms it: between fork and exec, PR_SET_PDEATHSIG(SIGKILL),
/// the check that the parent is still this process, and the CPU affinity when `cpus` is given.
fn arm(cmd: &mut Command, cpus: Option<&[u32]>) -> io::Result<()> {
    cmd.env(OWNER_ENV, owner_token());
    let set = cpus.map(cpu_set).transpose()?;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and makes only raw syscalls
    // (prctl, getppid, sched_setaffinity) on data copied before the fork: async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // Died between fork and prctl: the signal will never come.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            if let Some(set) = &set {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    Ok(())
}

/// Spawns `cmd` marked and armed (see the module docs) from the spawner thread: a child that
/// dies with this process. For tools run to completion; servers use [`Spec`].
pub fn spawn(mut cmd: Command, cpus: Option<&[u32]>) -> io::Result<std::process::Child> {
    arm(&mut cmd, cpus)?;
    spawn_armed(cmd)
}

fn spawn_armed(cmd: Command) -> io::Result<std::process::Child> {
    let Some(tx) = spawner() else {
        let mut cmd = cmd;
        return cmd.spawn();
    };
    let (reply, rx) = mpsc::channel();
    match tx.send((cmd, reply)) {
        Ok(()) => rx
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("the spawner thread is gone"))),
        Err(mpsc::SendError((mut cmd, _))) => cmd.spawn(),
    }
}

/// The affinity set of `cpus`: the one place a CPU list becomes a `cpu_set_t` (a child before
/// its exec here, threads in `measure::pin`). Empty, or a CPU past `CPU_SETSIZE`, is an error.
pub fn cpu_set(cpus: &[u32]) -> io::Result<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is a plain bit array; all zeros is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if cpus.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "an empty CPU list",
        ));
    }
    for &c in cpus {
        if c as usize >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {c} is beyond CPU_SETSIZE"),
            ));
        }
        // SAFETY: c is below CPU_SETSIZE, checked above.
        unsafe { libc::CPU_SET(c as usize, &mut set) };
    }
    Ok(set)
}

/// A pipe, both ends close-on-exec: (read, write).
pub fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two fds into the array on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: two fresh fds we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a fresh fd we own (pidfds are close-on-exec).
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// Waits (in poll(2) on the pidfd, or in short sleeps without one) until the process may
/// have exited or `until` passes.
fn wait_readable(pidfd: Option<&OwnedFd>, until: Instant) {
    let left = until.saturating_duration_since(Instant::now());
    match pidfd {
        Some(fd) => {
            let mut p = libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = left.as_millis().clamp(1, 1000) as libc::c_int;
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut p, 1, ms) };
        }
        None => std::thread::sleep(left.min(POLL)),
    }
}

/// The exit status of a child that has ended, without reaping it (`waitid` with WNOWAIT).
fn peek_exit(pid: u32) -> Option<ExitStatus> {
    // SAFETY: siginfo_t is plain data the kernel fills in.
    let mut si: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid on our own child with a valid siginfo pointer; WNOWAIT leaves it
    // waitable.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut si,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: the kernel filled si (si_pid is 0 when the child has not ended).
    if r != 0 || unsafe { si.si_pid() } == 0 {
        return None;
    }
    // SAFETY: as above.
    let status = unsafe { si.si_status() };
    Some(match si.si_code {
        libc::CLD_EXITED => ExitStatus::from_raw((status & 0xff) << 8),
        _ => ExitStatus::from_raw(status & 0x7f),
    })
}

// ---------------------------------------------------------------------------------------
// Bounded output

/// The most recent bytes a child wrote to stderr, bounded to [`STDERR_TAIL_BYTES`].
#[derive(Debug, Default)]
struct Tail {
    bytes: VecDeque<u8>,
    eof: bool,
}

impl Tail {
    fn push(&mut self, data: &[u8]) {
        self.bytes.extend(data);
        let excess = self.bytes.len().saturating_sub(STDERR_TAIL_BYTES);
        self.bytes.drain(..excess);
    }

    /// The last `n` lines.
    fn lines(&self, n: usize) -> String {
        let (a, b) = self.bytes.as_slices();
        let text = String::from_utf8_lossy(&[a, b].concat()).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn read_stderr(mut from: impl Read, tail: Arc<(Mutex<Tail>, Condvar)>) {
    let mut buf = [0u8; 4096];
    loop {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => lock(&tail.0).push(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    lock(&tail.0).eof = true;
    tail.1.notify_all();
}

/// Stdout lines kept by prefix: the last line starting with each, without the prefix.
#[derive(Debug, Default)]
struct Lines {
    kept: Vec<(&'static str, String)>,
    /// Prefixes of lines dropped for being over [`STDOUT_LINE_BYTES`].
    overlong: Vec<&'static str>,
    eof: bool,
}

fn read_lines(
    mut from: impl Read,
    prefixes: &'static [&'static str],
    out: Arc<(Mutex<Lines>, Condvar)>,
) {
    let mut buf = [0u8; 4096];
    let mut line: Vec<u8> = Vec::new();
    let mut overlong = false;
    let take = |line: &[u8]| {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end_matches('\r');
        if let Some(&p) = prefixes.iter().find(|p| text.starts_with(**p)) {
            let mut l = lock(&out.0);
            let rest = text[p.len()..].to_string();
            match l.kept.iter_mut().find(|(k, _)| *k == p) {
                Some(slot) => slot.1 = rest,
                None => l.kept.push((p, rest)),
            }
            drop(l);
            out.1.notify_all();
        }
    };
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        for part in buf[..n].split_inclusive(|&b| b == b'\n') {
            let (body, end) = match part.strip_suffix(b"\n") {
                Some(b) => (b, true),
                None => (part, false),
            };
            if !overlong {
                if line.len() + body.len() > STDOUT_LINE_BYTES {
                    overlong = true;
                    // Say which kept line it would have been: its start is here.
                    let mut start = line.clone();
                    start.extend_from_slice(&body[..body.len().min(256)]);
                    if let Some(&p) = prefixes.iter().find(|p| start.starts_with(p.as_bytes())) {
                        let mut l = lock(&out.0);
                        if !l.overlong.contains(&p) {
                            l.overlong.push(p);
                        }
                    }
                    line.clear();
                } else {
                    line.extend_from_slice(body);
                }
            }
            if end {
                if !overlong {
                    take(&line);
                }
                line.clear();
                overlong = false;
            }
        }
    }
    if !overlong && !line.is_empty() {
        take(&line);
    }
    lock(&out.0).eof = true;
    out.1.notify_all();
}

/// Reads `from` to EOF keeping at most `max` bytes (the rest is read and dropped, so that the
/// writer never blocks on a full pipe); returns the bytes kept and whether some were dropped.
fn read_capped(mut from: impl Read, max: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut over = false;
    let mut buf = [0u8; 8192];
    loop {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let room = max.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                over |= n > room;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    (kept, over)
}

// ---------------------------------------------------------------------------------------
// Tools run to completion

/// Limits for [`run_captured`].
#[derive(Clone, Debug)]
pub struct Capture {
    /// Bytes of stdout kept; more is read and dropped, and said ([`Captured::stdout_over`]).
    pub stdout_max: usize,
    /// Bytes of stderr kept (the first ones).
    pub stderr_max: usize,
    /// How long the command may run before it is killed.
    pub within: Duration,
    /// CPUs it may run on.
    pub cpus: Option<Vec<u32>>,
}

/// What a command run to completion left.
#[derive(Debug)]
pub struct Captured {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    /// More than `stdout_max` bytes were written to stdout.
    pub stdout_over: bool,
    pub stderr: Vec<u8>,
    /// The command's own CPU time (user + sys, from wait4), ns.
    pub cpu_ns: u64,
    /// Start to exit, ns.
    pub wall_ns: u64,
}

/// Runs `cmd` (stdin closed, stdout and stderr read by threads with caps, so a command that
/// prints without end neither blocks on a full pipe nor makes ringside allocate what it
/// prints) as a child that dies with ringside; kills it after `cap.within`, and its whole
/// process group when `cmd` was given one of its own (`process_group(0)`: what it started
/// goes with it). `started` gets its pid once it runs (for a signal handler that may have to
/// stop it).
pub fn run_captured(
    mut cmd: Command,
    cap: &Capture,
    started: impl FnOnce(u32),
) -> io::Result<Captured> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let t0 = Instant::now();
    let mut child = spawn(cmd, cap.cpus.as_deref())?;
    let pid = child.id();
    // SAFETY: getpgid on our own child's pid.
    let leads_group = unsafe { libc::getpgid(pid as libc::pid_t) } == pid as libc::pid_t;
    started(pid);
    let (otx, orx) = mpsc::channel();
    if let Some(o) = child.stdout.take() {
        let max = cap.stdout_max;
        std::thread::spawn(move || {
            let _ = otx.send(read_capped(o, max));
        });
    }
    let (etx, erx) = mpsc::channel();
    if let Some(e) = child.stderr.take() {
        let max = cap.stderr_max;
        std::thread::spawn(move || {
            let _ = etx.send(read_capped(e, max));
        });
    }
    let pidfd = pidfd_open(pid);
    let deadline = t0 + cap.within;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data the kernel fills in.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let mut timed_out = false;
    loop {
        // SAFETY: wait4 on our own child with valid status and rusage pointers; it is reaped
        // here, never through std's Child (whose drop does not wait).
        let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid as libc::pid_t {
            break;
        }
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            let _ = child.kill();
            return Err(e);
        }
        if Instant::now() >= deadline && !timed_out {
            timed_out = true;
            if leads_group {
                // SAFETY: SIGKILL to the group our child leads (it is not reaped yet, so the
                // group id is still its own).
                unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
            }
            let _ = child.kill();
            continue;
        }
        wait_readable(
            pidfd.as_ref(),
            if timed_out {
                Instant::now() + POLL
            } else {
                deadline
            },
        );
    }
    let wall_ns = t0.elapsed().as_nanos() as u64;
    // A grandchild may hold the pipes open: the readers get a bound, then are left behind.
    let (stdout, stdout_over) = orx.recv_timeout(READERS_WITHIN).unwrap_or_default();
    let (stderr, _) = erx.recv_timeout(READERS_WITHIN).unwrap_or_default();
    if timed_out {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "did not finish within {:.0} s and was killed",
                cap.within.as_secs_f64()
            ),
        ));
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    Ok(Captured {
        status: ExitStatus::from_raw(status),
        stdout,
        stdout_over,
        stderr,
        cpu_ns: tv(ru.ru_utime) + tv(ru.ru_stime),
        wall_ns,
    })
}

// ---------------------------------------------------------------------------------------
// Supervised children

/// How to start a supervised child.
pub struct Spec {
    what: String,
    cmd: Command,
    cpus: Option<Vec<u32>>,
    group: bool,
    keep: &'static [&'static str],
    grace: Duration,
    stdin: bool,
}

impl Spec {
    /// `what` names it in messages ("server", "contender 'nginx'").
    pub fn new(what: impl Into<String>, cmd: Command) -> Spec {
        Spec {
            what: what.into(),
            cmd,
            cpus: None,
            group: false,
            keep: &[],
            grace: STOP_GRACE,
            stdin: false,
        }
    }

    /// Gives it a stdin pipe that ringside writes to ([`Child::send_line`]); closed when the
    /// child is stopped or dropped, so a child that watches its stdin (a remote `ringside` over
    /// SSH) sees EOF when ringside lets go of it or dies.
    pub fn stdin_piped(mut self) -> Spec {
        self.stdin = true;
        self
    }

    /// Confined to `cpus` from before exec (every thread and process it makes inherits them).
    pub fn cpus(mut self, cpus: &[u32]) -> Spec {
        self.cpus = Some(cpus.to_vec());
        self
    }

    /// In a process group of its own, stopped as a group and guarded (see the module docs).
    pub fn own_group(mut self) -> Spec {
        self.group = true;
        self
    }

    /// Reads stdout, keeping the last line that starts with each prefix; without it stdout
    /// goes to /dev/null.
    pub fn keep_lines(mut self, prefixes: &'static [&'static str]) -> Spec {
        self.keep = prefixes;
        self
    }

    /// Time between SIGTERM and SIGKILL when stopped (also on drop).
    pub fn grace(mut self, grace: Duration) -> Spec {
        self.grace = grace;
        self
    }

    /// Starts it (stdin closed, stderr read into a bounded tail).
    pub fn spawn(self) -> io::Result<Child> {
        let Spec {
            what,
            mut cmd,
            cpus,
            group,
            keep,
            grace,
            stdin,
        } = self;
        cmd.stdin(if stdin { Stdio::piped() } else { Stdio::null() })
            .stdout(if keep.is_empty() {
                Stdio::null()
            } else {
                Stdio::piped()
            })
            .stderr(Stdio::piped());
        // The guard starts first, so that no moment has the group unguarded once it exists.
        let mut guard = if group {
            cmd.process_group(0);
            Some(Guard::start()?)
        } else {
            None
        };
        arm(&mut cmd, cpus.as_deref())?;
        let mut proc_ = spawn_armed(cmd)?;
        let pid = proc_.id();
        let pgid = group.then_some(pid as i32);
        let stdin = proc_.stdin.take();
        if let (Some(g), Some(pgid)) = (guard.as_mut(), pgid) {
            g.watch(pgid);
        }
        let tail = Arc::new((Mutex::new(Tail::default()), Condvar::new()));
        let stderr_reader = proc_.stderr.take().map(|e| {
            let tail = tail.clone();
            std::thread::spawn(move || read_stderr(e, tail))
        });
        let lines = Arc::new((Mutex::new(Lines::default()), Condvar::new()));
        let stdout_reader = proc_.stdout.take().map(|o| {
            let lines = lines.clone();
            std::thread::spawn(move || read_lines(o, keep, lines))
        });
        if stdout_reader.is_none() {
            lock(&lines.0).eof = true;
        }
        Ok(Child {
            what,
            pidfd: pidfd_open(pid),
            proc_,
            pgid,
            guard,
            tail,
            lines,
            readers: [stderr_reader, stdout_reader],
            grace,
            stdin,
            status: None,
            stopped: None,
        })
    }
}

/// Why a child did not become ready.
#[derive(Debug)]
pub enum NotReady {
    /// It exited first.
    Exited(ExitStatus),
    /// It closed stdout without the awaited line (and exited, if it has).
    ClosedStdout(Option<ExitStatus>),
    /// Not ready within the bound.
    TimedOut(Duration),
}

/// What a child is waited for.
#[derive(Clone, Copy, Debug)]
pub enum Ready<'a> {
    /// A stdout line starting with this prefix (one of [`Spec::keep_lines`]) followed by the
    /// address it serves on (`listening on 127.0.0.1:4242`).
    Line(&'a str),
    /// This address accepts a TCP connection.
    Accepts(SocketAddr),
}

/// How a stop ended.
#[derive(Clone, Copy, Debug)]
pub struct Stopped {
    /// The child's exit status (`None`: it could not be reaped).
    pub status: Option<ExitStatus>,
    /// It (or its group) outlived the grace period and was killed.
    pub killed: bool,
}

/// A started child, stopped on drop.
pub struct Child {
    what: String,
    proc_: std::process::Child,
    pidfd: Option<OwnedFd>,
    pgid: Option<i32>,
    guard: Option<Guard>,
    tail: Arc<(Mutex<Tail>, Condvar)>,
    lines: Arc<(Mutex<Lines>, Condvar)>,
    readers: [Option<JoinHandle<()>>; 2],
    grace: Duration,
    /// Its stdin, when [`Spec::stdin_piped`].
    stdin: Option<std::process::ChildStdin>,
    /// Set once reaped.
    status: Option<ExitStatus>,
    /// Set once stopped.
    stopped: Option<Stopped>,
}

impl Child {
    pub fn pid(&self) -> u32 {
        self.proc_.id()
    }

    /// Its process group, when it has one of its own.
    pub fn pgid(&self) -> Option<i32> {
        self.pgid
    }

    /// What it is, as said in messages.
    pub fn what(&self) -> &str {
        &self.what
    }

    /// Every live process of its group (only itself without a group of its own).
    pub fn pids(&self) -> Vec<u32> {
        match self.pgid {
            Some(g) => group_members(g),
            None => vec![self.pid()],
        }
    }

    /// Its exit status once it has ended (reaping it), `None` while it runs.
    pub fn try_exit(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.proc_.try_wait().ok().flatten();
        }
        self.status
    }

    /// Its exit status once it has ended, without reaping it (usable from `&self`).
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.status.or_else(|| peek_exit(self.pid()))
    }

    /// Whether it ended saying its model is unavailable ([`EXIT_UNAVAILABLE`]).
    pub fn said_unavailable(&self) -> bool {
        self.exit_status()
            .is_some_and(|s| s.code() == Some(EXIT_UNAVAILABLE))
    }

    /// Whether a line starting with `prefix` was dropped for being over
    /// [`STDOUT_LINE_BYTES`].
    pub fn line_overlong(&self, prefix: &str) -> bool {
        lock(&self.lines.0).overlong.contains(&prefix)
    }

    /// The last stdout line that started with `prefix` (one of [`Spec::keep_lines`]), without
    /// the prefix.
    pub fn line(&self, prefix: &str) -> Option<String> {
        lock(&self.lines.0)
            .kept
            .iter()
            .find(|(p, _)| *p == prefix)
            .map(|(_, l)| l.clone())
    }

    /// The last `n` lines it wrote to stderr so far. Once it has ended, waits (bounded) for
    /// the reader to take in what it wrote last.
    pub fn stderr_tail(&self, n: usize) -> String {
        if self.exit_status().is_some() {
            let (m, cv) = &*self.tail;
            let until = Instant::now() + READERS_WITHIN;
            let mut t = lock(m);
            while !t.eof {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                t = cv
                    .wait_timeout(t, left)
                    .map_or_else(|p| p.into_inner().0, |r| r.0);
            }
        }
        lock(&self.tail.0).lines(n)
    }

    /// Waits up to `within` for `ready`, watching for the child's exit. `Ready::Line` returns
    /// the address on the line, `Ready::Accepts` returns `None`.
    pub fn wait_ready(
        &mut self,
        ready: Ready<'_>,
        within: Duration,
    ) -> Result<Option<SocketAddr>, NotReady> {
        let deadline = Instant::now() + within;
        loop {
            match ready {
                Ready::Line(prefix) => {
                    if let Some(a) = self.line(prefix).and_then(|l| l.trim().parse().ok()) {
                        return Ok(Some(a));
                    }
                }
                Ready::Accepts(addr) => {
                    if TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT).is_ok() {
                        return Ok(None);
                    }
                }
            }
            if let Some(st) = self.try_exit() {
                return Err(NotReady::Exited(st));
            }
            if matches!(ready, Ready::Line(_)) && lock(&self.lines.0).eof {
                let st = self.wait_exit(Instant::now() + READERS_WITHIN);
                return Err(NotReady::ClosedStdout(st));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(NotReady::TimedOut(within));
            }
            let step = deadline.saturating_duration_since(now).min(POLL);
            match ready {
                Ready::Line(_) => {
                    let (m, cv) = &*self.lines;
                    let g = lock(m);
                    let _ = cv.wait_timeout(g, step);
                }
                Ready::Accepts(_) => std::thread::sleep(step),
            }
        }
    }

    /// Waits up to `within` for a stdout line starting with `prefix` (one of
    /// [`Spec::keep_lines`]), watching for the child's exit; the rest of the line.
    pub fn wait_line(&mut self, prefix: &str, within: Duration) -> Result<String, NotReady> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(l) = self.line(prefix) {
                return Ok(l);
            }
            if let Some(st) = self.try_exit() {
                // Its last lines may still be in the reader's hands.
                self.join_readers();
                return match self.line(prefix) {
                    Some(l) => Ok(l),
                    None => Err(NotReady::Exited(st)),
                };
            }
            if lock(&self.lines.0).eof {
                let st = self.wait_exit(Instant::now() + READERS_WITHIN);
                return Err(NotReady::ClosedStdout(st));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(NotReady::TimedOut(within));
            }
            let step = deadline.saturating_duration_since(now).min(POLL);
            let (m, cv) = &*self.lines;
            let g = lock(m);
            if g.kept.iter().any(|(p, _)| *p == prefix) || g.eof {
                continue;
            }
            let _ = cv.wait_timeout(g, step);
        }
    }

    /// Writes `line` and a newline to its stdin ([`Spec::stdin_piped`]).
    pub fn send_line(&mut self, line: &str) -> io::Result<()> {
        let Some(w) = self.stdin.as_mut() else {
            return Err(io::Error::new(io::ErrorKind::NotConnected, "no stdin pipe"));
        };
        w.write_all(format!("{line}\n").as_bytes())?;
        w.flush()
    }

    /// Closes its stdin (EOF for a child that watches it).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits up to `within` for it to exit on its own (reaping it, and reading the rest of its
    /// output); its status if it has.
    pub fn wait_exit_within(&mut self, within: Duration) -> Option<ExitStatus> {
        let st = self.wait_exit(Instant::now() + within);
        if st.is_some() {
            self.join_readers();
        }
        st
    }

    /// Waits for it to end until `until`; its status if it has.
    fn wait_exit(&mut self, until: Instant) -> Option<ExitStatus> {
        loop {
            if let Some(st) = self.try_exit() {
                return Some(st);
            }
            if Instant::now() >= until {
                return None;
            }
            wait_readable(self.pidfd.as_ref(), until);
        }
    }

    fn signal(&self, sig: libc::c_int) {
        match self.pgid {
            // SAFETY: kill(2) with a negative pid signals our child's process group.
            Some(g) => unsafe {
                libc::kill(-g, sig);
            },
            // Only while not reaped: a reaped pid may belong to another process.
            // SAFETY: kill(2) on our own child, not yet reaped.
            None if self.status.is_none() => unsafe {
                libc::kill(self.pid() as libc::pid_t, sig);
            },
            None => {}
        }
    }

    /// Stops it with the grace period of its [`Spec`].
    pub fn stop(&mut self) -> Stopped {
        self.stop_within(self.grace)
    }

    /// SIGTERM (its group), SIGKILL after `grace` if it or its group still runs, reap, wait
    /// (bounded) for the group to empty, collect the rest of its output. Idempotent.
    pub fn stop_within(&mut self, grace: Duration) -> Stopped {
        if let Some(s) = self.stopped {
            return s;
        }
        self.stdin = None;
        let until = Instant::now() + grace;
        let mut killed = false;
        if self.try_exit().is_none() || self.pgid.is_some() {
            self.signal(libc::SIGTERM);
        }
        let mut status = self.wait_exit(until);
        if let Some(g) = self.pgid {
            while !group_members(g).is_empty() && Instant::now() < until {
                std::thread::sleep(POLL);
            }
        }
        let group_left = self.pgid.is_some_and(|g| !group_members(g).is_empty());
        if status.is_none() || group_left {
            killed = true;
            self.signal(libc::SIGKILL);
            if status.is_none() {
                status = self.proc_.wait().ok();
                self.status = status;
            }
            if let Some(g) = self.pgid {
                let until = Instant::now() + GROUP_EMPTY_WITHIN;
                while !group_members(g).is_empty() && Instant::now() < until {
                    std::thread::sleep(POLL);
                }
            }
        }
        self.join_readers();
        // The group is gone: the guard has nothing left to watch.
        self.guard = None;
        let s = Stopped { status, killed };
        self.stopped = Some(s);
        s
    }

    fn join_readers(&mut self) {
        let until = Instant::now() + READERS_WITHIN;
        for r in &mut self.readers {
            while r.as_ref().is_some_and(|h| !h.is_finished()) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            if r.as_ref().is_some_and(|h| h.is_finished()) {
                if let Some(h) = r.take() {
                    let _ = h.join();
                }
            }
        }
    }
}

impl std::fmt::Debug for Child {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Child")
            .field("what", &self.what)
            .field("pid", &self.pid())
            .field("pgid", &self.pgid)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A process outside a child's group that kills the whole group once ringside is gone: it
/// reads the group id from a pipe whose other end only ringside holds, then waits for EOF.
struct Guard {
    proc_: std::process::Child,
    pipe: Option<OwnedFd>,
}

impl Guard {
    fn start() -> io::Result<Guard> {
        let (r, w) = pipe_cloexec()?;
        let mut c = Command::new("/bin/sh");
        // The terminal's Ctrl-C goes to ringside's process group; the guard has its own and
        // ignores the rest, so only SIGKILL (from us) ends it early.
        c.arg("-c")
            .arg("trap '' INT TERM HUP QUIT; read g || exit 0; read x; kill -9 -\"$g\" 2>/dev/null")
            .stdin(Stdio::from(r))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .env_remove(OWNER_ENV)
            .process_group(0);
        // Not armed: it must outlive ringside.
        let proc_ = c.spawn()?;
        Ok(Guard {
            proc_,
            pipe: Some(w),
        })
    }

    /// Tells the guard which group to kill.
    fn watch(&mut self, pgid: i32) {
        if let Some(w) = &self.pipe {
            let line = format!("{pgid}\n");
            // SAFETY: writes our own buffer to our own pipe fd.
            unsafe { libc::write(w.as_raw_fd(), line.as_ptr().cast(), line.len()) };
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // Killed before the pipe closes, so that it never signals a group id that may by now
        // belong to someone else.
        let _ = self.proc_.kill();
        let _ = self.proc_.wait();
        self.pipe = None;
    }
}

/// Writes one line to stdout and flushes it (a child announcing readiness).
pub fn announce(line: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }

    #[test]
    fn owner_marks_name_a_live_process_by_pid_and_start_time() {
        let me = owner_token();
        assert!(owner_alive(me), "{me}");
        let (pid, start) = parse_token(me).unwrap();
        assert_eq!(pid, std::process::id());
        assert!(
            !owner_alive(&format!("{pid}:{}", start + 1)),
            "another start"
        );
        assert!(!owner_alive("garbage"));
    }

    #[test]
    fn children_carry_the_owner_mark() {
        let mut c = Spec::new("t", sh("echo \"owner $RINGSIDE_OWNER\""))
            .keep_lines(&["owner "])
            .spawn()
            .unwrap();
        let _ = c.wait_exit(Instant::now() + Duration::from_secs(5));
        c.stop();
        assert_eq!(c.line("owner ").as_deref(), Some(owner_token()));
    }

    #[test]
    fn stdout_lines_and_stderr_are_bounded() {
        // A 1 MiB line without a newline, then a kept line; 1 MiB of stderr.
        let mut c = Spec::new(
            "t",
            sh(
                "head -c 1048576 /dev/zero | tr '\\000' x; echo; echo 'ready at 1'; \
                head -c 1048576 /dev/zero | tr '\\000' y >&2; echo >&2; echo last >&2",
            ),
        )
        .keep_lines(&["ready at "])
        .spawn()
        .unwrap();
        let st = c.wait_exit(Instant::now() + Duration::from_secs(10));
        assert!(st.is_some_and(|s| s.success()));
        assert_eq!(c.line("ready at ").as_deref(), Some("1"));
        let t = c.stderr_tail(1);
        assert_eq!(t, "last");
        assert!(lock(&c.tail.0).bytes.len() <= STDERR_TAIL_BYTES);
    }

    /// Issue 28 item 17: a stopped process is told apart (a SIGSTOPped server's stop failure
    /// then names its state, not only the missed SIGTERM).
    #[test]
    fn a_stopped_process_is_seen_as_stopped() {
        let mut c = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = c.id();
        assert!(!is_stopped(pid));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
        let t0 = Instant::now();
        while !is_stopped(pid) && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let seen = is_stopped(pid);
        let _ = c.kill();
        let _ = c.wait();
        assert!(seen);
    }

    /// Issue 28 item 17: a kept line over the cap is dropped and said to be (a remote server's
    /// 70 KB figures line read "ended without reporting its figures").
    #[test]
    fn a_kept_line_over_the_cap_is_said_to_be_too_long() {
        let mut c = Spec::new(
            "t",
            sh("printf 'figures '; head -c 70000 /dev/zero | tr '\\000' 1; echo; echo 'ready at 2'"),
        )
        .keep_lines(&["figures ", "ready at "])
        .spawn()
        .unwrap();
        // Reaped and its output read to the end (the readers joined): a bare `wait_exit`
        // raced the reader thread, and lost under load.
        let st = c.wait_exit_within(Duration::from_secs(10));
        assert!(st.is_some_and(|s| s.success()));
        assert_eq!(c.line("ready at ").as_deref(), Some("2"));
        assert_eq!(c.line("figures "), None);
        assert!(c.line_overlong("figures "));
        assert!(!c.line_overlong("ready at "));
    }

    #[test]
    fn readiness_fails_on_exit_and_on_time_and_unavailable_is_the_exit_code() {
        let mut c = Spec::new(
            "t",
            sh("echo 'error: unavailable: no such thing' >&2; exit 69"),
        )
        .keep_lines(&["listening on "])
        .spawn()
        .unwrap();
        match c.wait_ready(Ready::Line("listening on "), Duration::from_secs(10)) {
            Err(NotReady::Exited(s) | NotReady::ClosedStdout(Some(s))) => {
                assert_eq!(s.code(), Some(EXIT_UNAVAILABLE))
            }
            other => panic!("{other:?}"),
        }
        assert!(c.said_unavailable());
        assert!(c.stderr_tail(1).contains("no such thing"));
        // The word on stderr alone is not the exit code.
        let mut c = Spec::new("t", sh("echo 'error: unavailable: x' >&2; exit 1"))
            .spawn()
            .unwrap();
        let _ = c.wait_exit(Instant::now() + Duration::from_secs(5));
        assert!(!c.said_unavailable());
        let mut c = Spec::new("t", sh("exec sleep 30"))
            .keep_lines(&["listening on "])
            .grace(Duration::from_millis(100))
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        assert!(matches!(
            c.wait_ready(Ready::Line("listening on "), Duration::from_millis(200)),
            Err(NotReady::TimedOut(_))
        ));
        assert!(t0.elapsed() < Duration::from_secs(5));
        let s = c.stop();
        assert!(s.status.is_some());
        assert!(!is_live(c.pid()));
    }

    #[test]
    fn a_group_is_stopped_whole_and_one_that_ignores_sigterm_is_killed() {
        let dir = std::env::temp_dir().join(format!("ringside-child-test-{}", std::process::id()));
        let _ = fs::create_dir(&dir);
        let pidfile = dir.join("pid");
        let mut c = Spec::new(
            "t",
            sh(&format!(
                "trap '' TERM; sh -c 'trap \"\" TERM; exec sleep 30' & echo $! > {}; wait",
                pidfile.display()
            )),
        )
        .own_group()
        .grace(Duration::from_millis(200))
        .spawn()
        .unwrap();
        let t0 = Instant::now();
        let grandchild: u32 = loop {
            if let Some(p) = fs::read_to_string(&pidfile)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                break p;
            }
            assert!(t0.elapsed() < Duration::from_secs(5));
            std::thread::sleep(POLL);
        };
        assert_eq!(c.pgid(), Some(c.pid() as i32));
        assert!(c.pids().contains(&grandchild));
        let s = c.stop();
        assert!(s.killed, "it ignored SIGTERM");
        assert!(!is_live(grandchild), "the grandchild went with the group");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn captured_output_is_capped_and_a_runaway_is_killed() {
        let cap = Capture {
            stdout_max: 1000,
            stderr_max: 10,
            within: Duration::from_secs(10),
            cpus: None,
        };
        let mut seen = 0;
        let r = run_captured(
            sh("head -c 10000000 /dev/zero; echo 0123456789abcdef >&2"),
            &cap,
            |p| seen = p,
        )
        .unwrap();
        assert!(seen > 0);
        assert!(r.status.success());
        assert_eq!(r.stdout.len(), 1000);
        assert!(r.stdout_over);
        assert_eq!(r.stderr, b"0123456789");
        let cap = Capture {
            within: Duration::from_millis(300),
            ..cap
        };
        let t0 = Instant::now();
        let e = run_captured(sh("exec sleep 30"), &cap, |_| {}).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(t0.elapsed() < Duration::from_secs(5));
    }
}
