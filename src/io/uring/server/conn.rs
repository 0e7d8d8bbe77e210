//! A connection: its slot in the slab, its states, its output queue, and `progress`, which
//! turns those states into its next operations.
//!
//! Every operation in flight is named twice: by its SQE's user_data (op, slot, generation; see
//! `user_data`) and by the connection's state for that kind of op. A connection has at most
//! one receive ([`RecvOp`]) and one send ([`SendOp`]) in flight, and its slot is freed only
//! when neither is: the kernel never writes to or reads from a freed buffer.

use super::super::user_data::{Op, UserData, GEN_MASK};
use super::{Server, RECV_BUF};
use crate::io::uring::bufring::BufRing;
use crate::proto::Protocol;
use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;

/// A connection's socket: a plain descriptor or a direct one (a slot in the registered file
/// table).
#[derive(Clone, Copy)]
pub(super) enum Fd {
    Raw(RawFd),
    Fixed(u32),
}

/// Where a chunk of output lives.
pub(super) enum Src {
    /// The connection's own receive buffer (plain recv; no recv is armed until it is sent).
    RecvBuf,
    /// A provided buffer (multishot recv), back to the ring once sent.
    Bid(u16),
    /// Bytes the protocol wrote.
    Owned(Vec<u8>),
}

pub(super) struct Chunk {
    pub(crate) src: Src,
    pub(crate) len: usize,
}

/// Replies waiting to be sent, in order. The head chunk is held inline, in the connection:
/// with one reply at a time (echo, request-response) the queue never touches a heap buffer of
/// its own, which a message would otherwise find cold in the cache each time it is queued,
/// sent and consumed (the gap to a minimal C loop, `docs/notes/2026-11-load-engine.md`).
#[derive(Default)]
pub(super) struct OutQueue {
    /// The first chunk; `None` only when the queue is empty.
    head: Option<Chunk>,
    /// The chunks after it.
    rest: VecDeque<Chunk>,
    /// Bytes of the head chunk already sent.
    pub(crate) head_off: usize,
    /// Bytes queued and not yet sent.
    pub(crate) queued: usize,
}

impl OutQueue {
    pub(crate) fn push(&mut self, src: Src, len: usize) {
        self.queued += len;
        let ch = Chunk { src, len };
        if self.head.is_none() {
            self.head = Some(ch);
        } else {
            self.rest.push_back(ch);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    /// Chunks queued.
    pub(crate) fn len(&self) -> usize {
        usize::from(self.head.is_some()) + self.rest.len()
    }

    /// The chunks, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Chunk> {
        self.head.iter().chain(self.rest.iter())
    }

    pub(crate) fn front(&self) -> Option<&Chunk> {
        self.head.as_ref()
    }

    /// Takes the head chunk off (its `head_off` is the caller's to reset).
    pub(crate) fn pop_front(&mut self) -> Option<Chunk> {
        let h = self.head.take();
        self.head = self.rest.pop_front();
        h
    }

    /// Whether a chunk still waits in the connection's receive buffer (which a recv would
    /// overwrite).
    pub(crate) fn holds_recv_buf(&self) -> bool {
        self.iter().any(|c| matches!(c.src, Src::RecvBuf))
    }

    /// Takes `n` sent bytes off the front (one send may cover several chunks and end inside
    /// one); each provided buffer wholly sent goes to `freed`. Returns whether the send ended
    /// inside a chunk (a short send).
    pub(crate) fn consume(&mut self, mut n: usize, mut freed: impl FnMut(u16)) -> bool {
        self.queued -= n;
        while n > 0 {
            let Some(head) = self.front() else {
                break;
            };
            let left = head.len - self.head_off;
            if n < left {
                self.head_off += n;
                return true;
            }
            n -= left;
            self.head_off = 0;
            if let Some(Chunk {
                src: Src::Bid(b), ..
            }) = self.pop_front()
            {
                freed(b);
            }
        }
        false
    }
}

/// Where a connection is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Reading and replying.
    Open,
    /// No more reading (the peer sent FIN, or the protocol closes after its reply): what is
    /// queued is sent, then the connection closes.
    Draining,
    /// Closing (reset, overrun, idle, or drained): what is in flight is cancelled, and the
    /// slot is freed once nothing is.
    Closing,
    /// Closing, and the socket is already closed (with a reset) because only a SEND_ZC
    /// notification is still out: the slot and the buffer wait for it.
    SocketClosed,
}

impl Phase {
    pub(crate) fn closing(self) -> bool {
        matches!(self, Phase::Closing | Phase::SocketClosed)
    }
}

/// The connection's receive. A multishot one stays in flight across many completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RecvOp {
    /// None in flight.
    Idle,
    /// None in flight: the multishot recv ended on ENOBUFS, and is armed again once a provided
    /// buffer comes back.
    Starved,
    /// In flight.
    Armed,
    /// In flight, and a cancel for it was sent (backpressure, or closing).
    Cancelling,
}

impl RecvOp {
    pub(crate) fn in_flight(self) -> bool {
        matches!(self, RecvOp::Armed | RecvOp::Cancelling)
    }
}

/// The connection's send: at most one in flight, so replies stay in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SendOp {
    Idle,
    InFlight,
    /// In flight, and a cancel for it was sent (closing).
    Cancelling,
    /// SEND_ZC: its result came (`res`, with IORING_CQE_F_MORE); the buffer stays the kernel's
    /// until the notification CQE, which applies `res`.
    ZcNotif {
        res: i32,
    },
}

impl SendOp {
    pub(crate) fn in_flight(self) -> bool {
        self != SendOp::Idle
    }
}

/// Chunks one sendmsg may cover.
pub(super) const MAX_IOV: usize = 32;

/// The msghdr and iovecs of an in-flight sendmsg (boxed: the SQE points at them).
pub(super) struct SendMsg {
    pub(crate) hdr: libc::msghdr,
    pub(crate) iov: [libc::iovec; MAX_IOV],
}

impl SendMsg {
    pub(crate) fn new() -> SendMsg {
        SendMsg {
            // SAFETY: msghdr is plain data; all-zero is an empty message.
            hdr: unsafe { std::mem::zeroed() },
            iov: [libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            }; MAX_IOV],
        }
    }
}

pub(super) struct Conn<C> {
    pub(crate) gen: u32,
    pub(crate) fd: Fd,
    /// The protocol's state for this connection.
    pub(crate) proto: C,
    pub(crate) phase: Phase,
    pub(crate) recv: RecvOp,
    pub(crate) send: SendOp,
    /// Plain recv's own buffer (empty with the provided-buffer ring).
    pub(crate) recv_buf: Box<[u8]>,
    pub(crate) out: OutQueue,
    /// Multishot recv arms so far (re-arms = arms - 1).
    pub(crate) arms: u32,
    /// The sendmsg header (allocated on first use).
    pub(crate) msg: Option<Box<SendMsg>>,
    /// `recv_buf` is registered at this connection's slab index (SEND_ZC from registered
    /// buffers).
    pub(crate) buf_registered: bool,
    /// The coarse time of accept or of the last reply, ns (kept only with an idle limit).
    pub(crate) last_ns: u64,
    /// Broker mode under SEND_ZC: buffers whose send completed and whose notification has
    /// not come, by the send's tag (at most [`ZC_HELD`]): the kernel's until then, so the slot
    /// stays ([`Conn::busy`]); the next send need not wait for them.
    pub(crate) zc_held: Vec<(u8, Vec<u8>)>,
    /// The tag of the send in flight, and the next one to give.
    pub(crate) zc_tag: u8,
    pub(crate) zc_next_tag: u8,
    /// NAPI rows: its NAPI id was asked for (`napi`).
    pub(crate) napi_checked: bool,
    /// A reset's SHUT_RD on its direct descriptor is in flight (`Op::ShutRead`): the slot must
    /// not be closed and given to a new connection before it ran, or it would shut that one.
    pub(crate) shutting: bool,
}

/// Completed SEND_ZC buffers a broker connection may hold awaiting their notifications; past
/// this the next completion waits for its own notification before the next send (tags are 4
/// bits: the held, the one in flight and the next stay distinct).
pub(super) const ZC_HELD: usize = 8;

impl<C: Default> Conn<C> {
    pub(crate) fn new(gen: u32, fd: Fd, own_recv_buf: bool, now: u64) -> Conn<C> {
        Conn {
            gen,
            fd,
            proto: C::default(),
            phase: Phase::Open,
            recv: RecvOp::Idle,
            send: SendOp::Idle,
            recv_buf: if own_recv_buf {
                vec![0u8; RECV_BUF].into_boxed_slice()
            } else {
                Box::default()
            },
            out: OutQueue::default(),
            arms: 0,
            msg: None,
            buf_registered: false,
            last_ns: now,
            zc_held: Vec::new(),
            zc_tag: 0,
            zc_next_tag: 0,
            napi_checked: false,
            shutting: false,
        }
    }
}

impl<C> Conn<C> {
    /// Some op of this connection is in flight: its slot and buffers must stay.
    pub(crate) fn busy(&self) -> bool {
        self.recv.in_flight() || self.send.in_flight() || !self.zc_held.is_empty() || self.shutting
    }

    /// The tag for a new broker SEND_ZC: the next one no held buffer carries.
    pub(crate) fn take_zc_tag(&mut self) -> u8 {
        while self.zc_held.iter().any(|h| h.0 == self.zc_next_tag) {
            self.zc_next_tag = (self.zc_next_tag + 1) & 0x0F;
        }
        self.zc_tag = self.zc_next_tag;
        self.zc_next_tag = (self.zc_next_tag + 1) & 0x0F;
        self.zc_tag
    }

    /// A notification for tag `tag` frees a held buffer: true when it was one.
    pub(crate) fn release_zc(&mut self, tag: u8) -> bool {
        match self.zc_held.iter().position(|h| h.0 == tag) {
            Some(i) => {
                self.zc_held.swap_remove(i);
                true
            }
            None => false,
        }
    }
}

/// Where chunk `ch`'s bytes start: in `recv_buf` (the connection's), in the provided buffer
/// ring `bufs`, or in the chunk itself.
pub(super) fn chunk_ptr(ch: &Chunk, recv_buf: &[u8], bufs: Option<&BufRing>) -> *const u8 {
    match &ch.src {
        Src::RecvBuf => recv_buf.as_ptr(),
        Src::Bid(b) => bufs
            .expect("a provided buffer without the buffer ring")
            .ptr(*b),
        Src::Owned(v) => v.as_ptr(),
    }
}

/// The connections, indexed by the slot their SQEs carry, never by fd. A slot's generation
/// changes each time it is reused, so a completion that outlived its connection is ignored.
pub(super) struct Slab<C> {
    slots: Vec<Option<Conn<C>>>,
    free: Vec<u32>,
    next_gen: u32,
}

impl<C> Default for Slab<C> {
    fn default() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            next_gen: 0,
        }
    }
}

impl<C> Slab<C> {
    /// Puts the connection `make` builds (given its generation) in a free slot; returns it.
    pub(crate) fn insert(&mut self, make: impl FnOnce(u32) -> Conn<C>) -> u32 {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(None);
                (self.slots.len() - 1) as u32
            }
        };
        self.next_gen = self.next_gen.wrapping_add(1) & GEN_MASK;
        self.slots[idx as usize] = Some(make(self.next_gen));
        idx
    }

    /// The connection in slot `idx`, whichever it is.
    pub(crate) fn at(&mut self, idx: u32) -> Option<&mut Conn<C>> {
        self.slots.get_mut(idx as usize).and_then(Option::as_mut)
    }

    /// The connection a completion's user_data names, if it is still the one in that slot.
    pub(crate) fn get(&mut self, u: UserData) -> Option<&mut Conn<C>> {
        self.at(u.idx).filter(|c| c.gen == u.gen)
    }

    /// Frees slot `idx`, returning its connection.
    pub(crate) fn remove(&mut self, idx: u32) -> Option<Conn<C>> {
        let c = self.slots.get_mut(idx as usize)?.take()?;
        self.free.push(idx);
        Some(c)
    }

    /// Slots in use or not: `0..slots()` covers every connection.
    pub(crate) fn slots(&self) -> u32 {
        self.slots.len() as u32
    }

    pub(crate) fn live(&self) -> usize {
        self.slots.iter().flatten().count()
    }

    /// Some connection has an op in flight.
    pub(crate) fn busy(&self) -> bool {
        self.slots.iter().flatten().any(Conn::busy)
    }

    /// Forgets every connection without freeing its buffers (the kernel may still use them).
    pub(crate) fn leak(&mut self) {
        std::mem::forget(std::mem::take(&mut self.slots));
    }
}

impl<P: Protocol> Server<P> {
    /// Decides connection `idx`'s next ops from its states: close once drained; when closing,
    /// cancel and then free; otherwise send the queue's head and (re-)arm the receive, or hold
    /// it back for backpressure.
    pub(super) fn progress(&mut self, idx: u32) -> io::Result<()> {
        self.refill(idx);
        let Some(conn) = self.conns.at(idx) else {
            return Ok(());
        };
        if conn.phase == Phase::Draining && conn.out.is_empty() {
            conn.phase = Phase::Closing;
        }
        if conn.phase.closing() {
            return self.wind_down(idx);
        }
        self.send_next(idx)?;
        self.recv_next(idx)
    }

    /// A cancel of connection `idx`'s op `target`; its completion comes as `on`.
    pub(super) fn cancel(&mut self, target: Op, on: Op, idx: u32, gen: u32) -> io::Result<()> {
        // A broker's SEND_ZC carries its tag (0 for every other send).
        let tag = match (target, self.conns.at(idx)) {
            (Op::Send, Some(c)) => c.zc_tag,
            _ => 0,
        };
        let e =
            io_uring::opcode::AsyncCancel::new(UserData::new(target, idx, gen).encode_tagged(tag))
                .build()
                .user_data(UserData::new(on, idx, gen).encode());
        self.push(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_across_chunks_frees_whole_provided_buffers_and_stops_inside_one() {
        let mut q = OutQueue::default();
        q.push(Src::Bid(3), 10);
        q.push(Src::Owned(vec![0; 5]), 5);
        q.push(Src::Bid(4), 10);
        let mut freed = Vec::new();
        assert!(
            q.consume(12, |b| freed.push(b)),
            "ends inside the second chunk"
        );
        assert_eq!(freed, [3]);
        assert_eq!((q.head_off, q.queued, q.len()), (2, 13, 2));
        assert!(
            !q.consume(13, |b| freed.push(b)),
            "ends on a chunk boundary"
        );
        assert_eq!(freed, [3, 4]);
        assert!(q.is_empty() && q.queued == 0 && q.head_off == 0);
    }

    #[test]
    fn chunks_keep_their_order_across_the_inline_head() {
        let mut q = OutQueue::default();
        let lens = |q: &OutQueue| q.iter().map(|c| c.len).collect::<Vec<_>>();
        q.push(Src::RecvBuf, 1);
        q.push(Src::Bid(7), 2);
        q.push(Src::Owned(vec![0; 3]), 3);
        assert_eq!((lens(&q), q.len(), q.queued), (vec![1, 2, 3], 3, 6));
        assert!(q.holds_recv_buf());
        assert_eq!(q.pop_front().map(|c| c.len), Some(1));
        assert!(!q.holds_recv_buf(), "the receive buffer left with the head");
        q.push(Src::RecvBuf, 4);
        assert_eq!(lens(&q), [2, 3, 4], "a push after a pop goes to the back");
        assert_eq!(q.front().map(|c| c.len), Some(2));
        while q.pop_front().is_some() {}
        assert!(q.is_empty() && q.iter().next().is_none() && q.front().is_none());
        q.push(Src::Bid(1), 5);
        assert_eq!(
            (lens(&q), q.len()),
            (vec![5], 1),
            "an emptied queue starts again"
        );
    }

    #[test]
    fn a_completion_for_a_reused_slot_finds_nothing() {
        let mut s: Slab<()> = Slab::default();
        let a = s.insert(|g| Conn::new(g, Fd::Raw(-1), false, 0));
        let gen_a = s.at(a).unwrap().gen;
        s.remove(a);
        let b = s.insert(|g| Conn::new(g, Fd::Raw(-1), false, 0));
        assert_eq!(a, b, "the slot is reused");
        assert!(s.get(UserData::new(Op::Recv, a, gen_a)).is_none());
        let gen_b = s.at(b).unwrap().gen;
        assert!(s.get(UserData::new(Op::Recv, b, gen_b)).is_some());
        assert_eq!(s.live(), 1);
    }
}
