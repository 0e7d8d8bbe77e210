//! A cell's figures as `compare` tests them: per-round values, relative to the point's
//! other models, and the decisive test before the run-to-run noise is known.

use super::*;

/// One figure of a cell as `compare` tests it: (figure, value, per-round values, their range).
pub(super) type FigureRuns = (Figure, f64, Vec<f64>, (f64, f64));

/// The figures of a measured cell that `compare` tests.
pub(super) fn figure_runs(c: &CaseResult, f: &CaseFigures) -> Vec<FigureRuns> {
    let med = |runs: &[f64], fallback: f64| {
        if runs.is_empty() {
            fallback
        } else {
            median(runs)
        }
    };
    let mut v = vec![(
        Figure::P50,
        med(&f.runs_p50_ns, f.run_p50_ns.median),
        f.runs_p50_ns.clone(),
        (f.run_p50_ns.min, f.run_p50_ns.max),
    )];
    // An open-loop cell achieves the rate it is offered: its ops/s is no figure of the code.
    if c.offered_rate().is_none() {
        v.push((
            Figure::OpsPerSec,
            med(&f.runs_ops_per_sec, f.ops_per_sec.median),
            f.runs_ops_per_sec.clone(),
            (f.ops_per_sec.min, f.ops_per_sec.max),
        ));
    }
    // Figures the summary keeps no spread of: their median and range from the runs.
    let of_runs = |fig: Figure, r: &[f64]| {
        let range = r.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
            (lo.min(*x), hi.max(*x))
        });
        (fig, median(r), r.to_vec(), range)
    };
    if f.runs_cpu_ns_per_op.len() >= 2 {
        v.push(of_runs(Figure::CpuPerOp, &f.runs_cpu_ns_per_op));
    }
    if f.runs_p99_ns.len() >= 2 && f.p99_tail_min >= crate::stats::claims::TAIL_MIN {
        v.push(of_runs(Figure::P99, &f.runs_p99_ns));
    }
    v
}

/// A cell of a point measured, undisturbed, in both runs, with its figures' runs in each.
pub(super) struct Peer<'a> {
    pub(super) cell: &'a CaseResult,
    pub(super) base: Vec<FigureRuns>,
    pub(super) new: Vec<FigureRuns>,
}

/// A figure's change relative to the point's other models in the same rounds: per run, each
/// round's value over the others' geometric mean in that round, compared between the runs.
/// Drift that a round's models share (the machine got slower) cancels; `None` without
/// another model at the point or two rounds a side.
pub(super) fn relative_to(
    others: &[&Peer],
    fig: Figure,
    rb: &[f64],
    rn: &[f64],
) -> Option<(RelativeTo, Change, Vec<f64>, Vec<f64>)> {
    let runs = |v: &[FigureRuns]| v.iter().find(|x| x.0 == fig).map(|x| x.2.clone());
    let (mut ob, mut on) = (Vec::new(), Vec::new());
    for p in others {
        if let (Some(x), Some(y)) = (runs(&p.base), runs(&p.new)) {
            ob.push(x);
            on.push(y);
        }
    }
    if ob.is_empty() {
        return None;
    }
    fn slices(v: &[Vec<f64>]) -> Vec<&[f64]> {
        v.iter().map(Vec::as_slice).collect()
    }
    let (xb, xn) = (
        crate::stats::stability::relative_rounds(rb, &slices(&ob)),
        crate::stats::stability::relative_rounds(rn, &slices(&on)),
    );
    if xb.len() < 2 || xn.len() < 2 {
        return None;
    }
    let (mb, mn) = (median(&xb), median(&xn));
    let name = if ob.len() == 1 {
        RelativeTo::Model(others[0].cell.label())
    } else {
        RelativeTo::Others(ob.len())
    };
    let c = change(mb, mn, &xb, &xn, ((mb, mb), (mn, mn)));
    Some((name, c, xb, xn))
}

impl Test {
    /// The change tested, percent.
    pub(crate) fn pct(&self) -> f64 {
        (self.log_change.exp() - 1.0) * 100.0
    }
}

/// The decisive test of one figure from the per-round values it is judged on (relative or
/// the figure's own), before the run-to-run noise is known.
pub(super) fn test_of(relative: bool, b: &[f64], n: &[f64]) -> Test {
    let logs = |v: &[f64]| -> Vec<f64> {
        v.iter()
            .filter(|x| **x > 0.0 && x.is_finite())
            .map(|x| x.ln())
            .collect()
    };
    let (lb, ln) = (logs(b), logs(n));
    let (log_change, within_var) = if lb.is_empty() || ln.is_empty() {
        (0.0, 0.0)
    } else {
        (
            median(&ln) - median(&lb),
            crate::stats::stability::median_variance(&lb)
                + crate::stats::stability::median_variance(&ln),
        )
    };
    let apart = lb.len() >= 2
        && ln.len() >= 2
        && (lb.iter().fold(f64::NEG_INFINITY, |a, x| a.max(*x))
            < ln.iter().fold(f64::INFINITY, |a, x| a.min(*x))
            || ln.iter().fold(f64::NEG_INFINITY, |a, x| a.max(*x))
                < lb.iter().fold(f64::INFINITY, |a, x| a.min(*x)));
    Test {
        relative,
        log_change,
        within_var,
        run_noise: None,
        p_rounds: mann_whitney(&lb, &ln),
        p_runs: None,
        p: None,
        p_adj: None,
        significant: false,
        apart,
        sizes: (lb.len(), ln.len()),
    }
}
