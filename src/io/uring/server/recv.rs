//! Receiving: a plain recv into the connection's own buffer (armed again once that buffer's
//! bytes are sent), or a multishot recv taking provided buffers from the shared ring (armed
//! again when it ends without IORING_CQE_F_MORE; after ENOBUFS, once a buffer comes back).
//! Backpressure holds a plain recv back and cancels a multishot one; a multishot recv that
//! outruns its cancel past `HARD_OUT_BOUND` resets the connection.

use super::bundle;
use super::conn::{Phase, RecvOp, Src};
use super::teardown::Then;
use super::{Server, HARD_OUT_BOUND};
use crate::io::uring::user_data::{Op, UserData};
use crate::proto::{Next, Protocol, Reply, OUT_BOUND_BYTES};
use io_uring::{cqueue, opcode};
use std::io;

impl<P: Protocol> Server<P> {
    /// Gives a provided buffer back to the ring.
    pub(super) fn recycle(&mut self, bid: u16) {
        if let Some(p) = self.provided.as_mut() {
            p.give_back(bid);
        }
    }

    /// Arms connection `idx`'s receive if it may read and none is in flight; cancels a
    /// multishot one that must stop (output over the bound, or no more reading).
    pub(super) fn recv_next(&mut self, idx: u32) -> io::Result<()> {
        let ms = self.mode.ms_recv;
        let bundle = self.mode.bundle;
        let bgid = self.provided.as_ref().map(|p| p.ring.bgid());
        let broker = self.broker.is_some();
        let Some(conn) = self.conns.at(idx) else {
            return Ok(());
        };
        let gen = conn.gen;
        // Not over the output bound, and the receive buffer is not still being sent.
        let may_read = conn.phase == Phase::Open
            && (broker || conn.out.queued <= OUT_BOUND_BYTES)
            && !conn.out.holds_recv_buf();
        if !ms && !may_read && conn.out.queued > OUT_BOUND_BYTES {
            self.c.read_pauses += 1;
        }
        match conn.recv {
            RecvOp::Idle if may_read => {
                let e = if ms {
                    let bgid = bgid.expect("multishot recv without the buffer ring");
                    self.c.recv_arms += 1;
                    if conn.arms > 0 {
                        self.c.recv_rearms += 1;
                    }
                    conn.arms += 1;
                    if bundle {
                        on_fd!(conn.fd, |t| opcode::RecvMultiBundle::new(t, bgid).build())
                    } else {
                        on_fd!(conn.fd, |t| opcode::RecvMulti::new(t, bgid).build())
                    }
                } else {
                    let (p, l) = (conn.recv_buf.as_mut_ptr(), conn.recv_buf.len() as u32);
                    on_fd!(conn.fd, |t| opcode::Recv::new(t, p, l).build())
                };
                conn.recv = RecvOp::Armed;
                self.push(e.user_data(UserData::new(Op::Recv, idx, gen).encode()))
            }
            RecvOp::Armed if ms && !may_read && self.race_fault.is_none() => {
                // Multishot keeps receiving: cancel it until the output drains.
                conn.recv = RecvOp::Cancelling;
                self.c.read_pauses += 1;
                self.cancel(Op::Recv, Op::CancelRecv, idx, gen)?;
                // Submit the cancel now: every enter that passes first lets the multishot
                // recv take more buffers.
                self.submit()
            }
            _ => Ok(()),
        }
    }

    pub(super) fn on_recv(&mut self, u: UserData, res: i32, flags: u32) -> io::Result<()> {
        let mut bid = cqueue::buffer_select(flags);
        let ms = self.mode.ms_recv;
        let more = ms && cqueue::more(flags);
        // Bundles and incremental buffers: the bytes are copied out and their buffers given
        // back at once (`bundle`), so nothing below holds or recycles a buffer.
        let mut owned = None;
        if let (true, Some(b), Some(p)) = (res > 0, bid, self.provided.as_mut()) {
            if p.copy.is_some() {
                let mut v = Vec::with_capacity(res as usize);
                let t = bundle::take(p, b, res as usize, flags, &mut v)?;
                self.c.bundle_bufs += u64::from(t.spanned);
                self.c.bundle_recvs += 1;
                self.c.bundle_multi += u64::from(t.spanned > 1);
                self.c.buf_more += u64::from(t.kept);
                owned = Some(v);
                bid = None;
            }
        }
        let Some(conn) = self.conns.get(u) else {
            if let Some(b) = bid {
                self.recycle(b);
            }
            return Ok(());
        };
        if !more {
            conn.recv = RecvOp::Idle;
        }
        let mut recycle = bid;
        let mut overrun = None;
        let napi_first = res > 0 && self.mode.napi_check && !conn.napi_checked;
        if res > 0 && conn.phase == Phase::Open {
            let n = res as usize;
            let input: &[u8] = match (&owned, bid, self.provided.as_ref()) {
                (Some(v), _, _) => v,
                // SAFETY: this CQE handed out `b` with `n` bytes; it goes back (`recycle`)
                // only after the bytes are used below.
                (None, Some(b), Some(p)) => unsafe { p.ring.buf(b, n) },
                _ => &conn.recv_buf[..n],
            };
            if let Some(b) = self.broker.as_mut() {
                // Broker: the bytes go to the hub (`broker`); the buffer is recycled below.
                if b.feed(u.idx, input).is_err() {
                    self.c.resets += 1;
                    conn.phase = Phase::Closing;
                }
                self.c.bytes_in += n as u64;
                if let Some(b) = recycle {
                    self.recycle(b);
                }
                self.deliver()?;
                return self.progress(u.idx);
            }
            // Input that arrived while the output was already over the bound came from a
            // multishot recv that outran its cancel; input that found it under the bound
            // was taken in good faith, whatever its answer weighs (a `source` request of
            // 1 MiB behind an answer still queued).
            let outran = conn.out.queued > OUT_BOUND_BYTES;
            self.scratch.clear();
            let step = self
                .proto
                .on_bytes(&mut conn.proto, input, &mut self.scratch);
            if self.sweep.is_some() && step.reply != Reply::Nothing {
                conn.last_ns = self.now;
            }
            match step.reply {
                Reply::Nothing => {}
                Reply::Input => {
                    let src = match (owned.take(), bid) {
                        (Some(v), _) => Src::Owned(v),
                        (None, Some(b)) => {
                            recycle = None; // the send gives it back
                            Src::Bid(b)
                        }
                        (None, None) => Src::RecvBuf,
                    };
                    conn.out.push(src, n);
                }
                Reply::Out => {
                    let out = std::mem::take(&mut self.scratch);
                    let len = out.len();
                    conn.out.push(Src::Owned(out), len);
                }
            }
            if step.next == Next::Close {
                conn.phase = Phase::Draining;
            }
            self.c.bytes_in += n as u64;
            if ms && outran && conn.out.queued > HARD_OUT_BOUND {
                // The multishot recv outran its cancel: drop the connection (see
                // HARD_OUT_BOUND). Reset, never a clean FIN: the client must not take a
                // truncated echo for a whole one.
                self.c.overrun_closes += 1;
                conn.phase = Phase::Closing;
                overrun = Some(conn.fd);
            }
        } else if res == 0 {
            if conn.phase == Phase::Open {
                conn.phase = Phase::Draining;
                self.c.peer_fins += 1;
                self.scratch.clear();
                if self.proto.on_eof(&mut conn.proto, &mut self.scratch) == Reply::Out {
                    let out = std::mem::take(&mut self.scratch);
                    let len = out.len();
                    conn.out.push(Src::Owned(out), len);
                }
            }
        } else if res == -libc::ENOBUFS {
            if !more {
                conn.recv = RecvOp::Starved;
            }
            self.c.enobufs += 1;
            if let Some(p) = self.provided.as_mut() {
                p.starved.push((u.idx, u.gen));
            }
        } else if res == -libc::ECANCELED {
            // Cancelled for backpressure or close: progress() decides.
        } else if res < 0 && res != -libc::EINTR && res != -libc::EAGAIN {
            self.c.resets += 1;
            conn.phase = Phase::Closing;
        }
        if let Some(b) = recycle {
            self.recycle(b);
        }
        if napi_first {
            self.napi_check(u.idx)?;
        }
        if let Some(fd) = overrun {
            // SO_LINGER 0 makes the close send RST; SHUT_RD ends the multishot recv.
            self.reset(u.idx, u.gen, fd, Then::ShutRead)?;
        }
        self.progress(u.idx)
    }

    /// A multishot recv can miss a cancel (ENOENT/EALREADY) while the kernel is re-issuing it;
    /// it would then keep taking buffers from a connection over its bound. Cancel again.
    pub(super) fn on_cancel_recv(&mut self, u: UserData, res: i32) -> io::Result<()> {
        if res != -libc::ENOENT && res != -libc::EALREADY {
            return Ok(());
        }
        let Some(conn) = self.conns.get(u) else {
            return Ok(());
        };
        if conn.recv.in_flight() {
            self.c.cancel_retries += 1;
            conn.recv = RecvOp::Armed;
            return self.progress(u.idx);
        }
        Ok(())
    }

    /// After each batch: publishes the recycled buffers, then re-arms the connections that met
    /// ENOBUFS if some came back.
    pub(super) fn end_of_batch(&mut self) -> io::Result<()> {
        let Some(p) = self.provided.as_mut() else {
            return Ok(());
        };
        p.ring.commit();
        // `recycled` stays set until it re-arms someone: a connection's ENOBUFS completion
        // can arrive a batch after the buffers came back (the kernel tried before that
        // batch's commit), and with no recycle in its own batch it would wait for ever (a
        // sink, whose every buffer comes back at once, stalled so under stream.send). A
        // re-arm that meets an empty ring again waits for the next recycle: no spinning.
        if p.recycled && !p.starved.is_empty() {
            p.recycled = false;
            for (idx, gen) in std::mem::take(&mut p.starved) {
                let Some(c) = self.conns.at(idx).filter(|c| c.gen == gen) else {
                    continue;
                };
                if c.recv == RecvOp::Starved {
                    c.recv = RecvOp::Idle;
                }
                self.progress(idx)?;
            }
        }
        Ok(())
    }
}
