//! Other hosts, driven over SSH: `ringside run --server-host [USER@]HOST[:PORT]` starts each
//! repetition's server on HOST and measures it there.
//!
//! The transport is the user's own OpenSSH (`ssh -T -o BatchMode=yes ...`: their keys and
//! ~/.ssh/config, a refused key fails at once instead of prompting), spawned through the
//! supervisor ([`crate::child`]) so that it dies with ringside; no agent or daemon of ringside's
//! own. The remote end is the same `ringside` binary (checked before measuring:
//! [`check_version`]) running a hidden subcommand: `remote-serve` starts `ringside serve` on
//! its host under that host's own CPU plan, prints `listening on ADDR`, takes the server's CPU
//! and syscall readings when told `open` / `close` on its stdin, and on `stop` (or EOF: the SSH
//! session ended) stops the server and prints `figures <json>` ([`Figures`]). `remote-env`
//! prints the host's environment and network path ([`HostProbe`]). With `run --load-host`,
//! `remote-load` runs a repetition's load generator there instead (`crate::load::remote`).

use crate::child;
use crate::env::netpath::NetPath;
use crate::env::EnvReport;
use crate::measure::cpu::{self, CpuReading, ProcessesReading};
use crate::measure::pin::CpuPlan;
use crate::measure::syscalls::SyscallCounter;
use crate::measure::Counters;
use serde::{Deserialize, Serialize};
use std::process::Command;
use std::time::Duration;

/// How long the version check and the environment probe may take per host.
pub(crate) const PROBE_WITHIN: Duration = Duration::from_secs(30);

/// Bytes of a probe's output kept (a host's `remote-env` JSON is a few KiB).
const PROBE_OUTPUT_BYTES: usize = 1 << 20;

/// The stdout prefix of the remote server's figures line.
pub(crate) const FIGURES: &str = "figures ";

/// A remote load generator's lines (`ringside remote-load`): set up and waiting for `go`,
/// its measured window's edges, and its load report as JSON.
pub(crate) const LOAD_READY: &str = "ready";
pub(crate) const WINDOW_OPEN: &str = "window open";
pub(crate) const WINDOW_CLOSE: &str = "window close";
pub(crate) const REPORT: &str = "report ";

/// `[USER@]HOST[:PORT]` as given to `--server-host`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    /// As the user typed it (names the host in messages and results).
    pub(crate) spec: String,
    /// `[USER@]HOST`, ssh's destination.
    pub(crate) dest: String,
    /// ssh's `-p`.
    pub(crate) port: Option<u16>,
}

impl Host {
    /// Parses `[USER@]HOST[:PORT]` (an IPv6 address in brackets: `[::1]:22`).
    pub(crate) fn parse(s: &str) -> Result<Host, String> {
        let s = s.trim();
        let (user, rest) = match s.rsplit_once('@') {
            Some((u, r)) if !u.is_empty() => (Some(u), r),
            Some(_) => return Err("an empty user before '@'".into()),
            None => (None, s),
        };
        let (host, port) = if let Some(r) = rest.strip_prefix('[') {
            let (h, after) = r.split_once(']').ok_or("an opening '[' without its ']'")?;
            match after.strip_prefix(':') {
                Some(p) => (h, Some(p)),
                None if after.is_empty() => (h, None),
                None => return Err(format!("'{after}' after ']'")),
            }
        } else if rest.matches(':').count() == 1 {
            let (h, p) = rest.split_once(':').unwrap_or((rest, ""));
            (h, Some(p))
        } else {
            (rest, None)
        };
        if host.is_empty()
            || host.starts_with('-')
            || host
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || "'\"\\;&|`$".contains(c))
        {
            return Err(format!("'{host}' is not a host name or address"));
        }
        if user.is_some_and(|u| u.starts_with('-') || u.chars().any(|c| c.is_whitespace())) {
            return Err("a user name starting with '-' or holding blanks".into());
        }
        let port = port
            .map(|p| {
                p.parse::<u16>()
                    .ok()
                    .filter(|&p| p > 0)
                    .ok_or_else(|| format!("port '{p}' is not 1..=65535"))
            })
            .transpose()?;
        let host = host.to_string();
        Ok(Host {
            spec: s.to_string(),
            dest: match user {
                Some(u) => format!("{u}@{host}"),
                None => host,
            },
            port,
        })
    }
}

/// How ringside reaches other hosts: ssh's extra options and the remote `ringside`'s path.
#[derive(Clone, Debug, Default)]
pub struct Ssh {
    /// Extra ssh arguments (`--ssh-opt`), each passed as one argument before the destination.
    pub(crate) opts: Vec<String>,
    /// The `ringside` to run on the other host (`--remote-ringside`; default `ringside`, found
    /// on the remote PATH).
    pub(crate) bin: String,
}

impl Ssh {
    /// `ssh -T -o BatchMode=yes ... DEST -- BIN ARGS...`, each remote word shell-quoted (ssh
    /// joins them into one line for the remote shell).
    pub(crate) fn command(&self, host: &Host, args: &[&str]) -> Command {
        let mut c = Command::new("ssh");
        c.args(["-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"])
            // A host that dies mid-run (or a cut path) ends the session within ~15 s.
            .args(["-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"])
            .args(["-o", "LogLevel=ERROR"])
            .args(&self.opts);
        if let Some(p) = host.port {
            c.args(["-p", &p.to_string()]);
        }
        let remote: Vec<String> = std::iter::once(self.bin.as_str())
            .chain(args.iter().copied())
            .map(quote)
            .collect();
        c.arg(&host.dest).arg("--").arg(remote.join(" "));
        c
    }

    /// Runs `BIN ARGS...` on `host` to completion (bounded in time and output); its stdout, or
    /// the SSH error (ssh's or the remote command's stderr, and the exit status).
    /// ssh runs in a process group of its own, killed whole when it overruns: a hung remote
    /// command's local helpers (a ProxyCommand, a wrapper script) go with it.
    pub(crate) fn output(&self, host: &Host, args: &[&str]) -> Result<String, String> {
        let mut cmd = self.command(host, args);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let cap = child::Capture {
            stdout_max: PROBE_OUTPUT_BYTES,
            stderr_max: 16 * 1024,
            within: PROBE_WITHIN,
            cpus: None,
        };
        let what = format!("ssh {} {}", host.spec, args.first().copied().unwrap_or(""));
        let out = child::run_captured(cmd, &cap, |_| {}).map_err(|e| format!("{what}: {e}"))?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        Err(format!(
            "{what}: {} ({})",
            if stderr.is_empty() {
                "no error message"
            } else {
                &stderr
            },
            match out.status.code() {
                Some(255) => "ssh exit 255: connection or authentication failed".to_string(),
                Some(127) => "exit 127: ringside not found there".to_string(),
                _ => out.status.to_string(),
            }
        ))
    }
}

/// Single-quotes `s` for a POSIX shell (words made only of safe characters stay bare).
pub(crate) fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The run's remote hosts, set once by `ringside run` before any cell.
#[derive(Clone, Debug, Default)]
pub struct Remote {
    pub(crate) ssh: Ssh,
    /// `--server-host`: the network suites' servers run there.
    pub(crate) server: Option<Host>,
    /// Why the server host cannot be used (unreachable, refused key, no ringside there): every
    /// cell that needs it fails with this.
    pub(crate) server_error: Option<String>,
    /// `--load-host` (repeatable): the echo and HTTP suites' load generators run there
    /// (`ringside remote-load`), their reports merged.
    pub(crate) load: Vec<Host>,
    /// Why a load host cannot be used: every cell that needs it fails with this.
    pub(crate) load_error: Option<String>,
    /// The address this host's servers listen on so that the load hosts reach them
    /// (`--bind`, or the address the load hosts saw this host's SSH connection come from).
    pub(crate) bind: Option<std::net::IpAddr>,
}

impl Remote {
    /// Where a server on this host listens: the bind address, port 0 (`None`: loopback).
    pub(crate) fn listen_addr(&self) -> Option<String> {
        if self.load.is_empty() {
            return None;
        }
        self.bind
            .map(|ip| std::net::SocketAddr::new(ip, 0).to_string())
    }
}

/// `ringside VERSION (git HASH)`: what `ringside --version` prints, and what every host must
/// print alike.
pub(crate) fn version_line() -> String {
    format!(
        "ringside {} (git {})",
        env!("CARGO_PKG_VERSION"),
        option_env!("RINGSIDE_GIT").unwrap_or("unknown")
    )
}

/// Why a host cannot take part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HostError {
    /// Unreachable, key refused, no ringside there, or it failed: the SSH error.
    Ssh(String),
    /// It runs another ringside: both versions named.
    Mismatch {
        host: String,
        here: String,
        there: String,
    },
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostError::Ssh(e) => f.write_str(e),
            HostError::Mismatch { host, here, there } => write!(
                f,
                "{host} runs '{there}' but this is '{here}': every host must run the same \
                 ringside (version and git commit)"
            ),
        }
    }
}

/// Checks that `host` runs this very ringside (`BIN --version`, version and git hash).
pub(crate) fn check_version(ssh: &Ssh, host: &Host) -> Result<(), HostError> {
    let out = ssh.output(host, &["--version"]).map_err(HostError::Ssh)?;
    let there = out.trim().to_string();
    let here = version_line();
    if there == here {
        Ok(())
    } else {
        Err(HostError::Mismatch {
            host: host.spec.clone(),
            here,
            there: if there.is_empty() {
                "(nothing)".into()
            } else {
                there
            },
        })
    }
}

/// What `ringside remote-env` prints: the host's environment and its network path back to
/// the SSH client (the peer the load comes from).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct HostProbe {
    pub(crate) ringside: String,
    pub(crate) env: EnvReport,
    /// The CPU plan it would make over its machine (the run's choice, not the machine: not
    /// in `env`).
    #[serde(default)]
    pub(crate) plan: Option<crate::measure::pin::CpuPlan>,
    pub(crate) path: NetPath,
}

/// `remote-env` on `host`.
pub(crate) fn probe(ssh: &Ssh, host: &Host) -> Result<HostProbe, String> {
    let out = ssh.output(host, &["remote-env"])?;
    serde_json::from_str(out.trim()).map_err(|e| format!("{}: remote-env: {e}", host.spec))
}

/// The address the SSH client reached this host at and the client's own
/// (`SSH_CONNECTION=CLIENT_IP CLIENT_PORT SERVER_IP SERVER_PORT`), when under sshd.
pub(crate) fn ssh_connection() -> Option<(String, String)> {
    let v = std::env::var("SSH_CONNECTION").ok()?;
    let w: Vec<&str> = v.split_whitespace().collect();
    (w.len() == 4).then(|| (w[0].to_string(), w[2].to_string()))
}

/// One edge of the measured window, read on the server's host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EdgeReading {
    pub(crate) total_ns: u64,
    pub(crate) user_ns: u64,
    pub(crate) sys_ns: u64,
    pub(crate) ctx_switches: u64,
    /// When the CPU clocks were read (CLOCK_MONOTONIC of the server's host).
    pub(crate) at_ns: u64,
    pub(crate) cpus_allowed: usize,
    /// The syscall counters' sum (0 when not counting).
    pub(crate) syscalls: u64,
    /// When the syscall counters were read.
    pub(crate) sys_at_ns: u64,
}

impl EdgeReading {
    /// Reads the CPU of `pids` and the syscall `counters` now; `None` when a process is gone.
    pub(crate) fn read(pids: &[u32], counters: Option<&[SyscallCounter]>) -> Option<EdgeReading> {
        let c = cpu::processes(pids)?;
        let t0 = crate::measure::clock::now_ns();
        let syscalls = counters.map_or(0, |cs| cs.iter().map(|c| c.read()).sum());
        let sys_at_ns = t0 / 2 + crate::measure::clock::now_ns() / 2;
        Some(EdgeReading {
            total_ns: c.cpu.total_ns,
            user_ns: c.cpu.user_ns,
            sys_ns: c.cpu.sys_ns,
            ctx_switches: c.cpu.ctx_switches,
            at_ns: c.at_ns,
            cpus_allowed: c.cpus_allowed,
            syscalls,
            sys_at_ns,
        })
    }

    /// The CPU part, as the local measurement reads it.
    pub(crate) fn processes(&self) -> ProcessesReading {
        ProcessesReading {
            cpu: CpuReading {
                total_ns: self.total_ns,
                user_ns: self.user_ns,
                sys_ns: self.sys_ns,
                ctx_switches: self.ctx_switches,
            },
            at_ns: self.at_ns,
            cpus_allowed: self.cpus_allowed,
        }
    }
}

/// Why a remote server's edge readings cannot be figures of a run whose window here lasted
/// `window_ns` with `plan_cpus` server CPUs there: readings that go backwards, a span far from
/// the window, more CPUs than the plan gave, or more CPU time than those CPUs have in the
/// span. `None`: plausible. (A forged `remote-serve` reported `cpu_busy` 2,498,028.)
pub(crate) fn implausible_edges(
    e0: &EdgeReading,
    e1: &EdgeReading,
    plan_cpus: usize,
    window_ns: u64,
) -> Option<String> {
    let backwards = [
        ("its CPU time", e0.total_ns, e1.total_ns),
        ("its user time", e0.user_ns, e1.user_ns),
        ("its system time", e0.sys_ns, e1.sys_ns),
        ("its context switches", e0.ctx_switches, e1.ctx_switches),
        ("its syscall count", e0.syscalls, e1.syscalls),
        ("its clock", e0.at_ns, e1.at_ns),
        ("its syscall clock", e0.sys_at_ns, e1.sys_at_ns),
    ];
    if let Some((what, a, b)) = backwards.iter().find(|(_, a, b)| b < a) {
        return Some(format!("{what} went backwards ({a} then {b})"));
    }
    let span = e1.at_ns - e0.at_ns;
    // The two hosts read the same window at its edges, told over ssh: each edge moves by the
    // link's and the wake-ups' delays (milliseconds), never by a good part of the window.
    let slack = window_ns / 4 + 200_000_000;
    if span.abs_diff(window_ns) > slack {
        return Some(format!(
            "its window lasted {span} ns against {window_ns} ns here"
        ));
    }
    let cpus = e0.cpus_allowed.max(e1.cpus_allowed);
    if cpus == 0 || cpus > plan_cpus.max(1) {
        return Some(format!(
            "{cpus} CPUs allowed where its plan gave the server {plan_cpus}"
        ));
    }
    // Clock ticks round CPU time to 10 ms per CPU; allow them and 5%.
    let most = (span as u128 * cpus as u128 * 105 / 100) as u64 + 10_000_000 * cpus as u64;
    let used = e1.total_ns - e0.total_ns;
    if used > most {
        return Some(format!(
            "{used} ns of CPU in a {span} ns window on {cpus} CPU(s)"
        ));
    }
    None
}

/// What the remote server reports when stopped: its window's edges as read on its host, the
/// syscall counting's outcome, its own counters and the CPU plan it ran under.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Figures {
    pub(crate) open: Option<EdgeReading>,
    pub(crate) close: Option<EdgeReading>,
    /// Counting syscalls: `Ok(overhead)` (the counters' own start/read cost), or why not.
    pub(crate) syscalls: Option<Result<u64, String>>,
    /// The server's counters (`server_` prefix).
    pub(crate) counters: Counters,
    /// The CPUs the server may use there.
    pub(crate) server_cpus: Vec<u32>,
    /// That host's CPU plan.
    pub(crate) plan: Option<CpuPlan>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 28 item 4: a remote server's edge readings are checked against the window here
    /// and the CPUs its plan gave it.
    #[test]
    fn a_forged_remote_servers_edges_are_implausible() {
        let at = |t: u64, cpu: u64| EdgeReading {
            total_ns: cpu,
            user_ns: cpu / 2,
            sys_ns: cpu / 2,
            ctx_switches: 10,
            at_ns: t,
            cpus_allowed: 1,
            syscalls: 100,
            sys_at_ns: t,
        };
        let w = 1_000_000_000;
        assert_eq!(
            implausible_edges(&at(5, 0), &at(5 + w, 700_000_000), 1, w),
            None
        );
        // cpu_busy 2,498,028: 2.5 million CPU-seconds in one second on one CPU.
        let why = implausible_edges(&at(5, 0), &at(5 + w, 2_498_028 * w), 1, w).unwrap();
        assert!(why.contains("ns of CPU"), "{why}");
        let why = implausible_edges(&at(5, 900), &at(5 + w, 100), 1, w).unwrap();
        assert!(why.contains("went backwards"), "{why}");
        let why = implausible_edges(&at(5, 0), &at(5 + 1000, 10), 1, w).unwrap();
        assert!(why.contains("its window lasted"), "{why}");
        let mut many = at(5 + w, 10);
        many.cpus_allowed = 64;
        let why = implausible_edges(&at(5, 0), &many, 1, w).unwrap();
        assert!(why.contains("64 CPUs allowed"), "{why}");
    }

    #[test]
    fn hosts_parse_with_user_and_port() {
        let h = Host::parse("root@10.213.1.1:2222").unwrap();
        assert_eq!((h.dest.as_str(), h.port), ("root@10.213.1.1", Some(2222)));
        let h = Host::parse("box").unwrap();
        assert_eq!((h.dest.as_str(), h.port), ("box", None));
        let h = Host::parse("[::1]:22").unwrap();
        assert_eq!((h.dest.as_str(), h.port), ("::1", Some(22)));
        let h = Host::parse("u@fe80::1").unwrap();
        assert_eq!((h.dest.as_str(), h.port), ("u@fe80::1", None));
        for bad in [
            "",
            "-oProxyCommand=x",
            "a b",
            "h:0",
            "h:70000",
            "@h",
            "h;rm",
        ] {
            assert!(Host::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn remote_words_are_quoted_for_the_shell() {
        assert_eq!(quote("--model"), "--model");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        let ssh = Ssh {
            opts: vec!["-i".into(), "/k".into()],
            bin: "/x y/ringside".into(),
        };
        let c = ssh.command(&Host::parse("u@h:2").unwrap(), &["--version"]);
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let n = args.len();
        assert_eq!(args[n - 3..], ["u@h", "--", "'/x y/ringside' --version"]);
        assert!(args.contains(&"BatchMode=yes".to_string()));
        assert!(args.windows(2).any(|w| w == ["-p", "2"]));
    }
}
