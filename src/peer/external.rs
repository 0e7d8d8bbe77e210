//! External contenders: `--contender NAME='command with {port}'` runs any server (`node
//! echo.js {port}`, nginx with one worker, a C reference server) as model `ext:NAME`, so that it
//! is measured by exactly the code that measures ringside's own servers. What a contender is
//! (its parsing, its model row in the run's catalog) lives in [`crate::model::contender`]; this
//! module starts one.
//!
//! [`External::start`] picks a free loopback port and runs the command through `sh -c` with
//! `{port}` replaced, as a supervised child ([`crate::child`]) in a process group of its own
//! (optionally pinned to CPUs, inherited by everything it starts; the whole group dies with
//! ringside), and waits until the port accepts a TCP connection. It then finds the process of
//! that group that holds the listening socket (from `/proc/net/tcp*` and `/proc/PID/fd`) and
//! exposes its pid for measurement; this also proves that the port belongs to the contender and
//! not to another program that took it between our probe and its bind. A command that exits
//! early, never opens its port, or leaves its process group (a daemon that calls `setsid`)
//! fails with the last [`STDERR_TAIL_LINES`] lines of its stderr.
//!
//! Where this machine lets ringside make cgroups ([`child::cgroup::probe`]), the command also
//! starts in a cgroup of its own: its CPU is read from the cgroup, every process it ever started
//! included (a worker forked per connection, one that left the process group), and its members
//! are killed once it is stopped.
//!
//! [`Running`] stops the contender with SIGTERM to the whole group, then SIGKILL after a grace
//! period, then kills what is left in its cgroup, and does so on drop: a contender is never
//! left running.

pub use crate::model::contender::{External, CONTENDER_PROTOCOLS, PORT_PLACEHOLDER};

use crate::child::{self, NotReady, Ready, Spec};
use anyhow::{anyhow, bail, Context};
use std::fs;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::process::Command;
use std::time::Duration;

/// How long [`External::start`] waits by default for the command to accept connections.
pub(crate) const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a contender has between SIGTERM and SIGKILL by default.
pub(crate) const STOP_GRACE: Duration = child::STOP_GRACE;
/// Lines of the command's stderr quoted when it fails.
pub(crate) const STDERR_TAIL_LINES: usize = 20;

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
        cmd.arg("-c").arg(&shell_cmd);
        // A cgroup where the machine allows them; one that cannot be made where the probe
        // made one fails the start, rather than measure this contender otherwise.
        let cgroup = match child::cgroup::probe() {
            Ok(_) => Some(
                child::cgroup::Cgroup::create()
                    .map_err(|e| anyhow!("contender '{}': its cgroup: {e}", self.name))?,
            ),
            Err(_) => None,
        };
        let mut spec = Spec::new(format!("contender '{}'", self.name), cmd)
            .own_group()
            .grace(opts.grace);
        if let Some(cg) = &cgroup {
            spec = spec.in_cgroup(cg);
        }
        if let Some(cpus) = &opts.cpus {
            spec = spec.cpus(cpus);
        }
        let child = spec
            .spawn()
            .with_context(|| format!("contender '{}': spawning sh -c '{shell_cmd}'", self.name))?;
        let mut running = Running {
            name: self.name.clone(),
            command: shell_cmd,
            addr,
            pid: 0,
            child,
            cgroup,
        };
        match running.wait_ready(opts.ready_timeout) {
            Ok(pid) => {
                running.pid = pid;
                Ok(running)
            }
            Err(e) => {
                running.child.stop();
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
    addr: SocketAddr,
    /// The process holding the listening socket.
    pid: u32,
    child: child::Child,
    /// Its cgroup (`None`: this machine has none for it): dropped after `child`, so that
    /// what the group's stop left is killed then.
    cgroup: Option<child::cgroup::Cgroup>,
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
    pub(crate) fn pgid(&self) -> i32 {
        self.child.pgid().unwrap_or(self.child.pid() as i32)
    }

    /// The command as run, with `{port}` replaced.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Every live (non-zombie) process of the contender's process group, ascending.
    pub fn group_pids(&self) -> Vec<u32> {
        self.child.pids()
    }

    /// Its cgroup, where it has one.
    pub(crate) fn cgroup(&self) -> Option<&child::cgroup::Cgroup> {
        self.cgroup.as_ref()
    }

    /// Every process of the contender now: its cgroup's members, else its process group's.
    pub(crate) fn members(&self) -> Vec<u32> {
        match &self.cgroup {
            Some(cg) => cg.members(),
            None => self.group_pids(),
        }
    }

    /// The last [`STDERR_TAIL_LINES`] lines the command wrote to stderr so far.
    pub fn stderr_tail(&self) -> String {
        self.child.stderr_tail(STDERR_TAIL_LINES)
    }

    /// The supervised child (its exit status, for the cell's verdict).
    pub(crate) fn child(&self) -> &child::Child {
        &self.child
    }

    /// Ok while the measured process still runs; an error quoting the stderr tail once it has
    /// exited (a contender that crashed mid-run is a failed cell).
    pub(crate) fn check_alive(&mut self) -> anyhow::Result<()> {
        if self.pid == self.child.pid() {
            if let Some(status) = self.child.try_exit() {
                bail!(
                    "contender '{}' exited ({status}) while serving; {}",
                    self.name,
                    self.stderr_report()
                );
            }
        } else if !child::is_live(self.pid) {
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
    /// A process it left outside its group (a daemon) is stopped too, and fails the cell
    /// naming it; what is left in its cgroup then (a worker that left the group) is killed.
    pub fn stop(mut self) -> anyhow::Result<String> {
        let status = self
            .child
            .stop()
            .status
            .map(|s| s.to_string())
            .ok_or_else(|| anyhow!("contender '{}' could not be reaped", self.name))?;
        let left = child::stop_our_daemons();
        if let Some(cg) = &self.cgroup {
            cg.kill();
        }
        if !left.is_empty() {
            bail!(
                "contender '{}' left pid {} running outside its process group (a daemon); \
                 stopped it: run servers in the foreground",
                self.name,
                left.join(", ")
            );
        }
        Ok(status)
    }

    /// Waits until the port accepts a connection; returns the pid holding the listener.
    fn wait_ready(&mut self, timeout: Duration) -> anyhow::Result<u32> {
        match self.child.wait_ready(Ready::Accepts(self.addr), timeout) {
            Ok(_) => {}
            Err(NotReady::Exited(status) | NotReady::ClosedStdout(Some(status))) => bail!(
                "contender '{}' (sh -c '{}') exited ({status}) before accepting connections \
                 on {}{}",
                self.name,
                self.command,
                self.addr,
                {
                    // `setsid cmd &` returns at once: what it left behind is stopped, named.
                    std::thread::sleep(Duration::from_millis(100));
                    let left = child::stop_our_daemons();
                    if left.is_empty() {
                        String::new()
                    } else {
                        format!(
                            "; it left pid {} running outside its process group (a daemon), \
                             stopped: run servers in the foreground",
                            left.join(", ")
                        )
                    }
                }
            ),
            Err(NotReady::ClosedStdout(None) | NotReady::TimedOut(_)) => bail!(
                "contender '{}' (sh -c '{}') did not accept connections on {} within {:.1} s",
                self.name,
                self.command,
                self.addr,
                timeout.as_secs_f64()
            ),
        }
        let pgid = self.pgid();
        let port = self.addr.port();
        let holders = listener_holders(port, pgid)?;
        if let Some(&pid) = holders.first() {
            return Ok(pid);
        }
        // It left its process group (a daemon: `setsid cmd &`): what carries our mark in
        // another session is ours to stop, and is named; another program's is left alone.
        let ours = child::stop_our_daemons();
        let left = if ours.is_empty() {
            "another program took the port, or the command left its process group".to_string()
        } else {
            format!(
                "the command left its process group: pid {} (a daemon) was stopped",
                ours.join(", ")
            )
        };
        Err(anyhow!(
            "contender '{}': {} accepts connections, but no process of the contender's \
             process group holds its listening socket ({left}; run servers in the foreground, \
             not as daemons)",
            self.name,
            self.addr
        ))
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

/// A port free on `ip` right now (the command binds it a moment later; `wait_ready` checks
/// that the contender, not another program, ended up holding it).
fn free_port(ip: IpAddr) -> io::Result<u16> {
    Ok(TcpListener::bind((ip, 0))?.local_addr()?.port())
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
    for pid in child::group_members(pgid) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_listening_sockets_from_a_tcp_table() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12345 1 0 100 0 0 10 0\n\
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 777 1 0 100 0 0 10 0\n";
        assert_eq!(listening_inodes(table, 0x1F90), vec![12345]);
        assert!(listening_inodes(table, 80).is_empty());
    }
}
