//! Spawning: every child forked from one long-lived thread, armed between fork and exec.

use super::*;

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
/// the check that the parent is still this process, and the CPU affinity when `cpus` is given.
pub(super) fn arm(cmd: &mut Command, cpus: Option<&[u32]>) -> io::Result<()> {
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

/// The affinity set of `cpus`: the one place a CPU list becomes a `cpu_set_t` (a child before
/// its exec here, threads in `measure::pin`). Empty, or a CPU past `CPU_SETSIZE`, is an error.
pub(crate) fn cpu_set(cpus: &[u32]) -> io::Result<libc::cpu_set_t> {
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
pub(crate) fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two fds into the array on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: two fresh fds we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

pub(super) fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a fresh fd we own (pidfds are close-on-exec).
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
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
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut p, 1, ms) };
        }
        None => std::thread::sleep(left.min(POLL)),
    }
}

/// The exit status of a child that has ended, without reaping it (`waitid` with WNOWAIT).
pub(super) fn peek_exit(pid: u32) -> Option<ExitStatus> {
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
