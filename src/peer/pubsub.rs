//! The pubsub broker on the built-in contenders (tokio, tokio-mt, monoio): the way their own
//! examples write a chat/broadcast server, one task reading each connection and one writing
//! each subscriber, around the one sans-I/O `proto::pubsub::Hub` (never a second copy of the
//! protocol or of its bounded queues).
//!
//! - The reader task feeds what it reads to the hub under a `std::sync::Mutex` (held for the
//!   hub's bookkeeping only, never across an await; uncontended on the single-threaded
//!   runtimes) and wakes the writers of the subscribers a publish woke ([`Signal`]).
//! - A connection that subscribes gets a writer task with the socket's write half: it waits
//!   for its signal, takes the whole queue (`Hub::take`, a buffer swap) and `write_all`s it.
//! - A subscriber whose queue would overflow is shut down (`shutdown(2)` on its socket) and
//!   counted by the hub (`slow_disconnects`); its reader sees EOF and leaves the hub, its
//!   writer finds no queue and ends. The same happens to a connection that resets or sends
//!   bytes that are not frames.

use crate::proto::pubsub::{Decoder, Fanout, FrameError, Hub, HubCounters, SubId};
use std::collections::HashMap;
use std::future::Future;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// A wake-up for one writer task, runtime-agnostic: `notify` before `wait` is kept (one
/// permit), so a publish between a writer's look at the hub and its wait is never lost.
#[derive(Default)]
pub(crate) struct Signal {
    state: Mutex<(bool, Option<Waker>)>,
}

impl Signal {
    pub(crate) fn notify(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.0 = true;
        if let Some(w) = s.1.take() {
            w.wake();
        }
    }

    /// Waits for the next `notify` (or returns at once if one came since the last wait).
    pub(crate) fn wait(&self) -> impl Future<Output = ()> + '_ {
        struct Wait<'a>(&'a Signal);
        impl Future for Wait<'_> {
            type Output = ();
            fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
                let mut s = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
                if std::mem::take(&mut s.0) {
                    return Poll::Ready(());
                }
                s.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
        Wait(self)
    }
}

struct Writer {
    signal: Arc<Signal>,
    fd: RawFd,
}

struct Inner {
    hub: Hub,
    writers: HashMap<SubId, Writer>,
    next_id: SubId,
}

/// The broker state every connection task of one runtime shares.
#[derive(Clone)]
pub(crate) struct Shared(Arc<Mutex<Inner>>);

/// What a writer found in the hub.
pub(crate) enum Take {
    /// Bytes to send (in the buffer given).
    Bytes,
    /// Nothing queued: wait for the signal.
    Wait,
    /// The subscriber left the hub: end.
    Gone,
}

impl Shared {
    pub(crate) fn new(queue_bytes: usize) -> Shared {
        Shared(Arc::new(Mutex::new(Inner {
            hub: Hub::new(queue_bytes),
            writers: HashMap::new(),
            next_id: 0,
        })))
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new connection's id in the hub.
    pub(crate) fn id(&self) -> SubId {
        let mut g = self.lock();
        g.next_id += 1;
        g.next_id
    }

    pub(crate) fn counters(&self) -> HubCounters {
        self.lock().hub.counters
    }

    /// Connection `id` (socket `fd`) read `input`: into the hub; the subscribers woken are
    /// signalled, the overflowed ones shut down. `Ok(Some(signal))`: `id` has just subscribed
    /// for the first time, and its writer task must be started with this signal.
    pub(crate) fn feed(
        &self,
        id: SubId,
        fd: RawFd,
        dec: &mut Decoder,
        input: &[u8],
        fan: &mut Fanout,
    ) -> Result<Option<Arc<Signal>>, FrameError> {
        let mut g = self.lock();
        let r = g.hub.on_bytes(id, dec, input, fan);
        for d in &fan.disconnect {
            if let Some(w) = g.writers.remove(d) {
                // SAFETY: shutdown(2) on a socket still open: its reader removes its entry
                // under this lock before the socket is dropped.
                unsafe { libc::shutdown(w.fd, libc::SHUT_RDWR) };
                w.signal.notify();
            }
        }
        for w in &fan.woken {
            if let Some(w) = g.writers.get(w) {
                w.signal.notify();
            }
        }
        fan.woken.clear();
        fan.disconnect.clear();
        r?;
        if g.hub.has_queue(id) && !g.writers.contains_key(&id) {
            let signal = Arc::new(Signal::default());
            g.writers.insert(
                id,
                Writer {
                    signal: signal.clone(),
                    fd,
                },
            );
            return Ok(Some(signal));
        }
        Ok(None)
    }

    /// Connection `id` ends: it leaves the hub and its writer is told to end.
    pub(crate) fn leave(&self, id: SubId) {
        let mut g = self.lock();
        g.hub.remove(id);
        if let Some(w) = g.writers.remove(&id) {
            w.signal.notify();
        }
    }

    /// Subscriber `id`'s writer takes its queue into `out`.
    pub(crate) fn take(&self, id: SubId, out: &mut Vec<u8>) -> Take {
        let mut g = self.lock();
        if !g.writers.contains_key(&id) || !g.hub.has_queue(id) {
            return Take::Gone;
        }
        if g.hub.take(id, out) {
            Take::Bytes
        } else {
            Take::Wait
        }
    }
}
