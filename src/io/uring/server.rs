//! The io_uring servers: one thread, one ring, every model row's knobs read here or in
//! `ring::build`.
//!
//! - plain (`uring`, `uring-defer`, `uring-sqpoll`): `ACCEPT_DEPTH` single-shot accepts in
//!   flight, recv into the connection's own buffer, send; sockets stay blocking, so the
//!   kernel's fast poll arms readiness internally instead of returning EAGAIN.
//! - `fixed_files` (`uring-fixed`): accept straight into a sparse registered file table
//!   (IORING_FILE_INDEX_ALLOC); every op uses the slot (IOSQE_FIXED_FILE), close is an SQE.
//! - `multishot` + `buf_ring` (`uring-multishot`): one multishot accept, one multishot recv per
//!   connection taking buffers from a shared provided-buffer ring. A buffer whose bytes are the
//!   reply (echo) is sent from directly and goes back to the ring when its send completes. A
//!   recv that ends without IORING_CQE_F_MORE is re-armed; on ENOBUFS the connection waits
//!   until some buffer is recycled (counted: `enobufs`, `recv_arms`). Backpressure cancels the
//!   multishot recv, which lags while the peer floods; past `HARD_OUT_BOUND` queued the
//!   connection is shut down and closed (`overrun_closes`).
//! - `zc_send` (`uring-zc`): SEND_ZC; a send's buffer is released at its notification CQE.
//! - `uring-tuned` turns on together what the rows above try one at a time (DEFER_TASKRUN,
//!   direct descriptors, multishot accept and recv into the buffer ring): what an expert's
//!   small-message server uses, so that the best of io_uring meets epoll and the contenders.
//!
//! Per connection at most one send is in flight (replies stay in order); a reply that is the
//! input is sent from the receive buffer without a copy. Backpressure: a connection with more
//! than `proto::OUT_BOUND_BYTES` queued is not re-armed for receive (multishot: its recv is
//! cancelled) until it drains. A connection closes only once none of its ops is in flight:
//! buffers are never freed under the kernel. The slab is indexed by user_data, never by fd.
//! SQ full: submit and retry (`sq_full`); CQ overflow is read from the ring (`cq_overflow`).
//! Stop: a poll on the stop eventfd; then every op is cancelled and its CQE awaited.
//!
//! Idle limit (`Protocol::idle_timeout`, slowloris defence): a timeout SQE fires every sweep
//! tick (multishot, IORING_TIMEOUT_MULTISHOT; re-armed one-shot where the kernel refuses it);
//! the coarse clock is read once per batch of completions, each reply stamps its connection,
//! and the tick's completion marks every connection past the limit `closing`, which goes
//! through the same cancel-then-close path as a reset (`idle_closes`): in-flight ops complete,
//! buffers are recycled, direct descriptors are closed with a close SQE on their slot.
//! Without a limit no timer is armed and the clock is never read.

use super::bufring::BufRing;
use super::ring;
use super::user_data::{Op, UserData};
use crate::error::CaseError;
use crate::io::idle::{coarse_now_ns, Idle};
use crate::io::stop::Stop;
use crate::measure::{pin::CpuPlan, Counters};
use crate::model::UringKnobs;
use crate::proto::{Next, Protocol, Reply, OUT_BOUND_BYTES};
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::collections::VecDeque;
use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

/// SQ entries (the CQ gets twice as many).
pub const SQ_ENTRIES: u32 = 2048;
/// Receive buffer per connection (plain), bytes.
pub const RECV_BUF: usize = 16 * 1024;
/// Buffers in the provided-buffer ring (multishot). Echo holds a buffer until its send
/// completes, so the pool must exceed the connections active in one batch: at 1000
/// connections a 1024-buffer pool ran dry 29 times per 1000 messages (ENOBUFS, re-arm).
pub const RING_BUFS: u16 = 4096;
/// Size of one provided buffer, bytes (pool: 32 MiB, touched as it cycles).
pub const RING_BUF_BYTES: usize = 8 * 1024;
/// How long accepting pauses after EMFILE/ENFILE.
pub const ACCEPT_PAUSE: Duration = Duration::from_millis(100);
/// Single-shot accepts kept in flight. One at a time accepts one connection per trip through
/// the ring, and while established connections keep the ring busy each trip takes a while:
/// 1000 clients connecting at once waited up to 1.2 s (the whole run) to be accepted.
pub const ACCEPT_DEPTH: u32 = 64;
const BGID: u16 = 0;
/// SO_LINGER {on, 0 s}: close sends RST. Static: SQEs point at it.
static LINGER_RESET: libc::linger = libc::linger {
    l_onoff: 1,
    l_linger: 0,
};
/// Multishot only: a connection whose queued output passes this is closed. A multishot recv
/// cannot be stopped at once: its cancel lands only when the socket runs dry, and a client
/// that floods while never reading keeps it busy, taking buffers from the shared ring (seen:
/// 8 MiB past a 256 KiB bound). Closing caps what one client can take from the others.
pub const HARD_OUT_BOUND: usize = 4 * OUT_BOUND_BYTES;

#[derive(Clone, Copy)]
enum Fd {
    Raw(RawFd),
    Fixed(u32),
}

enum Src {
    /// The connection's own receive buffer (plain mode; recv waits until it is sent).
    RecvBuf,
    /// A provided buffer.
    Bid(u16),
    /// Bytes the protocol wrote.
    Owned(Vec<u8>),
}

struct Chunk {
    src: Src,
    len: usize,
}

struct Conn<C> {
    gen: u32,
    fd: Fd,
    state: C,
    recv_buf: Box<[u8]>,
    recv_armed: bool,
    recv_cancelled: bool,
    send_inflight: bool,
    /// SEND_ZC: the result CQE came with F_MORE; the buffer is the kernel's until the notif.
    zc_result: Option<i32>,
    queue: VecDeque<Chunk>,
    /// Bytes of the queue's head already sent.
    head_off: usize,
    queued: usize,
    read_done: bool,
    closing: bool,
    starved: bool,
    /// Multishot recv arms so far (re-arms = arms - 1).
    arms: u32,
    /// The msghdr and iovecs of an in-flight sendmsg (allocated on first use).
    msg: Option<Box<SendMsg>>,
    /// The coarse time of accept or of the last reply, ns (kept only with an idle limit).
    last_ns: u64,
    /// The socket was closed before the slot (SEND_ZC notification outstanding).
    fd_closed: bool,
}

/// Chunks one sendmsg may cover.
const MAX_IOV: usize = 32;

struct SendMsg {
    hdr: libc::msghdr,
    iov: [libc::iovec; MAX_IOV],
}

impl SendMsg {
    fn new() -> SendMsg {
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

struct Mode {
    fixed: bool,
    ms_accept: bool,
    ms_recv: bool,
    zc: bool,
}

/// Serves `proto` on `listener` with the ring `k` describes, until `stop` is requested.
pub fn serve<P: Protocol>(
    listener: TcpListener,
    proto: P,
    k: &UringKnobs,
    plan: &CpuPlan,
    stop: &Stop,
) -> Result<Counters, CaseError> {
    if k.fixed_bufs {
        return Err(CaseError::not_applicable(
            "registered buffers are not used by the TCP servers",
        ));
    }
    if k.buf_ring && !k.multishot {
        return Err(CaseError::not_applicable(
            "the servers use the buffer ring only with multishot recv",
        ));
    }
    listener.set_nonblocking(false)?;
    let (ring, setup) = ring::build(k, SQ_ENTRIES, plan)?;
    let mode = Mode {
        fixed: k.fixed_files,
        ms_accept: k.multishot,
        ms_recv: k.multishot && k.buf_ring,
        zc: k.zc_send,
    };
    let mut s = Server {
        ring,
        proto,
        mode,
        bufs: None,
        conns: Vec::new(),
        free: Vec::new(),
        next_gen: 0,
        lfd: listener.as_raw_fd(),
        stop_fd: stop.fd(),
        starved: Vec::new(),
        accepts_armed: 0,
        accept_paused: false,
        cqes: Vec::with_capacity(2 * SQ_ENTRIES as usize),
        c: Counters::default(),
        stopping: false,
        scratch: Vec::new(),
        recycled: false,
        idle: None,
        tick_multishot: true,
        now: 0,
    };
    s.idle =
        Idle::new(s.proto.idle_timeout()).map(|i| (i, Box::new(types::Timespec::from(i.tick))));
    for f in &setup.flags {
        s.c.add(&format!("setup_{}", f.to_ascii_lowercase()), 1);
    }
    if s.mode.fixed {
        // The table's size is bounded by RLIMIT_NOFILE; a full table makes accept fail with
        // ENFILE, handled like EMFILE.
        let slots = nofile_soft().clamp(16, 65_536) as u32;
        s.ring
            .submitter()
            .register_files_sparse(slots)
            .map_err(|e| CaseError::unavailable(format!("sparse registered file table: {e}")))?;
        s.c.add("fixed_slots", slots as u64);
    }
    if s.mode.ms_recv {
        let br = BufRing::new(&s.ring.submitter(), BGID, RING_BUFS, RING_BUF_BYTES)
            .map_err(|e| CaseError::unavailable(format!("provided buffer ring: {e}")))?;
        s.bufs = Some(br);
    }
    stop.ready();
    let r = s.run();
    let teardown = s.teardown();
    r?;
    teardown?;
    Ok(s.c)
}

struct Server<P: Protocol> {
    ring: IoUring,
    proto: P,
    mode: Mode,
    bufs: Option<BufRing>,
    conns: Vec<Option<Conn<P::Conn>>>,
    free: Vec<u32>,
    next_gen: u32,
    lfd: RawFd,
    stop_fd: RawFd,
    starved: Vec<u32>,
    /// Accept SQEs in flight (a multishot accept counts once).
    accepts_armed: u32,
    /// An EMFILE-style pause is under way: nothing re-arms accepting until its timeout.
    accept_paused: bool,
    cqes: Vec<(u64, i32, u32)>,
    c: Counters,
    stopping: bool,
    scratch: Vec<u8>,
    /// A provided buffer went back to the ring in this batch (connections that met ENOBUFS
    /// are re-armed at the end of it).
    recycled: bool,
    /// The idle limit, if the protocol has one, and the sweep tick's timespec (boxed: an SQE
    /// points at it).
    idle: Option<(Idle, Box<types::Timespec>)>,
    /// The tick timer is multishot (cleared when the kernel refuses it).
    tick_multishot: bool,
    /// Coarse time read after the last batch of completions, ns (0 without an idle limit).
    now: u64,
}

impl<P: Protocol> Server<P> {
    fn run(&mut self) -> io::Result<()> {
        let poll = opcode::PollAdd::new(types::Fd(self.stop_fd), libc::POLLIN as u32)
            .build()
            .user_data(UserData::global(Op::Stop).encode());
        self.push(poll)?;
        self.arm_accepts()?;
        if self.idle.is_some() {
            self.arm_tick()?;
        }
        let timespec = types::Timespec::from(ACCEPT_PAUSE);
        while !self.stopping {
            self.enter(1)?;
            self.reap();
            if self.idle.is_some() {
                self.now = coarse_now_ns();
            }
            let mut i = 0;
            while i < self.cqes.len() {
                let (ud, res, flags) = self.cqes[i];
                i += 1;
                self.on_cqe(ud, res, flags, &timespec)?;
            }
            self.cqes.clear();
            if let Some(b) = self.bufs.as_mut() {
                b.commit();
            }
            if self.recycled && !self.starved.is_empty() {
                self.wake_starved()?;
            }
            self.recycled = false;
        }
        Ok(())
    }

    /// Submits and waits for `want` completions; EINTR and EBUSY (CQ backlog) retried.
    fn enter(&mut self, want: usize) -> io::Result<()> {
        loop {
            self.c.add("io_uring_enter", 1);
            match self.ring.submit_and_wait(want) {
                Ok(n) => {
                    self.c.add("sqes", n as u64);
                    return Ok(());
                }
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    fn reap(&mut self) {
        let mut cq = self.ring.completion();
        cq.sync();
        for cqe in &mut cq {
            self.cqes.push((cqe.user_data(), cqe.result(), cqe.flags()));
        }
        self.c.add("cqes", self.cqes.len() as u64);
    }

    /// Pushes an SQE; when the SQ is full, submits and retries (counted as `sq_full`).
    fn push(&mut self, e: squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: every buffer an SQE points at (connection receive buffers, provided
            // buffers, owned reply chunks, the timespec) stays alive and unmoved until its CQE
            // is reaped: connections are freed only with no op in flight, and teardown waits.
            if unsafe { self.ring.submission().push(&e) }.is_ok() {
                return Ok(());
            }
            self.c.add("sq_full", 1);
            self.c.add("io_uring_enter", 1);
            match self.ring.submit() {
                Ok(n) => self.c.add("sqes", n as u64),
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    // CQ backlog: let the caller's next enter reap it; wait for room here.
                    self.ring.submitter().squeue_wait().ok();
                }
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) => return Err(e),
            }
            if self.ring.submission().is_full() {
                self.ring.submitter().squeue_wait().ok();
            }
        }
    }

    /// Tops accepting up: one multishot accept, or `ACCEPT_DEPTH` single-shot ones. Nothing
    /// while a pause is under way.
    fn arm_accepts(&mut self) -> io::Result<()> {
        let depth = if self.mode.ms_accept { 1 } else { ACCEPT_DEPTH };
        while !self.accept_paused && self.accepts_armed < depth {
            self.arm_accept()?;
        }
        Ok(())
    }

    fn arm_accept(&mut self) -> io::Result<()> {
        let ud = UserData::global(Op::Accept).encode();
        let e = if self.mode.ms_accept {
            // Direct descriptors have no close-on-exec flag (the kernel rejects it).
            opcode::AcceptMulti::new(types::Fd(self.lfd))
                .allocate_file_index(self.mode.fixed)
                .flags(if self.mode.fixed {
                    0
                } else {
                    libc::SOCK_CLOEXEC
                })
                .build()
        } else {
            let mut a = opcode::Accept::new(
                types::Fd(self.lfd),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
            .flags(if self.mode.fixed {
                0
            } else {
                libc::SOCK_CLOEXEC
            });
            if self.mode.fixed {
                a = a.file_index(Some(types::DestinationSlot::auto_target()));
            }
            a.build()
        };
        self.accepts_armed += 1;
        self.push(e.user_data(ud))
    }

    fn on_cqe(&mut self, ud: u64, res: i32, flags: u32, pause: &types::Timespec) -> io::Result<()> {
        let Some(u) = UserData::decode(ud) else {
            return Ok(());
        };
        match u.op {
            Op::Stop => {
                self.stopping = true;
                Ok(())
            }
            Op::Accept => self.on_accept(res, flags, pause),
            Op::AcceptPause => {
                self.accept_paused = false;
                self.arm_accepts()
            }
            Op::Recv => self.on_recv(u, res, flags),
            Op::Send => self.on_send(u, res, flags),
            Op::CancelRecv => self.on_cancel_recv(u, res),
            Op::IdleTick => self.on_tick(res, flags),
            Op::Cancel | Op::Close => Ok(()),
        }
    }

    /// Arms the idle-sweep timer: multishot (one SQE for the server's life) unless the kernel
    /// refused it, then one-shot, re-armed at each tick.
    fn arm_tick(&mut self) -> io::Result<()> {
        let Some((_, ts)) = &self.idle else {
            return Ok(());
        };
        let flags = if self.tick_multishot {
            types::TimeoutFlags::MULTISHOT
        } else {
            types::TimeoutFlags::empty()
        };
        let e = opcode::Timeout::new(&**ts as *const types::Timespec)
            .flags(flags)
            .build()
            .user_data(UserData::global(Op::IdleTick).encode());
        self.push(e)
    }

    /// A sweep tick: every connection past the idle limit starts closing.
    fn on_tick(&mut self, res: i32, flags: u32) -> io::Result<()> {
        if res == -libc::EINVAL && self.tick_multishot {
            // Kernels before 6.4 have no multishot timeouts.
            self.tick_multishot = false;
            self.c.add("idle_tick_oneshot", 1);
            return self.arm_tick();
        }
        if res == -libc::ECANCELED || self.stopping {
            return Ok(());
        }
        if res != -libc::ETIME {
            // Not a timer expiry: stop sweeping rather than re-arm into the same error.
            self.c.add("idle_tick_errors", 1);
            return Ok(());
        }
        if let Some((idle, _)) = self.idle {
            let now = self.now;
            for idx in 0..self.conns.len() {
                let Some(conn) = self.conns[idx].as_mut() else {
                    continue;
                };
                if conn.closing || !idle.expired(conn.last_ns, now) {
                    continue;
                }
                conn.closing = true;
                self.c.add("idle_closes", 1);
                self.progress(idx as u32)?;
            }
        }
        if !cqueue::more(flags) {
            self.arm_tick()?;
        }
        Ok(())
    }

    fn on_accept(&mut self, res: i32, flags: u32, pause: &types::Timespec) -> io::Result<()> {
        let more = self.mode.ms_accept && cqueue::more(flags);
        if !more {
            self.accepts_armed -= 1;
        }
        if res >= 0 {
            self.c.add("accepts", 1);
            if self.mode.ms_accept && !more {
                self.c.add("accept_rearms", 1);
            }
            let fd = if self.mode.fixed {
                Fd::Fixed(res as u32)
            } else {
                Fd::Raw(res)
            };
            self.open(fd)?;
            return self.arm_accepts();
        }
        match -res {
            libc::ECANCELED => Ok(()),
            libc::EINTR | libc::ECONNABORTED | libc::EPROTO | libc::EAGAIN => {
                self.c.add("accept_errors", 1);
                self.arm_accepts()
            }
            _ => {
                // EMFILE/ENFILE/ENOBUFS/ENOMEM (out of descriptors or memory) and anything
                // unexpected: stop accepting for a while, keep serving the others. Never
                // re-arm at once: a persistent error would spin.
                if res != -libc::EMFILE && res != -libc::ENFILE {
                    self.c.add("accept_errors", 1);
                }
                if self.accept_paused {
                    return Ok(()); // another accept in flight met the same error
                }
                self.accept_paused = true;
                self.c.add("accept_pauses", 1);
                if self.accepts_armed > 0 {
                    // The multishot accept, or the other single-shot ones, are still armed:
                    // cancel them all; the pause's end re-arms.
                    let all =
                        types::CancelBuilder::user_data(UserData::global(Op::Accept).encode())
                            .all();
                    let c = opcode::AsyncCancel2::new(all)
                        .build()
                        .user_data(UserData::global(Op::Cancel).encode());
                    self.push(c)?;
                }
                let t = opcode::Timeout::new(pause as *const _)
                    .build()
                    .user_data(UserData::global(Op::AcceptPause).encode());
                self.push(t)
            }
        }
    }

    fn open(&mut self, fd: Fd) -> io::Result<()> {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.conns.push(None);
                (self.conns.len() - 1) as u32
            }
        };
        self.next_gen = self.next_gen.wrapping_add(1) & super::user_data::GEN_MASK;
        let recv_buf = if self.mode.ms_recv {
            Box::default()
        } else {
            vec![0u8; RECV_BUF].into_boxed_slice()
        };
        self.conns[idx as usize] = Some(Conn {
            gen: self.next_gen,
            fd,
            state: P::Conn::default(),
            recv_buf,
            recv_armed: false,
            recv_cancelled: false,
            send_inflight: false,
            zc_result: None,
            queue: VecDeque::new(),
            head_off: 0,
            queued: 0,
            read_done: false,
            closing: false,
            starved: false,
            arms: 0,
            msg: None,
            last_ns: self.now,
            fd_closed: false,
        });
        self.progress(idx)
    }

    fn recycle(&mut self, bid: u16) {
        if let Some(b) = self.bufs.as_mut() {
            b.push(bid);
            self.recycled = true;
        }
    }

    fn on_recv(&mut self, u: UserData, res: i32, flags: u32) -> io::Result<()> {
        let bid = cqueue::buffer_select(flags);
        let more = self.mode.ms_recv && cqueue::more(flags);
        let ms = self.mode.ms_recv;
        let proto = &self.proto;
        let Some(conn) = conn_mut(&mut self.conns, u) else {
            if let Some(b) = bid {
                self.recycle(b);
            }
            return Ok(());
        };
        if !more {
            conn.recv_armed = false;
        }
        let mut recycle = bid;
        let mut enobufs = false;
        let mut shutdown = None;
        if res > 0 && !conn.closing && !conn.read_done {
            let n = res as usize;
            let input: &[u8] = match (ms, bid, self.bufs.as_ref()) {
                (true, Some(b), Some(br)) => br.buf(b, n),
                _ => &conn.recv_buf[..n],
            };
            self.scratch.clear();
            let step = proto.on_bytes(&mut conn.state, input, &mut self.scratch);
            if self.idle.is_some() && step.reply != Reply::Nothing {
                conn.last_ns = self.now;
            }
            match step.reply {
                Reply::Nothing => {}
                Reply::Input => {
                    let src = match bid {
                        Some(b) => {
                            recycle = None; // the send gives it back
                            Src::Bid(b)
                        }
                        None => Src::RecvBuf,
                    };
                    conn.queue.push_back(Chunk { src, len: n });
                    conn.queued += n;
                }
                Reply::Out => {
                    let out = std::mem::take(&mut self.scratch);
                    conn.queued += out.len();
                    conn.queue.push_back(Chunk {
                        len: out.len(),
                        src: Src::Owned(out),
                    });
                }
            }
            if step.next == Next::Close {
                conn.read_done = true;
            }
            self.c.add("bytes_in", n as u64);
            if ms && conn.queued > HARD_OUT_BOUND {
                // The multishot recv outran its cancel: drop the connection (see HARD_OUT_BOUND).
                self.c.add("overrun_closes", 1);
                conn.closing = true;
                // Reset, never a clean FIN: the client must not take a truncated echo for a
                // whole one. SO_LINGER 0 makes the close send RST; SHUT_RD ends the recv.
                match conn.fd {
                    // SAFETY: socket options and shutdown on a socket we own; it stays open
                    // until close().
                    Fd::Raw(fd) => unsafe {
                        libc::setsockopt(
                            fd,
                            libc::SOL_SOCKET,
                            libc::SO_LINGER,
                            (&LINGER_RESET as *const libc::linger).cast(),
                            std::mem::size_of::<libc::linger>() as libc::socklen_t,
                        );
                        libc::shutdown(fd, libc::SHUT_RD);
                    },
                    Fd::Fixed(slot) => shutdown = Some(slot),
                }
            }
        } else if res == 0 {
            if !conn.read_done {
                conn.read_done = true;
                self.c.add("peer_fins", 1);
                self.scratch.clear();
                if proto.on_eof(&mut conn.state, &mut self.scratch) == Reply::Out {
                    let out = std::mem::take(&mut self.scratch);
                    conn.queued += out.len();
                    conn.queue.push_back(Chunk {
                        len: out.len(),
                        src: Src::Owned(out),
                    });
                }
            }
        } else if res == -libc::ENOBUFS {
            enobufs = true;
            conn.starved = true;
        } else if res == -libc::ECANCELED {
            // Cancelled for backpressure or close: progress() decides.
        } else if res < 0 && res != -libc::EINTR && res != -libc::EAGAIN {
            self.c.add("resets", 1);
            conn.closing = true;
        }
        if let Some(b) = recycle {
            self.recycle(b);
        }
        if enobufs {
            self.c.add("enobufs", 1);
            self.starved.push(u.idx);
        }
        if let Some(slot) = shutdown {
            // Direct descriptors: the same two steps as SQEs, linked so they run in order.
            let ud = UserData::new(Op::Close, u.idx, u.gen).encode();
            let linger = opcode::SetSockOpt::new(
                types::Fixed(slot),
                libc::SOL_SOCKET as u32,
                libc::SO_LINGER as u32,
                (&LINGER_RESET as *const libc::linger).cast(),
                std::mem::size_of::<libc::linger>() as u32,
            )
            .build()
            .flags(squeue::Flags::IO_LINK)
            .user_data(ud);
            let shut = opcode::Shutdown::new(types::Fixed(slot), libc::SHUT_RD)
                .build()
                .user_data(ud);
            self.push(linger)?;
            self.push(shut)?;
        }
        self.progress(u.idx)
    }

    fn on_send(&mut self, u: UserData, res: i32, flags: u32) -> io::Result<()> {
        let zc = self.mode.zc;
        let Some(conn) = conn_mut(&mut self.conns, u) else {
            return Ok(());
        };
        let res = if zc {
            if cqueue::notif(flags) {
                // The buffer is free now; apply the result saved from the first CQE.
                conn.zc_result.take().unwrap_or(0)
            } else if cqueue::more(flags) {
                conn.zc_result = Some(res);
                return Ok(());
            } else {
                res
            }
        } else {
            res
        };
        conn.send_inflight = false;
        let mut freed: [Option<u16>; MAX_IOV] = [None; MAX_IOV];
        if res >= 0 {
            let mut n = res as usize;
            self.c.add("bytes_out", n as u64);
            conn.queued -= n;
            // One send may cover several queued chunks (sendmsg) and end inside one.
            let mut k = 0;
            while n > 0 {
                let Some(head) = conn.queue.front() else {
                    break;
                };
                let left = head.len - conn.head_off;
                if n < left {
                    conn.head_off += n;
                    self.c.add("short_sends", 1);
                    break;
                }
                n -= left;
                conn.head_off = 0;
                if let Some(Chunk {
                    src: Src::Bid(b), ..
                }) = conn.queue.pop_front()
                {
                    freed[k] = Some(b);
                    k += 1;
                }
            }
        } else if res != -libc::EINTR && res != -libc::EAGAIN {
            self.c.add("resets", 1);
            conn.closing = true;
        }
        for b in freed.into_iter().flatten() {
            self.recycle(b);
        }
        self.progress(u.idx)
    }

    /// A multishot recv can miss a cancel (ENOENT/EALREADY) while the kernel is re-issuing it;
    /// it would then keep taking buffers from a connection over its bound. Cancel again.
    fn on_cancel_recv(&mut self, u: UserData, res: i32) -> io::Result<()> {
        if res != -libc::ENOENT && res != -libc::EALREADY {
            return Ok(());
        }
        let Some(conn) = conn_mut(&mut self.conns, u) else {
            return Ok(());
        };
        if conn.recv_armed {
            self.c.add("cancel_retries", 1);
            conn.recv_cancelled = false;
            return self.progress(u.idx);
        }
        Ok(())
    }

    /// Re-arms connections that met ENOBUFS, now that buffers came back (already committed).
    fn wake_starved(&mut self) -> io::Result<()> {
        let list = std::mem::take(&mut self.starved);
        for idx in list {
            if let Some(Some(c)) = self.conns.get_mut(idx as usize) {
                c.starved = false;
            }
            self.progress(idx)?;
        }
        Ok(())
    }

    /// Decides a connection's next ops: send the queue's head, (re-)arm recv, cancel recv for
    /// backpressure, or close once nothing is in flight.
    fn progress(&mut self, idx: u32) -> io::Result<()> {
        let mode_fixed = self.mode.fixed;
        let (ms, zc) = (self.mode.ms_recv, self.mode.zc);
        let bufs = self.bufs.as_ref().map(|b| (b.bgid(), b as *const BufRing));
        let Some(Some(conn)) = self.conns.get_mut(idx as usize) else {
            return Ok(());
        };
        let gen = conn.gen;
        let mut sqes: [Option<squeue::Entry>; 2] = [None, None];
        let mut counted = (false, false, false, false);
        let mut counted_sendmsg = false;
        if conn.read_done && conn.queue.is_empty() {
            conn.closing = true;
        }
        if conn.closing {
            if conn.recv_armed && !conn.recv_cancelled {
                conn.recv_cancelled = true;
                sqes[0] = Some(
                    opcode::AsyncCancel::new(UserData::new(Op::Recv, idx, gen).encode())
                        .build()
                        .user_data(UserData::new(Op::CancelRecv, idx, gen).encode()),
                );
            }
            if conn.send_inflight && conn.zc_result.is_some() {
                // SEND_ZC finished; only its notification is out, which comes when the peer's
                // stack frees the bytes (over loopback: when the peer reads them, perhaps
                // never). Close the socket now, keep the slot and buffer until it comes.
                if !conn.fd_closed {
                    conn.fd_closed = true;
                    let fd = conn.fd;
                    self.reset_now(idx, gen, fd)?;
                }
            } else if conn.send_inflight {
                sqes[1] = Some(
                    opcode::AsyncCancel::new(UserData::new(Op::Send, idx, gen).encode())
                        .build()
                        .user_data(UserData::new(Op::Cancel, idx, gen).encode()),
                );
            }
            let Some(Some(conn)) = self.conns.get_mut(idx as usize) else {
                return Ok(());
            };
            if !conn.recv_armed && !conn.send_inflight {
                return self.close(idx);
            }
        } else {
            // Send the head of the queue.
            if !conn.send_inflight {
                if conn.queue.len() > 1 && !zc {
                    // Several chunks (multishot buffers, pipelined replies): one sendmsg
                    // with an iovec each, so sends keep pace with a multishot recv.
                    let ring = bufs.map(|b| b.1);
                    let m = conn.msg.get_or_insert_with(|| Box::new(SendMsg::new()));
                    let mut k = 0;
                    for (i, ch) in conn.queue.iter().take(MAX_IOV).enumerate() {
                        let base = match &ch.src {
                            Src::RecvBuf => conn.recv_buf.as_ptr(),
                            // SAFETY: the ring outlives every connection (see teardown).
                            Src::Bid(b) => unsafe { (*ring.expect("buffer ring")).ptr(*b) },
                            Src::Owned(v) => v.as_ptr(),
                        };
                        let off = if i == 0 { conn.head_off } else { 0 };
                        m.iov[i] = libc::iovec {
                            // SAFETY: off < len <= the buffer's length.
                            iov_base: unsafe { base.add(off) } as *mut libc::c_void,
                            iov_len: ch.len - off,
                        };
                        k += 1;
                    }
                    m.hdr.msg_iov = m.iov.as_mut_ptr();
                    m.hdr.msg_iovlen = k as _;
                    let ud = UserData::new(Op::Send, idx, gen).encode();
                    let hdr = &m.hdr as *const libc::msghdr;
                    let e = match conn.fd {
                        Fd::Raw(fd) => opcode::SendMsg::new(types::Fd(fd), hdr)
                            .flags(libc::MSG_NOSIGNAL as u32)
                            .build(),
                        Fd::Fixed(s) => opcode::SendMsg::new(types::Fixed(s), hdr)
                            .flags(libc::MSG_NOSIGNAL as u32)
                            .build(),
                    };
                    conn.send_inflight = true;
                    counted_sendmsg = true;
                    sqes[0] = Some(e.user_data(ud));
                } else if let Some(ch) = conn.queue.front() {
                    let ptr = match &ch.src {
                        Src::RecvBuf => conn.recv_buf.as_ptr(),
                        // SAFETY: the ring outlives every connection (see teardown).
                        Src::Bid(b) => unsafe { (*bufs.expect("buffer ring").1).ptr(*b) },
                        Src::Owned(v) => v.as_ptr(),
                    };
                    // SAFETY: head_off < len <= the buffer's length.
                    let ptr = unsafe { ptr.add(conn.head_off) };
                    let len = (ch.len - conn.head_off) as u32;
                    let ud = UserData::new(Op::Send, idx, gen).encode();
                    let e = match (conn.fd, zc) {
                        (Fd::Raw(fd), false) => opcode::Send::new(types::Fd(fd), ptr, len)
                            .flags(libc::MSG_NOSIGNAL)
                            .build(),
                        (Fd::Fixed(s), false) => opcode::Send::new(types::Fixed(s), ptr, len)
                            .flags(libc::MSG_NOSIGNAL)
                            .build(),
                        (Fd::Raw(fd), true) => opcode::SendZc::new(types::Fd(fd), ptr, len)
                            .flags(libc::MSG_NOSIGNAL)
                            .build(),
                        (Fd::Fixed(s), true) => opcode::SendZc::new(types::Fixed(s), ptr, len)
                            .flags(libc::MSG_NOSIGNAL)
                            .build(),
                    };
                    conn.send_inflight = true;
                    sqes[0] = Some(e.user_data(ud));
                }
            }
            // Receive, unless over the output bound or the recv buffer is still being sent.
            let buf_busy = conn.queue.iter().any(|c| matches!(c.src, Src::RecvBuf));
            let may_read = !conn.read_done && conn.queued <= OUT_BOUND_BYTES && !buf_busy;
            let ud = UserData::new(Op::Recv, idx, gen).encode();
            if may_read && !conn.recv_armed && !conn.starved {
                let e = if ms {
                    let bgid = bufs.expect("buffer ring").0;
                    counted.0 = true;
                    counted.3 = conn.arms > 0;
                    conn.arms += 1;
                    match conn.fd {
                        Fd::Raw(fd) => opcode::RecvMulti::new(types::Fd(fd), bgid).build(),
                        Fd::Fixed(s) => opcode::RecvMulti::new(types::Fixed(s), bgid).build(),
                    }
                } else {
                    let (p, l) = (conn.recv_buf.as_mut_ptr(), conn.recv_buf.len() as u32);
                    match conn.fd {
                        Fd::Raw(fd) => opcode::Recv::new(types::Fd(fd), p, l).build(),
                        Fd::Fixed(s) => opcode::Recv::new(types::Fixed(s), p, l).build(),
                    }
                };
                conn.recv_armed = true;
                conn.recv_cancelled = false;
                sqes[1] = Some(e.user_data(ud));
            } else if ms && conn.recv_armed && !may_read && !conn.recv_cancelled {
                // Multishot keeps receiving: cancel it until the output drains.
                conn.recv_cancelled = true;
                counted.1 = true;
                sqes[1] = Some(
                    opcode::AsyncCancel::new(ud)
                        .build()
                        .user_data(UserData::new(Op::CancelRecv, idx, gen).encode()),
                );
            }
            counted.2 = !may_read && conn.queued > OUT_BOUND_BYTES;
        }
        let _ = mode_fixed;
        if counted.0 {
            self.c.add("recv_arms", 1);
        }
        if counted_sendmsg {
            self.c.add("sendmsgs", 1);
        }
        if counted.3 {
            self.c.add("recv_rearms", 1);
        }
        if counted.1 || (counted.2 && !ms) {
            self.c.add("read_pauses", 1);
        }
        for e in sqes.into_iter().flatten() {
            self.push(e)?;
        }
        if counted.1 {
            // Submit the cancel now: every enter that passes first lets the multishot recv
            // take more buffers.
            self.c.add("io_uring_enter", 1);
            self.ring.submit()?;
        }
        Ok(())
    }

    fn close(&mut self, idx: u32) -> io::Result<()> {
        let Some(conn) = self.conns[idx as usize].take() else {
            return Ok(());
        };
        self.free.push(idx);
        self.c.add("closes", 1);
        for ch in &conn.queue {
            if let Src::Bid(b) = ch.src {
                self.recycle(b);
            }
        }
        if conn.fd_closed {
            return Ok(());
        }
        match conn.fd {
            Fd::Raw(fd) => {
                // SAFETY: the fd came from accept and no op on it is in flight.
                unsafe { libc::close(fd) };
                Ok(())
            }
            Fd::Fixed(s) => {
                let e = opcode::Close::new(types::Fixed(s))
                    .build()
                    .user_data(UserData::new(Op::Close, idx, conn.gen).encode());
                self.push(e)
            }
        }
    }

    /// Closes a closing connection's socket with a reset (its unsent output is dropped) before
    /// its slot is freed (`zc_early_closes`).
    fn reset_now(&mut self, idx: u32, gen: u32, fd: Fd) -> io::Result<()> {
        self.c.add("zc_early_closes", 1);
        match fd {
            // SAFETY: a socket we own; the finished send no longer uses the fd (io_uring took
            // its own file reference while it ran), and nothing else is submitted on it.
            Fd::Raw(fd) => unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&LINGER_RESET as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                );
                libc::close(fd);
                Ok(())
            },
            Fd::Fixed(slot) => {
                let ud = UserData::new(Op::Close, idx, gen).encode();
                let linger = opcode::SetSockOpt::new(
                    types::Fixed(slot),
                    libc::SOL_SOCKET as u32,
                    libc::SO_LINGER as u32,
                    (&LINGER_RESET as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as u32,
                )
                .build()
                .flags(squeue::Flags::IO_HARDLINK)
                .user_data(ud);
                let close = opcode::Close::new(types::Fixed(slot)).build().user_data(ud);
                self.push(linger)?;
                self.push(close)
            }
        }
    }

    /// Cancels everything and waits (bounded) for every op's CQE, so no buffer is freed under
    /// the kernel; then closes what is left.
    fn teardown(&mut self) -> io::Result<()> {
        let live = self.conns.iter().filter(|c| c.is_some()).count();
        self.c.add("live_at_stop", live as u64);
        let cancel = opcode::AsyncCancel2::new(types::CancelBuilder::any())
            .build()
            .user_data(UserData::global(Op::Cancel).encode());
        self.push(cancel)?;
        let deadline = Instant::now() + Duration::from_secs(2);
        let ts = types::Timespec::from(Duration::from_millis(50));
        loop {
            let busy = self
                .conns
                .iter()
                .flatten()
                .any(|c| c.recv_armed || c.send_inflight);
            if !busy || Instant::now() > deadline {
                break;
            }
            let args = types::SubmitArgs::new().timespec(&ts);
            self.c.add("io_uring_enter", 1);
            match self.ring.submitter().submit_with_args(1, &args) {
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                    ) => {}
                Err(e) => return Err(e),
            }
            self.reap();
            let cqes = std::mem::take(&mut self.cqes);
            for (ud, res, flags) in cqes {
                let Some(u) = UserData::decode(ud) else {
                    continue;
                };
                let bid = cqueue::buffer_select(flags);
                if let Some(b) = bid {
                    self.recycle(b);
                }
                let more = cqueue::more(flags);
                if let Some(c) = conn_mut(&mut self.conns, u) {
                    match u.op {
                        Op::Recv if !more => c.recv_armed = false,
                        Op::Send if !more || cqueue::notif(flags) => c.send_inflight = false,
                        _ => {}
                    }
                }
                let _ = res;
            }
        }
        let still_busy = self
            .conns
            .iter()
            .flatten()
            .any(|c| c.recv_armed || c.send_inflight);
        if still_busy {
            // The kernel may still write to these buffers: leak them rather than free them.
            self.c.add("teardown_leaked", 1);
            std::mem::forget(std::mem::take(&mut self.conns));
            if let Some(b) = self.bufs.take() {
                std::mem::forget(b);
            }
            return Ok(());
        }
        for idx in 0..self.conns.len() as u32 {
            if let Some(Some(c)) = self.conns.get_mut(idx as usize) {
                c.closing = true;
                c.recv_armed = false;
                c.send_inflight = false;
            }
            self.close(idx)?;
        }
        self.ring.submit().ok();
        self.c
            .add("cq_overflow", self.ring.completion().overflow() as u64);
        if let Some(mut b) = self.bufs.take() {
            if b.unregister(&self.ring.submitter()).is_err() {
                // Still registered: leak it rather than free memory the kernel may touch.
                std::mem::forget(b);
            }
        }
        Ok(())
    }
}

fn conn_mut<C>(conns: &mut [Option<Conn<C>>], u: UserData) -> Option<&mut Conn<C>> {
    match conns.get_mut(u.idx as usize) {
        Some(Some(c)) if c.gen == u.gen => Some(c),
        _ => None,
    }
}

fn nofile_soft() -> u64 {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid pointer to an rlimit we own.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) };
    rl.rlim_cur
}
