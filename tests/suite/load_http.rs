//! The HTTP load generator against ringside's own HTTP server (epoll-lt, in process): every
//! counted request got a valid 200, no error of any kind, and the response bytes add up to
//! requests x response length. Against stand-in servers: a 404 counts as non-2xx, a response
//! without a length as malformed (and closes that connection), neither as a request. No speed
//! is asserted.

use crate::common;
use ringside::io::Stop;
use ringside::load::http::{Expect, HttpGet};
use ringside::load::{self, Config, Report};
use ringside::measure::pin::{allowed_cpus, CpuPlan};
use ringside::proto::Http;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

fn cfg(addr: SocketAddr, conns: usize, secs: f64) -> Config {
    let mut c = Config::new(addr, conns, Duration::from_secs_f64(secs));
    c.warmup = Duration::from_millis(200);
    c.threads = 2;
    c.connect_timeout = Duration::from_secs(5);
    c.engine = common::engines::engine();
    c
}

fn get(addr: SocketAddr, expect: Expect) -> HttpGet {
    HttpGet::new(addr.to_string(), "/", expect)
}

/// Runs `ringside::io::serve` for `model` with `proto` on a thread; stops it on drop.
struct InProcess {
    addr: SocketAddr,
    stop: Arc<Stop>,
    t: Option<std::thread::JoinHandle<()>>,
}

impl InProcess {
    fn start(model: &str, proto: Http) -> InProcess {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let stop = Arc::new(Stop::new().unwrap());
        let m = ringside::registry::model(model).unwrap();
        let s2 = stop.clone();
        let t = std::thread::spawn(move || {
            let plan = CpuPlan::default_for(&allowed_cpus());
            ringside::io::serve(m, l, proto, &plan, &s2).unwrap();
        });
        InProcess {
            addr,
            stop,
            t: Some(t),
        }
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.stop.request();
        if let Some(t) = self.t.take() {
            t.join().unwrap();
        }
    }
}

fn run(c: &Config, g: &HttpGet) -> Report {
    load::run(c, g, &mut |_| {}).unwrap()
}

#[test]
fn requests_against_ringside_http_are_all_valid_and_bytes_add_up() {
    common::engines::each_engine(|| {
        for body in [None, Some(5000)] {
            let proto = Http::new(body);
            let resp = proto.response_bytes() as u64;
            let srv = InProcess::start("epoll-lt", proto);
            let r = run(
                &cfg(srv.addr, 10, 0.5),
                &get(srv.addr, Expect::Served(body)),
            );
            assert!(r.n.msgs > 0, "{r:?}");
            assert_eq!(r.errors(), 0, "{r:?}");
            assert_eq!(r.n.live_conns, 10);
            assert_eq!(
                r.n.rx_bytes,
                r.n.msgs * resp,
                "every counted response is one whole 200"
            );
            assert_eq!(r.latency.len(), r.n.msgs);
            // A wrong expectation is caught on every response: another length, or the right
            // length with other bytes.
            let r = run(
                &cfg(srv.addr, 2, 0.3),
                &get(srv.addr, Expect::Served(Some(1))),
            );
            assert!(r.n.msgs == 0 && r.n.mismatches > 0, "{r:?}");
            let n = ringside::proto::http::served_body(body).len();
            let other = Expect::Exactly(vec![b'#'; n].into());
            let r = run(&cfg(srv.addr, 2, 0.3), &get(srv.addr, other));
            assert!(r.n.msgs == 0 && r.n.mismatches > 0, "{r:?}");
        }
    });
}

/// A stand-in server answering every request (after reading its head) with `resp`.
fn canned(resp: &'static [u8]) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().map_while(Result::ok) {
            std::thread::spawn(move || {
                let mut s = s;
                let mut buf = [0u8; 4096];
                let mut have = Vec::new();
                loop {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => have.extend_from_slice(&buf[..n]),
                    }
                    while let Some(p) = have.windows(4).position(|w| w == b"\r\n\r\n") {
                        have.drain(..p + 4);
                        if s.write_all(resp).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    addr
}

#[test]
fn non_2xx_and_malformed_responses_are_counted_by_kind() {
    common::engines::each_engine(|| {
        let addr = canned(b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno");
        let r = run(&cfg(addr, 3, 0.3), &get(addr, Expect::Any));
        assert_eq!(r.n.msgs, 0, "a 404 is not a request answered: {r:?}");
        assert!(r.n.non_2xx > 0, "every response is a 404: {r:?}");
        assert_eq!(
            (r.n.malformed, r.n.mismatches, r.n.resets),
            (0, 0, 0),
            "{r:?}"
        );
        assert_eq!(r.n.live_conns, 3);
        assert!(r.unverified().unwrap().contains("non-2xx"), "{r:?}");

        let addr = canned(b"HTTP/1.1 200 OK\r\n\r\nno length");
        let r = run(&cfg(addr, 3, 0.3), &get(addr, Expect::Any));
        assert_eq!(r.n.msgs, 0, "{r:?}");
        // The first response of each connection, in the warm-up: counted apart from the window's.
        assert_eq!(
            (r.n.malformed, r.n.warmup_invalid),
            (0, 3),
            "one per connection, then it is closed: {r:?}"
        );
        assert_eq!(r.n.live_conns, 0);
        assert!(r.first_error.as_deref().unwrap_or("").contains("malformed"));
    });
}
