//! The connection suite's churn (`ringside run conn`): a connection per request, neper's
//! tcp_crr, the shape of HTTP/1.1 with `Connection: close` and of TLS-less front ends. Each
//! request opens a TCP connection to the model's echo server (`ringside serve --protocol
//! echo`), sends one 64-byte message, reads the whole echo and verifies it, and closes. One op
//! is one connection, so the per-op figures are per connection: server CPU per connection
//! (every task, io_uring's kernel threads included), syscalls per connection (where multishot
//! accept, accept4 + epoll and a thread per connection differ most), latency from the
//! connect's start to the verified answer.
//!
//! Two workloads, one per sweep:
//! - `conn.churn`: closed loop at 1, 50 and 500 concurrent clients: each client opens its next
//!   connection as soon as its last one was answered and closed (capacity: connections/s);
//! - `conn.churn_rate`: open loop at fixed offered connection rates over 50 clients: a
//!   connection is started when it falls due, and its latency runs from then (its intended
//!   start), so a server that accepts late shows it; a server that achieves less than
//!   `results::rates::KEEP_UP` of the offer is flagged `fell_behind`.
//!
//! TIME_WAIT and ports: the client closes first, with SO_LINGER 0 (`load::Config::churn`): the
//! close sends a RST, so neither side keeps a TIME_WAIT socket and the client's port is free at
//! once. Each client holds at most one socket, so the ports in use never exceed the clients
//! (500 of the 28,232 of 32768-60999): the port range cannot be exhausted at any rate. Every
//! abortive close in the window is counted (`churn_abortive_closes`, equal to the ops but for
//! connections cut by the window's edges), and the connects of the whole run
//! (`churn_connects`, warm-up included) sit beside the server's own `server_accepts`, which
//! covers the same span. A failed connect is a `load_connect_errors` count and its client is
//! lost (`load_lost_conns`); a response that does not verify is never an op and fails the
//! cell.

use super::cell;
use super::echo::{accepts_small_messages, launch};
use super::equal_load::open_loop_counters;
use crate::error::CaseError;
use crate::load::echo::Echo;
use crate::measure::cell::ChurnCounters;
use crate::measure::Sample;
use crate::model::ModelSpec;
use crate::profile::Profile;
use crate::proto::ServeProtocol;
use crate::workload::{Ctx, Point, Workload};
use std::time::Duration;

const OP: &str = "one TCP connection: connect, one 64-byte message echoed and verified, \
    close with SO_LINGER 0 (closed loop: the client's next connect follows at once); latency \
    from the connect's start to the whole echo; CPU, context switches and syscalls are the \
    server's, measured from outside";

const OP_OPEN: &str = "one TCP connection at an offered rate over 50 clients: connect when \
    due, one 64-byte message echoed and verified, close with SO_LINGER 0 (open loop: latency \
    from the connection's intended start, so a server that accepts late shows it); CPU, \
    context switches and syscalls are the server's, measured from outside";

/// The parameters of the churn workloads.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Args {
    /// Concurrent clients, each with at most one connection open.
    pub(crate) clients: u64,
    pub(crate) msg_bytes: u64,
    pub(crate) duration_ms: u64,
    pub(crate) warmup_ms: u64,
    /// `conn.churn_rate`: the offered rate, connections/s over all clients.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) rate_per_sec: Option<u64>,
}

fn point(profile: Profile, clients: u64, rate_per_sec: Option<u64>) -> Point {
    let (warmup_ms, duration_ms) = cell::timing(profile);
    Point::of(Args {
        clients,
        msg_bytes: 64,
        duration_ms,
        warmup_ms,
        rate_per_sec,
    })
}

/// Clients of `conn.churn_rate`.
pub(crate) const RATE_CLIENTS: u64 = 50;

/// Offered connection rates of `conn.churn_rate`, per second over all clients.
pub(crate) fn rates(profile: Profile) -> &'static [u64] {
    match profile {
        Profile::Smoke => &[1_000],
        Profile::Quick => &[2_000, 5_000],
        Profile::Full => &[2_000, 5_000, 10_000, 15_000],
    }
}

/// `conn.churn`: a connection per request, closed loop at 1, 50 and 500 clients.
pub(crate) struct ConnChurn;
/// `conn.churn_rate`: a connection per request at offered rates, open loop.
pub(crate) struct ConnChurnRate;

impl Workload for ConnChurn {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Net
    }
    fn facts(&self) -> crate::results::facts::Facts {
        use crate::results::facts::{net_lines, Facts, Units};
        Facts::net(
            Units::CONNECTIONS,
            net_lines(&["clients"], "concurrent clients"),
        )
    }
    fn id(&self) -> &'static str {
        "conn.churn"
    }
    fn about(&self) -> &'static str {
        "a TCP connection per request (connect, 64 B echoed, close) per model, 1 to 500 \
         concurrent clients, loopback (runs when named)"
    }
    fn op(&self) -> &'static str {
        OP
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        accepts_small_messages(m)
    }
    fn by_default(&self) -> bool {
        false
    }
    fn points(&self, profile: Profile, _: &ModelSpec) -> Vec<Point> {
        let clients: &[u64] = match profile {
            Profile::Smoke => &[1, 50],
            _ => &[1, 50, 500],
        };
        clients.iter().map(|&c| point(profile, c, None)).collect()
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        run(ctx, m, p.args::<Args>()?, None)
    }
}

impl Workload for ConnChurnRate {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Net
    }
    /// At rates every model sustains: server CPU per connection and tail latency at equal
    /// load.
    fn facts(&self) -> crate::results::facts::Facts {
        use crate::results::facts::{lines, Facts, Metric, Units};
        Facts {
            rate_sweep: true,
            open_loop: true,
            ..Facts::net(
                Units::CONNECTIONS,
                lines(
                    &["rate_per_sec"],
                    "offered connections/s",
                    &[Metric::CpuPerOp, Metric::LatencyP99, Metric::OpsPerSec],
                    Metric::LatencyP99,
                ),
            )
        }
    }
    fn id(&self) -> &'static str {
        "conn.churn_rate"
    }
    fn about(&self) -> &'static str {
        "a TCP connection per request per model at offered connection rates (open loop, 50 \
         clients, 64 B): server CPU per connection and latency from the intended start (runs when named)"
    }
    fn op(&self) -> &'static str {
        OP_OPEN
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        accepts_small_messages(m)
    }
    fn by_default(&self) -> bool {
        false
    }
    fn points(&self, profile: Profile, _: &ModelSpec) -> Vec<Point> {
        rates(profile)
            .iter()
            .map(|&r| point(profile, RATE_CLIENTS, Some(r)))
            .collect()
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        let a = p.args::<Args>()?;
        let rate = a.rate_per_sec.ok_or_else(|| {
            CaseError::Failed(anyhow::anyhow!("a conn.churn_rate point without its rate"))
        })?;
        run(ctx, m, a, Some(rate as f64))
    }
}

/// One repetition: model `m`'s echo server driven a connection per message, closed loop or at
/// `rate` connections/s, with the churn counters (and the open-loop ones at a rate).
fn run(ctx: &Ctx<'_>, m: &ModelSpec, a: &Args, rate: Option<f64>) -> Result<Sample, CaseError> {
    let ex = Echo {
        msg_bytes: a.msg_bytes as usize,
    };
    let load = cell::Load {
        conns: a.clients as usize,
        warmup: Duration::from_millis(a.warmup_ms),
        duration: Duration::from_millis(a.duration_ms),
        rate,
        exchange: &ex,
        bytes_received: false,
        after: None,
        around: None,
        churn: true,
    };
    let (mut s, report) = cell::measure(ctx, launch(ctx, m, ServeProtocol::Echo)?, &load)?;
    s.counters.churn = Some(ChurnCounters {
        churn_abortive_closes: report.n.abortive_closes,
        churn_connects: report.n.connects,
    });
    if let Some(r) = rate {
        open_loop_counters(&mut s, r, &report);
    }
    Ok(s)
}
