//! Two hosts: two network namespaces joined by a veth pair (iproute2), an echo server in one
//! and `ringside load` in the other, over a real (virtual) link instead of loopback. Checks
//! bytes and counts: no mismatches, every requested connection live at the end. The server is
//! `ringside serve --protocol echo` when this build has it, and the stand-in echo server
//! (tests/common) always. The namespaces are removed even when the test fails. Skipped, with
//! the reason printed, where namespaces cannot be made (not root, no CAP_NET_ADMIN, no `ip`);
//! under `RINGSIDE_REQUIRE_TOOLS` (CI) that fails the test instead.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "RINGSIDE_TEST_TWO_HOSTS_ADDR";
const CONNS: u64 = 20;

/// Not a test: the stand-in server's body when run inside the server namespace (ignored: it
/// never runs in a plain `cargo test`, where it could only pass).
#[test]
#[ignore = "a re-exec helper, run by the tests here with --ignored --exact"]
fn stand_in_server_process() {
    let addr = std::env::var(CHILD_ENV).expect("run by the tests here, with CHILD_ENV set");
    let a = common::serve_on(&addr, common::Mode::Echo);
    // libtest has written "test NAME ... " without a newline: start a fresh line.
    println!("\nlistening on {a}");
    std::io::stdout().flush().unwrap();
    std::thread::sleep(Duration::from_secs(120)); // killed by the test long before
}

use common::netns::Hosts;

/// A child killed on drop.
struct Kid(Child);
impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `cmd` in the server namespace and returns it with the address it printed.
fn start_server(ns: &str, cmd: &[&str], env: Option<(&str, &str)>) -> (Kid, String) {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns])
        .args(cmd)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some((k, v)) = env {
        c.env(k, v);
    }
    let mut kid = Kid(c.spawn().expect("spawn server"));
    let out = kid.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(a) = line.strip_prefix("listening on ") {
                let _ = tx.send(a.trim().to_string());
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(15))
        .expect("server printed 'listening on' within 15 s");
    (kid, addr)
}

fn load_from(ns: &str, target: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("load.json");
    let bin = assert_cmd::cargo::cargo_bin("ringside");
    let t0 = Instant::now();
    let mut kid = Kid(Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(&bin)
        .args(["load", "--protocol", "echo", "--target", target])
        .args(["--conns", &CONNS.to_string(), "--msg-bytes", "512"])
        .args(["--duration", "0.5", "--warmup", "0.1", "--json"])
        .arg(&json)
        .spawn()
        .expect("spawn load"));
    let status = loop {
        if let Some(st) = kid.0.try_wait().unwrap() {
            break st;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "load timed out");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "ringside load: {status}");
    serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap()
}

fn check(v: &serde_json::Value, what: &str) {
    let r = &v["report"];
    assert_eq!(r["mismatches"], 0, "{what}: {v}");
    assert_eq!(r["connect_errors"], 0, "{what}: {v}");
    assert_eq!(r["resets"], 0, "{what}: {v}");
    assert_eq!(r["live_conns"], CONNS, "{what}: every connection live");
    let msgs = r["msgs"].as_u64().unwrap();
    assert!(msgs > 0, "{what}: messages went over the link");
    assert_eq!(r["bytes"].as_u64().unwrap(), msgs * 512, "{what}");
}

#[test]
fn serve_and_load_in_two_network_namespaces() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        common::tools::cannot("network namespaces need root (CAP_NET_ADMIN)");
        return;
    }
    let hosts = match Hosts::make("rs") {
        Ok(h) => h,
        Err(why) => {
            common::tools::cannot(&format!("cannot make network namespaces: {why}"));
            return;
        }
    };
    let listen = format!("{}:0", hosts.server_ip);
    let me = std::env::current_exe().unwrap();
    let me = me.to_str().unwrap();
    {
        let (_server, addr) = start_server(
            &hosts.server_ns,
            &[
                me,
                "--ignored",
                "--exact",
                "two_hosts::stand_in_server_process",
                "--nocapture",
            ],
            Some((CHILD_ENV, &listen)),
        );
        assert!(addr.starts_with(&hosts.server_ip), "{addr}");
        check(&load_from(&hosts.client_ns, &addr), "stand-in");
    }
    let bin = assert_cmd::cargo::cargo_bin("ringside");
    let bin = bin.to_str().unwrap();
    let has_serve = Command::new(bin)
        .args(["serve", "--help"])
        .output()
        .is_ok_and(|o| o.status.success());
    if has_serve {
        let (_server, addr) = start_server(
            &hosts.server_ns,
            &[
                bin,
                "serve",
                "--protocol",
                "echo",
                "--model",
                "epoll-et",
                "--addr",
                &listen,
            ],
            None,
        );
        check(&load_from(&hosts.client_ns, &addr), "ringside serve");
    } else {
        eprintln!("ringside serve not in this build: the stand-in server only");
    }
}
