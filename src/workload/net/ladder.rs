//! The ablation ladders (`echo.ladder`, `http.ladder`): the io_uring rows in ladder order, one
//! knob per rung, at 50 and 1000 connections (capacity, closed loop) and at equal offered load
//! after each (30% of the slowest rung's capacity there: server CPU per op). A ladder is the
//! sweep of `echo.conns` or `http.clients` restricted to those points and to the rung rows; its
//! rungs are data ([`RUNGS`]), each the registry row that adds its knob to the row it is
//! measured against (`over`). The change per rung and its significance are computed in
//! `analysis::ladder`.
//!
//! The rungs are cumulative: each adds its knob to the rung above (`uring-tuned` ->
//! `uring-bundle` -> `uring-bundle-inc` -> `uring-bundle-inc-minwait` ->
//! `uring-bundle-inc-minwait-napi`). A rung may say in its `note` that it is measured over
//! another row instead (none does now).
use super::{echo, http};
use crate::error::CaseError;
use crate::measure::pin::CpuPlan;
use crate::measure::Sample;
pub use crate::model::ladder::{Rung, RUNGS};
use crate::model::ModelSpec;
use crate::profile::Profile;
use crate::workload::{Ctx, Point, Workload};

/// The rung of a row.
pub(crate) fn rung(model: &str) -> Option<&'static Rung> {
    RUNGS.iter().find(|r| r.model == model)
}

/// The connection counts of a ladder: capacity at each, then equal load.
pub(crate) const LADDER_CONNS: &[u64] = &[50, 1000];

fn accepts_rung(m: &ModelSpec) -> Result<(), String> {
    match rung(m.id) {
        Some(_) => Ok(()),
        None => Err(format!(
            "not a rung of the io_uring ladder ({})",
            RUNGS
                .iter()
                .map(|r| r.model)
                .collect::<Vec<_>>()
                .join(" -> ")
        )),
    }
}

/// The ladder's points: `inner`'s capacity point (its first, with the profile's timing) at
/// each of [`LADDER_CONNS`] (param `key`), each followed by its equal-load point; whatever
/// connection counts `inner`'s own profile runs.
fn ladder_points(inner: &dyn Workload, key: &str, profile: Profile, m: &ModelSpec) -> Vec<Point> {
    let Some(base) = inner
        .points(profile, m)
        .into_iter()
        .find(|p| p.equal_load.is_none())
    else {
        return Vec::new();
    };
    let capacity: Vec<Point> = LADDER_CONNS
        .iter()
        .filter_map(|&n| base.set(key, n).ok())
        .collect();
    super::equal_load::with_equal_load(capacity, |_| true)
}

/// `echo.ladder`.
pub(crate) struct EchoLadder;
/// `http.ladder`.
pub(crate) struct HttpLadder;

impl Workload for EchoLadder {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Net
    }
    fn facts(&self) -> crate::results::facts::Facts {
        use crate::results::facts::{ChartSpec, Facts, Metric, Units, BARS};
        // Closed-loop capacity points: ranked by throughput, like every closed loop.
        let chart = ChartSpec {
            verdict: Metric::OpsPerSec,
            ..BARS
        };
        Facts {
            ladder: true,
            ..Facts::net(Units::MESSAGES, chart)
        }
    }
    fn id(&self) -> &'static str {
        "echo.ladder"
    }
    fn remote_load(&self) -> bool {
        true
    }
    fn about(&self) -> &'static str {
        "io_uring ablation ladder over echo (one knob per rung), 50 and 1000 connections, \
         capacity and equal load (runs when named)"
    }
    fn op(&self) -> &'static str {
        echo::EchoConns.op()
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        accepts_rung(m).and(echo::EchoConns.accepts(m))
    }
    fn accepts_on(&self, m: &ModelSpec, plan: &CpuPlan) -> Result<(), String> {
        accepts_rung(m).and(echo::EchoConns.accepts_on(m, plan))
    }
    fn by_default(&self) -> bool {
        false
    }
    fn own_models(&self) -> bool {
        true
    }
    fn points(&self, profile: Profile, m: &ModelSpec) -> Vec<Point> {
        ladder_points(&echo::EchoConns, "conns", profile, m)
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        echo::EchoConns.run_once(ctx, m, p)
    }
}

impl Workload for HttpLadder {
    fn optional_params(&self) -> &'static [&'static str] {
        http::OPTIONAL_PARAMS
    }
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Net
    }
    fn facts(&self) -> crate::results::facts::Facts {
        crate::results::facts::Facts {
            ladder: true,
            ..super::http::CLIENTS_FACTS
        }
    }
    fn id(&self) -> &'static str {
        "http.ladder"
    }
    fn remote_load(&self) -> bool {
        true
    }
    fn about(&self) -> &'static str {
        "io_uring ablation ladder over keep-alive HTTP/1.1 (one knob per rung), 50 and 1000 \
         clients, capacity and equal load (runs when named)"
    }
    fn op(&self) -> &'static str {
        http::HttpClients.op()
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        accepts_rung(m).and(http::HttpClients.accepts(m))
    }
    fn accepts_on(&self, m: &ModelSpec, plan: &CpuPlan) -> Result<(), String> {
        accepts_rung(m).and(http::HttpClients.accepts_on(m, plan))
    }
    fn by_default(&self) -> bool {
        false
    }
    fn own_models(&self) -> bool {
        true
    }
    fn points(&self, profile: Profile, m: &ModelSpec) -> Vec<Point> {
        ladder_points(&http::HttpClients, "clients", profile, m)
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        http::HttpClients.run_once(ctx, m, p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::UringKnobs;
    use crate::registry;

    /// Every rung is a registry row, in ladder order, whose knobs are the row it is measured
    /// against plus exactly the knob it claims; rungs without a note are over the rung above.
    #[test]
    fn the_rungs_match_the_registry_and_are_cumulative_where_claimed() {
        let knobs = |id: &str| {
            registry::model(id)
                .unwrap_or_else(|| panic!("rung {id} is not a registry row"))
                .uring_knobs()
                .copied()
                .unwrap_or_else(|| panic!("rung {id} is not an io_uring row"))
        };
        assert_eq!(knobs(RUNGS[0].model), UringKnobs::PLAIN);
        assert!(RUNGS[0].over.is_none());
        for (i, r) in RUNGS.iter().enumerate().skip(1) {
            let over = r.over.expect("every rung but the first is over a row");
            assert_eq!((r.add)(knobs(over)), knobs(r.model), "{}", r.model);
            assert_ne!(knobs(over), knobs(r.model), "{} adds nothing", r.model);
            // Over the rung above unless it says otherwise.
            if r.note.is_none() {
                assert_eq!(over, RUNGS[i - 1].model, "{}", r.model);
            }
            // Its base is an earlier rung.
            assert!(RUNGS[..i].iter().any(|b| b.model == over), "{}", r.model);
        }
    }

    #[test]
    fn a_ladder_takes_only_its_rungs_at_50_and_1000_with_equal_load_after_each() {
        for w in [&EchoLadder as &dyn Workload, &HttpLadder] {
            assert!(!w.by_default());
            let taking: Vec<&str> = registry::MODELS
                .iter()
                .filter(|m| w.accepts(m).is_ok())
                .map(|m| m.id)
                .collect();
            let rungs: Vec<&str> = RUNGS.iter().map(|r| r.model).collect();
            assert_eq!(taking, rungs, "{}", w.id());
            let e = w.accepts(registry::model("epoll-lt").unwrap()).unwrap_err();
            assert!(e.contains("not a rung"), "{e}");
            for profile in [Profile::Smoke, Profile::Quick, Profile::Full] {
                let pts = w.points(profile, registry::model("uring").unwrap());
                assert_eq!(pts.len(), 2 * LADDER_CONNS.len(), "{} {profile:?}", w.id());
                for pair in pts.chunks(2) {
                    assert!(pair[0].equal_load.is_none());
                    let eq = pair[1]
                        .equal_load
                        .as_ref()
                        .expect("equal load after capacity");
                    assert_eq!(eq.capacity_of, pair[0].params);
                }
            }
        }
    }
}
