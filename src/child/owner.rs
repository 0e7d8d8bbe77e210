//! Owner marks: which ringside started a process, and the sweep of what a ringside that
//! is gone left running.

use super::*;

/// This process's owner mark, `PID:START:BOOT` (START: its start time in clock ticks after
/// boot, field 22 of /proc/PID/stat, so that a reused pid is not mistaken for it; BOOT: this
/// boot's id, so that a mark from before a reboot is nobody's).
pub(crate) fn owner_token() -> &'static str {
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
pub(super) fn boot_id() -> &'static str {
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
pub(crate) fn carries_our_mark(pid: u32) -> bool {
    owner_of(pid).is_some_and(|o| o == owner_token())
}

/// When this ringside started, in /proc's clock ticks since boot (stat field 22).
pub(crate) fn our_start_ticks() -> u64 {
    parse_token(owner_token()).map_or(0, |t| t.1)
}

/// `(pid, start)` of an owner mark (`PID:START`, or `PID:START:BOOT`).
pub(crate) fn parse_token(token: &str) -> Option<(u32, u64)> {
    let mut f = token.trim().split(':');
    let (pid, start) = (f.next()?, f.next()?);
    if f.clone().count() > 1 {
        return None;
    }
    Some((pid.parse().ok()?, start.parse().ok()?))
}

/// Whether an owner mark was made in this boot (a mark without one, from an older ringside,
/// is not).
pub(super) fn of_this_boot(token: &str) -> bool {
    token.trim().split(':').nth(2) == Some(boot_id())
}

/// The real uid a process runs as (`Uid:` of /proc/PID/status).
pub(super) fn uid_of(pid: u32) -> Option<u32> {
    let s = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Whether the ringside an owner mark names is still running (same pid, same start time).
pub(crate) fn owner_alive(token: &str) -> bool {
    parse_token(token)
        .is_some_and(|(pid, start)| Stat::of(pid).is_some_and(|s| s.start == start && s.live()))
}

/// The fields of /proc/PID/stat ringside reads.
#[derive(Clone, Copy, Debug)]
pub(super) struct Stat {
    pub(super) state: char,
    pub(super) pgrp: i32,
    pub(super) session: i32,
    pub(super) start: u64,
}

impl Stat {
    /// Fields are counted after the last ')' (the command name may hold spaces and ')').
    pub(super) fn of(pid: u32) -> Option<Stat> {
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
    pub(super) fn live(&self) -> bool {
        self.state != 'Z' && self.state != 'X'
    }
}

/// Whether `pid` is stopped (state T or t: SIGSTOP, SIGTSTP, a debugger): it cannot act on a
/// signal until continued.
pub(crate) fn is_stopped(pid: u32) -> bool {
    Stat::of(pid).is_some_and(|s| matches!(s.state, 'T' | 't'))
}

/// Whether `pid` runs (not a zombie).
pub(crate) fn is_live(pid: u32) -> bool {
    Stat::of(pid).is_some_and(|s| s.live())
}

pub(super) fn proc_pids() -> Vec<u32> {
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
pub(crate) fn stop_our_daemons() -> Vec<String> {
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
        let name = named(pid);
        // SIGKILL to a process carrying our own owner mark.
        if pid_of(pid).is_some_and(|p| process::kill_process(p, Signal::KILL).is_ok()) {
            stopped.push(name);
        }
    }
    stopped
}

/// "PID (COMM)": a process as a stopped one is named.
pub(super) fn named(pid: u32) -> String {
    let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    format!("{pid} ({})", comm.trim())
}

/// Live (non-zombie) processes, ascending by pid.
pub(crate) fn live_pids() -> Vec<u32> {
    let mut v: Vec<u32> = proc_pids().into_iter().filter(|&p| is_live(p)).collect();
    v.sort_unstable();
    v
}

/// Live (non-zombie) processes of process group `pgid`, ascending by pid.
pub(crate) fn group_members(pgid: i32) -> Vec<u32> {
    group_where(pgid, Stat::live)
}

/// Every process of process group `pgid`, zombies included, ascending by pid: a zombie's CPU
/// clock still reads its whole life until its parent waits for it (and then the parent's
/// `cutime`/`cstime` carry it), so a reading over these loses no CPU of a worker that
/// ended.
pub(crate) fn group_processes(pgid: i32) -> Vec<u32> {
    group_where(pgid, |s| s.state != 'X')
}

/// The processes of group `pgid` whose stat passes `keep`, ascending by pid.
fn group_where(pgid: i32, keep: impl Fn(&Stat) -> bool) -> Vec<u32> {
    let mut v: Vec<u32> = proc_pids()
        .into_iter()
        .filter(|&p| Stat::of(p).is_some_and(|s| s.pgrp == pgid && keep(&s)))
        .collect();
    v.sort_unstable();
    v
}

/// The owner mark in a process's environment, if it has one (only our own processes', or
/// every process's as root, can be read).
pub(super) fn owner_of(pid: u32) -> Option<String> {
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
pub(crate) fn sweep_stale() -> Vec<String> {
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
        if uid_of(pid) != Some(process::getuid().as_raw()) {
            continue;
        }
        let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let sent = match &pidfd {
            Some(fd) => process::pidfd_send_signal(fd, Signal::KILL).is_ok(),
            // kill(2) on a pid just checked.
            None => pid_of(pid).is_some_and(|p| process::kill_process(p, Signal::KILL).is_ok()),
        };
        if !sent {
            continue;
        }
        if let Some(group) = pid_of(pid).filter(|_| st.pgrp == pid as i32) {
            // As above, on the group it leads.
            let _ = process::kill_process_group(group, Signal::KILL);
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
