//! The UDP echo datagram (`udp.echo`, `ringside serve --protocol udp-echo`), sans I/O: what a
//! flow sends, how the server judges a datagram before echoing it, and how the load generator
//! verifies an echo. Tested here once, without sockets.
//!
//! A datagram is [`HEADER`] bytes then pattern bytes, little endian:
//! `magic "RSUD" (4) | length of the whole datagram u32 | flow u32 | sequence u64 | pattern`.
//! Pattern byte `i` depends on the flow, the sequence and `i` ([`key`], [`pattern_byte`]), so an
//! echo of another flow's or another sequence's datagram, or with one byte changed, does not
//! verify.
//!
//! The server echoes a datagram verbatim to its sender when its header is sound ([`judge`]:
//! at least [`HEADER`] bytes, the magic, a length field equal to its size, not truncated) and
//! drops it otherwise, counting why: a peer sending datagrams of the wrong length or from an
//! unknown source port costs the server a receive each, never memory or its loop. The server
//! does not verify the pattern (as the TCP echo servers do not): the client does.

/// Bytes before the pattern.
pub const HEADER: usize = 20;
/// The largest datagram a server receives whole; a larger one arrives truncated and is dropped
/// (this bounds every server's buffers). Covers a 1,500-byte MTU's largest IPv4 payload.
pub const MAX_DATAGRAM: usize = 2048;
const MAGIC: [u8; 4] = *b"RSUD";

/// The pattern key of datagram `seq` of `flow`: every bit of both changes it (splitmix64).
#[inline]
pub fn key(flow: u32, seq: u64) -> u64 {
    let mut z =
        seq ^ (u64::from(flow) << 40 | u64::from(flow) >> 24).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Pattern byte `i` (offset in the datagram) of the datagram whose key is `k`: each run of 8
/// bytes holds all 64 bits of the key, so a datagram of another flow or sequence differs in
/// the first 8 pattern bytes (short of a key collision), and each run differs from the next.
#[inline]
pub fn pattern_byte(k: u64, i: usize) -> u8 {
    (k >> ((i % 8) * 8)) as u8 ^ (i / 8) as u8
}

/// Writes datagram `seq` of `flow`, `len` bytes (`HEADER..=MAX_DATAGRAM`), into `out[..len]`.
pub fn encode(flow: u32, seq: u64, len: usize, out: &mut [u8]) {
    debug_assert!((HEADER..=MAX_DATAGRAM).contains(&len) && out.len() >= len);
    out[0..4].copy_from_slice(&MAGIC);
    out[4..8].copy_from_slice(&(len as u32).to_le_bytes());
    out[8..12].copy_from_slice(&flow.to_le_bytes());
    out[12..20].copy_from_slice(&seq.to_le_bytes());
    let k = key(flow, seq);
    for (i, b) in out[HEADER..len].iter_mut().enumerate() {
        *b = pattern_byte(k, HEADER + i);
    }
}

/// Why a server drops a datagram instead of echoing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drop {
    /// Shorter than the header, or larger than [`MAX_DATAGRAM`] (truncated on receipt).
    Length,
    /// Not ours: no magic, or a length field other than its size.
    Header,
}

/// The server's judgement of a received datagram: `Ok` to echo it. `truncated`: the kernel
/// said it was longer than the buffer (MSG_TRUNC).
#[inline]
pub fn judge(d: &[u8], truncated: bool) -> Result<(), Drop> {
    if truncated || d.len() < HEADER || d.len() > MAX_DATAGRAM {
        return Err(Drop::Length);
    }
    if d[0..4] != MAGIC || u32::from_le_bytes([d[4], d[5], d[6], d[7]]) as usize != d.len() {
        return Err(Drop::Header);
    }
    Ok(())
}

/// What is wrong with an echo the load generator received on a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bad {
    /// Not the size the flow sends (`got` bytes).
    Length { got: usize },
    /// The byte at this offset differs (a header field is reported at its first byte; another
    /// flow's datagram is caught at the flow field, offset 8).
    Byte { offset: usize },
}

/// Verifies an echo received on `flow`, whose datagrams are `len` bytes, and returns its
/// sequence number. Every byte is checked.
pub fn verify(flow: u32, len: usize, d: &[u8]) -> Result<u64, Bad> {
    if d.len() != len || len < HEADER {
        return Err(Bad::Length { got: d.len() });
    }
    if d[0..4] != MAGIC {
        return Err(Bad::Byte { offset: 0 });
    }
    if u32::from_le_bytes([d[4], d[5], d[6], d[7]]) as usize != len {
        return Err(Bad::Byte { offset: 4 });
    }
    if u32::from_le_bytes([d[8], d[9], d[10], d[11]]) != flow {
        return Err(Bad::Byte { offset: 8 });
    }
    let mut s = [0u8; 8];
    s.copy_from_slice(&d[12..20]);
    let seq = u64::from_le_bytes(s);
    let k = key(flow, seq);
    if let Some(i) = (HEADER..len).find(|&i| d[i] != pattern_byte(k, i)) {
        return Err(Bad::Byte { offset: i });
    }
    Ok(seq)
}

crate::counter_set! {
    /// The server's counts of datagrams, the same for every family's UDP loop.
    pub(crate) struct UdpCounters {
        /// Datagrams received, echoed, and dropped by [`judge`] (wrong length; not ours).
        datagrams_in, datagrams_out, dropped_length, dropped_header,
        /// Echoes the kernel refused (ENOBUFS, EAGAIN, ...): each is a datagram lost at the
        /// server, counted as such.
        send_errors,
        /// Receive errors other than "nothing to read" (ICMP errors queued on the socket...).
        recv_errors,
        /// Waits for datagrams (epoll_wait, io_uring_enter), and receive/send syscalls.
        waits, recv_calls, send_calls,
        /// Multishot receives re-armed after the kernel ended one (io_uring), and receives
        /// that found no provided buffer (ENOBUFS).
        rearms, no_buffers,
        /// UDP GRO (`io::udp_gso`): buffers received with a UDP_GRO control message, the
        /// segments they held, and sends carrying UDP_SEGMENT.
        gro_buffers, gro_segments, gso_sends,
    }
}

impl UdpCounters {
    /// Counts `d` in and returns whether to echo it.
    #[inline]
    pub(crate) fn judge(&mut self, d: &[u8], truncated: bool) -> bool {
        self.datagrams_in += 1;
        match judge(d, truncated) {
            Ok(()) => true,
            Err(Drop::Length) => {
                self.dropped_length += 1;
                false
            }
            Err(Drop::Header) => {
                self.dropped_header += 1;
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dgram(flow: u32, seq: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        encode(flow, seq, len, &mut v);
        v
    }

    #[test]
    fn an_encoded_datagram_verifies_and_is_echoed() {
        for len in [HEADER, 64, 1400, MAX_DATAGRAM] {
            let d = dgram(7, 123_456, len);
            assert_eq!(judge(&d, false), Ok(()), "{len}");
            assert_eq!(verify(7, len, &d), Ok(123_456), "{len}");
        }
    }

    #[test]
    fn every_changed_byte_is_caught_at_its_offset() {
        let d = dgram(3, 9, 64);
        for i in 0..64 {
            let mut e = d.clone();
            e[i] ^= 0x5A;
            let r = verify(3, 64, &e);
            match i {
                // The sequence field: the pattern no longer matches the claimed sequence, within
                // its first 8 bytes.
                12..20 => assert!(
                    matches!(r, Err(Bad::Byte { offset }) if (HEADER..HEADER + 8).contains(&offset)),
                    "byte {i}: {r:?}"
                ),
                // A header field is reported at its first byte.
                0..4 => assert_eq!(r, Err(Bad::Byte { offset: 0 }), "byte {i}"),
                4..8 => assert_eq!(r, Err(Bad::Byte { offset: 4 }), "byte {i}"),
                8..12 => assert_eq!(r, Err(Bad::Byte { offset: 8 }), "byte {i}"),
                _ => assert_eq!(r, Err(Bad::Byte { offset: i }), "byte {i}"),
            }
        }
    }

    #[test]
    fn another_flows_or_sequences_datagram_does_not_verify() {
        assert_eq!(
            verify(4, 64, &dgram(3, 9, 64)),
            Err(Bad::Byte { offset: 8 })
        );
        // Same flow, its header says seq 10 but the pattern is seq 9's.
        let mut d = dgram(3, 9, 64);
        d[12..20].copy_from_slice(&10u64.to_le_bytes());
        assert!(matches!(verify(3, 64, &d), Err(Bad::Byte { .. })));
        assert_eq!(
            verify(3, 1400, &dgram(3, 9, 64)),
            Err(Bad::Length { got: 64 })
        );
    }

    #[test]
    fn the_server_drops_what_is_not_a_sound_datagram() {
        let mut c = UdpCounters::default();
        assert!(!c.judge(&[0u8; 5], false));
        assert!(!c.judge(&dgram(1, 1, 64), true), "truncated");
        assert!(!c.judge(&[0u8; 64], false), "no magic");
        let mut short = dgram(1, 1, 64);
        short.truncate(40);
        assert!(!c.judge(&short, false), "length field says 64");
        assert!(c.judge(&dgram(1, 1, 64), false));
        assert_eq!(
            (
                c.datagrams_in,
                c.dropped_length,
                c.dropped_header,
                c.datagrams_out
            ),
            (5, 2, 2, 0)
        );
    }
}
