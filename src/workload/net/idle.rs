//! `conn.idle`: what an idle connection costs. Each model's echo server holds `idle_conns`
//! idle connections (0, 1,000, 10,000; `full` adds 18,000, what a hard RLIMIT_NOFILE of 20,000
//! allows) while 50 busy ones are driven open loop at a fixed rate, the same rate at every point, so
//! that the point without idle connections is the busy connections' baseline.
//!
//! Per repetition: start the server; read its memory ([`memory::Snapshot`]: VmRSS, a memory
//! cgroup of its own, the machine's socket slab and TCP buffer pages); open the idle
//! connections one after another (`load::idle`), each answering one verified echo, so the
//! server has accepted it and set up whatever it keeps per connection; read its memory again;
//! then the usual open-loop repetition over the busy connections (`cell::measure`: server CPU
//! per message, latency from each message's intended send time). At the window's close the
//! idle connections still open and silent are counted (the server held them through it), and
//! they are closed before the server is stopped. The memory each idle connection cost is the
//! readings' change over the connections held, in the cell's `idle_memory`
//! (`stats::summary`); a reading the machine does not give is unavailable with its reason.
//!
//! Thread per connection: the blocking server gives each connection a thread of
//! `io::blocking::server::STACK_BYTES` of stack, at most `MAX_THREADS`; a point with more
//! connections than that is not applicable to it. Like every other server it keeps one fd per
//! connection.

use super::echo;
use super::{cell, launch::Launch};
use crate::error::CaseError;
use crate::load::echo::Echo;
use crate::load::idle::IdleConns;
use crate::measure::memory::{ConnMemory, MemCgroup, Snapshot};
use crate::measure::Sample;
use crate::model::{Knobs, ModelSpec, Threading};
use crate::profile::Profile;
use crate::proto::ServeProtocol;
use crate::results::Params;
use crate::workload::{Ctx, Point, Workload};
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

const OP: &str = "one 64-byte message echoed over TCP on one of 50 busy connections at a \
    fixed offered rate (open loop: latency from the message's intended send time; whole echo \
    received and verified) while the server holds idle_conns idle connections; CPU is the \
    server's, measured from outside; idle_memory: what each idle connection cost";

/// Busy connections, as in `echo.rate`.
const BUSY_CONNS: u64 = echo::RATE_CONNS;

/// Fds a process keeps beside its connections (listener, epoll, ring, pipes, /proc reads).
const FD_MARGIN: u64 = 1_000;

/// The parameters of a `conn.idle` point.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Args {
    /// Connections held idle beside the busy ones.
    pub(crate) idle_conns: u64,
    /// Busy connections.
    pub(crate) conns: u64,
    pub(crate) msg_bytes: u64,
    /// Messages/s over the busy connections.
    pub(crate) rate_per_sec: u64,
    pub(crate) duration_ms: u64,
    pub(crate) warmup_ms: u64,
}

/// The offered rate: one every model sustains on a 2-vCPU VM (`echo.rate`'s lower quick rate).
fn rate(profile: Profile) -> u64 {
    match profile {
        Profile::Smoke => 2_000,
        Profile::Quick | Profile::Full => 10_000,
    }
}

/// The most idle connections the hard RLIMIT_NOFILE allows both sides (each end of the
/// loopback is one fd in its process: the server and this one), less the busy connections
/// and [`FD_MARGIN`], in thousands; and below the ephemeral ports one source address has
/// (`load::CONNS_PER_SOURCE`, which the idle connections do not spread beyond).
pub(crate) fn most_idle() -> u64 {
    let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .maximum
        .unwrap_or(u64::MAX);
    let cap = hard.min(crate::load::CONNS_PER_SOURCE as u64);
    cap.saturating_sub(BUSY_CONNS + FD_MARGIN) / 1_000 * 1_000
}

/// The most idle connections that fit the hard RLIMIT_NOFILE beside the busy ones,
/// [`FD_MARGIN`] and `open` fds this process has open already.
fn idle_fit(open: u64) -> u64 {
    let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .maximum
        .unwrap_or(u64::MAX);
    hard.saturating_sub(BUSY_CONNS + FD_MARGIN + open)
}

/// The idle counts of a profile. `full`'s last, 18,000, is what a hard RLIMIT_NOFILE of
/// 20,000 allows ([`most_idle`]); where the limit allows fewer, that point is `unavailable`,
/// saying so (the points are the same on every machine, so runs compare).
fn idle_counts(profile: Profile) -> &'static [u64] {
    match profile {
        Profile::Smoke => &[0, 200],
        Profile::Quick => &[0, 1_000, 10_000],
        Profile::Full => &[0, 1_000, 10_000, 18_000],
    }
}

/// Where the memory figures come from, recorded in each cell's `facts`.
const MEMORY_FROM: &str = "VmRSS; the server's memory cgroup v1 (kmem, kmem.tcp); \
    slabinfo TCP+sock_inode_cache and sockstat TCP mem (machine-wide, both ends)";

/// `conn.idle`.
pub(crate) struct ConnIdle;

impl Workload for ConnIdle {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Net
    }
    /// Open loop at one rate: the busy connections' CPU per message and p99 against the idle
    /// connections held (ranked by p99, as an open-loop sweep is).
    fn facts(&self) -> crate::results::facts::Facts {
        use crate::results::facts::{ChartSpec, Facts, Metric, Sweep, Units};
        Facts {
            open_loop: true,
            ..Facts::net(
                Units::MESSAGES,
                ChartSpec {
                    sweep: Some(Sweep {
                        params: &["idle_conns"],
                        axis: "idle connections held",
                        // Its first point is 0.
                        log_x: false,
                    }),
                    metrics: &[
                        Metric::CpuPerOp,
                        Metric::LatencyP99,
                        Metric::IdleRssBytes,
                        Metric::IdleKernelBytes,
                    ],
                    log_y: true,
                    panels: &[],
                    verdict: Metric::LatencyP99,
                },
            )
        }
    }
    fn id(&self) -> &'static str {
        "conn.idle"
    }
    fn about(&self) -> &'static str {
        "idle connections held (0, 1,000, 10,000) beside 50 busy ones at a fixed rate: server \
         memory per idle connection, the busy ones' CPU and p99 (runs when named)"
    }
    fn op(&self) -> &'static str {
        OP
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        echo::accepts_small_messages(m)
    }
    fn by_default(&self) -> bool {
        false
    }
    fn points(&self, profile: Profile, _: &ModelSpec) -> Vec<Point> {
        let (warmup_ms, duration_ms) = cell::timing(profile);
        idle_counts(profile)
            .iter()
            .map(|&idle_conns| {
                let mut p = Point::of(Args {
                    idle_conns,
                    conns: BUSY_CONNS,
                    msg_bytes: 64,
                    rate_per_sec: rate(profile),
                    duration_ms,
                    warmup_ms,
                });
                if idle_conns > 0 {
                    p.facts = Params::default().with("memory_from", MEMORY_FROM);
                }
                p
            })
            .collect()
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        let a = p.args::<Args>()?;
        if let Some(r) = ctx.remote {
            if r.server.is_some() || !r.load.is_empty() {
                return Err(CaseError::NotApplicable(
                    "conn.idle holds its idle connections and reads the server's memory on \
                     this host: it runs without --server-host and --load-host"
                        .into(),
                ));
            }
        }
        let total = a.idle_conns + a.conns;
        let most = crate::io::blocking::server::MAX_THREADS as u64;
        if matches!(m.knobs, Knobs::Blocking(Threading::PerConnection)) && total > most {
            return Err(CaseError::NotApplicable(format!(
                "the blocking server runs a thread per connection, at most {most}: {total} \
                 connections would pause its accepting"
            )));
        }
        // The fds this process holds already (a parent may have passed it many) count against
        // the same limit as the connections; the server starts with none of them (`child`).
        let open = crate::io::sys::open_fds().map_err(|e| {
            CaseError::Unavailable(format!("cannot count this process's open fds: {e}"))
        })?;
        let fit = most_idle().min(idle_fit(open));
        if a.idle_conns > fit {
            return Err(CaseError::Unavailable(format!(
                "{} idle connections do not fit the hard RLIMIT_NOFILE here: at most {fit} \
                 beside {} busy ones, the {open} fds this process has open and {FD_MARGIN} \
                 more in each process",
                a.idle_conns, a.conns
            )));
        }
        // Before the server starts, so that it inherits the limit: one fd per connection in
        // every server (the blocking one included: `io::blocking::live`).
        crate::io::sys::raise_nofile(total + open + FD_MARGIN).map_err(|e| {
            CaseError::Unavailable(format!(
                "{} idle and {} busy connections: {e}",
                a.idle_conns, a.conns
            ))
        })?;
        let launch = echo::launch(ctx, m, ServeProtocol::Echo)?;
        if matches!(launch, Launch::Remote { .. }) {
            return Err(CaseError::NotApplicable(
                "conn.idle reads the server's memory on this host".into(),
            ));
        }
        let ex = Echo {
            msg_bytes: a.msg_bytes as usize,
        };
        let holder = Holder {
            n: a.idle_conns as usize,
            first_id: a.conns as u32,
            ex: Echo {
                msg_bytes: a.msg_bytes as usize,
            },
            state: Mutex::new(State::default()),
        };
        let rate = a.rate_per_sec as f64;
        let load = cell::Load {
            conns: a.conns as usize,
            warmup: Duration::from_millis(a.warmup_ms),
            duration: Duration::from_millis(a.duration_ms),
            rate: Some(rate),
            exchange: &ex,
            bytes_received: false,
            after: None,
            around: Some(&holder),
            churn: false,
        };
        let (mut s, report) = cell::measure(ctx, launch, &load)?;
        super::equal_load::open_loop_counters(&mut s, rate, &report);
        let st = holder.state.into_inner().unwrap_or_else(|e| e.into_inner());
        // The cgroup goes once the server has exited (it has: `cell::measure` stopped it).
        drop(st.cg);
        if let Some(mem) = st.memory {
            s.counters.add("idle_conns_held", mem.conns);
            s.counters.add("idle_conns_live", mem.live_at_close);
            s.memory = Some(mem);
        }
        Ok(s)
    }
}

/// The idle connections and the server's memory around them, for one repetition.
struct Holder {
    n: usize,
    /// The first idle connection's id (after the busy ones').
    first_id: u32,
    ex: Echo,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    cg: Option<Result<MemCgroup, String>>,
    idle: Option<IdleConns>,
    memory: Option<ConnMemory>,
}

impl cell::Around for Holder {
    fn before(&self, addr: SocketAddr, members: &dyn Fn() -> Vec<u32>) -> Result<(), String> {
        if self.n == 0 {
            return Ok(());
        }
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let cg = MemCgroup::create().and_then(|c| {
            members().iter().try_for_each(|&p| c.enter(p))?;
            Ok(c)
        });
        let before = Snapshot::take(&members(), &cg);
        let idle = IdleConns::open(
            addr,
            self.n,
            self.first_id,
            &self.ex,
            crate::load::DEFAULT_MSG_TIMEOUT,
        )?;
        // The server's processes now: one that forks per connection has a child for each.
        let after = Snapshot::take(&members(), &cg);
        st.memory = Some(ConnMemory::between(&before, &after, idle.len() as u64));
        st.idle = Some(idle);
        st.cg = Some(cg);
        Ok(())
    }

    fn after(&self) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(idle) = st.idle.take() {
            let live = idle.live();
            if let Some(m) = st.memory.as_mut() {
                m.live_at_close = live;
            }
            idle.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_hold_none_then_more_at_one_rate() {
        for profile in [Profile::Smoke, Profile::Quick, Profile::Full] {
            let m = crate::registry::model("epoll-lt").unwrap();
            let pts = ConnIdle.points(profile, m);
            let args: Vec<&Args> = pts.iter().map(|p| p.args::<Args>().unwrap()).collect();
            assert_eq!(args[0].idle_conns, 0, "{profile:?}");
            assert!(args.windows(2).all(|w| w[0].idle_conns < w[1].idle_conns));
            assert!(args
                .iter()
                .all(|a| a.rate_per_sec == args[0].rate_per_sec && a.conns == BUSY_CONNS));
            // The memory's sources are named where there are idle connections.
            for (p, a) in pts.iter().zip(&args) {
                assert_eq!(p.facts.0.contains_key("memory_from"), a.idle_conns > 0);
            }
        }
        assert!(most_idle() <= crate::load::CONNS_PER_SOURCE as u64);
        // A hard limit of 20,000 fds allows full's last point.
        let last = *idle_counts(Profile::Full).last().unwrap();
        assert_eq!((20_000 - BUSY_CONNS - FD_MARGIN) / 1_000 * 1_000, last);
    }

    /// The fds this process holds count against the limit: 2,150 of them leave 2,150 fewer
    /// idle connections room (a fixed margin alone let such a cell start and then fail).
    #[test]
    fn open_fds_shrink_what_fits() {
        let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .maximum
            .unwrap_or(u64::MAX);
        assert_eq!(idle_fit(0), hard.saturating_sub(BUSY_CONNS + FD_MARGIN));
        assert_eq!(idle_fit(2_150), idle_fit(0).saturating_sub(2_150));
        let open = crate::io::sys::open_fds().unwrap();
        assert!(open >= 3, "stdio at least: {open}");
    }
}
