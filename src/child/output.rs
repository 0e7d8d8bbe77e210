//! Bounded output: a child's stderr tail and stdout lines, and tools run to completion
//! with their output captured under caps.

use super::*;

/// The most recent bytes a child wrote to stderr, bounded to [`STDERR_TAIL_BYTES`].
#[derive(Debug, Default)]
pub(super) struct Tail {
    pub(super) bytes: VecDeque<u8>,
    pub(super) eof: bool,
}

impl Tail {
    pub(super) fn push(&mut self, data: &[u8]) {
        self.bytes.extend(data);
        let excess = self.bytes.len().saturating_sub(STDERR_TAIL_BYTES);
        self.bytes.drain(..excess);
    }

    /// The last `n` lines.
    pub(super) fn lines(&self, n: usize) -> String {
        let (a, b) = self.bytes.as_slices();
        let text = String::from_utf8_lossy(&[a, b].concat()).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(super) fn read_stderr(mut from: impl Read, tail: Arc<(Mutex<Tail>, Condvar)>) {
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
pub(super) struct Lines {
    pub(super) kept: Vec<(&'static str, String)>,
    /// Prefixes of lines dropped for being over [`STDOUT_LINE_BYTES`].
    pub(super) overlong: Vec<&'static str>,
    pub(super) eof: bool,
}

pub(super) fn read_lines(
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
pub(super) fn read_capped(mut from: impl Read, max: usize) -> (Vec<u8>, bool) {
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
pub(crate) struct Capture {
    /// Bytes of stdout kept; more is read and dropped, and said ([`Captured::stdout_over`]).
    pub(crate) stdout_max: usize,
    /// Bytes of stderr kept (the first ones).
    pub(crate) stderr_max: usize,
    /// How long the command may run before it is killed.
    pub(crate) within: Duration,
    /// CPUs it may run on.
    pub(crate) cpus: Option<Vec<u32>>,
}

/// What a command run to completion left.
#[derive(Debug)]
pub(crate) struct Captured {
    pub(crate) status: ExitStatus,
    pub(crate) stdout: Vec<u8>,
    /// More than `stdout_max` bytes were written to stdout.
    pub(crate) stdout_over: bool,
    pub(crate) stderr: Vec<u8>,
    /// The command's own CPU time (user + sys, from wait4), ns.
    pub(crate) cpu_ns: u64,
    /// Start to exit, ns.
    pub(crate) wall_ns: u64,
}

/// Runs `cmd` (stdin closed, stdout and stderr read by threads with caps, so a command that
/// prints without end neither blocks on a full pipe nor makes ringside allocate what it
/// prints) as a child that dies with ringside; kills it after `cap.within`, and its whole
/// process group when `cmd` was given one of its own (`process_group(0)`: what it started
/// goes with it). `started` gets its pid once it runs (for a signal handler that may have to
/// stop it).
pub(crate) fn run_captured(
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
    let leads_group = pid_of(pid).filter(|&p| process::getpgid(Some(p)) == Ok(p));
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
        // raw: rustix's waitpid passes no rusage (the child's CPU time comes from it).
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
            if let Some(group) = leads_group {
                // SIGKILL to the group our child leads (it is not reaped yet, so the group id
                // is still its own).
                let _ = process::kill_process_group(group, Signal::KILL);
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
