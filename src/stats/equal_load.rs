//! Figures of open-loop cells (the equal-load points of `echo.conns` and `http.clients`, and
//! the rate sweeps `echo.rate` and `http.rate`): the rate every model was offered, what each
//! achieved, whether it kept up, and whether two cells' server CPU per op differ
//! significantly. Closed-loop capacity is the client's figure whenever the load generator had
//! no headroom; at a rate every model sustains, the server's CPU per op is the server's.

use crate::results::schema::CaseFigures;
use crate::results::{CaseResult, Status, Warning};
use crate::stats::claims::{self, Claim};

/// Whether the load generator had headroom in every repetition (no `client_bound` or
/// `both_saturated`): only then is a closed-loop throughput the server's capacity.
pub(crate) fn load_had_headroom(c: &CaseResult) -> bool {
    !c.warnings
        .iter()
        .any(|w| matches!(w, Warning::ClientBound | Warning::BothSaturated))
}

/// How far two cells' server CPU per op can be told apart.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Evidence {
    /// The paired claim over their rounds (`stats::claims`; uncorrected until the caller
    /// corrects its family).
    Claimed(Claim),
    /// Fewer than two repetitions a side: nothing to test.
    OneRun,
    /// No per-repetition CPU recorded (files written before it was).
    None,
}

impl Evidence {
    /// True when the difference is not decided (equivalent, undecided, untested).
    pub(crate) fn within_noise(&self) -> bool {
        match self {
            Evidence::Claimed(c) => !c.decided(),
            Evidence::OneRun | Evidence::None => true,
        }
    }

    /// What the evidence is, for the verdict's text.
    pub(crate) fn text(&self) -> String {
        match self {
            Evidence::Claimed(c) => super::findings::claim_text(c),
            Evidence::OneRun => "untested: one repetition".into(),
            Evidence::None => "untested: no per-repetition CPU recorded".into(),
        }
    }

    pub(crate) fn claim_mut(&mut self) -> Option<&mut Claim> {
        match self {
            Evidence::Claimed(c) => Some(c),
            _ => None,
        }
    }
}

/// The evidence that `b` differs from `a` in server CPU per op: the paired claim of `b`
/// against `a` over their rounds.
pub(crate) fn cpu_per_op_evidence(a: &CaseFigures, b: &CaseFigures) -> Evidence {
    let (x, y) = (&a.runs_cpu_ns_per_op, &b.runs_cpu_ns_per_op);
    if x.is_empty() || y.is_empty() {
        return Evidence::None;
    }
    if x.len() < 2 || y.len() < 2 {
        return Evidence::OneRun;
    }
    match claims::pair(
        x,
        y,
        false,
        claims::Level::from(claims::ALPHA).with(a).with(b),
    ) {
        Some(c) => Evidence::Claimed(c),
        None => Evidence::None,
    }
}

/// The p99 an open-loop rate sweep's capacity must stay under.
pub(crate) const CAPACITY_P99_NS: f64 = 10e6;

/// Whether a cell's p99 is over [`CAPACITY_P99_NS`] as a claim: its typical repetition's p99
/// (`CaseFigures::p99_typical`, the median of the repetitions' p99s: the one p99 a claim
/// states) over it, each repetition with at least `claims::TAIL_MIN` samples beyond its p99
/// (a p99 from a thin tail is mostly one hiccup: shown, not claimed). Files without
/// per-repetition p99s: the cell's pooled p99.
pub(crate) fn p99_over_target(f: &CaseFigures) -> bool {
    if f.runs_p99_ns.is_empty() {
        return f.latency_ns.p99 > CAPACITY_P99_NS;
    }
    f.p99_tail_min >= claims::TAIL_MIN && f.p99_typical() > CAPACITY_P99_NS
}

/// Where along an open-loop rate sweep a model stopped keeping up.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Knee {
    /// It fell behind (or its p99 was over the target) at the lowest rate offered.
    Below { rate: f64 },
    /// It kept up to `capacity`; the knee lies between that and `next`.
    Between { capacity: f64, next: f64 },
    /// It kept up with every rate offered, up to `max`.
    Beyond { max: f64 },
}

/// One model's capacity along an open-loop rate sweep (`echo.rate`, `http.rate`).
#[derive(Clone, Debug, PartialEq)]
pub struct Capacity {
    pub(crate) label: String,
    pub(crate) knee: Knee,
    /// Offered rates where a repetition of its cell stalled (and stayed stalled on its
    /// re-run): named, so that one repetition is not read as the knee.
    pub(crate) stalled_at: Vec<f64>,
    /// The p99 of its typical repetition (`CaseFigures::p99_typical`) at the rate the knee
    /// names first (its capacity, the top of the sweep, or the lowest rate where it fell
    /// behind), and a spike among that cell's repetitions (`CaseFigures::p99_spike`).
    pub(crate) p99_ns: Option<f64>,
    pub(crate) spike: Option<(f64, usize, usize)>,
}

/// One offered rate of a model's sweep, as the knee reads it.
struct Pt {
    rate: f64,
    /// Kept up, with no p99 claimed over the target.
    ok: bool,
    stalled: bool,
    p99: f64,
    spike: Option<(f64, usize, usize)>,
}

/// Each model's capacity along a rate sweep, in the cells' first-seen order: the highest
/// offered rate at which it kept up (`CaseResult::kept_up`, the one rule: its typical
/// repetition achieved [`KEEP_UP`](crate::results::rates::KEEP_UP) of the offer) with no p99
/// claimed over [`CAPACITY_P99_NS`], and the first rate where it did not.
pub(crate) fn capacities(cases: &[&CaseResult]) -> Vec<Capacity> {
    let mut labels: Vec<String> = Vec::new();
    for c in cases {
        if !labels.contains(&c.label()) {
            labels.push(c.label());
        }
    }
    let mut out = Vec::new();
    for l in labels {
        let mut pts: Vec<Pt> = cases
            .iter()
            .filter(|c| c.label() == l && c.status == Status::Measured)
            .filter_map(|c| {
                let f = c.figures.as_ref()?;
                let offered = c.params.0.get("rate_per_sec")?.as_f64()?;
                (offered > 0.0).then(|| {
                    let ok = c.kept_up() == Some(true) && !p99_over_target(f);
                    Pt {
                        rate: offered,
                        ok,
                        stalled: c.warnings.contains(&Warning::Stalled),
                        p99: f.p99_typical(),
                        spike: f.p99_spike(),
                    }
                })
            })
            .collect();
        if pts.is_empty() {
            continue;
        }
        pts.sort_by(|a, b| a.rate.total_cmp(&b.rate));
        let (knee, named) = match pts.iter().position(|p| !p.ok) {
            Some(0) => (Knee::Below { rate: pts[0].rate }, 0),
            Some(k) => (
                Knee::Between {
                    capacity: pts[k - 1].rate,
                    next: pts[k].rate,
                },
                k - 1,
            ),
            None => (
                Knee::Beyond {
                    max: pts[pts.len() - 1].rate,
                },
                pts.len() - 1,
            ),
        };
        out.push(Capacity {
            label: l,
            knee,
            stalled_at: pts.iter().filter(|p| p.stalled).map(|p| p.rate).collect(),
            p99_ns: Some(pts[named].p99).filter(|p| *p > 0.0),
            spike: pts[named].spike,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(reps: u32, offered: u64, achieved: u64, fell: u64, cpu: &[f64]) -> CaseResult {
        serde_json::from_value(serde_json::json!({
            "workload": "echo.rate", "model": "m", "params": {"rate_per_sec": offered},
            "status": "measured", "op": "x", "knobs": {}, "warmups": 0, "repetitions": reps,
            "latency_ns": {"min": 1.0, "p50": 1.0, "p90": 1.0, "p99": 1.0, "p999": 1.0,
                           "max": 1.0, "mean": 1.0, "stddev": 0.0},
            "run_p50_ns": {"median": 1.0, "min": 1.0, "max": 1.0, "mad": 0.0},
            "ops_per_sec": {"median": 1.0, "min": 1.0, "max": 1.0, "mad": 0.0},
            "cpu_ns_per_op": {"total": 1.0, "user": 0.5, "sys": 0.5},
            "ctx_switches_per_op": 0.0, "syscalls_per_op": 1.0, "ops_total": 1,
            "counters": {"offered_per_sec": offered, "achieved_per_sec": achieved,
                         "fell_behind": fell},
            "histogram": "", "runs_cpu_ns_per_op": cpu
        }))
        .unwrap()
    }

    fn rate_cell(model: &str, rate: u64, achieved: &[f64], p99: f64) -> CaseResult {
        let reps = achieved.len() as u64;
        let total: f64 = achieved.iter().sum();
        serde_json::from_value(serde_json::json!({
            "workload": "http.rate", "model": model,
            "params": {"rate_per_sec": rate, "clients": 100},
            "status": "measured", "op": "x", "knobs": {}, "warmups": 0, "repetitions": reps,
            "latency_ns": {"min": 1.0, "p50": 1.0, "p90": 1.0, "p99": p99, "p999": p99,
                           "max": p99, "mean": 1.0, "stddev": 0.0},
            "run_p50_ns": {"median": 1.0, "min": 1.0, "max": 1.0, "mad": 0.0},
            "ops_per_sec": {"median": 1.0, "min": 1.0, "max": 1.0, "mad": 0.0},
            "cpu_ns_per_op": {"total": 1.0, "user": 0.5, "sys": 0.5},
            "ctx_switches_per_op": 0.0, "syscalls_per_op": 1.0, "ops_total": 1,
            "counters": {"offered_per_sec": rate,
                         "achieved_per_sec": (total / reps as f64).round() as u64},
            "histogram": "", "runs_ops_per_sec": achieved
        }))
        .unwrap()
    }

    #[test]
    fn capacity_is_the_last_rate_kept_up_with_under_the_p99_target() {
        let mut stalled = rate_cell(
            "c",
            40_000,
            &[40_007.0, 39_692.0, 202.0, 39_755.0, 2000.0],
            1e6,
        );
        stalled.warnings.push(Warning::Stalled);
        let cells = [
            rate_cell("a", 10_000, &[10_000.0; 3], 1e6),
            rate_cell("a", 20_000, &[19_900.0; 3], 2e6),
            rate_cell("a", 40_000, &[30_000.0; 3], 50e6), // fell behind: the knee
            rate_cell("b", 10_000, &[10_000.0; 3], 20e6), // p99 over target at once
            rate_cell("b", 20_000, &[20_000.0; 3], 1e6),
            rate_cell("c", 10_000, &[10_000.0; 3], 1e6),
            rate_cell("c", 20_000, &[20_000.0; 3], 1e6),
            // Two of five repetitions stalled (the uring-tuned at 40 k): the typical
            // repetition kept up, so no knee there, and the stall is named.
            stalled,
        ];
        let refs: Vec<&CaseResult> = cells.iter().collect();
        let v = capacities(&refs);
        assert_eq!(v.len(), 3, "{v:?}");
        assert_eq!(
            v[0].knee,
            Knee::Between {
                capacity: 20_000.0,
                next: 40_000.0
            }
        );
        assert_eq!(v[1].knee, Knee::Below { rate: 10_000.0 });
        assert_eq!(v[2].knee, Knee::Beyond { max: 40_000.0 });
        assert_eq!(v[2].stalled_at, vec![40_000.0]);
    }

    #[test]
    fn offered_and_achieved_rates_are_per_repetition() {
        let c = cell(5, 10_000, 9_990, 0, &[]);
        assert_eq!(c.offered_rate(), Some(10_000.0));
        assert_eq!(c.achieved_rate(), Some(9_990.0));
        assert_eq!(c.kept_up(), Some(true));
        // One repetition of five fell behind: the cell kept up (its typical repetition did),
        // and the one is named.
        let one = cell(5, 10_000, 9_990, 1, &[]);
        assert_eq!(one.kept_up(), Some(true));
        assert_eq!(one.repetitions_behind(), Some((1, 5)));
        assert_eq!(c.repetitions_behind(), None);
        // Judged by the rates when the counter is missing (older files).
        assert_eq!(cell(2, 10_000, 9_000, 0, &[]).kept_up(), Some(false));
        let mut closed = cell(1, 0, 0, 0, &[]);
        closed.figures.as_mut().unwrap().counters = Default::default();
        assert_eq!((closed.offered_rate(), closed.kept_up()), (None, None));
    }

    #[test]
    fn cpu_evidence_is_a_paired_claim_over_the_rounds() {
        let f = |v: &[f64]| cell(v.len() as u32, 1, 1, 0, v).figures.unwrap();
        let low = f(&[100.0, 101.0, 102.0, 103.0, 104.0, 100.5]);
        let high = f(&[140.0, 141.0, 142.0, 143.0, 144.0, 140.0]);
        let e = cpu_per_op_evidence(&low, &high);
        assert!(
            matches!(&e, Evidence::Claimed(c) if c.outcome == claims::Outcome::Behind),
            "{e:?}"
        );
        assert!(!e.within_noise());
        let mixed = f(&[99.0, 145.0, 102.0, 139.0, 104.0, 150.0]);
        assert!(cpu_per_op_evidence(&low, &mixed).within_noise());
        // Three rounds: no paired test can reach 0.05, however far apart.
        let (a, b) = (f(&[1.0, 2.0, 3.0]), f(&[4.0, 5.0, 6.0]));
        let e = cpu_per_op_evidence(&a, &b);
        assert!(
            e.within_noise() && e.text().contains("a claim needs 6"),
            "{}",
            e.text()
        );
        assert_eq!(cpu_per_op_evidence(&a, &f(&[])), Evidence::None);
        assert_eq!(cpu_per_op_evidence(&a, &f(&[9.0])), Evidence::OneRun);
    }
}
