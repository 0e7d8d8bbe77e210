//! Comparing two runs: per common cell, the change in median latency and in ops/s, with
//! significance from the repetitions (two-sided Mann-Whitney U on the per-run values: exact
//! for small samples without ties, normal approximation with tie correction otherwise), and
//! the differences between the two environments.

use crate::results::{CaseResult, RunResults, Status};
use crate::stats::median;

/// Significance level of every test here.
pub const ALPHA: f64 = 0.05;

/// Two-sided p-value of the Mann-Whitney U test; `None` with fewer than 2 values a side.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<f64> {
    let (n1, n2) = (a.len(), b.len());
    if n1 < 2 || n2 < 2 {
        return None;
    }
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let mut r1 = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0; // average rank of the tie group
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        r1 += all[i..=j].iter().filter(|x| x.1).count() as f64 * rank;
        i = j + 1;
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let u1 = r1 - f1 * (f1 + 1.0) / 2.0;
    let u = u1.min(f1 * f2 - u1);
    if tie_term == 0.0 && n1 <= 25 && n2 <= 25 {
        return Some(exact_p(n1, n2, u));
    }
    let mu = f1 * f2 / 2.0;
    let nf = n as f64;
    let var = f1 * f2 / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)));
    if var <= 0.0 {
        return Some(1.0);
    }
    let z = ((u1 - mu).abs() - 0.5).max(0.0) / var.sqrt();
    Some((2.0 * normal_sf(z)).min(1.0))
}

/// Exact two-sided p for U <= `u` (the smaller U), by counting arrangements.
fn exact_p(n1: usize, n2: usize, u: f64) -> f64 {
    let max_u = n1 * n2;
    // f[i][j] = counts of U over arrangements of i a's and j b's, indexed by U.
    let mut f = vec![vec![Vec::<f64>::new(); n2 + 1]; n1 + 1];
    for i in 0..=n1 {
        for j in 0..=n2 {
            let mut v = vec![0.0; i * j + 1];
            if i == 0 || j == 0 {
                v[0] = 1.0;
            } else {
                // Largest element from a (beats all j b's) or from b.
                for (k, c) in f[i - 1][j].iter().enumerate() {
                    v[k + j] += c;
                }
                for (k, c) in f[i][j - 1].iter().enumerate() {
                    v[k] += c;
                }
            }
            f[i][j] = v;
        }
    }
    let dist = &f[n1][n2];
    let total: f64 = dist.iter().sum();
    let k = (u.floor() as usize).min(max_u);
    let tail: f64 = dist[..=k].iter().sum();
    (2.0 * tail / total).min(1.0)
}

/// Upper tail of the standard normal, via erfc (Numerical Recipes' erfcc, |error| < 1.2e-7).
fn normal_sf(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    let y = t
        * (-x * x - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    let erfc = if x >= 0.0 { y } else { 2.0 - y };
    erfc / 2.0
}

/// How a change was judged significant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Mann-Whitney U on per-run values.
    MannWhitney,
    /// Files without per-run values: the per-run min..max ranges do not overlap.
    Spread,
}

/// One figure of one cell in both runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub base: f64,
    pub new: f64,
    /// (new - base) / base, percent.
    pub pct: f64,
    /// Two-sided p-value, when per-run values allow a test.
    pub p: Option<f64>,
    pub significant: bool,
    pub method: Method,
}

fn change(
    base: f64,
    new: f64,
    base_runs: &[f64],
    new_runs: &[f64],
    ranges: ((f64, f64), (f64, f64)),
) -> Change {
    let pct = if base == 0.0 {
        0.0
    } else {
        (new - base) / base * 100.0
    };
    match mann_whitney(base_runs, new_runs) {
        Some(p) => Change {
            base,
            new,
            pct,
            p: Some(p),
            significant: p < ALPHA,
            method: Method::MannWhitney,
        },
        None => {
            let ((b0, b1), (n0, n1)) = ranges;
            Change {
                base,
                new,
                pct,
                p: None,
                significant: b1 < n0 || n1 < b0,
                method: Method::Spread,
            }
        }
    }
}

/// One cell present and measured in both runs.
#[derive(Clone, Debug, PartialEq)]
pub struct CellChange {
    /// "micro.pipe uring msg_bytes=64".
    pub cell: String,
    /// Median of per-run median latencies, ns.
    pub p50: Change,
    /// Median of per-run ops/s.
    pub ops: Change,
    /// Slower or less throughput, significantly and beyond the threshold.
    pub regression: bool,
    /// Faster or more throughput, significantly and beyond the threshold.
    pub improvement: bool,
}

/// Everything `ringside compare` reports.
#[derive(Clone, Debug, Default)]
pub struct Comparison {
    pub cells: Vec<CellChange>,
    pub only_base: Vec<String>,
    pub only_new: Vec<String>,
    /// Cells in both runs but not measured in one or both, with the statuses and reasons.
    pub not_compared: Vec<String>,
    /// (what, base value, new value) for every environment fact that differs.
    pub env_diff: Vec<(String, String, String)>,
}

impl Comparison {
    pub fn regressions(&self) -> impl Iterator<Item = &CellChange> {
        self.cells.iter().filter(|c| c.regression)
    }
}

/// The key cells are matched by: workload, label and params.
pub fn cell_key(c: &CaseResult) -> String {
    let p: Vec<String> = c.params.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut s = format!("{} {}", c.workload, c.label());
    if !p.is_empty() {
        s.push(' ');
        s.push_str(&p.join(" "));
    }
    s
}

/// Flattens a JSON value into ("a.b.c", "value") rows.
pub fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    use serde_json::Value;
    let key = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        x => x.to_string(),
    };
    match v {
        Value::Object(m) if m.len() == 1 && m.contains_key("unavailable") => out.push((
            prefix.to_string(),
            format!("unavailable: {}", text(&m["unavailable"])),
        )),
        Value::Object(m) => {
            for (k, x) in m {
                flatten(&key(k), x, out);
            }
        }
        Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => out.push((
            prefix.to_string(),
            a.iter().map(text).collect::<Vec<_>>().join(", "),
        )),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&key(&i.to_string()), x, out);
            }
        }
        x => out.push((prefix.to_string(), text(x))),
    }
}

/// The facts of a run that can explain a difference: the environment, ringside's version,
/// the profile, the CPU plan, the clocksource and the command's flags.
fn context(run: &RunResults) -> Vec<(String, String)> {
    let v = serde_json::json!({
        "ringside": run.ringside,
        "profile": run.profile,
        "plan": run.plan,
        "clocksource": run.timer.clocksource,
        "flags": run.command.iter().skip(1).cloned().collect::<Vec<_>>().join(" "),
        "env": run.env,
    });
    let mut out = Vec::new();
    flatten("", &v, &mut out);
    out
}

/// Compares `new` against `base`; a cell regresses when its median latency rises or its
/// ops/s falls by more than `threshold_pct` percent, significantly.
pub fn compare(base: &RunResults, new: &RunResults, threshold_pct: f64) -> Comparison {
    let mut cmp = Comparison::default();
    for b in &base.cases {
        let key = cell_key(b);
        let Some(n) = new.cases.iter().find(|n| cell_key(n) == key) else {
            cmp.only_base.push(key);
            continue;
        };
        let figs = (
            b.figures.as_ref().filter(|_| b.status == Status::Measured),
            n.figures.as_ref().filter(|_| n.status == Status::Measured),
        );
        let (Some(fb), Some(fnew)) = figs else {
            let why = |c: &CaseResult| match c.status {
                Status::Measured => "measured".to_string(),
                s => format!(
                    "{s}: {}",
                    c.reason.as_deref().unwrap_or("no reason recorded")
                ),
            };
            cmp.not_compared
                .push(format!("{key}: base {}; new {}", why(b), why(n)));
            continue;
        };
        let med = |runs: &[f64], fallback: f64| {
            if runs.is_empty() {
                fallback
            } else {
                median(runs)
            }
        };
        let p50 = change(
            med(&fb.runs_p50_ns, fb.run_p50_ns.median),
            med(&fnew.runs_p50_ns, fnew.run_p50_ns.median),
            &fb.runs_p50_ns,
            &fnew.runs_p50_ns,
            (
                (fb.run_p50_ns.min, fb.run_p50_ns.max),
                (fnew.run_p50_ns.min, fnew.run_p50_ns.max),
            ),
        );
        let ops = change(
            med(&fb.runs_ops_per_sec, fb.ops_per_sec.median),
            med(&fnew.runs_ops_per_sec, fnew.ops_per_sec.median),
            &fb.runs_ops_per_sec,
            &fnew.runs_ops_per_sec,
            (
                (fb.ops_per_sec.min, fb.ops_per_sec.max),
                (fnew.ops_per_sec.min, fnew.ops_per_sec.max),
            ),
        );
        let regression = (p50.significant && p50.pct > threshold_pct)
            || (ops.significant && ops.pct < -threshold_pct);
        let improvement = !regression
            && ((p50.significant && p50.pct < -threshold_pct)
                || (ops.significant && ops.pct > threshold_pct));
        cmp.cells.push(CellChange {
            cell: key,
            p50,
            ops,
            regression,
            improvement,
        });
    }
    for n in &new.cases {
        let key = cell_key(n);
        if !base.cases.iter().any(|b| cell_key(b) == key) {
            cmp.only_new.push(key);
        }
    }
    let (cb, cn) = (context(base), context(new));
    for (k, vb) in &cb {
        let vn = cn
            .iter()
            .find(|(kn, _)| kn == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| "(absent)".into());
        if *vb != vn {
            cmp.env_diff.push((k.clone(), vb.clone(), vn));
        }
    }
    for (k, vn) in &cn {
        if !cb.iter().any(|(kb, _)| kb == k) {
            cmp.env_diff
                .push((k.clone(), "(absent)".into(), vn.clone()));
        }
    }
    cmp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mann_whitney_known_values() {
        // Completely separated 5 vs 5: exact two-sided p = 2/252.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [6.0, 7.0, 8.0, 9.0, 10.0];
        let p = mann_whitney(&a, &b).unwrap();
        assert!((p - 2.0 / 252.0).abs() < 1e-12, "{p}");
        // Interleaved: no evidence.
        let c = [1.0, 3.0, 5.0, 7.0, 9.0];
        let d = [2.0, 4.0, 6.0, 8.0, 10.0];
        assert!(mann_whitney(&c, &d).unwrap() > 0.5);
        // 3 vs 3 can never reach 0.05 (minimum p = 0.1).
        let p3 = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!((p3 - 0.1).abs() < 1e-12, "{p3}");
        // Ties use the normal approximation; identical samples give p = 1.
        assert_eq!(mann_whitney(&[5.0; 4], &[5.0; 4]), Some(1.0));
        assert!(mann_whitney(&[1.0], &[2.0, 3.0]).is_none());
        // Large separated samples with ties: tiny p.
        let e: Vec<f64> = (0..30).map(|i| (i / 2) as f64).collect();
        let f: Vec<f64> = (0..30).map(|i| 100.0 + (i / 2) as f64).collect();
        assert!(mann_whitney(&e, &f).unwrap() < 1e-6);
    }

    #[test]
    fn normal_tail() {
        assert!((normal_sf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_sf(1.959_964) - 0.025).abs() < 1e-6);
    }
}
