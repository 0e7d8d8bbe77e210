//! `ringside serve --protocol http` and `ringside load --protocol http` as a user runs them:
//! the binary serves on port 0, the load runs half a second, every request is a valid 200;
//! bad values are refused (exit 2) naming the valid range.

use crate::common;

use common::bin::bin;

use assert_cmd::Command;
use predicates::prelude::*;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// `ringside serve` child, killed on drop.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(args: &[&str]) -> (Serve, String) {
    let mut child = std::process::Command::new(bin())
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut l = String::new();
        let _ = BufReader::new(out).read_line(&mut l);
        let _ = tx.send(l);
    });
    let srv = Serve(child);
    let line = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("no 'listening on' line within 10 s");
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("first line '{line}'"))
        .to_string();
    (srv, addr)
}

#[test]
fn serve_and_load_http_with_no_errors() {
    for body in [None, Some("3000")] {
        let mut args = vec!["--protocol", "http", "--model", "epoll-lt"];
        if let Some(b) = body {
            args.extend(["--body-bytes", b]);
        }
        let (_srv, addr) = serve(&args);
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        // The load generator checks the body the server was asked for: the same --body-bytes.
        let same: Vec<&str> = body.map(|b| vec!["--body-bytes", b]).unwrap_or_default();
        let o = Command::new(bin())
            .args(["load", "--protocol", "http", "--target", &addr])
            .args(["--conns", "4", "--duration", "0.5", "--warmup", "0.2"])
            .args(same)
            .args(["--threads", "1", "--json"])
            .arg(&json)
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            text.contains("requests/s") && text.contains("transfer/s"),
            "{text}"
        );
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let r = &v["report"];
        assert!(r["msgs"].as_u64().unwrap() > 0, "{v}");
        assert_eq!(v["errors"].as_u64(), Some(0), "{v}");
        assert_eq!(r["live_conns"].as_u64(), Some(4), "{v}");
        let len = ringside::proto::Http::new(body.map(|b| b.parse().unwrap())).response_bytes();
        assert_eq!(
            r["rx_bytes"].as_u64().unwrap(),
            r["msgs"].as_u64().unwrap() * len as u64,
            "{v}"
        );
        assert!(v["latency_ns"]["mean"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn bad_http_values_are_refused_naming_the_valid_range() {
    Command::new(bin())
        .args(["serve", "--protocol", "http", "--model", "epoll-lt"])
        .args(["--body-bytes", "2000000"])
        .timeout(Duration::from_secs(10))
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("--body-bytes 2000000")
                .and(predicate::str::contains("between 0 and 1048576")),
        );
    Command::new(bin())
        .args(["serve", "--protocol", "echo", "--model", "epoll-lt"])
        .args(["--body-bytes", "10"])
        .timeout(Duration::from_secs(10))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--protocol http only"));
    Command::new(bin())
        .args(["load", "--protocol", "http", "--target", "127.0.0.1:9"])
        .args(["--path", "no-slash"])
        .timeout(Duration::from_secs(10))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--path no-slash").and(predicate::str::contains("'/'")));
    Command::new(bin())
        .args(["load", "--protocol", "gopher", "--target", "127.0.0.1:9"])
        .timeout(Duration::from_secs(10))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("http"));
}

/// Slowloris against `ringside serve --protocol http`: a client that sends a request's header
/// one byte at a time never completes it and is closed once the idle limit passes, while a
/// keep-alive client beside it is answered every time.
#[test]
fn slowloris_is_timed_out_while_other_clients_are_served() {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    const LIMIT_MS: u64 = 1000;
    for model in ["epoll-et", "uring", "blocking"] {
        let (_srv, addr) = serve(&[
            "--protocol",
            "http",
            "--model",
            model,
            "--idle-timeout-ms",
            &LIMIT_MS.to_string(),
        ]);
        let t0 = std::time::Instant::now();
        let mut slow = TcpStream::connect(&addr).unwrap();
        slow.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let mut good = TcpStream::connect(&addr).unwrap();
        good.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let head =
            b"GET / HTTP/1.1\r\nHost: x\r\nUser-Agent: slowloris\r\nX-Pad: aaaaaaaaaaaaaaaa\r\n";
        let (mut sent, mut served) = (0, 0);
        let closed_after = loop {
            assert!(
                t0.elapsed() < Duration::from_secs(8),
                "{model}: slowloris client still open after {:?} ({sent} bytes sent)",
                t0.elapsed()
            );
            // One header byte every 200 ms (never the blank line that ends the header).
            if sent < head.len() {
                if slow.write_all(&head[sent..sent + 1]).is_err() {
                    break t0.elapsed();
                }
                sent += 1;
            }
            let mut b = [0u8; 64];
            match slow.read(&mut b) {
                Ok(0) => break t0.elapsed(),
                Ok(n) => panic!("{model}: answer to an incomplete request: {:?}", &b[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break t0.elapsed(),
                Err(_) => {} // read timeout: still open
            }
            // Meanwhile the keep-alive client is answered.
            good.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            let mut resp = Vec::new();
            while !resp.ends_with(b"Hello, World!") {
                let mut b = [0u8; 512];
                let n = good.read(&mut b).unwrap();
                assert!(n > 0, "{model}: the good client was closed");
                resp.extend_from_slice(&b[..n]);
            }
            served += 1;
            std::thread::sleep(Duration::from_millis(150));
        };
        assert!(
            closed_after >= Duration::from_millis(LIMIT_MS * 9 / 10),
            "{model}: closed after {closed_after:?}, before the {LIMIT_MS} ms limit"
        );
        assert!(
            served >= 3,
            "{model}: only {served} requests served meanwhile"
        );
        // Still served after the slow client went.
        good.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut b = [0u8; 512];
        assert!(good.read(&mut b).unwrap() > 0, "{model}");
    }
}
