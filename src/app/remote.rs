//! The hidden subcommands another host's ringside runs over SSH (see `src/remote/mod.rs`):
//! `remote-serve` (one repetition's server, measured on this host), `remote-load` (one load
//! host's share of a repetition's load, see `src/load/remote.rs`) and `remote-env` (this
//! host's environment and network path back to the SSH client).
//!
//! `remote-serve` dies with its SSH session: it watches its stdin, and EOF (the session
//! ended, the client died or was killed) stops its server at once, as does the server's own
//! end; the server is a supervised child (PR_SET_PDEATHSIG), so it never outlives this process.

use crate::child::{announce, EXIT_UNAVAILABLE};
use crate::cli::{LoadProtocolArg, RemoteLoadArgs, RemoteServeArgs, RunArgs};
use crate::env::netpath;
use crate::error::{CaseError, InputError};
use crate::load::echo::{MAX_MSG_BYTES, MIN_MSG_BYTES};
use crate::load::{Config, Edge, Wire};
use crate::measure::syscalls::{Scope, SyscallCounter};
use crate::measure::topology;
use crate::registry::{self, MODELS};
use crate::remote::{
    self, EdgeReading, Figures, Host, HostError, HostProbe, Remote, Ssh, FIGURES, LOAD_READY,
    REPORT, WINDOW_CLOSE, WINDOW_OPEN,
};
use crate::results::schema::HostRecord;
use crate::workload::net::cell::STOP_WITHIN;
use crate::workload::net::echo::serve_command_on;
use crate::workload::net::launch::Launch;
use crate::workload::Workload;
use std::io::BufRead;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// How often the server's own end is checked while waiting for a line.
const WATCH: Duration = Duration::from_millis(50);

pub(crate) fn serve(a: RemoteServeArgs) -> anyhow::Result<i32> {
    let Some(m) = registry::model(&a.model) else {
        return Err(InputError::UnknownModel {
            given: a.model,
            valid: MODELS.iter().map(|m| m.id).collect::<Vec<_>>().join(", "),
        }
        .into());
    };
    // This host's own CPU plan, with as many server CPUs as the client's plan has.
    let mut plan = topology::plan(&topology::Topology::read(), &topology::Request::default())
        .map_err(|e| anyhow::anyhow!("CPU plan: {e}"))?;
    if a.server_threads > 1 {
        plan = plan.with_server_threads(a.server_threads);
    }
    let addr = a.addr.unwrap_or_else(|| match remote::ssh_connection() {
        Some((_, me)) if me.contains(':') => format!("[{me}]:0"),
        Some((_, me)) => format!("{me}:0"),
        None => "127.0.0.1:0".into(),
    });
    let say = |e: CaseError| -> i32 {
        match e {
            CaseError::Unavailable(why) => {
                eprintln!("error: unavailable: {why}");
                EXIT_UNAVAILABLE
            }
            CaseError::NotApplicable(why) => {
                eprintln!("error: {why}");
                1
            }
            CaseError::Failed(e) | CaseError::Stalled(e) => {
                eprintln!("error: {e:#}");
                1
            }
        }
    };
    let (cmd, cpus) = match serve_command_on(m, &plan, a.protocol.into(), &addr) {
        Ok(x) => x,
        Err(e) => return Ok(say(e)),
    };
    let mut server = match (Launch::Child {
        cmd,
        cpus: cpus.clone(),
    })
    .start()
    {
        Ok(s) => s,
        Err(e) => return Ok(say(e)),
    };
    let pids = server.pids();
    let counters: Option<Result<Vec<SyscallCounter>, String>> = a.count_syscalls.then(|| {
        pids.iter()
            .map(|&p| SyscallCounter::open(Scope::Process(p)))
            .collect()
    });
    // Lines from the client; `None` (or a closed channel) is EOF: the session is over.
    let (tx, rx) = mpsc::channel::<Option<String>>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(l) = line else { break };
            if tx.send(Some(l)).is_err() {
                return;
            }
        }
        let _ = tx.send(None);
    });
    announce(&format!("listening on {}", server.addr()))?;
    let live: Option<&[SyscallCounter]> = match &counters {
        Some(Ok(cs)) => Some(cs.as_slice()),
        _ => None,
    };
    let mut fig = Figures {
        server_cpus: cpus,
        plan: Some(plan),
        ..Default::default()
    };
    loop {
        match rx.recv_timeout(WATCH) {
            Ok(Some(l)) => match l.trim() {
                "open" => fig.open = EdgeReading::read(&pids, live),
                "close" => fig.close = EdgeReading::read(&pids, live),
                "stop" => break,
                _ => {}
            },
            Ok(None) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {}
        }
        if let Some(how) = server.exited() {
            let e = server.fail(&format!("server died during the run ({how})"));
            return Ok(say(e));
        }
    }
    fig.syscalls = counters.as_ref().map(|c| match c {
        Ok(cs) => Ok(cs.iter().map(|c| c.window_overhead()).sum()),
        Err(why) => Err(why.clone()),
    });
    drop(counters);
    match server.stop(STOP_WITHIN) {
        Ok(c) => fig.counters = c,
        Err(e) => return Ok(say(e)),
    }
    // The client may be gone (EOF above): nobody reads this, and that is fine.
    let _ = announce(&format!("{FIGURES}{}", serde_json::to_string(&fig)?));
    Ok(0)
}

/// `remote-env`: this host's [`HostProbe`] as one JSON line.
pub(crate) fn env() -> anyhow::Result<i32> {
    let peer = remote::ssh_connection()
        .map(|(client, _)| client)
        .unwrap_or_else(|| "127.0.0.1".into());
    let p = HostProbe {
        ringside: remote::version_line(),
        env: crate::env::probe(),
        plan: topology::plan(&topology::Topology::read(), &topology::Request::default()).ok(),
        path: crate::env::netpath::toward(&peer),
    };
    super::stdout::write(format!("{}\n", serde_json::to_string(&p)?).as_bytes())?;
    Ok(0)
}

/// A stop asked of `remote-load` (`stop` on stdin, or EOF: the SSH session ended).
static LOAD_STOP: AtomicBool = AtomicBool::new(false);

/// `remote-load`: this host's share of a repetition's load, under this host's own CPU plan
/// (every CPU it allows: no server runs here). Says `ready`, waits for `go`, runs the load
/// generator exactly as `ringside run` does locally, announcing its window's edges, and
/// prints its report as one JSON line. EOF on stdin (the session ended) stops it at once.
pub(crate) fn load(a: RemoteLoadArgs) -> anyhow::Result<i32> {
    let target: SocketAddr = a.target.parse().map_err(|_| InputError::BadValue {
        flag: "--target",
        given: a.target.clone(),
        valid: "an IP address and port".into(),
    })?;
    let wire = match a.protocol {
        LoadProtocolArg::Echo => {
            let n = a.msg_bytes.unwrap_or(64);
            if !(MIN_MSG_BYTES..=MAX_MSG_BYTES).contains(&n) {
                return Err(InputError::BadValue {
                    flag: "--msg-bytes",
                    given: n.to_string(),
                    valid: format!("{MIN_MSG_BYTES}..={MAX_MSG_BYTES}"),
                }
                .into());
            }
            Wire::Echo { msg_bytes: n }
        }
        LoadProtocolArg::Http => Wire::Http {
            path: a.path.clone(),
            body_bytes: a.body_bytes,
        },
    };
    if a.conns == 0 || a.rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
        anyhow::bail!("--conns must be at least 1 and --rate a positive rate");
    }
    let plan = topology::plan(&topology::Topology::read(), &topology::Request::default())
        .map_err(|e| anyhow::anyhow!("CPU plan: {e}"))?;
    let mut cpus = plan.load_cpus();
    cpus.extend(plan.server_cpus());
    cpus.sort_unstable();
    cpus.dedup();
    let mut cfg = Config::new(target, a.conns, Duration::from_millis(a.duration_ms));
    cfg.warmup = Duration::from_millis(a.warmup_ms);
    cfg.rate = a.rate;
    cfg.threads = cpus.len();
    cfg.cpus = cpus;
    cfg.stop = Some(&LOAD_STOP);
    let (tx, rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(l) = line else { break };
            match l.trim() {
                "go" => {
                    let _ = tx.send(());
                }
                "stop" => LOAD_STOP.store(true, Ordering::SeqCst),
                _ => {}
            }
        }
        // EOF: the session is over; nobody will read a report.
        LOAD_STOP.store(true, Ordering::SeqCst);
    });
    announce(LOAD_READY)?;
    if rx.recv().is_err() || LOAD_STOP.load(Ordering::SeqCst) {
        eprintln!("error: the session ended before 'go'");
        return Ok(1);
    }
    let ex = wire.exchange();
    let report = crate::load::run(&cfg, &*ex, &mut |e| {
        let _ = announce(match e {
            Edge::Open => WINDOW_OPEN,
            Edge::Close => WINDOW_CLOSE,
        });
    })?;
    // The client may be gone (EOF): nobody reads this, and that is fine.
    let _ = announce(&format!("{REPORT}{}", serde_json::to_string(&report)?));
    Ok(0)
}

/// `run --server-host` / `--load-host`: refuses `--load-host` for suites whose load cannot
/// run elsewhere (exit 2, naming the ones that can), parses the hosts (bad: exit 2), checks
/// that each runs this very ringside (another version: refused, both named), probes each
/// one's environment and the network path both ways, picks the address servers here listen
/// on for the load hosts, and returns the run's [`Remote`] (`None`: no other host). A host
/// that cannot be reached, refuses the key or lacks ringside does not stop the run: the cells
/// that need it fail with the SSH error. The records go into results.json (`hosts`): this
/// host first.
pub(crate) fn setup(
    a: &RunArgs,
    workloads: &[&'static dyn Workload],
) -> anyhow::Result<(Vec<HostRecord>, Option<Remote>)> {
    if a.load_hosts.is_empty() {
        if let Some(b) = &a.bind {
            return Err(InputError::BadValue {
                flag: "--bind",
                given: b.clone(),
                valid: "only with --load-host (the address the load hosts reach servers here at)"
                    .into(),
            }
            .into());
        }
        if a.server_host.is_none() {
            return Ok((Vec::new(), None));
        }
    } else {
        refuse_suites_without_remote_load(workloads)?;
    }
    let server = a
        .server_host
        .as_deref()
        .map(|s| parse_host("--server-host", s))
        .transpose()?;
    let loads = a
        .load_hosts
        .iter()
        .map(|s| parse_host("--load-host", s))
        .collect::<Result<Vec<_>, _>>()?;
    let bind: Option<IpAddr> = a
        .bind
        .as_deref()
        .map(|b| {
            b.trim_matches(|c| c == '[' || c == ']')
                .parse()
                .map_err(|_| InputError::BadValue {
                    flag: "--bind",
                    given: b.into(),
                    valid: "an IP address of this host (10.0.0.1, fd00::1)".into(),
                })
        })
        .transpose()?;
    let ssh = Ssh {
        opts: a.ssh_opts.clone(),
        bin: a.remote_ringside.clone(),
    };
    let mut here = HostRecord {
        role: match (&server, loads.is_empty()) {
            (None, _) => "server",
            (Some(_), true) => "client",
            (Some(_), false) => "controller",
        }
        .into(),
        host: "here".into(),
        ringside: Some(remote::version_line()),
        ..Default::default()
    };
    let mut records = Vec::new();
    let mut server_error = None;
    if let Some(h) = &server {
        let (rec, probe) = probe_host(&ssh, h, "--server-host", "server")?;
        server_error = rec.error.clone();
        if let Some(p) = &probe {
            here.path = p.path.local_addr.as_deref().map(netpath::toward);
        }
        records.push(rec);
    }
    let mut load_error = None;
    // The address each load host saw this host's SSH connection come from.
    let mut seen: Vec<(String, IpAddr)> = Vec::new();
    for h in &loads {
        let (rec, probe) = probe_host(&ssh, h, "--load-host", "load")?;
        if load_error.is_none() {
            load_error = rec
                .error
                .as_ref()
                .map(|e| format!("load host {}: {e}", h.spec));
        }
        if let Some(p) = &probe {
            if here.path.is_none() {
                here.path = p.path.local_addr.as_deref().map(netpath::toward);
            }
            if let Ok(ip) = p.path.peer.parse() {
                seen.push((h.spec.clone(), ip));
            }
        }
        records.push(rec);
    }
    let bind = if loads.is_empty() {
        None
    } else {
        listen_address(bind, &seen, server.is_some())?
    };
    if let Some(e) = &server_error {
        eprintln!(
            "ringside: server host {} cannot be used, its cells fail: {e}",
            a.server_host.as_deref().unwrap_or("")
        );
    }
    if let Some(e) = &load_error {
        eprintln!("ringside: the echo and HTTP cells fail: {e}");
    }
    records.insert(0, here);
    let remote = Remote {
        ssh,
        server,
        server_error,
        load: loads,
        load_error,
        bind,
    };
    Ok((records, Some(remote)))
}

/// `--load-host` with a workload whose load cannot run elsewhere (`Workload::remote_load`):
/// exit 2, naming the ones that take it.
fn refuse_suites_without_remote_load(
    workloads: &[&'static dyn Workload],
) -> Result<(), InputError> {
    let refused: Vec<&str> = workloads
        .iter()
        .filter(|w| !w.remote_load())
        .map(|w| w.id())
        .collect();
    if refused.is_empty() {
        return Ok(());
    }
    let takes: Vec<&str> = registry::WORKLOADS
        .iter()
        .filter(|w| w.remote_load())
        .map(|w| w.id())
        .collect();
    let mut suites: Vec<&str> = takes.iter().map(|id| registry::suite_of(id)).collect();
    suites.sort_unstable();
    suites.dedup();
    Err(InputError::BadValue {
        flag: "--load-host",
        given: refused.join(", "),
        valid: format!(
            "these cannot run their load on another host; --load-host takes the {} suites \
             only ({}): name those, or run the others without --load-host",
            suites.join(" and "),
            takes.join(", ")
        ),
    })
}

fn parse_host(flag: &'static str, spec: &str) -> Result<Host, InputError> {
    Host::parse(spec).map_err(|why| InputError::BadValue {
        flag,
        given: spec.to_string(),
        valid: format!("[USER@]HOST[:PORT] ({why})"),
    })
}

/// Checks `host`'s version (another: exit 2, both named) and probes it: its record (with the
/// SSH error when it cannot be used) and its probe when it can.
fn probe_host(
    ssh: &Ssh,
    host: &Host,
    flag: &'static str,
    role: &str,
) -> Result<(HostRecord, Option<HostProbe>), InputError> {
    let mut rec = HostRecord {
        role: role.into(),
        host: host.spec.clone(),
        ..Default::default()
    };
    let probe = match remote::check_version(ssh, host) {
        Err(HostError::Mismatch { here, there, .. }) => {
            return Err(InputError::BadValue {
                flag,
                given: host.spec.clone(),
                valid: format!(
                    "runs '{there}' but this is '{here}': every host must run the same \
                     ringside (version and git commit)"
                ),
            })
        }
        Err(HostError::Ssh(e)) => Err(e),
        Ok(()) => remote::probe(ssh, host),
    };
    match probe {
        Ok(p) => {
            rec.ringside = Some(p.ringside.clone());
            rec.env = Some(p.env.clone());
            rec.plan = p.plan.clone();
            rec.path = Some(p.path.clone());
            Ok((rec, Some(p)))
        }
        Err(e) => {
            rec.error = Some(e);
            Ok((rec, None))
        }
    }
}

/// The address servers listen on for the load hosts: `--bind`, else the one address every
/// load host saw this host's SSH connection come from (with a server host: `--bind` only, or
/// its own default). Refused (exit 2) when loopback-only while a load host is elsewhere, or
/// when the hosts saw different addresses.
fn listen_address(
    bind: Option<IpAddr>,
    seen: &[(String, IpAddr)],
    server_elsewhere: bool,
) -> Result<Option<IpAddr>, InputError> {
    if let Some(b) = bind {
        if b.is_loopback() || b.is_unspecified() {
            if let Some((h, ip)) = seen.iter().find(|(_, ip)| !ip.is_loopback()) {
                return Err(InputError::BadValue {
                    flag: "--bind",
                    given: b.to_string(),
                    valid: format!(
                        "{} cannot be reached from load host {h}, which reaches this host \
                         at {ip}: pass an address the load hosts reach, e.g. --bind {ip}",
                        if b.is_loopback() {
                            "a loopback-only address"
                        } else {
                            "not one address:"
                        }
                    ),
                });
            }
        }
        return Ok(Some(b));
    }
    if server_elsewhere {
        return Ok(None);
    }
    let mut ips: Vec<IpAddr> = seen.iter().map(|(_, ip)| *ip).collect();
    ips.sort();
    ips.dedup();
    match ips.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        _ => Err(InputError::BadValue {
            flag: "--load-host",
            given: seen
                .iter()
                .map(|(h, _)| h.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            valid: format!(
                "the load hosts reach this host at different addresses ({}): pass --bind \
                 ADDR, an address of this host every load host reaches",
                seen.iter()
                    .map(|(h, ip)| format!("{ip} from {h}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn servers_listen_where_the_load_hosts_saw_this_host() {
        let seen = vec![
            ("a".to_string(), ip("10.0.0.1")),
            ("b".into(), ip("10.0.0.1")),
        ];
        assert_eq!(
            listen_address(None, &seen, false).unwrap(),
            Some(ip("10.0.0.1"))
        );
        // --bind wins; with a server host only --bind says.
        assert_eq!(
            listen_address(Some(ip("10.0.0.9")), &seen, false).unwrap(),
            Some(ip("10.0.0.9"))
        );
        assert_eq!(listen_address(None, &seen, true).unwrap(), None);
        // A load host on this machine (reached over loopback) may use loopback.
        let local = vec![("localhost".to_string(), ip("127.0.0.1"))];
        assert_eq!(
            listen_address(Some(ip("127.0.0.1")), &local, false).unwrap(),
            Some(ip("127.0.0.1"))
        );
    }

    #[test]
    fn loopback_only_or_ambiguous_addresses_are_refused_saying_why() {
        let seen = vec![("root@b".to_string(), ip("10.0.0.1"))];
        let e = listen_address(Some(ip("127.0.0.1")), &seen, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--bind 127.0.0.1") && e.contains("loopback-only"),
            "{e}"
        );
        assert!(e.contains("root@b") && e.contains("--bind 10.0.0.1"), "{e}");
        let two = vec![
            ("a".to_string(), ip("10.0.0.1")),
            ("b".into(), ip("10.0.1.1")),
        ];
        let e = listen_address(None, &two, false).unwrap_err().to_string();
        assert!(e.contains("10.0.1.1 from b") && e.contains("--bind"), "{e}");
    }

    #[test]
    fn only_the_echo_and_http_suites_take_a_load_host() {
        let w = |id| registry::workload(id).unwrap();
        assert!(refuse_suites_without_remote_load(&[w("echo.conns"), w("http.clients")]).is_ok());
        let e = refuse_suites_without_remote_load(&[w("echo.conns"), w("micro.pipe")])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--load-host micro.pipe:"), "{e}");
        assert!(
            e.contains("echo.conns") && e.contains("http.clients"),
            "{e}"
        );
    }
}
