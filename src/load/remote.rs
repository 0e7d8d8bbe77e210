//! The load generator on other hosts (`ringside run --load-host HOST`, repeatable): each
//! repetition starts `ringside remote-load` on every load host over SSH (a supervised child in
//! a process group of its own, with a stdin pipe), each with its share of the connections and
//! of the offered rate. Each sets itself up under its own host's CPU plan and says `ready`;
//! once all have, each is sent `go` and connects, warms up and measures exactly as [`run`]
//! does here, printing `window open` / `window close` at its window's edges and its
//! [`Report`] as one JSON line (`report <json>`, the latency histogram as base64 of its V2
//! serialisation). The server's window edges are taken here as the hosts announce theirs: it
//! opens once every host's window is open and closes when the first one closes, so it spans
//! the time every host was loading the server (the readings are rescaled to the window, as
//! for a local load generator). The reports are added up ([`Report::merge`]: counts summed,
//! histograms added, headroom judged per host).
//!
//! A host that cannot be reached, refuses the key, lacks ringside or dies mid-run fails the
//! repetition with the SSH error (ssh's stderr tail); the other hosts' sessions are ended, and
//! a remote end dies with its session (EOF on its stdin stops its load generator at once).
//! Ctrl-C here sends `stop`: the hosts close their windows early and report (`interrupted`).

use super::{Config, Edge, Report, Wire};
use crate::child::{self, NotReady};
use crate::remote::{Host, Remote, LOAD_READY, REPORT, WINDOW_CLOSE, WINDOW_OPEN};
use std::time::{Duration, Instant};

/// How long a load host may take to connect over SSH and set up.
pub(crate) const READY_WITHIN: Duration = Duration::from_secs(30);

/// Beyond the warm-up and window: time for connecting, the report and the network.
const SLACK: Duration = Duration::from_secs(15);

/// Lines of ssh's (or the remote end's) stderr quoted in an error.
const STDERR_LINES: usize = 10;

/// The `remote-load` words (after the binary) for one host's share of a run.
pub(crate) fn args(cfg: &Config, wire: &Wire, conns: usize, rate: Option<f64>) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "remote-load".into(),
        "--target".into(),
        cfg.target.to_string(),
        "--conns".into(),
        conns.to_string(),
        "--warmup-ms".into(),
        cfg.warmup.as_millis().to_string(),
        "--duration-ms".into(),
        cfg.duration.as_millis().to_string(),
    ];
    if let Some(r) = rate {
        a.extend(["--rate".into(), format!("{r}")]);
    }
    match wire {
        Wire::Echo { msg_bytes } => {
            a.extend(["--protocol".into(), "echo".into()]);
            a.extend(["--msg-bytes".into(), msg_bytes.to_string()]);
        }
        Wire::Http { path, body_bytes } => {
            a.extend(["--protocol".into(), "http".into(), "--path".into()]);
            a.push(path.clone());
            if let Some(b) = body_bytes {
                a.extend(["--body-bytes".into(), b.to_string()]);
            }
        }
    }
    a
}

/// Connections (and the matching share of the rate) of each host: as even as can be, every
/// host at least one (so with fewer connections than hosts, only the first hosts take part).
pub(crate) fn shares(conns: usize, hosts: usize) -> Vec<usize> {
    let n = hosts.min(conns).max(1);
    (0..n)
        .map(|i| conns / n + usize::from(i < conns % n))
        .collect()
}

/// One load host's session.
struct Session<'a> {
    host: &'a Host,
    child: child::Child,
    /// It said `ready` (the SSH session was up and ringside ran there).
    ready: bool,
    /// Its share of the connections and of the offered rate.
    conns: usize,
    rate: Option<f64>,
}

impl Session<'_> {
    /// "load host H (through ssh): WHY; stderr: ...".
    fn error(&self, why: &str) -> String {
        let tail = self.child.stderr_tail(STDERR_LINES);
        let tail = tail.trim();
        let mut s = format!("load host {} (through ssh): {why}", self.host.spec);
        match self.child.exit_status().and_then(|st| st.code()) {
            Some(255) if self.ready => {
                s += " (ssh exit 255: the session or the remote ringside ended)"
            }
            Some(255) => s += " (ssh exit 255: connection or authentication failed)",
            Some(127) if !self.ready => s += " (exit 127: ringside not found there)",
            _ => {}
        }
        if !tail.is_empty() {
            s += &format!("; stderr: {tail}");
        }
        s
    }

    fn not_ready(&self, what: &str, e: NotReady) -> String {
        self.error(&match e {
            NotReady::Exited(st) => format!("ended ({st}) before {what}"),
            NotReady::ClosedStdout(_) => format!("closed its output before {what}"),
            NotReady::TimedOut(d) => format!("no {what} within {d:?}"),
        })
    }
}

/// Drives `cfg.target` from the run's load hosts with `wire`'s exchange; `edge` is called as
/// the common window opens and closes. The merged report, or the first host's error.
pub fn run(
    r: &Remote,
    cfg: &Config,
    wire: &Wire,
    edge: &mut dyn FnMut(Edge),
) -> Result<Report, String> {
    if let Some(why) = &r.load_error {
        return Err(why.clone());
    }
    if r.load.is_empty() {
        return Err("no load host".into());
    }
    let shares = shares(cfg.conns, r.load.len());
    let mut sessions = Vec::with_capacity(shares.len());
    for (host, &conns) in r.load.iter().zip(&shares) {
        let rate = cfg.rate.map(|t| t * conns as f64 / cfg.conns.max(1) as f64);
        let words = args(cfg, wire, conns, rate);
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let child = child::Spec::new(format!("load generator on {}", host.spec), {
            r.ssh.command(host, &words)
        })
        // Ctrl-C goes to ringside, which stops the hosts itself (`stop`), not to ssh.
        .own_group()
        .keep_lines(&[LOAD_READY, WINDOW_OPEN, WINDOW_CLOSE, REPORT])
        .stdin_piped()
        .grace(Duration::from_secs(1))
        .spawn()
        .map_err(|e| format!("load host {}: cannot start ssh: {e}", host.spec))?;
        sessions.push(Session {
            host,
            child,
            ready: false,
            conns,
            rate,
        });
    }
    // Dropping `sessions` (any error below) stops every ssh: the remote ends see EOF and die.
    for s in &mut sessions {
        if let Err(e) = s.child.wait_line(LOAD_READY, READY_WITHIN) {
            return Err(s.not_ready("'ready'", e));
        }
        s.ready = true;
    }
    for s in &mut sessions {
        if let Err(e) = s.child.send_line("go") {
            return Err(s.error(&format!("cannot send 'go': {e}")));
        }
    }
    let t0 = Instant::now();
    let open_by = t0 + cfg.connect_timeout + cfg.warmup + SLACK;
    let mut stopped = false;
    // Every host's window open: the server's opens. (When the first opened: below.)
    let mut first_open: Option<Instant> = None;
    let mut seen = vec![false; sessions.len()];
    while seen.iter().any(|s| !s) {
        let i = wait(
            &mut sessions,
            None,
            Some(&seen),
            WINDOW_OPEN,
            open_by,
            &mut stopped,
        )?;
        seen[i] = true;
        first_open.get_or_insert_with(Instant::now);
    }
    edge(Edge::Open);
    let opened = Instant::now();
    // The first host's window closed: the server's closes. Several hosts are looked at in
    // turn, so not before the first one's window is nearly over (no polling through the
    // window on the server's host); a host that ends early shows then.
    if sessions.len() > 1 {
        let near_end =
            first_open.unwrap_or(opened) + cfg.duration.saturating_sub(Duration::from_millis(20));
        while !crate::shutdown::stop_requested() {
            let left = near_end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }
    let close_by = opened + cfg.duration + SLACK;
    wait(
        &mut sessions,
        None,
        None,
        WINDOW_CLOSE,
        close_by,
        &mut stopped,
    )?;
    edge(Edge::Close);
    let report_by = Instant::now() + cfg.msg_timeout + SLACK;
    let mut merged: Option<(String, Report)> = None;
    for i in 0..sessions.len() {
        wait(
            &mut sessions,
            Some(i),
            None,
            REPORT,
            report_by,
            &mut stopped,
        )?;
        let s = &mut sessions[i];
        let line = s.child.line(REPORT).unwrap_or_default();
        let mut rep: Report = serde_json::from_str(&line)
            .map_err(|e| s.error(&format!("its report does not parse: {e}")))?;
        if let Some(why) = rep.implausible(s.conns, s.rate, cfg) {
            return Err(s.error(&format!("its report is implausible: {why}")));
        }
        if let Some(e) = rep.first_error.take() {
            rep.first_error = Some(format!("{}: {e}", s.host.spec));
        }
        match &mut merged {
            None => merged = Some((s.host.spec.clone(), rep)),
            Some((first, m)) => m.merge(first, &rep, &s.host.spec),
        }
    }
    for s in &mut sessions {
        s.child.close_stdin();
        if s.child.wait_exit_within(Duration::from_secs(5)).is_none() {
            s.child.stop();
        }
    }
    let (first, mut report) = merged.ok_or("no load host reported")?;
    if report.hosts.is_empty() {
        report.hosts.push(first.clone());
        if report.client_bound {
            report.bound_hosts.push(first);
        }
    }
    Ok(report)
}

/// Waits until host `which` (or, with `None`, any host not yet `seen`) has printed a
/// `prefix` line, until `by`; which one did. A host that ends or goes silent first is the
/// error. Ctrl-C here (the run's stop flag) sends every host `stop` once, so that their
/// windows close and they report.
fn wait(
    sessions: &mut [Session<'_>],
    which: Option<usize>,
    seen: Option<&[bool]>,
    prefix: &str,
    by: Instant,
    stopped: &mut bool,
) -> Result<usize, String> {
    let candidates: Vec<usize> = match which {
        Some(i) => vec![i],
        None => (0..sessions.len())
            .filter(|&i| !seen.is_some_and(|s| s[i]))
            .collect(),
    };
    // One host: its line wakes us at once. Several: each is looked at in turn, briefly.
    let step = if candidates.len() == 1 {
        Duration::from_millis(100)
    } else {
        Duration::from_millis(1)
    };
    loop {
        if !*stopped && crate::shutdown::stop_requested() {
            *stopped = true;
            for s in sessions.iter_mut() {
                let _ = s.child.send_line("stop");
            }
        }
        for &i in &candidates {
            let s = &mut sessions[i];
            match s.child.wait_line(prefix, step) {
                Ok(_) => return Ok(i),
                Err(NotReady::TimedOut(_)) => {}
                Err(e) => return Err(s.not_ready(&format!("'{}'", prefix.trim()), e)),
            }
        }
        if Instant::now() >= by {
            let s = &sessions[candidates.first().copied().unwrap_or(0)];
            return Err(s.error(&format!("no '{}' in time", prefix.trim())));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_shared_evenly_and_no_host_gets_none() {
        assert_eq!(shares(50, 1), vec![50]);
        assert_eq!(shares(50, 3), vec![17, 17, 16]);
        assert_eq!(shares(1, 3), vec![1]);
        assert_eq!(shares(2, 2), vec![1, 1]);
        for (c, h) in [(1000, 7), (5, 2), (3, 8)] {
            let s = shares(c, h);
            assert_eq!(s.iter().sum::<usize>(), c);
            assert!(s.iter().all(|&n| n >= 1));
        }
    }

    #[test]
    fn the_remote_words_carry_the_cell() {
        let mut cfg = Config::new(
            "10.1.2.3:4000".parse().unwrap(),
            50,
            Duration::from_millis(400),
        );
        cfg.warmup = Duration::from_millis(100);
        let a = args(&cfg, &Wire::Echo { msg_bytes: 64 }, 25, Some(1000.0));
        let s = a.join(" ");
        assert!(
            s.starts_with("remote-load --target 10.1.2.3:4000 --conns 25"),
            "{s}"
        );
        assert!(
            s.contains("--warmup-ms 100 --duration-ms 400 --rate 1000"),
            "{s}"
        );
        assert!(s.ends_with("--protocol echo --msg-bytes 64"), "{s}");
        let h = Wire::Http {
            path: "/".into(),
            body_bytes: Some(13),
        };
        let s = args(&cfg, &h, 50, None).join(" ");
        assert!(
            s.ends_with("--protocol http --path / --body-bytes 13"),
            "{s}"
        );
        assert!(!s.contains("--rate"), "{s}");
    }
}
