//! Sending: one send in flight per connection (replies stay in order). The queue's head goes
//! out with send, or SEND_ZC (`zc_send`, the buffer the kernel's until the notification CQE);
//! several queued chunks (multishot buffers, pipelined replies) go out with one sendmsg, an
//! iovec each, so that sends keep pace with a multishot recv. A reply that is the input is sent
//! from the receive buffer (or provided buffer) without a copy.

use super::conn::{chunk_ptr, Phase, SendMsg, SendOp, Src, MAX_IOV, ZC_HELD};
use super::Server;
use crate::io::uring::user_data::{Op, UserData};
use crate::proto::Protocol;
use io_uring::{cqueue, opcode};
use std::io;

impl<P: Protocol> Server<P> {
    /// Sends the head of connection `idx`'s queue if nothing is in flight.
    pub(super) fn send_next(&mut self, idx: u32) -> io::Result<()> {
        let zc = self.mode.zc;
        let bufs = self.provided.as_ref().map(|p| &p.ring);
        let Some(conn) = self.conns.at(idx) else {
            return Ok(());
        };
        if conn.send != SendOp::Idle || conn.out.is_empty() {
            return Ok(());
        }
        let e = if conn.out.len() > 1 && !zc {
            self.c.sendmsgs += 1;
            let m = conn.msg.get_or_insert_with(|| Box::new(SendMsg::new()));
            let mut k = 0;
            for (i, ch) in conn.out.iter().take(MAX_IOV).enumerate() {
                let base = chunk_ptr(ch, &conn.recv_buf, bufs);
                let off = if i == 0 { conn.out.head_off } else { 0 };
                m.iov[i] = libc::iovec {
                    // SAFETY: off < len <= the buffer's length.
                    iov_base: unsafe { base.add(off) } as *mut libc::c_void,
                    iov_len: ch.len - off,
                };
                k += 1;
            }
            m.hdr.msg_iov = m.iov.as_mut_ptr();
            m.hdr.msg_iovlen = k as _;
            let hdr = &m.hdr as *const libc::msghdr;
            on_fd!(conn.fd, |t| opcode::SendMsg::new(t, hdr)
                .flags(libc::MSG_NOSIGNAL as u32)
                .build())
        } else {
            let head = conn.out.front().expect("a non-empty queue");
            // SAFETY: head_off < len <= the buffer's length.
            let ptr = unsafe { chunk_ptr(head, &conn.recv_buf, bufs).add(conn.out.head_off) };
            let len = (head.len - conn.out.head_off) as u32;
            if zc {
                // From the registered receive buffer where it is one (echo's replies are).
                let fixed =
                    (conn.buf_registered && matches!(head.src, Src::RecvBuf)).then_some(idx as u16);
                self.c.zc_fixed_sends += fixed.is_some() as u64;
                on_fd!(conn.fd, |t| opcode::SendZc::new(t, ptr, len)
                    .buf_index(fixed)
                    .flags(libc::MSG_NOSIGNAL)
                    .build())
            } else {
                on_fd!(conn.fd, |t| opcode::Send::new(t, ptr, len)
                    .flags(libc::MSG_NOSIGNAL)
                    .build())
            }
        };
        conn.send = SendOp::InFlight;
        // A broker's SEND_ZC is tagged, so that its notification names its buffer.
        let tag = if zc && self.broker.is_some() {
            conn.take_zc_tag()
        } else {
            0
        };
        let ud = UserData::new(Op::Send, idx, conn.gen).encode_tagged(tag);
        self.push(e.user_data(ud))
    }

    pub(super) fn on_send(&mut self, u: UserData, tag: u8, res: i32, flags: u32) -> io::Result<()> {
        let zc = self.mode.zc;
        let broker = self.broker.is_some();
        let Some(conn) = self.conns.get(u) else {
            return Ok(());
        };
        let res = if zc {
            if cqueue::notif(flags) && conn.release_zc(tag) {
                self.c.zc_held_notifs += 1;
                // A held buffer is free: the slot may be waiting for it to close.
                return self.progress(u.idx);
            }
            // Broker mode: a send that took its whole chunk (the hub's queue, owned) holds
            // the buffer until its notification and frees the connection for its next send,
            // so a subscriber's pipe is not drained before each send (over loopback a
            // notification comes only once the subscriber has read the whole send).
            let whole = conn.out.front().is_some_and(|h| {
                matches!(h.src, Src::Owned(_))
                    && res >= 0
                    && h.len - conn.out.head_off == res as usize
            });
            if broker && cqueue::more(flags) && whole && conn.zc_held.len() < ZC_HELD {
                let head = conn.out.pop_front().expect("a whole head chunk");
                conn.out.queued -= head.len - conn.out.head_off;
                conn.out.head_off = 0;
                if let Src::Owned(v) = head.src {
                    conn.zc_held.push((conn.zc_tag, v));
                }
                self.c.bytes_out += res as u64;
                self.c.zc_held_sends += 1;
                conn.send = SendOp::Idle;
                return self.progress(u.idx);
            }
            if cqueue::notif(flags) {
                // The buffer is free now; apply the result saved from the first CQE.
                match conn.send {
                    SendOp::ZcNotif { res } => res,
                    _ => 0,
                }
            } else if cqueue::more(flags) {
                conn.send = SendOp::ZcNotif { res };
                return Ok(());
            } else {
                res
            }
        } else {
            res
        };
        conn.send = SendOp::Idle;
        if res >= 0 {
            let n = res as usize;
            self.c.bytes_out += n as u64;
            let provided = &mut self.provided;
            let short = conn.out.consume(n, |b| {
                if let Some(p) = provided.as_mut() {
                    p.give_back(b);
                }
            });
            if short {
                self.c.short_sends += 1;
            }
        } else if res != -libc::EINTR && res != -libc::EAGAIN {
            self.c.resets += 1;
            conn.phase = Phase::Closing;
        }
        self.progress(u.idx)
    }
}
