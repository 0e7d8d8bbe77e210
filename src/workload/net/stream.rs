//! The stream suite (`ringside run stream`): bulk transfer per model, where zero-copy sends,
//! receive bundles and larger buffers are supposed to pay.
//! - `stream.send`: one way, `up` (the client writes continuously, the server reads, verifies
//!   and discards: `ringside serve --protocol sink`) and `down` (the server writes the pattern
//!   the client asks for, a bounded window of requests ahead: `--protocol source`);
//! - `stream.duplex`: both ways at once, the echo server driven by clients that write
//!   continuously and read the echo at the same time.
//!
//! 1, 10 and 100 connections, writes of 4 KiB, 64 KiB and 1 MiB (`full`; `quick` runs the
//! 10-connection, 64 KiB point of each direction so that `ringside run pubsub stream` stays
//! within its time budget). One op is one write's worth of bytes moved and verified (see
//! `load::stream`); figures per GiB are the per-op figures times 2^30 / `write_bytes`. Every
//! byte is checked against the pattern (uploads by the server, whose count the client checks
//! against what it sent): a cell with a byte that does not verify fails. Not in the default
//! run (its budget is full): it runs when named.

use super::cell;
use super::echo::launch;
use crate::error::CaseError;
use crate::load::stream::{Direction, Streaming};
use crate::measure::Sample;
use crate::model::{ModelSpec, Proto, Shape};
use crate::profile::Profile;
use crate::workload::{Ctx, Point, Workload};
use std::time::Duration;

/// The parameters of the stream workloads.
#[derive(serde::Serialize, serde::Deserialize)]
struct Args {
    direction: Direction,
    conns: u64,
    write_bytes: u64,
    duration_ms: u64,
    warmup_ms: u64,
}

const OP: &str = "one write's worth of bytes (write_bytes) moved over TCP and \
    verified against the pattern (up: sent, and confirmed by the server's count of verified \
    bytes; down and duplex: received and checked); latency: the time per write on its \
    connection; CPU and syscalls are the server's, measured from outside (per GiB: per op x \
    2^30 / write_bytes)";

/// Every model with a TCP server (ringside's own, tokio and monoio); external contenders speak
/// echo or HTTP only (`ModelSpec::runs`).
fn accepts(m: &ModelSpec) -> Result<(), String> {
    Ok(m.applies(Shape::Tcp(Proto::Stream))?)
}

/// (connections, write sizes) per profile.
fn grid(profile: Profile) -> (&'static [u64], &'static [u64]) {
    match profile {
        Profile::Smoke => (&[2], &[64 << 10]),
        Profile::Quick => (&[10], &[64 << 10]),
        Profile::Full => (&[1, 10, 100], &[4 << 10, 64 << 10, 1 << 20]),
    }
}

/// Quick windows of bulk transfer and pubsub fan-out are shorter than the other network
/// suites' (0.3 s, not 0.4 s): a 64 KiB-write stream moves tens of thousands of writes and a
/// broker at fan-out 100 some 450,000 deliveries in 0.3 s, and `ringside run pubsub stream
/// --profile quick` must stay under four minutes on a 2-vCPU VM (4 min 6 s with 0.4 s
/// windows; 3 min 51 s with 0.3 s for stream only).
const QUICK_WINDOW_MS: u64 = 300;

/// (warm-up, window) in ms of a stream or pubsub cell: `cell::timing`, with the shorter
/// quick window (`QUICK_WINDOW_MS`).
pub(super) fn timing(profile: Profile) -> (u64, u64) {
    match cell::timing(profile) {
        (w, _) if profile == Profile::Quick => (w, QUICK_WINDOW_MS),
        t => t,
    }
}

fn points(profile: Profile, dirs: &[Direction]) -> Vec<Point> {
    let (warmup_ms, duration_ms) = timing(profile);
    let (conns, sizes) = grid(profile);
    let mut v = Vec::new();
    for &direction in dirs {
        for &write_bytes in sizes {
            for &c in conns {
                v.push(Point::of(Args {
                    direction,
                    conns: c,
                    write_bytes,
                    duration_ms,
                    warmup_ms,
                }));
            }
        }
    }
    v
}

fn run(ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
    let a = p.args::<Args>()?;
    let ex = Streaming {
        direction: a.direction,
        write_bytes: a.write_bytes as usize,
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
    let (mut s, report) = cell::measure(ctx, launch(ctx, m, a.direction.protocol())?, &load)?;
    if report.n.verified_bytes == 0 {
        return Err(CaseError::Failed(anyhow::anyhow!(
            "no byte was verified ({})",
            report.first_error.as_deref().unwrap_or("no error recorded")
        )));
    }
    s.counters.add("bytes_verified", report.n.verified_bytes);
    Ok(s)
}

/// Bulk transfer: one op is one write (`write_bytes`), so per-op figures are per write.
const STREAM_FACTS: crate::results::facts::Facts = crate::results::facts::Facts::net(
    crate::results::facts::Units::WRITES,
    crate::results::facts::lines(
        &["write_bytes"],
        "write size, bytes",
        &[
            crate::results::facts::Metric::OpsPerSec,
            crate::results::facts::Metric::CpuPerOp,
            crate::results::facts::Metric::SyscallsPer100,
        ],
        crate::results::facts::Metric::OpsPerSec,
    ),
);

/// `stream.send`: one-way bulk transfer, both directions.
pub(crate) struct StreamSend;
/// `stream.duplex`: both ways at once.
pub(crate) struct StreamDuplex;

impl Workload for StreamSend {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Net
    }
    fn facts(&self) -> crate::results::facts::Facts {
        STREAM_FACTS
    }
    fn id(&self) -> &'static str {
        "stream.send"
    }
    fn about(&self) -> &'static str {
        "one-way bulk transfer per model (client to server and back), 1 to 100 connections, \
         4 KiB to 1 MiB writes, loopback: Gbit/s, server CPU and syscalls per byte (runs when \
         named)"
    }
    fn op(&self) -> &'static str {
        OP
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        accepts(m)
    }
    fn by_default(&self) -> bool {
        false
    }
    fn points(&self, profile: Profile, _: &ModelSpec) -> Vec<Point> {
        points(profile, &[Direction::Up, Direction::Down])
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        run(ctx, m, p)
    }
}

impl Workload for StreamDuplex {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Net
    }
    fn facts(&self) -> crate::results::facts::Facts {
        STREAM_FACTS
    }
    fn id(&self) -> &'static str {
        "stream.duplex"
    }
    fn about(&self) -> &'static str {
        "bulk transfer both ways at once per model (an echo server fed continuously), 1 to 100 \
         connections, 4 KiB to 1 MiB writes, loopback (runs when named)"
    }
    fn op(&self) -> &'static str {
        OP
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        accepts(m)
    }
    fn by_default(&self) -> bool {
        false
    }
    fn points(&self, profile: Profile, _: &ModelSpec) -> Vec<Point> {
        points(profile, &[Direction::Duplex])
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        run(ctx, m, p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_keeps_the_whole_grid_and_quick_one_point_per_direction() {
        let m = crate::registry::model("epoll-lt").unwrap();
        assert_eq!(StreamSend.points(Profile::Full, m).len(), 2 * 3 * 3);
        assert_eq!(StreamDuplex.points(Profile::Full, m).len(), 3 * 3);
        assert_eq!(StreamSend.points(Profile::Quick, m).len(), 2);
        assert_eq!(StreamDuplex.points(Profile::Quick, m).len(), 1);
        assert!(!StreamSend.by_default() && !StreamDuplex.by_default());
    }

    #[test]
    fn every_tcp_server_takes_part_and_external_contenders_do_not() {
        for id in [
            "blocking", "epoll-et", "uring", "uring-zc", "tokio", "monoio",
        ] {
            let m = crate::registry::model(id).unwrap();
            assert!(StreamSend.accepts(m).is_ok(), "{id}");
        }
        let pool = crate::registry::model("threadpool").unwrap();
        assert!(StreamSend.accepts(pool).is_err());
    }
}
