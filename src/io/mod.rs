//! The I/O models. Each family implements the shapes it supports; one factory per shape maps
//! a model to its implementation with one `match` on the family. Nothing here knows about
//! statistics or output.

pub(crate) mod accept;
pub(crate) mod blocking;
pub(crate) mod epoll;
pub mod file;
pub(crate) mod idle;
pub(crate) mod napi;
pub(crate) mod readiness;
pub(crate) mod stop;
pub(crate) mod sys;
pub mod udp;
pub mod udp_gso;
pub mod uring;

use crate::error::CaseError;
use crate::measure::{pin::CpuPlan, CounterSet, Counters};
use crate::model::{Knobs, ModelSpec, Refusal, Shape};
use crate::proto::Protocol;
use std::net::TcpListener;

use std::io;
pub use stop::Stop;

/// Shape: move one message through each of N pipes, in one thread.
///
/// `micro.pipe` is this shape with N = 1; `micro.batching` sweeps N. What is timed is `run`;
/// `prepare` is the untimed part of an iteration (epoll: writing the messages the timed wait
/// will find ready).
pub(crate) trait PipeBatch {
    /// Untimed work before each `run`.
    fn prepare(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Timed: one message through each pipe, every byte accounted for.
    fn run(&mut self) -> io::Result<()>;
    /// Untimed: check the last messages received carry the sequence number that was sent.
    fn verify(&self) -> io::Result<()>;
    /// What the model counted for itself (io_uring_enter calls, events per wait...).
    fn counters(&self) -> Counters;
}

/// Builds the pipe-batch shape for a model.
pub(crate) fn pipe_batch(
    m: &ModelSpec,
    pipes: usize,
    msg_bytes: usize,
    plan: &CpuPlan,
) -> Result<Box<dyn PipeBatch>, CaseError> {
    m.runs(Shape::Pipe)?;
    let set = sys::PipeSet::new(pipes, msg_bytes)?;
    match &m.knobs {
        Knobs::Blocking(_) => Ok(Box::new(blocking::PipeLoop::new(set))),
        Knobs::Epoll(k) => Ok(Box::new(epoll::PipeWait::new(set, k.trigger)?)),
        Knobs::Uring(k) => Ok(Box::new(uring::pipe::LinkedPairs::new(set, k, plan)?)),
        Knobs::Peer(_) => Err(not_built_in(m)),
    }
}

/// Shape: file I/O, fio-style (anchors P1). Ops are submitted in batches and reaped as they
/// finish; a blocking engine performs them inside `submit` (its submissions complete at once),
/// a thread pool hands them to workers, io_uring queues SQEs and enters the kernel once per
/// batch. One storage loop drives every model through this trait.
pub trait FileEngine {
    /// Starts `ops` (in order; `link` chains run in order and stop at the first failure).
    fn submit(&mut self, ops: &[file::FileOp]) -> io::Result<()>;
    /// Waits until at least `min` ops have finished (counting ones already finished and not
    /// yet reaped); appends every finished op to `done`.
    fn reap(&mut self, min: usize, done: &mut Vec<file::Done>) -> io::Result<()>;
    /// The engine's I/O buffers (registered with the kernel where the model says so).
    fn bufs(&self) -> &file::Buffers;
    /// Opens file slot `file` now, outside any measured window (setup).
    fn open_now(&mut self, file: u32) -> io::Result<()>;
    /// What the engine counted for itself (io_uring_enter calls, SQEs, worker threads...).
    fn counters(&self) -> Counters;
    /// CPU time of threads the engine runs besides the caller (a pool's workers), so far.
    fn workers_cpu(&self) -> crate::measure::cpu::CpuReading {
        Default::default()
    }
}

/// Builds the file engine of a model. `dev_polls` says whether the file's block device
/// supports polled I/O (IOPOLL), with the reason when it does not.
pub(crate) fn file_engine(
    m: &ModelSpec,
    cfg: file::FileConfig,
    plan: &CpuPlan,
    dev_polls: Result<(), String>,
) -> Result<Box<dyn FileEngine>, CaseError> {
    m.runs(Shape::Storage(cfg.file_io()))?;
    match &m.knobs {
        Knobs::Blocking(crate::model::Threading::PerConnection) => {
            Ok(Box::new(blocking::file::SyncFiles::new(cfg)?))
        }
        Knobs::Blocking(crate::model::Threading::Pool { threads }) => {
            let n = threads.map(usize::from).unwrap_or(cfg.depth).clamp(1, 64);
            Ok(Box::new(blocking::pool::PoolFiles::new(cfg, n, plan)?))
        }
        Knobs::Uring(k) => Ok(Box::new(uring::file::RingFiles::new(
            cfg, k, plan, dev_polls,
        )?)),
        // `ModelSpec::runs` refused epoll above; the peers' file APIs are `peer::files`.
        Knobs::Epoll(_) | Knobs::Peer(_) => Err(not_built_in(m)),
    }
}

/// What a model the built-in factories do not build (the peers, served from `src/peer/`) gets
/// from one.
fn not_built_in(m: &ModelSpec) -> CaseError {
    CaseError::not_applicable(format!(
        "model '{}' runs from src/peer, not the built-in factories",
        m.id
    ))
}

/// The shape of a built-in TCP server. Every built-in family serves each sans-I/O protocol
/// alike (`ModelSpec::runs` says so for `Shape::Tcp` of any `Proto`), so the protocol asked
/// about does not change the answer.
pub(crate) const BUILT_IN_TCP: Shape = Shape::Tcp(crate::model::Proto::Echo);

/// Runs the model's server for `proto` on `listener` until `stop` is requested; returns what
/// the server counted (accepts, bytes, io_uring_enter calls, ENOBUFS, re-arms, sq_full...).
/// Each family counts in its own struct of plain integers; this is the edge where it becomes
/// the name -> value map.
/// Connections that get no reply for `proto.idle_timeout()` are closed (`idle_closes`; see
/// [`idle`]); with `None` the loops neither read the clock nor arm a timer.
///
/// The listener should have TCP_NODELAY set (accepted sockets inherit it on Linux).
pub fn serve<P: Protocol>(
    m: &ModelSpec,
    listener: TcpListener,
    proto: P,
    plan: &CpuPlan,
    stop: &Stop,
) -> Result<Counters, CaseError> {
    if let Err(Refusal::NotApplicable(_)) = m.runs(BUILT_IN_TCP) {
        return Err(CaseError::not_applicable(format!(
            "model '{}' has no built-in TCP server",
            m.id
        )));
    }
    match &m.knobs {
        Knobs::Blocking(_) => Ok(blocking::server::serve(listener, proto, stop)?.to_counters()),
        Knobs::Epoll(k) => Ok(epoll::server::serve(listener, proto, k, stop)?.to_counters()),
        Knobs::Uring(k) if k.looping == crate::model::Loop::EpollWait => {
            // `uring-epollwait`: the level-triggered epoll server, waiting through a ring.
            let ep = epoll::Epoll::via_ring(crate::model::Trigger::Level, 256, k)?;
            Ok(epoll::server::serve_on(listener, proto, ep, stop)?.to_counters())
        }
        Knobs::Uring(k) => Ok(uring::server::serve(listener, proto, k, plan, stop)?.to_counters()),
        Knobs::Peer(_) => Err(not_built_in(m)),
    }
}

/// The hub's counters added to a broker loop's (`published`, `delivered`,
/// `slow_disconnects`): the one place they get their names.
pub(crate) fn with_hub(mut c: Counters, h: &crate::proto::pubsub::HubCounters) -> Counters {
    c.add("published", h.published);
    c.add("delivered", h.delivered);
    c.add("slow_disconnects", h.slow_disconnects);
    c.add("refused_subs", h.refused_subs);
    c
}

/// Runs model `m`'s pubsub broker on `listener` until `stop` (subscriber queues of at most
/// `queue_bytes`); see `proto::pubsub`. The peers are served by `peer::serve_pubsub`.
pub(crate) fn serve_pubsub(
    m: &ModelSpec,
    listener: TcpListener,
    queue_bytes: usize,
    plan: &CpuPlan,
    stop: &Stop,
) -> Result<Counters, CaseError> {
    match m.runs(Shape::Broker) {
        Ok(()) => {}
        Err(Refusal::NotApplicable(why)) => {
            return Err(CaseError::not_applicable(format!(
                "model '{}' does not serve pubsub: {why}",
                m.id
            )))
        }
        Err(Refusal::Unavailable(why)) => {
            return Err(CaseError::Unavailable(format!("pubsub broker: {why}")))
        }
    }
    match &m.knobs {
        Knobs::Blocking(_) => {
            let (c, h) = blocking::pubsub::serve(listener, queue_bytes, stop)?;
            Ok(with_hub(c.to_counters(), &h))
        }
        Knobs::Epoll(k) => Ok(epoll::pubsub::serve(listener, k, queue_bytes, stop)?),
        Knobs::Uring(k) if k.looping == crate::model::Loop::EpollWait => {
            // `uring-epollwait`: the level-triggered epoll broker, waiting through a ring.
            let ep = epoll::Epoll::via_ring(crate::model::Trigger::Level, 256, k)?;
            Ok(epoll::pubsub::serve_on(listener, ep, queue_bytes, stop)?)
        }
        Knobs::Uring(k) => {
            let (c, h) = uring::server::serve_broker(listener, queue_bytes, k, plan, stop)?;
            Ok(with_hub(c.to_counters(), &h))
        }
        Knobs::Peer(_) => Err(not_built_in(m)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Availability;
    use std::io::{Read, Write};
    use std::sync::Arc;
    use std::time::Duration;

    /// The factory runs each family's loop in-process and `Stop` ends it with the connection
    /// still open (the suite's own path when it serves in-process).
    #[test]
    fn serve_echoes_then_stops_on_request() {
        let env = crate::env::probe();
        for id in [
            "blocking",
            "epoll-lt",
            "epoll-et",
            "uring",
            "uring-multishot",
        ] {
            let m = crate::registry::model(id).unwrap();
            if let Availability::Unavailable(why) = m.availability(&env) {
                assert!(!m.always_available(), "{id}: {why}");
                continue;
            }
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let stop = Arc::new(Stop::new().unwrap());
            let (tx, rx) = std::sync::mpsc::channel();
            let s2 = stop.clone();
            std::thread::spawn(move || {
                let plan = CpuPlan::pair(0, None);
                let _ = tx.send(serve(m, l, crate::proto::Echo, &plan, &s2));
            });
            let mut c = std::net::TcpStream::connect(addr).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            c.write_all(b"hello").unwrap();
            let mut b = [0u8; 5];
            c.read_exact(&mut b).unwrap();
            assert_eq!(&b, b"hello", "{id}");
            stop.request();
            let counters = rx
                .recv_timeout(Duration::from_secs(5))
                .unwrap_or_else(|_| panic!("{id}: did not stop within 5 s"))
                .unwrap_or_else(|e| panic!("{id}: {e}"));
            assert_eq!(counters.get("accepts"), 1, "{id}: {counters:?}");
            assert_eq!(counters.get("bytes_out"), 5, "{id}: {counters:?}");
        }
    }
}
