//! The epoll server: one thread, non-blocking sockets, level- or edge-triggered.
//!
//! Per event: level-triggered reads once (the next wait reports the rest); edge-triggered
//! drains until EAGAIN or a read shorter than the buffer (the queue was emptied: data that
//! arrives later raises a new edge), and after the peer's FIN (EPOLLRDHUP in the event) until
//! EOF, since a FIN queued with the data raises no later edge. A reply is sent at once from the receive
//! buffer; only what the socket does not take is copied into the connection's pending output,
//! and EPOLLOUT is watched only while something is pending. A connection whose pending output
//! is over `proto::OUT_BOUND_BYTES` is not read until it drains (EPOLLIN dropped from its
//! interest), so a client that never reads cannot make the server buffer without bound.
//! Peer FIN: the pending output is sent, then the socket closed. Accept errors follow the one
//! policy of `io::accept`: on a pause (EMFILE, ENFILE...) the listener leaves the interest set
//! for `ACCEPT_PAUSE` while connections keep being served; a fatal one ends the server.
//!
//! Idle limit (`Protocol::idle_timeout`, slowloris defence): the coarse clock is read once per
//! wait that returns, each reply stamps its connection, and while connections are open a
//! periodic timerfd in the interest set fires every sweep interval; the sweep closes every
//! connection past the limit (`idle_closes`). The wait itself stays infinite: a finite
//! epoll_wait timeout costs a kernel clock read per call, or one more, empty, wait per wakeup
//! (`Epoll::wait`). The timer is armed when a connection is open and disarmed at the first tick
//! that finds none, so an idle server does not wake. Without a limit there is no timer and the
//! clock is never read.

use super::{Ctl, Epoll};
use crate::io::accept::{accept_error_action, AcceptAction, ACCEPT_PAUSE};
use crate::io::idle::{coarse_now_ns, Idle};
use crate::io::stop::Stop;
use crate::measure::CounterSet;
use crate::model::Trigger;
use crate::proto::{Next, Protocol, Reply, OUT_BOUND_BYTES};
use rustix::io::Errno;
use rustix::net::{RecvFlags, SendFlags, SocketFlags};
use std::io;
use std::net::TcpListener;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

const RECV_BUF: usize = 64 * 1024;

crate::counter_set! {
    /// What the epoll server counts for itself (one thread: one set).
    pub(crate) struct EpollCounters {
        /// epoll_wait calls that returned, and the events they reported.
        epoll_waits, events,
        /// Connections accepted; accepts failed on one connection (retried at once, see
        /// `io::accept`); pauses of accepting (EMFILE...).
        accepts, accept_errors, accept_pauses,
        /// recv and send calls, and those that met EAGAIN.
        reads, writes, eagain,
        bytes_in, bytes_out,
        /// A reply the socket did not take whole; the rest waits for EPOLLOUT.
        partial_sends,
        /// EPOLL_CTL_MOD calls (interest follows pending output).
        epoll_mods,
        /// Reads skipped because the connection's pending output is over the bound.
        read_pauses,
        /// `epoll-busypoll`: sockets whose NAPI id was read at their first bytes, those with
        /// id 0, failed reads (`io::napi`).
        napi_socks, napi_id_zero, napi_check_errors,
        peer_fins, resets, idle_closes, closes, live_at_stop,
    }
}
pub(super) const TOKEN_LISTENER: u64 = u64::MAX;
const TOKEN_STOP: u64 = u64::MAX - 1;
const TOKEN_TICK: u64 = u64::MAX - 2;

/// The idle sweep's clock: a periodic timerfd watched by the epoll instance.
struct Ticker {
    fd: OwnedFd,
    every: Duration,
    armed: bool,
}

impl Ticker {
    fn new(ep: &Epoll, every: Duration) -> io::Result<Ticker> {
        // raw: rustix's timerfd is behind its `time` feature, left out (see Cargo.toml).
        // SAFETY: plain syscall; the fd it returns is owned below.
        let fd = crate::io::sys::cvt(unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        })?;
        // SAFETY: fd is a new descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        ep.ctl(Ctl::Add, &fd, libc::EPOLLIN as u32, TOKEN_TICK)?;
        Ok(Ticker {
            fd,
            every,
            armed: false,
        })
    }

    /// Arms the timer (first expiry one interval from now, then every interval) or disarms it.
    fn set(&mut self, on: bool) -> io::Result<()> {
        let d = if on { self.every } else { Duration::ZERO };
        let ts = libc::timespec {
            tv_sec: d.as_secs() as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        };
        let spec = libc::itimerspec {
            it_interval: ts,
            it_value: ts,
        };
        // SAFETY: spec is a valid itimerspec; the old value is not asked for.
        crate::io::sys::cvt(unsafe {
            libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut())
        })?;
        self.armed = on;
        Ok(())
    }

    /// Reads the expiry count, so that the fd stops being readable (and, edge-triggered, a
    /// later expiry raises a new edge).
    fn ack(&self) {
        let mut b = [0u8; 8];
        let _ = rustix::io::read(&self.fd, &mut b);
    }
}

struct Conn<C> {
    fd: OwnedFd,
    gen: u32,
    state: C,
    out: Vec<u8>,
    out_pos: usize,
    /// The peer sent FIN, or the protocol asked to close: no more reading.
    read_done: bool,
    /// Interest currently registered (EPOLLIN/EPOLLOUT bits).
    interest: u32,
    /// The coarse time of accept or of the last reply, ns (kept only with an idle limit).
    last_ns: u64,
    /// Busy polling is set and this connection's NAPI id is not read yet.
    napi_unchecked: bool,
}

impl<C> Conn<C> {
    fn pending(&self) -> usize {
        self.out.len() - self.out_pos
    }
}

enum Fate {
    Keep,
    Close,
}

/// Serves `proto` on `listener` until `stop` is requested.
pub(crate) fn serve<P: Protocol>(
    listener: TcpListener,
    proto: P,
    knobs: &crate::model::EpollKnobs,
    stop: &Stop,
) -> io::Result<EpollCounters> {
    serve_on(listener, proto, Epoll::with_knobs(knobs)?, stop)
}

/// `serve` on a given epoll instance (`Epoll::via_ring`: `uring-epollwait`).
pub(crate) fn serve_on<P: Protocol>(
    listener: TcpListener,
    proto: P,
    ep: Epoll,
    stop: &Stop,
) -> io::Result<EpollCounters> {
    listener.set_nonblocking(true)?;
    let proto_idle = proto.idle_timeout();
    let lfd = listener.as_fd();
    ep.ctl(Ctl::Add, lfd, libc::EPOLLIN as u32, TOKEN_LISTENER)?;
    ep.ctl(Ctl::Add, stop, libc::EPOLLIN as u32, TOKEN_STOP)?;
    stop.ready();
    let mut s = Server {
        ep,
        proto,
        conns: Vec::new(),
        free: Vec::new(),
        next_gen: 0,
        buf: vec![0; RECV_BUF],
        c: EpollCounters::default(),
        idle: Idle::new(proto_idle),
        now: 0,
    };
    let mut ticker = match s.idle {
        Some(idle) => Some(Ticker::new(&s.ep, idle.tick)?),
        None => None,
    };
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    let mut paused_until: Option<std::time::Instant> = None;
    loop {
        let timeout = listener_timeout(&s.ep, lfd, &mut paused_until)?;
        // Tick while some connection could go idle.
        if let Some(t) = &mut ticker {
            if !t.armed && s.conns.len() > s.free.len() {
                t.set(true)?;
            }
        }
        let n = s.ep.wait(&mut events, timeout)?;
        s.c.epoll_waits += 1;
        s.c.events += n as u64;
        if s.idle.is_some() {
            s.now = coarse_now_ns();
        }
        let mut ticked = false;
        for ev in &events[..n] {
            match ev.u64 {
                TOKEN_STOP => return Ok(s.finish()),
                TOKEN_TICK => ticked = true,
                TOKEN_LISTENER => {
                    if s.accept_all(lfd)? {
                        s.ep.ctl(Ctl::Del, lfd, 0, 0)?;
                        paused_until = Some(std::time::Instant::now() + ACCEPT_PAUSE);
                    }
                }
                tok => s.on_event(tok, ev.events),
            }
        }
        if let (true, Some(idle), Some(t)) = (ticked, s.idle, &mut ticker) {
            t.ack();
            s.sweep(&idle);
            if s.conns.len() == s.free.len() {
                t.set(false)?;
            }
        }
    }
}

struct Server<P: Protocol> {
    ep: Epoll,
    proto: P,
    conns: Vec<Option<Conn<P::Conn>>>,
    free: Vec<usize>,
    next_gen: u32,
    buf: Vec<u8>,
    c: EpollCounters,
    /// The idle limit, if the protocol has one.
    idle: Option<Idle>,
    /// Coarse time read after the last wait, ns (0 without an idle limit).
    now: u64,
}

impl<P: Protocol> Server<P> {
    fn finish(mut self) -> EpollCounters {
        let live = self.conns.iter().filter(|c| c.is_some()).count();
        self.c.live_at_stop += live as u64;
        self.c
    }

    /// Accepts until the backlog is empty. Ok(true): accepting must pause (`io::accept`).
    fn accept_all(&mut self, lfd: BorrowedFd<'_>) -> io::Result<bool> {
        let mut c = std::mem::take(&mut self.c);
        let r = accept_all(lfd, &mut c, |fd| self.insert(fd));
        self.c.merge(&c);
        r
    }

    fn insert(&mut self, fd: OwnedFd) -> io::Result<()> {
        let idx = self.free.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.conns.len() - 1
        });
        self.next_gen = self.next_gen.wrapping_add(1);
        let gen = self.next_gen;
        let interest = libc::EPOLLIN as u32 | libc::EPOLLRDHUP as u32;
        if let Err(e) = self.ep.ctl(Ctl::Add, &fd, interest, token(idx, gen)) {
            self.free.push(idx);
            return Err(e);
        }
        self.conns[idx] = Some(Conn {
            fd,
            gen,
            state: P::Conn::default(),
            out: Vec::new(),
            out_pos: 0,
            read_done: false,
            interest,
            last_ns: self.now,
            napi_unchecked: self.ep.busy_poll,
        });
        Ok(())
    }

    /// Closes every connection whose protocol has not replied for the idle limit.
    fn sweep(&mut self, idle: &Idle) {
        for idx in 0..self.conns.len() {
            if let Some(conn) = &self.conns[idx] {
                if idle.expired(conn.last_ns, self.now) {
                    // Closing the fd removes it from the interest set.
                    self.conns[idx] = None;
                    self.free.push(idx);
                    self.c.idle_closes += 1;
                    self.c.closes += 1;
                }
            }
        }
    }

    fn on_event(&mut self, tok: u64, events: u32) {
        let (idx, gen) = ((tok & 0xffff_ffff) as usize, (tok >> 32) as u32);
        let Some(Some(conn)) = self.conns.get_mut(idx) else {
            return;
        };
        if conn.gen != gen {
            return; // an event for a connection closed earlier in this batch
        }
        let fate = step(
            &self.proto,
            conn,
            events,
            self.ep.trigger(),
            &mut self.buf,
            &mut self.c,
            self.idle.map(|_| self.now),
        );
        let fate = match fate {
            Fate::Keep => {
                let want = wanted_interest(conn);
                if want != conn.interest {
                    conn.interest = want;
                    self.c.epoll_mods += 1;
                    match self.ep.ctl(Ctl::Mod, &conn.fd, want, tok) {
                        Ok(()) => Fate::Keep,
                        Err(_) => Fate::Close,
                    }
                } else {
                    Fate::Keep
                }
            }
            f => f,
        };
        if let Fate::Close = fate {
            // Closing the fd removes it from the interest set.
            self.conns[idx] = None;
            self.free.push(idx);
            self.c.closes += 1;
        }
    }
}

/// The one accept loop of the epoll servers (echo/HTTP/stream and the pubsub broker): accepts
/// on `lfd` until the backlog is empty, handing each new non-blocking socket to `insert` (an
/// error there counts as an accept error, the socket is dropped). Ok(true): accepting must
/// pause (`io::accept`); Err: a fatal accept error.
pub(super) fn accept_all(
    lfd: BorrowedFd<'_>,
    c: &mut EpollCounters,
    mut insert: impl FnMut(OwnedFd) -> io::Result<()>,
) -> io::Result<bool> {
    loop {
        // accept4(2) with null address pointers.
        match rustix::net::accept_with(lfd, SocketFlags::NONBLOCK | SocketFlags::CLOEXEC) {
            Ok(fd) => {
                c.accepts += 1;
                if insert(fd).is_err() {
                    c.accept_errors += 1;
                }
            }
            Err(e) => match accept_error_action(&e.into()) {
                AcceptAction::Wait => return Ok(false),
                AcceptAction::Retry => c.accept_errors += 1,
                AcceptAction::Pause => {
                    c.accept_pauses += 1;
                    return Ok(true);
                }
                AcceptAction::Fatal => {
                    let e = io::Error::from(e);
                    return Err(io::Error::new(e.kind(), format!("accept: {e}")));
                }
            },
        }
    }
}

fn token(idx: usize, gen: u32) -> u64 {
    ((gen as u64) << 32) | idx as u64
}

/// EPOLLRDHUP only together with EPOLLIN: a half-closed peer keeps RDHUP asserted, and a
/// level-triggered wait would report it again and again while output drains.
fn wanted_interest<C>(conn: &Conn<C>) -> u32 {
    let mut w = 0;
    if !conn.read_done && conn.pending() <= OUT_BOUND_BYTES {
        w |= (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
    }
    if conn.pending() > 0 {
        w |= libc::EPOLLOUT as u32;
    }
    w
}

/// Handles one readiness event for one connection.
fn step<P: Protocol>(
    proto: &P,
    conn: &mut Conn<P::Conn>,
    events: u32,
    trigger: Trigger,
    buf: &mut [u8],
    c: &mut EpollCounters,
    now: Option<u64>,
) -> Fate {
    if events & libc::EPOLLERR as u32 != 0 && events & libc::EPOLLIN as u32 == 0 {
        c.resets += 1;
        return Fate::Close;
    }
    // Flush first: output that was waiting may make room to read again.
    if conn.pending() > 0 {
        match flush(conn, c) {
            Ok(()) => {}
            Err(_) => {
                c.resets += 1;
                return Fate::Close;
            }
        }
    }
    let readable = events & (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP) as u32 != 0;
    // Edge-triggered: the edge is reported once, so drain until EAGAIN, or until a short read
    // while the peer has not closed (no read just to meet EAGAIN: one recv per message, not
    // two). Level-triggered: one read; the next wait reports what is left.
    let edge = trigger == Trigger::Edge;
    let short_read_drains = edge && events & (libc::EPOLLRDHUP | libc::EPOLLHUP) as u32 == 0;
    let mut reads_left = if edge { usize::MAX } else { 1 };
    // Reading also resumes after a pause, when output drained below the bound.
    let resumable = events & libc::EPOLLOUT as u32 != 0;
    if readable || resumable {
        while reads_left > 0 && !conn.read_done && conn.pending() <= OUT_BOUND_BYTES {
            reads_left -= 1;
            // recvfrom(2) with no address, as glibc's recv.
            let r = rustix::net::recv(&conn.fd, &mut *buf, RecvFlags::empty());
            c.reads += 1;
            let n = match r {
                Ok((0, _)) => {
                    conn.read_done = true;
                    c.peer_fins += 1;
                    let reply = proto.on_eof(&mut conn.state, &mut conn.out);
                    if reply == Reply::Out && flush(conn, c).is_err() {
                        c.resets += 1;
                        return Fate::Close;
                    }
                    break;
                }
                Ok((n, _)) => n,
                Err(Errno::AGAIN) => {
                    c.eagain += 1;
                    break;
                }
                Err(Errno::INTR) => {
                    reads_left = reads_left.saturating_add(1);
                    continue;
                }
                Err(_) => {
                    c.resets += 1;
                    return Fate::Close;
                }
            };
            c.bytes_in += n as u64;
            if conn.napi_unchecked && n > 0 {
                conn.napi_unchecked = false;
                let id = crate::io::napi::incoming_napi_id(conn.fd.as_raw_fd());
                crate::io::napi::count(
                    id,
                    &mut c.napi_socks,
                    &mut c.napi_id_zero,
                    &mut c.napi_check_errors,
                );
            }
            let st = proto.on_bytes(&mut conn.state, &buf[..n], &mut conn.out);
            if let (Some(t), true) = (now, st.reply != Reply::Nothing) {
                conn.last_ns = t;
            }
            let res = match st.reply {
                Reply::Nothing => Ok(()),
                Reply::Input => send_input(conn, &buf[..n], c),
                Reply::Out => flush(conn, c),
            };
            if res.is_err() {
                c.resets += 1;
                return Fate::Close;
            }
            if st.next == Next::Close {
                conn.read_done = true;
            }
            if short_read_drains && n < buf.len() {
                break;
            }
        }
        if !conn.read_done && conn.pending() > OUT_BOUND_BYTES {
            c.read_pauses += 1;
        }
    }
    if conn.read_done && conn.pending() == 0 {
        return Fate::Close;
    }
    Fate::Keep
}

/// Sends `input` directly when nothing is pending; queues what the socket does not take.
fn send_input<C>(conn: &mut Conn<C>, input: &[u8], c: &mut EpollCounters) -> io::Result<()> {
    if conn.pending() > 0 {
        conn.out.extend_from_slice(input);
        return flush(conn, c);
    }
    let sent = send_some(conn.fd.as_fd(), input, c)?;
    if sent < input.len() {
        conn.out.clear();
        conn.out_pos = 0;
        conn.out.extend_from_slice(&input[sent..]);
        c.partial_sends += 1;
    }
    Ok(())
}

/// Sends pending output until done or EAGAIN.
fn flush<C>(conn: &mut Conn<C>, c: &mut EpollCounters) -> io::Result<()> {
    let n = send_some(conn.fd.as_fd(), &conn.out[conn.out_pos..], c)?;
    conn.out_pos += n;
    if conn.out_pos == conn.out.len() {
        conn.out.clear();
        conn.out_pos = 0;
        if conn.out.capacity() > 4 * RECV_BUF {
            conn.out.shrink_to(RECV_BUF);
        }
    }
    Ok(())
}

/// Sends as much of `b` as the socket takes; Ok(bytes sent), stops at EAGAIN.
fn send_some(fd: BorrowedFd<'_>, b: &[u8], c: &mut EpollCounters) -> io::Result<usize> {
    let mut put = 0;
    while put < b.len() {
        // sendto(2) with no address, as glibc's send.
        let r = rustix::net::send(fd, &b[put..], SendFlags::NOSIGNAL);
        c.writes += 1;
        match r {
            Ok(n) => put += n,
            Err(Errno::AGAIN) => {
                c.eagain += 1;
                break;
            }
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    c.bytes_out += put as u64;
    Ok(put)
}

/// The wait's timeout, ms, while the listener may be paused (`io::accept`'s pause after EMFILE
/// and its kin): none while it is armed; once the pause is over, the listener is watched again.
pub(super) fn listener_timeout(
    ep: &Epoll,
    lfd: BorrowedFd<'_>,
    paused_until: &mut Option<std::time::Instant>,
) -> io::Result<i32> {
    let Some(t) = *paused_until else {
        return Ok(-1);
    };
    let left = t.saturating_duration_since(std::time::Instant::now());
    if !left.is_zero() {
        return Ok(left.as_millis() as i32 + 1);
    }
    ep.ctl(Ctl::Add, lfd, libc::EPOLLIN as u32, TOKEN_LISTENER)?;
    *paused_until = None;
    Ok(-1)
}
