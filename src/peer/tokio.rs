//! The `tokio` contenders, on a current_thread runtime (`tokio`: one thread, epoll through mio)
//! or a multi-thread runtime (`tokio-mt`: N workers with work stealing, the accept loop one
//! task among them, see [`Flavor`]), with one task per connection:
//! - echo: `read` then `write_all`, as tokio's own echo example does;
//! - any [`Protocol`] (`serve_proto`): the same plain loop, the reply written by the protocol;
//! - UDP echo (`serve_udp`): `recv_from` then `send_to` on tokio's UDP socket, a task per
//!   worker sharing it;
//! - HTTP/1.1 with hyper (`serve_http`): hyper's `server::conn::http1` as hyper's own "hello"
//!   server example writes it, keep-alive on, pipelined requests answered in order, a fixed
//!   body. hyper's `pipeline_flush` stays off (its default): with it on, hyper 1.12 lifts its
//!   write-buffer cap (`can_buffer` is `flush_pipeline || write_buf.can_buffer()`), and a client
//!   that pipelines requests and never reads grew the server to 2 GB RSS for 512 MiB of
//!   requests here; with it off the client's writes stall after a few MiB (tested).

use super::{or_tick, BUF_BYTES, HEADER_READ_TIMEOUT, STOP_POLL};
use crate::io::accept::{accept_error_action, AcceptAction, ACCEPT_PAUSE};
use crate::measure::CounterSet;
use crate::proto::udp::{UdpCounters, MAX_DATAGRAM};
use crate::proto::{Next, Protocol, Reply};
use ::tokio::io::{AsyncReadExt, AsyncWriteExt};
use ::tokio::net::{TcpListener, TcpStream};
use anyhow::Context;
use hyper::body::{Body, Bytes, Frame, SizeHint};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

/// Which tokio runtime serves.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Flavor<'a> {
    /// One thread: the calling one.
    CurrentThread,
    /// `workers` worker threads (work stealing); with `cpus` not empty, worker `i` is pinned to
    /// `cpus[i % len]` as it starts. The accept loop runs as a task on the workers, so the
    /// calling thread only waits.
    MultiThread { workers: usize, cpus: &'a [u32] },
}

/// Serves `job` on this runtime flavour (`peer::serve`'s tokio arm).
pub(super) fn serve_job<P: Protocol>(
    job: super::Job<P>,
    stop: Arc<AtomicBool>,
    flavor: Flavor<'_>,
    ready: &dyn Fn(),
) -> anyhow::Result<super::Outcome> {
    use super::{Job, Outcome};
    Ok(match job {
        Job::Echo(l) => Outcome::Accepts(serve(l, stop, flavor, ready)?),
        Job::Proto(l, p) => Outcome::Accepts(serve_proto(l, p, stop, flavor, ready)?),
        Job::Http(l, body) => Outcome::Accepts(serve_http(l, stop, body, flavor, ready)?),
        Job::Pubsub(l, q) => {
            let (accepts, hub) = serve_pubsub(l, q, stop, flavor, ready)?;
            Outcome::Broker(accepts, hub)
        }
        Job::Udp(sock) => Outcome::Udp(serve_udp(sock, stop, flavor, ready)?),
    })
}

pub(super) fn serve(
    listener: std::net::TcpListener,
    stop: Arc<AtomicBool>,
    flavor: Flavor<'_>,
    ready: &dyn Fn(),
) -> anyhow::Result<u64> {
    serve_with(listener, stop, flavor, ready, echo)
}

/// Serves `proto` on `listener`: per connection, read what has arrived, feed it to the
/// protocol, write the reply it asks for (all of it) before reading again, until EOF, an error
/// or `Next::Close`. Returns within [`STOP_POLL`] of `stop` (plus dropping the runtime).
pub(crate) fn serve_proto<P: Protocol>(
    listener: std::net::TcpListener,
    proto: P,
    stop: Arc<AtomicBool>,
    flavor: Flavor<'_>,
    ready: &dyn Fn(),
) -> anyhow::Result<u64> {
    serve_with(listener, stop, flavor, ready, move |s| {
        proto_conn(s, proto.clone())
    })
}

/// Serves HTTP/1.1 with hyper: every request (any method and path) is answered `200 OK` with
/// `body`, `Content-Length` and `Content-Type: text/plain` (and hyper's `Date`). Keep-alive on,
/// pipelined requests answered in order (each response flushed: `pipeline_flush` would unbound
/// the write buffer, see the module doc), a connection that has not sent a whole request head
/// within [`HEADER_READ_TIMEOUT`] (idle keep-alive included) is closed. Request bodies are read
/// and discarded by hyper. Returns within [`STOP_POLL`] of `stop` (plus dropping the runtime).
pub(crate) fn serve_http(
    listener: std::net::TcpListener,
    stop: Arc<AtomicBool>,
    body: Arc<[u8]>,
    flavor: Flavor<'_>,
    ready: &dyn Fn(),
) -> anyhow::Result<u64> {
    let body = Bytes::copy_from_slice(&body);
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .keep_alive(true)
        // Not `pipeline_flush(true)`: it lifts hyper's write-buffer cap (module doc).
        .pipeline_flush(false);
    serve_with(listener, stop, flavor, ready, move |stream| {
        let (builder, body) = (builder.clone(), body.clone());
        async move {
            let _ = stream.set_nodelay(true);
            let service =
                hyper::service::service_fn(move |_req: Request<hyper::body::Incoming>| {
                    let body = body.clone();
                    async move { Ok::<_, Infallible>(hello(body)) }
                });
            // An error here is about this connection only (reset, timeout, bad request).
            let _ = builder
                .serve_connection(TokioIo::new(stream), service)
                .await;
        }
    })
}

fn hello(body: Bytes) -> Response<Fixed> {
    let mut r = Response::new(Fixed((!body.is_empty()).then_some(body)));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

/// A body known in full: one frame, its exact size hinted, so hyper sends `Content-Length`.
/// (http-body-util's `Full` in 20 lines, without the dependency.)
struct Fixed(Option<Bytes>);

impl Body for Fixed {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.take().map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.0.as_ref().map_or(0, |b| b.len() as u64))
    }
}

/// Runs a `flavor` runtime accepting on `listener` and spawning `conn(stream)` for each
/// connection until `stop`; returns the connections accepted. `ready` is called once the
/// runtime is built (its workers started), before accepting. Dropping the runtime after
/// `block_on` cancels every connection task and closes its socket.
fn serve_with<F, Fut>(
    listener: std::net::TcpListener,
    stop: Arc<AtomicBool>,
    flavor: Flavor<'_>,
    ready: &dyn Fn(),
    conn: F,
) -> anyhow::Result<u64>
where
    F: FnMut(TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    listener
        .set_nonblocking(true)
        .context("tokio: setting the listener non-blocking")?;
    let rt = runtime(flavor)?;
    ready();
    match flavor {
        Flavor::CurrentThread => rt.block_on(accept_loop(listener, stop, conn)),
        Flavor::MultiThread { .. } => rt.block_on(async move {
            ::tokio::spawn(accept_loop(listener, stop, conn))
                .await
                .context("tokio: the accept task")?
        }),
    }
}

/// Builds a `flavor` runtime: IO and timers enabled; a multi-thread one's workers pinned as
/// it says.
fn runtime(flavor: Flavor<'_>) -> anyhow::Result<::tokio::runtime::Runtime> {
    match flavor {
        Flavor::CurrentThread => ::tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .context("tokio: building the current_thread runtime"),
        Flavor::MultiThread { workers, cpus } => {
            let mut b = ::tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(workers.max(1)).enable_io().enable_time();
            if !cpus.is_empty() {
                let cpus: Arc<[u32]> = cpus.into();
                let next = Arc::new(AtomicUsize::new(0));
                // A worker that cannot be pinned would serve off the plan its cell records:
                // the server ends, and its cell fails with this line of its stderr.
                b.on_thread_start(move || {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if let Err(e) = crate::measure::pin::pin_this_thread(cpus[i % cpus.len()]) {
                        eprintln!("tokio-mt: worker {i}: {e}");
                        std::process::exit(1);
                    }
                });
            }
            b.build()
                .context("tokio: building the multi-thread runtime")
        }
    }
}

/// UDP echo (`udp.echo`) on tokio's `net::UdpSocket`, as its documentation writes an echo
/// server: `recv_from` then `send_to` back to the sender, awaited one datagram at a time. On
/// the current_thread runtime that is one task; on the multi-thread one, one task per worker
/// sharing the socket through an `Arc` (tokio's documented way to use one UDP socket from
/// several tasks: every waiting task is woken when it is readable, one of them gets each
/// datagram). The buffer holds [`MAX_DATAGRAM`] + 1 bytes, so a longer datagram (tokio's
/// recv_from reports no truncation) shows as too long and is dropped by `judge`. Returns the
/// tasks' counts summed, within [`STOP_POLL`] of `stop` (plus dropping the runtime).
pub(crate) fn serve_udp(
    sock: std::net::UdpSocket,
    stop: Arc<AtomicBool>,
    flavor: Flavor<'_>,
    ready: &dyn Fn(),
) -> anyhow::Result<UdpCounters> {
    sock.set_nonblocking(true)
        .context("tokio: setting the UDP socket non-blocking")?;
    let rt = runtime(flavor)?;
    let tasks = match flavor {
        Flavor::CurrentThread => None,
        Flavor::MultiThread { workers, .. } => Some(workers.max(1)),
    };
    ready();
    rt.block_on(async move {
        let sock = Arc::new(
            ::tokio::net::UdpSocket::from_std(sock).context("tokio: registering the UDP socket")?,
        );
        let Some(n) = tasks else {
            return Ok(udp_echo(sock, stop).await);
        };
        let handles: Vec<_> = (0..n)
            .map(|_| ::tokio::spawn(udp_echo(sock.clone(), stop.clone())))
            .collect();
        let mut total = UdpCounters::default();
        for h in handles {
            total.merge(&h.await.context("tokio: a UDP echo task")?);
        }
        Ok(total)
    })
}

/// One UDP echo task: `recv_from`, judge, `send_to`, until `stop`. The stop timer is one
/// `Sleep` raced against each receive and re-armed only when it fires (a `select!` on a
/// shutdown future, without the macro), so a datagram that is already there costs no timer.
async fn udp_echo(sock: Arc<::tokio::net::UdpSocket>, stop: Arc<AtomicBool>) -> UdpCounters {
    let mut c = UdpCounters::default();
    let mut buf = vec![0u8; MAX_DATAGRAM + 1];
    let mut tick = pin!(::tokio::time::sleep(STOP_POLL));
    while !stop.load(Ordering::Relaxed) {
        let got = {
            let mut recv = pin!(sock.recv_from(&mut buf));
            or_tick(&mut recv, tick.as_mut()).await
        };
        let (n, from) = match got {
            None => {
                tick.as_mut()
                    .reset(::tokio::time::Instant::now() + STOP_POLL);
                continue;
            }
            Some(Err(_)) => {
                c.recv_calls += 1;
                c.recv_errors += 1;
                continue;
            }
            Some(Ok(got)) => got,
        };
        c.recv_calls += 1;
        let d = &buf[..n.min(MAX_DATAGRAM)];
        if !c.judge(d, n > MAX_DATAGRAM) {
            continue;
        }
        c.send_calls += 1;
        match sock.send_to(d, from).await {
            Ok(_) => c.datagrams_out += 1,
            Err(_) => c.send_errors += 1,
        }
    }
    c
}

async fn accept_loop<F, Fut>(
    listener: std::net::TcpListener,
    stop: Arc<AtomicBool>,
    mut conn: F,
) -> anyhow::Result<u64>
where
    F: FnMut(TcpStream) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::from_std(listener).context("tokio: registering the listener")?;
    let mut accepts = 0u64;
    let mut accept = pin!(listener.accept());
    while !stop.load(Ordering::Relaxed) {
        let Some(accepted) = or_tick(&mut accept, ::tokio::time::sleep(STOP_POLL)).await else {
            continue;
        };
        accept.set(listener.accept());
        match accepted {
            Ok((stream, _)) => {
                accepts += 1;
                ::tokio::spawn(conn(stream));
            }
            Err(e) => match accept_error_action(&e) {
                AcceptAction::Wait | AcceptAction::Retry => {}
                AcceptAction::Pause => ::tokio::time::sleep(ACCEPT_PAUSE).await,
                AcceptAction::Fatal => return Err(e).context("tokio: accept"),
            },
        }
    }
    Ok(accepts)
}

/// One connection: read what has arrived, write all of it back, until EOF or an error.
async fn echo(mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    // Read into the spare capacity (read_buf): like monoio's owned buffer, nothing is zeroed,
    // so a connection touches only the memory its messages fill.
    let mut buf: Vec<u8> = Vec::with_capacity(BUF_BYTES);
    loop {
        buf.clear();
        match stream.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if stream.write_all(&buf).await.is_err() {
            return;
        }
    }
}

/// One connection of a [`Protocol`]: read, `on_bytes`, write the whole reply, repeat. The reply
/// to one read is written before the next read, so a client that never reads stalls the loop
/// in `write_all` (unsent output: at most the replies to one [`BUF_BYTES`] read).
async fn proto_conn<P: Protocol>(mut stream: TcpStream, proto: P) {
    let _ = stream.set_nodelay(true);
    let mut state = P::Conn::default();
    let mut buf: Vec<u8> = Vec::with_capacity(BUF_BYTES);
    let mut out: Vec<u8> = Vec::new();
    loop {
        buf.clear();
        match stream.read_buf(&mut buf).await {
            Ok(0) => {
                if proto.on_eof(&mut state, &mut out) == Reply::Out {
                    let _ = stream.write_all(&out).await;
                }
                return;
            }
            Ok(_) => {}
            Err(_) => return,
        }
        let step = proto.on_bytes(&mut state, &buf, &mut out);
        let sent = match step.reply {
            Reply::Nothing => Ok(()),
            Reply::Input => stream.write_all(&buf).await,
            Reply::Out => {
                let r = stream.write_all(&out).await;
                out.clear();
                r
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
    flavor: Flavor<'_>,
    ready: &dyn Fn(),
) -> anyhow::Result<(u64, crate::proto::pubsub::HubCounters)> {
    let sh = super::pubsub::Shared::new(queue_bytes);
    let conns = sh.clone();
    let accepts = serve_with(listener, stop, flavor, ready, move |s| {
        pubsub_conn(s, conns.clone())
    })?;
    Ok((accepts, sh.counters()))
}

async fn pubsub_conn(stream: TcpStream, sh: super::pubsub::Shared) {
    use std::os::fd::AsRawFd;
    let _ = stream.set_nodelay(true);
    let fd = stream.as_raw_fd();
    let id = sh.id();
    let (mut rd, wr) = stream.into_split();
    let mut wr = Some(wr);
    let mut dec = crate::proto::pubsub::Decoder::default();
    let mut fan = crate::proto::pubsub::Fanout::default();
    let mut buf: Vec<u8> = Vec::with_capacity(4 * BUF_BYTES);
    loop {
        buf.clear();
        match rd.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        match sh.feed(id, fd, &mut dec, &buf, &mut fan) {
            Err(_) => break,
            Ok(Some(signal)) => {
                if let Some(w) = wr.take() {
                    ::tokio::spawn(pubsub_writer(w, sh.clone(), id, signal));
                }
            }
            Ok(None) => {}
        }
    }
    sh.leave(id);
    // SAFETY: the read half keeps the socket open here; this ends a write in progress.
    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
}

async fn pubsub_writer(
    mut w: ::tokio::net::tcp::OwnedWriteHalf,
    sh: super::pubsub::Shared,
    id: crate::proto::pubsub::SubId,
    signal: Arc<super::pubsub::Signal>,
) {
    use super::pubsub::Take;
    let mut out = Vec::new();
    loop {
        match sh.take(id, &mut out) {
            Take::Bytes => {
                if w.write_all(&out).await.is_err() {
                    return;
                }
            }
            Take::Wait => signal.wait().await,
            Take::Gone => return,
        }
    }
}
