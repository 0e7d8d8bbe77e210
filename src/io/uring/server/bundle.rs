//! Receive bundles (`uring-bundle`, IORING_RECVSEND_BUNDLE, 6.10) and incremental buffer
//! consumption (`uring-inc`, IOU_PBUF_RING_INC, 6.12): the two ways a multishot recv's bytes
//! are not one whole provided buffer. Both copy the bytes out of the ring at once and give
//! the buffers back, so a reply never holds a buffer another connection's bytes may share:
//!
//! - bundle: one completion spans `ceil(n / buf_len)` buffers, taken in ring order from the
//!   kernel's head; the ring slots from our copy of that head say which ids they were (the
//!   first must be the id the CQE names, else the copy of the head went wrong: an error).
//! - incremental: the kernel takes bytes from the head buffer piecewise; a completion names
//!   the buffer and its length, the bytes start where the last completion on that buffer
//!   ended, and IORING_CQE_F_BUF_MORE says the kernel keeps the buffer for more. Without it
//!   the buffer is finished and goes back to the ring.

use super::recv::Provided;
use io_uring::cqueue;
use std::io;

/// How the bytes of a completion are found.
pub(super) enum CopyOut {
    /// Bundles: the next ring position the kernel takes a buffer from.
    Bundle { head: u16 },
    /// Incremental: per buffer id, the bytes of it already consumed.
    Inc { offs: Vec<u32> },
}

impl CopyOut {
    pub fn bundle() -> CopyOut {
        CopyOut::Bundle { head: 0 }
    }

    pub fn inc(entries: u16) -> CopyOut {
        CopyOut::Inc {
            offs: vec![0; entries as usize],
        }
    }
}

/// The `n` bytes a completion on buffer `bid` delivered, copied out; the buffers they came
/// from are given back to the ring where they are finished. Returns the number of buffers
/// the completion spanned.
pub(super) fn take(
    p: &mut Provided,
    bid: u16,
    n: usize,
    flags: u32,
    out: &mut Vec<u8>,
) -> io::Result<u32> {
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
                out.extend_from_slice(p.ring.buf(b, len));
                left -= len;
                bids.push(b);
            }
            *head = head.wrapping_add(count as u16);
            for b in bids {
                p.give_back(b);
            }
            Ok(count as u32)
        }
        CopyOut::Inc { offs } => {
            let off = offs[bid as usize] as usize;
            let end = off + n;
            if end > buf_len {
                return Err(io::Error::other(format!(
                    "incremental buffer {bid}: {n} bytes at offset {off} pass its {buf_len}"
                )));
            }
            out.extend_from_slice(&p.ring.buf(bid, end)[off..]);
            if cqueue::buffer_more(flags) {
                offs[bid as usize] = end as u32;
            } else {
                offs[bid as usize] = 0;
                p.give_back(bid);
            }
            Ok(1)
        }
    }
}
