//! The epoll broker (`ringside serve --protocol pubsub` on epoll-lt, epoll-et and, waiting
//! through a ring, uring-epollwait): one thread,
//! non-blocking sockets, the one `proto::pubsub::Hub` of this loop.
//!
//! A connection's bytes go through `Hub::on_bytes`; the subscribers it woke are sent their
//! queued bytes at once (`send_queued`, the one "send this connection's queue and arm EPOLLOUT
//! for the rest" path), the ones whose queue would overflow are closed (`slow_disconnects`).
//! Level-triggered reads once per event, edge-triggered until EAGAIN, as the echo loop does.
//! A publisher is never paused: the bound is on each subscriber's queue, so the server's
//! memory stays within subscribers x `queue_bytes` whatever the clients do.

use super::server::{accept_all, listener_timeout, EpollCounters, TOKEN_LISTENER};
use super::{Ctl, Epoll};
use crate::io::accept::ACCEPT_PAUSE;
use crate::io::stop::Stop;
use crate::measure::{CounterSet, Counters};
use crate::model::Trigger;
use crate::proto::pubsub::{Decoder, Fanout, Hub};
use rustix::io::Errno;
use rustix::net::{RecvFlags, SendFlags};
use std::io;
use std::net::TcpListener;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

const RECV_BUF: usize = 64 * 1024;
const TOKEN_STOP: u64 = u64::MAX - 1;
const IN: u32 = (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
const OUT: u32 = libc::EPOLLOUT as u32;

struct Conn {
    fd: OwnedFd,
    gen: u32,
    dec: Decoder,
    interest: u32,
}

struct Broker {
    ep: Epoll,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    next_gen: u32,
    hub: Hub,
    c: EpollCounters,
    fan: Fanout,
}

/// Serves the pubsub broker on `listener` until `stop`; subscriber queues hold at most
/// `queue_bytes`. Returns the loop's counters and the hub's (`published`, `delivered`,
/// `slow_disconnects`).
pub(crate) fn serve(
    listener: TcpListener,
    knobs: &crate::model::EpollKnobs,
    queue_bytes: usize,
    stop: &Stop,
) -> io::Result<Counters> {
    serve_on(listener, Epoll::with_knobs(knobs)?, queue_bytes, stop)
}

/// `serve` on a given epoll instance (`Epoll::via_ring`: `uring-epollwait`).
pub(crate) fn serve_on(
    listener: TcpListener,
    ep: Epoll,
    queue_bytes: usize,
    stop: &Stop,
) -> io::Result<Counters> {
    listener.set_nonblocking(true)?;
    let lfd = listener.as_fd();
    ep.ctl(Ctl::Add, lfd, libc::EPOLLIN as u32, TOKEN_LISTENER)?;
    ep.ctl(Ctl::Add, stop, libc::EPOLLIN as u32, TOKEN_STOP)?;
    stop.ready();
    let mut b = Broker {
        ep,
        conns: Vec::new(),
        free: Vec::new(),
        next_gen: 0,
        hub: Hub::new(queue_bytes),
        c: EpollCounters::default(),
        fan: Fanout::default(),
    };
    let mut buf = vec![0u8; RECV_BUF];
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    let mut paused_until: Option<std::time::Instant> = None;
    loop {
        let timeout = listener_timeout(&b.ep, lfd, &mut paused_until)?;
        let n = b.ep.wait(&mut events, timeout)?;
        b.c.epoll_waits += 1;
        b.c.events += n as u64;
        for ev in &events[..n] {
            match ev.u64 {
                TOKEN_STOP => return Ok(b.finish()),
                TOKEN_LISTENER => {
                    if b.accept_all(lfd)? {
                        b.ep.ctl(Ctl::Del, lfd, 0, 0)?;
                        paused_until = Some(std::time::Instant::now() + ACCEPT_PAUSE);
                    }
                }
                tok => b.on_event(tok, ev.events, &mut buf),
            }
        }
    }
}

impl Broker {
    fn finish(mut self) -> Counters {
        self.c.live_at_stop += self.conns.iter().filter(|c| c.is_some()).count() as u64;
        crate::io::with_hub(self.c.to_counters(), &self.hub.counters)
    }

    /// Accepts until the backlog is empty (`server::accept_all`, the one epoll accept loop).
    /// Ok(true): accepting must pause (`io::accept`).
    fn accept_all(&mut self, lfd: BorrowedFd<'_>) -> io::Result<bool> {
        let (ep, conns, free, next_gen) = (
            &self.ep,
            &mut self.conns,
            &mut self.free,
            &mut self.next_gen,
        );
        accept_all(lfd, &mut self.c, |fd| {
            let idx = free.pop().unwrap_or_else(|| {
                conns.push(None);
                conns.len() - 1
            });
            *next_gen = next_gen.wrapping_add(1);
            let gen = *next_gen;
            if let Err(e) = ep.ctl(Ctl::Add, &fd, IN, token(idx, gen)) {
                free.push(idx);
                return Err(e);
            }
            conns[idx] = Some(Conn {
                fd,
                gen,
                dec: Decoder::default(),
                interest: IN,
            });
            Ok(())
        })
    }

    fn close(&mut self, idx: usize) {
        if self.conns[idx].take().is_some() {
            // Closing the fd removes it from the interest set.
            self.free.push(idx);
            self.hub.remove(idx);
            self.c.closes += 1;
        }
    }

    fn on_event(&mut self, tok: u64, events: u32, buf: &mut [u8]) {
        let (idx, gen) = ((tok & 0xffff_ffff) as usize, (tok >> 32) as u32);
        match self.conns.get(idx) {
            Some(Some(c)) if c.gen == gen => {}
            _ => return, // closed earlier in this batch
        }
        if events & libc::EPOLLERR as u32 != 0 && events & libc::EPOLLIN as u32 == 0 {
            self.c.resets += 1;
            return self.close(idx);
        }
        if events & OUT != 0 && !self.send_queued(idx) {
            return;
        }
        if events & (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP) as u32 == 0 {
            return;
        }
        let mut reads_left = if self.ep.trigger() == Trigger::Edge {
            usize::MAX
        } else {
            1
        };
        while reads_left > 0 {
            reads_left -= 1;
            let Some(Some(conn)) = self.conns.get_mut(idx) else {
                return; // closed by its own publish (it subscribed and overflowed)
            };
            // recvfrom(2) with no address, as glibc's recv.
            let r = rustix::net::recv(&conn.fd, &mut *buf, RecvFlags::empty());
            self.c.reads += 1;
            let n = match r {
                Ok((0, _)) => {
                    // A FIN: a client that is done; what it queued is not waited for.
                    self.c.peer_fins += 1;
                    return self.close(idx);
                }
                Ok((n, _)) => n,
                Err(Errno::AGAIN) => {
                    self.c.eagain += 1;
                    break;
                }
                Err(Errno::INTR) => {
                    reads_left = reads_left.saturating_add(1);
                    continue;
                }
                Err(_) => {
                    self.c.resets += 1;
                    return self.close(idx);
                }
            };
            self.c.bytes_in += n as u64;
            let mut fan = std::mem::take(&mut self.fan);
            let ok = self
                .hub
                .on_bytes(idx, &mut conn.dec, &buf[..n], &mut fan)
                .is_ok();
            self.deliver(&mut fan);
            self.fan = fan;
            if !ok {
                self.c.resets += 1;
                return self.close(idx);
            }
        }
    }

    /// The one cross-connection path: closes the subscribers whose queue overflowed, then
    /// sends the queued bytes of the ones a publish woke.
    fn deliver(&mut self, fan: &mut Fanout) {
        for &s in &fan.disconnect {
            self.close(s);
        }
        for &s in &fan.woken {
            if self.hub.has_queue(s) {
                self.send_queued(s);
            }
        }
        fan.woken.clear();
        fan.disconnect.clear();
    }

    /// Sends subscriber `idx`'s queue until done or EAGAIN; EPOLLOUT is watched while bytes
    /// remain. False: the connection was closed (a send error).
    fn send_queued(&mut self, idx: usize) -> bool {
        let Some(Some(conn)) = self.conns.get_mut(idx) else {
            return false;
        };
        let mut failed = false;
        loop {
            let q = self.hub.pending(idx);
            if q.is_empty() {
                break;
            }
            // sendto(2) with no address, as glibc's send.
            let r = rustix::net::send(&conn.fd, q, SendFlags::NOSIGNAL);
            self.c.writes += 1;
            let n = match r {
                Ok(n) => n,
                Err(Errno::AGAIN) => {
                    self.c.eagain += 1;
                    self.c.partial_sends += 1;
                    break;
                }
                Err(Errno::INTR) => continue,
                Err(_) => {
                    failed = true;
                    break;
                }
            };
            self.c.bytes_out += n as u64;
            self.hub.sent(idx, n);
        }
        if failed {
            self.c.resets += 1;
            self.close(idx);
            return false;
        }
        let want = if self.hub.pending(idx).is_empty() {
            IN
        } else {
            IN | OUT
        };
        if want != conn.interest {
            conn.interest = want;
            self.c.epoll_mods += 1;
            let tok = token(idx, conn.gen);
            if self.ep.ctl(Ctl::Mod, &conn.fd, want, tok).is_err() {
                self.c.resets += 1;
                self.close(idx);
                return false;
            }
        }
        true
    }
}

fn token(idx: usize, gen: u32) -> u64 {
    ((gen as u64) << 32) | idx as u64
}
