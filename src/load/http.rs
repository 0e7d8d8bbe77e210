//! HTTP/1.1 GET over keep-alive connections (wrk's model): each connection sends
//! `GET {path} HTTP/1.1` and reads the whole response before sending the next.
//!
//! A response is validated, not just counted: status line and headers parsed with `httparse`,
//! the body delimited by Content-Length (or chunked transfer coding, decoded), and the body
//! length compared with the expected one when given. Verdicts:
//! - 2xx with the expected body length: valid;
//! - 2xx with another body length: `Complete { valid: false }` (a mismatch: wrong content);
//! - any other status: `Failed { kind: Non2xx }`;
//! - a head or framing that cannot be parsed, or a length that cannot be known (no
//!   Content-Length and not chunked, conflicting lengths, a head over
//!   [`MAX_RESPONSE_HEAD_BYTES`]): `Unreadable`; the engine counts it as malformed and closes
//!   the connection, since where the next response starts is unknown.
//!
//! `NeedMore` asks for up to [`HEAD_READ_BYTES`] while the head is incomplete (one request is
//! outstanding per connection, so nothing past this response can arrive), and never for more
//! than the rest of the response once its length is known.

use super::{Exchange, Fault, Response};
use std::mem::MaybeUninit;

/// The largest response head accepted, bytes.
pub const MAX_RESPONSE_HEAD_BYTES: usize = 64 * 1024;
/// How much is asked for while a head is incomplete, bytes.
pub const HEAD_READ_BYTES: usize = 16 * 1024;
/// Header fields parsed per response, at most (more: unreadable).
pub const MAX_RESPONSE_HEADERS: usize = 64;

/// `GET {path} HTTP/1.1` with `Host: {host}`, keep-alive.
#[derive(Clone, Debug)]
pub struct HttpGet {
    /// The Host header's value, e.g. "127.0.0.1:8080".
    pub host: String,
    /// The request target, e.g. "/".
    pub path: String,
    /// Expected body length, bytes; `None`: any length is valid.
    pub expect_body_bytes: Option<usize>,
}

/// How the body of a parsed head is delimited.
enum Framing {
    Length(u64),
    Chunked,
}

impl Exchange for HttpGet {
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
                return Response::Unreadable
            }
            Ok(httparse::Status::Partial) => {
                return Response::NeedMore(HEAD_READ_BYTES.min(MAX_RESPONSE_HEAD_BYTES - got.len()))
            }
            Err(_) => return Response::Unreadable,
        };
        if head > MAX_RESPONSE_HEAD_BYTES {
            return Response::Unreadable;
        }
        let code = r.code.unwrap_or(0);
        let mut framing: Option<Framing> = None;
        for h in r.headers.iter() {
            let name = h.name.as_bytes();
            if name.eq_ignore_ascii_case(b"content-length") {
                let Some(n) = content_length(h.value) else {
                    return Response::Unreadable;
                };
                match framing {
                    None => framing = Some(Framing::Length(n)),
                    Some(Framing::Length(m)) if m == n => {}
                    _ => return Response::Unreadable, // conflicting lengths
                }
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                let last = h.value.rsplit(|&b| b == b',').next().unwrap_or(b"");
                if !last.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                    return Response::Unreadable;
                }
                // Chunked wins over Content-Length (RFC 9112 6.3).
                framing = Some(Framing::Chunked);
            }
        }
        // 1xx, 204 and 304 have no body whatever the headers say.
        let bodiless = (100..200).contains(&code) || code == 204 || code == 304;
        let (len, body) = if bodiless {
            (head, 0)
        } else {
            match framing {
                Some(Framing::Length(n)) => {
                    let Some(total) = usize::try_from(n).ok().and_then(|n| n.checked_add(head))
                    else {
                        return Response::Unreadable;
                    };
                    if got.len() < total {
                        return Response::NeedMore(total - got.len());
                    }
                    (total, n as usize)
                }
                Some(Framing::Chunked) => match chunked(&got[head..]) {
                    Chunked::Done { len, body } => (head + len, body),
                    Chunked::NeedMore(n) => return Response::NeedMore(n),
                    Chunked::Bad => return Response::Unreadable,
                },
                None => return Response::Unreadable, // length unknowable on keep-alive
            }
        };
        if !(200..300).contains(&code) {
            return Response::Failed {
                len,
                kind: Fault::Non2xx,
            };
        }
        Response::Complete {
            len,
            valid: self.expect_body_bytes.is_none_or(|e| e == body),
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

enum Chunked {
    /// The chunked body is `len` bytes on the wire and `body` bytes decoded.
    Done {
        len: usize,
        body: usize,
    },
    NeedMore(usize),
    Bad,
}

/// The smallest end of a chunked body: `0\r\n\r\n`.
const LAST_CHUNK_MIN: usize = 5;

/// Walks a chunked body from its start; asks only for bytes that must still come.
fn chunked(b: &[u8]) -> Chunked {
    let (mut pos, mut body) = (0usize, 0usize);
    loop {
        let rest = &b[pos..];
        match httparse::parse_chunk_size(rest) {
            Err(_) => return Chunked::Bad,
            Ok(httparse::Status::Partial) => {
                // A size line of 4 KiB is not a size line.
                if rest.len() > 4096 {
                    return Chunked::Bad;
                }
                return Chunked::NeedMore(if rest.is_empty() { LAST_CHUNK_MIN } else { 1 });
            }
            Ok(httparse::Status::Complete((line, 0))) => {
                // Trailer section: header lines, then an empty line.
                let after = &rest[line..];
                let mut tr = [httparse::EMPTY_HEADER; 16];
                return match httparse::parse_headers(after, &mut tr) {
                    Ok(httparse::Status::Complete((n, _))) => Chunked::Done {
                        len: pos + line + n,
                        body,
                    },
                    Ok(httparse::Status::Partial) if after.len() > MAX_RESPONSE_HEAD_BYTES => {
                        Chunked::Bad
                    }
                    Ok(httparse::Status::Partial) => {
                        Chunked::NeedMore(if after.is_empty() { 2 } else { 1 })
                    }
                    Err(_) => Chunked::Bad,
                };
            }
            Ok(httparse::Status::Complete((line, size))) => {
                let Some(size) = usize::try_from(size).ok().filter(|&s| s <= 1 << 40) else {
                    return Chunked::Bad;
                };
                let end = line + size + 2; // data and its CRLF
                if rest.len() < end {
                    return Chunked::NeedMore(end - rest.len() + LAST_CHUNK_MIN);
                }
                if &rest[line + size..end] != b"\r\n" {
                    return Chunked::Bad;
                }
                pos += end;
                body += size;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(expect: Option<usize>) -> HttpGet {
        HttpGet {
            host: "h:1".into(),
            path: "/p".into(),
            expect_body_bytes: expect,
        }
    }

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nServer: ringside\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!";

    /// Feeds `resp` the way the engine does: read at most what NeedMore asks for, in pieces
    /// of at most `piece` bytes; returns the verdict and the bytes consumed.
    fn drive(g: &HttpGet, wire: &[u8], piece: usize) -> (Response, usize) {
        let mut got = Vec::new();
        loop {
            match g.response(b"", &got) {
                Response::NeedMore(n) => {
                    assert!(n > 0, "NeedMore(0) would stall");
                    let k = n.min(piece).min(wire.len() - got.len());
                    if k == 0 {
                        return (Response::NeedMore(n), got.len());
                    }
                    got.extend_from_slice(&wire[got.len()..got.len() + k]);
                }
                other => return (other, got.len()),
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
            assert_eq!(
                r,
                Response::Complete {
                    len: OK.len(),
                    valid: true
                },
                "piece {piece}"
            );
            if piece == 1 {
                assert_eq!(used, OK.len(), "never past the end once the head is known");
            }
        }
        // Whatever the first read took, once the head is parsed no more is asked than the rest.
        for cut in 0..OK.len() {
            match g.response(b"", &OK[..cut]) {
                Response::NeedMore(n) if cut >= OK.len() - 13 => assert_eq!(n, OK.len() - cut),
                Response::NeedMore(n) => assert!(n > 0),
                r => panic!("cut {cut}: {r:?}"),
            }
        }
        // The wrong body length is a mismatch; no expectation accepts any length.
        assert_eq!(
            get(Some(12)).response(b"", OK),
            Response::Complete {
                len: OK.len(),
                valid: false
            }
        );
        assert_eq!(
            get(None).response(b"", OK),
            Response::Complete {
                len: OK.len(),
                valid: true
            }
        );
    }

    #[test]
    fn non_2xx_is_its_own_kind() {
        let g = get(Some(13));
        for wire in [
            &b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nnop"[..],
            b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n",
        ] {
            let len = wire.len();
            assert_eq!(
                g.response(b"", wire),
                Response::Failed {
                    len,
                    kind: Fault::Non2xx
                }
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
        for wire in [
            &b"garbage\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\n\r\n", // no length on keep-alive
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXX",
            b"HTTP/2 200\r\n\r\n",
            &big_head,
        ] {
            assert_eq!(
                drive(&g, wire, 1 << 20).0,
                Response::Unreadable,
                "{:?}",
                String::from_utf8_lossy(&wire[..wire.len().min(80)])
            );
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
            assert_eq!(
                r,
                Response::Complete {
                    len: wire.len(),
                    valid: true
                },
                "piece {piece}"
            );
            if piece == 1 {
                assert_eq!(
                    used,
                    wire.len(),
                    "never past the end once the head is known"
                );
            }
        }
        let plain = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
        let mut two = plain.to_vec();
        two.extend_from_slice(OK);
        assert_eq!(
            drive(&get(Some(0)), &two, 1),
            (
                Response::Complete {
                    len: plain.len(),
                    valid: true
                },
                plain.len()
            )
        );
    }

    #[test]
    fn the_server_response_is_valid() {
        let h = crate::proto::Http::new(Some(1000));
        let g = get(Some(1000));
        assert_eq!(
            drive(&g, h.response(), 1 << 20).0,
            Response::Complete {
                len: h.response_bytes(),
                valid: true
            }
        );
    }
}
