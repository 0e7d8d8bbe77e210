//! Every built-in server speaks the same HTTP, driven from the registry: each row of
//! `registry::MODELS` with a built-in TCP server (`ModelSpec::runs`, and this machine can run it) is started as
//! `ringside serve --protocol http` and checked byte for byte: keep-alive, pipelined requests
//! answered in order, a request dribbled byte by byte, `Connection: close` and HTTP/1.0
//! honoured, 400/431/505/501 answered then closed; and against hostile clients: one that
//! pipelines requests and never reads (bounded memory, others still served), garbage bytes,
//! abrupt resets. A model this machine cannot run is printed as skipped with its reason.

use crate::common;

use common::child::Server;
use common::net::{read_n, reset};
use common::servers::servers;
use ringside::proto::http::{RESPONSE_400, RESPONSE_431, RESPONSE_501, RESPONSE_505};
use ringside::proto::Http;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n";

/// `ringside serve --protocol http --model ID`.
fn start(id: &'static str) -> Server {
    Server::start(id, "http", &[], None)
}

/// One keep-alive GET answered exactly on a fresh connection.
fn assert_serves(srv: &Server, what: &str) {
    let mut s = srv.connect();
    s.write_all(GET).unwrap();
    let ok = Http::new(None);
    let got = read_n(&mut s, ok.response_bytes(), &format!("{}: {what}", srv.id));
    assert_eq!(got, ok.response(), "{}: {what}", srv.id);
}

/// Everything until the server closes. A reset after the last byte (the server closed with
/// request bytes unread) ends the read like EOF: the bytes before it are what was sent.
fn read_until_closed(s: &mut TcpStream, what: &str) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return got,
            Err(e) => panic!("{what}: {e} (the server never closed?)"),
        }
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The default 200 with a `Connection` header, or without its body (HEAD).
fn ok_with(conn: Option<&str>, head_only: bool) -> Vec<u8> {
    let h = Http::new(None);
    let full = text(h.response());
    let (head, body) = full.split_once("\r\n\r\n").unwrap();
    let mut s = head.to_string();
    if let Some(c) = conn {
        s += &format!("\r\nConnection: {c}");
    }
    s += "\r\n\r\n";
    if !head_only {
        s += body;
    }
    s.into_bytes()
}

#[test]
fn keep_alive_pipelining_close_and_errors_are_exact() {
    let ok = ok_with(None, false);
    for m in servers() {
        let srv = start(m.id);
        let id = m.id;
        // Keep-alive: several requests one after the other on one connection.
        let mut s = srv.connect();
        for i in 0..5 {
            s.write_all(GET).unwrap();
            assert_eq!(
                text(&read_n(&mut s, ok.len(), id)),
                text(&ok),
                "{id}: request {i}"
            );
        }
        // Dribbled one byte at a time, then a body split across writes.
        for b in GET {
            s.write_all(&[*b]).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(read_n(&mut s, ok.len(), id), ok, "{id}: dribbled request");
        s.write_all(b"POST / HTTP/1.1\r\nContent-Length: 6\r\n\r\nabc")
            .unwrap();
        std::thread::sleep(Duration::from_millis(5));
        s.write_all(b"def").unwrap();
        assert_eq!(read_n(&mut s, ok.len(), id), ok, "{id}: POST with a body");
        // Pipelined in one write, mixed methods: answered in order.
        let mut burst = Vec::new();
        let mut want = Vec::new();
        for i in 0..20 {
            if i % 3 == 1 {
                burst.extend_from_slice(b"HEAD /h HTTP/1.1\r\n\r\n");
                want.extend_from_slice(&ok_with(None, true));
            } else {
                burst.extend_from_slice(GET);
                want.extend_from_slice(&ok);
            }
        }
        s.write_all(&burst).unwrap();
        assert_eq!(
            text(&read_n(&mut s, want.len(), id)),
            text(&want),
            "{id}: pipelined"
        );
        // Connection: close: the response, then the server closes.
        s.write_all(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
            .unwrap();
        let got = read_until_closed(&mut s, id);
        assert_eq!(
            text(&got),
            text(&ok_with(Some("close"), false)),
            "{id}: close"
        );
        // HTTP/1.0: closes unless asked to keep alive.
        let mut s = srv.connect();
        s.write_all(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.0\r\n\r\n")
            .unwrap();
        let mut want = ok_with(Some("keep-alive"), false);
        want.extend_from_slice(&ok_with(Some("close"), false));
        assert_eq!(
            text(&read_until_closed(&mut s, id)),
            text(&want),
            "{id}: HTTP/1.0"
        );
        // Each error: answered once, then closed.
        let long = {
            let mut v = b"GET / HTTP/1.1\r\nX: ".to_vec();
            v.resize(9000, b'a');
            v.extend_from_slice(b"\r\n\r\n");
            v
        };
        let cases: [(&[u8], &[u8]); 5] = [
            (b"GET / HTTP/1.1\r\nBad Header\r\n\r\n", RESPONSE_400),
            (
                b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                RESPONSE_400,
            ),
            (&long, RESPONSE_431),
            (b"GET / HTTP/2.0\r\n\r\n", RESPONSE_505),
            (
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                RESPONSE_501,
            ),
        ];
        for (req, err) in cases {
            let mut s = srv.connect();
            s.write_all(GET).unwrap();
            s.write_all(req).unwrap();
            let mut want = ok.clone();
            want.extend_from_slice(err);
            let got = read_until_closed(&mut s, id);
            assert_eq!(
                text(&got),
                text(&want),
                "{id}: {:?}",
                text(&req[..req.len().min(40)])
            );
        }
        assert_serves(&srv, "after the error cases");
        println!("{id}: ok");
    }
}

#[test]
fn hostile_clients_do_not_hurt_the_server() {
    const OFFER: usize = 256 << 20;
    for m in servers() {
        let srv = start(m.id);
        let id = m.id;
        assert_serves(&srv, "warm-up");
        // Garbage bytes: at most a 400, then closed; others still served.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for len in [1usize, 100, 70_000] {
            let mut s = srv.connect();
            let junk: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    (seed >> 24) as u8 | 0x80 // never a valid token byte
                })
                .collect();
            let _ = s.write_all(&junk);
            let got = read_until_closed(&mut s, id);
            assert!(
                got.is_empty() || got == RESPONSE_400,
                "{id}: garbage answered with {:?}",
                text(&got)
            );
        }
        assert_serves(&srv, "after garbage");
        // Abrupt resets: mid-head, and after a pipelined burst whose responses are pending.
        for burst in [&b"GET / HT"[..], &GET.repeat(2000)] {
            let mut s = srv.connect();
            s.write_all(burst).unwrap();
            std::thread::sleep(Duration::from_millis(20));
            reset(s);
        }
        assert_serves(&srv, "after resets");
        // A client pipelining requests and never reading: the server stops reading once its
        // output is over the bound, so neither what it takes nor its memory grows.
        let rss0 = srv.rss_kib();
        let s = srv.connect();
        let pushed = common::net::push_until_stalled(&s, &GET.repeat(1000), OFFER, id);
        let (sent, dropped) = (pushed.sent, pushed.dropped);
        let grown = srv.rss_kib().saturating_sub(rss0);
        assert!(
            sent < 128 << 20,
            "{id}: the server took {} MiB of requests from a client that never reads",
            sent >> 20
        );
        assert!(grown < 64 << 10, "{id}: RSS grew {} MiB", grown >> 10);
        assert_serves(&srv, "while a client pipelines and never reads");
        println!(
            "{id}: never-reading pipeliner sent {} KiB ({} requests){}, server RSS +{grown} KiB",
            sent >> 10,
            sent / GET.len(),
            if dropped {
                ", dropped by the server"
            } else {
                ""
            }
        );
        drop(s);
        assert_serves(&srv, "after the pipeliner left");
    }
}
