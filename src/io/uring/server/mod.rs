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
//!
//! Layout, one file per concern (tokio-rs/io-uring's `examples/tcp_echo.rs` is the model: every
//! SQE carries a token naming its operation and connection, and each connection records which
//! of its operations are in flight as explicit states, never as loose flags):
//! - this file: `serve`, the loop (enter, reap, dispatch each CQE by its `Op`), SQ pushes;
//! - `conn`: the connection slab and a connection's states (`conn::Phase` for its life,
//!   `conn::RecvOp` and `conn::SendOp` for its one receive and one send), its output queue,
//!   and `progress`, which decides its next operations from those states;
//! - `accept`: single-shot or multishot accept, direct descriptors, pauses;
//! - `recv`: plain recv into the connection's buffer, multishot recv from the provided-buffer
//!   ring (ENOBUFS, recycling, re-arming), backpressure cancels;
//! - `send`: send, sendmsg of several queued chunks, SEND_ZC and its notification;
//! - `teardown`: a closing connection's cancels, the reset (SO_LINGER 0, then SHUT_RD or close),
//!   freeing the slot, the idle sweep, and the stop: cancel everything and await every CQE.

/// Builds `$build` with `$t` bound to the connection's target: `types::Fd` for a plain
/// descriptor, `types::Fixed` for a direct one (the io-uring crate types the two apart).
macro_rules! on_fd {
    ($fd:expr, |$t:ident| $build:expr) => {
        match $fd {
            $crate::io::uring::server::conn::Fd::Raw(fd) => {
                let $t = ::io_uring::types::Fd(fd);
                $build
            }
            $crate::io::uring::server::conn::Fd::Fixed(slot) => {
                let $t = ::io_uring::types::Fixed(slot);
                $build
            }
        }
    };
}

mod accept;
mod broker;
mod bundle;
mod conn;
mod hybrid;
mod napi;
mod provided;
mod recv;
mod send;
mod teardown;

use self::accept::Acceptor;
use self::conn::Slab;
use self::provided::{CopyOut, Provided};
use self::teardown::Sweep;
use super::bufring::BufRing;
use super::ring;
use super::user_data::{Op, UserData};
use crate::error::CaseError;
use crate::io::accept::ACCEPT_PAUSE;
use crate::io::idle::{coarse_now_ns, Idle};
use crate::io::stop::Stop;
use crate::measure::pin::CpuPlan;
use crate::model::{Files, Loop, Shape, Tx, UringKnobs};
use crate::proto::{Protocol, OUT_BOUND_BYTES};
use io_uring::{opcode, squeue, types, IoUring};
use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, RawFd};

/// SQ entries (the CQ gets twice as many).
pub(crate) const SQ_ENTRIES: u32 = 2048;
/// Receive buffer per connection (plain), bytes.
pub(crate) const RECV_BUF: usize = 16 * 1024;
/// Buffers in the provided-buffer ring (multishot). Echo holds a buffer until its send
/// completes, so the pool must exceed the connections active in one batch: at 1000
/// connections a 1024-buffer pool ran dry 29 times per 1000 messages (ENOBUFS, re-arm).
pub(crate) const RING_BUFS: u16 = 4096;
/// Size of one provided buffer, bytes (pool: 32 MiB, touched as it cycles).
pub(crate) const RING_BUF_BYTES: usize = 8 * 1024;
/// The broker's provided-buffer ring, bytes in all (see `serve_with`).
pub(crate) const BROKER_RING_BYTES: usize = 1 << 20;
/// Single-shot accepts kept in flight. One at a time accepts one connection per trip through
/// the ring, and while established connections keep the ring busy each trip takes a while:
/// 1000 clients connecting at once waited up to 1.2 s (the whole run) to be accepted.
pub(crate) const ACCEPT_DEPTH: u32 = 64;
const BGID: u16 = 0;
/// Multishot only: a connection whose queued output passes this on input that arrived when it
/// was already over `OUT_BOUND_BYTES` (after its recv was cancelled) is closed. A multishot
/// recv cannot be stopped at once: its cancel lands only when the socket runs dry, and a
/// client that floods while never reading keeps it busy, taking buffers from the shared ring
/// (seen: 8 MiB past a 256 KiB bound). Closing caps what one client can take from the others.
/// Input that found the connection under the bound is answered whatever its answer weighs
/// (a `source` request asks for up to 1 MiB, `proto::stream::MAX_BATCH_BYTES` per batch): so
/// a connection holds at most this plus one batch's answers.
pub(crate) const HARD_OUT_BOUND: usize = 4 * OUT_BOUND_BYTES;

crate::counter_set! {
    /// What the io_uring server counts for itself (one thread, one ring: one set).
    pub(crate) struct UringCounters {
        /// How the ring was set up (1 per flag `ring::build` set: `setup_<flag>`).
        setup_sqpoll, setup_sq_aff, setup_defer_taskrun, setup_single_issuer, setup_iopoll,
        setup_napi,
        /// `hybrid`: epoll waits of the loop (each turn also submits with an enter).
        hybrid_epoll_waits,
        /// Provided buffers spanned by receive completions whose bytes were copied out
        /// (bundles: several per completion; incremental: one piece per completion), and those
        /// completions; of them, the ones that spanned more than one buffer, and the ones
        /// whose last buffer the kernel kept for more (IORING_CQE_F_BUF_MORE: a piece).
        bundle_bufs, bundle_recvs, bundle_multi, buf_more,
        /// Slots of the sparse registered file table (direct descriptors).
        fixed_slots,
        /// io_uring_enter calls, SQEs they submitted, CQEs reaped, pushes that met a full SQ.
        io_uring_enter, sqes, cqes, sq_full,
        /// CQ overflows the ring reported at the end.
        cq_overflow,
        accepts,
        /// A multishot accept that ended on a success and was armed again.
        accept_rearms,
        /// Accepts failed on one connection (re-armed at once, see `io::accept`); pauses of
        /// accepting (EMFILE...).
        accept_errors, accept_pauses,
        bytes_in, bytes_out,
        /// A send that covered part of the queue's head.
        short_sends,
        /// Sends of several queued chunks as one sendmsg.
        sendmsgs,
        /// Receives armed (multishot: arms and re-arms after the first), multishot receives
        /// that met an empty buffer ring, cancels re-sent because the kernel missed one.
        recv_arms, recv_rearms, enobufs, cancel_retries,
        /// Receives held back (or cancelled) because the output is over the bound.
        read_pauses,
        /// The idle timer fell back to one-shot; a tick that was not a timer expiry.
        idle_tick_oneshot, idle_tick_errors,
        peer_fins, resets, idle_closes,
        /// Connections closed for passing `HARD_OUT_BOUND`, and sockets closed before their
        /// slot because a SEND_ZC notification was still out.
        overrun_closes, zc_early_closes,
        /// SEND_ZC from registered buffers: receive buffers registered (one per connection
        /// below the table's size), registrations refused, and sends that named the buffer.
        zc_buf_registers, zc_buf_register_errors, zc_fixed_sends,
        /// Broker SEND_ZC sends whose buffer was held for its notification while the next
        /// send went out, and the notifications that freed one.
        zc_held_sends, zc_held_notifs,
        /// NAPI rows: accepted sockets whose SO_INCOMING_NAPI_ID was read at their first
        /// bytes, those whose id was 0 (busy polling had no queue to poll for them), and
        /// reads that failed (see `napi`).
        napi_socks, napi_id_zero, napi_check_errors,
        closes, live_at_stop,
        /// Teardown gave up waiting for the kernel and leaked the buffers instead.
        teardown_leaked,
    }
}

/// The knobs the server reads, fixed for its life.
struct Mode {
    /// Direct descriptors: accept into the registered file table, every op on the slot.
    fixed: bool,
    /// One multishot accept instead of `ACCEPT_DEPTH` single-shot ones.
    ms_accept: bool,
    /// Multishot recv from the provided-buffer ring instead of recv into the connection's
    /// own buffer.
    ms_recv: bool,
    /// The multishot recv asks for bundles (IORING_RECVSEND_BUNDLE).
    bundle: bool,
    /// SEND_ZC for single sends.
    zc: bool,
    /// SEND_ZC from registered buffers: slots in the sparse buffer table (a connection whose
    /// slab index is below it has its receive buffer registered at that index).
    zc_fixed_slots: u32,
    /// Minimum wait (us) for a batch of `MIN_WAIT_BATCH` completions, if set.
    min_wait_us: Option<u32>,
    /// NAPI busy polling is registered: each connection's NAPI id is read (`napi`).
    napi_check: bool,
}

/// Completions a minimum-wait enter asks for (`uring-minwait`): it returns with fewer once
/// the minimum wait has passed and one has arrived.
pub(crate) const MIN_WAIT_BATCH: usize = 32;
/// Incremental buffer rings (`uring-inc`, and `uring-bundle-inc` whose bundles span them):
/// fewer, larger buffers than `RING_BUFS` x `RING_BUF_BYTES` (the same 32 MiB), each consumed
/// piecewise by many receives.
pub(crate) const INC_BUFS: u16 = 512;
pub(crate) const INC_BUF_BYTES: usize = 64 * 1024;

/// Serves `proto` on `listener` with the ring `k` describes, until `stop` is requested.
pub(crate) fn serve<P: Protocol>(
    listener: TcpListener,
    proto: P,
    k: &UringKnobs,
    plan: &CpuPlan,
    stop: &Stop,
) -> Result<UringCounters, CaseError> {
    serve_with(listener, proto, k, plan, stop, None).map(|(c, _)| c)
}

/// Serves the pubsub broker (`broker`: the one `proto::pubsub::Hub`, subscriber queues of at
/// most `queue_bytes`) on `listener` with the ring `k` describes, until `stop`; every row that
/// serves TCP serves it (the ones that cannot set up say why, as for echo). Returns the
/// server's counters and the hub's.
pub(crate) fn serve_broker(
    listener: TcpListener,
    queue_bytes: usize,
    k: &UringKnobs,
    plan: &CpuPlan,
    stop: &Stop,
) -> Result<(UringCounters, crate::proto::pubsub::HubCounters), CaseError> {
    let b = broker::Broker::new(queue_bytes);
    let (c, b) = serve_with(listener, broker::HubFrames, k, plan, stop, Some(b))?;
    Ok((c, b.map(|b| b.hub.counters).unwrap_or_default()))
}

fn serve_with<P: Protocol>(
    listener: TcpListener,
    proto: P,
    k: &UringKnobs,
    plan: &CpuPlan,
    stop: &Stop,
    broker: Option<broker::Broker>,
) -> Result<(UringCounters, Option<broker::Broker>), CaseError> {
    // The broker is this loop with a hub: the two shapes differ only in what SEND_ZC may do.
    k.runs(match broker {
        Some(_) => Shape::Broker,
        None => crate::io::BUILT_IN_TCP,
    })?;
    let hybrid_accept = k.looping == Loop::Hybrid;
    let provided = k.provided();
    // Accepted by the ring, the listener stays blocking (fast poll); by epoll, non-blocking.
    listener.set_nonblocking(hybrid_accept)?;
    let (ring, setup) = ring::build(k, SQ_ENTRIES, plan)?;
    let hybrid = if hybrid_accept {
        Some(hybrid::Hybrid::new(&listener, &ring)?)
    } else {
        None
    };
    let mode = Mode {
        fixed: k.files == Files::Registered,
        ms_accept: provided.is_some(),
        ms_recv: provided.is_some(),
        bundle: provided.is_some_and(|p| p.bundle),
        zc: k.zero_copy_send(),
        zc_fixed_slots: 0,
        min_wait_us: k.wait.min_wait_us,
        napi_check: k.wait.napi_busy_poll_us.is_some(),
    };
    let sweep = Idle::new(proto.idle_timeout()).map(Sweep::new);
    let mut s = Server {
        ring,
        proto,
        mode,
        provided: None,
        conns: Slab::default(),
        accept: Acceptor::new(ACCEPT_PAUSE),
        lfd: listener.as_raw_fd(),
        stop_fd: stop.fd(),
        cqes: Vec::with_capacity(2 * SQ_ENTRIES as usize),
        c: UringCounters::default(),
        stopping: false,
        scratch: Vec::new(),
        sweep,
        now: 0,
        hybrid,
        broker,
        race_fault: race_fault(),
        listener,
    };
    setup.flags.record(&mut s.c);
    if s.mode.fixed {
        // The table's size is bounded by RLIMIT_NOFILE; a full table makes accept fail with
        // ENFILE, handled like EMFILE.
        let slots = nofile_soft().clamp(16, 65_536) as u32;
        s.ring
            .submitter()
            .register_files_sparse(slots)
            .map_err(|e| CaseError::unavailable(format!("sparse registered file table: {e}")))?;
        s.c.fixed_slots += slots as u64;
    }
    if k.tx == (Tx::ZeroCopy { registered: true }) && !s.mode.ms_recv {
        // At most IORING_MAX_REG_BUFFERS (16384) slots; connections past them send unregistered.
        let slots = nofile_soft().clamp(16, 16_384) as u32;
        s.ring
            .submitter()
            .register_buffers_sparse(slots)
            .map_err(|e| CaseError::unavailable(format!("sparse registered buffer table: {e}")))?;
        s.mode.zc_fixed_slots = slots;
    }
    if let Some(consume) = provided {
        let (n, len, flags) = if consume.incremental {
            (
                INC_BUFS,
                INC_BUF_BYTES,
                io_uring::types::IOU_PBUF_RING_INC as u16,
            )
        } else {
            (RING_BUFS, RING_BUF_BYTES, 0)
        };
        // The broker copies each buffer out at once, so it needs few; and the ring is its
        // intake: a large one pulls a publisher's bytes in faster than subscribers drain
        // (TCP flow control no longer holds the publisher back) and overflows healthy
        // subscribers' queues. `BROKER_RING_BYTES` in all, like epoll's one read per event.
        let n = if s.broker.is_some() {
            (BROKER_RING_BYTES / len).max(1) as u16
        } else {
            n
        };
        let br = BufRing::with_flags(&s.ring.submitter(), BGID, n, len, flags)
            .map_err(|e| CaseError::unavailable(format!("provided buffer ring: {e}")))?;
        let mut p = Provided::new(br);
        p.copy = match (consume.bundle, consume.incremental) {
            (true, true) => Some(CopyOut::bundle_inc()),
            (true, false) => Some(CopyOut::bundle()),
            (false, true) => Some(CopyOut::inc(n)),
            (false, false) => None,
        };
        s.provided = Some(p);
    }
    stop.ready();
    let r = s.run();
    let teardown = s.teardown();
    r?;
    teardown?;
    Ok((s.c, s.broker.take()))
}

struct Server<P: Protocol> {
    ring: IoUring,
    proto: P,
    mode: Mode,
    /// The provided-buffer ring (multishot recv only).
    provided: Option<Provided>,
    conns: Slab<P::Conn>,
    accept: Acceptor,
    lfd: RawFd,
    stop_fd: RawFd,
    /// The last batch of completions: (user_data, result, flags).
    cqes: Vec<(u64, i32, u32)>,
    c: UringCounters,
    stopping: bool,
    /// Where the protocol writes a reply before it becomes an owned chunk.
    scratch: Vec<u8>,
    /// The idle limit and its sweep timer, if the protocol has a limit.
    sweep: Option<Sweep>,
    /// Coarse time read after the last batch of completions, ns (0 without an idle limit).
    now: u64,
    /// `hybrid`: epoll accepts and the loop waits in epoll.
    hybrid: Option<hybrid::Hybrid>,
    /// The pubsub broker's hub (`broker`): connections' bytes go there, not to `proto`.
    broker: Option<broker::Broker>,
    /// Fault injection (`FAULT_RESET_RACE`), tests only: a timer hard-linked before each
    /// reset's SHUT_RD, so that the shutdown resolves its direct descriptor late, and no
    /// backpressure cancel of a multishot recv, so that a flooding client is reset.
    race_fault: Option<Box<types::Timespec>>,
    /// The listener `lfd` is (`hybrid` hands it to epoll); last, so that it closes after the
    /// ring, as when the caller held it.
    listener: TcpListener,
}

/// `RINGSIDE_FAULT_RESET_RACE_MS=N` sets up the reset race for its regression test
/// (`tests/suite/conformance.rs`); never set by ringside itself. A multishot recv is not cancelled
/// when the connection's output passes its bound, so a client that floods and never reads
/// passes `HARD_OUT_BOUND` and is reset, and the reset's SHUT_RD runs N ms late, as a late
/// io-wq worker would run it (the kernel resolves the fixed slot only then).
pub const FAULT_RESET_RACE: &str = "RINGSIDE_FAULT_RESET_RACE_MS";

fn race_fault() -> Option<Box<types::Timespec>> {
    let ms: u64 = std::env::var(FAULT_RESET_RACE).ok()?.parse().ok()?;
    Some(Box::new(
        types::Timespec::new()
            .sec(ms / 1000)
            .nsec((ms % 1000) as u32 * 1_000_000),
    ))
}

impl<P: Protocol> Server<P> {
    fn run(&mut self) -> io::Result<()> {
        let poll = opcode::PollAdd::new(types::Fd(self.stop_fd), libc::POLLIN as u32)
            .build()
            .user_data(UserData::global(Op::Stop).encode());
        self.push(poll)?;
        self.arm_accepts()?;
        self.arm_tick()?;
        while !self.stopping {
            if self.hybrid.is_some() {
                self.hybrid_wait()?;
            } else {
                self.enter(1)?;
            }
            self.reap();
            if self.sweep.is_some() {
                self.now = coarse_now_ns();
            }
            let mut cqes = std::mem::take(&mut self.cqes);
            for &(ud, res, flags) in &cqes {
                self.on_cqe(ud, res, flags)?;
            }
            cqes.clear();
            self.cqes = cqes;
            self.end_of_batch()?;
        }
        Ok(())
    }

    fn on_cqe(&mut self, ud: u64, res: i32, flags: u32) -> io::Result<()> {
        let Some(u) = UserData::decode(ud) else {
            return Ok(());
        };
        match u.op {
            Op::Stop => {
                self.stopping = true;
                Ok(())
            }
            Op::Accept => self.on_accept(res, flags),
            Op::AcceptPause => self.on_accept_pause_end(),
            Op::Recv => self.on_recv(u, res, flags),
            Op::Send => self.on_send(u, UserData::tag_of(ud), res, flags),
            Op::CancelRecv => self.on_cancel_recv(u, res),
            Op::IdleTick => self.on_tick(res, flags),
            Op::NapiFd => self.on_napi_fd(res),
            Op::ShutRead => {
                if let Some(c) = self.conns.get(u) {
                    c.shutting = false;
                }
                self.progress(u.idx)
            }
            Op::Cancel | Op::Close | Op::Connect => Ok(()),
        }
    }

    /// Submits and waits for `want` completions; EINTR and EBUSY (CQ backlog) retried.
    fn enter(&mut self, want: usize) -> io::Result<()> {
        // Minimum wait: the kernel treats the minimum as the whole timeout unless an overall
        // one is given (it returns ETIME with nothing to reap): give one, and take its ETIME
        // as an empty batch (at most one a second while idle).
        let ts = types::Timespec::new().sec(1);
        let args = self
            .mode
            .min_wait_us
            .map(|us| types::SubmitArgs::new().min_wait_usec(us).timespec(&ts));
        loop {
            self.c.io_uring_enter += 1;
            let r = match &args {
                Some(a) => self
                    .ring
                    .submitter()
                    .submit_with_args(want.max(MIN_WAIT_BATCH), a),
                None => self.ring.submit_and_wait(want),
            };
            match r {
                Ok(n) => {
                    self.c.sqes += n as u64;
                    return Ok(());
                }
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => return Ok(()),
                Err(e) if args.is_some() && e.raw_os_error() == Some(libc::ETIME) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    /// Submits what is queued now, without waiting (counted as an enter).
    fn submit(&mut self) -> io::Result<()> {
        self.c.io_uring_enter += 1;
        self.c.sqes += self.ring.submit()? as u64;
        Ok(())
    }

    fn reap(&mut self) {
        let mut cq = self.ring.completion();
        cq.sync();
        for cqe in &mut cq {
            self.cqes.push((cqe.user_data(), cqe.result(), cqe.flags()));
        }
        self.c.cqes += self.cqes.len() as u64;
    }

    /// Pushes an SQE; when the SQ is full, submits and retries (counted as `sq_full`).
    fn push(&mut self, e: squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: every buffer an SQE points at (connection receive buffers, provided
            // buffers, owned reply chunks, sendmsg headers, the timespecs, the linger value)
            // stays alive and unmoved until its CQE is reaped: connections are freed only
            // with no op in flight, and teardown waits (or leaks).
            if unsafe { self.ring.submission().push(&e) }.is_ok() {
                return Ok(());
            }
            self.c.sq_full += 1;
            self.c.io_uring_enter += 1;
            match self.ring.submit() {
                Ok(n) => self.c.sqes += n as u64,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ring_setup_flag_is_recorded_by_its_name() {
        use crate::measure::CounterSet;
        let mut flags = ring::SetupFlags::default();
        for name in ring::SetupFlags::NAMES {
            *flags.by_name(name).unwrap() = 1;
        }
        let mut c = UringCounters::default();
        flags.record(&mut c);
        for name in ring::SetupFlags::NAMES {
            assert_eq!(c.by_name(name).copied(), Some(1), "{name}");
        }
    }
}
