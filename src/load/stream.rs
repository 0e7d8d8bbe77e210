//! Bulk transfer (`stream.send`, `stream.duplex`): connections that move one known byte
//! pattern ([`crate::proto::stream`]) as fast as the server takes it, instead of messages.
//! It is an [`Exchange`] whose [`Exchange::streaming`] driver replaces the message engine, so
//! the network cell (server launch, CPU and syscall readings at the window's edges, verdicts)
//! is the echo and HTTP suites' own.
//!
//! - [`Direction::Up`]: the client writes the pattern in `write_bytes` writes; the server
//!   (`--protocol sink`) verifies and discards. After the window the client shuts its sending
//!   side and reads the server's trailer: the bytes the server verified must be every byte
//!   sent, or the connection's bytes count as mismatched.
//! - [`Direction::Down`]: the client asks (`--protocol source`) for `write_bytes` at a time,
//!   keeping [`WINDOW_REQUESTS`] requests outstanding, and checks every byte it receives.
//! - [`Direction::Duplex`]: the client writes the pattern continuously and reads the echo
//!   (`--protocol echo`) at the same time, checking every byte, with at most
//!   [`DUPLEX_WINDOW`] sent and not yet echoed.
//!
//! One op is one `write_bytes` chunk moved (sent, for `Up`; received and verified otherwise)
//! inside the window; the bytes are the payload moved in the window, one direction (duplex:
//! the echoed bytes; each also crossed the other way). Latency is a chunk's time: since the
//! previous chunk of its connection completed. Sent bytes are counted when `send` took them
//! (a socket buffer's worth may still be in flight at the window's edge). Each thread runs
//! ONE epoll loop over its share of the connections, pinned like the message engine's. The
//! warm-up is the engine's ([`super::window::coordinate`]): at least [`Config::warmup`], and
//! until every live `Down` / `Duplex` connection has received its first bytes (an `Up`
//! connection hears nothing before the end: none is awaited), at most the message timeout.

use super::tally::Tally;
use super::window::{run_threads, Coordinated, Shared, WARM_TICK_NS};
use super::{Config, Edge, Exchange, Mismatch, Report, Response};
use crate::measure::clock::now_ns;
use crate::measure::timeline::Timeline;
use crate::measure::{cpu, pin};
use crate::proto::stream::{first_mismatch, read_trailer, PATTERN_PERIOD, TRAILER_BYTES};
use rustix::event::epoll;
use std::io;
use std::net::TcpStream;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Which way the bytes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Client -> server (`--protocol sink`).
    Up,
    /// Server -> client (`--protocol source`).
    Down,
    /// Both at once (`--protocol echo`).
    Duplex,
}

impl Direction {
    /// The `ringside serve --protocol` that serves it.
    pub fn protocol(self) -> crate::proto::ServeProtocol {
        use crate::proto::ServeProtocol as P;
        match self {
            Direction::Up => P::Sink,
            Direction::Down => P::Source,
            Direction::Duplex => P::Echo,
        }
    }
}

/// Requests a `Down` connection keeps outstanding (each `write_bytes`).
pub(crate) const WINDOW_REQUESTS: u64 = 4;
/// The largest write (and request) size.
pub(crate) const MAX_WRITE_BYTES: usize = crate::proto::stream::MAX_REQUEST as usize;
/// `Duplex`: the most bytes a connection keeps sent and not yet echoed back, like a
/// flow-control window (HTTP/2's and gRPC's are smaller), so the run measures the transfer
/// and not how a server copes with a client that floods it without reading (the conformance
/// tests do that); it is also the largest write of the suite.
pub(crate) const DUPLEX_WINDOW: u64 = 1 << 20;
/// The most bytes one read or write call moves on a connection before the loop looks at the
/// window's edges again.
const CALL_BYTES: usize = 4 << 20;
/// How long the client waits for the `Up` trailers after the window.
pub(crate) const TRAILER_WAIT: Duration = Duration::from_secs(3);

/// A bulk transfer of `write_bytes` writes (1..=[`MAX_WRITE_BYTES`]) in `direction`.
pub struct Streaming {
    pub direction: Direction,
    pub write_bytes: usize,
}

impl Exchange for Streaming {
    fn request(&self, _conn: u32, _seq: u64, _out: &mut Vec<u8>) {}
    fn response(&self, _sent: &[u8], _got: &[u8]) -> Response {
        Response::Unreadable("a stream has no messages")
    }
    fn streaming(&self) -> Option<&Streaming> {
        Some(self)
    }
}

struct Conn {
    sock: TcpStream,
    id: u32,
    /// Pattern bytes sent / received (and checked) so far.
    tx: u64,
    rx: u64,
    /// `Down`: bytes asked for so far.
    asked: u64,
    /// When this connection's last chunk completed.
    last_chunk: u64,
    /// `Up` after the window: the trailer so far.
    trailer: Vec<u8>,
    done: bool,
    /// Registered for EPOLLOUT (level-triggered: only while there is something to write).
    out_armed: bool,
    /// Counted in [`Shared::unanswered`]: no bytes received yet (`Down`, `Duplex`).
    waiting: bool,
}

/// The window's edges as a loop last read them ([`Shared::edges_planned`]).
struct Times {
    open: u64,
    planned: u64,
    close: u64,
}

impl Times {
    fn now(shared: &Shared) -> Times {
        let (open, planned, close) = shared.edges_planned();
        Times {
            open,
            planned,
            close,
        }
    }
}

impl Streaming {
    /// Runs the transfer; see [`super::run`] for `edge`.
    pub fn run(&self, cfg: &Config, edge: &mut dyn FnMut(Edge)) -> io::Result<Report> {
        if cfg.conns == 0 || cfg.threads == 0 || !(1..=MAX_WRITE_BYTES).contains(&self.write_bytes)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "conns and threads must be >= 1 and write_bytes in 1..={MAX_WRITE_BYTES} \
                     (given {})",
                    self.write_bytes
                ),
            ));
        }
        crate::io::sys::raise_nofile(cfg.conns as u64 + 64)?;
        let threads = cfg.threads.min(cfg.conns);
        let shared = Shared::new(threads);
        let (parts, coord): (Vec<io::Result<Tally>>, _) =
            run_threads(cfg, &shared, edge, threads, "stream", |t, cpu, synced| {
                let lo = cfg.conns * t / threads;
                let hi = cfg.conns * (t + 1) / threads;
                self.worker(cfg, lo..hi, cpu, &shared, synced)
            });
        let window_ns = Coordinated::window_ns(&shared);
        let mut r = Report::empty(cfg, threads, None, window_ns, coord.interrupted);
        (r.warmup_ns, r.n.unsettled_conns) = (coord.warmup_ns, coord.unsettled);
        r.add_tallies(parts.into_iter().collect::<io::Result<Vec<Tally>>>()?);
        // Each byte is verified as it arrives: what was received is what was counted.
        r.n.rx_bytes = r.n.bytes;
        Ok(r)
    }

    fn worker(
        &self,
        cfg: &Config,
        ids: std::ops::Range<usize>,
        cpu: Option<u32>,
        shared: &Shared,
        synced: &mut bool,
    ) -> io::Result<Tally> {
        if let Some(c) = cpu {
            pin::pin_this_thread(c)?;
        }
        let mut out = Tally::default();
        let mut conns = Vec::with_capacity(ids.len());
        for id in ids {
            match TcpStream::connect_timeout(&cfg.target, cfg.connect_timeout)
                .and_then(|s| s.set_nodelay(true).and(s.set_nonblocking(true)).map(|()| s))
            {
                Ok(sock) => conns.push(Conn {
                    sock,
                    id: id as u32,
                    tx: 0,
                    rx: 0,
                    asked: 0,
                    last_chunk: 0,
                    trailer: Vec::new(),
                    done: false,
                    out_armed: false,
                    waiting: self.direction != Direction::Up,
                }),
                Err(e) => {
                    out.n.connect_errors += 1;
                    out.error(|| format!("connect {}: {e}", cfg.target));
                }
            }
        }
        let ep = Epoll::new()?;
        let want_out = self.direction != Direction::Down;
        for (i, c) in conns.iter_mut().enumerate() {
            ep.add(&c.sock, i as u64, want_out)?;
            c.out_armed = want_out;
        }
        // The warm-up waits for every live connection's first bytes (`Down`, `Duplex`).
        let awaited = conns.iter().filter(|c| c.waiting).count() as u64;
        shared.unanswered.fetch_add(awaited, Ordering::SeqCst);
        shared.barrier.wait();
        shared.barrier.wait();
        *synced = true;
        // The pattern from offset 0, long enough for a write starting anywhere in a period.
        let mut src = Vec::new();
        crate::proto::stream::fill_pattern(&mut src, 0, PATTERN_PERIOD + self.write_bytes);
        let mut rbuf = vec![0u8; self.write_bytes.clamp(64 << 10, 1 << 20)];
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
        let start = now_ns();
        for c in conns.iter_mut() {
            c.last_chunk = start;
            if self.direction == Direction::Down {
                self.ask(c, shared, &mut out);
            }
            if c.done && std::mem::take(&mut c.waiting) {
                shared.unanswered.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let mut cpu0 = None;
        loop {
            let t = Times::now(shared);
            let now = now_ns();
            if cpu0.is_none() && now >= t.open {
                cpu0 = Some(cpu::this_thread_ns());
                Timeline::of_window(&mut out.timeline, t.open, t.planned);
            }
            if now >= t.close {
                break;
            }
            if conns.iter().all(|c| c.done) {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            // Until the opening is known and reached, look for it every WARM_TICK_NS (the
            // last part of a millisecond before it is polled).
            let timeout_ms = match cpu0 {
                None => (t.open.saturating_sub(now).min(WARM_TICK_NS) / 1_000_000) as i32,
                Some(_) => 10,
            };
            let n = ep.wait(&mut events, timeout_ms)?;
            for ev in &events[..n] {
                let c = &mut conns[ev.u64 as usize];
                if c.done {
                    continue;
                }
                let rx = c.rx;
                let readable =
                    ev.events & (libc::EPOLLIN | libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0;
                if readable {
                    self.read(c, &mut rbuf, shared, &mut out);
                }
                if !c.done && ev.events & libc::EPOLLOUT as u32 != 0 {
                    self.write(c, &src, shared, &mut out);
                }
                if !c.done && self.direction == Direction::Down {
                    self.ask(c, shared, &mut out);
                }
                if c.waiting && (c.done || c.rx > rx) {
                    c.waiting = false;
                    shared.unanswered.fetch_sub(1, Ordering::SeqCst);
                }
                if c.done {
                    ep.del(&c.sock);
                } else if self.direction == Direction::Duplex {
                    // Writable interest only while the window has room (no spinning on a
                    // socket that is writable while the window is full).
                    let room = c.tx - c.rx < DUPLEX_WINDOW;
                    if room != c.out_armed {
                        ep.modify(&c.sock, ev.u64, room)?;
                        c.out_armed = room;
                    }
                }
            }
        }
        out.n.cpu_ns =
            cpu::this_thread_ns().saturating_sub(cpu0.unwrap_or_else(cpu::this_thread_ns));
        out.n.live_conns = conns.iter().filter(|c| !c.done).count() as u64;
        match self.direction {
            Direction::Up => self.trailers(&mut conns, &ep, &mut out)?,
            // Every byte received was checked, also on a connection that failed later.
            _ => out.n.verified_bytes += conns.iter().map(|c| c.rx).sum::<u64>(),
        }
        Ok(out)
    }

    /// Counts an error on `c` (in the window or the warm-up) and retires it.
    fn fail(&self, c: &mut Conn, t: &Shared, out: &mut Tally, e: &io::Error, reading: bool) {
        let t = Times::now(t);
        let now = now_ns();
        if now < t.open {
            out.n.warmup_errors += 1;
        } else {
            match e.kind() {
                io::ErrorKind::ConnectionReset
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::UnexpectedEof => out.n.resets += 1,
                _ => out.n.io_errors += 1,
            }
            if reading {
                out.n.read_errors += 1;
            } else {
                out.n.write_errors += 1;
            }
        }
        out.error(|| format!("connection {}: {e}", c.id));
        c.done = true;
    }

    fn mismatch(&self, c: &mut Conn, t: &Shared, out: &mut Tally, offset: u64) {
        let t = Times::now(t);
        let in_warmup = now_ns() < t.open;
        if in_warmup {
            out.n.warmup_invalid += 1;
            out.n.warmup_errors += 1;
        } else {
            out.n.mismatches += 1;
        }
        let w = self.write_bytes as u64;
        out.mismatch(Mismatch {
            conn: c.id,
            msg: offset / w,
            offset: offset % w,
            in_warmup,
        });
        c.done = true;
    }

    /// Chunks completed when a connection's count went from `before` to `after` bytes: ops,
    /// latencies and the timeline when inside the window.
    fn chunks(&self, c: &mut Conn, before: u64, after: u64, t: &Shared, out: &mut Tally) {
        // The edges as they are now: a loop may stay in one read or write call across the
        // opening.
        let t = Times::now(t);
        let now = now_ns();
        let w = self.write_bytes as u64;
        let k = after / w - before / w;
        if now >= t.open && now < t.close {
            out.n.bytes += after - before;
            if k > 0 {
                out.n.msgs += k;
                let each = now.saturating_sub(c.last_chunk) / k;
                out.latency.record_n(each, k);
                Timeline::of_window(&mut out.timeline, t.open, t.planned).record_n(now, each, k);
            }
        }
        if k > 0 {
            c.last_chunk = now;
        }
    }

    fn read(&self, c: &mut Conn, buf: &mut [u8], t: &Shared, out: &mut Tally) {
        // At most CALL_BYTES per call, so that the loop looks at the window's edges (a
        // source faster than the client would otherwise keep it here).
        let mut moved = 0;
        while moved < CALL_BYTES {
            let n = match sys_read(&c.sock, buf) {
                Ok(0) => {
                    let e = io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed");
                    return self.fail(c, t, out, &e, true);
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return self.fail(c, t, out, &e, true),
            };
            if self.direction == Direction::Up {
                // The sink answers only at the end (or at a wrong byte): nothing is expected.
                let e = match read_trailer(&buf[..n.min(TRAILER_BYTES)]) {
                    Some((tag, off)) if &tag == b"RSBD" => {
                        return self.mismatch(c, t, out, off);
                    }
                    _ => io::Error::other("the sink answered before the end"),
                };
                out.n.malformed += 1;
                return self.fail(c, t, out, &e, true);
            }
            if let Some(i) = first_mismatch(&buf[..n], c.rx) {
                return self.mismatch(c, t, out, c.rx + i as u64);
            }
            let before = c.rx;
            c.rx += n as u64;
            self.chunks(c, before, c.rx, t, out);
            moved += n;
            if n < buf.len() {
                return;
            }
        }
    }

    fn write(&self, c: &mut Conn, src: &[u8], t: &Shared, out: &mut Tally) {
        let w = self.write_bytes as u64;
        // Duplex: at most DUPLEX_WINDOW sent and not yet echoed. At most CALL_BYTES per call
        // (a sink faster than the client would otherwise keep the loop here).
        let mut moved = 0u64;
        while moved < CALL_BYTES as u64 {
            let mut left = w - c.tx % w;
            if self.direction == Direction::Duplex {
                left = left.min(DUPLEX_WINDOW.saturating_sub(c.tx - c.rx));
                if left == 0 {
                    return;
                }
            }
            let at = (c.tx % PATTERN_PERIOD as u64) as usize;
            match sys_write(&c.sock, &src[at..at + left as usize]) {
                Ok(n) => {
                    let before = c.tx;
                    c.tx += n as u64;
                    moved += n as u64;
                    if self.direction == Direction::Up {
                        self.chunks(c, before, c.tx, t, out);
                    }
                    if (n as u64) < left {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return self.fail(c, t, out, &e, false),
            }
        }
    }

    /// `Down`: keeps [`WINDOW_REQUESTS`] requests of `write_bytes` outstanding.
    fn ask(&self, c: &mut Conn, t: &Shared, out: &mut Tally) {
        let w = self.write_bytes as u64;
        let mut reqs = [0u8; 4 * WINDOW_REQUESTS as usize];
        let mut n = 0;
        while c.asked < c.rx + WINDOW_REQUESTS * w && n < reqs.len() {
            reqs[n..n + 4].copy_from_slice(&(w as u32).to_le_bytes());
            n += 4;
            c.asked += w;
        }
        if n == 0 {
            return;
        }
        // 4-byte requests into an empty send buffer: a partial write would mean the server
        // stopped reading for megabytes, which its bounds never do to a reading client.
        match sys_write(&c.sock, &reqs[..n]) {
            Ok(k) if k == n => {}
            Ok(_) => {
                let e = io::Error::other("a request was cut short");
                self.fail(c, t, out, &e, false)
            }
            Err(e) => self.fail(c, t, out, &e, false),
        }
    }

    /// `Up`, after the window: shut each live connection's sending side and read the server's
    /// trailer; every byte sent must have been verified by the server.
    fn trailers(&self, conns: &mut [Conn], ep: &Epoll, out: &mut Tally) -> io::Result<()> {
        let mut waiting = 0;
        for (i, c) in conns.iter_mut().enumerate().filter(|(_, c)| !c.done) {
            let _ = rustix::net::shutdown(&c.sock, rustix::net::Shutdown::Write);
            ep.modify(&c.sock, i as u64, false)?;
            waiting += 1;
        }
        let deadline = now_ns() + TRAILER_WAIT.as_nanos() as u64;
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 64];
        let mut buf = [0u8; 64];
        while waiting > 0 && now_ns() < deadline {
            let n = ep.wait(&mut events, 10)?;
            for ev in &events[..n] {
                let c = &mut conns[ev.u64 as usize];
                if c.done {
                    continue;
                }
                match sys_read(&c.sock, &mut buf) {
                    Ok(0) => {
                        c.done = true;
                        waiting -= 1;
                        match read_trailer(&c.trailer) {
                            Some((tag, v)) if &tag == b"RSOK" && v == c.tx => {
                                out.n.verified_bytes += v
                            }
                            Some((tag, v)) if &tag == b"RSOK" => {
                                out.n.mismatches += 1;
                                out.error(|| {
                                    format!(
                                        "connection {}: the server verified {v} of the {} bytes sent",
                                        c.id, c.tx
                                    )
                                });
                                out.mismatch(Mismatch {
                                    conn: c.id,
                                    msg: v / self.write_bytes as u64,
                                    offset: v % self.write_bytes as u64,
                                    in_warmup: false,
                                });
                            }
                            Some((_, off)) => {
                                out.n.mismatches += 1;
                                out.mismatch(Mismatch {
                                    conn: c.id,
                                    msg: off / self.write_bytes as u64,
                                    offset: off % self.write_bytes as u64,
                                    in_warmup: false,
                                });
                            }
                            None => {
                                out.n.malformed += 1;
                                out.error(|| {
                                    format!("connection {}: no trailer from the sink", c.id)
                                });
                            }
                        }
                    }
                    Ok(k) if c.trailer.len() + k <= TRAILER_BYTES => {
                        c.trailer.extend_from_slice(&buf[..k]);
                    }
                    Ok(_) => {
                        c.done = true;
                        waiting -= 1;
                        out.n.malformed += 1;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => {
                        c.done = true;
                        waiting -= 1;
                        out.n.malformed += 1;
                        out.error(|| format!("connection {}: trailer: {e}", c.id));
                    }
                }
            }
        }
        if waiting > 0 {
            // Bytes the server never confirmed are not verified.
            out.n.malformed += waiting;
            out.error(|| format!("{waiting} connections sent no trailer within {TRAILER_WAIT:?}"));
        }
        Ok(())
    }
}

/// One read(2).
fn sys_read(fd: impl AsFd, buf: &mut [u8]) -> io::Result<usize> {
    Ok(rustix::io::read(fd, buf)?)
}

/// One send(2) (sendto(2) with no address, as glibc's send); MSG_NOSIGNAL: a closed peer is
/// EPIPE.
fn sys_write(fd: impl AsFd, buf: &[u8]) -> io::Result<usize> {
    Ok(rustix::net::send(
        fd,
        buf,
        rustix::net::SendFlags::NOSIGNAL,
    )?)
}

/// A level-triggered epoll set of one thread's connections (each call one epoll_ctl(2)).
struct Epoll(OwnedFd);

impl Epoll {
    fn new() -> io::Result<Epoll> {
        use rustix::event::epoll::{create, CreateFlags};
        Ok(Epoll(create(CreateFlags::CLOEXEC)?))
    }
    fn events(key: u64, out: bool) -> (epoll::EventData, epoll::EventFlags) {
        let flags = if out {
            epoll::EventFlags::IN | epoll::EventFlags::OUT
        } else {
            epoll::EventFlags::IN
        };
        (epoll::EventData::new_u64(key), flags)
    }
    fn add(&self, fd: impl AsFd, key: u64, out: bool) -> io::Result<()> {
        let (data, flags) = Epoll::events(key, out);
        Ok(epoll::add(&self.0, fd, data, flags)?)
    }
    fn modify(&self, fd: impl AsFd, key: u64, out: bool) -> io::Result<()> {
        let (data, flags) = Epoll::events(key, out);
        Ok(epoll::modify(&self.0, fd, data, flags)?)
    }
    /// A stale fd only fails.
    fn del(&self, fd: impl AsFd) {
        let _ = epoll::delete(&self.0, fd);
    }
    /// raw: rustix's epoll wait is epoll_pwait(2), not epoll_wait(2).
    fn wait(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> io::Result<usize> {
        // SAFETY: the buffer holds `len` events.
        let r = unsafe {
            libc::epoll_wait(
                self.0.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as i32,
                timeout_ms,
            )
        };
        match crate::io::sys::cvt(r) {
            Ok(n) => Ok(n as usize),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
            Err(e) => Err(e),
        }
    }
}
