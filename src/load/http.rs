//! HTTP/1.1 GET over keep-alive connections (wrk's model): each connection sends
//! `GET {path} HTTP/1.1` and reads the whole response before sending the next.
//!
//! A response is validated, not just counted: status line and headers parsed with `httparse`,
//! the body delimited by Content-Length (or chunked transfer coding, decoded), and the body
//! compared byte for byte with the one the server was asked to send ([`Expect`]). Verdicts:
//! - 2xx with the expected body: valid;
//! - 2xx with another body (another length, or other bytes): a mismatch, at the first byte
//!   that differs (past the shorter body when the lengths differ);
//! - any other status: `Fault::Non2xx`;
//! - a head or framing that cannot be parsed, or a length that cannot be known (no
//!   Content-Length and not chunked, conflicting lengths, a head over
//!   [`MAX_RESPONSE_HEAD_BYTES`] or with more than [`MAX_RESPONSE_HEADERS`] fields, a
//!   Content-Length over [`MAX_RESPONSE_BODY_BYTES`], a chunked body over
//!   [`MAX_CHUNKED_BODY_BYTES`]): `Unreadable`; the engine counts it as malformed and closes
//!   the connection, since where the next response starts is unknown.
//!
//! No length a server sends becomes an allocation: a body of the expected length is held to be
//! compared (the expected body is ours, at most `proto::http::MAX_BODY_BYTES` per connection;
//! `ringside load` refuses connections x body past 1 GiB); a body of
//! another length, or any body under [`Expect::Any`], is judged from the head alone and the
//! engine reads and discards it in bounded pieces (`load::READ_CHUNK`); otherwise only a head
//! (at most [`MAX_RESPONSE_HEAD_BYTES`]) and a chunked body (at most
//! [`MAX_CHUNKED_BODY_BYTES`], decoded in place) are held.
//!
//! `NeedMore` asks for up to [`HEAD_READ_BYTES`] while the head is incomplete (one request is
//! outstanding per connection, so nothing past this response can arrive), and never for more
//! than the rest of the response once its length is known. A response that says the server
//! closes after it (`Connection: close`, or HTTP/1.0 without `keep-alive`) is counted, and the
//! engine reconnects.

use super::{Exchange, Fault, Response, Verdict};
use std::mem::MaybeUninit;
use std::sync::Arc;

/// The largest response head accepted, bytes.
pub const MAX_RESPONSE_HEAD_BYTES: usize = 64 * 1024;
/// How much is asked for while a head is incomplete, bytes.
pub(crate) const HEAD_READ_BYTES: usize = 16 * 1024;
/// Header fields parsed per response, at most (more: unreadable).
pub(crate) const MAX_RESPONSE_HEADERS: usize = 64;
/// The largest Content-Length accepted, bytes (1 GiB; more: malformed). Such a body is never
/// held: it is read and discarded in pieces.
pub(crate) const MAX_RESPONSE_BODY_BYTES: u64 = 1 << 30;
/// The largest chunked body accepted, bytes on the wire (1 MiB; more: malformed). A chunked
/// body is held until its end to be decoded, so this bounds what one connection holds.
pub const MAX_CHUNKED_BODY_BYTES: usize = 1 << 20;
/// The most bytes of expected bodies all connections may hold together (1 GiB): each
/// connection holds the body it compares (`load --body-bytes`, `run --body-bytes`).
pub(crate) const MAX_HELD_BODY_BYTES: u64 = 1 << 30;
/// Trailer fields after a chunked body, at most.
const MAX_TRAILERS: usize = 16;

/// The body a 2xx response must carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// What `ringside serve --protocol http [--body-bytes N]` answers
    /// (`proto::http::served_body`), byte for byte: what every HTTP server of `run` is asked
    /// to send.
    Served(Option<usize>),
    /// These bytes exactly.
    Exactly(Arc<[u8]>),
    /// Any body: only the status and the framing are checked (`ringside load --any-body`,
    /// against a server whose answer is not known).
    Any,
}

/// `GET {path} HTTP/1.1` with `Host: {host}`, keep-alive.
#[derive(Clone, Debug)]
pub struct HttpGet {
    /// The Host header's value, e.g. "127.0.0.1:8080".
    pub(crate) host: String,
    /// The request target, e.g. "/".
    pub(crate) path: String,
    expect: Expect,
    /// The expected body's bytes (`None`: any).
    body: Option<Arc<[u8]>>,
}

impl HttpGet {
    pub fn new(host: impl Into<String>, path: impl Into<String>, expect: Expect) -> HttpGet {
        let body = match &expect {
            Expect::Served(n) => Some(crate::proto::http::served_body(*n).into()),
            Expect::Exactly(b) => Some(b.clone()),
            Expect::Any => None,
        };
        HttpGet {
            host: host.into(),
            path: path.into(),
            expect,
            body,
        }
    }
}

/// How the body of a parsed head is delimited.
#[derive(Clone, Copy)]
enum Framing {
    Length(u64),
    Chunked,
}

impl Exchange for HttpGet {
    fn wire(&self) -> Option<super::Wire> {
        match self.expect {
            Expect::Served(body_bytes) => Some(super::Wire::Http {
                path: self.path.clone(),
                body_bytes,
            }),
            _ => None,
        }
    }

    fn request(&self, _conn: u32, _seq: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(b"GET ");
        out.extend_from_slice(self.path.as_bytes());
        out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        out.extend_from_slice(self.host.as_bytes());
        out.extend_from_slice(b"\r\n\r\n");
    }

    fn response(&self, _sent: &[u8], got: &[u8]) -> Response {
        let mut slots = [MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_RESPONSE_HEADERS];
        let mut r = httparse::Response::new(&mut []);
        let head = match httparse::ParserConfig::default()
            .parse_response_with_uninit_headers(&mut r, got, &mut slots)
        {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) if got.len() >= MAX_RESPONSE_HEAD_BYTES => {
                return Response::Unreadable("head over 64 KiB")
            }
            Ok(httparse::Status::Partial) => {
                return Response::NeedMore(HEAD_READ_BYTES.min(MAX_RESPONSE_HEAD_BYTES - got.len()))
            }
            Err(httparse::Error::TooManyHeaders) => {
                return Response::Unreadable("more than 64 header fields")
            }
            Err(_) => return Response::Unreadable("head does not parse"),
        };
        if head > MAX_RESPONSE_HEAD_BYTES {
            return Response::Unreadable("head over 64 KiB");
        }
        let code = r.code.unwrap_or(0);
        let mut framing: Option<Framing> = None;
        let (mut close, mut keep_alive) = (false, false);
        for h in r.headers.iter() {
            let name = h.name.as_bytes();
            if name.eq_ignore_ascii_case(b"content-length") {
                let Some(n) = content_length(h.value) else {
                    return Response::Unreadable("Content-Length is not a number");
                };
                match framing {
                    None => framing = Some(Framing::Length(n)),
                    Some(Framing::Length(m)) if m == n => {}
                    Some(Framing::Length(_)) => {
                        return Response::Unreadable("conflicting Content-Length values")
                    }
                    Some(Framing::Chunked) => {} // chunked wins (RFC 9112 6.3)
                }
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                let last = h.value.rsplit(|&b| b == b',').next().unwrap_or(b"");
                if !last.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                    return Response::Unreadable("Transfer-Encoding other than chunked");
                }
                // Chunked wins over Content-Length (RFC 9112 6.3).
                framing = Some(Framing::Chunked);
            } else if name.eq_ignore_ascii_case(b"connection") {
                for t in h.value.split(|&b| b == b',') {
                    let t = t.trim_ascii();
                    close |= t.eq_ignore_ascii_case(b"close");
                    keep_alive |= t.eq_ignore_ascii_case(b"keep-alive");
                }
            }
        }
        // HTTP/1.0 closes unless it says keep-alive.
        close |= r.version == Some(0) && !keep_alive;
        // 1xx, 204 and 304 have no body whatever the headers say.
        let bodiless = (100..200).contains(&code) || code == 204 || code == 304;
        let (len, body) = if bodiless {
            (head as u64, 0)
        } else {
            match framing {
                // Judged from the head: the body's bytes are read and discarded by the engine.
                Some(Framing::Length(n)) if n > MAX_RESPONSE_BODY_BYTES => {
                    return Response::Unreadable("Content-Length over the 1 GiB cap")
                }
                Some(Framing::Length(n)) => (head as u64 + n, n),
                Some(Framing::Chunked) => match chunked(&got[head..]) {
                    Chunked::Done { len, body } => ((head + len) as u64, body as u64),
                    Chunked::NeedMore(n) => return Response::NeedMore(n),
                    Chunked::Bad(why) => return Response::Unreadable(why),
                },
                None => return Response::Unreadable("no Content-Length on a keep-alive response"),
            }
        };
        let verdict = if !(200..300).contains(&code) {
            Verdict::Fault(Fault::Non2xx)
        } else {
            match &self.body {
                None => Verdict::Valid,
                Some(e) if e.len() as u64 != body => Verdict::Mismatch {
                    at: head as u64 + body.min(e.len() as u64),
                },
                // The expected length: hold the body (ours, bounded) and compare it.
                Some(e) => match framing {
                    Some(Framing::Chunked) if !bodiless => match chunked_differs(&got[head..], e) {
                        Some(at) => Verdict::Mismatch {
                            at: head as u64 + at,
                        },
                        None => Verdict::Valid,
                    },
                    _ => {
                        let end = head + e.len();
                        if got.len() < end {
                            return Response::NeedMore(end - got.len());
                        }
                        match got[head..end]
                            .iter()
                            .zip(e.iter())
                            .position(|(a, b)| a != b)
                        {
                            Some(at) => Verdict::Mismatch {
                                at: (head + at) as u64,
                            },
                            None => Verdict::Valid,
                        }
                    }
                },
            }
        };
        Response::Complete {
            len,
            verdict,
            close,
        }
    }
}

/// Content-Length: 1 to 19 ASCII digits, surrounding blanks allowed.
fn content_length(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().fold(0u64, |n, &d| n * 10 + (d - b'0') as u64))
}

/// Where a complete chunked body (its framing already walked by [`chunked`]) first differs
/// from `want` once decoded, as an offset into the decoded body; `None`: equal.
fn chunked_differs(b: &[u8], want: &[u8]) -> Option<u64> {
    let (mut pos, mut at) = (0usize, 0usize);
    while let Ok(httparse::Status::Complete((line, size))) = httparse::parse_chunk_size(&b[pos..]) {
        if size == 0 {
            break;
        }
        let Some(data) = b.get(pos + line..pos + line + size as usize) else {
            return Some(at as u64);
        };
        let expect = want
            .get(at..at + data.len())
            .unwrap_or(&want[at.min(want.len())..]);
        if let Some(k) = data.iter().zip(expect).position(|(x, y)| x != y) {
            return Some((at + k) as u64);
        }
        if expect.len() < data.len() {
            return Some((at + expect.len()) as u64);
        }
        at += data.len();
        pos += line + size as usize + 2;
    }
    (at != want.len()).then_some(at as u64)
}

enum Chunked {
    /// The chunked body is `len` bytes on the wire and `body` bytes decoded.
    Done {
        len: usize,
        body: usize,
    },
    NeedMore(usize),
    Bad(&'static str),
}

/// The smallest end of a chunked body: `0\r\n\r\n`.
const LAST_CHUNK_MIN: usize = 5;

/// Walks a chunked body from its start; asks only for bytes that must still come, and never
/// for a body past [`MAX_CHUNKED_BODY_BYTES`].
fn chunked(b: &[u8]) -> Chunked {
    const OVER: Chunked = Chunked::Bad("chunked body over the 1 MiB cap");
    let (mut pos, mut body) = (0usize, 0usize);
    loop {
        let rest = &b[pos..];
        match httparse::parse_chunk_size(rest) {
            Err(_) => return Chunked::Bad("bad chunk size line"),
            Ok(httparse::Status::Partial) => {
                // A size line of 4 KiB is not a size line.
                if rest.len() > 4096 {
                    return Chunked::Bad("chunk size line over 4 KiB");
                }
                if pos + rest.len() >= MAX_CHUNKED_BODY_BYTES {
                    return OVER;
                }
                return Chunked::NeedMore(if rest.is_empty() { LAST_CHUNK_MIN } else { 1 });
            }
            Ok(httparse::Status::Complete((line, 0))) => {
                // Trailer section: header lines, then an empty line.
                let after = &rest[line..];
                let mut tr = [httparse::EMPTY_HEADER; MAX_TRAILERS];
                return match httparse::parse_headers(after, &mut tr) {
                    Ok(httparse::Status::Complete((n, _))) => Chunked::Done {
                        len: pos + line + n,
                        body,
                    },
                    Ok(httparse::Status::Partial)
                        if pos + line + after.len() >= MAX_CHUNKED_BODY_BYTES =>
                    {
                        OVER
                    }
                    Ok(httparse::Status::Partial) => {
                        Chunked::NeedMore(if after.is_empty() { 2 } else { 1 })
                    }
                    Err(_) => Chunked::Bad("bad chunked trailer"),
                };
            }
            Ok(httparse::Status::Complete((line, size))) => {
                // Data, its CRLF and at least the last chunk must fit under the cap.
                let Some(end) = usize::try_from(size)
                    .ok()
                    .and_then(|s| (line + 2).checked_add(s))
                    .filter(|&e| pos + e + LAST_CHUNK_MIN <= MAX_CHUNKED_BODY_BYTES)
                else {
                    return OVER;
                };
                if rest.len() < end {
                    return Chunked::NeedMore(end - rest.len() + LAST_CHUNK_MIN);
                }
                if &rest[end - 2..end] != b"\r\n" {
                    return Chunked::Bad("chunk data not followed by CRLF");
                }
                pos += end;
                body += end - line - 2;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `None`: any body; `Some(n)`: the first `n` bytes of "Hello, World!" and then dots.
    fn get(expect: Option<usize>) -> HttpGet {
        let expect = match expect {
            None => Expect::Any,
            Some(n) => {
                let mut b = b"Hello, World!".to_vec();
                b.resize(n, b'.');
                Expect::Exactly(b.into())
            }
        };
        HttpGet::new("h:1", "/p", expect)
    }

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nServer: ringside\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!";

    fn done(len: usize, verdict: Verdict) -> Response {
        Response::Complete {
            len: len as u64,
            verdict,
            close: false,
        }
    }

    /// Feeds `resp` the way the engine does: read at most what NeedMore asks for, in pieces
    /// of at most `piece` bytes, and once complete the rest of `len` (discarded); returns the
    /// verdict and the bytes the response spans on the wire. Asserts what the engine relies on:
    /// never `NeedMore(0)`, never more held than a head and a chunked body at their caps.
    fn drive(g: &HttpGet, wire: &[u8], piece: usize) -> (Response, usize) {
        let mut got = Vec::new();
        loop {
            let r = g.response(b"", &got);
            match r {
                Response::NeedMore(n) => {
                    assert!(n > 0, "NeedMore(0) would stall");
                    assert!(
                        got.len() + n <= MAX_RESPONSE_HEAD_BYTES + MAX_CHUNKED_BODY_BYTES,
                        "asks to hold {} + {n}",
                        got.len()
                    );
                    let k = n.min(piece).min(wire.len() - got.len());
                    if k == 0 {
                        return (r, got.len());
                    }
                    got.extend_from_slice(&wire[got.len()..got.len() + k]);
                }
                Response::Complete { len, .. } => {
                    assert!(len > 0, "an empty response would never end");
                    return (r, (len as usize).min(wire.len()));
                }
                Response::Unreadable(why) => {
                    assert!(!why.is_empty());
                    return (r, got.len());
                }
            }
        }
    }

    #[test]
    fn the_request_is_a_keep_alive_get() {
        let mut out = Vec::new();
        get(None).request(3, 9, &mut out);
        assert_eq!(out, b"GET /p HTTP/1.1\r\nHost: h:1\r\n\r\n");
    }

    #[test]
    fn a_split_response_completes_exactly_and_never_reads_past_its_end() {
        let g = get(Some(13));
        // A second response right behind: it must never be consumed.
        let mut wire = OK.to_vec();
        wire.extend_from_slice(OK);
        for piece in [1, 2, 7, 50, 1 << 20] {
            let (r, used) = drive(&g, &wire, piece);
            assert_eq!(r, done(OK.len(), Verdict::Valid), "piece {piece}");
            assert_eq!(used, OK.len(), "piece {piece}");
        }
        // A body of the expected length is held and compared: asked for to its last byte,
        // never past it. Any body is judged from the head.
        let head = OK.len() - 13;
        for cut in 0..OK.len() {
            match g.response(b"", &OK[..cut]) {
                Response::NeedMore(n) if cut >= head => assert_eq!(n, OK.len() - cut),
                Response::NeedMore(n) => assert!(n > 0, "cut {cut}"),
                r => panic!("cut {cut}: {r:?}"),
            }
            match get(None).response(b"", &OK[..cut]) {
                Response::NeedMore(n) => assert!(n > 0 && cut < head, "cut {cut}"),
                r => {
                    assert!(cut >= head, "cut {cut}");
                    assert_eq!(r, done(OK.len(), Verdict::Valid), "cut {cut}");
                }
            }
        }
        assert_eq!(g.response(b"", OK), done(OK.len(), Verdict::Valid));
        // The wrong body length is a mismatch at the first byte past the shorter body; no
        // expectation accepts any length.
        assert_eq!(
            get(Some(12)).response(b"", OK),
            done(
                OK.len(),
                Verdict::Mismatch {
                    at: head as u64 + 12
                }
            )
        );
        assert_eq!(
            get(Some(20)).response(b"", OK),
            done(
                OK.len(),
                Verdict::Mismatch {
                    at: head as u64 + 13
                }
            )
        );
        assert_eq!(get(None).response(b"", OK), done(OK.len(), Verdict::Valid));
    }

    /// The body is compared byte for byte: the same length with other bytes is a mismatch
    /// at the first byte that differs, chunked or not; a 204 (or any empty body) where a body
    /// was asked for is a mismatch; what ringside's servers answer is valid.
    #[test]
    fn a_body_of_the_right_length_but_other_bytes_is_a_mismatch() {
        let g = get(Some(13));
        let wrong = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello, Wxrld!";
        let h = wrong.len() - 13;
        assert_eq!(
            g.response(b"", wrong),
            done(wrong.len(), Verdict::Mismatch { at: h as u64 + 8 })
        );
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nHello\r\n8\r\n, Wxrld!\r\n0\r\n\r\n";
        // Offsets into a chunked body are of the decoded body, after the head.
        let ch = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".len();
        assert_eq!(
            g.response(b"", chunked),
            done(chunked.len(), Verdict::Mismatch { at: ch as u64 + 8 })
        );
        let right = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nHello\r\n8\r\n, World!\r\n0\r\n\r\n";
        assert_eq!(g.response(b"", right), done(right.len(), Verdict::Valid));
        for empty in [
            &b"HTTP/1.1 204 No Content\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        ] {
            assert_eq!(
                g.response(b"", empty),
                done(
                    empty.len(),
                    Verdict::Mismatch {
                        at: empty.len() as u64
                    }
                )
            );
        }
        // What `ringside serve` answers, at its default and at a size, is what Served expects.
        for n in [None, Some(0), Some(1000)] {
            let served = crate::proto::http::Http::new(n);
            let g = HttpGet::new("h", "/", Expect::Served(n));
            let wire = served.response();
            assert_eq!(
                g.response(b"", wire),
                done(wire.len(), Verdict::Valid),
                "{n:?}"
            );
        }
    }

    #[test]
    fn non_2xx_is_its_own_kind() {
        let g = get(Some(13));
        for wire in [
            &b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nnop"[..],
            b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n",
        ] {
            assert_eq!(
                g.response(b"", wire),
                done(wire.len(), Verdict::Fault(Fault::Non2xx))
            );
        }
    }

    #[test]
    fn connection_close_and_http_1_0_say_the_server_closes() {
        let g = get(None);
        for (wire, close) in [
            (
                &b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"[..],
                true,
            ),
            (
                b"HTTP/1.1 200 OK\r\nConnection: Upgrade, CLOSE\r\nContent-Length: 0\r\n\r\n",
                true,
            ),
            (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", true),
            (
                b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n",
                false,
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n",
                false,
            ),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false),
        ] {
            assert_eq!(
                g.response(b"", wire),
                Response::Complete {
                    len: wire.len() as u64,
                    verdict: Verdict::Valid,
                    close
                },
                "{:?}",
                String::from_utf8_lossy(wire)
            );
        }
    }

    #[test]
    fn malformed_responses_are_unreadable() {
        let g = get(None);
        let big_head = {
            let mut v = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
            v.resize(MAX_RESPONSE_HEAD_BYTES + 10, b'a');
            v
        };
        let many_fields = {
            let mut v = b"HTTP/1.1 200 OK\r\n".to_vec();
            for i in 0..=MAX_RESPONSE_HEADERS {
                v.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
            }
            v.extend_from_slice(b"Content-Length: 0\r\n\r\n");
            v
        };
        for (wire, why) in [
            (&b"garbage\r\n\r\n"[..], "does not parse"),
            (b"HTTP/1.1 200 OK\r\n\r\n", "no Content-Length"),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
                "not a number",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
                "conflicting",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
                "Transfer-Encoding",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                "chunk size",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXX",
                "CRLF",
            ),
            (b"HTTP/2 200\r\n\r\n", "does not parse"),
            (&big_head, "64 KiB"),
            (&many_fields, "header fields"),
            // Lengths a server may not make us hold or wait for.
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\nabc",
                "Content-Length over",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1073741825\r\n\r\n",
                "Content-Length over",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFF\r\nabc",
                "chunked body over",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFF\r\n",
                "chunked body over",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n100000\r\n",
                "chunked body over",
            ),
        ] {
            match drive(&g, wire, 1 << 20).0 {
                Response::Unreadable(w) => assert!(
                    w.contains(why),
                    "{w} for {:?}",
                    String::from_utf8_lossy(&wire[..wire.len().min(80)])
                ),
                r => panic!(
                    "{r:?} for {:?}",
                    String::from_utf8_lossy(&wire[..wire.len().min(80)])
                ),
            }
        }
        // At the caps: accepted.
        let at_cap =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {MAX_RESPONSE_BODY_BYTES}\r\n\r\n");
        assert!(matches!(
            g.response(b"", at_cap.as_bytes()),
            Response::Complete { len, verdict: Verdict::Valid, .. }
                if len == at_cap.len() as u64 + MAX_RESPONSE_BODY_BYTES
        ));
    }

    /// Chunked bodies up to the cap decode; one chunk past it is refused, however it is split.
    #[test]
    fn a_chunked_body_at_the_cap_decodes_and_past_it_is_malformed() {
        let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        let wire_of = |size: usize| {
            let mut v = head.to_vec();
            v.extend_from_slice(format!("{size:x}\r\n").as_bytes());
            v.resize(v.len() + size, b'z');
            v.extend_from_slice(b"\r\n0\r\n\r\n");
            v
        };
        // size line + data + CRLF + last chunk = the cap exactly.
        let wire_len = |size: usize| format!("{size:x}\r\n").len() + size + 2 + LAST_CHUNK_MIN;
        let fits = (0..MAX_CHUNKED_BODY_BYTES)
            .rev()
            .find(|&s| wire_len(s) <= MAX_CHUNKED_BODY_BYTES)
            .unwrap();
        let w = wire_of(fits);
        assert_eq!(w.len() - head.len(), MAX_CHUNKED_BODY_BYTES);
        for piece in [4096, 1 << 20] {
            assert_eq!(
                drive(
                    &HttpGet::new("h", "/", Expect::Exactly(vec![b'z'; fits].into())),
                    &w,
                    piece
                ),
                (done(w.len(), Verdict::Valid), w.len())
            );
            let w = wire_of(fits + 1);
            assert!(matches!(
                drive(&get(None), &w, piece).0,
                Response::Unreadable(_)
            ));
        }
    }

    #[test]
    fn chunked_bodies_are_decoded() {
        let g = get(Some(13));
        let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nHello\r\n8;ext=1\r\n, World!\r\n0\r\nTrailer: x\r\n\r\n";
        let mut two = wire.to_vec();
        two.extend_from_slice(OK);
        for piece in [1, 3, 1 << 20] {
            let (r, used) = drive(&g, &two, piece);
            assert_eq!(r, done(wire.len(), Verdict::Valid), "piece {piece}");
            assert_eq!(used, wire.len(), "never past the end");
        }
        let plain = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
        let mut two = plain.to_vec();
        two.extend_from_slice(OK);
        assert_eq!(
            drive(&get(Some(0)), &two, 1),
            (done(plain.len(), Verdict::Valid), plain.len())
        );
    }

    #[test]
    fn the_server_response_is_valid() {
        let h = crate::proto::Http::new(Some(1000));
        let g = HttpGet::new("h", "/", Expect::Served(Some(1000)));
        assert_eq!(
            drive(&g, h.response(), 1 << 20).0,
            done(h.response_bytes(), Verdict::Valid)
        );
    }

    /// Fuzz-style bound test (the cargo-fuzz target `http_response` checks the same on
    /// libFuzzer's inputs): seeds of every shape, mutated byte by byte with a fixed-seed
    /// generator, read in random pieces. Whatever the bytes: no panic, never `NeedMore(0)`,
    /// never more held than a head and a chunked body at their caps, and the verdict on
    /// exactly the response's own bytes the one given.
    #[test]
    fn mutated_responses_never_ask_to_hold_more_than_the_caps() {
        let seeds: [&[u8]; 5] = [
            OK,
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\nConnection: close\r\n\r\nnop",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nHello\r\n8;x=1\r\n, World!\r\n0\r\nT: x\r\n\r\n",
            b"HTTP/1.0 200 OK\r\nContent-Length: 99999999999\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFF\r\n",
        ];
        let alphabet = b"0123456789abcdefABCDEF:;\r\n \tHTTP/1.chunkedContent-Length";
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..20_000 {
            let mut wire = seeds[round % seeds.len()].to_vec();
            for _ in 0..1 + rnd() % 4 {
                let at = (rnd() as usize) % (wire.len() + 1);
                match rnd() % 3 {
                    0 if at < wire.len() => wire[at] = alphabet[rnd() as usize % alphabet.len()],
                    1 => wire.insert(at, alphabet[rnd() as usize % alphabet.len()]),
                    _ if at < wire.len() => {
                        wire.remove(at);
                    }
                    _ => {}
                }
            }
            let expect = (rnd() % 2 == 0).then_some(13);
            let piece = 1 + rnd() as usize % 64;
            let g = get(expect);
            let (r, _) = drive(&g, &wire, piece);
            if let Response::Complete { len, .. } = r {
                // The verdict on exactly its own bytes is the one given.
                if len as usize <= wire.len() {
                    assert_eq!(g.response(b"", &wire[..len as usize]), r, "{wire:?}");
                }
            }
        }
    }
}
