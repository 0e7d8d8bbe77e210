//! The io_uring broker (`ringside serve --protocol pubsub` on the uring rows): the same server
//! loop, ring builder and knobs as echo and HTTP (accept, receive, send, teardown are theirs),
//! with the connections' bytes going to the one `proto::pubsub::Hub` instead of a per-
//! connection protocol.
//!
//! - Receive: a connection's bytes (its own buffer, a provided buffer, or a bundle's copy) go
//!   through its `Decoder` into `Hub::on_bytes`; the provided buffer goes back to the ring at
//!   once (the hub copied what it queues).
//! - Send: an SQE must own its buffer until its completion, and the hub's queue grows and
//!   drains under it, so a connection whose send is idle takes its whole queue
//!   (`Hub::take`, a buffer swap) as one owned chunk and sends it (send, sendmsg, or SEND_ZC on
//!   `uring-zc`); publishes meanwhile queue in the hub, whose bound is what disconnects a slow
//!   subscriber (`slow_disconnects`). A subscriber holds at most twice the queue bound.
//! - SEND_ZC: a send that took its whole chunk frees the connection for its next send at its
//!   first CQE and keeps the buffer (`Conn::zc_held`, at most `ZC_HELD`) until its
//!   notification, which names it by the 4-bit tag in the send's user_data
//!   (`UserData::encode_tagged`). Waiting for each notification before the next send drained
//!   a subscriber's pipe first (over loopback a notification comes only once the peer has
//!   read the whole send) and a healthy subscriber's queue overflowed. The held buffers are
//!   bytes the socket already took (its buffers bound them), and the slot stays until they
//!   are free (`Conn::busy`); a closing connection with some held is reset, as one awaiting
//!   its own notification is.
//! - Fan-out: each woken subscriber gets its send SQE in the same batch, so one
//!   io_uring_enter submits a publish's whole fan-out.
//! - A connection leaves the hub as soon as it stops being open (FIN, reset, overflow, bytes
//!   that are not frames), not when its slot is freed, so nothing queues for it meanwhile.
//! - The provided-buffer ring is the broker's intake: a publisher's multishot receive fills
//!   it in one batch before any send of that batch is submitted, so the broker's ring is
//!   small (`BROKER_RING_BYTES`): past it the publisher meets ENOBUFS and TCP flow control
//!   holds it back, as a plain receive (one buffer per connection) or epoll's one read per
//!   event do. (With the echo server's 32 MiB ring a burst overflowed healthy subscribers.)
//! - Reading is never paused for a connection's own output in broker mode: what it reads does
//!   not add to its own output beyond the hub's bound.

use super::Server;
use crate::io::uring::server::conn::{Phase, SendOp, Src};
use crate::proto::pubsub::{Decoder, Fanout, FrameError, Hub};
use crate::proto::{Next, Protocol, Reply, Step};
use std::io;

/// The protocol slot of a broker server: its bytes go to the hub ([`Broker::feed`]), never to
/// `on_bytes`, which answers nothing if it is ever called.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HubFrames;

impl Protocol for HubFrames {
    type Conn = ();
    fn id(&self) -> &'static str {
        "pubsub"
    }
    fn on_bytes(&self, _: &mut (), _: &[u8], _: &mut Vec<u8>) -> Step {
        Step {
            reply: Reply::Nothing,
            next: Next::More,
        }
    }
}

/// The hub of this ring and each slot's decoder.
pub(super) struct Broker {
    pub(crate) hub: Hub,
    decs: Vec<Decoder>,
    fan: Fanout,
}

impl Broker {
    pub(crate) fn new(queue_bytes: usize) -> Broker {
        Broker {
            hub: Hub::new(queue_bytes),
            decs: Vec::new(),
            fan: Fanout::default(),
        }
    }

    /// Slot `idx`'s received bytes into the hub; the subscribers it woke or overflowed wait in
    /// the fan-out until [`Server::deliver`].
    pub(crate) fn feed(&mut self, idx: u32, input: &[u8]) -> Result<(), FrameError> {
        let i = idx as usize;
        if self.decs.len() <= i {
            self.decs.resize_with(i + 1, Decoder::default);
        }
        self.hub
            .on_bytes(i, &mut self.decs[i], input, &mut self.fan)
    }

    /// Slot `idx` leaves the hub (its subscriptions and queue) and its decoder starts afresh.
    pub(crate) fn forget(&mut self, idx: u32) {
        let i = idx as usize;
        if self.hub.has_queue(i) {
            self.hub.remove(i);
        }
        if let Some(d) = self.decs.get_mut(i) {
            *d = Decoder::default();
        }
    }
}

impl<P: Protocol> Server<P> {
    /// After a receive: closes the subscribers whose queue overflowed and starts a send on
    /// each one a publish woke.
    pub(super) fn deliver(&mut self) -> io::Result<()> {
        let Some(b) = self.broker.as_mut() else {
            return Ok(());
        };
        if b.fan.woken.is_empty() && b.fan.disconnect.is_empty() {
            return Ok(());
        }
        let fan = std::mem::take(&mut b.fan);
        for &d in &fan.disconnect {
            let idx = d as u32;
            if let Some(conn) = self.conns.at(idx) {
                if conn.phase == Phase::Open || conn.phase == Phase::Draining {
                    conn.phase = Phase::Closing;
                }
                self.progress(idx)?;
            }
        }
        for &w in &fan.woken {
            self.progress(w as u32)?;
        }

        let mut fan = fan;
        fan.woken.clear();
        fan.disconnect.clear();
        if let Some(b) = self.broker.as_mut() {
            b.fan = fan;
        }
        Ok(())
    }

    /// Broker mode, before a send: an open connection with nothing queued or in flight takes
    /// its hub queue as one owned chunk; one that is no longer open leaves the hub.
    pub(super) fn refill(&mut self, idx: u32) {
        let Some(b) = self.broker.as_mut() else {
            return;
        };
        let Some(conn) = self.conns.at(idx) else {
            return;
        };
        if conn.phase != Phase::Open {
            b.forget(idx);
            return;
        }
        if conn.send == SendOp::Idle && conn.out.is_empty() {
            let mut v = Vec::new();
            if b.hub.take(idx as usize, &mut v) {
                let len = v.len();
                conn.out.push(Src::Owned(v), len);
            }
        }
    }
}
