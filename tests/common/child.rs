//! `ringside serve` as a child process: started on 127.0.0.1:0, its address read from its
//! first line, stopped with SIGTERM (after which it prints its counters line), killed on drop.

use super::net::{connect, IO_TIMEOUT};
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A `ringside serve` child, killed on drop.
pub struct Server {
    pub id: &'static str,
    child: Child,
    pub addr: SocketAddr,
    lines: mpsc::Receiver<String>,
}

impl Server {
    /// `ringside serve --protocol echo --model ID`.
    pub fn echo(id: &'static str) -> Server {
        Server::start(id, "echo", &[], None)
    }

    /// `ringside serve --protocol PROTOCOL --model ID --addr 127.0.0.1:0 ARGS...`, with
    /// RLIMIT_NOFILE set to `nofile` when given. Waits up to 10 s for `listening on ADDR`.
    pub fn start(id: &'static str, protocol: &str, args: &[&str], nofile: Option<u64>) -> Server {
        Server::start_env(id, protocol, args, nofile, &[])
    }

    /// [`Server::start`] with `env` set in the child's environment.
    pub fn start_env(
        id: &'static str,
        protocol: &str,
        args: &[&str],
        nofile: Option<u64>,
        env: &[(&str, &str)],
    ) -> Server {
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("ringside"));
        cmd.envs(env.iter().copied());
        cmd.args(["serve", "--protocol", protocol, "--model", id])
            .args(["--addr", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(n) = nofile {
            // SAFETY: setrlimit is async-signal-safe; runs in the child before exec.
            unsafe {
                cmd.pre_exec(move || {
                    let rl = libc::rlimit {
                        rlim_cur: n,
                        rlim_max: n,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &rl) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                })
            };
        }
        let mut child = cmd.spawn().expect("spawn ringside serve");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let first = lines
            .recv_timeout(IO_TIMEOUT)
            .unwrap_or_else(|_| panic!("{id}: no 'listening on' line within 10 s"));
        let addr = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("{id}: first line '{first}'"))
            .parse()
            .unwrap();
        Server {
            id,
            child,
            addr,
            lines,
        }
    }

    /// A connection with [`IO_TIMEOUT`] timeouts and TCP_NODELAY.
    pub fn connect(&self) -> TcpStream {
        let s = connect(self.addr);
        s.set_nodelay(true).unwrap();
        s
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// SIGTERM; the server must exit 0 within 2 s and print its counters line.
    pub fn stop(self) -> (ExitStatus, serde_json::Value) {
        self.stop_within(Duration::from_secs(2))
    }

    /// SIGTERM; the server must exit within `exit` and then print its counters line.
    pub fn stop_within(mut self, exit: Duration) -> (ExitStatus, serde_json::Value) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.pid(), libc::SIGTERM) };
        let deadline = Instant::now() + exit;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(
                Instant::now() < deadline,
                "{}: still running {exit:?} after SIGTERM",
                self.id
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(2))
            .unwrap_or_else(|_| panic!("{}: no counters line", self.id));
        let json = line
            .strip_prefix("counters ")
            .unwrap_or_else(|| panic!("{}: second line '{line}'", self.id));
        (status, serde_json::from_str(json).unwrap())
    }

    /// Resident memory, KiB.
    pub fn rss_kib(&self) -> u64 {
        let st = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        st.lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap()
    }

    /// CPU ticks (utime + stime) of the server's own threads. SQPOLL's kernel poller
    /// (`iou-sqp-*`) is left out: it spins for its idle time after every submission by design.
    pub fn cpu_ticks(&self) -> u64 {
        let mut total = 0;
        for t in std::fs::read_dir(format!("/proc/{}/task", self.pid()))
            .unwrap()
            .flatten()
        {
            let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
                continue;
            };
            let (Some(l), Some(r)) = (stat.find('('), stat.rfind(')')) else {
                continue;
            };
            if stat[l + 1..r].starts_with("iou-sqp") {
                continue;
            }
            let f: Vec<&str> = stat[r + 2..].split_whitespace().collect();
            total += f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
        }
        total
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
