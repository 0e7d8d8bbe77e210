//! External contenders: `--contender NAME='command with {port}'` runs any server (`node
//! echo.js {port}`, nginx with one worker, a C reference server) as model `ext:NAME`, so that it
//! is measured by exactly the code that measures ringside's own servers.
//!
//! [`External::start`] picks a free loopback port, runs the command through `sh -c` with
//! `{port}` replaced, in a process group of its own (optionally pinned to CPUs, inherited by
//! everything it starts), and waits until the port accepts a TCP connection. It then finds the
//! process of that group that holds the listening socket (from `/proc/net/tcp*` and
//! `/proc/PID/fd`) and exposes its pid for measurement; this also proves that the port belongs
//! to the contender and not to another program that took it between our probe and its bind.
//! A command that exits early, never opens its port, or leaves its process group (a daemon that
//! calls `setsid`) fails with the last [`STDERR_TAIL_LINES`] lines of its stderr.
//!
//! [`Running`] stops the contender with SIGTERM to the whole group, then SIGKILL after a grace
//! period, and does so on drop: a contender is never left running. (A SIGKILL of ringside
//! itself cannot run drop; the contender then outlives it.)
//!
//! The model registry is static, so an external contender becomes a model at run time through
//! [`model_for`]: one leaked `&'static ModelSpec` per distinct name, with
//! `Knobs::Peer(PeerKind::External)` and id `ext:NAME`.

use crate::error::InputError;
use crate::model::{Family, Knobs, ModelSpec, PeerKind};
use anyhow::{anyhow, bail, Context};
use std::collections::VecDeque;
use std::fs;
use std::io::{self, Read};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long [`External::start`] waits by default for the command to accept connections.
pub const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a contender has between SIGTERM and SIGKILL by default.
pub const STOP_GRACE: Duration = Duration::from_secs(2);
/// Lines of the command's stderr quoted when it fails.
pub const STDERR_TAIL_LINES: usize = 20;
/// Bytes of stderr kept (the most recent ones): the tail stays bounded however much it writes.
const TAIL_BYTES: usize = 16 * 1024;
/// Interval between two checks while waiting for the port or for the group to exit.
const POLL: Duration = Duration::from_millis(20);
/// Longest single connect attempt while waiting for the port.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(200);

/// Placeholder in the command replaced by the chosen port.
pub const PORT_PLACEHOLDER: &str = "{port}";

/// Protocols a contender may be restricted to with a `PROTO:` prefix.
pub const CONTENDER_PROTOCOLS: &[&str] = &["echo", "http"];

/// An external contender as given on the command line: `[PROTO:]NAME=command with {port}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct External {
    /// `[a-z0-9-]+`; the model id is `ext:NAME`.
    pub name: String,
    /// Shell command containing `{port}` at least once.
    pub command: String,
    /// The one protocol it speaks (`http:nginx=...`), or `None`: every network suite run
    /// measures it.
    pub protocol: Option<&'static str>,
}

/// How to start an external contender.
#[derive(Clone, Debug)]
pub struct StartOpts {
    /// How long the command has to accept its first connection.
    pub ready_timeout: Duration,
    /// Time between SIGTERM and SIGKILL when stopping it.
    pub grace: Duration,
    /// CPUs the command (and everything it starts) may run on; `None` leaves the affinity as
    /// inherited.
    pub cpus: Option<Vec<u32>>,
    /// Address the contender is reached at (the port is chosen free on it).
    pub ip: IpAddr,
}

impl Default for StartOpts {
    fn default() -> Self {
        StartOpts {
            ready_timeout: READY_TIMEOUT,
            grace: STOP_GRACE,
            cpus: None,
            ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
        }
    }
}

impl External {
    /// Parses `[PROTO:]NAME=command`. PROTO is one of [`CONTENDER_PROTOCOLS`], NAME must be
    /// `[a-z0-9-]+` (at most 40 characters) and the command must contain `{port}`.
    pub fn parse(spec: &str) -> Result<External, InputError> {
        let bad = |why: &str| InputError::BadContender {
            given: spec.to_string(),
            why: why.to_string(),
        };
        let (name, command) = spec
            .split_once('=')
            .ok_or_else(|| bad("no '=' after NAME"))?;
        let (protocol, name) = match name.split_once(':') {
            Some((p, n)) => match CONTENDER_PROTOCOLS.iter().find(|&&v| v == p) {
                Some(&v) => (Some(v), n),
                None => {
                    return Err(bad(&format!(
                        "unknown protocol '{p}' before NAME; valid: {}",
                        CONTENDER_PROTOCOLS.join(", ")
                    )))
                }
            },
            None => (None, name),
        };
        if name.is_empty() {
            return Err(bad("NAME is empty"));
        }
        if name.len() > 40 {
            return Err(bad("NAME is longer than 40 characters"));
        }
        if !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(bad(&format!(
                "NAME '{name}' may only contain a-z, 0-9 and '-'"
            )));
        }
        if !command.contains(PORT_PLACEHOLDER) {
            return Err(bad("the command does not contain {port}"));
        }
        Ok(External {
            name: name.to_string(),
            command: command.to_string(),
            protocol,
        })
    }

    /// Whether this contender takes part in suites of `protocol`.
    pub fn speaks(&self, protocol: &str) -> bool {
        self.protocol.is_none_or(|p| p == protocol)
    }

    /// Makes this contender a model for the rest of the process: its row ([`model_for`]) and
    /// its command, found again from the model id with [`registered`].
    pub fn register(&self) -> &'static ModelSpec {
        let mut all = lock(&REGISTERED);
        all.retain(|e| e.name != self.name);
        all.push(self.clone());
        model_for(&self.name)
    }

    /// The model id of this contender: `ext:NAME`.
    pub fn model_id(&self) -> String {
        format!("ext:{}", self.name)
    }

    /// The command with `{port}` replaced.
    pub fn command_for(&self, port: u16) -> String {
        self.command.replace(PORT_PLACEHOLDER, &port.to_string())
    }

    /// Starts the command on a free port and waits until it accepts connections. The error of
    /// a command that exits first, never opens its port within `opts.ready_timeout`, or whose
    /// port is held by no process of its group, quotes its stderr tail; the command is stopped
    /// (whole process group) before the error is returned.
    pub fn start(&self, opts: &StartOpts) -> anyhow::Result<Running> {
        let port = free_port(opts.ip)
            .with_context(|| format!("contender '{}': finding a free port", self.name))?;
        let addr = SocketAddr::new(opts.ip, port);
        let shell_cmd = self.command_for(port);

        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(&shell_cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0);
        if let Some(cpus) = &opts.cpus {
            let set = cpu_set(cpus)?;
            // SAFETY: runs in the forked child before exec; it only makes one raw syscall on a
            // cpu_set_t built before the fork (no allocation, no lock), which is
            // async-signal-safe.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
                    {
                        return Err(io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("contender '{}': spawning sh -c '{shell_cmd}'", self.name))?;
        let pgid = child.id() as i32;
        let tail = Arc::new(Mutex::new(Tail::default()));
        let reader = child
            .stderr
            .take()
            .map(|e| spawn_tail_reader(e, tail.clone()));

        let mut running = Running {
            name: self.name.clone(),
            command: shell_cmd,
            child,
            pgid,
            addr,
            pid: 0,
            tail,
            reader,
            grace: opts.grace,
            exit: None,
        };
        match running.wait_ready(opts.ready_timeout) {
            Ok(pid) => {
                running.pid = pid;
                Ok(running)
            }
            Err(e) => {
                running.terminate();
                Err(anyhow!("{e:#}; {}", running.stderr_report()))
            }
        }
    }
}

/// A started external contender. Stopped (SIGTERM to its group, then SIGKILL) by
/// [`Running::stop`] or on drop.
#[derive(Debug)]
pub struct Running {
    name: String,
    command: String,
    child: Child,
    /// The process group: the pid of the `sh` started first.
    pgid: i32,
    addr: SocketAddr,
    /// The process holding the listening socket.
    pid: u32,
    tail: Arc<Mutex<Tail>>,
    reader: Option<JoinHandle<()>>,
    grace: Duration,
    /// Set once the group has been stopped: how the first process ended.
    exit: Option<String>,
}

impl Running {
    /// Where the contender accepts connections.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The process that holds the listening socket: the one to measure. When several do (a
    /// master and its workers), the lowest pid; measure [`Running::group_pids`] then.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The process group of the contender (every process it started that stayed in it).
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// The command as run, with `{port}` replaced.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Every live (non-zombie) process of the contender's process group, ascending.
    pub fn group_pids(&self) -> Vec<u32> {
        group_members(self.pgid)
    }

    /// The last [`STDERR_TAIL_LINES`] lines the command wrote to stderr so far.
    pub fn stderr_tail(&self) -> String {
        lock(&self.tail).lines(STDERR_TAIL_LINES)
    }

    /// Ok while the measured process still runs; an error quoting the stderr tail once it has
    /// exited (a contender that crashed mid-run is a failed cell).
    pub fn check_alive(&mut self) -> anyhow::Result<()> {
        if self.pid == self.child.id() {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "contender '{}' exited ({status}) while serving; {}",
                    self.name,
                    self.stderr_report()
                );
            }
        } else if !is_live(self.pid) {
            bail!(
                "contender '{}': its server process {} is gone; {}",
                self.name,
                self.pid,
                self.stderr_report()
            );
        }
        Ok(())
    }

    /// Stops the whole process group: SIGTERM, then SIGKILL after the grace period. Returns
    /// how the first process (`sh`, or the server it became) ended.
    pub fn stop(mut self) -> anyhow::Result<String> {
        self.terminate();
        self.exit
            .clone()
            .ok_or_else(|| anyhow!("contender '{}' could not be reaped", self.name))
    }

    /// Waits until the port accepts a connection; returns the pid holding the listener.
    fn wait_ready(&mut self, timeout: Duration) -> anyhow::Result<u32> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                // Its stderr may still be arriving: give the reader a moment to reach EOF.
                self.join_reader(Duration::from_millis(500));
                bail!(
                    "contender '{}' (sh -c '{}') exited ({status}) before accepting connections \
                     on {}",
                    self.name,
                    self.command,
                    self.addr
                );
            }
            if TcpStream::connect_timeout(&self.addr, CONNECT_TIMEOUT).is_ok() {
                let holders = listener_holders(self.addr.port(), self.pgid)?;
                return holders.first().copied().ok_or_else(|| {
                    anyhow!(
                        "contender '{}': {} accepts connections, but no process of the \
                         contender's process group holds its listening socket (another program \
                         took the port, or the command left its process group: run servers in \
                         the foreground, not as daemons)",
                        self.name,
                        self.addr
                    )
                });
            }
            if Instant::now() >= deadline {
                bail!(
                    "contender '{}' (sh -c '{}') did not accept connections on {} within {:.1} s",
                    self.name,
                    self.command,
                    self.addr,
                    timeout.as_secs_f64()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// SIGTERM to the group, SIGKILL after the grace period, reap the first process, wait
    /// (bounded) for the rest of the group. Idempotent.
    fn terminate(&mut self) {
        if self.exit.is_some() {
            return;
        }
        signal_group(self.pgid, libc::SIGTERM);
        let deadline = Instant::now() + self.grace;
        let mut status: Option<ExitStatus> = None;
        while Instant::now() < deadline {
            if status.is_none() {
                status = self.child.try_wait().ok().flatten();
            }
            if status.is_some() && group_members(self.pgid).is_empty() {
                break;
            }
            std::thread::sleep(POLL);
        }
        if status.is_none() || !group_members(self.pgid).is_empty() {
            signal_group(self.pgid, libc::SIGKILL);
            if status.is_none() {
                status = self.child.wait().ok();
            }
            // Other members are not our children: wait a little for them to disappear.
            let until = Instant::now() + Duration::from_secs(1);
            while !group_members(self.pgid).is_empty() && Instant::now() < until {
                std::thread::sleep(POLL);
            }
        }
        self.join_reader(Duration::from_millis(500));
        self.exit = Some(match status {
            Some(s) => s.to_string(),
            None => "not reaped".to_string(),
        });
    }

    fn join_reader(&mut self, bound: Duration) {
        let until = Instant::now() + bound;
        while self.reader.as_ref().is_some_and(|r| !r.is_finished()) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        if self.reader.as_ref().is_some_and(|r| r.is_finished()) {
            if let Some(r) = self.reader.take() {
                let _ = r.join();
            }
        }
    }

    fn stderr_report(&self) -> String {
        let tail = self.stderr_tail();
        if tail.trim().is_empty() {
            "its stderr was empty".to_string()
        } else {
            format!("last lines of its stderr:\n{}", tail.trim_end())
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.terminate();
    }
}

static REGISTERED: Mutex<Vec<External>> = Mutex::new(Vec::new());

/// The contender registered ([`External::register`]) under model id `ext:NAME`.
pub fn registered(model_id: &str) -> Option<External> {
    let name = model_id.strip_prefix("ext:")?;
    lock(&REGISTERED).iter().find(|e| e.name == name).cloned()
}

/// The model row of external contender `name` (`ext:NAME`), created once per name and kept for
/// the life of the process (a handful of leaked rows, one per `--contender`).
pub fn model_for(name: &str) -> &'static ModelSpec {
    static MODELS: Mutex<Vec<&'static ModelSpec>> = Mutex::new(Vec::new());
    let id = format!("ext:{name}");
    let mut models = lock(&MODELS);
    if let Some(m) = models.iter().find(|m| m.id == id) {
        return m;
    }
    let m: &'static ModelSpec = Box::leak(Box::new(ModelSpec {
        id: Box::leak(id.into_boxed_str()),
        summary: "external contender: a server command given with --contender",
        family: Family::Peer,
        knobs: Knobs::Peer(PeerKind::External),
    }));
    models.push(m);
    m
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A port free on `ip` right now (the command binds it a moment later; `wait_ready` checks
/// that the contender, not another program, ended up holding it).
fn free_port(ip: IpAddr) -> io::Result<u16> {
    Ok(TcpListener::bind((ip, 0))?.local_addr()?.port())
}

fn cpu_set(cpus: &[u32]) -> anyhow::Result<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is a plain bit array; all zeros is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if cpus.is_empty() {
        bail!("an empty CPU list for a contender");
    }
    for &c in cpus {
        if c as usize >= libc::CPU_SETSIZE as usize {
            bail!("CPU {c} is beyond CPU_SETSIZE");
        }
        // SAFETY: c is below CPU_SETSIZE, checked above.
        unsafe { libc::CPU_SET(c as usize, &mut set) };
    }
    Ok(set)
}

fn signal_group(pgid: i32, sig: libc::c_int) {
    // SAFETY: kill(2) with a negative pid signals that process group; no memory is involved.
    unsafe { libc::kill(-pgid, sig) };
}

/// Live (non-zombie) processes whose process group is `pgid`, ascending by pid.
fn group_members(pgid: i32) -> Vec<u32> {
    let mut v = Vec::new();
    let Ok(dir) = fs::read_dir("/proc") else {
        return v;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Some((state, pgrp)) = stat_state_pgrp(pid) {
            if pgrp == pgid && state != 'Z' && state != 'X' {
                v.push(pid);
            }
        }
    }
    v.sort_unstable();
    v
}

fn is_live(pid: u32) -> bool {
    stat_state_pgrp(pid).is_some_and(|(s, _)| s != 'Z' && s != 'X')
}

/// State and process group of `pid` from `/proc/PID/stat` (fields 3 and 5; the command name
/// in field 2 may hold spaces and parentheses, so fields are counted after its last ')').
fn stat_state_pgrp(pid: u32) -> Option<(char, i32)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let _ppid = f.next()?;
    let pgrp = f.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Processes of group `pgid` that hold a socket listening on TCP `port`, ascending.
fn listener_holders(port: u16, pgid: i32) -> anyhow::Result<Vec<u32>> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = fs::read_to_string(table) else {
            continue;
        };
        inodes.extend(listening_inodes(&text, port));
    }
    if inodes.is_empty() {
        bail!("no socket listens on port {port} in /proc/net/tcp or /proc/net/tcp6");
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let mut holders = Vec::new();
    for pid in group_members(pgid) {
        let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            fs::read_link(fd.path())
                .ok()
                .and_then(|l| l.to_str().map(|s| wanted.iter().any(|w| w == s)))
                .unwrap_or(false)
        });
        if holds {
            holders.push(pid);
        }
    }
    Ok(holders)
}

/// Inodes of the sockets in a `/proc/net/tcp{,6}` table that listen (state 0A) on `port`.
fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let local = f.get(1)?;
            let p = u16::from_str_radix(local.rsplit(':').next()?, 16).ok()?;
            (p == port && *f.get(3)? == "0A")
                .then(|| f.get(9)?.parse().ok())
                .flatten()
        })
        .collect()
}

/// The most recent bytes a command wrote to stderr, bounded to [`TAIL_BYTES`].
#[derive(Debug, Default)]
struct Tail {
    bytes: VecDeque<u8>,
}

impl Tail {
    fn push(&mut self, data: &[u8]) {
        self.bytes.extend(data);
        let excess = self.bytes.len().saturating_sub(TAIL_BYTES);
        self.bytes.drain(..excess);
    }

    fn lines(&self, n: usize) -> String {
        let (a, b) = self.bytes.as_slices();
        let text = String::from_utf8_lossy(&[a, b].concat()).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}

fn spawn_tail_reader(mut stderr: ChildStderr, tail: Arc<Mutex<Tail>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        loop {
            match stderr.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => lock(&tail).push(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses() {
        let e = External::parse("node=node echo.js {port}").unwrap();
        assert_eq!(e.name, "node");
        assert_eq!(e.command_for(8080), "node echo.js 8080");
        assert_eq!(e.model_id(), "ext:node");
        // '=' inside the command is kept.
        assert_eq!(e.protocol, None);
        assert!(e.speaks("echo") && e.speaks("http"));
        let e = External::parse("c-ref2=env A=1 ./srv {port} {port}").unwrap();
        assert_eq!(e.command_for(9), "env A=1 ./srv 9 9");
        let e = External::parse("http:nginx=nginx -g 'listen {port};'").unwrap();
        assert_eq!((e.name.as_str(), e.protocol), ("nginx", Some("http")));
        assert!(e.speaks("http") && !e.speaks("echo"));
        let err = External::parse("ftp:x=cmd {port}").unwrap_err().to_string();
        assert!(err.contains("'ftp'") && err.contains("echo, http"), "{err}");
        for bad in [
            "node",
            "=cmd {port}",
            "Node=cmd {port}",
            "no_de=cmd {port}",
            "node=cmd 8080",
            "node=",
        ] {
            let err = External::parse(bad).unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
            assert!(err.contains("{port}"), "{err}");
        }
    }

    #[test]
    fn registered_contenders_are_found_by_model_id() {
        let e = External::parse("echo:reg-test=cat {port}").unwrap();
        let m = e.register();
        assert_eq!(m.id, "ext:reg-test");
        assert_eq!(registered("ext:reg-test"), Some(e));
        assert_eq!(registered("ext:nobody"), None);
        assert_eq!(registered("reg-test"), None);
    }

    #[test]
    fn model_rows_are_made_once_per_name() {
        let a = model_for("alpha");
        let b = model_for("alpha");
        assert!(std::ptr::eq(a, b));
        assert_eq!(a.id, "ext:alpha");
        assert_eq!(a.family, Family::Peer);
        assert!(matches!(a.knobs, Knobs::Peer(PeerKind::External)));
        assert!(!std::ptr::eq(a, model_for("beta")));
    }

    #[test]
    fn tail_is_bounded_and_keeps_the_last_lines() {
        let mut t = Tail::default();
        for i in 0..10_000 {
            t.push(format!("line {i}\n").as_bytes());
        }
        assert!(t.bytes.len() <= TAIL_BYTES);
        let l = t.lines(3);
        assert_eq!(l, "line 9997\nline 9998\nline 9999");
    }

    #[test]
    fn reads_listening_sockets_from_a_tcp_table() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12345 1 0 100 0 0 10 0\n\
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 777 1 0 100 0 0 10 0\n";
        assert_eq!(listening_inodes(table, 0x1F90), vec![12345]);
        assert!(listening_inodes(table, 80).is_empty());
    }
}
