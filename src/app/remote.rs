//! The hidden subcommands another host's ringside runs over SSH (see `src/remote/mod.rs`):
//! `remote-serve` (one repetition's server, measured on this host) and `remote-env` (this
//! host's environment and network path back to the SSH client).
//!
//! `remote-serve` dies with its SSH session: it watches its stdin, and EOF (the session
//! ended, the client died or was killed) stops its server at once, as does the server's own
//! end; the server is a supervised child (PR_SET_PDEATHSIG), so it never outlives this process.

use crate::child::{announce, EXIT_UNAVAILABLE};
use crate::cli::{RemoteServeArgs, RunArgs};
use crate::error::{CaseError, InputError};
use crate::measure::syscalls::{Scope, SyscallCounter};
use crate::measure::topology;
use crate::registry::{self, MODELS};
use crate::remote::{self, EdgeReading, Figures, Host, HostError, HostProbe, Remote, Ssh, FIGURES};
use crate::results::schema::HostRecord;
use crate::workload::net::cell::STOP_WITHIN;
use crate::workload::net::echo::serve_command_on;
use crate::workload::net::launch::Launch;
use std::io::BufRead;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// How often the server's own end is checked while waiting for a line.
const WATCH: Duration = Duration::from_millis(50);

pub fn serve(a: RemoteServeArgs) -> anyhow::Result<i32> {
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
            CaseError::Failed(e) => {
                eprintln!("error: {e:#}");
                1
            }
        }
    };
    let (cmd, cpus) = match serve_command_on(m, &plan, &a.protocol, &addr) {
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
pub fn env() -> anyhow::Result<i32> {
    let peer = remote::ssh_connection()
        .map(|(client, _)| client)
        .unwrap_or_else(|| "127.0.0.1".into());
    let mut env = crate::env::probe();
    env.cpu_plan = topology::plan(&topology::Topology::read(), &topology::Request::default()).ok();
    let p = HostProbe {
        ringside: remote::version_line(),
        env,
        path: crate::env::netpath::toward(&peer),
    };
    super::stdout::write(format!("{}\n", serde_json::to_string(&p)?).as_bytes())?;
    Ok(0)
}

/// `run --server-host`: parses the host (bad: exit 2), checks that it runs this very ringside
/// (another version: refused, both named), probes its environment and the network path both
/// ways, and configures the run's [`Remote`]. A host that cannot be reached, refuses the key
/// or lacks ringside does not stop the run: its cells fail with the SSH error. The records
/// go into results.json (`hosts`): this host first.
pub fn setup(a: &RunArgs) -> anyhow::Result<Vec<HostRecord>> {
    let Some(spec) = &a.server_host else {
        return Ok(Vec::new());
    };
    let host = Host::parse(spec).map_err(|why| InputError::BadValue {
        flag: "--server-host",
        given: spec.clone(),
        valid: format!("[USER@]HOST[:PORT] ({why})"),
    })?;
    let ssh = Ssh {
        opts: a.ssh_opts.clone(),
        bin: a.remote_ringside.clone(),
    };
    let mut here = HostRecord {
        role: "client".into(),
        host: "here".into(),
        ringside: Some(remote::version_line()),
        ..Default::default()
    };
    let mut there = HostRecord {
        role: "server".into(),
        host: spec.clone(),
        ..Default::default()
    };
    let error = match remote::check_version(&ssh, &host) {
        Err(HostError::Mismatch { here, there, .. }) => {
            return Err(InputError::BadValue {
                flag: "--server-host",
                given: spec.clone(),
                valid: format!(
                    "runs '{there}' but this is '{here}': every host must run the same \
                     ringside (version and git commit)"
                ),
            }
            .into())
        }
        Err(HostError::Ssh(e)) => Some(e),
        Ok(()) => match remote::probe(&ssh, &host) {
            Ok(p) => {
                here.path = p
                    .path
                    .local_addr
                    .as_deref()
                    .map(crate::env::netpath::toward);
                there.ringside = Some(p.ringside);
                there.env = Some(p.env);
                there.path = Some(p.path);
                None
            }
            Err(e) => Some(e),
        },
    };
    if let Some(e) = &error {
        eprintln!("ringside: server host {spec} cannot be used, its cells fail: {e}");
        there.error = Some(e.clone());
    }
    remote::configure(Remote {
        ssh,
        server: Some(host),
        server_error: error,
    });
    Ok(vec![here, there])
}
