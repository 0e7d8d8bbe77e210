//! Contenders that are not ringside's own code: `tokio` (current_thread runtime, epoll through
//! mio), `monoio` (its io_uring driver) and `ext:NAME`, any server command given on the command
//! line. They are measured from outside by the same code as ringside's own servers: the echo
//! suite starts `ringside serve --model tokio|monoio` (which calls [`serve`]) or the
//! external command ([`external::External::start`]) as a child process pinned to its CPU, and
//! reads that process's CPU time and syscalls.
//!
//! Each built-in contender is written the way its own documentation writes an echo server: one
//! task per connection doing a plain `read` then `write_all` loop with one
//! [`BUF_BYTES`]-byte buffer, `TCP_NODELAY` set on each accepted connection (as every ringside
//! echo server should, so that a partial echo never waits on the peer's delayed ACK). The
//! point is to measure the runtime, not a tuned server: no buffer pool, no batching of our own.
//! A connection that never reads stalls in `write_all`, so the contender stops reading from it
//! rather than buffering without bound.
//!
//! Beyond echo, each built-in contender serves any sans-I/O [`Protocol`] with the same plain
//! loop ([`Job::Proto`]: read, `on_bytes`, `write_all` the reply), and tokio also serves
//! HTTP/1.1 with hyper ([`Job::Http`]), the way hyper's own examples do. And each serves UDP
//! echo ([`Job::Udp`]): a `recv_from` then `send_to` loop on the runtime's own UDP socket.
//! [`serve`] is the one dispatch on the contender; each runtime's module maps a [`Job`] to its
//! loop (`serve_job`).
//!
//! Stopping: [`serve`] returns within [`STOP_POLL`] (plus the
//! time to drop the runtime; plus [`crate::io::accept::ACCEPT_PAUSE`] while accepting is paused)
//! after `stop` becomes true. The accept future is raced against a timer and kept across
//! ticks, never dropped and re-created: on io_uring an in-flight ACCEPT whose future is dropped
//! still completes in the kernel, and the connection it accepted would be lost. Dropping the
//! runtime closes every connection.

pub mod external;
pub(crate) mod files;
#[cfg(feature = "peer-monoio")]
pub(crate) mod monoio;
#[cfg(any(feature = "peer-tokio", feature = "peer-monoio"))]
pub(crate) mod pubsub;
#[cfg(feature = "peer-tokio")]
pub(crate) mod tokio;

use crate::avail::Availability;
use crate::model::PeerKind;
use crate::proto::Protocol;
use std::future::Future;
use std::net::TcpListener;
use std::pin::pin;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

/// How a contender is set up: the threads of a multi-threaded one (`tokio-mt`: `workers`
/// worker threads, pinned round-robin over `cpus` when it is not empty; the single-threaded
/// contenders run on the calling thread and ignore both), and `ready`, called once its runtime
/// is up (every thread it will serve with started) and before it accepts: `ringside serve`
/// announces `listening on` there, so a supervisor that opens counters on the server's tasks
/// after the announcement finds all of them.
#[derive(Clone, Copy)]
#[cfg_attr(
    not(any(feature = "peer-tokio", feature = "peer-monoio")),
    allow(dead_code)
)]
pub struct Setup<'a> {
    pub(crate) workers: usize,
    pub(crate) cpus: &'a [u32],
    pub(crate) ready: &'a (dyn Fn() + Sync),
}

fn nothing() {}

impl<'a> Setup<'a> {
    /// Two unpinned workers, nothing to do when ready (tests).
    pub const TWO: Setup<'static> = Setup {
        workers: 2,
        cpus: &[],
        ready: &nothing,
    };

    #[cfg(feature = "peer-tokio")]
    fn flavor(self) -> tokio::Flavor<'a> {
        tokio::Flavor::MultiThread {
            workers: self.workers,
            cpus: self.cpus,
        }
    }
}

/// Receive buffer of each connection of a built-in contender, bytes. Holds the echo suite's
/// largest message (16 KiB) in one read.
#[cfg_attr(
    not(any(feature = "peer-tokio", feature = "peer-monoio")),
    allow(dead_code)
)]
pub(crate) const BUF_BYTES: usize = 16 * 1024;

/// How often a serving contender looks at its stop flag.
#[cfg_attr(
    not(any(feature = "peer-tokio", feature = "peer-monoio")),
    allow(dead_code)
)]
pub(crate) const STOP_POLL: Duration = Duration::from_millis(50);

/// What a built-in contender is asked to serve: the one argument of [`serve`].
#[cfg_attr(
    not(any(feature = "peer-tokio", feature = "peer-monoio")),
    allow(dead_code)
)]
pub(crate) enum Job<P> {
    /// TCP echo, each contender's own plain loop (its documentation's echo server).
    Echo(TcpListener),
    /// Any sans-I/O protocol, one task per connection running a plain loop (read, `on_bytes`,
    /// `write_all` the reply before reading again).
    Proto(TcpListener, P),
    /// HTTP/1.1 with the contender's own HTTP server: `200 OK`, the body with
    /// `Content-Length`, `Content-Type: text/plain`, keep-alive, pipelined requests answered in
    /// order. tokio: hyper ([`tokio::serve_http`]); monoio has none of its own (serve
    /// ringside's HTTP protocol on it with `Job::Proto`): asking for it fails saying so.
    Http(TcpListener, Arc<[u8]>),
    /// The pubsub broker (`proto::pubsub`, subscriber queues of at most this many bytes): a
    /// reader task per connection, a writer task per subscriber, the one hub ([`pubsub`]).
    Pubsub(TcpListener, usize),
    /// UDP echo on a socket bound by `io::udp::bind` (its large receive buffer set): each
    /// datagram judged by `proto::udp::judge` and echoed to its sender, counted in the same
    /// `UdpCounters` as ringside's own UDP servers (a task per worker on `tokio-mt`).
    Udp(std::net::UdpSocket),
}

/// What a contender counted serving a [`Job`].
#[cfg_attr(
    not(any(feature = "peer-tokio", feature = "peer-monoio")),
    allow(dead_code)
)]
pub(crate) enum Outcome {
    /// The connections it accepted (echo, a protocol, HTTP).
    Accepts(u64),
    /// The broker's accepted connections and its hub's counters.
    Broker(u64, crate::proto::pubsub::HubCounters),
    /// The UDP echo server's counters.
    Udp(crate::proto::udp::UdpCounters),
}

impl Outcome {
    /// The connections accepted (a UDP server accepts none).
    pub(crate) fn accepts(&self) -> u64 {
        match self {
            Outcome::Accepts(n) | Outcome::Broker(n, _) => *n,
            Outcome::Udp(_) => 0,
        }
    }

    /// Its counts by name, as ringside's own servers name theirs.
    pub(crate) fn counters(&self) -> crate::measure::Counters {
        let mut c = crate::measure::Counters::default();
        match self {
            Outcome::Accepts(n) => c.add("accepts", *n),
            Outcome::Broker(n, hub) => {
                c.add("accepts", *n);
                c = crate::io::with_hub(c, hub);
            }
            Outcome::Udp(u) => c = crate::io::udp::to_counters(u),
        }
        c
    }
}

/// Serves `job` with the built-in contender `kind` on the calling thread (and for `tokio-mt`,
/// on its `workers`) until `stop` becomes true (looked at every [`STOP_POLL`], without
/// busy-waiting), then returns what it counted. The one dispatch on the contender.
///
/// Fails when the contender was not built in (feature `peer-tokio` / `peer-monoio`), when its
/// runtime cannot start (monoio: io_uring unavailable; the legacy epoll driver is never used
/// instead), or on an accept error that is fatal by the one policy of [`crate::io::accept`],
/// the same as ringside's own servers (which also decides what is retried at once and what
/// pauses accepting for [`crate::io::accept::ACCEPT_PAUSE`]).
/// `PeerKind::External` is not served in-process: see [`external::External::start`].
pub(crate) fn serve<P: Protocol>(
    kind: PeerKind,
    job: Job<P>,
    stop: Arc<AtomicBool>,
    setup: Setup<'_>,
) -> anyhow::Result<Outcome> {
    if let Availability::Unavailable(why) = built(kind) {
        anyhow::bail!("{} is unavailable: {why}", kind_id(kind));
    }
    match kind {
        #[cfg(feature = "peer-tokio")]
        PeerKind::Tokio => tokio::serve_job(job, stop, tokio::Flavor::CurrentThread, setup.ready),
        #[cfg(feature = "peer-tokio")]
        PeerKind::TokioMt => tokio::serve_job(job, stop, setup.flavor(), setup.ready),
        #[cfg(feature = "peer-monoio")]
        PeerKind::Monoio => monoio::serve_job(job, stop, setup.ready),
        PeerKind::External => anyhow::bail!(
            "an external contender runs its own command (peer::external::External::start), \
             it is not served in-process"
        ),
        #[allow(unreachable_patterns)]
        _ => {
            drop((job, stop, setup.workers));
            unreachable!("built() refused a contender that was not compiled in")
        }
    }
}

/// [`serve`] of [`Job::Echo`]: the connections accepted.
pub fn serve_echo(
    kind: PeerKind,
    listener: TcpListener,
    stop: Arc<AtomicBool>,
    setup: Setup<'_>,
) -> anyhow::Result<u64> {
    let job = Job::<crate::proto::Echo>::Echo(listener);
    Ok(serve(kind, job, stop, setup)?.accepts())
}

/// [`serve`] of [`Job::Proto`]: the connections accepted.
pub fn serve_proto<P: Protocol>(
    kind: PeerKind,
    listener: TcpListener,
    proto: P,
    stop: Arc<AtomicBool>,
    setup: Setup<'_>,
) -> anyhow::Result<u64> {
    Ok(serve(kind, Job::Proto(listener, proto), stop, setup)?.accepts())
}

/// [`serve`] of [`Job::Http`]: the connections accepted.
pub fn serve_http(
    kind: PeerKind,
    listener: TcpListener,
    stop: Arc<AtomicBool>,
    body: Arc<[u8]>,
    setup: Setup<'_>,
) -> anyhow::Result<u64> {
    let job = Job::<crate::proto::Echo>::Http(listener, body);
    Ok(serve(kind, job, stop, setup)?.accepts())
}

/// How long a hyper connection may take to send a whole request head, counted from when hyper
/// starts waiting for it (so an idle keep-alive connection is closed after this long too).
/// Drops slowloris clients (one header byte per second) without touching other connections.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether contender `kind` can run here, and if not, why: compiled in ([`built`]) and, for
/// monoio, its io_uring runtime actually starts (tried once per process, then remembered).
pub fn availability(kind: PeerKind) -> Availability {
    let b = built(kind);
    if !b.is_ready() {
        return b;
    }
    match kind {
        #[cfg(feature = "peer-monoio")]
        PeerKind::Monoio => monoio::availability(),
        _ => Availability::Ready,
    }
}

pub(crate) use crate::model::probe::built;

fn kind_id(kind: PeerKind) -> &'static str {
    match kind {
        PeerKind::Tokio => "tokio",
        PeerKind::TokioMt => "tokio-mt",
        PeerKind::Monoio => "monoio",
        PeerKind::External => "ext",
    }
}

/// Polls `main` and `tick` together: `Some(output)` when `main` finishes first, `None` when
/// `tick` fires first. `main` is borrowed, not consumed, so an unfinished operation (an
/// io_uring ACCEPT already in the kernel) survives the tick.
#[cfg_attr(
    not(any(feature = "peer-tokio", feature = "peer-monoio")),
    allow(dead_code)
)]
pub(crate) async fn or_tick<F, T>(main: &mut F, tick: T) -> Option<F::Output>
where
    F: Future + Unpin,
    T: Future,
{
    let mut tick = pin!(tick);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = std::pin::Pin::new(&mut *main).poll(cx) {
            return Poll::Ready(Some(out));
        }
        if tick.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_follows_features() {
        assert_eq!(
            built(PeerKind::Tokio).is_ready(),
            cfg!(feature = "peer-tokio")
        );
        assert_eq!(
            built(PeerKind::TokioMt).is_ready(),
            cfg!(feature = "peer-tokio")
        );
        assert_eq!(
            built(PeerKind::Monoio).is_ready(),
            cfg!(feature = "peer-monoio")
        );
        if !cfg!(feature = "peer-tokio") {
            assert_eq!(
                built(PeerKind::Tokio).reason(),
                Some("built without feature peer-tokio")
            );
        }
        assert!(built(PeerKind::External).is_ready());
    }
}
