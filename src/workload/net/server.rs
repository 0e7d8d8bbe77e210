//! A server under test as a child process: started pinned to one CPU, ready once it prints
//! `listening on ADDR`, stopped with SIGTERM, after which its optional final `counters <json>`
//! line is read. Its stderr is kept (bounded) so a failed cell can show its tail.

use crate::error::CaseError;
use crate::measure::Counters;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bytes of the server's stderr kept for the failure message.
const STDERR_TAIL: usize = 2048;

enum Line {
    Listening(SocketAddr),
    Counters(String),
}

/// A running server child.
pub struct Server {
    child: Child,
    lines: Receiver<Line>,
    stderr: Arc<Mutex<Vec<u8>>>,
    pub addr: SocketAddr,
}

impl Server {
    /// Starts `cmd` with its CPU affinity set to `cpus` before exec (so every thread it ever
    /// makes inherits it) and waits up to `ready_within` for `listening on ADDR`.
    pub fn start(
        mut cmd: Command,
        cpus: &[u32],
        ready_within: Duration,
    ) -> Result<Server, CaseError> {
        let mut set: libc::cpu_set_t = empty_cpu_set();
        for &c in cpus {
            if (c as usize) < libc::CPU_SETSIZE as usize {
                // SAFETY: c is below CPU_SETSIZE; the set is ours.
                unsafe { libc::CPU_SET(c as usize, &mut set) };
            }
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: the closure runs in the child between fork and exec and only makes the
        // sched_setaffinity syscall on data it owns (async-signal-safe).
        unsafe {
            cmd.pre_exec(move || {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| {
            CaseError::Failed(anyhow::anyhow!("cannot start {:?}: {e}", cmd.get_program()))
        })?;
        let (tx, rx) = mpsc::channel();
        let out = child.stdout.take().expect("piped stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                let msg = if let Some(a) = line.strip_prefix("listening on ") {
                    match a.trim().parse() {
                        Ok(a) => Line::Listening(a),
                        Err(_) => continue,
                    }
                } else if let Some(j) = line.strip_prefix("counters ") {
                    Line::Counters(j.to_string())
                } else {
                    continue;
                };
                if tx.send(msg).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut err = child.stderr.take().expect("piped stderr");
        let keep = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut k = keep.lock().unwrap_or_else(|p| p.into_inner());
                k.extend_from_slice(&buf[..n]);
                let over = k.len().saturating_sub(STDERR_TAIL);
                k.drain(..over);
            }
        });
        let deadline = Instant::now() + ready_within;
        let mut s = Server {
            child,
            lines: rx,
            stderr,
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
        };
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match s.lines.recv_timeout(left.min(Duration::from_millis(100))) {
                Ok(Line::Listening(a)) => {
                    s.addr = a;
                    return Ok(s);
                }
                Ok(Line::Counters(_)) => {}
                Err(RecvTimeoutError::Timeout) if left > Duration::ZERO => {
                    if let Ok(Some(st)) = s.child.try_wait() {
                        return Err(s.fail(&format!("server exited ({st}) before listening")));
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    let why =
                        format!("server did not print 'listening on' within {ready_within:?}");
                    return Err(s.kill_and_fail(&why));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let st = match s.child.wait() {
                        Ok(st) => st.to_string(),
                        Err(e) => e.to_string(),
                    };
                    let why = format!("server closed stdout before listening ({st})");
                    return Err(s.fail(&why));
                }
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// How it ended, if it has (`None`: still running).
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(None) => None,
            Ok(Some(st)) => Some(st.to_string()),
            Err(e) => Some(format!("cannot wait for it: {e}")),
        }
    }

    /// The last bytes the server wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        let k = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&k).trim().to_string()
    }

    /// The cell's error: `unavailable` with the server's own reason when its stderr says
    /// `unavailable: <reason>` (the machine lacks what the model needs), else `failed` with
    /// `why` and the stderr tail.
    pub fn fail(&self, why: &str) -> CaseError {
        // Give the stderr reader a moment to drain what a dying server wrote.
        std::thread::sleep(Duration::from_millis(50));
        let tail = self.stderr_tail();
        if let Some(reason) = tail
            .lines()
            .find_map(|l| l.split_once("unavailable: ").map(|(_, r)| r.trim()))
        {
            return CaseError::unavailable(reason);
        }
        CaseError::Failed(anyhow::anyhow!(if tail.is_empty() {
            format!("{why} (stderr empty)")
        } else {
            format!("{why}; stderr tail: {tail}")
        }))
    }

    fn kill_and_fail(&mut self, why: &str) -> CaseError {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.fail(why)
    }

    /// SIGTERM, then waits up to `within` for exit (SIGKILL after). Returns the exit status
    /// and the counters of its final `counters <json>` line (numbers only, `server_` prefix).
    pub fn stop(mut self, within: Duration) -> Result<(ExitStatus, Counters), CaseError> {
        // SAFETY: kill with a pid we own (our child, not yet reaped).
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + within;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(st)) => break st,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => {
                    let why = format!("server did not exit within {within:?} of SIGTERM");
                    return Err(self.kill_and_fail(&why));
                }
            }
        };
        let mut counters = Counters::default();
        // The stdout reader ends at EOF, which follows the exit.
        let until = Instant::now() + Duration::from_millis(500);
        while let Ok(l) = self
            .lines
            .recv_timeout(until.saturating_duration_since(Instant::now()))
        {
            if let Line::Counters(j) = l {
                if let Ok(serde_json::Value::Object(m)) = serde_json::from_str(&j) {
                    for (k, v) in m {
                        if let Some(n) = v.as_u64() {
                            counters.add(&format!("server_{k}"), n);
                        }
                    }
                }
            }
        }
        if !status.success() {
            return Err(self.fail(&format!("server exited with {status} on SIGTERM")));
        }
        Ok((status, counters))
    }
}

fn empty_cpu_set() -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain data; all zeroes is the empty set.
    unsafe { std::mem::zeroed() }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// How a cell's server is started: ringside's own `serve` child (or a stand-in printing
/// `listening on`), or an external contender's command (`--contender`).
pub enum Launch {
    /// A command that prints `listening on ADDR`, confined to `cpus`.
    Child { cmd: Command, cpus: Vec<u32> },
    /// An external contender, confined to `cpus`; ready once its port accepts connections.
    External {
        ext: crate::peer::external::External,
        cpus: Vec<u32>,
    },
}

impl Launch {
    /// The CPUs the server may use.
    pub fn cpus(&self) -> &[u32] {
        match self {
            Launch::Child { cpus, .. } | Launch::External { cpus, .. } => cpus,
        }
    }

    /// Starts it and waits until it accepts connections.
    pub fn start(self) -> Result<UnderTest, CaseError> {
        match self {
            Launch::Child { cmd, cpus } => {
                Ok(UnderTest::Child(Server::start(cmd, &cpus, READY_WITHIN)?))
            }
            Launch::External { ext, cpus } => {
                let opts = crate::peer::external::StartOpts {
                    cpus: Some(cpus),
                    ..Default::default()
                };
                let running = ext
                    .start(&opts)
                    .map_err(|e| CaseError::Failed(anyhow::anyhow!("{e:#}")))?;
                // The processes to measure: those of its group when it serves (a master and its
                // workers), fixed now; a server that forks per connection is under-counted.
                let pids = running.group_pids();
                Ok(UnderTest::External { running, pids })
            }
        }
    }
}

/// How long a server may take to print `listening on`.
pub const READY_WITHIN: Duration = Duration::from_secs(10);

/// A started server under test, whichever way it was started.
pub enum UnderTest {
    Child(Server),
    External {
        running: crate::peer::external::Running,
        pids: Vec<u32>,
    },
}

impl UnderTest {
    pub fn addr(&self) -> SocketAddr {
        match self {
            UnderTest::Child(s) => s.addr,
            UnderTest::External { running, .. } => running.addr(),
        }
    }

    /// Every process whose CPU and syscalls are the server's.
    pub fn pids(&self) -> Vec<u32> {
        match self {
            UnderTest::Child(s) => vec![s.pid()],
            UnderTest::External { pids, running } if pids.is_empty() => vec![running.pid()],
            UnderTest::External { pids, .. } => pids.clone(),
        }
    }

    /// How it ended, if it has (`None`: still serving).
    pub fn exited(&mut self) -> Option<String> {
        match self {
            UnderTest::Child(s) => s.exited(),
            UnderTest::External { running, .. } => {
                running.check_alive().err().map(|e| format!("{e:#}"))
            }
        }
    }

    /// The cell's error for `why`, with the server's stderr tail.
    pub fn fail(&self, why: &str) -> CaseError {
        match self {
            UnderTest::Child(s) => s.fail(why),
            UnderTest::External { running, .. } => {
                let tail = running.stderr_tail();
                CaseError::Failed(anyhow::anyhow!(if tail.trim().is_empty() {
                    format!("{why} (stderr empty)")
                } else {
                    format!("{why}; stderr tail: {}", tail.trim())
                }))
            }
        }
    }

    /// Stops it; ringside's own servers report their counters (`server_` prefix).
    pub fn stop(self, within: Duration) -> Result<Counters, CaseError> {
        match self {
            UnderTest::Child(s) => s.stop(within).map(|(_, c)| c),
            UnderTest::External { running, .. } => {
                running
                    .stop()
                    .map_err(|e| CaseError::Failed(anyhow::anyhow!("{e:#}")))?;
                Ok(Counters::default())
            }
        }
    }
}
