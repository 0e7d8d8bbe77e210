//! The `monoio` contenders: monoio's io_uring driver (`IoUringDriver`, with its timer) on one
//! thread and one task per connection with an owned buffer:
//! - echo: `read` then `write_all`, as monoio's own echo example does;
//! - any [`Protocol`] (`serve_proto`, and `serve_http` with ringside's HTTP protocol): the same
//!   plain loop, the reply written by the protocol;
//! - UDP echo (`serve_udp`): one task, `recv_from` then `send_to` on monoio's UDP socket.
//!
//! Only the io_uring driver is compiled in (monoio without its `legacy` feature), so the model
//! can never silently measure epoll: when io_uring cannot start, the model is unavailable with
//! the kernel's reason.

use super::{or_tick, BUF_BYTES, STOP_POLL};
use crate::avail::Availability;
use crate::io::accept::{accept_error_action, AcceptAction, ACCEPT_PAUSE};
use crate::proto::udp::{UdpCounters, MAX_DATAGRAM};
use crate::proto::{Next, Protocol, Reply};
use ::monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use ::monoio::net::{TcpListener, TcpStream};
use ::monoio::time::TimeDriver;
use ::monoio::{IoUringDriver, RuntimeBuilder};
use anyhow::Context;
use std::cell::RefCell;
use std::collections::HashSet;
use std::future::Future;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

fn runtime() -> std::io::Result<::monoio::Runtime<TimeDriver<IoUringDriver>>> {
    RuntimeBuilder::<IoUringDriver>::new()
        .enable_timer()
        .build()
}

/// Starts a monoio io_uring runtime once per process and remembers the outcome.
pub(super) fn availability() -> Availability {
    static TRIED: OnceLock<Availability> = OnceLock::new();
    TRIED
        .get_or_init(|| match runtime() {
            Ok(_) => Availability::Ready,
            Err(e) => Availability::unavailable(format!("monoio's io_uring driver: {e}")),
        })
        .clone()
}

/// Serves `job` on monoio's io_uring runtime (`peer::serve`'s monoio arm).
pub(super) fn serve_job<P: Protocol>(
    job: super::Job<P>,
    stop: Arc<AtomicBool>,
    ready: &dyn Fn(),
) -> anyhow::Result<super::Outcome> {
    use super::{Job, Outcome};
    Ok(match job {
        Job::Echo(l) => Outcome::Accepts(serve(l, stop, ready)?),
        Job::Proto(l, p) => Outcome::Accepts(serve_proto(l, p, stop, ready)?),
        Job::Http(..) => anyhow::bail!(
            "monoio has no HTTP server of its own: serve ringside's HTTP protocol on it with \
             peer::serve_proto(PeerKind::Monoio, ..)"
        ),
        Job::Pubsub(l, q) => {
            let (accepts, hub) = serve_pubsub(l, q, stop, ready)?;
            Outcome::Broker(accepts, hub)
        }
        Job::Udp(sock) => Outcome::Udp(serve_udp(sock, stop, ready)?),
    })
}

pub(super) fn serve(
    listener: std::net::TcpListener,
    stop: Arc<AtomicBool>,
    ready: &dyn Fn(),
) -> anyhow::Result<u64> {
    serve_with(listener, stop, ready, echo)
}

/// Serves `proto` on `listener`: per connection, read what has arrived, feed it to the
/// protocol, write the reply it asks for (all of it) before reading again, until EOF, an error
/// or `Next::Close`. Returns within [`STOP_POLL`] of `stop` plus the drain (at most
/// [`DRAIN`]), every connection closed. Fails when io_uring cannot start.
pub(crate) fn serve_proto<P: Protocol>(
    listener: std::net::TcpListener,
    proto: P,
    stop: Arc<AtomicBool>,
    ready: &dyn Fn(),
) -> anyhow::Result<u64> {
    serve_with(listener, stop, ready, move |s, live| {
        proto_conn(s, proto.clone(), live)
    })
}

/// Runs a monoio io_uring runtime accepting on `listener` and spawning `conn(stream, live)` for
/// each connection until `stop`, then shuts every socket down and drains (see below). `conn`
/// must register its fd in `live` (through a [`LiveGuard`]) for the stop to reach it. Returns
/// the connections accepted. `ready` is called once the runtime is up, before accepting.
fn serve_with<F, Fut>(
    listener: std::net::TcpListener,
    stop: Arc<AtomicBool>,
    ready: &dyn Fn(),
    mut conn: F,
) -> anyhow::Result<u64>
where
    F: FnMut(TcpStream, Live) -> Fut,
    Fut: Future<Output = ()> + 'static,
{
    let mut rt = runtime().context(
        "monoio: its io_uring driver could not start (the legacy epoll driver is not used instead)",
    )?;
    let listener_fd = listener.as_raw_fd();
    ready();
    rt.block_on(async move {
        let listener = TcpListener::from_std(listener).context("monoio: adopting the listener")?;
        let live = Live::default();
        let mut accept = pin!(listener.accept());
        let mut result = Ok(());
        let mut accepts = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let Some(accepted) = or_tick(&mut accept, ::monoio::time::sleep(STOP_POLL)).await
            else {
                continue;
            };
            accept.set(listener.accept());
            match accepted {
                Ok((stream, _)) => {
                    accepts += 1;
                    ::monoio::spawn(conn(stream, live.clone()));
                }
                Err(e) => match accept_error_action(&e) {
                    AcceptAction::Wait | AcceptAction::Retry => {}
                    AcceptAction::Pause => ::monoio::time::sleep(ACCEPT_PAUSE).await,
                    AcceptAction::Fatal => {
                        result = Err(e).context("monoio: accept");
                        break;
                    }
                },
            }
        }
        // Graceful stop. A connection task parked on an io_uring op is referenced only from
        // the driver's op table, which the driver owns: dropping the runtime would leak the
        // tasks, the ring and every socket. So shut the sockets down instead: the pending
        // ACCEPT fails, each pending RECV returns 0 (EOF) and each SEND fails, every task
        // ends through its normal path and closes its socket, and no op is left in flight.
        shutdown(listener_fd);
        for fd in live.fds.borrow().iter() {
            shutdown(*fd);
        }
        let deadline = Instant::now() + DRAIN;
        while Instant::now() < deadline {
            if or_tick(&mut accept, ::monoio::time::sleep(Duration::from_millis(5)))
                .await
                .is_some()
            {
                break;
            }
        }
        while !live.fds.borrow().is_empty() && Instant::now() < deadline {
            ::monoio::time::sleep(Duration::from_millis(5)).await;
        }
        result.map(|()| accepts)
    })
}

/// Longest a stop waits for the connections to finish after their sockets are shut down.
const DRAIN: Duration = Duration::from_millis(500);

/// The sockets of the live connections, so that a stop can shut them down.
#[derive(Clone, Default)]
struct Live {
    fds: Rc<RefCell<HashSet<RawFd>>>,
}

/// Removes a connection's fd from [`Live`] before the socket is closed (it is declared after
/// the stream, so it drops first), so that a stop never shuts down a reused descriptor.
struct LiveGuard {
    live: Live,
    fd: RawFd,
}

impl LiveGuard {
    /// Registers `stream` in `live` until the guard drops.
    fn new(stream: &TcpStream, live: Live) -> Self {
        let fd = stream.as_raw_fd();
        live.fds.borrow_mut().insert(fd);
        LiveGuard { live, fd }
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.live.fds.borrow_mut().remove(&self.fd);
    }
}

fn shutdown(fd: RawFd) {
    // SAFETY: shutdown(2) on a descriptor this runtime owns and has not closed (a connection
    // leaves `Live` before its close); it touches no memory.
    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
}

/// One connection: read what has arrived, write all of it back, until EOF or an error.
async fn echo(mut stream: TcpStream, live: Live) {
    let _guard = LiveGuard::new(&stream, live);
    let _ = stream.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::with_capacity(BUF_BYTES);
    loop {
        // monoio reads into the buffer from its start and sets its length to what arrived.
        let (res, b) = stream.read(buf).await;
        buf = b;
        match res {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let (res, b) = stream.write_all(buf).await;
        buf = b;
        if res.is_err() {
            return;
        }
    }
}

/// One connection of a [`Protocol`]: read, `on_bytes`, write the whole reply, repeat. The reply
/// to one read is written before the next read, so a client that never reads stalls the loop
/// in `write_all` (unsent output: at most the replies to one [`BUF_BYTES`] read).
async fn proto_conn<P: Protocol>(mut stream: TcpStream, proto: P, live: Live) {
    let _guard = LiveGuard::new(&stream, live);
    let _ = stream.set_nodelay(true);
    let mut state = P::Conn::default();
    let mut buf: Vec<u8> = Vec::with_capacity(BUF_BYTES);
    let mut out: Vec<u8> = Vec::new();
    loop {
        // monoio reads into the buffer from its start and sets its length to what arrived.
        let (res, b) = stream.read(buf).await;
        buf = b;
        match res {
            Ok(0) => {
                if proto.on_eof(&mut state, &mut out) == Reply::Out {
                    let _ = stream.write_all(out).await;
                }
                return;
            }
            Ok(_) => {}
            Err(_) => return,
        }
        let step = proto.on_bytes(&mut state, &buf, &mut out);
        let sent = match step.reply {
            Reply::Nothing => Ok(()),
            Reply::Input => {
                let (r, b) = stream.write_all(buf).await;
                buf = b;
                r.map(drop)
            }
            Reply::Out => {
                let (r, o) = stream.write_all(out).await;
                out = o;
                out.clear();
                r.map(drop)
            }
        };
        if sent.is_err() || step.next == Next::Close {
            return;
        }
    }
}

/// The pubsub broker (`super::pubsub`): a reader task per connection and a writer task per
/// subscriber around the one hub. Returns the connections accepted and the hub's counters.
pub(crate) fn serve_pubsub(
    listener: std::net::TcpListener,
    queue_bytes: usize,
    stop: Arc<AtomicBool>,
    ready: &dyn Fn(),
) -> anyhow::Result<(u64, crate::proto::pubsub::HubCounters)> {
    let sh = super::pubsub::Shared::new(queue_bytes);
    let conns = sh.clone();
    let accepts = serve_with(listener, stop, ready, move |s, live| {
        pubsub_conn(s, conns.clone(), live)
    })?;
    Ok((accepts, sh.counters()))
}

async fn pubsub_conn(stream: TcpStream, sh: super::pubsub::Shared, live: Live) {
    use ::monoio::io::Splitable;
    let _guard = LiveGuard::new(&stream, live);
    let _ = stream.set_nodelay(true);
    let fd = stream.as_raw_fd();
    let id = sh.id();
    let (mut rd, wr) = stream.into_split();
    let mut wr = Some(wr);
    let mut dec = crate::proto::pubsub::Decoder::default();
    let mut fan = crate::proto::pubsub::Fanout::default();
    let mut buf: Vec<u8> = Vec::with_capacity(4 * BUF_BYTES);
    loop {
        // monoio reads into the buffer from its start and sets its length to what arrived.
        let (res, b) = rd.read(buf).await;
        buf = b;
        match res {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        match sh.feed(id, fd, &mut dec, &buf, &mut fan) {
            Err(_) => break,
            Ok(Some(signal)) => {
                if let Some(w) = wr.take() {
                    ::monoio::spawn(pubsub_writer(w, sh.clone(), id, signal));
                }
            }
            Ok(None) => {}
        }
    }
    sh.leave(id);
    // The read half keeps the socket open here; this ends a write in progress.
    shutdown(fd);
}

async fn pubsub_writer<W: ::monoio::io::AsyncWriteRent>(
    mut w: W,
    sh: super::pubsub::Shared,
    id: crate::proto::pubsub::SubId,
    signal: Arc<super::pubsub::Signal>,
) {
    use super::pubsub::Take;
    let mut out = Vec::new();
    loop {
        match sh.take(id, &mut out) {
            Take::Bytes => {
                let (r, o) = w.write_all(out).await;
                out = o;
                if r.is_err() {
                    return;
                }
            }
            Take::Wait => signal.wait().await,
            Take::Gone => return,
        }
    }
}

/// UDP echo (`udp.echo`) on monoio's `net::udp::UdpSocket`, as its documentation writes a
/// datagram loop: `recv_from` into an owned buffer, then `send_to` of that buffer to the
/// sender, one datagram at a time in one task (a RECVMSG then a SENDMSG on the ring). The
/// buffer holds [`MAX_DATAGRAM`] + 1 bytes, so a longer datagram (monoio's recvmsg sets no
/// MSG_TRUNC) shows as too long and is dropped by `judge`. Returns what it counted, within
/// [`STOP_POLL`] of `stop`. The receive in flight is kept across ticks of the stop timer
/// (dropping it would cancel it on the ring) and dropped at the stop: a datagram it took then
/// is lost with the server.
pub(crate) fn serve_udp(
    sock: std::net::UdpSocket,
    stop: Arc<AtomicBool>,
    ready: &dyn Fn(),
) -> anyhow::Result<UdpCounters> {
    let mut rt = runtime().context(
        "monoio: its io_uring driver could not start (the legacy epoll driver is not used instead)",
    )?;
    ready();
    rt.block_on(async move {
        let sock = ::monoio::net::udp::UdpSocket::from_std(sock)
            .context("monoio: adopting the UDP socket")?;
        let mut c = UdpCounters::default();
        let mut recv = pin!(sock.recv_from(Vec::with_capacity(MAX_DATAGRAM + 1)));
        let mut tick = pin!(::monoio::time::sleep(STOP_POLL));
        while !stop.load(Ordering::Relaxed) {
            let Some((got, buf)) = or_tick(&mut recv, tick.as_mut()).await else {
                tick.as_mut()
                    .reset(::monoio::time::Instant::now() + STOP_POLL);
                continue;
            };
            c.recv_calls += 1;
            let mut buf = match got {
                Err(_) => {
                    c.recv_errors += 1;
                    buf
                }
                Ok((n, from)) if c.judge(&buf[..n.min(MAX_DATAGRAM)], n > MAX_DATAGRAM) => {
                    c.send_calls += 1;
                    let (sent, buf) = sock.send_to(buf, from).await;
                    match sent {
                        Ok(_) => c.datagrams_out += 1,
                        Err(_) => c.send_errors += 1,
                    }
                    buf
                }
                Ok(_) => buf,
            };
            buf.clear();
            recv.set(sock.recv_from(buf));
        }
        Ok(c)
    })
}
