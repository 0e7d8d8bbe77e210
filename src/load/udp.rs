//! The UDP load (`udp.echo`): `Config::conns` flows, each a connected UDP socket of its own
//! (the kernel drops datagrams from any other source before the flow sees them), spread over
//! the load threads as the message engine's connections are, each thread one level-triggered
//! epoll loop over its flows woken by `epoll_pwait2` at its next due time.
//!
//! - Closed loop: each flow keeps [`Udp::window`] datagrams outstanding; an echo frees its slot
//!   and the next datagram goes out. Latency runs from the send. With [`Udp::segments`] above
//!   1 (`udp.echo_gso`) a flow sends a burst of that many datagrams in one sendmsg with
//!   UDP_SEGMENT whenever the window has room for all of them; each is still its own
//!   sequence, verified and lost apart.
//! - Open loop (`Config::rate`): datagram k of flow f of F is due at `start + (k F + f) / rate`
//!   and sent then whatever is outstanding; latency runs from its due time.
//!
//! Every datagram carries its flow, sequence and pattern bytes (`proto::udp`); every echo is
//! verified whole. Each flow keeps a fixed ring of [`SLOTS`] slots (the memory is bounded by
//! flows x slots, whatever the server or the network does): slot `seq % SLOTS` holds the
//! datagram's send time and state. A datagram outstanding longer than [`Udp::loss_timeout`],
//! or still outstanding when its slot is needed again, is **lost**: counted once
//! (`dgram_lost`), never an op. An echo is an op only when it verified, its datagram was
//! outstanding, and it arrived inside the window. The other outcomes are counted apart: an
//! echo of a datagram already declared lost (`dgram_late`), an echo of one already echoed
//! (`dgram_duplicates`), one arriving after a later sequence of its flow (`dgram_reordered`, an
//! op all the same), a sequence never sent (`unsolicited`: the run fails), and wrong bytes
//! (`mismatches`: the run fails). A datagram the client's kernel refused to send in an open
//! loop (`dgram_send_failed`) is the client's loss, named apart from the server's. Losses and
//! sends are counted when they happen (a loss when it is declared), window and warm-up apart.

use super::tally::Tally;
use super::window::{epoll_wait_ns, run_threads, Coordinated, Shared, WARM_TICK_NS};
use super::{Config, Edge, Exchange, Mismatch, Report, Response};
use crate::io::epoll::{Ctl, Epoll};
use crate::measure::clock::now_ns;
use crate::measure::timeline::Timeline;
use crate::measure::{cpu, pin};
use crate::proto::udp::{self, Bad, HEADER, MAX_DATAGRAM};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Slots per flow: the most datagrams a flow tracks at once.
pub(crate) const SLOTS: usize = 64;
/// How often a thread looks for datagrams outstanding past the loss timeout.
const LOSS_SCAN_NS: u64 = 2_000_000;
/// The default loss timeout.
pub(crate) const LOSS_TIMEOUT: Duration = Duration::from_millis(50);

/// The most datagrams one burst carries ([`Udp::segments`]): the kernel's UDP_MAX_SEGMENTS
/// before 6.11.
pub const MAX_SEGMENTS: u32 = 64;
/// The most bytes one burst carries: a UDP payload's limit, with room for the headers.
pub const MAX_BURST_BYTES: usize = 65_000;

/// The UDP echo load of one run.
pub struct Udp {
    pub datagram_bytes: usize,
    /// Closed loop: datagrams outstanding per flow (1..=SLOTS/2).
    pub window: u32,
    /// Closed loop: datagrams a flow sends at once, in one sendmsg with UDP_SEGMENT when above
    /// 1 (`udp.echo_gso`: a run of same-size datagrams to one destination); the flow sends
    /// when `window - outstanding` has room for a whole burst. 1: one send(2) per datagram.
    pub segments: u32,
    /// A datagram not echoed within this is lost.
    pub loss_timeout: Duration,
}

impl Exchange for Udp {
    fn request(&self, _conn: u32, _seq: u64, _out: &mut Vec<u8>) {}
    fn response(&self, _sent: &[u8], _got: &[u8]) -> Response {
        Response::Unreadable("UDP echo has no byte-stream responses")
    }
    fn udp(&self) -> Option<&Udp> {
        Some(self)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Empty,
    Out,
    Done,
    Lost,
}

#[derive(Clone, Copy)]
struct Slot {
    seq: u64,
    /// Sent (closed loop) or due (open loop), ns.
    at: u64,
    state: State,
}

struct Flow {
    sock: UdpSocket,
    id: u32,
    next_seq: u64,
    outstanding: u32,
    highest: Option<u64>,
    slots: Box<[Slot; SLOTS]>,
    /// Counted in `Shared::unanswered`: no echo yet.
    waiting: bool,
}

fn bad_input(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, why)
}

/// What one flow's datagram became when its echo arrived.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Op { latency_from: u64, reordered: bool },
    Late,
    Duplicate,
    Unsolicited,
}

impl Flow {
    /// Flow `id` on its connected socket, nothing sent yet, every slot empty.
    fn new(sock: UdpSocket, id: u32) -> Flow {
        Flow {
            sock,
            id,
            next_seq: 0,
            outstanding: 0,
            highest: None,
            slots: Box::new(
                [Slot {
                    seq: 0,
                    at: 0,
                    state: State::Empty,
                }; SLOTS],
            ),
            waiting: true,
        }
    }

    /// Judges the echo of `seq` (verified) against the flow's slots.
    fn on_echo(&mut self, seq: u64) -> Outcome {
        if seq >= self.next_seq {
            return Outcome::Unsolicited;
        }
        let s = &mut self.slots[(seq % SLOTS as u64) as usize];
        if s.seq != seq || s.state == State::Empty {
            // Older than the slot's datagram: it was lost (evicted) before this came.
            return Outcome::Late;
        }
        match s.state {
            State::Out => {
                s.state = State::Done;
                self.outstanding -= 1;
                let reordered = self.highest.is_some_and(|h| seq < h);
                self.highest = Some(self.highest.map_or(seq, |h| h.max(seq)));
                Outcome::Op {
                    latency_from: s.at,
                    reordered,
                }
            }
            State::Done => Outcome::Duplicate,
            State::Lost | State::Empty => Outcome::Late,
        }
    }

    /// Takes the slot of the next datagram, due or sent `at`; returns whether a datagram
    /// still outstanding there was evicted (lost).
    fn take_slot(&mut self, at: u64) -> bool {
        let seq = self.next_seq;
        let s = &mut self.slots[(seq % SLOTS as u64) as usize];
        let evicted = s.state == State::Out;
        *s = Slot {
            seq,
            at,
            state: State::Out,
        };
        self.next_seq += 1;
        // An evicted datagram is lost; the new one takes its place in the count.
        if !evicted {
            self.outstanding += 1;
        }
        evicted
    }

    /// Declares lost every datagram outstanding since before `cutoff`; returns how many.
    fn expire(&mut self, cutoff: u64) -> u64 {
        let mut n = 0;
        for s in self.slots.iter_mut() {
            if s.state == State::Out && s.at < cutoff {
                s.state = State::Lost;
                n += 1;
            }
        }
        self.outstanding -= n as u32;
        n
    }
}

impl Udp {
    /// Runs the load; see [`super::run`] for `edge`.
    pub fn run(&self, cfg: &Config, edge: &mut dyn FnMut(Edge)) -> io::Result<Report> {
        if cfg.conns == 0 || cfg.threads == 0 || cfg.conns > u32::MAX as usize {
            return Err(bad_input(format!(
                "flows and threads must be >= 1 (given {} flows, {} threads)",
                cfg.conns, cfg.threads
            )));
        }
        if !(HEADER..=MAX_DATAGRAM).contains(&self.datagram_bytes) {
            return Err(bad_input(format!(
                "datagram bytes must be {HEADER}..={MAX_DATAGRAM} (given {})",
                self.datagram_bytes
            )));
        }
        if self.window == 0 || self.window as usize > SLOTS / 2 {
            return Err(bad_input(format!(
                "the window must be 1..={} datagrams per flow (given {})",
                SLOTS / 2,
                self.window
            )));
        }
        let burst = self.segments as usize * self.datagram_bytes;
        if !(1..=MAX_SEGMENTS).contains(&self.segments)
            || self.segments > self.window
            || burst > MAX_BURST_BYTES
            || (self.segments > 1 && cfg.rate.is_some())
        {
            return Err(bad_input(format!(
                "a burst must be 1..={MAX_SEGMENTS} datagrams, at most the window ({}) and \
                 {MAX_BURST_BYTES} bytes, and above 1 in the closed loop only (given {} of {} \
                 bytes{})",
                self.window,
                self.segments,
                self.datagram_bytes,
                if cfg.rate.is_some() {
                    ", open loop"
                } else {
                    ""
                }
            )));
        }
        if let Some(r) = cfg.rate.filter(|r| !(r.is_finite() && *r > 0.0)) {
            return Err(bad_input(format!("the rate must be above 0 (given {r})")));
        }
        crate::io::sys::raise_nofile(cfg.conns as u64 + 64)?;
        let threads = cfg.threads.min(cfg.conns);
        let shared = Shared::new(threads);
        let (parts, coord): (Vec<io::Result<Tally>>, _) =
            run_threads(cfg, &shared, edge, threads, "udp", |t, cpu, synced| {
                self.worker(cfg, &shared, (t, threads), cpu, synced)
            });
        let window_ns = Coordinated::window_ns(&shared);
        let mut r = Report::empty(cfg, threads, cfg.rate, window_ns, coord.interrupted);
        (r.warmup_ns, r.n.unsettled_conns) = (coord.warmup_ns, coord.unsettled);
        r.add_tallies(parts.into_iter().collect::<io::Result<Vec<Tally>>>()?);
        Ok(r)
    }

    /// Load thread `t` of `threads`: opens its flows, passes the barriers, then sends,
    /// expires and receives until the window closes.
    fn worker(
        &self,
        cfg: &Config,
        shared: &Shared,
        (t, threads): (usize, usize),
        cpu: Option<u32>,
        synced: &mut bool,
    ) -> io::Result<Tally> {
        if let Some(c) = cpu {
            pin::pin_this_thread(c)?;
        }
        let mut part = Tally::default();
        let mut flows = open_flows(cfg, (t, threads), &mut part);
        let ep = Epoll::new(crate::model::Trigger::Level)?;
        for (i, f) in flows.iter().enumerate() {
            ep.ctl(Ctl::Add, &f.sock, libc::EPOLLIN as u32, i as u64)?;
        }
        shared
            .unanswered
            .fetch_add(flows.len() as u64, Ordering::SeqCst);
        shared.barrier.wait();
        shared.barrier.wait();
        *synced = true;
        let sched = cfg.rate.map(|r| Schedule {
            start: shared.t_start.load(Ordering::SeqCst),
            step_ns: 1e9 / r,
            flows: cfg.conns as f64,
        });
        let timeout_ns = self.loss_timeout.as_nanos() as u64;
        let mut out = vec![0u8; MAX_DATAGRAM * self.segments.max(1) as usize];
        let mut buf = vec![0u8; MAX_DATAGRAM + 1];
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
        let mut cpu0 = None;
        let mut next_scan = 0u64;
        loop {
            let (open, planned, close) = shared.edges_planned();
            let mut now = now_ns();
            if cpu0.is_none() && now >= open {
                cpu0 = Some(cpu::this_thread_ns());
                Timeline::of_window(&mut part.timeline, open, planned);
                now = now_ns();
            }
            if now >= close {
                break;
            }
            let mut next = close.min(now + 10_000_000);
            if cpu0.is_none() {
                next = next.min(open).min(now + WARM_TICK_NS);
            }
            // Losses: datagrams outstanding past the timeout.
            if now >= next_scan {
                let cutoff = now.saturating_sub(timeout_ns);
                for f in flows.iter_mut() {
                    let lost = f.expire(cutoff);
                    count_lost(&mut part, lost, within((open, close), now));
                }
                next_scan = now + LOSS_SCAN_NS;
            }
            next = next.min(next_scan);
            for f in flows.iter_mut() {
                let wants = match &sched {
                    None => self.send_window(f, now, &mut out, &mut part, (open, close)),
                    Some(sc) => self.send_due(f, sc, now, &mut out, &mut part, (open, close)),
                };
                next = next.min(wants);
            }
            let got = epoll_wait_ns(&ep, &mut events, next.saturating_sub(now_ns()));
            let edges = shared.edges_planned();
            for ev in &events[..got] {
                let f = &mut flows[ev.u64 as usize];
                self.drain(f, &mut buf, edges, &mut part, shared);
            }
        }
        part.n.cpu_ns = cpu0.map_or(0, |c0| cpu::this_thread_ns().saturating_sub(c0));
        part.n.live_conns = flows.len() as u64;
        Ok(part)
    }

    /// The closed loop's send path: bursts while the flow's window has room. Returns when the
    /// flow next needs a turn (soon after a send the kernel refused; `u64::MAX`: on an echo).
    #[inline]
    fn send_window(
        &self,
        f: &mut Flow,
        now: u64,
        out: &mut [u8],
        part: &mut Tally,
        win: (u64, u64),
    ) -> u64 {
        let (len, burst) = (self.datagram_bytes, self.segments.max(1));
        while f.outstanding + burst <= self.window {
            let at = now_ns();
            for k in 0..burst as usize {
                let seq = f.next_seq + k as u64;
                udp::encode(f.id, seq, len, &mut out[k * len..(k + 1) * len]);
            }
            let sent = match burst {
                1 => f.sock.send(&out[..len]).map(|_| ()),
                _ => send_burst(&f.sock, &out[..len * burst as usize], len),
            };
            match sent {
                Ok(()) => {
                    for _ in 0..burst {
                        let evicted = f.take_slot(at);
                        count_lost(part, u64::from(evicted), within(win, at));
                        count_sent(part, within(win, at));
                    }
                }
                Err(e) => {
                    // Not sent: tried again shortly.
                    send_error(part, &e, within(win, at));
                    return now + 50_000;
                }
            }
        }
        u64::MAX
    }

    /// The open loop's send path: every datagram due by `now`, each once (one the kernel
    /// refused is the client's loss, `dgram_send_failed`). Returns when the next is due.
    #[inline]
    fn send_due(
        &self,
        f: &mut Flow,
        sched: &Schedule,
        now: u64,
        out: &mut [u8],
        part: &mut Tally,
        win: (u64, u64),
    ) -> u64 {
        let len = self.datagram_bytes;
        loop {
            let d = sched.due(f.id, f.next_seq);
            if d > now {
                return d;
            }
            udp::encode(f.id, f.next_seq, len, out);
            match f.sock.send(&out[..len]) {
                Ok(_) => {
                    let evicted = f.take_slot(d);
                    count_lost(part, u64::from(evicted), within(win, d));
                    count_sent(part, within(win, d));
                }
                Err(e) => {
                    // Open loop: its time is gone; the client's loss, named so.
                    f.next_seq += 1;
                    send_error(part, &e, within(win, d));
                    if within(win, d) {
                        part.dgram.dgram_send_failed += 1;
                    }
                }
            }
        }
    }

    /// The receive path: drains the flow's socket (a level-triggered wait reports it again
    /// otherwise), at most [`SLOTS`] datagrams a turn, each judged by [`Udp::on_datagram`].
    #[inline]
    fn drain(
        &self,
        f: &mut Flow,
        buf: &mut [u8],
        edges: (u64, u64, u64),
        part: &mut Tally,
        shared: &Shared,
    ) {
        for _ in 0..SLOTS {
            // raw: recv(2) with MSG_TRUNC, to see a datagram's real length.
            // SAFETY: valid fd and buffer of the stated size.
            let r = unsafe {
                libc::recv(
                    f.sock.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_TRUNC | libc::MSG_DONTWAIT,
                )
            };
            let t = now_ns();
            let win = within((edges.0, edges.2), t);
            if r < 0 {
                let e = io::Error::last_os_error();
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) {
                    break;
                }
                // A queued ICMP error (the server's port closed).
                if win {
                    part.n.io_errors += 1;
                    part.n.read_errors += 1;
                } else {
                    part.n.warmup_errors += 1;
                }
                part.error(|| format!("flow {}: {e}", f.id));
                break;
            }
            let d = &buf[..(r as usize).min(buf.len())];
            self.on_datagram(f, d, t, edges, part, shared);
        }
    }

    /// Verifies one echo received at `t` and counts it: an op, late, a duplicate, a
    /// mismatch or unsolicited.
    #[inline]
    fn on_datagram(
        &self,
        f: &mut Flow,
        d: &[u8],
        t: u64,
        (open, planned, close): (u64, u64, u64),
        part: &mut Tally,
        shared: &Shared,
    ) {
        let (len, win) = (self.datagram_bytes, within((open, close), t));
        let seq = match udp::verify(f.id, len, d) {
            Ok(seq) => seq,
            Err(b) => {
                let offset = match b {
                    Bad::Length { got } => got.min(len) as u64,
                    Bad::Byte { offset } => offset as u64,
                };
                return mismatch(part, f.id, t, offset, win, &b);
            }
        };
        match f.on_echo(seq) {
            Outcome::Op {
                latency_from,
                reordered,
            } => {
                if std::mem::take(&mut f.waiting) {
                    shared.unanswered.fetch_sub(1, Ordering::SeqCst);
                }
                if win {
                    part.n.msgs += 1;
                    part.n.bytes += len as u64;
                    part.n.rx_bytes += len as u64;
                    part.dgram.dgram_reordered += u64::from(reordered);
                    let ns = t.saturating_sub(latency_from);
                    part.latency.record(ns);
                    Timeline::of_window(&mut part.timeline, open, planned).record(t, ns);
                }
            }
            Outcome::Late => part.dgram.dgram_late += u64::from(win),
            Outcome::Duplicate => part.dgram.dgram_duplicates += u64::from(win),
            Outcome::Unsolicited => {
                match win {
                    true => part.n.unsolicited += 1,
                    false => {
                        part.n.warmup_errors += 1;
                        part.n.warmup_invalid += 1;
                    }
                }
                part.error(|| format!("flow {}: an echo of sequence {seq}, never sent", f.id));
            }
        }
    }
}

/// The open-loop schedule: flow i's datagram k is due at start + (k * N + i) / rate, N the
/// flows over all threads.
struct Schedule {
    start: u64,
    step_ns: f64,
    flows: f64,
}

impl Schedule {
    #[inline]
    fn due(&self, id: u32, k: u64) -> u64 {
        self.start + ((k as f64 * self.flows + id as f64) * self.step_ns) as u64
    }
}

/// Whether `t` is inside the window `(open, close)`.
#[inline]
fn within((open, close): (u64, u64), t: u64) -> bool {
    t >= open && t < close
}

/// Opens thread `t`'s share of the flows, each a connected non-blocking socket; one that
/// fails is counted (`connect_errors`) and left out.
fn open_flows(cfg: &Config, (t, threads): (usize, usize), part: &mut Tally) -> Vec<Flow> {
    let n = cfg.conns;
    let local: SocketAddr = match cfg.target {
        SocketAddr::V4(_) => "0.0.0.0:0".parse().expect("address"),
        SocketAddr::V6(_) => "[::]:0".parse().expect("address"),
    };
    let mut flows = Vec::new();
    for i in n * t / threads..n * (t + 1) / threads {
        let sock = UdpSocket::bind(local)
            .and_then(|s| s.connect(cfg.target).map(|()| s))
            .and_then(|s| s.set_nonblocking(true).map(|()| s));
        match sock {
            Ok(sock) => flows.push(Flow::new(sock, i as u32)),
            Err(e) => {
                part.n.connect_errors += 1;
                part.error(|| format!("flow {i}: {e}"));
            }
        }
    }
    flows
}

/// One sendmsg(2) of a burst on a connected flow socket, cut into datagrams of `seg` bytes
/// by the kernel (UDP_SEGMENT).
fn send_burst(sock: &UdpSocket, burst: &[u8], seg: usize) -> io::Result<()> {
    let mut ctrl = crate::io::udp_gso::Ctrl::ZERO;
    let mut iov = libc::iovec {
        iov_base: burst.as_ptr() as *mut libc::c_void,
        iov_len: burst.len(),
    };
    // SAFETY: plain data; zeroes are a valid msghdr (no name: the socket is connected).
    let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
    h.msg_iov = &mut iov;
    h.msg_iovlen = 1;
    h.msg_controllen = crate::io::udp_gso::put_segment(&mut ctrl, seg as u16) as _;
    h.msg_control = ctrl.0.as_mut_ptr().cast();
    // raw: sendmsg(2) with a control message.
    // SAFETY: the header points at live buffers of the stated sizes.
    let r = unsafe { libc::sendmsg(sock.as_raw_fd(), &h, libc::MSG_DONTWAIT) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn count_lost(part: &mut Tally, n: u64, in_window: bool) {
    if n == 0 {
        return;
    }
    match in_window {
        true => part.dgram.dgram_lost += n,
        false => part.dgram.dgram_warmup_lost += n,
    }
}

fn count_sent(part: &mut Tally, in_window: bool) {
    if in_window {
        part.dgram.dgram_sent += 1;
    }
}

fn send_error(part: &mut Tally, e: &io::Error, in_window: bool) {
    let transient = matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    ) || e.raw_os_error() == Some(libc::ENOBUFS);
    if transient {
        return;
    }
    match in_window {
        true => {
            part.n.io_errors += 1;
            part.n.write_errors += 1;
        }
        false => part.n.warmup_errors += 1,
    }
    part.error(|| format!("send: {e}"));
}

fn mismatch(part: &mut Tally, flow: u32, t: u64, offset: u64, win: bool, b: &Bad) {
    match win {
        true => part.n.mismatches += 1,
        false => {
            part.n.warmup_errors += 1;
            part.n.warmup_invalid += 1;
        }
    }
    part.mismatch_at(
        t,
        Mismatch {
            conn: flow,
            msg: 0,
            offset,
            in_warmup: !win,
        },
    );
    part.error(|| format!("flow {flow}: an echo that did not verify ({b:?})"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow() -> Flow {
        Flow::new(UdpSocket::bind("127.0.0.1:0").unwrap(), 1)
    }

    #[test]
    fn each_echo_is_an_op_once_and_the_rest_are_named() {
        let mut f = flow();
        for at in [10, 20, 30] {
            assert!(!f.take_slot(at));
        }
        assert_eq!(f.outstanding, 3);
        assert_eq!(
            f.on_echo(1),
            Outcome::Op {
                latency_from: 20,
                reordered: false
            }
        );
        // Sequence 0 after 1: reordered, still an op.
        assert_eq!(
            f.on_echo(0),
            Outcome::Op {
                latency_from: 10,
                reordered: true
            }
        );
        assert_eq!(f.on_echo(1), Outcome::Duplicate);
        assert_eq!(f.on_echo(3), Outcome::Unsolicited, "never sent");
        // Sequence 2 expires: lost once, and its late echo is not an op.
        assert_eq!(f.expire(31), 1);
        assert_eq!(f.expire(1_000), 0, "counted once");
        assert_eq!(f.on_echo(2), Outcome::Late);
        assert_eq!(f.outstanding, 0);
    }

    #[test]
    fn a_slot_needed_again_evicts_its_datagram_as_lost() {
        let mut f = flow();
        for k in 0..SLOTS as u64 {
            assert!(!f.take_slot(k));
        }
        assert!(f.take_slot(99), "sequence 0 still outstanding");
        assert_eq!(f.outstanding, SLOTS as u32);
        assert_eq!(f.on_echo(0), Outcome::Late);
        assert!(matches!(f.on_echo(SLOTS as u64), Outcome::Op { .. }));
    }
}
