//! `ringside serve`: one model's server on one address until SIGINT/SIGTERM.
//!
//! Prints exactly one line `listening on ADDR` (flushed) once the model is up — its setup
//! (ring, registered tables, buffer ring) succeeded and the socket listens — and on exit one
//! line `counters <json>` with what the server counted for itself, so a suite running it as a
//! child can store them. Unknown model or protocol, bad CPUs: exit 2 naming the valid ones.
//! A model this machine cannot run (refused by the availability probe or by the kernel at
//! setup): exit [`EXIT_UNAVAILABLE`] without announcing, stderr `error: unavailable: <why>`.
//! The peers (tokio, tokio-mt, monoio) announce once their runtime is up, every worker thread
//! started, so a supervisor that opens counters on the server's tasks finds all of them.

use crate::child::{announce, EXIT_UNAVAILABLE};
use crate::cli::ServeArgs;
use crate::error::{CaseError, InputError};
use crate::io::{self, Stop};
use crate::measure::pin::{self, CpuPlan};
use crate::model::{Availability, Knobs, ModelSpec, PeerKind, Refusal, Shape};
use crate::peer::{Job, Outcome};
use crate::proto::http::{served_body, MAX_BODY_BYTES};
use crate::proto::ServeProtocol;
use crate::proto::{Echo, Http, Protocol, Stream, WithIdle};
use crate::registry::{self, MODELS};
use anyhow::{anyhow, Context};
use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// Listen backlog: room for thousands of connects arriving at once.
pub(crate) const BACKLOG: i32 = 4096;
/// Largest `--idle-timeout-ms`: one day.
pub(crate) const MAX_IDLE_TIMEOUT_MS: u64 = 86_400_000;

pub fn run(a: ServeArgs) -> anyhow::Result<i32> {
    let req = Request::of(a)?;
    let at = match req.listen.addr.ip().is_loopback() {
        true => crate::model::probe::Serving::Loopback,
        false => crate::model::probe::Serving::Network,
    };
    let model = req.model;
    if let Availability::Unavailable(why) = model.availability_serving(&crate::env::probe(), at) {
        return Ok(unavailable(&why));
    }
    let body: Arc<[u8]> = served_body(req.body_bytes.map(|n| n as usize)).into();
    // tokio-mt is one runtime of N workers on one listener, not N servers.
    let one_runtime = peer_kind(model) == Some(PeerKind::TokioMt);
    let how = How {
        model,
        served: req.served,
        idle: req.idle,
        body,
        workers: req.threads as usize,
        worker_cpus: match &req.listen.cpus {
            Some(list) if one_runtime => (0..req.threads as usize)
                .map(|i| list[i % list.len()])
                .collect(),
            _ => Vec::new(),
        },
    };
    let stop = Arc::new(Stop::new()?);
    block_stop_signals()?;
    {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || wait_stop_signal(&stop))?;
    }
    let counters = match serve_until_stopped(&how, &req.listen, &stop)? {
        Ok(c) => c,
        Err(CaseError::Unavailable(why)) => return Ok(unavailable(&why)),
        Err(e) => return Err(anyhow!("{e}")),
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "counters {}", serde_json::to_string(&counters)?)?;
    out.flush()?;
    Ok(0)
}

/// What `serve` was asked for, every flag checked before anything starts (a bad one: exit 2,
/// naming what is valid).
struct Request {
    model: &'static ModelSpec,
    served: Served,
    /// `--idle-timeout-ms` ([`idle_override`]).
    idle: Option<Option<std::time::Duration>>,
    /// `--body-bytes` (HTTP only).
    body_bytes: Option<u64>,
    /// `--threads`: server threads, or tokio-mt's workers.
    threads: u64,
    listen: Listen,
}

/// Where and how the server listens: one UDP socket, one TCP listener (one loop, or one
/// runtime's workers), or `--threads` listeners of their own.
struct Listen {
    addr: SocketAddr,
    /// `--protocol udp-echo` or `udp-echo-gro` (`gro`): a UDP socket, no listener.
    udp: bool,
    gro: bool,
    /// Server threads of their own (`--threads` > 1, not one runtime's workers).
    threads: Option<usize>,
    /// `--cpus`, when given.
    cpus: Option<Vec<u32>>,
    /// The CPUs this process may use.
    online: Vec<u32>,
    sqpoll_cpu: Option<u32>,
}

impl Request {
    fn of(a: ServeArgs) -> anyhow::Result<Request> {
        let protocol = ServeProtocol::from(a.protocol);
        let served = Served::of(protocol, a.body_bytes)?;
        let udp = matches!(protocol, ServeProtocol::UdpEcho | ServeProtocol::UdpEchoGro);
        let pubsub = protocol == ServeProtocol::Pubsub;
        let model = serving_model(&a.model, protocol)?;
        // One socket: one loop, or one runtime's workers (tokio-mt) sharing it. The thread
        // pool's size is its row's knob, not `--threads`.
        if udp && a.threads > 1 && peer_kind(model) != Some(PeerKind::TokioMt) {
            return Err(InputError::BadValue {
                flag: "--threads",
                given: a.threads.to_string(),
                valid: "--protocol udp-echo is one socket and one loop (tokio-mt: one runtime of \
                        --threads workers on it): valid: 1"
                    .into(),
            }
            .into());
        }
        if pubsub && a.threads > 1 {
            return Err(InputError::BadValue {
                flag: "--threads",
                given: a.threads.to_string(),
                valid: "--protocol pubsub is one broker (one hub): valid: 1".into(),
            }
            .into());
        }
        let addr: SocketAddr = a.addr.parse().map_err(|e| InputError::BadAddr {
            given: a.addr.clone(),
            why: format!("{e} (expected IP:PORT, e.g. 127.0.0.1:0)"),
        })?;
        let idle = idle_override(a.idle_timeout_ms, peer_kind(model).is_some())?;
        if !(1..=MAX_THREADS).contains(&a.threads) {
            return Err(InputError::BadValue {
                flag: "--threads",
                given: a.threads.to_string(),
                valid: format!("valid: 1..={MAX_THREADS}"),
            }
            .into());
        }
        let online = pin::allowed_cpus();
        let cpus = match &a.cpus {
            Some(s) => Some(super::run::parse_cpus("--cpus", s, &online)?),
            None => None,
        };
        if let Some(c) = a.sqpoll_cpu.filter(|c| !online.contains(c)) {
            return Err(InputError::BadValue {
                flag: "--sqpoll-cpu",
                given: c.to_string(),
                valid: format!(
                    "valid: a CPU this process may use ({})",
                    crate::measure::topology::list_string(&online)
                ),
            }
            .into());
        }
        // tokio-mt is one runtime of N workers on one listener, not N servers.
        let one_runtime = peer_kind(model) == Some(PeerKind::TokioMt);
        Ok(Request {
            model,
            served,
            idle,
            body_bytes: a.body_bytes,
            threads: a.threads,
            listen: Listen {
                addr,
                udp,
                gro: protocol == ServeProtocol::UdpEchoGro,
                threads: (!udp && a.threads > 1 && !one_runtime).then_some(a.threads as usize),
                cpus,
                online,
                sqpoll_cpu: a.sqpoll_cpu,
            },
        })
    }
}

/// The model `given` names, if it serves `protocol` (`ModelSpec::runs`: a built-in server, or
/// a peer, tokio or monoio, that serves from src/peer/); else the refusal, naming the servers.
fn serving_model(given: &str, protocol: ServeProtocol) -> Result<&'static ModelSpec, InputError> {
    let shape = Shape::from(protocol);
    let udp = matches!(protocol, ServeProtocol::UdpEcho | ServeProtocol::UdpEchoGro);
    let pubsub = protocol == ServeProtocol::Pubsub;
    // The servers named when the model is not one: for TCP and the broker every model with
    // one (a row that cannot run here exits unavailable when started), for UDP those that run.
    let listed = |m: &ModelSpec| match udp {
        true => m.runs(shape).is_ok(),
        false => m.applies(shape).is_ok(),
    };
    let servers = || {
        MODELS
            .iter()
            .filter(|m| listed(m))
            .map(|m| m.id)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(model) = registry::model(given) else {
        return Err(InputError::UnknownModel {
            given: given.to_string(),
            valid: servers(),
        });
    };
    match model.runs(shape) {
        Ok(()) => Ok(model),
        Err(Refusal::NotApplicable(_)) if !udp => Err(InputError::NotAServer {
            given: given.to_string(),
            valid: servers(),
        }),
        // A TCP server that cannot run yet says why when it starts (exit unavailable).
        Err(Refusal::Unavailable(_)) if !udp && !pubsub => Ok(model),
        // The broker that cannot run yet, and the models without a UDP echo server.
        Err(r) => {
            let valid: Vec<&str> = MODELS
                .iter()
                .filter(|m| m.runs(shape).is_ok())
                .map(|m| m.id)
                .collect();
            Err(InputError::BadValue {
                flag: "--model",
                given: given.to_string(),
                valid: format!(
                    "{}; --protocol {} is served by: {}",
                    r.why(),
                    protocol.as_str(),
                    valid.join(", ")
                ),
            })
        }
    }
}

/// Binds, announces `listening on ADDR` once the server is up, and serves until `stop`: UDP
/// echo on one socket, one TCP listener in this thread, or `--threads` listeners of their own
/// ([`serve_threads`]). The outer error is a setup fault (exit 1); the inner one the server's.
fn serve_until_stopped(
    how: &How,
    listen: &Listen,
    stop: &Arc<Stop>,
) -> anyhow::Result<Result<crate::measure::Counters, CaseError>> {
    let addr = listen.addr;
    if let Some(n) = listen.threads {
        let cpus = listen.cpus.clone().unwrap_or_else(|| listen.online.clone());
        return serve_threads(how, n, &cpus, listen.sqpoll_cpu, addr, stop);
    }
    let plan = match &listen.cpus {
        Some(list) => CpuPlan::from_list(list),
        None => CpuPlan::default_for(&listen.online),
    };
    let plan = match listen.sqpoll_cpu {
        Some(c) => CpuPlan::pair(plan.measured, Some(c)),
        None => plan,
    };
    if listen.cpus.is_some() {
        // Threads created from here on (connection threads) inherit it.
        pin::pin_this_thread(plan.measured).context("pinning the server")?;
    }
    if listen.udp {
        let sock = io::udp::bind(addr).with_context(|| format!("binding UDP {addr}"))?;
        let listening = format!("listening on {}", sock.local_addr()?);
        stop.on_ready(move || {
            let _ = announce(&listening);
        });
        return Ok(match listen.gro {
            true => io::udp_gso::serve_udp_gro(how.model, sock, &plan, stop),
            false => how.serve_udp(sock, &plan, stop),
        });
    }
    let listener = TcpListener::bind(addr).with_context(|| format!("binding {addr}"))?;
    tune_listener(&listener)?;
    let listening = format!("listening on {}", listener.local_addr()?);
    // Announced by the server itself once its setup succeeded (a peer: its runtime is up).
    stop.on_ready(move || {
        // A parent that is gone kills this process (PR_SET_PDEATHSIG): nothing to do.
        let _ = announce(&listening);
    });
    Ok(how.serve(listener, &plan, stop))
}

/// Most `--threads`.
pub(crate) const MAX_THREADS: u64 = 1024;

/// What a server speaks, parsed once from `--protocol` and `--body-bytes`.
enum Served {
    Echo,
    Http(Http),
    /// `--protocol sink|source` (bulk transfer).
    Stream(Stream),
    /// `--protocol pubsub`: the broker (`proto::pubsub`), subscriber queues of
    /// `proto::pubsub::DEFAULT_QUEUE_BYTES`.
    Pubsub,
    /// `--protocol udp-echo`: served before any TCP listener exists (`io::udp`).
    Udp,
}

impl Served {
    /// What `--protocol` and `--body-bytes` ask for; a body size is HTTP's only, and at most
    /// [`MAX_BODY_BYTES`].
    fn of(protocol: ServeProtocol, body_bytes: Option<u64>) -> Result<Served, InputError> {
        Ok(match (protocol, body_bytes) {
            (ServeProtocol::Http, Some(n)) if n > MAX_BODY_BYTES as u64 => {
                return Err(InputError::BadValue {
                    flag: "--body-bytes",
                    given: n.to_string(),
                    valid: format!("must be between 0 and {MAX_BODY_BYTES}"),
                })
            }
            (ServeProtocol::Http, n) => Served::Http(Http::new(n.map(|n| n as usize))),
            (_, Some(n)) => {
                return Err(InputError::BadValue {
                    flag: "--body-bytes",
                    given: n.to_string(),
                    valid: "applies to --protocol http only".into(),
                })
            }
            (ServeProtocol::Echo, None) => Served::Echo,
            // Bulk transfer (`stream.*`): read-verify-discard, or pattern bytes on request.
            (ServeProtocol::Sink, None) => Served::Stream(Stream::Sink),
            (ServeProtocol::Source, None) => Served::Stream(Stream::Source),
            (ServeProtocol::Pubsub, None) => Served::Pubsub,
            (ServeProtocol::UdpEcho | ServeProtocol::UdpEchoGro, None) => Served::Udp,
        })
    }
}

/// What one server thread serves: the model, its protocol and the HTTP body.
struct How {
    model: &'static crate::model::ModelSpec,
    served: Served,
    idle: Option<Option<std::time::Duration>>,
    body: Arc<[u8]>,
    /// `tokio-mt`: its worker threads (`--threads`) and the CPUs they are pinned to, one each
    /// round-robin (`--cpus`; empty: not pinned). The other models ignore them.
    workers: usize,
    worker_cpus: Vec<u32>,
}

impl How {
    /// Serves UDP echo on `sock` in this thread until `stop`: a built-in server
    /// (`io::udp::serve_udp`) or a peer's (`peer::serve_udp`, with the same counters).
    fn serve_udp(
        &self,
        sock: std::net::UdpSocket,
        plan: &CpuPlan,
        stop: &Arc<Stop>,
    ) -> Result<crate::measure::Counters, CaseError> {
        match peer_kind(self.model) {
            Some(kind) => self.serve_peer(kind, Job::<Echo>::Udp(sock), stop),
            None => io::udp::serve_udp(self.model, sock, plan, stop),
        }
    }

    /// Serves `job` with contender `kind` in this thread until `stop` (tokio, monoio: one
    /// runtime; tokio-mt: its workers), its counts named as ringside's own servers' are.
    fn serve_peer<P: Protocol>(
        &self,
        kind: PeerKind,
        job: Job<P>,
        stop: &Arc<Stop>,
    ) -> Result<crate::measure::Counters, CaseError> {
        let flag = peer_flag(stop)?;
        let ready = || stop.ready();
        let setup = crate::peer::Setup {
            workers: self.workers,
            cpus: &self.worker_cpus,
            ready: &ready,
        };
        let outcome = crate::peer::serve(kind, job, flag, setup).map_err(CaseError::Failed)?;
        let mut c = outcome.counters();
        c.add("peer_runs", 1);
        // A broker is one hub, whatever runs it.
        if kind == PeerKind::TokioMt && !matches!(outcome, Outcome::Broker(..)) {
            c.add("server_threads", self.workers as u64);
        }
        Ok(c)
    }

    /// Serves `listener` in this thread until `stop`: a built-in server (which calls
    /// `stop.ready()` once its setup succeeded) or a peer (tokio, monoio: one current-thread
    /// runtime in this thread).
    fn serve(
        &self,
        listener: TcpListener,
        plan: &CpuPlan,
        stop: &Arc<Stop>,
    ) -> Result<crate::measure::Counters, CaseError> {
        match peer_kind(self.model) {
            Some(kind) => match &self.served {
                Served::Stream(s) => self.serve_peer(kind, Job::Proto(listener, *s), stop),
                // tokio's HTTP contender is hyper's server; monoio has none of its own, so it
                // runs ringside's sans-I/O HTTP protocol in a plain read/write loop.
                Served::Http(_) if matches!(kind, PeerKind::Tokio | PeerKind::TokioMt) => {
                    let job = Job::<Echo>::Http(listener, self.body.clone());
                    self.serve_peer(kind, job, stop)
                }
                Served::Http(h) => self.serve_peer(kind, Job::Proto(listener, h.clone()), stop),
                Served::Echo => self.serve_peer(kind, Job::<Echo>::Echo(listener), stop),
                Served::Udp => Err(not_tcp()),
                Served::Pubsub => {
                    let q = crate::proto::pubsub::DEFAULT_QUEUE_BYTES;
                    self.serve_peer(kind, Job::<Echo>::Pubsub(listener, q), stop)
                }
            },
            None => match &self.served {
                Served::Stream(s) => {
                    let idle = self.idle.unwrap_or_else(|| s.idle_timeout());
                    let proto = WithIdle { inner: *s, idle };
                    io::serve(self.model, listener, proto, plan, stop)
                }
                Served::Http(h) => {
                    let idle = self.idle.unwrap_or_else(|| h.idle_timeout());
                    let proto = WithIdle {
                        inner: h.clone(),
                        idle,
                    };
                    io::serve(self.model, listener, proto, plan, stop)
                }
                Served::Pubsub => io::serve_pubsub(
                    self.model,
                    listener,
                    crate::proto::pubsub::DEFAULT_QUEUE_BYTES,
                    plan,
                    stop,
                ),
                Served::Udp => Err(not_tcp()),
                Served::Echo => {
                    let idle = self.idle.unwrap_or_else(|| Echo.idle_timeout());
                    let proto = WithIdle { inner: Echo, idle };
                    io::serve(self.model, listener, proto, plan, stop)
                }
            },
        }
    }
}

/// Peers stop on a flag they poll: one set when `stop` is requested (by a thread of its own).
fn peer_flag(stop: &Arc<Stop>) -> Result<Arc<AtomicBool>, CaseError> {
    let flag = Arc::new(AtomicBool::new(false));
    let (f, stop) = (flag.clone(), stop.clone());
    std::thread::Builder::new()
        .name("peer-stop".into())
        .spawn(move || {
            stop.wait();
            f.store(true, Ordering::SeqCst);
        })
        .map_err(|e| CaseError::Failed(e.into()))?;
    Ok(flag)
}

/// UDP echo never reaches a TCP listener (`run` serves it with `io::udp::serve_udp`).
fn not_tcp() -> CaseError {
    CaseError::not_applicable("--protocol udp-echo is served on a UDP socket, not a listener")
}

/// `--threads N` > 1: N server threads, shared nothing — each its own SO_REUSEPORT listener on
/// one address (the kernel spreads connections by their 4-tuple hash), its own event loop or
/// ring and its own counters — pinned round-robin over `cpus`. `listening on` is printed once
/// every thread's setup succeeded. A thread that ends (an error, a panic) stops the others,
/// and the first error is the result. The counters are the threads' sums, plus
/// `server_threads` and `accepts_thread_<i>` (uneven spread shows).
fn serve_threads(
    how: &How,
    n: usize,
    cpus: &[u32],
    sqpoll_cpu: Option<u32>,
    addr: SocketAddr,
    stop: &Arc<Stop>,
) -> anyhow::Result<Result<crate::measure::Counters, CaseError>> {
    let first = io::sys::reuseport_listener(addr, BACKLOG)
        .with_context(|| format!("binding {addr} (SO_REUSEPORT)"))?;
    let local = first.local_addr()?;
    let mut listeners = vec![first];
    for _ in 1..n {
        listeners.push(
            io::sys::reuseport_listener(local, BACKLOG)
                .with_context(|| format!("binding {local} again (SO_REUSEPORT)"))?,
        );
    }
    for l in &listeners {
        tune_listener(l)?;
    }
    let listening = format!("listening on {local}");
    let ready = Arc::new(AtomicUsize::new(0));
    let mut stops = Vec::with_capacity(n);
    for _ in 0..n {
        let s = Arc::new(Stop::new()?);
        let (ready, listening) = (ready.clone(), listening.clone());
        s.on_ready(move || {
            if ready.fetch_add(1, Ordering::SeqCst) + 1 == n {
                let _ = announce(&listening);
            }
        });
        stops.push(s);
    }
    let results: Vec<Result<crate::measure::Counters, CaseError>> = std::thread::scope(|sc| {
        let stops = &stops;
        sc.spawn(move || {
            stop.wait();
            for s in stops {
                s.request();
            }
        });
        let handles: Vec<_> = listeners
            .into_iter()
            .enumerate()
            .map(|(i, l)| {
                let cpu = cpus[i % cpus.len()];
                sc.spawn(move || {
                    let plan = CpuPlan::pair(cpu, sqpoll_cpu);
                    let r = match pin::pin_this_thread(cpu) {
                        Err(e) => Err(CaseError::Failed(anyhow!("server thread {i}: {e}"))),
                        Ok(()) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            how.serve(l, &plan, &stops[i])
                        }))
                        .unwrap_or_else(|_| {
                            Err(CaseError::Failed(anyhow!("server thread {i} panicked")))
                        }),
                    };
                    // One thread ending ends them all.
                    if !stop.requested() {
                        stop.request();
                    }
                    r.map_err(|e| match e {
                        CaseError::Failed(e) => {
                            CaseError::Failed(anyhow!("server thread {i} (CPU {cpu}): {e:#}"))
                        }
                        other => other,
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(CaseError::Failed(anyhow!("a server thread panicked"))))
            })
            .collect()
    });
    let mut total = crate::measure::Counters::default();
    for (i, r) in results.into_iter().enumerate() {
        let c = match r {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
        total.add(&format!("accepts_thread_{i}"), c.get("accepts"));
        total.merge(&c);
    }
    total.add("server_threads", n as u64);
    Ok(Ok(total))
}

/// Says why the model cannot run here and gives the exit code that says so to a supervisor.
fn unavailable(why: &str) -> i32 {
    eprintln!("error: unavailable: {why}");
    EXIT_UNAVAILABLE
}

/// `--idle-timeout-ms`: `None` keeps the protocol's own limit; `Some(None)` is 0 (never).
fn idle_override(
    ms: Option<u64>,
    peer: bool,
) -> Result<Option<Option<std::time::Duration>>, InputError> {
    let Some(ms) = ms else {
        return Ok(None);
    };
    let bad = |valid: &str| InputError::BadValue {
        flag: "--idle-timeout-ms",
        given: ms.to_string(),
        valid: valid.to_string(),
    };
    if ms > MAX_IDLE_TIMEOUT_MS {
        return Err(bad(&format!(
            "valid: 0 (never) or 1..={MAX_IDLE_TIMEOUT_MS} ms"
        )));
    }
    if peer && ms > 0 {
        return Err(bad(
            "only the built-in servers enforce an idle timeout, not the peers (tokio, monoio)",
        ));
    }
    Ok(Some((ms > 0).then(|| std::time::Duration::from_millis(ms))))
}

/// The peer a model row stands for, if it is one that `serve` can run (not `ext:`).
fn peer_kind(m: &crate::model::ModelSpec) -> Option<PeerKind> {
    match m.knobs {
        Knobs::Peer(k) if k.in_process() => Some(k),
        _ => None,
    }
}

/// TCP_NODELAY (inherited by accepted sockets) and a deep backlog.
fn tune_listener(l: &TcpListener) -> std::io::Result<()> {
    rustix::net::sockopt::set_tcp_nodelay(l, true)?;
    // listen(2) again on a listening socket only changes its backlog.
    rustix::net::listen(l, BACKLOG)?;
    Ok(())
}

// raw: the signal mask and sigwait stay glibc's. rustix has them only in its `runtime` API
// (unsafe, for programs without libc), which would bypass glibc's own bookkeeping of the mask.
fn stop_sigset() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset/sigaddset initialise it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        set
    }
}

/// Blocks SIGINT/SIGTERM in this thread and every thread it creates afterwards, so only the
/// signal thread's sigwait receives them.
fn block_stop_signals() -> std::io::Result<()> {
    let set = stop_sigset();
    // SAFETY: valid set pointer; the old mask is not needed.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if r != 0 {
        return Err(std::io::Error::from_raw_os_error(r));
    }
    Ok(())
}

fn wait_stop_signal(stop: &Stop) {
    let set = stop_sigset();
    let mut sig: libc::c_int = 0;
    // SAFETY: valid set and output pointers; the signals are blocked in every thread.
    while unsafe { libc::sigwait(&set, &mut sig) } != 0 {}
    stop.request();
}
