//! Receive bundles (`uring-bundle`, IORING_RECVSEND_BUNDLE, 6.10), incremental buffer
//! consumption (`uring-inc`, IOU_PBUF_RING_INC, 6.12) and the two together
//! (`uring-bundle-inc`): the ways a multishot recv's bytes are not one whole provided buffer.
//! Each copies the bytes out of the ring at once and gives the finished buffers back, so a
//! reply never holds a buffer another connection's bytes may share:
//!
//! - bundle: one completion spans `ceil(n / buf_len)` buffers, taken in ring order from the
//!   kernel's head; the ring slots from our copy of that head say which ids they were (the
//!   first must be the id the CQE names, else the copy of the head went wrong: an error).
//! - incremental: the kernel takes bytes from the head buffer piecewise; a completion names
//!   the buffer and its length, the bytes start where the last completion on that buffer
//!   ended, and IORING_CQE_F_BUF_MORE says the kernel keeps the buffer for more. Without it
//!   the buffer is finished and goes back to the ring.
//! - bundle over an incremental ring (kernel 6.15 spans several buffers; 6.12 to 6.14 map
//!   one): as the kernel commits it (io_uring/kbuf.c `io_kbuf_inc_commit`). The CQE names
//!   the buffer at the kernel's head when the bundle was mapped; its bytes start where the
//!   last completion on that buffer ended (the kernel advanced the ring entry's address past
//!   them), run to its end, then through the next buffers in ring order from their starts.
//!   Every buffer the bytes ran off the end of is finished (the kernel moved its head past
//!   it); the last one the bytes touched is kept by the kernel, its rest for the next
//!   completion, exactly when IORING_CQE_F_BUF_MORE is set, and finished otherwise. So only
//!   the head buffer is ever partly consumed: one offset, with our copy of the head.

use super::provided::{CopyOut, Provided};
use io_uring::cqueue;
use std::io;

/// What one completion took from the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Taken {
    /// Buffers its bytes touched.
    pub(crate) spanned: u32,
    /// Whether the kernel kept the last of them for more (IORING_CQE_F_BUF_MORE).
    pub(crate) kept: bool,
}

/// The `n` bytes a completion on buffer `bid` delivered, copied out; the buffers they came
/// from are given back to the ring where they are finished.
pub(super) fn take(
    p: &mut Provided,
    bid: u16,
    n: usize,
    flags: u32,
    out: &mut Vec<u8>,
) -> io::Result<Taken> {
    let buf_len = p.ring.buf_len();
    let Some(copy) = p.copy.as_mut() else {
        return Err(io::Error::other("copy-out without a mode"));
    };
    match copy {
        CopyOut::Bundle { head } => {
            let count = n.div_ceil(buf_len).max(1);
            let first = p.ring.bid_at(*head);
            if first != bid {
                return Err(io::Error::other(format!(
                    "bundle: the CQE names buffer {bid} but ring slot {} holds {first}",
                    *head
                )));
            }
            let mut bids = Vec::with_capacity(count);
            let mut left = n;
            for i in 0..count {
                let b = p.ring.bid_at(head.wrapping_add(i as u16));
                let len = left.min(buf_len);
                // SAFETY: the bundle's CQE handed out the `count` buffers from `head`; none
                // goes back before this copy.
                out.extend_from_slice(unsafe { p.ring.buf(b, len) });
                left -= len;
                bids.push(b);
            }
            *head = head.wrapping_add(count as u16);
            for b in bids {
                p.give_back(b);
            }
            Ok(Taken {
                spanned: count as u32,
                kept: false,
            })
        }
        CopyOut::Inc { offs } => {
            let off = offs[bid as usize] as usize;
            let end = off + n;
            if end > buf_len {
                return Err(io::Error::other(format!(
                    "incremental buffer {bid}: {n} bytes at offset {off} pass its {buf_len}"
                )));
            }
            // SAFETY: the CQE named `bid`, whose first `end` bytes its completions reported;
            // the kernel writes only past them while it keeps the buffer.
            out.extend_from_slice(&unsafe { p.ring.buf(bid, end) }[off..]);
            let kept = cqueue::buffer_more(flags);
            if kept {
                offs[bid as usize] = end as u32;
            } else {
                offs[bid as usize] = 0;
                p.give_back(bid);
            }
            Ok(Taken { spanned: 1, kept })
        }
        CopyOut::BundleInc { head, off } => {
            let first = p.ring.bid_at(*head);
            if first != bid {
                return Err(io::Error::other(format!(
                    "incremental bundle: the CQE names buffer {bid} but ring slot {} holds \
                     {first}",
                    *head
                )));
            }
            let kept = cqueue::buffer_more(flags);
            // Walk the bytes first (the ring slots are read before any buffer goes back).
            let mut finished: Vec<u16> = Vec::new();
            let (mut pos, mut at, mut left) = (*head, *off as usize, n);
            let mut spanned = 0u32;
            loop {
                let b = p.ring.bid_at(pos);
                let piece = left.min(buf_len - at);
                // SAFETY: the CQE's bytes span the buffers from `head`, which it handed out
                // (the last one kept is written only past what was reported).
                out.extend_from_slice(&unsafe { p.ring.buf(b, at + piece) }[at..]);
                left -= piece;
                spanned += 1;
                if left > 0 && spanned >= u32::from(p.ring.entries()) {
                    return Err(io::Error::other(format!(
                        "incremental bundle: {n} bytes from buffer {bid} pass the whole ring"
                    )));
                }
                if left > 0 {
                    // The bytes ran off this buffer's end: finished, on to the next.
                    finished.push(b);
                    pos = pos.wrapping_add(1);
                    at = 0;
                    continue;
                }
                if kept {
                    if at + piece == buf_len {
                        return Err(io::Error::other(format!(
                            "incremental bundle: buffer {b} is full after {n} bytes but the \
                             kernel keeps it (IORING_CQE_F_BUF_MORE)"
                        )));
                    }
                    at += piece;
                } else {
                    finished.push(b);
                    pos = pos.wrapping_add(1);
                    at = 0;
                }
                break;
            }
            *head = pos;
            *off = at as u32;
            for b in finished {
                p.give_back(b);
            }
            Ok(Taken { spanned, kept })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::uring::bufring::BufRing;
    use io_uring::IoUring;

    /// IORING_CQE_F_BUF_MORE (checked against the crate's reading of it below).
    const BUF_MORE: u32 = 1 << 4;

    /// A registered incremental ring of 4 buffers of 8 bytes, buffer b filled with bytes
    /// 10*b.., copied out in `BundleInc` mode (None where io_uring or the flag is refused).
    fn ring() -> Option<(IoUring, Provided)> {
        let ring = IoUring::new(8).ok()?;
        let flags = io_uring::types::IOU_PBUF_RING_INC as u16;
        let mut br = BufRing::with_flags(&ring.submitter(), 0, 4, 8, flags).ok()?;
        for b in 0..4u16 {
            // SAFETY: no receive is in flight on this ring.
            for (i, x) in unsafe { br.buf_mut(b) }.iter_mut().enumerate() {
                *x = (10 * b as usize + i) as u8;
            }
        }
        let mut p = Provided::new(br);
        p.copy = Some(CopyOut::bundle_inc());
        Some((ring, p))
    }

    fn bytes(from: &[(u16, std::ops::Range<usize>)]) -> Vec<u8> {
        from.iter()
            .flat_map(|(b, r)| r.clone().map(move |i| (10 * *b as usize + i) as u8))
            .collect()
    }

    #[test]
    fn a_bundle_over_an_incremental_ring_reads_as_the_kernel_commits() {
        assert!(cqueue::buffer_more(BUF_MORE));
        let Some((_ring, mut p)) = ring() else {
            eprintln!("no io_uring incremental ring here: skipped");
            return;
        };
        let mut out = Vec::new();
        // A piece of buffer 0, kept for more.
        let t = take(&mut p, 0, 3, BUF_MORE, &mut out).unwrap();
        assert_eq!(
            t,
            Taken {
                spanned: 1,
                kept: true
            }
        );
        assert_eq!(out, bytes(&[(0, 0..3)]));
        // From where that ended, through buffer 1, into buffer 2, which the kernel keeps.
        out.clear();
        let t = take(&mut p, 0, 5 + 8 + 2, BUF_MORE, &mut out).unwrap();
        assert_eq!(
            t,
            Taken {
                spanned: 3,
                kept: true
            }
        );
        assert_eq!(out, bytes(&[(0, 3..8), (1, 0..8), (2, 0..2)]));
        // The CQE names the head buffer (2 now); 0 is wrong.
        assert!(take(&mut p, 0, 1, 0, &mut out).is_err());
        // Ending exactly at buffer 2's end, without BUF_MORE: finished, the head moves on.
        out.clear();
        let t = take(&mut p, 2, 6, 0, &mut out).unwrap();
        assert_eq!(
            t,
            Taken {
                spanned: 1,
                kept: false
            }
        );
        assert_eq!(out, bytes(&[(2, 2..8)]));
        // Without BUF_MORE a partly used last buffer is finished too (the kernel moved on).
        out.clear();
        let t = take(&mut p, 3, 4, 0, &mut out).unwrap();
        assert_eq!(
            t,
            Taken {
                spanned: 1,
                kept: false
            }
        );
        assert_eq!(out, bytes(&[(3, 0..4)]));
        // Buffers 0..3 went back in order: the ring's next slots hold them again, the next
        // completion starts at buffer 0's start.
        out.clear();
        let t = take(&mut p, 0, 2, BUF_MORE, &mut out).unwrap();
        assert_eq!(
            t,
            Taken {
                spanned: 1,
                kept: true
            }
        );
        assert_eq!(out, bytes(&[(0, 0..2)]));
        // BUF_MORE on a buffer the bytes filled is a contradiction, never a silent guess.
        assert!(take(&mut p, 0, 6, BUF_MORE, &mut Vec::new()).is_err());
    }
}
