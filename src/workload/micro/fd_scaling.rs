//! `micro.fd_scaling`: the cost of one readiness wait + read as the number of watched fds
//! (eventfds: one fd each, see `io::readiness`) grows. epoll (the epoll models) against poll(2) and select(2) (run under `blocking`, the
//! O(n) references), measured at the same counts, select up to FD_SETSIZE.

use crate::error::CaseError;
use crate::io::readiness::{Mechanism, Watched};
use crate::measure::{Counters, Sample};
use crate::model::{Knobs, ModelSpec, Threading};
use crate::profile::Profile;
use crate::workload::{Ctx, Point, Workload};

/// `micro.fd_scaling`'s parameters.
#[derive(serde::Serialize, serde::Deserialize)]
struct Args {
    fds: u64,
}

pub(crate) struct FdScaling;

/// An eventfd counter is 8 bytes.
const MSG_BYTES: u64 = 8;

fn mechanisms(m: &ModelSpec) -> Vec<Mechanism> {
    match &m.knobs {
        Knobs::Epoll(k) => vec![Mechanism::Epoll(k.trigger)],
        Knobs::Blocking(Threading::PerConnection) => vec![Mechanism::Poll, Mechanism::Select],
        _ => vec![],
    }
}

impl Workload for FdScaling {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Micro
    }
    fn facts(&self) -> crate::results::facts::Facts {
        use crate::results::facts::{lines, Facts, Metric};
        Facts {
            chart: lines(
                &["fds"],
                "watched fds",
                &[Metric::LatencyP50, Metric::SyscallsPer100, Metric::CpuPerOp],
                Metric::LatencyP50,
            ),
            ..Facts::LOCAL
        }
    }
    fn by_default(&self) -> bool {
        false
    }
    fn id(&self) -> &'static str {
        "micro.fd_scaling"
    }
    fn about(&self) -> &'static str {
        "one of N watched eventfds made ready: epoll_wait + read against poll() and select()"
    }
    fn op(&self) -> &'static str {
        "one wait that finds the ready fd + its 8-byte read (the write that made it ready is untimed; syscalls count all three)"
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        if matches!(&m.knobs, Knobs::Epoll(k) if k.server_only()) {
            return Err("busy polling polls a NIC's NAPI queue; eventfds have none".into());
        }
        if mechanisms(m).is_empty() {
            return Err(
                "readiness scaling compares epoll with poll/select (run under 'blocking')".into(),
            );
        }
        Ok(())
    }
    fn points(&self, profile: Profile, m: &ModelSpec) -> Vec<Point> {
        let counts: &[u64] = match profile {
            Profile::Smoke => &[1, 100, 1000],
            _ => &[1, 10, 100, 500, 1000, 10000],
        };
        let mut v = Vec::new();
        for mech in mechanisms(m) {
            for &n in counts {
                v.push(Point::of(Args { fds: n }).variant(
                    matches!(mech, Mechanism::Poll | Mechanism::Select).then(|| mech.name()),
                ));
            }
        }
        v
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        let n = p.args::<Args>()?.fds as usize;
        // epoll models have one mechanism; blocking runs poll and select as variants.
        let mech = mechanisms(m)
            .into_iter()
            .find(|x| p.variant.is_none_or(|v| v == x.name()))
            .ok_or_else(|| CaseError::Failed(anyhow::anyhow!("no mechanism for {}", m.id)))?;
        super::alone(ctx, || {
            let mut w = Watched::new(n, mech)?;
            for _ in 0..ctx.warm_ops {
                w.make_one_ready()?;
                w.wait_and_read()?;
            }
            let mut win = ctx.window();
            for _ in 0..ctx.ops {
                let i = w.make_one_ready()?;
                let t0 = win.start();
                let found = w.wait_and_read()?;
                win.record(t0, 1);
                if found != i {
                    return Err(CaseError::Failed(anyhow::anyhow!(
                        "made pipe {i} ready, found {found}"
                    )));
                }
            }
            let mut c = Counters::default();
            c.add("waits", w.waits());
            let s = win.finish(ctx.ops, ctx.ops * MSG_BYTES, c);
            w.verify()?;
            Ok(s)
        })
    }
}
