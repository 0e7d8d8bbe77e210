//! The blocking broker (`ringside serve --protocol pubsub --model blocking`): thread per
//! connection, blocking sockets, one `proto::pubsub::Hub` behind one lock.
//!
//! Design (why a lock, and why a writer thread):
//! - Each connection's thread (the accept loop of `server::serve_conns`, shared with echo and
//!   HTTP) reads and feeds its bytes to the hub under the lock: `Hub::on_bytes` is the one
//!   cross-connection path, and one hub (not one per thread) is what makes every subscriber of
//!   a topic see every publisher. The lock is held for the hub's bookkeeping and the queue
//!   appends only, never across a syscall.
//! - A blocking send to a subscriber cannot be made by the publisher's thread: one subscriber
//!   that does not read would stall every publisher of its topic. So a connection that
//!   subscribes gets a writer thread (spawned at its first `SUB`, a scoped thread of the
//!   connection's own): it sleeps on its condition variable until a publish wakes it
//!   (`Fanout::woken`), takes the whole queue (`Hub::take`, a buffer swap, no copy) and
//!   sends it with blocking sends outside the lock. A subscriber therefore costs up to two
//!   threads; the bound on its memory is the hub's (queue plus the taken bytes in flight).
//! - A subscriber whose queue would overflow is shut down (`slow_disconnects`): its reader
//!   and writer wake (EOF, a failed send, or the condition variable) and end. A connection
//!   that ends (FIN, reset, bytes that are not frames) leaves the hub and shuts its socket so
//!   its writer ends too.
//! - One fd per connection: a subscriber's id is its connection's id in the accept loop's
//!   `live::LiveSockets`, through which another connection's thread shuts it down; its writer
//!   borrows the reader's socket (a scoped thread), no clone.

use super::live::LiveConn;
use super::server::{send_all, serve_conns, BlockingCounters, STACK_BYTES};
use crate::io::stop::Stop;
use crate::measure::CounterSet;
use crate::proto::pubsub::{Decoder, Fanout, Hub, HubCounters, SubId};
use std::collections::HashMap;
use std::io::{self, Read};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};

const RECV_BUF: usize = 64 * 1024;

/// A subscriber's writer: its wake-up (its socket is shut down through the accept loop's
/// registry, by the subscriber's id).
struct Writer {
    wake: Arc<Condvar>,
}

/// What the lock guards: the hub and the writers of its subscribers.
struct Shared {
    hub: Hub,
    writers: HashMap<SubId, Writer>,
}

type Locked = Arc<Mutex<Shared>>;

/// Serves the broker on `listener` until `stop`; subscriber queues hold at most
/// `queue_bytes`. Returns the threads' counters and the hub's.
pub(crate) fn serve(
    listener: TcpListener,
    queue_bytes: usize,
    stop: &Stop,
) -> io::Result<(BlockingCounters, HubCounters)> {
    let shared: Locked = Arc::new(Mutex::new(Shared {
        hub: Hub::new(queue_bytes),
        writers: HashMap::new(),
    }));
    let sh = shared.clone();
    let c = serve_conns(listener, stop, move |s| conn(&sh, s))?;
    let hub = shared
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .hub
        .counters;
    Ok((c, hub))
}

fn lock(sh: &Locked) -> std::sync::MutexGuard<'_, Shared> {
    // A thread that panicked under the lock left the hub consistent (no syscall under it).
    sh.lock().unwrap_or_else(|e| e.into_inner())
}

/// One connection: read, feed the hub, wake or shut down the subscribers it names; its
/// writer (if it subscribes) runs beside it in the same scope, sending on the same socket.
fn conn(sh: &Locked, s: LiveConn) -> BlockingCounters {
    let id = s.id() as SubId;
    let sock: &TcpStream = &s;
    let mut rd = sock;
    let mut c = BlockingCounters::default();
    let mut dec = Decoder::default();
    let mut fan = Fanout::default();
    let mut buf = vec![0u8; RECV_BUF];
    let wc = std::thread::scope(|sc| {
        let mut writer = None;
        loop {
            let n = match rd.read(&mut buf) {
                Ok(0) => {
                    c.peer_fins += 1;
                    break;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    c.resets += 1;
                    break;
                }
            };
            c.reads += 1;
            c.bytes_in += n as u64;
            let mut g = lock(sh);
            let ok = g.hub.on_bytes(id, &mut dec, &buf[..n], &mut fan).is_ok();
            for &d in &fan.disconnect {
                // Its reader wakes on the shut socket (EOF), its writer on the condition
                // variable or a failed send. (Under the hub lock: the registry's own lock
                // is only ever taken after it.)
                s.registry().shutdown(d as u64);
                if let Some(w) = g.writers.remove(&d) {
                    w.wake.notify_one();
                }
            }
            for &w in &fan.woken {
                if let Some(w) = g.writers.get(&w) {
                    w.wake.notify_one();
                }
            }
            fan.woken.clear();
            fan.disconnect.clear();
            // Its first SUB: a writer of its own (registered under the lock, so the next
            // publish finds it).
            let mut wake = None;
            if writer.is_none() && g.hub.has_queue(id) && !g.writers.contains_key(&id) {
                let w = Arc::new(Condvar::new());
                g.writers.insert(id, Writer { wake: w.clone() });
                wake = Some(w);
            }
            drop(g);
            if !ok {
                c.resets += 1;
                break;
            }
            if let Some(wake) = wake {
                let spawned = std::thread::Builder::new()
                    .name("conn-writer".into())
                    .stack_size(STACK_BYTES)
                    .spawn_scoped(sc, move || write_loop(sh, id, &wake, sock));
                match spawned {
                    Ok(h) => writer = Some(h),
                    Err(_) => {
                        c.resets += 1;
                        break;
                    }
                }
            }
        }
        // Leave the hub, then wake the writer (it finds no queue and ends; a send it is
        // blocked in fails on the shut socket).
        let mut g = lock(sh);
        g.hub.remove(id);
        if let Some(w) = g.writers.remove(&id) {
            w.wake.notify_one();
        }
        drop(g);
        let _ = s.shutdown(Shutdown::Both);
        writer.and_then(|h| h.join().ok())
    });
    if let Some(wc) = wc {
        c.merge(&wc);
    }
    c.closes += 1;
    c
}

/// Subscriber `id`'s writer: wait for queued bytes, take them, send them, until the
/// subscriber leaves the hub or a send fails.
fn write_loop(sh: &Locked, id: SubId, wake: &Condvar, s: &TcpStream) -> BlockingCounters {
    let mut c = BlockingCounters::default();
    let mut out = Vec::new();
    loop {
        {
            let mut g = lock(sh);
            loop {
                if !g.writers.contains_key(&id) || !g.hub.has_queue(id) {
                    return c;
                }
                if g.hub.take(id, &mut out) {
                    break;
                }
                g = wake.wait(g).unwrap_or_else(|e| e.into_inner());
            }
        }
        if send_all(s, &out, &mut c, None).is_err() {
            // (Counted by the reader, which sees the same reset.) The reader wakes on the shut socket and removes the subscriber.
            let _ = s.shutdown(Shutdown::Both);
            return c;
        }
    }
}
