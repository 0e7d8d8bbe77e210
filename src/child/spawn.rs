//! Spawning: every child forked from one long-lived thread, armed between fork and exec.

use super::*;
use rustix::io::Errno;
use rustix::thread::CpuSet;

pub(super) type Job = (Command, mpsc::Sender<io::Result<std::process::Child>>);

/// The long-lived thread every child is forked from (`None`: it could not be started; spawns
/// then happen on the caller's thread).
pub(super) fn spawner() -> Option<&'static mpsc::Sender<Job>> {
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
/// the check that the parent is still this process, the CPU affinity when `cpus` is given,
/// and close-on-exec on every fd above 2, so that the child starts with its stdio alone
/// whatever this process inherited or holds (a server under test must not carry a parent's
/// fds: they count against its limit and keep the parent's sockets alive).
pub(super) fn arm(cmd: &mut Command, cpus: Option<&[u32]>) -> io::Result<()> {
    cmd.env(OWNER_ENV, owner_token());
    let set = cpus.map(cpu_set).transpose()?;
    let parent = process::getpid();
    let nofile = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(1 << 20);
    // SAFETY: the closure runs in the forked child before exec and makes only raw syscalls
    // (prctl, getppid, sched_setaffinity: rustix's linux_raw backend; close_range or fcntl:
    // libc's thin syscall wrappers; no allocation) on data copied before the fork:
    // async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            process::set_parent_process_death_signal(Some(Signal::KILL))?;
            // Died between fork and prctl: the signal will never come.
            if process::getppid() != Some(parent) {
                return Err(Errno::SRCH.into());
            }
            if let Some(set) = &set {
                rustix::thread::sched_setaffinity(None, set)?;
            }
            cloexec_above_stdio(nofile)
        });
    }
    Ok(())
}

/// Sets close-on-exec on every fd above 2: close_range(2) with CLOSE_RANGE_CLOEXEC (5.11),
/// else fcntl on each fd number under the soft RLIMIT_NOFILE `nofile` (read before the fork).
/// Raw syscalls only: it runs between fork and exec.
pub(super) fn cloexec_above_stdio(nofile: u64) -> io::Result<()> {
    // SAFETY: close_range and fcntl on fd numbers: no memory is passed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if r == 0 {
        return Ok(());
    }
    for fd in 3..nofile.min(i32::MAX as u64) as i32 {
        // SAFETY: as above; a number that is not an open fd fails with EBADF, ignored.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
    Ok(())
}

/// Spawns `cmd` marked and armed (see the module docs) from the spawner thread: a child that
/// dies with this process. For tools run to completion; servers use [`Spec`].
pub(crate) fn spawn(mut cmd: Command, cpus: Option<&[u32]>) -> io::Result<std::process::Child> {
    arm(&mut cmd, cpus)?;
    spawn_armed(cmd)
}

pub(super) fn spawn_armed(cmd: Command) -> io::Result<std::process::Child> {
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

/// The affinity set of `cpus`: the one place a CPU list becomes a CPU set (a child before its
/// exec here, threads in `measure::pin`). Empty, or a CPU past `CPU_SETSIZE`, is an error.
pub(crate) fn cpu_set(cpus: &[u32]) -> io::Result<CpuSet> {
    let mut set = CpuSet::new();
    if cpus.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "an empty CPU list",
        ));
    }
    for &c in cpus {
        if c as usize >= CpuSet::MAX_CPU {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {c} is beyond CPU_SETSIZE"),
            ));
        }
        set.set(c as usize);
    }
    Ok(set)
}

/// The CPUs task `tid` (0: the calling thread) may run on, ascending: the one place a CPU set
/// becomes a CPU list (`sched_getaffinity`: the environment probe, `measure::pin`,
/// `measure::cpu`).
pub(crate) fn affinity(tid: u32) -> io::Result<Vec<u32>> {
    let pid = match tid {
        0 => None,
        tid => Some(pid_of(tid).ok_or(Errno::SRCH)?),
    };
    let set = rustix::thread::sched_getaffinity(pid)?;
    Ok((0..CpuSet::MAX_CPU)
        .filter(|&c| set.is_set(c))
        .map(|c| c as u32)
        .collect())
}

/// A pipe, both ends close-on-exec: (read, write).
pub(crate) fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?)
}

pub(super) fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    // pidfds are close-on-exec.
    process::pidfd_open(pid_of(pid)?, process::PidfdFlags::empty()).ok()
}

/// A process (or thread, or group) id as a rustix [`Pid`]; `None` for 0, a negative id or one
/// beyond `pid_t`: no single process to name.
pub(crate) fn pid_of(id: impl TryInto<i32>) -> Option<Pid> {
    Pid::from_raw(id.try_into().ok().filter(|&id| id > 0)?)
}

/// Waits (in poll(2) on the pidfd, or in short sleeps without one) until the process may
/// have exited or `until` passes.
pub(super) fn wait_readable(pidfd: Option<&OwnedFd>, until: Instant) {
    let left = until.saturating_duration_since(Instant::now());
    match pidfd {
        Some(fd) => {
            let mut p = libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = left.as_millis().clamp(1, 1000) as libc::c_int;
            // raw: rustix's poll is ppoll(2), another syscall than poll(2).
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut p, 1, ms) };
        }
        None => std::thread::sleep(left.min(POLL)),
    }
}

/// The exit status of a child that has ended, without reaping it (`waitid` with WNOWAIT).
pub(super) fn peek_exit(pid: u32) -> Option<ExitStatus> {
    use process::WaitIdOptions as W;
    // WNOWAIT leaves it waitable; `None` while it has not ended (si_pid 0).
    let si = process::waitid(
        process::WaitId::Pid(pid_of(pid)?),
        W::EXITED | W::NOHANG | W::NOWAIT,
    )
    .ok()??;
    Some(match si.exit_status() {
        Some(code) => ExitStatus::from_raw((code & 0xff) << 8),
        None => ExitStatus::from_raw(si.terminating_signal().unwrap_or(0) & 0x7f),
    })
}
