//! The echo protocol: a message is `msg_bytes` bytes that start with the connection id (4
//! bytes LE) and the sequence number (8 bytes LE), followed by bytes derived from both; the
//! response must be exactly the message.

use super::{Exchange, Response, Verdict, Wire};

/// Header: connection id (u32 LE) then sequence number (u64 LE).
pub(crate) const HEADER_BYTES: usize = 12;

/// The smallest message: the header.
pub(crate) const MIN_MSG_BYTES: usize = HEADER_BYTES;
/// The largest message the load generator sends (buffers are two per connection).
pub(crate) const MAX_MSG_BYTES: usize = 1 << 20;

/// The echo exchange for messages of `msg_bytes` (MIN_MSG_BYTES..=MAX_MSG_BYTES) bytes.
pub struct Echo {
    pub msg_bytes: usize,
}

impl Exchange for Echo {
    fn wire(&self) -> Option<Wire> {
        Some(Wire::Echo {
            msg_bytes: self.msg_bytes,
        })
    }

    fn request(&self, conn: u32, seq: u64, out: &mut Vec<u8>) {
        let mut head = [0u8; HEADER_BYTES];
        head[..4].copy_from_slice(&conn.to_le_bytes());
        head[4..].copy_from_slice(&seq.to_le_bytes());
        let n = self.msg_bytes;
        out.extend_from_slice(&head[..n.min(HEADER_BYTES)]);
        let mix = (conn as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ seq.wrapping_mul(31);
        out.extend((out.len()..n).map(|i| (mix.wrapping_add(i as u64 * 7) >> 3) as u8 ^ 0x5a));
    }

    fn response(&self, sent: &[u8], got: &[u8]) -> Response {
        if got.len() < sent.len() {
            Response::NeedMore(sent.len() - got.len())
        } else {
            let got = &got[..sent.len()];
            let verdict = if got == sent {
                Verdict::Valid
            } else {
                let at = sent.iter().zip(got).position(|(a, b)| a != b).unwrap_or(0);
                Verdict::Mismatch { at: at as u64 }
            };
            Response::Complete {
                len: sent.len() as u64,
                verdict,
                close: false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_differ_by_connection_and_sequence_at_every_size() {
        for n in [MIN_MSG_BYTES, 13, 64, 4096] {
            let e = Echo { msg_bytes: n };
            let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
            e.request(1, 7, &mut a);
            e.request(2, 7, &mut b);
            e.request(1, 8, &mut c);
            assert_eq!(a.len(), n);
            assert_ne!(a, b, "{n}");
            assert_ne!(a, c, "{n}");
            assert_eq!(e.response(&a, &a[..n - 1]), Response::NeedMore(1));
            assert_eq!(
                e.response(&a, &a),
                Response::Complete {
                    len: n as u64,
                    verdict: Verdict::Valid,
                    close: false
                }
            );
            // Another connection's message differs in the connection id (byte 0), a later
            // one of the same connection in the sequence number (byte 4).
            assert_eq!(
                e.response(&a, &b),
                Response::Complete {
                    len: n as u64,
                    verdict: Verdict::Mismatch { at: 0 },
                    close: false
                }
            );
            assert_eq!(
                e.response(&a, &c),
                Response::Complete {
                    len: n as u64,
                    verdict: Verdict::Mismatch { at: 4 },
                    close: false
                }
            );
            let mut late = a.clone();
            late[n - 1] ^= 1;
            assert_eq!(
                e.response(&a, &late),
                Response::Complete {
                    len: n as u64,
                    verdict: Verdict::Mismatch { at: n as u64 - 1 },
                    close: false
                }
            );
        }
    }
}
