//! The event loops. Each thread owns an epoll instance and its share of the connections, all
//! registered once, edge-triggered, for reading and writing; a connection's state says what to
//! try when it is woken. A loop blocks in `epoll_pwait2` with a nanosecond timeout that honours
//! the window edges, the open-loop schedule and a 100 ms housekeeping tick: no busy loop.

use super::{Config, Edge, Exchange, Fault, Report, Response, CLIENT_BOUND_FRACTION};
use crate::measure::{clock::now_ns, cpu, pin, Hist};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Duration;

const TICK_NS: u64 = 100_000_000;
const EVENTS: usize = 256;
/// Events after which a receive can make progress (data, EOF, or an error to collect).
const READABLE: u32 = (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32;

/// Times every thread shares, set by the coordinating thread once all have connected.
struct Shared {
    barrier: Barrier,
    t_start: AtomicU64,
    t_open: AtomicU64,
    t_close: AtomicU64,
}

/// Runs the load and returns its report. `edge` is called at the opening and the closing of
/// the measured window, from the calling thread, while the load runs.
pub fn run(cfg: &Config, ex: &dyn Exchange, edge: &mut dyn FnMut(Edge)) -> io::Result<Report> {
    if cfg.conns == 0 || cfg.threads == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "conns and threads must be >= 1",
        ));
    }
    crate::io::sys::raise_nofile(cfg.conns as u64 + 64)?;
    let threads = cfg.threads.min(cfg.conns);
    let shared = Shared {
        barrier: Barrier::new(threads + 1),
        t_start: AtomicU64::new(0),
        t_open: AtomicU64::new(0),
        t_close: AtomicU64::new(0),
    };
    let parts: Vec<ThreadOut> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let lo = cfg.conns * t / threads;
                let hi = cfg.conns * (t + 1) / threads;
                let cpu = (!cfg.cpus.is_empty()).then(|| cfg.cpus[t % cfg.cpus.len()]);
                let shared = &shared;
                std::thread::Builder::new()
                    .name(format!("load-{t}"))
                    .spawn_scoped(s, move || worker(cfg, ex, shared, lo..hi, cpu))
                    .expect("spawn load thread")
            })
            .collect();
        shared.barrier.wait(); // every thread has connected (or given up)
        let t_start = now_ns();
        let t_open = t_start + cfg.warmup.as_nanos() as u64;
        let t_close = t_open + cfg.duration.as_nanos() as u64;
        shared.t_start.store(t_start, Ordering::SeqCst);
        shared.t_open.store(t_open, Ordering::SeqCst);
        shared.t_close.store(t_close, Ordering::SeqCst);
        shared.barrier.wait();
        sleep_until(t_open);
        edge(Edge::Open);
        sleep_until(t_close);
        edge(Edge::Close);
        handles
            .into_iter()
            .map(|h| h.join().expect("load thread panicked"))
            .collect()
    });
    let window_ns = shared
        .t_close
        .load(Ordering::SeqCst)
        .saturating_sub(shared.t_open.load(Ordering::SeqCst));
    let cpus_available = threads.min(if cfg.cpus.is_empty() {
        pin::allowed_cpus().len()
    } else {
        let mut c = cfg.cpus.clone();
        c.sort();
        c.dedup();
        c.len()
    });
    let mut r = Report {
        conns_requested: cfg.conns,
        threads,
        rate_per_sec: cfg.rate,
        window_ns,
        msgs: 0,
        bytes: 0,
        rx_bytes: 0,
        non_2xx: 0,
        malformed: 0,
        connect_errors: 0,
        resets: 0,
        io_errors: 0,
        read_errors: 0,
        write_errors: 0,
        mismatches: 0,
        timeouts: 0,
        live_conns: 0,
        first_error: None,
        cpu_ns: 0,
        cpus_available,
        cpu_fraction: 0.0,
        max_thread_fraction: 0.0,
        client_bound: false,
        latency: Hist::new(),
    };
    let mut max_thread = 0u64;
    for p in parts {
        let p = p?;
        r.msgs += p.msgs;
        r.bytes += p.bytes;
        r.rx_bytes += p.rx_bytes;
        r.non_2xx += p.non_2xx;
        r.malformed += p.malformed;
        r.connect_errors += p.connect_errors;
        r.resets += p.resets;
        r.io_errors += p.io_errors;
        r.read_errors += p.read_errors;
        r.write_errors += p.write_errors;
        r.mismatches += p.mismatches;
        r.timeouts += p.timeouts;
        r.live_conns += p.live;
        r.cpu_ns += p.cpu_ns;
        max_thread = max_thread.max(p.cpu_ns);
        r.latency.merge(&p.latency);
        if r.first_error.is_none() {
            r.first_error = p.first_error;
        }
    }
    if window_ns > 0 {
        r.cpu_fraction = r.cpu_ns as f64 / (window_ns as f64 * cpus_available.max(1) as f64);
        r.max_thread_fraction = max_thread as f64 / window_ns as f64;
    }
    r.client_bound =
        r.cpu_fraction >= CLIENT_BOUND_FRACTION || r.max_thread_fraction >= CLIENT_BOUND_FRACTION;
    Ok(r)
}

fn sleep_until(t: u64) {
    loop {
        let now = now_ns();
        if now >= t {
            return;
        }
        std::thread::sleep(Duration::from_nanos(t - now));
    }
}

#[derive(Default)]
struct Counts {
    msgs: u64,
    bytes: u64,
    rx_bytes: u64,
    non_2xx: u64,
    malformed: u64,
    connect_errors: u64,
    resets: u64,
    io_errors: u64,
    read_errors: u64,
    write_errors: u64,
    mismatches: u64,
    timeouts: u64,
    live: u64,
    cpu_ns: u64,
    first_error: Option<String>,
    latency: Hist,
}

type ThreadOut = io::Result<Counts>;

/// What was wrong with a complete response.
#[derive(Clone, Copy)]
enum Bad {
    Mismatch,
    Fault(Fault),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum St {
    Connecting,
    /// Connected, no message outstanding (open loop: waiting for its due time).
    Idle,
    Sending,
    Receiving,
    Dead,
}

struct Conn {
    fd: Option<OwnedFd>,
    /// Index in this thread's connection table.
    idx: usize,
    /// Global connection id (carried in every message).
    id: u32,
    st: St,
    seq: u64,
    out: Vec<u8>,
    sent: usize,
    inb: Vec<u8>,
    /// Latency origin of the outstanding message: first send (closed) or due time (open).
    origin: u64,
    /// Open loop: when the next message is due.
    due: u64,
    timed_out: bool,
    /// Readable while still sending (a large message echoes before it is all sent).
    read_pending: bool,
}

struct Loop<'a> {
    ex: &'a dyn Exchange,
    c: Counts,
    t_open: u64,
    t_close: u64,
    /// Open loop: ns between two messages of one connection.
    interval: Option<u64>,
    due: BinaryHeap<Reverse<(u64, usize)>>,
}

fn worker(
    cfg: &Config,
    ex: &dyn Exchange,
    shared: &Shared,
    ids: std::ops::Range<usize>,
    cpu: Option<u32>,
) -> ThreadOut {
    let mut synced = false;
    let res = worker_inner(cfg, ex, shared, ids, cpu, &mut synced);
    if !synced {
        // Keep the coordinator from waiting forever: an early error still passes both
        // barriers.
        shared.barrier.wait();
        shared.barrier.wait();
    }
    res
}

fn worker_inner(
    cfg: &Config,
    ex: &dyn Exchange,
    shared: &Shared,
    ids: std::ops::Range<usize>,
    cpu: Option<u32>,
    synced: &mut bool,
) -> ThreadOut {
    if let Some(c) = cpu {
        pin::pin_this_thread(c)?;
    }
    // SAFETY: epoll_create1 has no memory preconditions; the fd is owned below.
    let ep = unsafe { OwnedFd::from_raw_fd(cvt(libc::epoll_create1(libc::EPOLL_CLOEXEC))?) };
    let mut lp = Loop {
        ex,
        c: Counts::default(),
        t_open: 0,
        t_close: 0,
        interval: cfg
            .rate
            .map(|r| (cfg.conns as f64 * 1e9 / r.max(1e-9)).max(1.0) as u64),
        due: BinaryHeap::new(),
    };
    let mut conns: Vec<Conn> = Vec::with_capacity(ids.len());
    for (k, id) in ids.clone().enumerate() {
        let mut c = Conn {
            fd: None,
            idx: k,
            id: id as u32,
            st: St::Dead,
            seq: 0,
            out: Vec::new(),
            sent: 0,
            inb: Vec::new(),
            origin: 0,
            due: 0,
            timed_out: false,
            read_pending: false,
        };
        match connect(cfg.target, source_for(cfg, id)) {
            Ok(fd) => {
                let mut ev = libc::epoll_event {
                    events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLET | libc::EPOLLRDHUP)
                        as u32,
                    u64: k as u64,
                };
                // SAFETY: valid epoll fd, socket fd and event.
                cvt(unsafe {
                    libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, fd.as_raw_fd(), &mut ev)
                })?;
                c.fd = Some(fd);
                c.st = St::Connecting;
            }
            Err(e) => lp.fail_connect(&mut c, e),
        }
        conns.push(c);
    }
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS];

    // Connect phase: wait for every pending connect to resolve, up to the connect timeout.
    let deadline = now_ns() + cfg.connect_timeout.as_nanos() as u64;
    let mut pending = conns.iter().filter(|c| c.st == St::Connecting).count();
    while pending > 0 {
        let now = now_ns();
        if now >= deadline {
            break;
        }
        let n = wait(&ep, &mut events, deadline - now)?;
        for ev in &events[..n] {
            let c = &mut conns[ev.u64 as usize];
            if c.st != St::Connecting {
                continue;
            }
            match so_error(c.fd.as_ref().map_or(-1, |f| f.as_raw_fd())) {
                Ok(()) => c.st = St::Idle,
                Err(e) => lp.fail_connect(c, e),
            }
            pending -= 1;
        }
    }
    for c in conns.iter_mut().filter(|c| c.st == St::Connecting) {
        lp.fail_connect(
            c,
            io::Error::new(io::ErrorKind::TimedOut, "connect timed out"),
        );
    }

    shared.barrier.wait();
    shared.barrier.wait();
    *synced = true;
    let t_start = shared.t_start.load(Ordering::SeqCst);
    lp.t_open = shared.t_open.load(Ordering::SeqCst);
    lp.t_close = shared.t_close.load(Ordering::SeqCst);

    // Traffic: closed loop sends now; open loop schedules message 0 of connection `id` at
    // t_start + id/rate, so the whole schedule is evenly spread.
    for c in conns.iter_mut().filter(|c| c.st == St::Idle) {
        match lp.interval {
            None => lp.start(c, t_start),
            Some(iv) => {
                c.due = t_start + (iv as u128 * c.id as u128 / cfg.conns as u128) as u64;
                lp.due.push(Reverse((c.due, c.idx)));
            }
        }
    }
    let mut cpu0: Option<u64> = None;
    let mut next_tick = t_start + TICK_NS;
    let msg_timeout = cfg.msg_timeout.as_nanos() as u64;
    loop {
        let mut now = now_ns();
        if cpu0.is_none() && now >= lp.t_open {
            cpu0 = Some(cpu::this_thread().total_ns);
            now = now_ns();
        }
        if now >= lp.t_close {
            break;
        }
        while let Some(&Reverse((due, k))) = lp.due.peek() {
            if due > now {
                break;
            }
            lp.due.pop();
            if conns[k].st == St::Idle {
                lp.start(&mut conns[k], due);
            }
        }
        if now >= next_tick {
            next_tick = now + TICK_NS;
            for c in conns.iter_mut() {
                if matches!(c.st, St::Sending | St::Receiving)
                    && !c.timed_out
                    && now.saturating_sub(c.origin) > msg_timeout
                {
                    c.timed_out = true;
                    lp.c.timeouts += 1;
                }
            }
        }
        let mut until = lp.t_close.min(next_tick);
        if cpu0.is_none() {
            until = until.min(lp.t_open);
        }
        if let Some(&Reverse((due, _))) = lp.due.peek() {
            until = until.min(due);
        }
        let n = wait(&ep, &mut events, until.saturating_sub(now))?;
        for ev in &events[..n] {
            let c = &mut conns[ev.u64 as usize];
            let readable = ev.events & READABLE != 0;
            match c.st {
                St::Sending if readable => c.read_pending = true,
                // Write space came back while waiting for the echo: nothing to do, and a
                // recv would only return EAGAIN.
                St::Receiving if !readable => continue,
                _ => {}
            }
            lp.drive(c);
        }
    }
    let end = cpu::this_thread().total_ns;
    lp.c.cpu_ns = end.saturating_sub(cpu0.unwrap_or(end));
    lp.c.live = conns
        .iter()
        .filter(|c| !matches!(c.st, St::Dead | St::Connecting))
        .count() as u64;
    Ok(lp.c)
}

impl Loop<'_> {
    fn fail_connect(&mut self, c: &mut Conn, e: io::Error) {
        self.c.connect_errors += 1;
        if self.c.first_error.is_none() {
            self.c.first_error = Some(format!("connect: {e}"));
        }
        c.st = St::Dead;
        c.fd = None;
    }

    fn fail_io(&mut self, c: &mut Conn, e: Option<io::Error>, writing: bool) {
        if writing {
            self.c.write_errors += 1;
        } else {
            self.c.read_errors += 1;
        }
        match &e {
            None => self.c.resets += 1, // EOF: the server closed it
            Some(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ECONNRESET | libc::EPIPE | libc::ECONNABORTED)
                ) =>
            {
                self.c.resets += 1
            }
            Some(_) => self.c.io_errors += 1,
        }
        if self.c.first_error.is_none() {
            self.c.first_error = Some(match e {
                None => "connection closed by the server".into(),
                Some(e) => format!("socket: {e}"),
            });
        }
        c.st = St::Dead;
        c.fd = None; // closing removes it from the epoll set
    }

    /// Starts the connection's next message with latency measured from `origin`.
    fn start(&mut self, c: &mut Conn, origin: u64) {
        c.out.clear();
        self.ex.request(c.id, c.seq, &mut c.out);
        c.sent = 0;
        c.origin = origin;
        c.timed_out = false;
        c.read_pending = false;
        c.st = St::Sending;
        self.drive(c);
    }

    /// Does whatever the connection's state allows until it would block.
    fn drive(&mut self, c: &mut Conn) {
        loop {
            let Some(fd) = c.fd.as_ref().map(|f| f.as_raw_fd()) else {
                return;
            };
            match c.st {
                St::Sending => {
                    // SAFETY: the slice is valid for reads of its remaining length.
                    let r = unsafe {
                        libc::send(
                            fd,
                            c.out[c.sent..].as_ptr().cast(),
                            c.out.len() - c.sent,
                            libc::MSG_NOSIGNAL,
                        )
                    };
                    if r < 0 {
                        let e = io::Error::last_os_error();
                        match e.kind() {
                            io::ErrorKind::WouldBlock => return,
                            io::ErrorKind::Interrupted => continue,
                            _ => return self.fail_io(c, Some(e), true),
                        }
                    }
                    c.sent += r as usize;
                    if c.sent == c.out.len() {
                        c.st = St::Receiving;
                        if !c.read_pending && c.inb.is_empty() {
                            return; // the echo's arrival will wake this connection
                        }
                    }
                }
                St::Receiving => {
                    let need = match self.ex.response(&c.out, &c.inb) {
                        Response::NeedMore(n) => n,
                        Response::Complete { len, valid } => {
                            self.complete(c, len, if valid { None } else { Some(Bad::Mismatch) });
                            if c.st != St::Sending {
                                return;
                            }
                            continue;
                        }
                        Response::Failed { len, kind } => {
                            self.complete(c, len, Some(Bad::Fault(kind)));
                            if c.st != St::Sending {
                                return;
                            }
                            continue;
                        }
                        Response::Unreadable => return self.fail_unreadable(c),
                    };
                    let have = c.inb.len();
                    c.inb.reserve(need);
                    // SAFETY: `need` bytes of spare capacity were reserved just above.
                    let r = unsafe { libc::recv(fd, c.inb.as_mut_ptr().add(have).cast(), need, 0) };
                    if r < 0 {
                        let e = io::Error::last_os_error();
                        match e.kind() {
                            io::ErrorKind::WouldBlock => return,
                            io::ErrorKind::Interrupted => continue,
                            _ => return self.fail_io(c, Some(e), false),
                        }
                    }
                    if r == 0 {
                        return self.fail_io(c, None, false);
                    }
                    // SAFETY: the kernel initialized `r` bytes after `have`.
                    unsafe { c.inb.set_len(have + r as usize) };
                }
                St::Idle | St::Connecting | St::Dead => return,
            }
        }
    }

    /// A response that cannot be read: count it, close the connection (where the next
    /// response would start is unknown).
    fn fail_unreadable(&mut self, c: &mut Conn) {
        if now_ns() < self.t_close {
            self.c.malformed += 1;
        }
        if self.c.first_error.is_none() {
            let head = &c.inb[..c.inb.len().min(80)];
            self.c.first_error = Some(format!(
                "malformed response: {:?}",
                String::from_utf8_lossy(head)
            ));
        }
        c.st = St::Dead;
        c.fd = None;
    }

    /// Counts an invalid response by kind (whole run: never hidden, even in the warm-up).
    fn count_bad(&mut self, bad: Bad) {
        match bad {
            Bad::Mismatch => self.c.mismatches += 1,
            Bad::Fault(Fault::Non2xx) => self.c.non_2xx += 1,
            Bad::Fault(Fault::Malformed) => self.c.malformed += 1,
        }
    }

    /// A whole response arrived: count it, then start or schedule the next message.
    fn complete(&mut self, c: &mut Conn, len: usize, bad: Option<Bad>) {
        let now = now_ns();
        if now >= self.t_open && now < self.t_close {
            self.c.msgs += 1;
            self.c.bytes += c.out.len() as u64;
            self.c.rx_bytes += len as u64;
            self.c.latency.record(now.saturating_sub(c.origin));
            if let Some(b) = bad {
                self.count_bad(b);
            }
        } else if let (Some(b), true) = (bad, now < self.t_open) {
            self.count_bad(b);
        }
        c.inb.drain(..len);
        c.seq += 1;
        c.st = St::Idle;
        match self.interval {
            None => self.start(c, now),
            Some(iv) => {
                c.due += iv;
                if c.due <= now {
                    self.start(c, c.due);
                } else {
                    self.due.push(Reverse((c.due, c.idx)));
                }
            }
        }
    }
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    crate::io::sys::cvt(r)
}

/// Loopback targets with more than `conns_per_source` connections (default
/// CONNS_PER_SOURCE): connection `id` binds 127.0.0.(1 + id / conns_per_source).
fn source_for(cfg: &Config, id: usize) -> Option<Ipv4Addr> {
    let per = cfg.conns_per_source.max(1);
    match cfg.target.ip() {
        IpAddr::V4(ip) if ip.is_loopback() && cfg.conns > per => {
            let k = 1 + id / per;
            Some(Ipv4Addr::new(127, 0, 0, k.min(254) as u8))
        }
        _ => None,
    }
}

fn sockaddr(a: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; zero is a valid start.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match a {
        SocketAddr::V4(v4) => {
            // SAFETY: sockaddr_storage is large enough and aligned for sockaddr_in.
            let sin = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in) };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = v4.port().to_be();
            sin.sin_addr.s_addr = u32::from_ne_bytes(v4.ip().octets());
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in6) };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = v6.port().to_be();
            sin6.sin6_addr.s6_addr = v6.ip().octets();
            sin6.sin6_scope_id = v6.scope_id();
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// A non-blocking socket with TCP_NODELAY whose connect is under way.
fn connect(target: SocketAddr, source: Option<Ipv4Addr>) -> io::Result<OwnedFd> {
    let family = if target.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain socket creation; the fd is owned immediately.
    let fd = unsafe {
        OwnedFd::from_raw_fd(cvt(libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        ))?)
    };
    let one: libc::c_int = 1;
    let setopt = |level, name| {
        // SAFETY: valid fd and a pointer to an int of the stated size.
        cvt(unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                level,
                name,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        })
    };
    setopt(libc::IPPROTO_TCP, libc::TCP_NODELAY)?;
    if let Some(src) = source {
        // The port is picked at connect time from the whole 4-tuple, not at bind time.
        setopt(libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT)?;
        let (ss, len) = sockaddr(SocketAddr::new(IpAddr::V4(src), 0));
        // SAFETY: valid fd and address of the stated length.
        cvt(unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &ss as *const _ as *const libc::sockaddr,
                len,
            )
        })?;
    }
    let (ss, len) = sockaddr(target);
    // SAFETY: valid fd and address of the stated length.
    let r = unsafe {
        libc::connect(
            fd.as_raw_fd(),
            &ss as *const _ as *const libc::sockaddr,
            len,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    Ok(fd)
}

fn so_error(fd: RawFd) -> io::Result<()> {
    let mut err: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: valid pointers to an int and its length.
    cvt(unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&mut err as *mut libc::c_int).cast(),
            &mut len,
        )
    })?;
    if err == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(err))
    }
}

/// epoll_pwait2 with a nanosecond timeout (falls back to epoll_wait, rounded up to 1 ms).
fn wait(ep: &OwnedFd, events: &mut [libc::epoll_event], timeout_ns: u64) -> io::Result<usize> {
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    {
        // SAFETY: valid epoll fd, event buffer of the stated length, timespec and no sigmask.
        let r = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                ep.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                &ts as *const libc::timespec,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => Ok(0),
            Some(libc::ENOSYS) => {
                let ms = timeout_ns.div_ceil(1_000_000).min(i32::MAX as u64) as libc::c_int;
                // SAFETY: as above.
                let r = unsafe {
                    libc::epoll_wait(
                        ep.as_raw_fd(),
                        events.as_mut_ptr(),
                        events.len() as libc::c_int,
                        ms,
                    )
                };
                if r < 0 {
                    let e = io::Error::last_os_error();
                    if e.kind() == io::ErrorKind::Interrupted {
                        Ok(0)
                    } else {
                        Err(e)
                    }
                } else {
                    Ok(r as usize)
                }
            }
            _ => Err(e),
        }
    }
}
