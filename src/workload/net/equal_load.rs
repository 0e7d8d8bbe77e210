//! Equal load for the network workloads: the equal-load point that follows a capacity point
//! (every model driven open loop at one offered rate, a share of the slowest model's measured
//! capacity there), the rate the runner passes for it, and the counters of an open-loop
//! repetition (offered, achieved, and whether it fell behind: `results::rates`).

use crate::error::CaseError;
use crate::load::Report;
use crate::measure::cell::OpenLoopCounters;
use crate::measure::Sample;
use crate::profile::Profile;
use crate::results::rates::fell_behind;
use crate::workload::{Ctx, EqualLoad, Point};

/// Of the slowest model's measured capacity at the capacity point: a load where the servers
/// are neither idle between messages nor near saturation, and the load generator keeps its
/// headroom. At half, on the 2-vCPU VM where a capacity point measures the load generator's
/// limit (closed loop), the open-loop load generator was itself saturated (`client_bound` on
/// every cell: an open-loop message costs it nearly twice a closed-loop one).
pub(crate) const EQUAL_LOAD_FRACTION: f64 = 0.3;

/// The connection counts of `echo.conns` that get an equal-load point: at `full` every one; at
/// `quick` 50 and 1000 (each equal-load point costs as much as its capacity point, and the
/// default run has a time budget); at `smoke` 50.
pub(crate) const EQUAL_LOAD_CONNS: &[(Profile, &[u64])] =
    &[(Profile::Smoke, &[50]), (Profile::Quick, &[50, 1000])];

/// Whether a profile puts an equal-load point after the capacity point at `n` connections
/// (`table`: [`EQUAL_LOAD_CONNS`] or HTTP's; profiles not in it: every point).
pub(crate) fn equal_load_at(table: &[(Profile, &[u64])], profile: Profile, n: u64) -> bool {
    match table.iter().find(|(p, _)| *p == profile) {
        Some((_, ns)) => ns.contains(&n),
        None => true,
    }
}

/// The equal-load point of the closed-loop point `capacity`: its params (its cells say
/// `equal_load`, which tells the two apart), driven at [`EQUAL_LOAD_FRACTION`] of the slowest
/// model's capacity there.
pub(crate) fn equal_load_point(capacity: &Point) -> Point {
    let mut p = capacity.clone();
    p.equal_load = Some(EqualLoad {
        fraction: EQUAL_LOAD_FRACTION,
        capacity_of: capacity.params.clone(),
    });
    p
}

/// Capacity points in order, each followed by its equal-load point where `want` says.
pub(crate) fn with_equal_load(points: Vec<Point>, want: impl Fn(&Point) -> bool) -> Vec<Point> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for p in points {
        let eq = want(&p).then(|| equal_load_point(&p));
        out.push(p);
        out.extend(eq);
    }
    out
}

/// The rate an equal-load repetition drives: the one the runner derived from the capacity
/// point. Without it the point is not applicable (said so), never run at a made-up rate.
pub(crate) fn offered_rate(ctx: &Ctx<'_>, p: &Point) -> Result<f64, CaseError> {
    match ctx.offered_rate {
        Some(r) if r.is_finite() && r >= 1.0 => Ok(r),
        Some(r) => Err(CaseError::Failed(anyhow::anyhow!(
            "offered rate {r} is not a rate of at least 1 per second"
        ))),
        None => {
            let of: Vec<String> = p
                .equal_load
                .iter()
                .flat_map(|e| e.capacity_of.0.iter())
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            Err(CaseError::NotApplicable(format!(
                "no offered rate was given: an equal-load point is driven at a share of the \
                 slowest model's capacity measured at its capacity point ({}), which this \
                 runner did not pass",
                of.join(" ")
            )))
        }
    }
}

/// The counters of an open-loop repetition: the offered rate, the achieved one, and whether
/// it fell behind (`results::rates`).
pub(crate) fn open_loop_counters(s: &mut Sample, offered: f64, report: &Report) {
    let achieved = report.msgs_per_sec();
    s.counters.open_loop = Some(OpenLoopCounters {
        offered_per_sec: offered.round() as u64,
        achieved_per_sec: achieved.round() as u64,
        fell_behind: u64::from(fell_behind(offered, achieved)),
    });
}
