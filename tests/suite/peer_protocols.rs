//! The contenders beyond echo: tokio+hyper serves HTTP/1.1 (100 keep-alive requests on one
//! connection, pipelined requests answered in order, `Connection: close` and HTTP/1.0 honoured,
//! a slowloris connection dropped while others are served), and tokio and monoio serve any
//! sans-I/O protocol through the same plain loop (a line protocol: replies per line, lines
//! split across reads and many in one read, `Next::Close`, `on_eof`, 20 concurrent
//! connections, a client that never reads stalls the server instead of growing it; hyper too).
//! Each server stops within a second of its flag, closing its connections.

use crate::common;

use common::inproc::Peer;
use common::net::connect;
use common::servers::{peer_ready as ready, peers};
use ringside::model::PeerKind;
use ringside::peer::{serve_http, serve_proto, Setup, HEADER_READ_TIMEOUT};
use ringside::proto::{Next, Protocol, Reply, Step};
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

const BODY: &[u8] = b"Hello, World!";

fn start_hyper() -> Peer {
    start_hyper_on(PeerKind::Tokio)
}

/// hyper on `tokio` (current_thread) or `tokio-mt` (two workers).
fn start_hyper_on(kind: PeerKind) -> Peer {
    Peer::start(move |l, stop| serve_http(kind, l, stop, Arc::from(BODY), Setup::TWO).map(drop))
}

fn start_lines(kind: PeerKind) -> Peer {
    Peer::start(move |l, stop| serve_proto(kind, l, Lines, stop, Setup::TWO).map(drop))
}

/// The next read on `s` sees EOF or a reset, never data or a timeout.
fn assert_closed(s: &mut impl Read, what: &str) {
    let mut b = [0u8; 64];
    match s.read(&mut b) {
        Ok(0) => {}
        Ok(n) => panic!("{what}: {n} unexpected bytes: {:?}", &b[..n]),
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        Err(e) => panic!("{what}: connection not closed: {e}"),
    }
}

// -- HTTP with hyper --

/// One parsed response: status line, headers (lower-cased names) and body.
struct Resp {
    status: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one response; `head` = the request was HEAD (no body follows its Content-Length).
fn read_response(r: &mut impl BufRead, head: bool) -> Resp {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let status = line.trim_end().to_string();
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (n, v) = l.split_once(':').expect("header line without ':'");
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let mut resp = Resp {
        status,
        headers,
        body: Vec::new(),
    };
    let len: usize = resp
        .header("content-length")
        .expect("no Content-Length")
        .parse()
        .unwrap();
    if !head {
        resp.body = vec![0; len];
        r.read_exact(&mut resp.body).unwrap();
    }
    resp
}

fn assert_hello(r: &Resp, head: bool) {
    assert!(r.status.starts_with("HTTP/1.1 200"), "status {}", r.status);
    assert_eq!(r.header("content-type"), Some("text/plain"));
    assert_eq!(
        r.header("content-length"),
        Some(BODY.len().to_string().as_str())
    );
    if !head {
        assert_eq!(r.body, BODY);
    }
}

#[test]
fn hyper_keeps_alive_for_100_requests_on_one_connection() {
    for kind in [PeerKind::Tokio, PeerKind::TokioMt] {
        if ready(kind) {
            keeps_alive(kind);
        }
    }
}

fn keeps_alive(kind: PeerKind) {
    let server = start_hyper_on(kind);
    let s = connect(server.addr);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    for i in 0..100 {
        write!(w, "GET /n/{i} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let resp = read_response(&mut r, false);
        assert_hello(&resp, false);
        assert_ne!(resp.header("connection"), Some("close"), "request {i}");
    }
    // A request with a body: the body is read and discarded, the connection stays usable.
    w.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nabcde")
        .unwrap();
    assert_hello(&read_response(&mut r, false), false);
    w.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_hello(&read_response(&mut r, false), false);
    server.stop_within_a_second();
    assert_closed(&mut r, "keep-alive connection after stop");
}

#[test]
fn hyper_answers_pipelined_requests_in_order() {
    if !ready(PeerKind::Tokio) {
        return;
    }
    let server = start_hyper();
    let s = connect(server.addr);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    // GET, HEAD, GET in one write: a HEAD answer has no body, so answering out of order would
    // desynchronise the reader below.
    w.write_all(
        b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\n\
          HEAD /2 HTTP/1.1\r\nHost: x\r\n\r\n\
          GET /3 HTTP/1.1\r\nHost: x\r\n\r\n",
    )
    .unwrap();
    assert_hello(&read_response(&mut r, false), false);
    assert_hello(&read_response(&mut r, true), true);
    assert_hello(&read_response(&mut r, false), false);
    // Nothing more than the three answers: the next bytes are a fourth answer, not leftovers.
    w.write_all(b"GET /4 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_hello(&read_response(&mut r, false), false);
    server.stop_within_a_second();
}

#[test]
fn hyper_honours_connection_close_and_http_1_0() {
    if !ready(PeerKind::Tokio) {
        return;
    }
    let server = start_hyper();
    for (req, what) in [
        (
            &b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"[..],
            "Connection: close",
        ),
        (&b"GET / HTTP/1.0\r\n\r\n"[..], "HTTP/1.0"),
    ] {
        let s = connect(server.addr);
        let mut w = s.try_clone().unwrap();
        let mut r = BufReader::new(s);
        w.write_all(req).unwrap();
        let resp = read_response(&mut r, false);
        assert_eq!(resp.body, BODY, "{what}");
        assert!(resp.status.contains(" 200 "), "{what}: {}", resp.status);
        assert_closed(&mut r, what);
    }
    server.stop_within_a_second();
}

/// One header byte per second: hyper drops the connection after [`HEADER_READ_TIMEOUT`] while
/// it keeps answering another connection.
#[test]
fn hyper_drops_a_slowloris_client_and_keeps_serving() {
    if !ready(PeerKind::Tokio) {
        return;
    }
    let server = start_hyper();
    let addr = server.addr;
    let slow = thread::spawn(move || {
        let mut s = connect(addr);
        let t0 = Instant::now();
        let limit = HEADER_READ_TIMEOUT + Duration::from_secs(5);
        for b in b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ".iter().cycle() {
            if s.write_all(&[*b]).is_err() {
                break; // reset: dropped
            }
            assert!(
                t0.elapsed() < limit,
                "slowloris connection still open after {:?}",
                t0.elapsed()
            );
            let mut probe = [0u8; 1];
            s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
            match s.read(&mut probe) {
                Ok(0) => break,
                Ok(_) => continue, // an error response before the close is fine
                Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => panic!("slowloris read: {e}"),
            }
        }
        t0.elapsed()
    });
    // Meanwhile another client is served normally.
    let s = connect(addr);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    for _ in 0..5 {
        w.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_hello(&read_response(&mut r, false), false);
        thread::sleep(Duration::from_millis(200));
    }
    let dropped_after = slow.join().unwrap();
    assert!(
        dropped_after >= HEADER_READ_TIMEOUT - Duration::from_secs(1),
        "slowloris dropped after only {dropped_after:?}"
    );
    server.stop_within_a_second();
}

// -- any Protocol through the plain loop --

/// A line protocol: "ok\n" per complete line, "bye\n" and close on "quit", and on EOF after a
/// partial line "partial\n". Partial lines wait in the connection state.
#[derive(Clone)]
struct Lines;

#[derive(Default)]
struct LineConn {
    partial: usize,
}

impl Protocol for Lines {
    type Conn = LineConn;

    fn id(&self) -> &'static str {
        "lines"
    }

    fn on_bytes(&self, conn: &mut LineConn, input: &[u8], out: &mut Vec<u8>) -> Step {
        let mut reply = Reply::Nothing;
        let mut line_start = 0usize;
        for (i, &b) in input.iter().enumerate() {
            if b != b'\n' {
                continue;
            }
            reply = Reply::Out;
            let this = &input[line_start..i];
            let whole_is_quit = conn.partial == 0 && this == b"quit";
            conn.partial = 0;
            line_start = i + 1;
            if whole_is_quit {
                out.extend_from_slice(b"bye\n");
                return Step {
                    reply,
                    next: Next::Close,
                };
            }
            out.extend_from_slice(b"ok\n");
        }
        conn.partial += input.len() - line_start;
        Step {
            reply,
            next: Next::More,
        }
    }

    fn on_eof(&self, conn: &mut LineConn, out: &mut Vec<u8>) -> Reply {
        if conn.partial > 0 {
            out.extend_from_slice(b"partial\n");
            Reply::Out
        } else {
            Reply::Nothing
        }
    }
}

fn read_n(s: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    s.read_exact(&mut b).unwrap();
    b
}

fn serves_lines(kind: PeerKind) {
    if !ready(kind) {
        return;
    }
    let server = start_lines(kind);
    let addr = server.addr;
    let clients: Vec<_> = (0..20)
        .map(|c| {
            thread::spawn(move || {
                let mut s = connect(addr);
                // A line split over three writes: one answer, only once it is complete.
                s.write_all(b"he").unwrap();
                thread::sleep(Duration::from_millis(2));
                s.write_all(b"ll").unwrap();
                thread::sleep(Duration::from_millis(2));
                s.write_all(b"o\n").unwrap();
                assert_eq!(read_n(&mut s, 3), b"ok\n", "client {c}");
                // 500 lines in one write (several reads on the server): 500 answers.
                let many: Vec<u8> = (0..500)
                    .flat_map(|i| format!("{i}\n").into_bytes())
                    .collect();
                s.write_all(&many).unwrap();
                assert_eq!(read_n(&mut s, 1500), b"ok\n".repeat(500), "client {c}");
                s
            })
        })
        .collect();
    let mut open: Vec<TcpStream> = clients.into_iter().map(|t| t.join().unwrap()).collect();

    // Next::Close: the reply made with it is sent, then the connection closes; what was sent
    // after "quit" is not answered.
    let mut s = connect(addr);
    s.write_all(b"a\nquit\nb\n").unwrap();
    let mut back = Vec::new();
    match s.read_to_end(&mut back) {
        Ok(_) => {}
        // A reset is allowed: "b\n" may be left unread when the server closes.
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        Err(e) => panic!("connection not closed after quit: {e}"),
    }
    assert!(
        back.starts_with(b"ok\nbye\n"),
        "{:?}",
        String::from_utf8_lossy(&back)
    );
    assert_eq!(back.len(), 7, "{:?}", String::from_utf8_lossy(&back));

    // on_eof: a half-close after a partial line gets the protocol's last reply, then EOF.
    let mut s = connect(addr);
    s.write_all(b"x\ntrunc").unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut back = Vec::new();
    s.read_to_end(&mut back).unwrap();
    assert_eq!(back, b"ok\npartial\n");

    server.stop_within_a_second();
    for s in &mut open {
        assert_closed(s, "line connection after stop");
    }
}

#[test]
fn tokio_serves_a_protocol_and_stops() {
    serves_lines(PeerKind::Tokio);
}

#[test]
fn tokio_mt_serves_a_protocol_and_stops() {
    serves_lines(PeerKind::TokioMt);
}

#[test]
fn monoio_serves_a_protocol_and_stops() {
    serves_lines(PeerKind::Monoio);
}

/// A client that sends lines and never reads the answers: the loop writes each read's answers
/// before reading again, so it stalls in the write once the socket buffers fill, and the
/// client's writes stall too (the server holds one read's answers, not everything sent).
#[test]
fn never_reading_client_stalls_the_protocol_loop_and_the_server_still_stops() {
    for kind in peers() {
        if ready(kind) {
            stalls(
                &format!("{kind:?}"),
                start_lines(kind),
                &b"x\n".repeat(1 << 19),
            );
        }
    }
}

/// A client that pipelines requests and never reads the responses: hyper stops reading too.
#[test]
fn never_reading_pipelining_client_stalls_hyper_and_the_server_still_stops() {
    if ready(PeerKind::Tokio) {
        let req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        stalls("hyper", start_hyper(), &req.repeat(1 << 15));
    }
}

/// Writes `chunk` until a write stalls for 500 ms (the server stopped reading); fails if the
/// server takes 256 MiB without stalling. Then the server must still stop.
fn stalls(kind: &str, server: Peer, chunk: &[u8]) {
    {
        let s = connect(server.addr);
        let p = common::net::push_until_stalled(&s, chunk, 256 << 20, kind);
        assert!(
            p.stalled,
            "{kind} read {} bytes from a client that never reads",
            p.sent
        );
    }
    server.stop_within_a_second();
}

#[test]
fn monoio_has_no_http_server_of_its_own() {
    if !ready(PeerKind::Monoio) {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let err = serve_http(
        PeerKind::Monoio,
        listener,
        Arc::new(AtomicBool::new(false)),
        Arc::from(BODY),
        Setup::TWO,
    )
    .unwrap_err();
    assert!(err.to_string().contains("serve_proto"), "{err}");
}

#[test]
fn idle_servers_stop_within_a_second() {
    if ready(PeerKind::Tokio) {
        let server = start_hyper();
        thread::sleep(Duration::from_millis(120));
        server.stop_within_a_second();
    }
    for kind in peers() {
        if ready(kind) {
            let server = start_lines(kind);
            thread::sleep(Duration::from_millis(120));
            server.stop_within_a_second();
        }
    }
}
