//! How long the cases of a run should take, from the same cases and budget the runner gets:
//! `run --dry-run` prints it. Each repetition costs its window (a network point's warm-up and
//! measured milliseconds) plus a setup cost of its kind; every case runs its warm-up
//! repetitions, its rounds and the one that counts syscalls. A rough figure: re-runs of
//! disturbed repetitions, wrk beside `http.clients`, `--explain` and the cross-checks are not
//! in it; added rounds are given apart, as the most the profile lets them take.

use super::{Budget, Case};
use crate::workload::net::cell::COUNTING_WINDOW;
use crate::workload::Kind;

/// Seconds a network repetition costs beside its window: starting, connecting, reading and
/// stopping the server (`run echo.payload --profile smoke --models epoll-lt,uring` on a
/// 2-vCPU VM: a timed repetition every 0.6 s, each a 0.5 s window).
const NET_SETUP_S: f64 = 0.1;
/// Seconds of one micro-loop repetition, setup included (`run micro --profile smoke`: 225
/// repetitions in 8 s on a 2-vCPU VM).
const MICRO_REP_S: f64 = 0.03;
/// Seconds every run spends outside its cells: the environment probe, the look at the CPUs
/// before the run, the report.
const RUN_S: f64 = 1.5;
/// Seconds of one storage repetition (files written or read back, fsyncs, cache drops; the
/// storage workloads at smoke with `blocking` took 1 to 4 s each on a 2-vCPU VM).
const STORAGE_REP_S: f64 = 0.5;

/// One workload's share of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadEstimate {
    pub workload: &'static str,
    /// Cases to measure (model x point).
    pub cells: usize,
    /// Distinct parameter points, as `key=value` lists.
    pub points: Vec<String>,
    /// Repetitions per cell: warm-ups, rounds and the counting one.
    pub repetitions: u32,
    pub seconds: f64,
}

/// The whole run's.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    pub workloads: Vec<WorkloadEstimate>,
    /// Cases shown as not applicable (a named model a workload does not take).
    pub not_applicable: usize,
    pub seconds: f64,
    /// The most seconds added rounds may take on top (`Budget::extension_s`), when any
    /// workload adds rounds.
    pub extension_s: u64,
}

/// The estimate of `cases` under `budget` (as given to `runner::run_with`).
pub fn estimate(cases: &[Case], budget: Budget) -> Estimate {
    let mut out: Vec<WorkloadEstimate> = Vec::new();
    let mut not_applicable = 0;
    let mut extends = false;
    for c in cases {
        let Some(p) = &c.point else {
            not_applicable += 1;
            continue;
        };
        let w = c.workload;
        let b = w.budget(budget);
        extends |= b.extra_rounds > 0;
        let how = Plan::of(c, p, b);
        let rounds = how.rounds(b);
        let reps = b.warmups + rounds + u32::from(!matches!(how, Plan::Probe));
        let seconds = match w.kind() {
            Kind::Net => {
                let ms = |k| p.params.0.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
                let (warmup, window) = (ms("warmup_ms"), ms("duration_ms"));
                // The counting repetition's window is at most `COUNTING_WINDOW`; a sliced
                // repetition pays each slice's warm-up instead of one.
                let counting = window.min(COUNTING_WINDOW.as_millis() as u64);
                let per_rep = match how {
                    Plan::Sliced(s) => {
                        s.per_round as u64 * (s.warmup + s.window).as_millis() as u64
                    }
                    _ => warmup + window,
                };
                let timed = (b.warmups + rounds) as f64;
                let counted = if matches!(how, Plan::Probe) {
                    0.0
                } else {
                    (warmup + counting) as f64
                };
                (timed * per_rep as f64 + counted) / 1000.0 + reps as f64 * NET_SETUP_S
            }
            Kind::Micro => reps as f64 * MICRO_REP_S,
            Kind::Storage => reps as f64 * STORAGE_REP_S,
        };
        let point = p
            .params
            .0
            .iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => format!("{k}={s}"),
                v => format!("{k}={v}"),
            })
            .chain(p.variant.map(|v| format!("variant={v}")))
            .chain(
                p.equal_load
                    .as_ref()
                    .map(|_| crate::results::EQUAL_LOAD_WORD.to_string()),
            )
            .collect::<Vec<_>>()
            .join(" ")
            + &how.text(b);
        let i = match out.iter().position(|e| e.workload == w.id()) {
            Some(i) => i,
            None => {
                out.push(WorkloadEstimate {
                    workload: w.id(),
                    cells: 0,
                    points: Vec::new(),
                    repetitions: reps,
                    seconds: 0.0,
                });
                out.len() - 1
            }
        };
        let e = &mut out[i];
        e.cells += 1;
        e.repetitions = e.repetitions.max(reps);
        e.seconds += seconds;
        if !e.points.contains(&point) {
            e.points.push(point);
        }
    }
    Estimate {
        seconds: RUN_S + out.iter().map(|e| e.seconds).sum::<f64>(),
        workloads: out,
        not_applicable,
        extension_s: if extends { budget.extension_s } else { 0 },
    }
}

/// How the runner measures a point (`runner::measure_group`): a capacity probe, rounds of
/// interleaved slices, or rounds of whole repetitions.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Plan {
    /// A network point in closed loop: its first round probes the load generator's headroom,
    /// and it runs its rounds only where two models had some (the estimate counts the probe).
    Probe,
    Sliced(crate::workload::net::cell::Slicing),
    Whole,
}

impl Plan {
    fn of(c: &Case, p: &crate::workload::Point, b: Budget) -> Plan {
        let w = c.workload;
        if let Some(s) = w.slices(p) {
            return Plan::Sliced(s);
        }
        let closed = w.kind() == Kind::Net && !w.facts().open_loop && p.equal_load.is_none();
        if closed && b.repetitions > 1 {
            Plan::Probe
        } else {
            Plan::Whole
        }
    }

    /// The rounds the estimate counts: the probe's one, else the point's first rounds (at least
    /// the fewest that can decide a claim, where rounds are added until decided).
    fn rounds(self, b: Budget) -> u32 {
        match self {
            Plan::Probe => 1,
            _ => match first_claim(b) {
                Some(n) => b.repetitions.max(n),
                None => b.repetitions,
            },
        }
    }

    /// What `--dry-run` says of the point after its params.
    fn text(self, b: Budget) -> String {
        let until = first_claim(b).map(|n| {
            format!(
                "; {} to {} rounds, until its claims are decided",
                b.repetitions.max(n),
                b.repetitions + b.extra_rounds
            )
        });
        match self {
            Plan::Probe => " (capacity: one round probes the load generator's headroom; more \
                            only where two models had some)"
                .into(),
            Plan::Sliced(s) => format!(
                " (each round {} slices of {} ms per model, interleaved{})",
                s.per_round,
                s.window.as_millis(),
                until.unwrap_or_default()
            ),
            Plan::Whole => until.map(|u| format!(" ({})", &u[2..])).unwrap_or_default(),
        }
    }
}

/// The fewest rounds that can decide a claim under the sequential design a budget with added
/// rounds gives (`runner`); `None` with fixed rounds.
fn first_claim(b: Budget) -> Option<u32> {
    use crate::stats::claims::{rounds_needed, Level, ALPHA};
    use crate::stats::sequential::Looks;
    (b.extra_rounds > 0).then(|| {
        let looks = Looks::new(rounds_needed(ALPHA) as u32, b.repetitions + b.extra_rounds);
        Level::sequential(ALPHA, looks).first_claim()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::pin::CpuPlan;
    use crate::plan::{expand, Profile};
    use crate::registry;

    #[test]
    fn an_estimate_counts_the_cells_and_their_windows() {
        let plan = CpuPlan::pair(1, Some(0));
        let w = registry::workload("echo.payload").unwrap();
        let ms: Vec<_> = ["epoll-lt", "uring"]
            .iter()
            .map(|m| registry::model(m).unwrap())
            .collect();
        let cases = expand(&[w], &ms, false, Profile::Smoke, &plan);
        let e = estimate(&cases, Profile::Smoke.budget());
        assert_eq!(e.workloads.len(), 1);
        let we = &e.workloads[0];
        assert_eq!(we.cells, cases.len());
        assert_eq!(we.points.len() * 2, cases.len());
        // smoke: one round (0.1 s warm-up, 0.4 s window) and the counting repetition (its
        // window 0.2 s), each with its setup.
        assert_eq!(we.repetitions, 2);
        let want = RUN_S + cases.len() as f64 * (0.5 + 0.3 + 2.0 * NET_SETUP_S);
        assert!((e.seconds - want).abs() < 1e-9, "{} vs {want}", e.seconds);
        assert_eq!(e.extension_s, 0);
        // quick adds rounds within its extension.
        let q = expand(&[w], &ms, false, Profile::Quick, &plan);
        assert_eq!(
            estimate(&q, Profile::Quick.budget()).extension_s,
            Profile::Quick.budget().extension_s
        );
    }
}
