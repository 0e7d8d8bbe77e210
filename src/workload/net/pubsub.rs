//! `pubsub.fanout` (suite `pubsub`, run when named): a broker's hot path per I/O model.
//! `ringside serve --protocol pubsub` is driven by `load::pubsub` (one loop per load CPU, the
//! subscribers spread over them): 2 publishers, each on its
//! own topic, at a fixed total rate (open loop), and `fanout` subscribers per topic (1, 10,
//! 100), messages of 64 B, 1 KiB and 16 KiB (`full`; `quick` runs fan-out 100 at 1 KiB). One op
//! is one message delivered to one subscriber and verified (per publisher: no loss, no
//! duplicate, in order; every payload byte); latency is publish (the message's due time,
//! carried in it) to delivery. The offered rate is [`OFFERED_DELIVERIES`] deliveries/s (capped
//! at [`OFFERED_BYTES`] bytes/s) divided by the fan-out, at most [`MAX_PUBLISH_RATE`] publishes/s, so the broker, not the offered load,
//! is the limit at fan-out 100; whether ringside's subscribers were the limit instead is the
//! cell's `client_bound` flag, as in echo. The broker's subscriber queues are bounded
//! (`proto::pubsub::DEFAULT_QUEUE_BYTES`); a subscriber it disconnects for a full queue fails
//! the cell (`slow_disconnects` is among the server's counters). Models whose family has no
//! broker loop are refused with the reason (`ModelSpec::runs` with `Shape::Broker`); a broker
//! that cannot run yet (a `Refusal::Unavailable`: uring-zc) is planned and its cells say
//! `unavailable: <why>`.

use super::cell;
use super::echo::launch;
use super::equal_load::open_loop_counters;
use crate::error::CaseError;
use crate::load::pubsub::Pubsub;
use crate::measure::Sample;
use crate::model::{ModelSpec, Refusal, Shape};
use crate::profile::Profile;
use crate::workload::{Ctx, Point, Workload};
use std::time::Duration;

/// Publishers (each its own topic).
pub(crate) const PUBLISHERS: u64 = 2;
/// Deliveries per second offered (publish rate x fan-out).
pub(crate) const OFFERED_DELIVERIES: f64 = 1_500_000.0;
/// Payload bytes per second offered, at most.
pub(crate) const OFFERED_BYTES: f64 = 2e9;
/// Publishes per second offered, at most: a load thread also verifies every delivery to its
/// subscribers, and at fan-out 1 with one load CPU (a 2-vCPU machine) a higher publish rate
/// made ringside's subscribers the limit (their queues in the broker overflowed and they were
/// disconnected). With more load CPUs the subscribers are spread over one loop per CPU.
pub(crate) const MAX_PUBLISH_RATE: f64 = 50_000.0;

#[derive(serde::Serialize, serde::Deserialize)]
struct Args {
    publishers: u64,
    fanout: u64,
    payload_bytes: u64,
    duration_ms: u64,
    warmup_ms: u64,
}

fn grid(profile: Profile) -> (&'static [u64], &'static [u64]) {
    match profile {
        Profile::Smoke => (&[10], &[1024]),
        // Quick: fan-out 100 only (where the broker, not the offered load, is the limit):
        // with every family serving it, three points took `ringside run pubsub stream
        // --profile quick` past its 4 minutes on a 2-vCPU VM.
        Profile::Quick => (&[100], &[1024]),
        Profile::Full => (&[1, 10, 100], &[64, 1024, 16 << 10]),
    }
}

fn accepts(m: &ModelSpec) -> Result<(), String> {
    m.applies(Shape::Broker)
        .map_err(|why| format!("no pubsub broker: {why}"))
}

/// The publish rate offered at a point (not a parameter of its own: it follows from the
/// fan-out and the size, and the charts sweep over the fan-out).
pub(crate) fn publish_rate(fanout: u64, payload_bytes: u64) -> f64 {
    let deliveries = OFFERED_DELIVERIES.min(OFFERED_BYTES / payload_bytes.max(1) as f64);
    (deliveries / fanout.max(1) as f64)
        .min(MAX_PUBLISH_RATE)
        .round()
}

pub(crate) struct PubsubFanout;

impl Workload for PubsubFanout {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Net
    }
    /// A broker: one op is one message delivered to one subscriber. Open loop at a rate every
    /// model is offered alike: ranked by CPU per delivery at equal load, the sweep's verdicts
    /// by the tail latency.
    fn facts(&self) -> crate::results::facts::Facts {
        use crate::results::facts::{lines, Facts, Metric, Units};
        Facts::net(
            Units::DELIVERIES,
            lines(
                &["fanout"],
                "subscribers per topic",
                &[
                    Metric::OpsPerSec,
                    Metric::LatencyP99,
                    Metric::CpuPerOp,
                    Metric::SyscallsPer100,
                ],
                Metric::LatencyP99,
            ),
        )
        .open()
    }
    fn id(&self) -> &'static str {
        "pubsub.fanout"
    }
    fn about(&self) -> &'static str {
        "a pubsub broker per model: 2 publishers at a fixed rate, fan-out 1 to 100, 64 B to \
         16 KiB messages, every delivery verified: delivered msgs/s, publish-to-delivery \
         latency, server CPU and syscalls per delivery (runs when named)"
    }
    fn op(&self) -> &'static str {
        "one message delivered to one subscriber and verified (per publisher sequence: no \
         loss, no duplicate, in order; payload bytes); latency from the message's scheduled \
         publish time to its delivery; CPU and syscalls are the broker's, measured from outside"
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        accepts(m)
    }
    fn accepts_on(&self, m: &ModelSpec, plan: &crate::measure::pin::CpuPlan) -> Result<(), String> {
        accepts(m)?;
        if plan.server_cpus().len() > 1 {
            return Err(
                "the broker is one event loop with one hub: several server threads \
                        (shared nothing) would split publishers from their subscribers"
                    .into(),
            );
        }
        Ok(())
    }
    fn by_default(&self) -> bool {
        false
    }
    fn points(&self, profile: Profile, _: &ModelSpec) -> Vec<Point> {
        let (warmup_ms, duration_ms) = super::stream::timing(profile);
        let (fanouts, sizes) = grid(profile);
        let mut v = Vec::new();
        for &payload_bytes in sizes {
            for &fanout in fanouts {
                v.push(Point::of(Args {
                    publishers: PUBLISHERS,
                    fanout,
                    payload_bytes,
                    duration_ms,
                    warmup_ms,
                }));
            }
        }
        v
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        if let Err(Refusal::Unavailable(why)) = m.runs(Shape::Broker) {
            return Err(CaseError::Unavailable(format!("pubsub broker: {why}")));
        }
        let a = p.args::<Args>()?;
        let ex = Pubsub {
            publishers: a.publishers as u32,
            fanout: a.fanout as u32,
            payload_bytes: a.payload_bytes as usize,
        };
        let rate = publish_rate(a.fanout, a.payload_bytes);
        let load = cell::Load {
            conns: ex.conns(),
            warmup: Duration::from_millis(a.warmup_ms),
            duration: Duration::from_millis(a.duration_ms),
            rate: Some(rate),
            exchange: &ex,
            bytes_received: false,
            after: None,
            around: None,
            churn: false,
        };
        let (mut s, report) = cell::measure(
            ctx,
            launch(ctx, m, crate::proto::ServeProtocol::Pubsub)?,
            &load,
        )?;
        if report.n.live_conns < ex.conns() as u64 {
            return Err(CaseError::Failed(anyhow::anyhow!(
                "{} of {} connections lost ({})",
                ex.conns() as u64 - report.n.live_conns,
                ex.conns(),
                report.first_error.as_deref().unwrap_or("no error recorded")
            )));
        }
        s.counters.add("deliveries_verified", report.n.msgs);
        // Every model is offered the same deliveries per second (the publish rate times the
        // fan-out): the cells are ranked at equal load, among those that kept up.
        open_loop_counters(&mut s, rate * a.fanout as f64, &report);
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_sweeps_the_fanout_and_only_brokers_take_part() {
        let m = crate::registry::model("epoll-et").unwrap();
        assert_eq!(PubsubFanout.points(Profile::Quick, m).len(), 1);
        assert_eq!(PubsubFanout.points(Profile::Full, m).len(), 9);
        assert!(!PubsubFanout.by_default());
        assert_eq!(publish_rate(1, 1024), MAX_PUBLISH_RATE);
        assert_eq!(publish_rate(100, 1024), 15_000.0);
        assert_eq!(publish_rate(100, 16 << 10), 1221.0);
        assert!(PubsubFanout.accepts(m).is_ok());
        for id in [
            "blocking",
            "uring",
            "uring-multishot",
            "tokio",
            "tokio-mt",
            "monoio",
        ] {
            let m = crate::registry::model(id).unwrap();
            assert!(PubsubFanout.accepts(m).is_ok(), "{id}");
        }
        let m = crate::registry::model("threadpool").unwrap();
        assert!(!PubsubFanout.accepts(m).unwrap_err().is_empty());
        // Planned, so the report shows it, and unavailable with its reason when it runs.
        let zc = crate::registry::model("uring-zc").unwrap();
        assert!(PubsubFanout.accepts(zc).is_ok());
        assert!(matches!(
            zc.runs(Shape::Broker),
            Err(Refusal::Unavailable(_))
        ));
    }
}
