//! `udp.echo_gso` (suite `udp`, run when named): what UDP segmentation offload changes for an
//! echo server, at one shape. [`FLOWS`] flows, each a connected UDP socket, send bursts of
//! [`SEGMENTS`] same-size datagrams to the server, each burst in one sendmsg with UDP_SEGMENT
//! (closed loop, [`WINDOW`] datagrams outstanding per flow: two bursts); on loopback the kernel
//! keeps a burst whole up to the server's socket. Two points per size, the shape equal:
//!
//! - `offload=none`: the server is the plain `udp.echo` server (`ringside serve --protocol
//!   udp-echo`); the kernel cuts each burst into datagrams before its socket, and it receives
//!   and echoes each one.
//! - `offload=gso_gro`: the server's socket has UDP_GRO (`--protocol udp-echo-gro`,
//!   `io::udp_gso`): it receives a burst as one buffer, judges every segment, and echoes the
//!   sound ones with one sendmsg carrying UDP_SEGMENT.
//!
//! The client receives per datagram (no GRO on its sockets) and verifies each as `udp.echo`
//! does (flow, sequence, every byte; loss counted). One op is one datagram echoed and verified;
//! server CPU and syscalls per op are per datagram, so the two points compare directly. The
//! server's `server_gro_buffers`, `server_gro_segments` and `server_gso_sends` say how much it
//! coalesced. A kernel that refuses UDP_GRO or UDP_SEGMENT makes both points unavailable with
//! the errno (`io::udp_gso::probe`).

use super::cell;
use super::echo::launch;
use crate::error::CaseError;
use crate::load::udp::{Udp, LOSS_TIMEOUT};
use crate::measure::Sample;
use crate::model::{ModelSpec, Shape};
use crate::profile::Profile;
use crate::proto::ServeProtocol;
use crate::workload::{Ctx, Point, Workload};
use std::time::Duration;

/// Flows (connected client sockets).
pub(crate) const FLOWS: u64 = 16;
/// Datagrams in one burst.
pub(crate) const SEGMENTS: u64 = 16;
/// Datagrams outstanding per flow: two bursts.
pub(crate) const WINDOW: u64 = 2 * SEGMENTS;
/// Datagram sizes: the smallest useful one and one that fills a 1,500-byte MTU's payload.
pub(crate) const SIZES: &[u64] = &[64, 1400];

/// The server's offload: the one thing the two points of a size differ in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Offload {
    /// Per datagram (the kernel segments the bursts before the server's socket).
    None,
    /// UDP_GRO on the server's socket, echoes sent with UDP_SEGMENT.
    GsoGro,
}

impl Offload {
    fn protocol(self) -> ServeProtocol {
        match self {
            Offload::None => ServeProtocol::UdpEcho,
            Offload::GsoGro => ServeProtocol::UdpEchoGro,
        }
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Args {
    /// Flows; `conns` so that `run --conns` sets it.
    conns: u64,
    /// Datagram bytes; `msg_bytes` so that `run --msg-bytes` sets it.
    msg_bytes: u64,
    segments: u64,
    window: u64,
    offload: Offload,
    duration_ms: u64,
    warmup_ms: u64,
}

pub(crate) struct UdpEchoGso;

fn accepts(m: &ModelSpec) -> Result<(), String> {
    m.runs(Shape::Datagram { gro: true })
        .map_err(|r| format!("no UDP GRO echo server: {}", r.why()))
}

impl Workload for UdpEchoGso {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Net
    }
    fn facts(&self) -> crate::results::facts::Facts {
        use crate::results::facts::{ChartSpec, Facts, Metric, Units, BARS};
        // Bars per point: the two offloads of a size side by side, not a sweep.
        Facts::net(
            Units::DATAGRAMS,
            ChartSpec {
                verdict: Metric::OpsPerSec,
                ..BARS
            },
        )
    }
    fn id(&self) -> &'static str {
        "udp.echo_gso"
    }
    fn about(&self) -> &'static str {
        "UDP echo with and without GRO/GSO at one shape: 16 flows sending bursts of 16 \
         datagrams in one UDP_SEGMENT send; the server per datagram (offload=none) or with \
         UDP_GRO, echoing runs with UDP_SEGMENT (offload=gso_gro); every datagram verified, \
         loss counted (runs when named)"
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
        if plan.server_cpus().len() > 1 {
            return Err(
                "the UDP echo server is one socket and one loop: it runs with one server CPU"
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
    fn load_engines(&self) -> &'static [crate::load::Engine] {
        &[crate::load::Engine::Epoll]
    }
    fn points(&self, profile: Profile, _: &ModelSpec) -> Vec<Point> {
        let (warmup_ms, duration_ms) = cell::timing(profile);
        let sizes: &[u64] = match profile {
            Profile::Smoke => &[1400],
            _ => SIZES,
        };
        sizes
            .iter()
            .flat_map(|&msg_bytes| {
                [Offload::None, Offload::GsoGro].map(|offload| {
                    Point::of(Args {
                        conns: FLOWS,
                        msg_bytes,
                        segments: SEGMENTS,
                        window: WINDOW,
                        offload,
                        duration_ms,
                        warmup_ms,
                    })
                })
            })
            .collect()
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        let a = p.args::<Args>()?;
        // Both points send bursts with UDP_SEGMENT: the shape needs it.
        crate::io::udp_gso::probe().map_err(CaseError::unavailable)?;
        let bad = |why: String| CaseError::Failed(anyhow::anyhow!("{why}"));
        let ex = Udp {
            datagram_bytes: usize::try_from(a.msg_bytes).map_err(|e| bad(e.to_string()))?,
            window: u32::try_from(a.window).map_err(|e| bad(e.to_string()))?,
            segments: u32::try_from(a.segments).map_err(|e| bad(e.to_string()))?,
            loss_timeout: LOSS_TIMEOUT,
        };
        let load = cell::Load {
            conns: a.conns as usize,
            warmup: Duration::from_millis(a.warmup_ms),
            duration: Duration::from_millis(a.duration_ms),
            rate: None,
            exchange: &ex,
            bytes_received: false,
            after: None,
            around: None,
            churn: false,
        };
        let (mut s, report) = cell::measure(ctx, launch(ctx, m, a.offload.protocol())?, &load)?;
        s.counters.dgram = Some(report.dgram);
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_size_has_both_offloads_at_the_same_burst_shape() {
        let m = crate::registry::model("epoll-lt").unwrap();
        let q = UdpEchoGso.points(Profile::Quick, m);
        assert_eq!(q.len(), 4);
        for pair in q.chunks(2) {
            let (a, b) = (&pair[0].params, &pair[1].params);
            assert_eq!(a.0.get("msg_bytes"), b.0.get("msg_bytes"));
            assert_eq!(a.0.get("segments"), b.0.get("segments"));
            assert_ne!(a.0.get("offload"), b.0.get("offload"));
        }
        assert!(q.iter().all(|p| p.equal_load.is_none()));
        assert_eq!(UdpEchoGso.points(Profile::Smoke, m).len(), 2);
        assert!(!UdpEchoGso.by_default());
        assert!(UdpEchoGso.accepts(m).is_ok());
        let t = crate::registry::model("tokio").unwrap();
        assert!(UdpEchoGso.accepts(t).unwrap_err().contains("UDP"));
    }
}
