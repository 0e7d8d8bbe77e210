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
//! - **Cgroup** ([`Spec::in_cgroup`], contenders): the child enters a cgroup of its own
//!   ([`cgroup::Cgroup`]) between fork and exec, so that everything it starts is inside, out of
//!   its process group or session or not; the cgroup's CPU is the contender's and its members
//!   are killed when the cgroup is dropped.
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

use rustix::process::{self, Pid, Signal};
use std::collections::VecDeque;
use std::fs;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
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
pub(crate) const OWNER_ENV: &str = "RINGSIDE_OWNER";

/// Bytes of a child's stderr kept (the most recent ones).
pub(crate) const STDERR_TAIL_BYTES: usize = 16 * 1024;

/// Longest stdout line kept; a longer one is dropped whole.
pub(crate) const STDOUT_LINE_BYTES: usize = 64 * 1024;

/// Default time between SIGTERM and SIGKILL.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(2);

/// Interval between two checks while waiting (for a port, a group to empty).
const POLL: Duration = Duration::from_millis(20);
/// Longest single connect attempt while waiting for a port.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(200);
/// How long the rest of a group (not our children) has to disappear after SIGKILL.
const GROUP_EMPTY_WITHIN: Duration = Duration::from_secs(1);
/// How long the output readers have to reach EOF once the child has ended.
const READERS_WITHIN: Duration = Duration::from_millis(500);

pub(crate) mod cgroup;
mod output;
mod owner;
mod spawn;

pub(crate) use output::*;
pub(crate) use owner::*;
pub(crate) use spawn::*;

/// How to start a supervised child.
pub(crate) struct Spec {
    what: String,
    cmd: Command,
    cpus: Option<Vec<u32>>,
    group: bool,
    keep: &'static [&'static str],
    grace: Duration,
    stdin: bool,
    /// The `cgroup.procs` fd of the cgroup it enters before exec.
    cgroup: Option<std::os::fd::RawFd>,
}

impl Spec {
    /// `what` names it in messages ("server", "contender 'nginx'").
    pub(crate) fn new(what: impl Into<String>, cmd: Command) -> Spec {
        Spec {
            what: what.into(),
            cmd,
            cpus: None,
            group: false,
            keep: &[],
            grace: STOP_GRACE,
            stdin: false,
            cgroup: None,
        }
    }

    /// Enters `cg` between fork and exec (a spawn fails if it cannot): every process it makes
    /// is in `cg` too. `cg` must outlive the spawn.
    pub(crate) fn in_cgroup(mut self, cg: &cgroup::Cgroup) -> Spec {
        self.cgroup = Some(cg.procs_fd());
        self
    }

    /// Gives it a stdin pipe that ringside writes to ([`Child::send_line`]); closed when the
    /// child is stopped or dropped, so a child that watches its stdin (a remote `ringside` over
    /// SSH) sees EOF when ringside lets go of it or dies.
    pub(crate) fn stdin_piped(mut self) -> Spec {
        self.stdin = true;
        self
    }

    /// Confined to `cpus` from before exec (every thread and process it makes inherits them).
    pub(crate) fn cpus(mut self, cpus: &[u32]) -> Spec {
        self.cpus = Some(cpus.to_vec());
        self
    }

    /// In a process group of its own, stopped as a group and guarded (see the module docs).
    pub(crate) fn own_group(mut self) -> Spec {
        self.group = true;
        self
    }

    /// Reads stdout, keeping the last line that starts with each prefix; without it stdout
    /// goes to /dev/null.
    pub(crate) fn keep_lines(mut self, prefixes: &'static [&'static str]) -> Spec {
        self.keep = prefixes;
        self
    }

    /// Time between SIGTERM and SIGKILL when stopped (also on drop).
    pub(crate) fn grace(mut self, grace: Duration) -> Spec {
        self.grace = grace;
        self
    }

    /// Starts it (stdin closed, stderr read into a bounded tail).
    pub(crate) fn spawn(self) -> io::Result<Child> {
        let Spec {
            what,
            mut cmd,
            cpus,
            group,
            keep,
            grace,
            stdin,
            cgroup,
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
        if let Some(fd) = cgroup {
            // SAFETY: `cgroup::enter` makes one raw write(2) to an fd held open by the caller's
            // `Cgroup` (close-on-exec: the server never holds it).
            unsafe {
                cmd.pre_exec(move || cgroup::enter(fd));
            }
        }
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
pub(crate) enum NotReady {
    /// It exited first.
    Exited(ExitStatus),
    /// It closed stdout without the awaited line (and exited, if it has).
    ClosedStdout(Option<ExitStatus>),
    /// Not ready within the bound.
    TimedOut(Duration),
}

/// What a child is waited for.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ready<'a> {
    /// A stdout line starting with this prefix (one of [`Spec::keep_lines`]) followed by the
    /// address it serves on (`listening on 127.0.0.1:4242`).
    Line(&'a str),
    /// This address accepts a TCP connection.
    Accepts(SocketAddr),
}

/// How a stop ended.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stopped {
    /// The child's exit status (`None`: it could not be reaped).
    pub(crate) status: Option<ExitStatus>,
    /// It (or its group) outlived the grace period and was killed.
    pub(crate) killed: bool,
}

/// A started child, stopped on drop.
pub(crate) struct Child {
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
    pub(crate) fn pid(&self) -> u32 {
        self.proc_.id()
    }

    /// Its process group, when it has one of its own.
    pub(crate) fn pgid(&self) -> Option<i32> {
        self.pgid
    }

    /// What it is, as said in messages.
    pub(crate) fn what(&self) -> &str {
        &self.what
    }

    /// Every live process of its group (only itself without a group of its own).
    pub(crate) fn pids(&self) -> Vec<u32> {
        match self.pgid {
            Some(g) => group_members(g),
            None => vec![self.pid()],
        }
    }

    /// Its exit status once it has ended (reaping it), `None` while it runs.
    pub(crate) fn try_exit(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.proc_.try_wait().ok().flatten();
        }
        self.status
    }

    /// Its exit status once it has ended, without reaping it (usable from `&self`).
    pub(crate) fn exit_status(&self) -> Option<ExitStatus> {
        self.status.or_else(|| peek_exit(self.pid()))
    }

    /// Whether it ended saying its model is unavailable ([`EXIT_UNAVAILABLE`]).
    pub(crate) fn said_unavailable(&self) -> bool {
        self.exit_status()
            .is_some_and(|s| s.code() == Some(EXIT_UNAVAILABLE))
    }

    /// Whether a line starting with `prefix` was dropped for being over
    /// [`STDOUT_LINE_BYTES`].
    pub(crate) fn line_overlong(&self, prefix: &str) -> bool {
        lock(&self.lines.0).overlong.contains(&prefix)
    }

    /// The last stdout line that started with `prefix` (one of [`Spec::keep_lines`]), without
    /// the prefix.
    pub(crate) fn line(&self, prefix: &str) -> Option<String> {
        lock(&self.lines.0)
            .kept
            .iter()
            .find(|(p, _)| *p == prefix)
            .map(|(_, l)| l.clone())
    }

    /// The last `n` lines it wrote to stderr so far. Once it has ended, waits (bounded) for
    /// the reader to take in what it wrote last.
    pub(crate) fn stderr_tail(&self, n: usize) -> String {
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
    pub(crate) fn wait_ready(
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
    pub(crate) fn wait_line(&mut self, prefix: &str, within: Duration) -> Result<String, NotReady> {
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
    pub(crate) fn send_line(&mut self, line: &str) -> io::Result<()> {
        let Some(w) = self.stdin.as_mut() else {
            return Err(io::Error::new(io::ErrorKind::NotConnected, "no stdin pipe"));
        };
        w.write_all(format!("{line}\n").as_bytes())?;
        w.flush()
    }

    /// Closes its stdin (EOF for a child that watches it).
    pub(crate) fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits up to `within` for it to exit on its own (reaping it, and reading the rest of its
    /// output); its status if it has.
    pub(crate) fn wait_exit_within(&mut self, within: Duration) -> Option<ExitStatus> {
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

    fn signal(&self, sig: Signal) {
        match self.pgid {
            // kill(2) with a negative pid: our child's process group.
            Some(g) => {
                if let Some(g) = pid_of(g) {
                    let _ = process::kill_process_group(g, sig);
                }
            }
            // Only while not reaped: a reaped pid may belong to another process.
            None if self.status.is_none() => {
                if let Some(p) = pid_of(self.pid()) {
                    let _ = process::kill_process(p, sig);
                }
            }
            None => {}
        }
    }

    /// Stops it with the grace period of its [`Spec`].
    pub(crate) fn stop(&mut self) -> Stopped {
        self.stop_within(self.grace)
    }

    /// SIGTERM (its group), SIGKILL after `grace` if it or its group still runs, reap, wait
    /// (bounded) for the group to empty, collect the rest of its output. Idempotent.
    pub(crate) fn stop_within(&mut self, grace: Duration) -> Stopped {
        if let Some(s) = self.stopped {
            return s;
        }
        self.stdin = None;
        let until = Instant::now() + grace;
        let mut killed = false;
        if self.try_exit().is_none() || self.pgid.is_some() {
            self.signal(Signal::TERM);
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
            self.signal(Signal::KILL);
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
        // Not armed: it must outlive ringside. It holds none of our fds but its pipe.
        // SAFETY: the closure makes only raw syscalls (see `spawn::arm`).
        unsafe {
            c.pre_exec(|| spawn::cloexec_above_stdio(1 << 16));
        }
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
            let _ = rustix::io::write(w, line.as_bytes());
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
pub(crate) fn announce(line: &str) -> io::Result<()> {
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

    /// An fd this process holds without close-on-exec (as one inherited from a parent is)
    /// does not reach a child: the child sees its stdio and nothing else of ours.
    #[test]
    fn children_start_without_our_fds() {
        let f = std::fs::File::open("/proc/self/status").unwrap();
        // SAFETY: a copy of an fd we own, numbered 700 or above (apart from any the shell
        // opens); the copy is closed below.
        let fd = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_DUPFD, 700) };
        assert!(fd >= 700, "{}", io::Error::last_os_error());
        // SAFETY: as above; F_DUPFD does not set FD_CLOEXEC, so the fd is inheritable.
        assert_eq!(
            unsafe { libc::fcntl(fd, libc::F_GETFD) } & libc::FD_CLOEXEC,
            0
        );
        let mut c = Spec::new("t", sh("echo \"fds $(ls /proc/$$/fd | tr '\\n' ' ')\""))
            .keep_lines(&["fds "])
            .spawn()
            .unwrap();
        let _ = c.wait_exit(Instant::now() + Duration::from_secs(5));
        c.stop();
        // SAFETY: closes the copy made above.
        unsafe { libc::close(fd) };
        let line = c.line("fds ").expect("the child's fd list");
        let fds: Vec<&str> = line.split_whitespace().collect();
        assert!(fds.contains(&"0") && fds.contains(&"1"), "{line}");
        assert!(
            !fds.contains(&fd.to_string().as_str()),
            "fd {fd} reached the child: {line}"
        );
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
        process::kill_process(pid_of(pid).unwrap(), Signal::STOP).unwrap();
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
