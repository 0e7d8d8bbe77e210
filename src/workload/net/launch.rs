//! How a network cell's server under test is launched and ended: ringside's own `ringside
//! serve` (or a stand-in that prints `listening on ADDR`) or an external contender's command,
//! both supervised children ([`crate::child`]: pinned before exec, dying with ringside,
//! stopped with SIGTERM then SIGKILL, stderr tail kept). A `ringside serve` child is ready once
//! it prints `listening on ADDR` (after its model's setup succeeded); on SIGTERM it prints
//! `counters <json>`, read here. A child that exits with [`child::EXIT_UNAVAILABLE`] makes the
//! cell `unavailable` (its last stderr line is the reason); any other failure makes it `failed`
//! with its stderr tail.

use crate::child::{self, NotReady, Ready, Spec};
use crate::error::CaseError;
use crate::measure::Counters;
use crate::peer::external::{External, Running, StartOpts};
use crate::remote::{Figures, FIGURES};
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

/// How long a server may take to print `listening on`.
pub(crate) const READY_WITHIN: Duration = Duration::from_secs(10);

/// Lines of a server's stderr quoted in a failed cell's reason.
const STDERR_TAIL_LINES: usize = 20;

/// A `ringside serve` child's readiness line, and its counters line on exit.
const LISTENING: &str = "listening on ";
const COUNTERS: &str = "counters ";

/// How a cell's server is started: ringside's own `serve` child (or a stand-in printing
/// `listening on`), or an external contender's command (`--contender`).
pub(crate) enum Launch {
    /// A command that prints `listening on ADDR`, confined to `cpus`.
    Child { cmd: Command, cpus: Vec<u32> },
    /// An external contender, confined to `cpus`; ready once its port accepts connections.
    External { ext: External, cpus: Vec<u32> },
    /// `ringside remote-serve` on another host over SSH (`run --server-host`): the server runs
    /// and is measured there, under that host's CPU plan; ready on its `listening on ADDR`.
    Remote { cmd: Command, host: String },
}

impl Launch {
    /// The CPUs the server may use.
    pub(crate) fn cpus(&self) -> &[u32] {
        match self {
            Launch::Child { cpus, .. } | Launch::External { cpus, .. } => cpus,
            // On another host: none of this host's.
            Launch::Remote { .. } => &[],
        }
    }

    /// Starts it and waits until it accepts connections.
    pub(crate) fn start(self) -> Result<UnderTest, CaseError> {
        match self {
            Launch::Child { cmd, cpus } => {
                let program = cmd.get_program().to_owned();
                let child = Spec::new("server", cmd)
                    .cpus(&cpus)
                    .keep_lines(&[LISTENING, COUNTERS])
                    .grace(Duration::from_secs(1))
                    .spawn()
                    .map_err(|e| {
                        CaseError::Failed(anyhow::anyhow!("cannot start {program:?}: {e}"))
                    })?;
                let (child, addr) = wait_listening(child)?;
                Ok(UnderTest::Child { child, addr })
            }
            Launch::Remote { cmd, host } => {
                // A group of its own: the terminal's Ctrl-C goes to ringside, which ends the
                // repetition in progress itself, not to ssh (which would end it as a failure).
                let child = Spec::new(format!("server on {host}"), cmd)
                    .own_group()
                    .keep_lines(&[LISTENING, FIGURES])
                    .stdin_piped()
                    .grace(Duration::from_secs(1))
                    .spawn()
                    .map_err(|e| CaseError::Failed(anyhow::anyhow!("cannot start ssh: {e}")))?;
                let (child, addr) = wait_listening(child)?;
                Ok(UnderTest::Remote { child, addr })
            }
            Launch::External { ext, cpus } => {
                let opts = StartOpts {
                    cpus: Some(cpus),
                    ..Default::default()
                };
                let running = ext
                    .start(&opts)
                    .map_err(|e| CaseError::Failed(anyhow::anyhow!("{e:#}")))?;
                // The processes to measure: those of its group when it serves (a master and its
                // workers); at each edge of a window, the group's members then
                // ([`UnderTest::read_cpu`]), so a server that forks per connection counts whole.
                let pids = running.group_pids();
                Ok(UnderTest::External { running, pids })
            }
        }
    }
}

/// Waits for a child's `listening on ADDR`; the cell's error when it never comes.
fn wait_listening(child: child::Child) -> Result<(child::Child, SocketAddr), CaseError> {
    wait_listening_within(child, READY_WITHIN)
}

/// [`wait_listening`], waiting at most `within`. A child that is stopped (SIGSTOP, a
/// debugger) when the wait ends is named as stopped: it could not have said anything.
fn wait_listening_within(
    mut child: child::Child,
    within: Duration,
) -> Result<(child::Child, SocketAddr), CaseError> {
    match child.wait_ready(Ready::Line(LISTENING), within) {
        Ok(Some(addr)) => Ok((child, addr)),
        Ok(None) => unreachable!("a line carries the address"),
        Err(e) => {
            let why = match e {
                NotReady::Exited(st) => {
                    format!("server exited ({st}) before listening")
                }
                NotReady::ClosedStdout(st) => format!(
                    "server closed stdout before listening ({})",
                    st.map_or("still running".into(), |s| s.to_string())
                ),
                NotReady::TimedOut(d) if child::is_stopped(child.pid()) => format!(
                    "server did not print 'listening on' within {d:?}: it was stopped (state \
                     T: SIGSTOP or a debugger) before it said it was listening"
                ),
                NotReady::TimedOut(d) => {
                    format!("server did not print 'listening on' within {d:?}")
                }
            };
            child.stop();
            Err(verdict(&child, &why))
        }
    }
}

/// The cell's error for a child that failed: `unavailable` when it exited with
/// [`child::EXIT_UNAVAILABLE`] (the reason: its last stderr line, less any `error:` and
/// `unavailable:` lead), else `failed` with `why` and its stderr tail.
fn verdict(c: &child::Child, why: &str) -> CaseError {
    let tail = c.stderr_tail(STDERR_TAIL_LINES);
    if c.said_unavailable() {
        let last = tail
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        let reason = last
            .split_once("unavailable: ")
            .map_or(last, |(_, r)| r)
            .trim();
        return CaseError::unavailable(if reason.is_empty() {
            format!(
                "{} exited {}: unavailable here",
                c.what(),
                child::EXIT_UNAVAILABLE
            )
        } else {
            reason.to_string()
        });
    }
    let tail = tail.trim();
    CaseError::Failed(anyhow::anyhow!(if tail.is_empty() {
        format!("{why} (stderr empty)")
    } else {
        format!("{why}; stderr tail: {tail}")
    }))
}

/// A started server under test, whichever way it was started.
pub(crate) enum UnderTest {
    Child {
        child: child::Child,
        addr: SocketAddr,
    },
    External {
        running: Running,
        pids: Vec<u32>,
    },
    /// On another host, through the `ssh` child: measured there ([`UnderTest::finish_remote`]).
    Remote {
        child: child::Child,
        addr: SocketAddr,
    },
}

impl UnderTest {
    pub(crate) fn addr(&self) -> SocketAddr {
        match self {
            UnderTest::Child { addr, .. } | UnderTest::Remote { addr, .. } => *addr,
            UnderTest::External { running, .. } => running.addr(),
        }
    }

    /// Whether it runs on another host (measured there, not from this host's /proc).
    pub(crate) fn is_remote(&self) -> bool {
        matches!(self, UnderTest::Remote { .. })
    }

    /// Every process on this host whose CPU and syscalls are the server's (none for a remote
    /// server).
    pub(crate) fn pids(&self) -> Vec<u32> {
        match self {
            UnderTest::Remote { .. } => Vec::new(),
            UnderTest::Child { child, .. } => vec![child.pid()],
            UnderTest::External { pids, running } if pids.is_empty() => vec![running.pid()],
            UnderTest::External { pids, .. } => pids.clone(),
        }
    }

    /// Every process of the server on this host now (none for a remote server): an external
    /// contender's cgroup members (or process group's), which grow as it forks.
    pub(crate) fn members(&self) -> Vec<u32> {
        match self {
            UnderTest::External { running, .. } => running.members(),
            _ => self.pids(),
        }
    }

    /// The server's CPU now (`None`: unreadable, a process gone). An external contender's is
    /// its cgroup's, every process it ever started included; without a cgroup, read over its
    /// process group's members now, with what they reaped: it may fork per connection, and
    /// what it forks was not there when it started. Zombies are members: a worker whose
    /// connection the load generator closed before the window's closing edge was read (a
    /// busy machine delays that read) would otherwise take its whole CPU out of the sum, and
    /// the window's CPU read 0.
    pub(crate) fn read_cpu(&self) -> Option<crate::measure::cpu::ProcessesReading> {
        match self {
            UnderTest::External { running, .. } => match running.cgroup() {
                Some(cg) => crate::measure::cpu::cgroup(cg),
                None => {
                    crate::measure::cpu::processes_live(&child::group_processes(running.pgid()))
                }
            },
            _ => crate::measure::cpu::processes(&self.pids()),
        }
    }

    /// How it ended, if it has (`None`: still serving).
    pub(crate) fn exited(&mut self) -> Option<String> {
        match self {
            UnderTest::Child { child, .. } | UnderTest::Remote { child, .. } => {
                child.try_exit().map(|s| s.to_string())
            }
            UnderTest::External { running, .. } => {
                running.check_alive().err().map(|e| format!("{e:#}"))
            }
        }
    }

    /// The cell's error for `why`, with the server's stderr tail (`unavailable` when it exited
    /// saying so).
    pub(crate) fn fail(&self, why: &str) -> CaseError {
        match self {
            UnderTest::Child { child, .. } => verdict(child, why),
            // "server on HOST (through ssh): server died during the run (exit status: 255)"
            UnderTest::Remote { child, .. } => {
                verdict(child, &format!("{} (through ssh): {why}", child.what()))
            }
            UnderTest::External { running, .. } => verdict(running.child(), why),
        }
    }

    /// Stops it (SIGTERM, SIGKILL after `within`); ringside's own servers report their
    /// counters (`server_` prefix). A server that needed SIGKILL or exited with an error fails
    /// the cell.
    pub(crate) fn stop(self, within: Duration) -> Result<Counters, CaseError> {
        match self {
            UnderTest::Child { mut child, .. } => {
                let stopped = child::is_stopped(child.pid());
                let s = child.stop_within(within);
                if s.killed {
                    let why = if stopped {
                        format!(
                            "server did not exit within {within:?} of SIGTERM: it was stopped \
                             (state T: SIGSTOP or a debugger), so it could not act on it"
                        )
                    } else {
                        format!("server did not exit within {within:?} of SIGTERM")
                    };
                    return Err(verdict(&child, &why));
                }
                let Some(status) = s.status else {
                    return Err(verdict(&child, "server could not be reaped"));
                };
                if !status.success() {
                    return Err(verdict(
                        &child,
                        &format!("server exited with {status} on SIGTERM"),
                    ));
                }
                Ok(server_counters(child.line(COUNTERS).as_deref()))
            }
            UnderTest::External { running, .. } => {
                running
                    .stop()
                    .map_err(|e| CaseError::Failed(anyhow::anyhow!("{e:#}")))?;
                Ok(Counters::default())
            }
            s @ UnderTest::Remote { .. } => s.finish_remote(within).map(|f| f.counters),
        }
    }

    /// A remote server: tells it that the measured window opens or closes (it reads its
    /// server's CPU and syscalls then, on its host). Nothing for a local one.
    pub(crate) fn edge(&mut self, open: bool) {
        if let UnderTest::Remote { child, .. } = self {
            // A remote end that is gone shows when it is stopped.
            let _ = child.send_line(if open { "open" } else { "close" });
        }
    }

    /// Stops a remote server (`stop`, then EOF on its stdin; SSH ends with it) and returns
    /// what it measured on its host. A local server is stopped and has no such figures.
    pub(crate) fn finish_remote(self, within: Duration) -> Result<Figures, CaseError> {
        let mut child = match self {
            UnderTest::Remote { child, .. } => child,
            other => {
                other.stop(within)?;
                return Err(CaseError::Failed(anyhow::anyhow!(
                    "not a remote server: no remote figures"
                )));
            }
        };
        let _ = child.send_line("stop");
        child.close_stdin();
        // The remote end stops its server (up to `within`), then SSH closes.
        let Some(status) = child.wait_exit_within(within + Duration::from_secs(5)) else {
            child.stop();
            return Err(verdict(
                &child,
                &format!("the remote server did not stop within {within:?}"),
            ));
        };
        if !status.success() {
            return Err(verdict(
                &child,
                &format!("the remote server (through ssh) exited with {status}"),
            ));
        }
        let line = child.line(FIGURES).ok_or_else(|| {
            if child.line_overlong(FIGURES) {
                verdict(
                    &child,
                    &format!(
                        "the remote server's figures line was over {} KiB, the most a line \
                         may hold, and was dropped",
                        child::STDOUT_LINE_BYTES / 1024
                    ),
                )
            } else {
                verdict(
                    &child,
                    "the remote server ended without reporting its figures",
                )
            }
        })?;
        serde_json::from_str(&line).map_err(|e| {
            CaseError::Failed(anyhow::anyhow!("the remote server's figures: {e}: {line}"))
        })
    }
}

/// The numbers of a `counters <json>` line, each name prefixed `server_`.
fn server_counters(line: Option<&str>) -> Counters {
    let mut counters = Counters::default();
    if let Some(Ok(serde_json::Value::Object(m))) = line.map(serde_json::from_str) {
        for (k, v) in m {
            if let Some(n) = v.as_u64() {
                counters.add(&format!("server_{k}"), n);
            }
        }
    }
    counters
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Launch {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        Launch::Child {
            cmd: c,
            cpus: crate::measure::pin::allowed_cpus(),
        }
    }

    #[test]
    fn unavailable_is_the_exit_code_not_a_word_on_stderr() {
        match sh("echo 'error: unavailable: no SQPOLL here' >&2; exit 69").start() {
            Err(CaseError::Unavailable(why)) => assert_eq!(why, "no SQPOLL here"),
            Err(e) => panic!("expected unavailable, got {e}"),
            Ok(_) => panic!("expected unavailable, got a server"),
        }
        match sh("echo 'error: unavailable: no SQPOLL here' >&2; exit 1").start() {
            Err(CaseError::Failed(e)) => {
                let s = format!("{e:#}");
                assert!(
                    s.contains("before listening") && s.contains("no SQPOLL"),
                    "{s}"
                );
            }
            Err(e) => panic!("expected failed, got {e}"),
            Ok(_) => panic!("expected failed, got a server"),
        }
    }

    /// Issue 46 item 9: a server stopped (SIGSTOP) before it printed `listening on` is named
    /// as stopped, not only late.
    #[test]
    fn a_server_stopped_before_listening_is_named_stopped() {
        let Launch::Child { cmd, .. } = sh("kill -STOP $$; echo never") else {
            unreachable!()
        };
        let c = Spec::new("server", cmd)
            .keep_lines(&[LISTENING])
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        // Long enough for a busy machine to start the shell and stop it.
        match wait_listening_within(c, Duration::from_secs(3)) {
            Err(CaseError::Failed(e)) => {
                let why = format!("{e:#}");
                assert!(why.contains("it was stopped (state T"), "{why}");
            }
            Err(e) => panic!("expected failed, got {e}"),
            Ok(_) => panic!("a stopped server never listens"),
        }
    }

    #[test]
    fn counters_are_read_from_the_last_line_and_stop_is_checked() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        // Announces, then on SIGTERM prints its counters and exits 0.
        let s = sh(&format!(
            "trap 'echo \"counters {{\\\"accepts\\\":3,\\\"x\\\":\\\"y\\\"}}\"; exit 0' TERM; \
             echo 'listening on {a}'; while :; do sleep 0.05; done"
        ))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.addr(), a);
        let c = s
            .stop(Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.get("server_accepts"), 3);
        // One that ignores SIGTERM fails the cell after the bound.
        let s = sh(&format!(
            "trap '' TERM; echo 'listening on {a}'; while :; do sleep 0.05; done"
        ))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
        match s.stop(Duration::from_millis(200)) {
            Err(CaseError::Failed(e)) => {
                assert!(format!("{e:#}").contains("did not exit"), "{e:#}")
            }
            _ => panic!("a server that ignores SIGTERM must fail its cell"),
        }
        drop(l);
    }
}
