//! Bulk transfer (`stream.send`, `stream.duplex`): one known byte pattern, two server roles.
//!
//! - [`Stream::Sink`] (client -> server): every byte the client sends is byte `i` of the
//!   connection's stream, and must be [`pattern_byte`]`(i)`. The server checks each byte and
//!   discards it (`Reply::Nothing`). When the client shuts its sending side the server answers
//!   one [`TRAILER_BYTES`]-byte trailer, `b"RSOK"` + the bytes it verified (u64 LE) + 4 zero
//!   bytes, and closes; so the client learns how many of its bytes arrived intact. At the
//!   first wrong byte the server answers `b"RSBD"` + that byte's offset and closes.
//! - [`Stream::Source`] (server -> client): the client sends requests, each a u32 LE byte
//!   count in 1..=[`MAX_REQUEST`]; the server answers each with that many bytes of the pattern
//!   (the connection's stream offset continuing from one answer to the next), which the client
//!   checks. The client keeps a bounded window of requests outstanding, so the server streams
//!   without waiting on a round trip per write while its memory stays bounded: the answers to
//!   one batch of input may total at most [`MAX_BATCH_BYTES`], or the connection is closed
//!   (counted as a refused request): a client that asks without reading cannot make the server
//!   hold more than that plus the loop's [`super::OUT_BOUND_BYTES`].
//! - Both ways at once (`stream.duplex`) is [`super::Echo`] driven by a client that writes the
//!   pattern continuously and reads the echo at the same time.
//!
//! The pattern has a prime period ([`PATTERN_PERIOD`]), so a lost, repeated or reordered
//! write of any size this suite uses (4 KiB .. 1 MiB) shifts the stream and is caught.

use super::{Next, Protocol, Reply, Step};
use std::sync::OnceLock;

/// Period of the pattern, bytes: a prime, so no write size is a multiple of it.
pub(crate) const PATTERN_PERIOD: usize = 65_521;
/// The largest byte count one `Source` request may ask for.
pub const MAX_REQUEST: u32 = 1 << 20;
/// The most bytes the answers to one batch of input may total (`Source`).
pub(crate) const MAX_BATCH_BYTES: usize = 4 << 20;
/// The `Sink`'s answer at EOF or at the first wrong byte.
pub const TRAILER_BYTES: usize = 16;

/// The pattern table: `PATTERN_PERIOD` bytes, twice, so that any run of up to one period
/// starting anywhere is one contiguous slice.
fn table() -> &'static [u8] {
    static T: OnceLock<Vec<u8>> = OnceLock::new();
    T.get_or_init(|| {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let one: Vec<u8> = (0..PATTERN_PERIOD)
            .map(|_| {
                // xorshift64*
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
            })
            .collect();
        [one.as_slice(), one.as_slice()].concat()
    })
}

/// Byte `i` of every stream.
#[cfg(test)]
fn pattern_byte(i: u64) -> u8 {
    table()[(i % PATTERN_PERIOD as u64) as usize]
}

/// Appends stream bytes `from..from + len` to `out`.
pub fn fill_pattern(out: &mut Vec<u8>, from: u64, len: usize) {
    let t = table();
    let mut at = (from % PATTERN_PERIOD as u64) as usize;
    let mut left = len;
    out.reserve(len);
    while left > 0 {
        let n = left.min(PATTERN_PERIOD);
        out.extend_from_slice(&t[at..at + n]);
        at = (at + n) % PATTERN_PERIOD;
        left -= n;
    }
}

/// The offset (within `got`) of the first byte of `got` that is not stream bytes
/// `from..from + got.len()`; `None` when all are.
pub(crate) fn first_mismatch(got: &[u8], from: u64) -> Option<usize> {
    let t = table();
    let mut at = (from % PATTERN_PERIOD as u64) as usize;
    let mut done = 0;
    while done < got.len() {
        let n = (got.len() - done).min(PATTERN_PERIOD);
        let want = &t[at..at + n];
        let part = &got[done..done + n];
        if part != want {
            let i = part.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0);
            return Some(done + i);
        }
        at = (at + n) % PATTERN_PERIOD;
        done += n;
    }
    None
}

/// A trailer: `tag` and a u64 LE value, padded to [`TRAILER_BYTES`].
pub(crate) fn trailer(tag: &[u8; 4], v: u64) -> [u8; TRAILER_BYTES] {
    let mut t = [0u8; TRAILER_BYTES];
    t[..4].copy_from_slice(tag);
    t[4..12].copy_from_slice(&v.to_le_bytes());
    t
}

/// Reads a trailer: (tag, value), or `None` when `b` is not [`TRAILER_BYTES`] long.
pub fn read_trailer(b: &[u8]) -> Option<([u8; 4], u64)> {
    if b.len() != TRAILER_BYTES {
        return None;
    }
    Some((
        b[..4].try_into().ok()?,
        u64::from_le_bytes(b[4..12].try_into().ok()?),
    ))
}

/// The bulk-transfer server roles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stream {
    /// Read, verify, discard; a trailer at EOF.
    Sink,
    /// Answer each request with that many pattern bytes.
    Source,
}

/// A connection's state: its stream offset, and a `Source` request split over reads.
#[derive(Debug, Default)]
pub(crate) struct StreamConn {
    off: u64,
    partial: [u8; 4],
    partial_len: u8,
    /// A `Sink` connection that saw a wrong byte: everything after is ignored.
    bad: bool,
}

impl Protocol for Stream {
    type Conn = StreamConn;

    fn id(&self) -> &'static str {
        match self {
            Stream::Sink => "sink",
            Stream::Source => "source",
        }
    }

    fn on_bytes(&self, c: &mut StreamConn, input: &[u8], out: &mut Vec<u8>) -> Step {
        let more = Step {
            reply: Reply::Nothing,
            next: Next::More,
        };
        match self {
            Stream::Sink => {
                if c.bad {
                    return more;
                }
                if let Some(i) = first_mismatch(input, c.off) {
                    c.bad = true;
                    out.extend_from_slice(&trailer(b"RSBD", c.off + i as u64));
                    return Step {
                        reply: Reply::Out,
                        next: Next::Close,
                    };
                }
                c.off += input.len() as u64;
                more
            }
            Stream::Source => {
                let mut rest = input;
                let mut answered = 0usize;
                while !rest.is_empty() {
                    let need = 4 - c.partial_len as usize;
                    let take = need.min(rest.len());
                    let at = c.partial_len as usize;
                    c.partial[at..at + take].copy_from_slice(&rest[..take]);
                    c.partial_len += take as u8;
                    rest = &rest[take..];
                    if c.partial_len < 4 {
                        break;
                    }
                    c.partial_len = 0;
                    let n = u32::from_le_bytes(c.partial);
                    if n == 0 || n > MAX_REQUEST || answered + n as usize > MAX_BATCH_BYTES {
                        // A bad or greedy request: what was answered goes, then the close.
                        return Step {
                            reply: if answered > 0 {
                                Reply::Out
                            } else {
                                Reply::Nothing
                            },
                            next: Next::Close,
                        };
                    }
                    fill_pattern(out, c.off, n as usize);
                    c.off += u64::from(n);
                    answered += n as usize;
                }
                Step {
                    reply: if answered > 0 {
                        Reply::Out
                    } else {
                        Reply::Nothing
                    },
                    next: Next::More,
                }
            }
        }
    }

    fn on_eof(&self, c: &mut StreamConn, out: &mut Vec<u8>) -> Reply {
        match self {
            Stream::Sink if !c.bad => {
                out.extend_from_slice(&trailer(b"RSOK", c.off));
                Reply::Out
            }
            _ => Reply::Nothing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(from: u64, len: usize) -> Vec<u8> {
        let mut v = Vec::new();
        fill_pattern(&mut v, from, len);
        v
    }

    #[test]
    fn the_pattern_is_one_stream_whatever_the_pieces() {
        let whole = pattern(0, 3 * PATTERN_PERIOD + 17);
        assert_eq!(whole[5], pattern_byte(5));
        assert_eq!(whole[PATTERN_PERIOD + 5], pattern_byte(5));
        let mut pieces = pattern(0, 1000);
        pieces.extend(pattern(1000, 2 * PATTERN_PERIOD));
        pieces.extend(pattern(
            1000 + 2 * PATTERN_PERIOD as u64,
            PATTERN_PERIOD + 17 - 1000,
        ));
        assert_eq!(pieces, whole);
        assert_eq!(first_mismatch(&whole[7..], 7), None);
        // A lost 4 KiB, 64 KiB or 1 MiB write shifts the stream: caught.
        for lost in [4096usize, 65_536, 1 << 20] {
            let big = pattern(0, lost + 4096);
            assert!(first_mismatch(&big[lost..], 0).is_some(), "{lost}");
        }
        let mut bad = whole.clone();
        bad[70_000] ^= 1;
        assert_eq!(first_mismatch(&bad, 0), Some(70_000));
    }

    #[test]
    fn the_sink_verifies_discards_and_reports_at_eof() {
        let s = Stream::Sink;
        let mut c = StreamConn::default();
        let mut out = Vec::new();
        let data = pattern(0, 100_000);
        for piece in data.chunks(7_777) {
            let st = s.on_bytes(&mut c, piece, &mut out);
            assert_eq!(st.reply, Reply::Nothing);
            assert_eq!(st.next, Next::More);
        }
        assert!(out.is_empty());
        assert_eq!(s.on_eof(&mut c, &mut out), Reply::Out);
        assert_eq!(read_trailer(&out), Some((*b"RSOK", 100_000)));
    }

    #[test]
    fn the_sink_names_the_first_wrong_byte_and_closes() {
        let s = Stream::Sink;
        let mut c = StreamConn::default();
        let mut out = Vec::new();
        s.on_bytes(&mut c, &pattern(0, 10), &mut out);
        let mut wrong = pattern(10, 10);
        wrong[3] ^= 0xff;
        let st = s.on_bytes(&mut c, &wrong, &mut out);
        assert_eq!((st.reply, st.next), (Reply::Out, Next::Close));
        assert_eq!(read_trailer(&out), Some((*b"RSBD", 13)));
        out.clear();
        assert_eq!(s.on_eof(&mut c, &mut out), Reply::Nothing);
    }

    #[test]
    fn the_source_answers_requests_split_anywhere_with_the_continuing_stream() {
        let s = Stream::Source;
        let mut c = StreamConn::default();
        let mut out = Vec::new();
        let mut reqs = Vec::new();
        for n in [5u32, 70_000, 1] {
            reqs.extend_from_slice(&n.to_le_bytes());
        }
        // Byte by byte, then all at once on a fresh connection: the same answer.
        for b in &reqs {
            s.on_bytes(&mut c, std::slice::from_ref(b), &mut out);
        }
        assert_eq!(out, pattern(0, 70_006));
        let mut c2 = StreamConn::default();
        let mut out2 = Vec::new();
        let st = s.on_bytes(&mut c2, &reqs, &mut out2);
        assert_eq!((st.reply, st.next), (Reply::Out, Next::More));
        assert_eq!(out2, out);
    }

    #[test]
    fn the_source_refuses_bad_and_greedy_requests() {
        let s = Stream::Source;
        for n in [0u32, MAX_REQUEST + 1] {
            let mut out = Vec::new();
            let st = s.on_bytes(&mut StreamConn::default(), &n.to_le_bytes(), &mut out);
            assert_eq!((st.reply, st.next), (Reply::Nothing, Next::Close), "{n}");
            assert!(out.is_empty());
        }
        // More than MAX_BATCH_BYTES asked in one batch: the answers stop at the bound.
        let reqs: Vec<u8> = (0..100).flat_map(|_| MAX_REQUEST.to_le_bytes()).collect();
        let mut out = Vec::new();
        let st = s.on_bytes(&mut StreamConn::default(), &reqs, &mut out);
        assert_eq!(st.next, Next::Close);
        assert!(out.len() <= MAX_BATCH_BYTES, "{}", out.len());
    }
}
