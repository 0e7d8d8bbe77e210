//! Comparing two runs: per common cell, the change in median latency and in ops/s, with
//! significance from the repetitions (two-sided Mann-Whitney U on the per-run values: exact
//! for small samples without ties, normal approximation with tie correction otherwise), and
//! the differences between the two environments.
//!
//! A test can only find what its sample sizes allow: the smallest two-sided p Mann-Whitney
//! can give for n1 and n2 values is 2 / C(n1 + n2, n1) (0.1 for 3 against 3), so below 4
//! repetitions a side no change is ever significant at alpha 0.05. Such a change beyond the
//! threshold is reported as untested, never as "no significant change"; [`Comparison::gate`]
//! says what makes `ringside compare` exit 1.

use crate::results::{CaseResult, RunResults, Status};
use crate::stats::median;

/// Significance level of every test here.
pub const ALPHA: f64 = 0.05;

/// The smallest two-sided p-value the Mann-Whitney U test can reach with `n1` and `n2`
/// values: both samples completely apart, the one arrangement in C(n1 + n2, n1) (per tail)
/// that is most extreme. Ties only coarsen the distribution, so no p is ever smaller.
pub fn min_p(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    // C(n1 + n2, k) as a product of ratios; it only grows, so overflow is to +inf (p -> 0).
    let k = n1.min(n2);
    let mut c = 1.0f64;
    for i in 1..=k {
        c = c * (n1 + n2 - k + i) as f64 / i as f64;
    }
    (2.0 / c).min(1.0)
}

/// Whether `n1` against `n2` values can ever be significant at `alpha`.
pub fn testable(n1: usize, n2: usize, alpha: f64) -> bool {
    n1 >= 2 && n2 >= 2 && min_p(n1, n2) < alpha
}

/// The fewest repetitions per side with which a change can be significant at `alpha`
/// (4 at 0.05: 2/70 = 0.029, while 3 gives 2/20 = 0.1).
pub fn reps_needed(alpha: f64) -> usize {
    (2..=1000).find(|&n| testable(n, n, alpha)).unwrap_or(1000)
}

/// Two-sided p-value of the Mann-Whitney U test; `None` with fewer than 2 values a side. Never
/// below [`min_p`] (the normal approximation used with ties could otherwise claim more than
/// the samples can show).
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<f64> {
    mann_whitney_raw(a, b).map(|p| p.max(min_p(a.len(), b.len())))
}

fn mann_whitney_raw(a: &[f64], b: &[f64]) -> Option<f64> {
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
pub(crate) fn normal_sf(z: f64) -> f64 {
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
    /// (base, new) repetitions when they are too few for the test to ever reach [`ALPHA`]:
    /// then `significant` is false whatever the change.
    pub too_few: Option<(usize, usize)>,
    /// 95% bootstrap interval of `pct` over the repetitions (`stats::bootstrap`), when each
    /// side has at least two.
    pub ci_pct: Option<(f64, f64)>,
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
    let sizes = (base_runs.len(), new_runs.len());
    let ci_pct = super::bootstrap::change_pct_ci(base_runs, new_runs);
    match mann_whitney(base_runs, new_runs) {
        Some(p) => Change {
            base,
            new,
            pct,
            p: Some(p),
            significant: p < ALPHA,
            method: Method::MannWhitney,
            too_few: (!testable(sizes.0, sizes.1, ALPHA)).then_some(sizes),
            ci_pct,
        },
        None => {
            let ((b0, b1), (n0, n1)) = ranges;
            // One repetition on a side (its runs recorded): nothing to test with, and a range
            // of one value is "apart" from any other.
            let too_few = (sizes.0 == 1 || sizes.1 == 1).then_some(sizes);
            Change {
                base,
                new,
                pct,
                p: None,
                significant: too_few.is_none() && (b1 < n0 || n1 < b0),
                method: Method::Spread,
                too_few,
                ci_pct,
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
    /// A change beyond the threshold (either way) that the repetitions are too few to test:
    /// "too few repetitions to test (n=3; need >= 4)".
    pub untested: Option<String>,
}

/// "too few repetitions to test (n=3; need >= 4)" for `(base, new)` repetitions.
pub fn too_few_text((nb, nn): (usize, usize)) -> String {
    let n = if nb == nn {
        format!("n={nb}")
    } else {
        format!("n={nb} and {nn}")
    };
    format!(
        "too few repetitions to test ({n}; need >= {})",
        reps_needed(ALPHA)
    )
}

/// Everything `ringside compare` reports.
#[derive(Clone, Debug, Default)]
pub struct Comparison {
    pub cells: Vec<CellChange>,
    pub only_base: Vec<String>,
    pub only_new: Vec<String>,
    /// Cells in both runs but not measured in one or both, with the statuses and reasons.
    pub not_compared: Vec<String>,
    /// Cells measured in BASE that `failed` in NEW, with NEW's reason (part of `not_compared`).
    pub became_failed: Vec<String>,
    /// Cells measured in BASE that NEW did not measure for another reason (unavailable, not
    /// applicable): no longer tested (part of `not_compared`).
    pub no_longer_measured: Vec<String>,
    /// Whether each file is a finished run (`"finished": true`).
    pub base_finished: bool,
    pub new_finished: bool,
    /// (what, base value, new value) for every environment fact that differs.
    pub env_diff: Vec<(String, String, String)>,
}

impl Comparison {
    pub fn regressions(&self) -> impl Iterator<Item = &CellChange> {
        self.cells.iter().filter(|c| c.regression)
    }

    /// Changes beyond the threshold the repetitions cannot test.
    pub fn untested(&self) -> impl Iterator<Item = &CellChange> {
        self.cells.iter().filter(|c| c.untested.is_some())
    }

    /// Why `ringside compare` fails (exit 1), one sentence each; empty: it passes. Always: a
    /// significant regression, a measured cell that failed, an unfinished NEW run, and a
    /// comparison of nothing. Unless `allow_untested`: a change beyond the threshold that is
    /// too few repetitions to test, cells only one file has, and cells NEW no longer measured.
    pub fn gate(&self, threshold_pct: f64, allow_untested: bool) -> Vec<String> {
        let mut why = Vec::new();
        let names = |v: Vec<&str>| v.join("; ");
        let regs: Vec<&str> = self.regressions().map(|c| c.cell.as_str()).collect();
        if !regs.is_empty() {
            why.push(format!(
                "{} regression(s) beyond {threshold_pct}%: {}",
                regs.len(),
                names(regs)
            ));
        }
        if !self.became_failed.is_empty() {
            why.push(format!(
                "{} cell(s) measured in BASE failed in NEW: {}",
                self.became_failed.len(),
                self.became_failed.join("; ")
            ));
        }
        if !self.new_finished {
            why.push(
                "NEW is an unfinished run (\"finished\": false): cells it never reached are \
                 not compared"
                    .into(),
            );
        }
        if self.cells.is_empty() {
            why.push("no cell was compared: the two files have no measured cell in common".into());
        }
        if allow_untested {
            return why;
        }
        let untested: Vec<&str> = self.untested().map(|c| c.cell.as_str()).collect();
        if !untested.is_empty() {
            why.push(format!(
                "{} change(s) beyond {threshold_pct}% cannot be tested, {}: {} (more \
                 repetitions, or --allow-untested)",
                untested.len(),
                reps_hint(self),
                names(untested)
            ));
        }
        let one_sided = self.only_base.len() + self.only_new.len();
        if one_sided > 0 {
            why.push(format!(
                "{one_sided} cell(s) are in one file only (--allow-untested to accept)"
            ));
        }
        if !self.no_longer_measured.is_empty() {
            why.push(format!(
                "{} cell(s) measured in BASE are not measured in NEW: {} (--allow-untested to \
                 accept)",
                self.no_longer_measured.len(),
                self.no_longer_measured.join("; ")
            ));
        }
        why
    }
}

/// "too few repetitions to test" with the sizes of the first untested cell.
fn reps_hint(cmp: &Comparison) -> String {
    cmp.untested()
        .find_map(|c| c.p50.too_few.or(c.ops.too_few))
        .map(too_few_text)
        .unwrap_or_else(|| "too few repetitions to test".into())
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
        // A multi-host run's other hosts, by role: their env and network path diff too. Load
        // hosts (`--load-host`, repeatable) by their place in the list.
        "hosts": run.hosts.iter().scan(0, |n, h| {
            let key = if h.role == "load" {
                *n += 1;
                format!("load{n}")
            } else {
                h.role.clone()
            };
            Some((key, h))
        }).collect::<std::collections::BTreeMap<_, _>>(),
    });
    let mut out = Vec::new();
    flatten("", &v, &mut out);
    out
}

/// Compares `new` against `base`; a cell regresses when its median latency rises or its
/// ops/s falls by more than `threshold_pct` percent, significantly.
pub fn compare(base: &RunResults, new: &RunResults, threshold_pct: f64) -> Comparison {
    let mut cmp = Comparison {
        base_finished: base.finished,
        new_finished: new.finished,
        ..Comparison::default()
    };
    // First cell of each key in NEW (a key seen twice keeps its first cell, as before).
    let mut in_new: std::collections::HashMap<String, &CaseResult> = Default::default();
    for n in &new.cases {
        in_new.entry(cell_key(n)).or_insert(n);
    }
    let in_base: std::collections::HashSet<String> = base.cases.iter().map(cell_key).collect();
    for b in &base.cases {
        let key = cell_key(b);
        let Some(&n) = in_new.get(&key) else {
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
            if figs.0.is_some() {
                let line = format!("{key}: {}", why(n));
                if n.status == Status::Failed {
                    cmp.became_failed.push(line);
                } else {
                    cmp.no_longer_measured.push(line);
                }
            }
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
        let beyond = |c: &Change| c.pct.abs() > threshold_pct;
        let untested = [&p50, &ops]
            .into_iter()
            .find(|c| beyond(c) && c.too_few.is_some())
            .filter(|_| !regression && !improvement)
            .and_then(|c| c.too_few)
            .map(too_few_text);
        cmp.cells.push(CellChange {
            cell: key,
            p50,
            ops,
            regression,
            improvement,
            untested,
        });
    }
    for n in &new.cases {
        let key = cell_key(n);
        if !in_base.contains(&key) {
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
    fn smallest_attainable_p_and_repetitions_needed() {
        assert!((min_p(3, 3) - 0.1).abs() < 1e-12);
        assert!((min_p(4, 4) - 2.0 / 70.0).abs() < 1e-12);
        assert!((min_p(5, 5) - 2.0 / 252.0).abs() < 1e-12);
        assert!((min_p(3, 5) - 2.0 / 56.0).abs() < 1e-12);
        assert_eq!(min_p(1, 1), 1.0);
        assert!(min_p(2000, 2000) < 1e-300);
        assert!(!testable(3, 3, ALPHA) && testable(4, 4, ALPHA) && testable(3, 5, ALPHA));
        assert!(!testable(2, 4, ALPHA)); // 2/15 = 0.13
        assert_eq!(reps_needed(0.05), 4);
        assert_eq!(reps_needed(0.01), 5); // 2/252 = 0.0079
                                          // The exact minimum is what the test itself gives for completely separated samples.
        for n in 2..=8 {
            let a: Vec<f64> = (0..n).map(|i| i as f64).collect();
            let b: Vec<f64> = (0..n).map(|i| 100.0 + i as f64).collect();
            let p = mann_whitney(&a, &b).unwrap();
            assert!((p - min_p(n, n)).abs() < 1e-12, "n={n}: {p}");
        }
        // Ties take the normal approximation, which may not claim more than the sizes allow.
        let p = mann_whitney(&[1.0, 1.0, 2.0], &[9.0, 9.0, 9.0]).unwrap();
        assert!(p >= 0.1, "{p}");
    }

    #[test]
    fn normal_tail() {
        assert!((normal_sf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_sf(1.959_964) - 0.025).abs() < 1e-6);
    }
}
