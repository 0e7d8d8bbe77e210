//! `ringside run --server-host` over real SSH: OpenSSH's sshd runs inside a server network
//! namespace (a throwaway host key and an authorized key made here with ssh-keygen), joined
//! to a client namespace by a veth pair (tests/common/netns.rs); `ringside run` runs in the
//! client namespace and starts each repetition's server on the "remote" host through ssh,
//! with the same binary by absolute path (same filesystem). Checks: every cell measured
//! (bytes verified: a mismatch would fail it), the server's CPU and syscalls measured there,
//! both hosts' environments and network paths (veth both ways) recorded; a host whose key is
//! refused fails its cells with the SSH error and the run goes on; a run killed mid-way
//! leaves nothing running on either side. Skipped, with the reason, without root, `ip`, or
//! OpenSSH (sshd, ssh, ssh-keygen), or where the namespaces or sshd cannot be started; under
//! `RINGSIDE_REQUIRE_TOOLS` (CI) each of these fails the test instead.

use crate::common;

use common::bin::bin;

use common::netns::Hosts;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";

/// A child killed on drop.
struct Kid(Child);
impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn keygen(path: &Path) {
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "ringside-test", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen");
    assert!(st.success(), "ssh-keygen {}", path.display());
}

/// sshd in the server namespace, with a key the client namespace's ssh may use.
struct Sshd {
    _kid: Kid,
    dir: tempfile::TempDir,
    /// The arguments `ringside run` passes to ssh (`--ssh-opt`).
    opts: Vec<String>,
}

impl Sshd {
    fn start(h: &Hosts) -> Result<Sshd, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let d = dir.path();
        keygen(&d.join("host_key"));
        keygen(&d.join("client_key"));
        std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys"))
            .map_err(|e| e.to_string())?;
        let config = format!(
            "ListenAddress {ip}\nPort 22\nHostKey {d}/host_key\n\
             AuthorizedKeysFile {d}/authorized_keys\nPermitRootLogin prohibit-password\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
             StrictModes no\nPidFile none\nLogLevel ERROR\n",
            ip = h.server_ip,
            d = d.display()
        );
        std::fs::write(d.join("sshd_config"), config).map_err(|e| e.to_string())?;
        // sshd's privilege separation directory (made at boot where sshd is a service).
        std::fs::create_dir_all("/run/sshd").map_err(|e| format!("/run/sshd: {e}"))?;
        let kid = Kid(Command::new("ip")
            .args(["netns", "exec", &h.server_ns, SSHD, "-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start sshd: {e}"))?);
        let key = d.join("client_key").display().to_string();
        let opts: Vec<String> = [
            "-F",
            "/dev/null",
            "-i",
            &key,
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "IdentitiesOnly=yes",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let s = Sshd {
            _kid: kid,
            dir,
            opts,
        };
        // Up once a login works.
        let t0 = Instant::now();
        loop {
            let ok = Command::new("ip")
                .args(["netns", "exec", &h.client_ns, "ssh", "-o", "BatchMode=yes"])
                .args(&s.opts)
                .arg(format!("root@{}", h.server_ip))
                .arg("true")
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|st| st.success());
            if ok {
                return Ok(s);
            }
            if t0.elapsed() > Duration::from_secs(15) {
                return Err("sshd did not accept a login within 15 s".into());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// `ringside run ... --server-host root@SERVER` in the client namespace.
fn run_cmd(h: &Hosts, ssh_opts: &[String], out: &Path, items: &[&str]) -> Command {
    run_with(h, ssh_opts, out, items, &bin())
}

/// [`run_cmd`] with `remote` as the ringside on the server host.
fn run_with(h: &Hosts, ssh_opts: &[String], out: &Path, items: &[&str], remote: &Path) -> Command {
    run_models(h, ssh_opts, out, items, "epoll-et", remote)
}

/// [`run_with`] with `models` in place of epoll-et.
fn run_models(
    h: &Hosts,
    ssh_opts: &[String],
    out: &Path,
    items: &[&str],
    models: &str,
    remote: &Path,
) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &h.client_ns])
        .arg(bin())
        .arg("run")
        .args(items)
        .args(["--profile", "smoke", "--models", models, "--quiet"])
        .args(["--format", "csv", "--out"])
        .arg(out)
        .arg(format!("--server-host=root@{}", h.server_ip))
        .arg(format!("--remote-ringside={}", remote.display()))
        .args(ssh_opts.iter().map(|o| format!("--ssh-opt={o}")));
    c
}

/// Runs `c` to its end (bounded); its exit code and stderr.
fn finish(mut c: Command, within: Duration) -> (Option<i32>, String) {
    let mut kid = Kid(c
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ringside run"));
    let err = kid.0.stderr.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(err).unwrap_or_default());
    let t0 = Instant::now();
    let st = loop {
        if let Some(st) = kid.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            t0.elapsed() < within,
            "ringside run did not end within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    (st.code(), reader.join().unwrap())
}

/// Kills the remote end `victim` of the run `kid` writing to `out`, a moment after it
/// started, and waits for the run: it exits 1 with exactly one failed cell and the others
/// measured. Returns that cell's reason.
fn kill_remote_end(kid: &mut Kid, victim: i32, out: &Path) -> String {
    std::thread::sleep(Duration::from_millis(150));
    // SAFETY: kill(2) on a pid just read from /proc (the remote end of this test's run).
    unsafe { libc::kill(victim, libc::SIGKILL) };
    let t0 = Instant::now();
    let st = loop {
        if let Some(st) = kid.0.try_wait().unwrap() {
            break st;
        }
        assert!(t0.elapsed() < Duration::from_secs(180), "run did not end");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(st.code(), Some(1), "a failed cell exits 1");
    let v = results(out);
    let cases = v["cases"].as_array().unwrap();
    let failed: Vec<&serde_json::Value> =
        cases.iter().filter(|c| c["status"] == "failed").collect();
    assert_eq!(failed.len(), 1, "one cell failed: {v}");
    assert!(
        cases.iter().filter(|c| c["status"] == "measured").count() >= 1,
        "the run went on: {v}"
    );
    failed[0]["reason"].as_str().unwrap().to_string()
}

fn results(out: &Path) -> serde_json::Value {
    crate::common::schema::results_json(&out.join("results.json"))
}

/// Processes whose command line names `needle` (and are not zombies).
fn procs_with(needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().to_string();
        if name.parse::<u32>().is_err() {
            continue;
        }
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(needle) {
            out.push(format!("{name}: {cmd}"));
        }
    }
    out
}

fn setup(tag: &str) -> Option<(Hosts, Sshd)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        common::tools::cannot("network namespaces and sshd need root");
        return None;
    }
    for tool in ["ip", "ssh", "ssh-keygen"] {
        if !have(tool) {
            common::tools::missing(tool, &format!("{tool} is not installed"));
            return None;
        }
    }
    if !Path::new(SSHD).exists() {
        common::tools::missing("sshd", &format!("{SSHD} is not installed (openssh-server)"));
        return None;
    }
    let hosts = match Hosts::make(tag) {
        Ok(h) => h,
        Err(why) => {
            common::tools::cannot(&format!("cannot make network namespaces: {why}"));
            return None;
        }
    };
    match Sshd::start(&hosts) {
        Ok(s) => Some((hosts, s)),
        Err(why) => {
            common::tools::cannot(&format!("cannot run sshd in a namespace: {why}"));
            None
        }
    }
}

/// The tests that run sshd take turns: their namespaces get the same addresses (made from
/// the test process's pid), so their processes could not be told apart.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// The scenarios share one sshd and run in turn (run in parallel, their processes could not
/// be told apart).
#[test]
fn servers_on_another_host_over_ssh() {
    let _turn = one_at_a_time();
    let Some((h, s)) = setup("rh") else { return };
    echo_and_http_measured_there(&h, &s);
    a_refused_key_fails_the_cells_and_the_run_goes_on(&h, &s);
    a_run_killed_mid_way_leaves_nothing_running_on_either_host(&h, &s);
    a_remote_end_that_dies_mid_run_fails_its_cell_only(&h, &s);
    another_version_there_is_refused_naming_both(&h, &s);
    // Last: it changes the veth pair's offloads.
    napi_rows_measured_over_veth(&h, &s);
}

/// `uring-napi` and `epoll-busypoll` over veth: loopback has no NAPI, so locally both are
/// unavailable; where the veth pair runs NAPI (GRO on, TSO off: `Hosts::veth_napi`) a
/// connection carries a NAPI id, and both rows are measured on the server host, not
/// unavailable. Skipped, with the reason, where the path has no NAPI id even so, or where
/// this kernel lacks the registration itself (6.9).
fn napi_rows_measured_over_veth(h: &Hosts, s: &Sshd) {
    if let Err(why) = h.veth_napi() {
        eprintln!("napi over veth: skipped: cannot turn GRO on and TSO off: {why}");
        return;
    }
    match h.napi_id() {
        Ok(0) => {
            eprintln!(
                "napi over veth: skipped: a veth connection carries no NAPI id here even \
                 with GRO on and TSO off"
            );
            return;
        }
        Err(why) => panic!("napi over veth: the NAPI id check failed: {why}"),
        Ok(_) => {}
    }
    let env = ringside::env::probe();
    use ringside::env::uring::modern as f;
    let mut models = Vec::new();
    for (id, feature) in [
        ("uring-napi", f::NAPI),
        ("epoll-busypoll", f::EPOLL_BUSY_POLL),
    ] {
        match env.modern(feature).reason() {
            Some(why) => eprintln!("napi over veth: {id} skipped: {why}"),
            None => models.push(id),
        }
    }
    if models.is_empty() {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let (code, err) = finish(
        run_models(
            h,
            &s.opts,
            out.path(),
            &["echo.conns", "--runs", "1"],
            &models.join(","),
            &bin(),
        ),
        Duration::from_secs(300),
    );
    assert_eq!(code, Some(0), "ringside run: {err}");
    let v = results(out.path());
    let cases = v["cases"].as_array().unwrap();
    for id in &models {
        let mine: Vec<_> = cases.iter().filter(|c| c["model"] == *id).collect();
        assert!(!mine.is_empty(), "{id}: no cells: {v}");
        for c in mine {
            // Equal-load points may be not applicable (no capacity measured): never unavailable.
            assert_ne!(c["status"], "unavailable", "{id}: {c}");
            if c.get("equal_load").is_none() {
                assert_eq!(c["status"], "measured", "{id}: {c}");
                assert!(
                    c["cpu_ns_per_op"]["total"].as_f64().unwrap() > 0.0,
                    "{id}: {c}"
                );
            }
        }
    }
    // Locally (loopback) the same rows are unavailable, for the NAPI reason.
    for id in &models {
        let m = ringside::registry::model(id).unwrap();
        assert!(
            m.availability(&env)
                .reason()
                .is_some_and(|r| r.contains("NAPI")),
            "{id}"
        );
    }
}

/// The remote ringside killed (as a host that dies would end it) while its server is being
/// measured: that cell fails with what was seen, the other cells are measured, and nothing of
/// it is left.
fn a_remote_end_that_dies_mid_run_fails_its_cell_only(h: &Hosts, s: &Sshd) {
    let out = tempfile::tempdir().unwrap();
    let mut c = run_cmd(h, &s.opts, out.path(), &["echo.payload"]);
    c.args(["--runs", "3"]);
    let mut kid = Kid(c
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap());
    let t0 = Instant::now();
    // The remote ringside (not the local ssh, whose command line names it too), once its
    // server is up.
    let remote_end = format!("{} remote-serve", bin().display());
    let serve_needle = format!("--addr {}:0", h.server_ip);
    let victim = loop {
        let p = procs_with(&remote_end);
        let ours = p.iter().find(|l| {
            l.split_once(": ")
                .is_some_and(|(_, cmd)| cmd.starts_with(&remote_end))
        });
        if let (Some(l), false) = (ours, procs_with(&serve_needle).is_empty()) {
            break l.split(':').next().unwrap().parse::<i32>().unwrap();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no remote-serve within 60 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let why = kill_remote_end(&mut kid, victim, out.path());
    let why = why.as_str();
    eprintln!("the cell whose remote end died: {why}");
    assert!(why.contains("server"), "{why}");
    assert!(procs_with(&serve_needle).is_empty());
    assert!(procs_with("remote-serve").is_empty());
}

fn another_version_there_is_refused_naming_both(h: &Hosts, s: &Sshd) {
    let out = tempfile::tempdir().unwrap();
    let fake = s.dir.path().join("old-ringside");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'ringside 0.0.1 (git 0123456789ab)'\n",
    )
    .unwrap();
    Command::new("chmod")
        .arg("755")
        .arg(&fake)
        .status()
        .unwrap();
    let c = run_with(h, &s.opts, out.path(), &["echo.conns"], &fake);
    let (code, err) = finish(c, Duration::from_secs(60));
    assert_eq!(code, Some(2), "refused before measuring: {err}");
    let here = Command::new(bin()).arg("--version").output().unwrap();
    let here = String::from_utf8_lossy(&here.stdout).trim().to_string();
    assert!(here.contains("(git "), "{here}");
    assert!(
        err.contains("ringside 0.0.1 (git 0123456789ab)") && err.contains(&here),
        "both versions named: {err}"
    );
    assert!(
        !out.path().join("results.json").exists(),
        "nothing measured"
    );
}

fn echo_and_http_measured_there(h: &Hosts, s: &Sshd) {
    let out = tempfile::tempdir().unwrap();
    let (code, err) = finish(
        run_cmd(h, &s.opts, out.path(), &["echo.conns", "http.clients"]),
        Duration::from_secs(240),
    );
    assert_eq!(code, Some(0), "ringside run: {err}");
    let v = results(out.path());
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 2, "{v}");
    for c in cases {
        let what = format!("{} {} {}", c["workload"], c["model"], c["params"]);
        assert_eq!(c["status"], "measured", "{what}: {c}");
        assert!(c["ops_total"].as_u64().unwrap() > 0, "{what}");
        // Bytes verified: a mismatch would have failed the cell; none in the warm-up either.
        assert_eq!(c["counters"]["load_mismatches"].as_u64().unwrap_or(0), 0);
        assert_eq!(c["counters"]["load_warmup_errors"].as_u64().unwrap_or(0), 0);
        // The server's CPU and syscalls, measured on its host.
        assert!(
            c["cpu_ns_per_op"]["total"].as_f64().unwrap() > 0.0,
            "{what}: {c}"
        );
        assert!(c["syscalls_per_op"].as_f64().unwrap() > 0.0, "{what}: {c}");
        // Its own counters came back over SSH.
        assert!(
            c["counters"]["server_accepts"].as_u64().unwrap() > 0,
            "{what}: {c}"
        );
    }
    let hosts = v["hosts"].as_array().expect("hosts recorded");
    assert_eq!(hosts.len(), 2, "{v}");
    let (here, there) = (&hosts[0], &hosts[1]);
    assert_eq!(here["role"], "client");
    assert_eq!(there["role"], "server");
    assert_eq!(there["host"], format!("root@{}", h.server_ip));
    assert!(there["env"]["cpus"].as_u64().unwrap() > 0, "{there}");
    assert_eq!(there["ringside"], here["ringside"]);
    assert_eq!(here["path"]["kind"], "veth", "{here}");
    assert_eq!(here["path"]["peer"], h.server_ip.as_str());
    assert_eq!(there["path"]["kind"], "veth", "{there}");
    assert_eq!(there["path"]["peer"], h.client_ip.as_str());
    assert!(there["path"]["mtu"].as_u64().unwrap() > 0);
    // The report shows both hosts.
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(md.contains(&format!("root@{}", h.server_ip)), "{md}");
    assert!(md.contains("veth"), "{md}");
}

fn a_refused_key_fails_the_cells_and_the_run_goes_on(h: &Hosts, s: &Sshd) {
    let out = tempfile::tempdir().unwrap();
    // Another key, not authorized there: ssh fails at once (BatchMode), never prompts.
    let other = s.dir.path().join("other_key");
    keygen(&other);
    let key = s.dir.path().join("client_key").display().to_string();
    let opts: Vec<String> = s
        .opts
        .iter()
        .map(|o| {
            if *o == key {
                other.display().to_string()
            } else {
                o.clone()
            }
        })
        .collect();
    let c = run_cmd(h, &opts, out.path(), &["echo.payload", "micro.pipe"]);
    let (code, err) = finish(c, Duration::from_secs(120));
    assert_eq!(code, Some(1), "a failed cell exits 1: {err}");
    let v = results(out.path());
    let mut failed = 0;
    for c in v["cases"].as_array().unwrap() {
        if c["workload"] == "micro.pipe" {
            assert_eq!(c["status"], "measured", "the run went on: {c}");
            continue;
        }
        assert_eq!(c["status"], "failed", "{c}");
        let why = c["reason"].as_str().unwrap();
        assert!(
            why.contains("Permission denied") && why.contains(&h.server_ip),
            "the SSH error: {why}"
        );
        failed += 1;
    }
    assert!(failed > 0, "{v}");
    assert!(v["hosts"][1]["error"].is_string(), "{v}");
}

fn a_run_killed_mid_way_leaves_nothing_running_on_either_host(h: &Hosts, s: &Sshd) {
    let out = tempfile::tempdir().unwrap();
    let mut c = run_cmd(h, &s.opts, out.path(), &["echo.conns"]);
    // Many repetitions, so that the kill lands in one.
    c.args(["--runs", "50"]);
    let mut kid = Kid(c
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap());
    let serve_needle = format!("--addr {}:0", h.server_ip);
    let t0 = Instant::now();
    while procs_with(&serve_needle).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no remote server started within 60 s"
        );
        assert!(
            kid.0.try_wait().unwrap().is_none(),
            "ringside run ended early"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    // `ip netns exec` execs ringside: this is ringside's pid.
    kid.0.kill().unwrap();
    kid.0.wait().unwrap();
    let ssh_needle = format!("root@{}", h.server_ip);
    let t0 = Instant::now();
    loop {
        let left: Vec<String> = procs_with(&serve_needle)
            .into_iter()
            .chain(procs_with("remote-serve"))
            .chain(procs_with(&ssh_needle))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "still running 20 s after ringside run was killed: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `ringside run ... --load-host root@SERVER_NS` in the client namespace: the servers run
/// here (the client namespace), the load generator over SSH in the other namespace.
fn load_cmd(h: &Hosts, ssh_opts: &[String], out: &Path, items: &[&str]) -> Command {
    load_cmd_with(h, ssh_opts, out, items, &bin())
}

/// [`load_cmd`] with `remote` as the ringside on the load host.
fn load_cmd_with(
    h: &Hosts,
    ssh_opts: &[String],
    out: &Path,
    items: &[&str],
    remote: &Path,
) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &h.client_ns])
        .arg(bin())
        .arg("run")
        .args(items)
        .args(["--profile", "smoke", "--models", "epoll-et", "--quiet"])
        .args(["--format", "csv", "--out"])
        .arg(out)
        .arg(format!("--load-host=root@{}", h.server_ip))
        .arg(format!("--remote-ringside={}", remote.display()))
        .args(ssh_opts.iter().map(|o| format!("--ssh-opt={o}")));
    c
}

/// The processes inside network namespace `ns` whose command line names ringside's binary.
fn ringside_in(ns: &str) -> Vec<String> {
    let out = Command::new("ip")
        .args(["netns", "pids", ns])
        .output()
        .expect("ip netns pids");
    let me = bin().display().to_string();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            cmd.contains(&me).then(|| format!("{pid}: {cmd}"))
        })
        .collect()
}

/// `run --load-host`: the load generator runs on the other host over SSH.
#[test]
fn load_generators_on_another_host_over_ssh() {
    let _turn = one_at_a_time();
    let Some((h, s)) = setup("rl") else { return };
    echo_and_http_driven_from_there(&h, &s);
    two_load_hosts_are_merged_and_the_server_may_be_remote_too(&h, &s);
    a_load_host_that_refuses_the_key_fails_the_cells(&h, &s);
    a_load_host_without_ringside_fails_the_cells(&h, &s);
    a_load_host_that_dies_mid_run_fails_its_cell_only(&h, &s);
    a_run_killed_mid_way_leaves_no_ringside_on_the_load_host(&h, &s);
}

/// Two load sessions (the same sshd twice: two hosts as far as ringside can tell) share the
/// connections and their reports are merged; then the server on that host too, this one only
/// controlling.
fn two_load_hosts_are_merged_and_the_server_may_be_remote_too(h: &Hosts, s: &Sshd) {
    let out = tempfile::tempdir().unwrap();
    let mut c = load_cmd(h, &s.opts, out.path(), &["echo.payload"]);
    c.arg(format!("--load-host=root@{}", h.server_ip));
    let (code, err) = finish(c, Duration::from_secs(180));
    assert_eq!(code, Some(0), "ringside run: {err}");
    let v = results(out.path());
    let cases = v["cases"].as_array().unwrap();
    assert!(!cases.is_empty(), "{v}");
    for c in cases {
        assert_eq!(c["status"], "measured", "{c}");
        // 50 connections, 25 from each host, all alive at the end: both reports merged
        // (one repetition at smoke).
        assert_eq!(c["repetitions"].as_u64(), Some(1), "{c}");
        assert_eq!(c["counters"]["load_live_conns"].as_u64(), Some(50), "{c}");
        assert!(c["ops_total"].as_u64().unwrap() > 0, "{c}");
    }
    let roles: Vec<&str> = v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["server", "load", "load"], "{v}");

    let out = tempfile::tempdir().unwrap();
    let mut c = load_cmd(h, &s.opts, out.path(), &["echo.payload"]);
    c.arg(format!("--server-host=root@{}", h.server_ip));
    let (code, err) = finish(c, Duration::from_secs(180));
    assert_eq!(code, Some(0), "ringside run: {err}");
    let v = results(out.path());
    for c in v["cases"].as_array().unwrap() {
        assert_eq!(c["status"], "measured", "{c}");
        assert!(c["ops_total"].as_u64().unwrap() > 0, "{c}");
        assert!(c["syscalls_per_op"].as_f64().unwrap() > 0.0, "{c}");
    }
    let roles: Vec<&str> = v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["controller", "server", "load"], "{v}");
}

/// The remote load generator killed (as a host that dies would end it) mid-run: that cell
/// fails with what ssh saw, the other cells are measured.
fn a_load_host_that_dies_mid_run_fails_its_cell_only(h: &Hosts, s: &Sshd) {
    let out = tempfile::tempdir().unwrap();
    let mut c = load_cmd(h, &s.opts, out.path(), &["echo.payload"]);
    c.args(["--runs", "3"]);
    let mut kid = Kid(c
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap());
    let t0 = Instant::now();
    let victim = loop {
        let found = ringside_in(&h.server_ns)
            .into_iter()
            .find(|l| l.contains("remote-load"));
        if let Some(l) = found {
            break l.split(':').next().unwrap().parse::<i32>().unwrap();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no remote-load within 60 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let why = kill_remote_end(&mut kid, victim, out.path());
    let why = why.as_str();
    eprintln!("the cell whose load host died: {why}");
    assert!(
        why.contains(&format!("load host root@{}", h.server_ip)),
        "{why}"
    );
    assert!(ringside_in(&h.server_ns).is_empty());
}

fn echo_and_http_driven_from_there(h: &Hosts, s: &Sshd) {
    let out = tempfile::tempdir().unwrap();
    let (code, err) = finish(
        load_cmd(h, &s.opts, out.path(), &["echo.conns", "http.clients"]),
        Duration::from_secs(240),
    );
    assert_eq!(code, Some(0), "ringside run: {err}");
    let v = results(out.path());
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 2, "{v}");
    for w in ["echo.conns", "http.clients"] {
        assert!(cases.iter().any(|c| c["workload"] == w), "{w}: {v}");
    }
    for c in cases {
        let what = format!("{} {} {}", c["workload"], c["model"], c["params"]);
        assert_eq!(c["status"], "measured", "{what}: {c}");
        assert!(c["ops_total"].as_u64().unwrap() > 0, "{what}");
        // Bytes verified on the load host: a mismatch there would have failed the cell.
        assert_eq!(c["counters"]["load_mismatches"].as_u64().unwrap_or(0), 0);
        assert_eq!(c["counters"]["load_warmup_errors"].as_u64().unwrap_or(0), 0);
        assert_eq!(c["counters"]["load_non_2xx"].as_u64().unwrap_or(0), 0);
        // Driven from the load host, which had headroom; the server measured here.
        assert_eq!(
            c["counters"]["load_hosts_client_bound"].as_u64(),
            Some(0),
            "{what}: {c}"
        );
        assert!(c["counters"]["load_cpu_ns"].as_u64().unwrap() > 0, "{what}");
        assert!(
            c["cpu_ns_per_op"]["total"].as_f64().unwrap() > 0.0,
            "{what}: {c}"
        );
        assert!(
            c["counters"]["server_accepts"].as_u64().unwrap() > 0,
            "{what}: {c}"
        );
        // Latency percentiles from the load host's histogram.
        assert!(
            c["latency_ns"]["p50"].as_f64().unwrap() > 0.0,
            "{what}: {c}"
        );
    }
    let hosts = v["hosts"].as_array().expect("hosts recorded");
    assert_eq!(hosts.len(), 2, "{v}");
    let (here, there) = (&hosts[0], &hosts[1]);
    assert_eq!(here["role"], "server", "{here}");
    assert_eq!(there["role"], "load", "{there}");
    assert_eq!(there["host"], format!("root@{}", h.server_ip));
    assert!(there["env"]["cpus"].as_u64().unwrap() > 0, "{there}");
    assert!(there["plan"].is_object(), "{there}");
    assert!(there["env"].get("cpu_plan").is_none(), "{there}");
    assert_eq!(there["ringside"], here["ringside"]);
    assert_eq!(here["path"]["kind"], "veth", "{here}");
    assert_eq!(there["path"]["peer"], h.client_ip.as_str());
    // This host's own env is the run's.
    assert!(v["env"]["cpus"].as_u64().unwrap() > 0);
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(md.contains(&format!("load root@{}", h.server_ip)), "{md}");
    // Nothing left on the load host.
    assert!(ringside_in(&h.server_ns).is_empty());
}

fn a_load_host_without_ringside_fails_the_cells(h: &Hosts, s: &Sshd) {
    let out = tempfile::tempdir().unwrap();
    let missing = s.dir.path().join("no-such-ringside");
    let c = load_cmd_with(h, &s.opts, out.path(), &["echo.payload"], &missing);
    let (code, err) = finish(c, Duration::from_secs(120));
    assert_eq!(code, Some(1), "a failed cell exits 1: {err}");
    let v = results(out.path());
    let cases = v["cases"].as_array().unwrap();
    assert!(!cases.is_empty(), "{v}");
    for c in cases {
        assert_eq!(c["status"], "failed", "{c}");
        let why = c["reason"].as_str().unwrap();
        assert!(
            why.contains("ringside not found there") && why.contains(&h.server_ip),
            "{why}"
        );
    }
    assert!(v["hosts"][1]["error"].is_string(), "{v}");
}

fn a_load_host_that_refuses_the_key_fails_the_cells(h: &Hosts, s: &Sshd) {
    let out = tempfile::tempdir().unwrap();
    let other = s.dir.path().join("other_load_key");
    keygen(&other);
    let key = s.dir.path().join("client_key").display().to_string();
    let opts: Vec<String> = s
        .opts
        .iter()
        .map(|o| {
            if *o == key {
                other.display().to_string()
            } else {
                o.clone()
            }
        })
        .collect();
    let (code, err) = finish(
        load_cmd(h, &opts, out.path(), &["echo.payload"]),
        Duration::from_secs(120),
    );
    assert_eq!(code, Some(1), "a failed cell exits 1: {err}");
    let v = results(out.path());
    let cases = v["cases"].as_array().unwrap();
    assert!(!cases.is_empty(), "{v}");
    for c in cases {
        assert_eq!(c["status"], "failed", "{c}");
        let why = c["reason"].as_str().unwrap();
        assert!(
            why.contains("Permission denied") && why.contains(&h.server_ip),
            "the SSH error: {why}"
        );
    }
    assert_eq!(v["hosts"][1]["role"], "load", "{v}");
    assert!(v["hosts"][1]["error"].is_string(), "{v}");
}

fn a_run_killed_mid_way_leaves_no_ringside_on_the_load_host(h: &Hosts, s: &Sshd) {
    let out = tempfile::tempdir().unwrap();
    let mut c = load_cmd(h, &s.opts, out.path(), &["echo.conns"]);
    // Many repetitions, so that the kill lands in one.
    c.args(["--runs", "50"]);
    let mut kid = Kid(c
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap());
    let t0 = Instant::now();
    // A load generator at work on the load host.
    while !ringside_in(&h.server_ns)
        .iter()
        .any(|l| l.contains("remote-load"))
    {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no remote-load within 60 s"
        );
        assert!(
            kid.0.try_wait().unwrap().is_none(),
            "ringside run ended early"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    // `ip netns exec` execs ringside: this is ringside's pid.
    kid.0.kill().unwrap();
    kid.0.wait().unwrap();
    let ssh_needle = format!("root@{}", h.server_ip);
    let t0 = Instant::now();
    loop {
        let left: Vec<String> = ringside_in(&h.server_ns)
            .into_iter()
            .chain(ringside_in(&h.client_ns))
            .chain(procs_with(&ssh_needle))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "still running 20 s after ringside run was killed: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `--load-host` with a suite whose load cannot run elsewhere: refused before anything runs
/// (exit 2), naming the workloads that take it (no root or sshd needed).
#[test]
fn a_load_host_is_refused_for_suites_that_cannot_use_it() {
    let out = Command::new(bin())
        .args(["run", "echo.conns", "micro.pipe", "--profile", "smoke"])
        .arg("--load-host=root@192.0.2.1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--load-host micro.pipe") && err.contains("echo.conns"),
        "{err}"
    );
    assert!(err.contains("http.clients"), "{err}");
    for bad in ["-oProxyCommand=x", "h:0"] {
        let out = Command::new(bin())
            .args(["run", "echo.conns", "--profile", "smoke"])
            .arg(format!("--load-host={bad}"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains("--load-host") && err.contains(bad), "{err}");
    }
    let out = Command::new(bin())
        .args(["run", "echo.conns", "--profile", "smoke", "--bind=10.0.0.1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bind"));
}

/// Bad hosts are refused before anything runs, naming the value (no root or sshd needed).
#[test]
fn a_bad_server_host_is_refused_by_name() {
    for bad in ["-oProxyCommand=x", "host:0", "a b"] {
        let out = Command::new(bin())
            .args([
                "run",
                "echo.conns",
                "--profile",
                "smoke",
                &format!("--server-host={bad}"),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(
            err.contains("--server-host") && err.contains(bad) && err.contains("[USER@]HOST"),
            "{bad}: {err}"
        );
    }
}
