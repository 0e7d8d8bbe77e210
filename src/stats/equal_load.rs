//! Figures of open-loop cells (the equal-load points of `echo.conns` and `http.clients`, and
//! the rate sweeps `echo.rate` and `http.rate`): the rate every model was offered, what each
//! achieved, whether it kept up, and whether two cells' server CPU per op differ
//! significantly. Closed-loop capacity is the client's figure whenever the load generator had
//! no headroom; at a rate every model sustains, the server's CPU per op is the server's.

use crate::measure::cell::OpenLoopCounters;
use crate::results::schema::CaseFigures;
use crate::results::{CaseResult, Status, Warning};
use crate::stats::claims::{self, Claim};

/// Share of the offered rate a server must achieve to count as keeping up with it.
pub const KEEP_UP: f64 = 0.95;

/// Whether a repetition that achieved `achieved` of `offered` per second fell behind.
pub fn fell_behind(offered: f64, achieved: f64) -> bool {
    achieved < KEEP_UP * offered
}

/// One of an open-loop cell's rates (`pick` from its counters), per repetition.
fn per_rep(c: &CaseResult, pick: fn(&OpenLoopCounters) -> u64) -> Option<f64> {
    let f = c
        .figures
        .as_ref()
        .filter(|_| c.status == Status::Measured)?;
    let n = c.repetitions.max(1) as f64;
    f.counters
        .open_loop
        .as_ref()
        .map(|r| pick(r) as f64 / n)
        .filter(|v| *v > 0.0)
}

/// The rate an open-loop cell was offered, per second over all connections; `None` for a
/// closed-loop cell. The one place exporters read it: the rate the runner derived for an
/// equal-load point (`rate_per_sec` on the case), else what the workload recorded that it
/// drove (its counters: the rate sweeps).
pub fn offered_rate(c: &CaseResult) -> Option<f64> {
    c.rate_per_sec
        .filter(|_| c.status == Status::Measured)
        .map(|r| r as f64)
        .or_else(|| per_rep(c, |r| r.offered_per_sec))
}

/// The rate an open-loop cell achieved (mean over its repetitions).
pub fn achieved_rate(c: &CaseResult) -> Option<f64> {
    per_rep(c, |r| r.achieved_per_sec)
}

/// Whether an open-loop cell kept up with its offered rate in every repetition (`None`: not
/// an open-loop cell). Files without the `fell_behind` counter are judged by the achieved
/// rate against the offered one.
pub fn kept_up(c: &CaseResult) -> Option<bool> {
    let offered = offered_rate(c)?;
    let f = c.figures.as_ref()?;
    if f.counters.open_loop.is_some_and(|r| r.fell_behind > 0) {
        return Some(false);
    }
    Some(!fell_behind(offered, achieved_rate(c).unwrap_or(0.0)))
}

/// Whether the load generator had headroom in every repetition (no `client_bound` or
/// `both_saturated`): only then is a closed-loop throughput the server's capacity.
pub fn load_had_headroom(c: &CaseResult) -> bool {
    !c.warnings
        .iter()
        .any(|w| matches!(w, Warning::ClientBound | Warning::BothSaturated))
}

/// How far two cells' server CPU per op can be told apart.
#[derive(Clone, Debug, PartialEq)]
pub enum Evidence {
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
    pub fn within_noise(&self) -> bool {
        match self {
            Evidence::Claimed(c) => !c.decided(),
            Evidence::OneRun | Evidence::None => true,
        }
    }

    /// What the evidence is, for the verdict's text.
    pub fn text(&self) -> String {
        match self {
            Evidence::Claimed(c) => super::findings::claim_text(c),
            Evidence::OneRun => "untested: one repetition".into(),
            Evidence::None => "untested: no per-repetition CPU recorded".into(),
        }
    }

    pub fn claim_mut(&mut self) -> Option<&mut Claim> {
        match self {
            Evidence::Claimed(c) => Some(c),
            _ => None,
        }
    }
}

/// The evidence that `b` differs from `a` in server CPU per op: the paired claim of `b`
/// against `a` over their rounds.
pub fn cpu_per_op_evidence(a: &CaseFigures, b: &CaseFigures) -> Evidence {
    let (x, y) = (&a.runs_cpu_ns_per_op, &b.runs_cpu_ns_per_op);
    if x.is_empty() || y.is_empty() {
        return Evidence::None;
    }
    if x.len() < 2 || y.len() < 2 {
        return Evidence::OneRun;
    }
    match claims::pair(x, y, false, a.claim_alpha.min(b.claim_alpha)) {
        Some(c) => Evidence::Claimed(c),
        None => Evidence::None,
    }
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
            "counters": {"offered_per_sec": offered * reps as u64,
                         "achieved_per_sec": achieved * reps as u64, "fell_behind": fell},
            "histogram": "", "runs_cpu_ns_per_op": cpu
        }))
        .unwrap()
    }

    #[test]
    fn offered_and_achieved_rates_are_per_repetition() {
        let c = cell(5, 10_000, 9_990, 0, &[]);
        assert_eq!(offered_rate(&c), Some(10_000.0));
        assert_eq!(achieved_rate(&c), Some(9_990.0));
        assert_eq!(kept_up(&c), Some(true));
        // One repetition of five fell behind: the cell did not keep up.
        assert_eq!(kept_up(&cell(5, 10_000, 9_990, 1, &[])), Some(false));
        // Judged by the rates when the counter is missing (older files).
        assert_eq!(kept_up(&cell(2, 10_000, 9_000, 0, &[])), Some(false));
        let mut closed = cell(1, 0, 0, 0, &[]);
        closed.figures.as_mut().unwrap().counters = Default::default();
        assert_eq!((offered_rate(&closed), kept_up(&closed)), (None, None));
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
