//! What varies between runs that the rounds of one run cannot show.
//!
//! A run's rounds measure how much a figure moves from one round to the next; a second run of
//! the same build on the same machine moves it by more: each run has its own state (where
//! memory landed, which host core a vCPU got, how a poller thread and its peer meet), shared
//! by all the rounds of that run. Intervals over rounds cover the first, not the second
//! (Kalibera and Jones, "Rigorous Benchmarking in Reasonable Time", 2013: repeat at the
//! level that varies). Two things here keep `compare` from calling that a change of the code:
//!
//! - [`run_noise`]: the run-to-run spread of a figure, estimated from every cell of two runs
//!   at once (a random effect per run, as in a random-effects meta-analysis). Each cell's
//!   change is a log ratio `d` with a within-run variance `v` from its rounds; under no change
//!   `d ~ N(0, v + 2 tau^2)`. `tau^2` is fitted to the smallest three quarters of the cells'
//!   `d^2 / (v + 2 tau^2)` (trimmed, so real changes in up to a quarter of the cells do not
//!   inflate it) and used at its 95% upper bound.
//! - [`two_levels`]: a cell whose rounds, in time order, jump from one level to another and
//!   stay (both segments at least two rounds, completely apart, the clear gap between them
//!   wider than either segment's own range and than 10%). Computed on values relative to the
//!   point's other models in the same rounds, so a machine that slowed for everyone cancels;
//!   a jump is laid on the model of the point that jumped furthest at that round, not on the
//!   point-mates whose reference it moved. What is left is a model that has two states on
//!   this machine (SQPOLL's poller on a busy vCPU is one). Such a model's figures differ
//!   between runs by as much as its levels do; [`unstable`] lists them per workload, for the
//!   trust line and `compare`. The calibration probes' states within a run
//!   ([`run_states`]) live here too.

use crate::results::{CaseResult, RunResults, Status};

/// The share of cells [`run_noise`] fits to (the rest, the largest changes, are left out:
/// real changes in up to a quarter of the cells do not inflate it).
pub(crate) const NOISE_KEEP: f64 = 0.75;
/// The fewest cells from which [`run_noise`] estimates anything.
pub(crate) const NOISE_MIN_CELLS: usize = 8;
/// The smallest gap between two levels that [`two_levels`] reports (10%).
pub(crate) const LEVEL_GAP: f64 = 0.10;

/// P(chi-square(1) <= x).
fn chi2_1_cdf(x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    1.0 - 2.0 * super::rank::normal_sf(x.sqrt())
}

/// The mean of chi-square(1) below its `q` quantile: E[X | X <= c] = P(chi2(3) <= c) / q,
/// with P(chi2(3) <= c) = P(chi2(1) <= c) - sqrt(2c/pi) e^(-c/2).
fn chi2_1_trimmed_mean(q: f64) -> f64 {
    if q >= 1.0 {
        return 1.0;
    }
    let (mut lo, mut hi) = (0.0f64, 64.0f64);
    for _ in 0..200 {
        let m = (lo + hi) / 2.0;
        if chi2_1_cdf(m) < q {
            lo = m;
        } else {
            hi = m;
        }
    }
    let c = (lo + hi) / 2.0;
    let p3 = chi2_1_cdf(c) - (2.0 * c / std::f64::consts::PI).sqrt() * (-c / 2.0).exp();
    p3 / q
}

/// The run-to-run noise of a group of tests: the estimate and the 95% upper bound it is
/// judged with (log sd per run).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Noise {
    pub(crate) estimate: f64,
    pub(crate) upper: f64,
}

/// The run-to-run standard deviation (in log units, per run) of a figure, from the cells'
/// changes `d` (log ratios, NEW over BASE, centred by the caller: a shift every cell shares
/// is the machine's, judged elsewhere) and their within-run variances `v`: each cell's
/// `z^2 = d^2 / (v + 2 tau^2)` is chi-square(1) under no change; `tau` is fitted so that
/// the mean of the smallest [`NOISE_KEEP`] of them is chi-square(1)'s below the same
/// quantile (a trimmed estimate: the largest changes, where real ones are, are left out),
/// with its 95% upper bound (the estimate from n cells is uncertain by about
/// 1/sqrt(n) in log; simulated: the trimmed estimate's 5th percentile is 0.80x the true
/// value at 48 cells, 0.69x at 19), so a pair of runs is not judged against noise it
/// underestimated. 0 when the rounds already account for the spread; `None` with fewer
/// than [`NOISE_MIN_CELLS`] cells.
pub(crate) fn run_noise(changes: &[(f64, f64)]) -> Option<Noise> {
    let cells: Vec<(f64, f64)> = changes
        .iter()
        .copied()
        .filter(|(d, v)| d.is_finite() && v.is_finite() && *v >= 0.0)
        .collect();
    let n = cells.len();
    if n < NOISE_MIN_CELLS {
        return None;
    }
    let keep = ((n as f64 * NOISE_KEEP).ceil() as usize).clamp(1, n);
    let target = chi2_1_trimmed_mean(keep as f64 / n as f64);
    let stat = |t2: f64| {
        let mut z: Vec<f64> = cells
            .iter()
            .map(|(d, v)| {
                let den = v + 2.0 * t2;
                if den > 0.0 {
                    d * d / den
                } else if *d == 0.0 {
                    0.0
                } else {
                    f64::INFINITY
                }
            })
            .collect();
        z.sort_by(f64::total_cmp);
        z[..keep].iter().sum::<f64>() / keep as f64
    };
    if stat(0.0) <= target {
        return Some(Noise {
            estimate: 0.0,
            upper: 0.0,
        });
    }
    // The statistic falls as tau^2 grows: widen an upper bound until it is under the target,
    // then bisect.
    let mut hi = cells
        .iter()
        .map(|(d, _)| d * d)
        .fold(0.0, f64::max)
        .max(1e-12);
    while stat(hi) > target {
        hi *= 4.0;
    }
    let mut lo = 0.0;
    for _ in 0..100 {
        let m = (lo + hi) / 2.0;
        if stat(m) > target {
            lo = m;
        } else {
            hi = m;
        }
    }
    let estimate = hi.sqrt();
    Some(Noise {
        estimate,
        upper: estimate * (1.645 / (n as f64).sqrt()).exp(),
    })
}

/// The variance of the median of `logs` (log values of one cell's rounds): pi/2 times the
/// squared robust scale (1.4826 MAD) over n. 0 with fewer than two values.
pub(crate) fn median_variance(logs: &[f64]) -> f64 {
    if logs.len() < 2 {
        return 0.0;
    }
    let s = 1.4826 * super::mad(logs);
    std::f64::consts::FRAC_PI_2 * s * s / logs.len() as f64
}

/// Two levels in a cell's rounds (see the module's doc).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Levels {
    /// Rounds before the jump (the jump is between round `split` and `split + 1`, 1-based).
    pub(crate) split: usize,
    /// The medians of the two segments, in the values' units, before and after.
    pub(crate) before: f64,
    pub(crate) after: f64,
}

impl Levels {
    /// The gap between the levels, as a fraction of the lower one.
    pub(crate) fn gap(&self) -> f64 {
        let (lo, hi) = if self.before < self.after {
            (self.before, self.after)
        } else {
            (self.after, self.before)
        };
        if lo > 0.0 {
            hi / lo - 1.0
        } else {
            f64::INFINITY
        }
    }
}

/// Whether `values` (positive, in round order) sit at two levels: the split with the widest
/// gap among those where both segments have at least two rounds, are completely apart, and
/// the clear gap (from the nearer edge of one to that of the other) is wider than either
/// segment's range and than [`LEVEL_GAP`] (all on a log scale). `None` otherwise.
pub(crate) fn two_levels(values: &[f64]) -> Option<Levels> {
    if values.len() < 4 || values.iter().any(|v| !(*v > 0.0 && v.is_finite())) {
        return None;
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let range = |s: &[f64]| {
        s.iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                (lo.min(*x), hi.max(*x))
            })
    };
    let mut best: Option<(f64, Levels)> = None;
    for split in 2..=logs.len() - 2 {
        let (a, b) = logs.split_at(split);
        let ((a0, a1), (b0, b1)) = (range(a), range(b));
        let clear = (b0 - a1).max(a0 - b1);
        let widest = (a1 - a0).max(b1 - b0);
        if clear <= widest || clear <= (1.0 + LEVEL_GAP).ln() {
            continue;
        }
        let (ma, mb) = (super::median(a), super::median(b));
        let gap = (mb - ma).abs();
        if best.as_ref().is_none_or(|(g, _)| gap > *g) {
            best = Some((
                gap,
                Levels {
                    split,
                    before: ma.exp(),
                    after: mb.exp(),
                },
            ));
        }
    }
    best.map(|(_, l)| l)
}

/// Per-round values of one cell over the geometric mean of its point's other models in the
/// same rounds (`others`: their per-round values), over the rounds where the cell and every
/// other model have a positive value; the cell's own values when it has no other model.
/// `compare` and [`unstable`] both judge a cell this way.
pub(crate) fn relative_rounds(cell: &[f64], others: &[&[f64]]) -> Vec<f64> {
    if others.is_empty() {
        return cell.to_vec();
    }
    cell.iter()
        .enumerate()
        .filter_map(|(k, a)| {
            let mut sum = 0.0;
            for o in others {
                let v = o.get(k).copied().filter(|v| *v > 0.0 && v.is_finite())?;
                sum += v.ln();
            }
            (*a > 0.0 && a.is_finite()).then(|| a / (sum / others.len() as f64).exp())
        })
        .collect()
}

/// The calibration probes' per-round values of a run: (syscall, wake-up).
pub(crate) fn probe_rounds(run: &RunResults) -> (Vec<f64>, Vec<f64>) {
    let sys = run.rounds.iter().map(|r| r.probe.syscall_ns).collect();
    let wake = run.rounds.iter().filter_map(|r| r.probe.wake_ns).collect();
    (sys, wake)
}

/// Whether a probe's rounds within one run (`which`) show two states of the machine: the
/// median of the highest quarter of rounds over 1.3x that of the lowest (so that one hiccup
/// is not a state), with at least 8 rounds.
pub(crate) fn state_change(v: &[f64], name: &str, which: &str) -> Option<String> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    if s.len() < 8 {
        return None;
    }
    let q = (s.len() / 4).max(1);
    let (low, high) = (super::median(&s[..q]), super::median(&s[s.len() - q..]));
    (low > 0.0 && high / low > 1.3).then(|| {
        format!(
            "the machine changed state within {which}: its {name} probe moved between {low:.0} \
             and {high:.0} ns over the rounds (extremes {:.0} to {:.0})",
            s[0],
            s[s.len() - 1]
        )
    })
}

/// The machine states a run's calibration probes show (see [`state_change`]).
pub(crate) fn run_states(run: &RunResults, which: &str) -> Vec<String> {
    let (sys, wake) = probe_rounds(run);
    [("syscall", sys), ("wake-up", wake)]
        .iter()
        .filter_map(|(n, v)| state_change(v, n, which))
        .collect()
}

/// A model that jumped between two levels within a run at one of a workload's points.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Unstable {
    pub(crate) workload: String,
    pub(crate) label: String,
    /// The point, by the params that vary among its workload's points: "msg_bytes=256".
    pub(crate) at: String,
    /// Which per-round figure ("p50", "ops/s", "CPU/op").
    pub(crate) figure: &'static str,
    /// The model was alone at its point: its levels are its own figures (ns, ops/s), not
    /// ratios to its point's other models.
    pub(crate) alone: bool,
    pub(crate) levels: Levels,
}

/// The per-round figures a level jump is looked for in: p50, ops/s, server CPU per op.
fn round_figures(c: &CaseResult) -> [(&'static str, &[f64]); 3] {
    let f = c.figures.as_ref();
    let get = |g: fn(&crate::results::schema::CaseFigures) -> &Vec<f64>| {
        f.map(|f| g(f).as_slice()).unwrap_or(&[])
    };
    [
        ("p50", get(|f| &f.runs_p50_ns)),
        ("ops/s", get(|f| &f.runs_ops_per_sec)),
        ("CPU/op", get(|f| &f.runs_cpu_ns_per_op)),
    ]
}

/// The point a cell belongs to: workload and params.
fn point_of(c: &CaseResult) -> (String, String) {
    (c.workload.clone(), c.params_text())
}

/// Every (workload, model) of a run whose rounds at a point sat at two levels, relative to
/// the point's other models in the same rounds, and that jumped furthest of its point at that
/// round: per workload and model the widest jump, in the run's order.
pub(crate) fn unstable(run: &RunResults) -> Vec<Unstable> {
    let measured: Vec<&CaseResult> = run
        .cases
        .iter()
        .filter(|c| c.status == Status::Measured && c.figures.is_some())
        .collect();
    // The cells of each point, once (linear in the cells; a point's models pair among
    // themselves only).
    let mut points: Vec<((String, String), Vec<usize>)> = Vec::new();
    let mut index: std::collections::HashMap<(String, String), usize> = Default::default();
    for (ci, c) in measured.iter().enumerate() {
        let key = point_of(c);
        let at = *index.entry(key.clone()).or_insert_with(|| {
            points.push((key, Vec::new()));
            points.len() - 1
        });
        points[at].1.push(ci);
    }
    // Per point and figure, every model's jump in its relative values; a jump is the model's
    // own only when no point-mate jumped further at the same round (±1) on the same figure:
    // one model's jump moves every other model's reference, and so their relative values, by
    // a fraction of it.
    let mut found: Vec<(usize, &(String, String), usize, Levels)> = Vec::new();
    for (point, cells) in &points {
        let mut here: Vec<(usize, usize, Levels)> = Vec::new();
        for &ci in cells {
            for (i, (_, mine)) in round_figures(measured[ci]).into_iter().enumerate() {
                let others: Vec<&[f64]> = cells
                    .iter()
                    .filter(|&&o| o != ci)
                    .map(|&o| round_figures(measured[o])[i].1)
                    .filter(|v| v.len() >= mine.len() && !mine.is_empty())
                    .collect();
                if let Some(levels) = two_levels(&relative_rounds(mine, &others)) {
                    here.push((ci, i, levels));
                }
            }
        }
        // Whether a cell's own values (not relative) jump at about the same round: what
        // tells the mover from the dragged where the relative jumps are as wide (two models
        // at a point mirror each other's relative values).
        let moved = |ci: usize, i: usize, l: &Levels| {
            two_levels(round_figures(measured[ci])[i].1)
                .is_some_and(|own| own.split.abs_diff(l.split) <= 1)
        };
        for (ci, i, levels) in &here {
            let dragged = here.iter().any(|(cj, j, other)| {
                let same = cj != ci && j == i && other.split.abs_diff(levels.split) <= 1;
                let (g, mine) = (other.gap(), levels.gap());
                same && (g > mine * 1.01
                    || (g >= mine / 1.01 && moved(*cj, *j, other) && !moved(*ci, *i, levels)))
            });
            if !dragged {
                found.push((*ci, point, *i, levels.clone()));
            }
        }
    }
    // A point is named by the params that vary among its workload's measured cells (the
    // durations every point shares say nothing).
    let varying = |c: &CaseResult| -> String {
        let p: Vec<String> = c
            .params
            .0
            .iter()
            .filter(|(k, v)| {
                measured
                    .iter()
                    .any(|o| o.workload == c.workload && o.params.0.get(*k) != Some(*v))
            })
            .map(|(k, v)| format!("{k}={v}"))
            .chain(
                c.equal_load
                    .map(|_| crate::results::EQUAL_LOAD_WORD.to_string()),
            )
            .collect();
        p.join(" ")
    };
    let mut out: Vec<Unstable> = Vec::new();
    for (ci, _, i, levels) in &found {
        let c = measured[*ci];
        // Its figure had no point-mate to be relative to (`relative_rounds` of none).
        let alone = !measured.iter().enumerate().any(|(o, m)| {
            o != *ci
                && point_of(m) == point_of(c)
                && round_figures(m)[*i].1.len() >= round_figures(c)[*i].1.len()
        });
        let (label, figure) = (c.label(), round_figures(c)[*i].0);
        let at = varying(c);
        match out
            .iter_mut()
            .find(|u| u.workload == c.workload && u.label == label)
        {
            Some(u) if u.levels.gap() >= levels.gap() => {}
            Some(u) => {
                u.at = at;
                u.figure = figure;
                u.alone = alone;
                u.levels = levels.clone();
            }
            None => out.push(Unstable {
                workload: c.workload.clone(),
                label,
                at,
                figure,
                alone,
                levels: levels.clone(),
            }),
        }
    }
    out
}

impl Unstable {
    /// "uring-sqpoll in micro.pipe (msg_bytes=256: ops/s from 0.73 to 0.57 of its point's
    /// other models after round 3, a 28% jump)"; a model alone at its point in its own
    /// figures ("ops/s from 139376 to 114162, alone at its point, after round 2, a 22%
    /// jump"); a jump past 2x as a factor ("a 127x jump").
    pub(crate) fn text(&self) -> String {
        let at = if self.at.is_empty() {
            String::new()
        } else {
            format!("{}: ", self.at)
        };
        let gap = self.levels.gap();
        let jump = if gap >= 1.0 {
            format!("{:.1}x", gap + 1.0)
        } else {
            format!("{:.0}%", gap * 100.0)
        };
        let (before, after) = (self.levels.before, self.levels.after);
        if self.alone {
            let unit = if self.figure == "ops/s" { "" } else { " ns" };
            return format!(
                "{} in {} ({at}{} from {before:.0}{unit} to {after:.0}{unit}, alone at its \
                 point, after round {}, a {jump} jump)",
                self.label, self.workload, self.figure, self.levels.split
            );
        }
        format!(
            "{} in {} ({at}{} from {before:.2} to {after:.2} of its point's other models after \
             round {}, a {jump} jump)",
            self.label, self.workload, self.figure, self.levels.split
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-normal stream (sum of uniforms), so the tests never depend on luck.
    fn noise(seed: &mut u64) -> f64 {
        let mut s = 0.0;
        for _ in 0..12 {
            *seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            s += (*seed >> 11) as f64 / (1u64 << 53) as f64;
        }
        s - 6.0
    }

    #[test]
    fn trimmed_chi_square_means() {
        assert!((chi2_1_trimmed_mean(0.75) - 0.368_524).abs() < 1e-4);
        assert_eq!(chi2_1_trimmed_mean(1.0), 1.0);
        assert!((chi2_1_cdf(3.841_459) - 0.95).abs() < 1e-5);
    }

    #[test]
    fn run_noise_finds_the_spread_the_rounds_do_not_show() {
        // 200 cells whose rounds say 1% but whose runs differ by 4% (per run): tau ~ 4%.
        let mut seed = 7;
        let cells: Vec<(f64, f64)> = (0..200)
            .map(|_| {
                let v: f64 = 0.01f64.powi(2) * 2.0;
                let d = (v + 2.0 * 0.04f64.powi(2)).sqrt() * noise(&mut seed);
                (d, v)
            })
            .collect();
        // At its upper bound: 4% x e^(1.645 / sqrt(200)) = 4.5%, give or take the estimate.
        let tau = run_noise(&cells).unwrap();
        assert!((0.035..0.046).contains(&tau.estimate), "{tau:?}");
        assert!(tau.upper > tau.estimate * 1.1, "{tau:?}");
        // Rounds that already explain the spread: no run noise.
        let quiet: Vec<(f64, f64)> = (0..200)
            .map(|_| (0.02 * noise(&mut seed), 0.02f64.powi(2)))
            .collect();
        assert!(run_noise(&quiet).unwrap().upper < 0.01);
        // Real changes (+65%) in a fifth of the cells raise it by about half, not tenfold.
        let mut mixed = cells.clone();
        for c in mixed.iter_mut().take(40) {
            c.0 += 0.5;
        }
        let t2 = run_noise(&mixed).unwrap();
        assert!(t2.estimate < 0.065, "{t2:?}");
        assert_eq!(run_noise(&cells[..NOISE_MIN_CELLS - 1]), None);
    }

    #[test]
    fn two_levels_finds_a_jump_and_not_noise_or_one_hiccup() {
        // SQPOLL at 256 B in one A/A run: three rounds at 1.35, seven at 1.7.
        let jump = [1.34, 1.36, 1.35, 1.70, 1.73, 1.67, 1.74, 1.77, 1.70, 1.76];
        let l = two_levels(&jump).expect("a jump");
        assert_eq!(l.split, 3);
        assert!((l.gap() - 0.28).abs() < 0.02, "{}", l.gap());
        // The last two rounds at a new level.
        let late = [1.49, 1.47, 1.49, 1.5, 1.55, 1.51, 1.49, 1.51, 2.18, 2.11];
        assert_eq!(two_levels(&late).unwrap().split, 8);
        // One hiccup is not a level.
        assert_eq!(
            two_levels(&[1.0, 1.01, 1.0, 1.6, 1.0, 0.99, 1.01, 1.0]),
            None
        );
        // Wide rounds that happen to split: the gap is narrower than the segments' spread.
        assert_eq!(two_levels(&[1.46, 1.5, 1.15, 1.41, 1.13, 1.19]), None);
        // A small step (5%) is not reported.
        assert_eq!(two_levels(&[1.0, 1.0, 1.0, 1.05, 1.05, 1.05]), None);
        assert_eq!(two_levels(&[1.0, 2.0, 2.0]), None);
    }

    #[test]
    fn a_jump_is_laid_on_the_model_that_jumped_not_on_its_point_mates() {
        // The frozen fixture (a real run): blocking/poll at fds=100 ran its first two rounds
        // at 5.2 us and the rest at 3.1 us; select and epoll-lt were flat, but relative to a
        // reference holding poll their values jump by 30%.
        let run: RunResults =
            crate::results::store::parse(include_str!("../../tests/fixtures/results.json"))
                .unwrap();
        let u = unstable(&run);
        assert_eq!(u.len(), 1, "{u:?}");
        assert_eq!(
            (
                u[0].workload.as_str(),
                u[0].label.as_str(),
                u[0].at.as_str()
            ),
            ("micro.fd_scaling", "blocking/poll", "fds=100")
        );
        assert_eq!(u[0].levels.split, 2);
        assert!(!u[0].alone);
        // A model alone at its point: its own figures, in their unit, not "of its point's
        // other models".
        let mut run = run;
        run.cases.retain(|c| {
            !(c.workload == "micro.fd_scaling"
                && c.label() != "blocking/poll"
                && c.params.0.get("fds").is_some_and(|v| v == 100))
        });
        let u = unstable(&run);
        let poll = u.iter().find(|u| u.label == "blocking/poll").unwrap();
        assert!(poll.alone, "{poll:?}");
        let t = poll.text();
        assert!(
            t.contains(" ns, alone at its point, after round 2,") && !t.contains("other models"),
            "{t}"
        );
    }

    /// Issue 45 item 1: a jump past 2x is said as a factor, not "a 12674% jump".
    #[test]
    fn a_wide_jump_is_a_factor() {
        let u = Unstable {
            workload: "echo.conns".into(),
            label: "uring".into(),
            at: "conns=1".into(),
            figure: "p50",
            alone: false,
            levels: Levels {
                split: 3,
                before: 16.62,
                after: 0.13,
            },
        };
        assert!(u.text().ends_with("a 127.8x jump)"), "{}", u.text());
        let u = Unstable {
            levels: Levels {
                split: 3,
                before: 1.0,
                after: 1.28,
            },
            ..u
        };
        assert!(u.text().ends_with("a 28% jump)"), "{}", u.text());
    }

    #[test]
    fn relative_rounds_cancel_what_the_round_shares() {
        // The machine slows every model by 40% from round 3 on: relative values stay flat.
        let a = [100.0, 100.0, 140.0, 140.0];
        let b = [200.0, 200.0, 280.0, 280.0];
        let r = relative_rounds(&a, &[&b]);
        assert!(r.iter().all(|x| (x - 0.5).abs() < 1e-12), "{r:?}");
        assert_eq!(two_levels(&r), None);
        // The same rounds alone are a jump: only the relative values tell it is the machine's.
        assert_eq!(two_levels(&a).map(|l| l.split), Some(2));
        assert_eq!(relative_rounds(&a, &[]), a.to_vec());
    }
}
