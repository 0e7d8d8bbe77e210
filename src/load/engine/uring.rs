//! The io_uring engine's [`Sockets`]: one ring per load thread (DEFER_TASKRUN and
//! SINGLE_ISSUER where the kernel has them), every connection's socket a registered file in
//! its own slot, one multishot receive per connection into a provided-buffer ring, and sends
//! queued as SQEs that go out together with the loop's next wait (one `io_uring_enter` per
//! loop turn submits the turn's sends and waits).
//!
//! The connection state machine (`conn`) is the epoll engine's: completions are turned into
//! the same events. A receive's bytes are copied out of their provided buffer into the
//! connection's staging bytes at once (the buffer goes back to the ring in the same turn), and
//! [`Sockets::recv`] hands them out as a recv(2) would, at most what it asks for, then EOF or
//! the error that ended the receive. Staging is bounded: past [`STAGE_BOUND`] bytes not yet
//! read the multishot receive is cancelled, and armed again once the loop has read them
//! (backpressure as the kernel's socket buffer gives the epoll engine). A send completes
//! whole (MSG_WAITALL) or says why not; a connection has at most one send in flight, its
//! bytes (`Conn::out`) untouched until it completes, even across a reconnect.
//!
//! A connection's slot carries a generation, bumped when its socket closes: a completion of an
//! older generation is stale (its buffer goes back, nothing else). Closing shuts the socket
//! down first, so that its multishot receive ends. At the end [`Uring::finish`] cancels what is
//! still in flight and waits for it (bounded), so that no buffer is freed under the kernel.

use super::*;
use crate::io::uring::bufring::BufRing;
use crate::io::uring::user_data::{Op, UserData, GEN_MASK};
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use rustix::io::Errno;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Bytes a provided buffer holds: a receive completes with at most this many.
const BUF_LEN: usize = 4096;
/// Bytes received and not yet read past which a connection's receive is cancelled until the
/// loop reads them (armed again below [`READ_CHUNK`]).
const STAGE_BOUND: usize = 4 * READ_CHUNK;
/// The buffer group of a load thread's ring (one ring, one group).
const BGID: u16 = 1;

/// Why the io_uring engine cannot run here (`Err`), tried once per process: a ring with a
/// registered buffer ring and a sparse file table, and a multishot receive that delivers
/// (kernel 6.0), on a socket pair.
pub(super) fn available() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE.get_or_init(probe).clone()
}

fn probe() -> Result<(), String> {
    let mut u = Uring::new(1).map_err(|e| format!("io_uring with a buffer ring: {e}"))?;
    let (a, b) = rustix::net::socketpair(
        rustix::net::AddressFamily::UNIX,
        rustix::net::SocketType::STREAM,
        rustix::net::SocketFlags::CLOEXEC | rustix::net::SocketFlags::NONBLOCK,
        None,
    )
    .map_err(|e| format!("a socket pair: {e}"))?;
    let mut c = Conn::new(0, 0, None);
    u.install(&mut c, a)
        .map_err(|e| format!("a registered file: {e}"))?;
    u.ready(&c)
        .map_err(|e| format!("a multishot receive: {e}"))?;
    rustix::io::write(&b, b"ping").map_err(|e| format!("a socket pair: {e}"))?;
    let mut ev = [libc::epoll_event { events: 0, u64: 0 }; 4];
    let n = u
        .wait(&mut ev, 200_000_000)
        .map_err(|e| format!("io_uring_enter: {e}"))?;
    let mut got = [MaybeUninit::<u8>::uninit(); 8];
    let res = match (n, u.recv(&c, &mut got)) {
        (1, Ok(4)) if u.slots[0].armed => Ok(()),
        (_, r) => Err(format!(
            "a multishot receive (IORING_RECV_MULTISHOT, kernel 6.0): got {r:?} and it {}",
            if u.slots[0].armed { "goes on" } else { "ended" }
        )),
    };
    u.close(&mut c);
    u.finish();
    res
}

/// Where a connection's receive stands.
#[derive(Default)]
struct Slot {
    /// Bumped when the socket closes: completions of older ones are stale.
    gen: u32,
    /// Received, not yet read: `staged[off..]`.
    staged: Vec<u8>,
    off: usize,
    /// How the receive ended after the staged bytes, if it did.
    end: Option<End>,
    /// A multishot receive of this generation is in flight.
    armed: bool,
    /// Cancelled for backpressure: armed again once the staged bytes are read.
    paused: bool,
    /// A send is in flight (of any generation: its bytes are the connection's `out`).
    sending: bool,
    /// The connection asked to send while an older generation's send was still in flight:
    /// that send's completion wakes it.
    held_back: bool,
    /// A send of this generation completed and the loop has not taken its result yet.
    sent: Option<rustix::io::Result<usize>>,
    /// Events gathered for the loop, not yet handed out (0: none; the slot is in `ready`).
    ev: u32,
}

impl Slot {
    fn held(&self) -> usize {
        self.staged.len() - self.off
    }
}

/// How a connection's receive ended.
#[derive(Clone, Copy)]
enum End {
    /// 0 bytes: the peer closed.
    Eof,
    Err(Errno),
}
const READ_EV: u32 = libc::EPOLLIN as u32;
const WRITE_EV: u32 = libc::EPOLLOUT as u32;

pub(super) struct Uring {
    ring: IoUring,
    bufs: BufRing,
    slots: Vec<Slot>,
    /// Slots with events not yet handed out, in the order they came.
    ready: Vec<usize>,
    /// SQEs whose last completion has not come yet.
    inflight: usize,
    /// [`Uring::finish`] is cancelling: nothing is armed again.
    finishing: bool,
    /// The completions of one turn (kept: no allocation per turn).
    cqes: Vec<(u64, i32, u32)>,
}

impl Uring {
    /// A ring for `conns` connections.
    pub(super) fn new(conns: usize) -> io::Result<Uring> {
        let conns = conns.max(1);
        let sq = (conns * 2 + 16).next_power_of_two().clamp(64, 4096) as u32;
        let cq = (conns * 4 + 64).next_power_of_two().clamp(256, 65536) as u32;
        let build = |defer: bool| {
            let mut b = IoUring::builder();
            b.setup_cqsize(cq).setup_submit_all();
            if defer {
                b.setup_defer_taskrun().setup_single_issuer();
            }
            b.build(sq)
        };
        // DEFER_TASKRUN (6.1): completions are made in this thread's enter, nowhere else.
        let ring = build(true).or_else(|_| build(false))?;
        let entries = (conns * 2).next_power_of_two().clamp(64, 8192) as u16;
        let bufs = BufRing::with_flags(&ring.submitter(), BGID, entries, BUF_LEN, 0)?;
        ring.submitter().register_files_sparse(conns as u32)?;
        Ok(Uring {
            ring,
            bufs,
            slots: (0..conns).map(|_| Slot::default()).collect(),
            ready: Vec::new(),
            inflight: 0,
            finishing: false,
            cqes: Vec::new(),
        })
    }

    /// Queues `e`; a full submission queue is submitted first.
    fn push(&mut self, e: squeue::Entry) -> io::Result<()> {
        // SAFETY: every SQE built here points at memory that outlives its completion: a
        // send's bytes are its connection's `out`, left untouched while `Slot::sending`
        // unless its socket was shut down first (a reconnect after `Connection: close`
        // rewrites `out`), after which the send can only fail, without reading them; the
        // connections are freed only once nothing is in flight (`finish`); receives take
        // provided buffers; nothing else carries a pointer.
        while unsafe { self.ring.submission().push(&e) }.is_err() {
            self.ring.submit()?;
        }
        self.inflight += 1;
        Ok(())
    }

    /// Makes `fd` connection `c`'s socket, registered in its slot.
    fn install(&mut self, c: &mut Conn, fd: OwnedFd) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        self.ring
            .submitter()
            .register_files_update(c.idx as u32, &[fd.as_raw_fd()])?;
        c.fd = Some(fd);
        Ok(())
    }

    fn ud(&self, op: Op, idx: usize) -> u64 {
        UserData::new(op, idx as u32, self.slots[idx].gen).encode()
    }

    /// Arms `idx`'s multishot receive.
    fn arm(&mut self, idx: usize) -> io::Result<()> {
        let e = opcode::RecvMulti::new(types::Fixed(idx as u32), BGID)
            .build()
            .user_data(self.ud(Op::Recv, idx));
        self.push(e)?;
        let s = &mut self.slots[idx];
        s.armed = true;
        s.paused = false;
        Ok(())
    }

    /// Adds `ev` to the events `idx` is owed.
    fn notify(&mut self, idx: usize, ev: u32) {
        let s = &mut self.slots[idx];
        if s.ev == 0 {
            self.ready.push(idx);
        }
        s.ev |= ev;
    }

    /// Takes every completion there is.
    fn reap(&mut self) -> io::Result<()> {
        let mut recycled = false;
        let mut rearm = Vec::new();
        let mut cancel = Vec::new();
        let mut cqes = std::mem::take(&mut self.cqes);
        cqes.clear();
        cqes.extend(
            self.ring
                .completion()
                .map(|e| (e.user_data(), e.result(), e.flags())),
        );
        for &(ud, res, flags) in &cqes {
            let more = cqueue::more(flags);
            if !more {
                self.inflight = self.inflight.saturating_sub(1);
            }
            let Some(u) = UserData::decode(ud) else {
                continue;
            };
            let idx = u.idx as usize;
            let Some(s) = self.slots.get_mut(idx) else {
                continue;
            };
            let current = u.gen == s.gen;
            match u.op {
                Op::Recv => {
                    if let Some(b) = cqueue::buffer_select(flags) {
                        if current && res > 0 && s.end.is_none() {
                            if s.off > 0 && s.off * 2 >= s.staged.len() {
                                s.staged.drain(..s.off);
                                s.off = 0;
                            }
                            // SAFETY: this CQE handed out `b` with `res` bytes; it goes back
                            // to the ring just below, after they are copied.
                            s.staged
                                .extend_from_slice(unsafe { self.bufs.buf(b, res as usize) });
                        }
                        self.bufs.push(b);
                        recycled = true;
                    }
                    if !current {
                        continue;
                    }
                    if !more {
                        s.armed = false;
                    }
                    let ended = match res {
                        0 if !more => Some(End::Eof),
                        r if r < 0 => match Errno::from_raw_os_error(-r) {
                            // Out of buffers, or cancelled for backpressure: armed again.
                            Errno::NOBUFS | Errno::CANCELED => None,
                            e => Some(End::Err(e)),
                        },
                        _ => None,
                    };
                    if s.end.is_none() {
                        s.end = ended;
                    }
                    if self.finishing {
                        continue;
                    }
                    if s.end.is_none() && !s.armed {
                        if !s.paused || s.held() < READ_CHUNK {
                            rearm.push(idx);
                        }
                    } else if s.armed && !s.paused && s.held() > STAGE_BOUND {
                        s.paused = true;
                        cancel.push(ud);
                    }
                    if res > 0 || s.end.is_some() {
                        self.notify(idx, READ_EV);
                    }
                }
                Op::Send => {
                    s.sending = false;
                    // A stale send's completion wakes only a connection it held back (one
                    // still connecting must not take it for its connect's).
                    let wake = current || std::mem::take(&mut s.held_back);
                    if current {
                        s.sent = Some(if res >= 0 {
                            Ok(res as usize)
                        } else {
                            Err(Errno::from_raw_os_error(-res))
                        });
                    }
                    // Bytes staged before the connection goes on to receive raise no
                    // completion of their own (none comes while its receive is paused): they
                    // are readable now.
                    let readable = s.held() > 0 || s.end.is_some();
                    if wake {
                        self.notify(
                            idx,
                            if readable {
                                WRITE_EV | READ_EV
                            } else {
                                WRITE_EV
                            },
                        );
                    }
                }
                Op::Connect if current => self.notify(idx, WRITE_EV),
                _ => {}
            }
        }
        self.cqes = cqes;
        if recycled {
            self.bufs.commit();
        }
        for idx in rearm {
            self.arm(idx)?;
        }
        for ud in cancel {
            let e = opcode::AsyncCancel::new(ud)
                .build()
                .user_data(UserData::global(Op::CancelRecv).encode());
            self.push(e)?;
        }
        Ok(())
    }

    /// Submits what is queued and waits up to `timeout_ns` for a completion (0: only looks),
    /// then takes every completion there is.
    fn enter(&mut self, timeout_ns: u64) -> io::Result<()> {
        crate::io::uring::ring::submit_and_wait_for(&self.ring, Duration::from_nanos(timeout_ns))?;
        self.reap()
    }

    /// Cancels everything in flight and waits (at most 2 s) for the last completions; then
    /// the buffer ring is unregistered. Returns whether nothing is left in flight (otherwise
    /// the caller must not free what sends point at; the buffers are leaked, see
    /// [`BufRing`]).
    pub(super) fn finish(&mut self) -> bool {
        self.finishing = true;
        if self.inflight > 0 {
            let e = opcode::AsyncCancel2::new(types::CancelBuilder::any())
                .build()
                .user_data(UserData::global(Op::Cancel).encode());
            let _ = self.push(e);
            let deadline = Instant::now() + Duration::from_secs(2);
            while self.inflight > 0 && Instant::now() < deadline {
                if self.enter(50_000_000).is_err() {
                    break;
                }
            }
        }
        let done = self.inflight == 0;
        if done {
            let _ = self.bufs.unregister(&self.ring.submitter());
        }
        done
    }
}

impl Drop for Uring {
    /// A loop that ended early (an error) did not finish: what it has in flight is
    /// cancelled here (the buffers leak when that does not complete).
    fn drop(&mut self) {
        if !self.finishing {
            self.finish();
        }
    }
}

impl Sockets for Uring {
    fn finish(&mut self) -> bool {
        Uring::finish(self)
    }

    fn open(&mut self, c: &mut Conn, target: SocketAddr) -> io::Result<()> {
        let fd = sock::connect(target, c.source, c.abortive)?;
        self.install(c, fd)?;
        // One poll for writability: the connect resolved (either way).
        let e = opcode::PollAdd::new(types::Fixed(c.idx as u32), libc::POLLOUT as u32)
            .build()
            .user_data(self.ud(Op::Connect, c.idx));
        self.push(e)
    }

    fn ready(&mut self, c: &Conn) -> io::Result<()> {
        self.arm(c.idx)
    }

    fn recv(&mut self, c: &Conn, buf: &mut [MaybeUninit<u8>]) -> rustix::io::Result<usize> {
        let s = &mut self.slots[c.idx];
        let n = s.held().min(buf.len());
        if n == 0 {
            return match s.end {
                _ if buf.is_empty() => Ok(0),
                Some(End::Eof) => Ok(0),
                Some(End::Err(e)) => Err(e),
                None => Err(Errno::WOULDBLOCK),
            };
        }
        // SAFETY: `n` bytes fit both the staged bytes from `off` and `buf`, which do not
        // overlap (one is this slot's, the other the caller's).
        unsafe {
            std::ptr::copy_nonoverlapping(
                s.staged.as_ptr().add(s.off),
                buf.as_mut_ptr().cast::<u8>(),
                n,
            );
        }
        s.off += n;
        if s.off == s.staged.len() {
            s.staged.clear();
            s.off = 0;
        }
        if s.paused && !s.armed && s.end.is_none() && s.held() < READ_CHUNK {
            self.arm(c.idx)
                .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
        }
        Ok(n)
    }

    fn send(&mut self, c: &Conn, from: usize) -> rustix::io::Result<usize> {
        let s = &mut self.slots[c.idx];
        if let Some(r) = s.sent.take() {
            return r;
        }
        if s.sending {
            s.held_back = true;
            return Err(Errno::WOULDBLOCK);
        }
        let bytes = &c.out[from..];
        let e = opcode::Send::new(
            types::Fixed(c.idx as u32),
            bytes.as_ptr(),
            bytes.len() as u32,
        )
        .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
        .build()
        .user_data(self.ud(Op::Send, c.idx));
        self.push(e)
            .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
        self.slots[c.idx].sending = true;
        Err(Errno::WOULDBLOCK)
    }

    fn close(&mut self, c: &mut Conn) {
        let Some(fd) = c.fd.take() else {
            return;
        };
        // Its multishot receive (and a send waiting for room) ends. A connection closed
        // abortively ([`Config::churn`]) shuts reading only, which sends nothing: a FIN here
        // would let the server's FIN put the socket in TIME_WAIT before the last reference
        // (the receive's) closes it with its RST.
        let how = if c.abortive {
            rustix::net::Shutdown::Read
        } else {
            rustix::net::Shutdown::Both
        };
        let _ = rustix::net::shutdown(&fd, how);
        let _ = self
            .ring
            .submitter()
            .register_files_update(c.idx as u32, &[-1]);
        let s = &mut self.slots[c.idx];
        s.gen = s.gen.wrapping_add(1) & GEN_MASK;
        s.staged = Vec::new();
        s.off = 0;
        s.end = None;
        s.armed = false;
        s.paused = false;
        s.sent = None;
        s.held_back = false;
    }

    fn wait(&mut self, events: &mut [libc::epoll_event], timeout_ns: u64) -> io::Result<usize> {
        // Events still owed from the last turn are handed out at once.
        self.enter(if self.ready.is_empty() { timeout_ns } else { 0 })?;
        let n = self.ready.len().min(events.len());
        for (ev, idx) in events.iter_mut().zip(self.ready.drain(..n)) {
            let s = &mut self.slots[idx];
            *ev = libc::epoll_event {
                events: std::mem::take(&mut s.ev),
                u64: idx as u64,
            };
        }
        Ok(n)
    }
}
