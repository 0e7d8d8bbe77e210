//! `udp.echo` (suite `udp`, run when named): each model's UDP echo server (`ringside serve
//! --protocol udp-echo`, `io::udp`) driven by the UDP load (`load::udp`): [`FLOWS`] flows,
//! each a connected UDP socket, datagrams of 64 and 1,400 bytes. Each size has a closed-loop
//! capacity point ([`WINDOW`] datagrams outstanding per flow) and then an equal-load point:
//! every model offered, open loop, 30% of the slowest model's capacity at that size (measured
//! earlier in the run, `Point::equal_load`), where the target is no loss at all.
//!
//! One op is one datagram echoed whole, verified (flow, sequence and every byte) and
//! arriving in the window; a datagram not echoed within `load::udp::LOSS_TIMEOUT` is lost,
//! never an op. The cell records `dgram_sent`, `dgram_lost`, `dgram_late`, `dgram_duplicates`,
//! `dgram_reordered` and `dgram_send_failed` (the client's own kernel refused the send) among
//! its counters, the server's drops and send errors as `server_*`; a cell that lost any is
//! warned `datagrams_lost`. Server CPU per op is CPU per echoed datagram. Models without a UDP
//! server are not applicable with the reason (`ModelSpec::runs`, `Shape::Datagram`); every
//! other model serves it, the thread pool and the peers included, on one server CPU (tokio-mt:
//! on several, a task per worker).

use super::cell;
use super::echo::launch;
use super::equal_load::{offered_rate, open_loop_counters, with_equal_load};
use crate::error::CaseError;
use crate::load::udp::{Udp, LOSS_TIMEOUT};
use crate::measure::Sample;
use crate::model::{Knobs, ModelSpec, PeerKind, Shape};
use crate::profile::Profile;
use crate::proto::ServeProtocol;
use crate::workload::{Ctx, Point, Workload};
use std::time::Duration;

/// Flows (connected client sockets).
pub(crate) const FLOWS: u64 = 16;
/// Datagrams outstanding per flow in the closed loop: 64 in flight at most, well inside the
/// server's receive buffer, so a closed loop measures capacity, not overflow.
pub(crate) const WINDOW: u64 = 4;
/// Datagram sizes: the smallest useful one and one that fills a 1,500-byte MTU's payload.
pub(crate) const SIZES: &[u64] = &[64, 1400];

#[derive(serde::Serialize, serde::Deserialize)]
struct Args {
    /// Flows; `conns` so that `run --conns` sets it.
    conns: u64,
    /// Datagram bytes; `msg_bytes` so that `run --msg-bytes` sets it.
    msg_bytes: u64,
    window: u64,
    duration_ms: u64,
    warmup_ms: u64,
}

pub(crate) struct UdpEcho;

fn accepts(m: &ModelSpec) -> Result<(), String> {
    // Not planned where the server cannot run yet either (zero-copy receive).
    m.runs(Shape::Datagram { gro: false })
        .map_err(|r| format!("no UDP echo server: {}", r.why()))
}

impl Workload for UdpEcho {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Net
    }
    fn facts(&self) -> crate::results::facts::Facts {
        use crate::results::facts::{net_lines, Facts, Units};
        Facts::net(
            Units::DATAGRAMS,
            net_lines(&["msg_bytes"], "datagram size, bytes"),
        )
    }
    fn id(&self) -> &'static str {
        "udp.echo"
    }
    fn about(&self) -> &'static str {
        "UDP echo server per model: 16 flows, 64 B and 1,400 B datagrams, closed loop \
         (capacity) then open loop at 30% of the slowest model's capacity; every datagram \
         verified, loss counted (runs when named)"
    }
    fn op(&self) -> &'static str {
        "one datagram echoed to its flow's socket, verified whole (flow, sequence, every \
         byte) and arriving in the window; a datagram not echoed within the loss timeout is \
         lost, never an op; CPU and syscalls are the server's, measured from outside"
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        accepts(m)
    }
    fn accepts_on(&self, m: &ModelSpec, plan: &crate::measure::pin::CpuPlan) -> Result<(), String> {
        accepts(m)?;
        // tokio-mt is one runtime of a worker per server CPU sharing the socket: several CPUs
        // or none (as in every network workload).
        if matches!(m.knobs, Knobs::Peer(PeerKind::TokioMt)) {
            return super::echo::accepts_on_plan(m, plan);
        }
        if plan.server_cpus().len() > 1 {
            return Err(
                "the UDP echo server is one socket and one loop: it runs with one \
                        server CPU (tokio-mt: with several)"
                    .into(),
            );
        }
        Ok(())
    }
    fn by_default(&self) -> bool {
        false
    }
    fn limits(&self) -> crate::workload::Limits {
        // A datagram holds its header and fits the load's receive buffer.
        crate::workload::Limits {
            msg_bytes: Some((
                crate::proto::udp::HEADER as u64,
                crate::proto::udp::MAX_DATAGRAM as u64,
            )),
        }
    }
    /// The UDP driver (`load::udp`) is one epoll loop per thread.
    fn load_engines(&self) -> &'static [crate::load::Engine] {
        &[crate::load::Engine::Epoll]
    }
    fn points(&self, profile: Profile, _: &ModelSpec) -> Vec<Point> {
        let (warmup_ms, duration_ms) = cell::timing(profile);
        let sizes: &[u64] = match profile {
            Profile::Smoke => &[64],
            _ => SIZES,
        };
        let points = sizes
            .iter()
            .map(|&msg_bytes| {
                Point::of(Args {
                    conns: FLOWS,
                    msg_bytes,
                    window: WINDOW,
                    duration_ms,
                    warmup_ms,
                })
            })
            .collect();
        with_equal_load(points, |_| true)
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        let a = p.args::<Args>()?;
        let rate = match p.equal_load {
            Some(_) => Some(offered_rate(ctx, p)?),
            None => None,
        };
        let bad = |why: String| CaseError::Failed(anyhow::anyhow!("{why}"));
        let ex = Udp {
            datagram_bytes: usize::try_from(a.msg_bytes).map_err(|e| bad(e.to_string()))?,
            window: u32::try_from(a.window).map_err(|e| bad(e.to_string()))?,
            segments: 1,
            loss_timeout: LOSS_TIMEOUT,
        };
        let load = cell::Load {
            conns: a.conns as usize,
            warmup: Duration::from_millis(a.warmup_ms),
            duration: Duration::from_millis(a.duration_ms),
            rate,
            exchange: &ex,
            bytes_received: false,
            after: None,
            around: None,
            churn: false,
        };
        let (mut s, report) = cell::measure(ctx, launch(ctx, m, ServeProtocol::UdpEcho)?, &load)?;
        s.counters.dgram = Some(report.dgram);
        if let Some(r) = rate {
            open_loop_counters(&mut s, r, &report);
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_size_has_a_capacity_point_then_an_equal_load_point() {
        let m = crate::registry::model("epoll-lt").unwrap();
        let q = UdpEcho.points(Profile::Quick, m);
        assert_eq!(q.len(), 4);
        assert!(q[0].equal_load.is_none() && q[1].equal_load.is_some());
        assert_eq!(
            q[1].equal_load.as_ref().unwrap().capacity_of,
            q[0].params,
            "the open-loop point is driven at a share of its own size's capacity"
        );
        assert_eq!(UdpEcho.points(Profile::Smoke, m).len(), 2);
        assert!(!UdpEcho.by_default());
        assert!(UdpEcho.accepts(m).is_ok());
        for id in ["threadpool", "tokio", "monoio"] {
            let m = crate::registry::model(id).unwrap();
            assert!(UdpEcho.accepts(m).is_ok(), "{id}");
        }
        let f = crate::registry::model("uring-fixed").unwrap();
        assert!(UdpEcho.accepts(f).unwrap_err().contains("UDP"));
        // One server CPU: every server but tokio-mt; several: tokio-mt alone.
        let one = crate::measure::pin::CpuPlan::pair(0, None);
        let mut two = crate::measure::pin::CpuPlan::pair(0, Some(2));
        two.server = vec![0, 1];
        let mt = crate::registry::model("tokio-mt").unwrap();
        assert!(UdpEcho.accepts_on(m, &one).is_ok());
        assert!(UdpEcho.accepts_on(mt, &one).is_err());
        assert!(UdpEcho.accepts_on(mt, &two).is_ok());
        assert!(UdpEcho.accepts_on(m, &two).is_err());
    }
}
