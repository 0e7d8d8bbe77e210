//! What a comparison could see: each decisive test's minimum detectable effect, and what a
//! cell that cannot see the threshold lacks.
//!
//! **The minimum detectable effect** (MDE) of a figure's decisive test ([`Test`]) is the
//! smallest change, in the figure's worse direction, that the test would call significant
//! at the level a change alone among the family's tests needs ([`lone_alpha`]: the first
//! step of Benjamini-Hochberg, `ALPHA / tests`), with the rounds it had and the noise
//! measured. The test's p is the larger of two, and so is its MDE:
//!
//! - Mann-Whitney over the rounds can never go below 2 / C(nb + nn, nb) ([`min_p`]): where
//!   that floor is not below the level needed, no change is detectable ([`Power::TooFew`]).
//!   Past its floor it needs less than the normal test below (its variance of a shift is
//!   sigma^2 / (0.955 n) a side, the median's that the normal test uses is pi/2 sigma^2 / n),
//!   so the normal test decides the MDE.
//! - The normal test on the log change, whose variance adds the run-to-run noise of each run
//!   to the rounds' variance of the change, `v = within_var + 2 tau^2`, reaches the level at
//!   `|log change| = z sqrt(v)`, `z` the two-sided normal quantile of the level ([`mde_log`]).
//!
//! So an observed change beyond the MDE is called, one within it is not: the MDE is the
//! half-width of the test's interval of the change at the level needed. A true change of
//! exactly the MDE is seen about half the time; but a regression must also be measured beyond
//! the threshold, so the gate's own rule sees a true change of exactly the threshold about
//! half the time however quiet the machine. An MDE at most the threshold says: the test never
//! stands between a change measured beyond the threshold and its call. Without an estimate of
//! the run-to-run noise (too few tests of the figure) the MDE is unknown, since the rounds of
//! one run cannot show that noise ([`Power::NoiseUnknown`]).
//!
//! **What more rounds buy** ([`rounds_needed`]): only the rounds' share of the variance
//! shrinks with them (as 1/n, so that share of the MDE as sqrt(n_now / n)); the run-to-run
//! share does not, and where it alone reaches the threshold no number of rounds would do:
//! a quieter machine or both builds in one run would.

use super::*;

/// What a figure's decisive test could see.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Power {
    /// The smallest change it would call, percent, in the figure's worse direction.
    Sees(f64),
    /// Its rounds (base, new) are too few for the rank test ever to reach the level a lone
    /// change needs; `need` a side could.
    TooFew { sizes: (usize, usize), need: usize },
    /// A side has no per-repetition values (base, new): nothing to test with.
    NoValues(TooFew),
    /// The run-to-run noise of its figure could not be estimated (too few tests): the rounds
    /// alone would understate what it can see.
    NoiseUnknown,
}

/// A figure's [`Power`], with what would change it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FigurePower {
    pub(crate) power: Power,
    /// The level a change alone among the family's `tests` needs ([`lone_alpha`]).
    pub(crate) alpha: f64,
    pub(crate) tests: usize,
    /// Repetitions (base, new) behind the test.
    pub(crate) sizes: (usize, usize),
    /// The run-to-run noise it was judged with, percent a run (`None`: not estimated).
    pub(crate) noise_pct: Option<f64>,
    /// The MDE with rounds without end (the run-to-run noise's share alone), percent.
    pub(crate) floor_pct: Option<f64>,
    /// Repetitions a side with which the MDE would reach the threshold at the noise measured
    /// ([`rounds_needed`]); `None` where no number would or the noise is unknown.
    pub(crate) rounds_needed: Option<usize>,
    /// What more repetitions would do for it at the threshold it was judged at.
    pub(crate) more: More,
}

/// What more repetitions would do for a test that cannot see the threshold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum More {
    /// Nothing to say beyond its [`Power`] (the repetitions it needs are those it lacks, or
    /// the noise is unknown).
    Nothing,
    /// This many a side would see the threshold at the noise measured.
    Rounds(usize),
    /// No number would: the noise between runs alone hides changes under this, percent
    /// (beyond the threshold).
    NoNumber(f64),
}

impl FigurePower {
    /// Whether the test could see a change of `threshold_pct`.
    pub(crate) fn sees(&self, threshold_pct: f64) -> bool {
        matches!(self.power, Power::Sees(m) if m <= threshold_pct)
    }
}

/// Why a compared cell was not tested with power to see the threshold.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Blind {
    /// One of its figures' tests cannot see it.
    Figure(Figure, FigurePower),
    /// A model alone at its point while the calibration probes moved `drift_pct` between the
    /// runs: its changes within the threshold plus that (`within_pct`) are the machine's.
    MachineMoved { drift_pct: f64, within_pct: f64 },
    /// Its ops cross to a SQPOLL poller and the machine's cross-CPU wake-up got this much
    /// slower (percent): a change for the worse is the machine's.
    Poller(f64),
    /// It jumped between two levels this far apart (percent) within BASE or NEW: changes
    /// within the jump are not called.
    Jump(&'static str, f64),
}

/// The level a change alone among `tests` needs to be confirmed by Benjamini-Hochberg.
pub(crate) fn lone_alpha(tests: usize) -> f64 {
    ALPHA / tests.max(1) as f64
}

/// The two-sided standard normal quantile of `alpha`: |z| beyond it has p below `alpha`.
pub(crate) fn z_two_sided(alpha: f64) -> f64 {
    std::f64::consts::SQRT_2 * statrs::function::erf::erfc_inv(alpha.clamp(1e-300, 1.0))
}

/// The MDE in log units of a test with `sizes` rounds (base, new), the rounds' variance of
/// the log change `within_var` and run-to-run noise `tau` (log sd a run), at level `alpha`:
/// `z sqrt(within_var + 2 tau^2)`; `None` where the rank test's floor is not below `alpha`.
pub(crate) fn mde_log(within_var: f64, tau: f64, sizes: (usize, usize), alpha: f64) -> Option<f64> {
    testable(sizes.0, sizes.1, alpha)
        .then(|| z_two_sided(alpha) * (within_var.max(0.0) + 2.0 * tau * tau).sqrt())
}

/// The fewest rounds a side (both runs measured anew with them) with which [`mde_log`] reaches
/// `target_log`: the rounds' variance, measured with `n_now` a side (the larger side: the
/// estimate errs towards more), shrinks as `n_now / n`; the run-to-run share does not. `None`
/// where that share alone reaches the target, or past 1,000 rounds.
pub(crate) fn rounds_needed(
    n_now: usize,
    within_var: f64,
    tau: f64,
    alpha: f64,
    target_log: f64,
) -> Option<usize> {
    let z = z_two_sided(alpha);
    let budget = (target_log / z).powi(2) - 2.0 * tau * tau;
    if budget.is_nan() || budget <= 0.0 {
        return None;
    }
    let by_var = (n_now as f64 * within_var.max(0.0) / budget).ceil();
    let floor = reps_needed(alpha);
    let n = (by_var as usize).max(floor);
    (n <= 1000 && testable(n, n, alpha)).then_some(n)
}

/// A change of `log` (NEW over BASE) as a percent in `fig`'s worse direction: up for a
/// latency or CPU, down for ops/s.
pub(crate) fn worse_pct(fig: Figure, log: f64) -> f64 {
    if fig == Figure::OpsPerSec {
        (1.0 - (-log).exp()) * 100.0
    } else {
        (log.exp() - 1.0) * 100.0
    }
}

/// The log change of `pct` percent in `fig`'s worse direction (infinite where ops/s would
/// have to fall by 100% or more).
pub(crate) fn worse_log(fig: Figure, pct: f64) -> f64 {
    if fig == Figure::OpsPerSec {
        if pct >= 100.0 {
            f64::INFINITY
        } else {
            -(1.0 - pct / 100.0).ln()
        }
    } else {
        (pct / 100.0).ln_1p()
    }
}

/// What `f`'s decisive test could see among `tests` tests, and what would let it see
/// `threshold_pct`.
pub(crate) fn figure_power(f: &FigureChange, tests: usize, threshold_pct: f64) -> FigurePower {
    let t = &f.test;
    let alpha = lone_alpha(tests);
    let sizes = t.sizes;
    let tau = t.run_noise;
    let power = if f.change.method == Method::Spread || t.p_rounds.is_none() {
        let s = f.change.sizes;
        if s.0 == 0 || s.1 == 0 {
            Power::NoValues(TooFew::of(s))
        } else {
            Power::TooFew {
                sizes: s,
                need: reps_needed(alpha),
            }
        }
    } else if !testable(sizes.0, sizes.1, alpha) {
        Power::TooFew {
            sizes,
            need: reps_needed(alpha),
        }
    } else {
        match tau.and_then(|tau| mde_log(t.within_var, tau, sizes, alpha)) {
            Some(m) => Power::Sees(worse_pct(f.figure, m)),
            None => Power::NoiseUnknown,
        }
    };
    let n_now = sizes.0.max(sizes.1);
    let floor_pct = tau.map(|tau| {
        worse_pct(
            f.figure,
            z_two_sided(alpha) * std::f64::consts::SQRT_2 * tau,
        )
    });
    let rounds_needed = tau.filter(|_| n_now >= 2).and_then(|tau| {
        let target = worse_log(f.figure, threshold_pct);
        rounds_needed(n_now, t.within_var, tau, alpha, target)
    });
    let need = match power {
        Power::TooFew { need, .. } => Some(need),
        _ => None,
    };
    let more = match (rounds_needed, floor_pct) {
        (Some(n), _) if Some(n) == need => More::Nothing,
        (Some(n), _) => More::Rounds(n),
        (None, Some(f)) if f > threshold_pct => More::NoNumber(f),
        _ => More::Nothing,
    };
    FigurePower {
        power,
        alpha,
        tests,
        sizes,
        noise_pct: tau.map(|tau| (tau.exp() - 1.0) * 100.0),
        floor_pct,
        rounds_needed,
        more,
    }
}

/// Every figure's power, and why the cell could not see `threshold_pct` (empty: it could):
/// a figure's test that cannot, a model alone at its point while the probes moved
/// (`drift_pct`), a poller cell while the wake-up probe got slower (`wake_pct`), or a jump
/// of the model's within a run wider than the threshold.
pub(super) fn assess(
    c: &mut CellChange,
    threshold_pct: f64,
    tests: usize,
    (drift_pct, wake_pct): (f64, Option<f64>),
    jump: Option<&(&'static str, crate::stats::stability::Unstable)>,
) {
    c.blind.clear();
    for f in &mut c.figures {
        let p = figure_power(f, tests, threshold_pct);
        if !p.sees(threshold_pct) {
            c.blind.push(Blind::Figure(f.figure, p.clone()));
        }
        f.power = Some(p);
    }
    if drift_pct > 0.0 && c.figures.iter().any(|f| !f.test.relative) {
        c.blind.push(Blind::MachineMoved {
            drift_pct,
            within_pct: threshold_pct + drift_pct,
        });
    }
    if let Some(w) = wake_pct.filter(|w| c.poller && *w > 0.0) {
        c.blind.push(Blind::Poller(w));
    }
    if let Some((which, u)) = jump.filter(|j| j.1.levels.gap() * 100.0 > threshold_pct) {
        c.blind.push(Blind::Jump(which, u.levels.gap() * 100.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn z_is_the_normal_quantile() {
        assert!((z_two_sided(0.05) - 1.959_964).abs() < 1e-5);
        assert!((z_two_sided(0.01) - 2.575_829).abs() < 1e-5);
        // Round trip through the test's own tail.
        for a in [0.2, 0.05, 1e-3, 1e-6] {
            let z = z_two_sided(a);
            assert!((2.0 * normal_sf(z) - a).abs() < a * 1e-6, "{a}");
        }
    }

    #[test]
    fn the_mde_is_where_the_normal_test_reaches_its_level() {
        // Rounds' variance 1e-4 (1% sd of the change), run-to-run noise 2% a run, 10 rounds
        // a side, one test: 1.96 sqrt(1e-4 + 2 * 4e-4) = 0.0588.
        let m = mde_log(1e-4, 0.02, (10, 10), 0.05).unwrap();
        assert!((m - 1.96 * 9e-4f64.sqrt()).abs() < 1e-4, "{m}");
        // A change of exactly the MDE has p = alpha in the normal test.
        let v: f64 = 1e-4 + 2.0 * 0.02 * 0.02;
        assert!((2.0 * normal_sf(m / v.sqrt()) - 0.05).abs() < 1e-9);
        // A lone change among 100 tests needs p < 0.0005: a wider MDE.
        let m100 = mde_log(1e-4, 0.02, (10, 10), lone_alpha(100)).unwrap();
        assert!(m100 > 1.7 * m, "{m100} {m}");
        // No noise at all: nothing to see past.
        assert_eq!(mde_log(0.0, 0.0, (10, 10), 0.05), Some(0.0));
    }

    #[test]
    fn the_rank_tests_floor_makes_too_few_rounds_blind() {
        // 3 against 3 can never go below p = 0.1.
        assert_eq!(mde_log(1e-6, 0.0, (3, 3), 0.05), None);
        // 6 against 6 reach 2/924 = 0.0022: enough for one test, not for a lone change
        // among 40 (0.05 / 40 = 0.00125).
        assert!(mde_log(1e-6, 0.0, (6, 6), lone_alpha(1)).is_some());
        assert_eq!(mde_log(1e-6, 0.0, (6, 6), lone_alpha(40)), None);
        assert!(mde_log(1e-6, 0.0, (7, 7), lone_alpha(40)).is_some());
    }

    #[test]
    fn rounds_needed_shrink_only_the_rounds_share() {
        let alpha = 0.05;
        let target = (1.05f64).ln();
        // Rounds alone (no run-to-run noise): the MDE shrinks as sqrt(n_now / n).
        let within = 4e-3; // 6.3% sd of the change with 6 rounds a side
        let m6 = mde_log(within, 0.0, (6, 6), alpha).unwrap();
        let n = rounds_needed(6, within, 0.0, alpha, target).unwrap();
        let m_n = mde_log(within * 6.0 / n as f64, 0.0, (n, n), alpha).unwrap();
        assert!(m_n <= target + 1e-12, "{m_n} at {n}");
        let fewer = n - 1;
        let m_less = mde_log(within * 6.0 / fewer as f64, 0.0, (fewer, fewer), alpha).unwrap();
        assert!(m_less > target, "{n} is the fewest");
        assert!((m_n / m6 - (6.0 / n as f64).sqrt()).abs() < 1e-12);
        // Run-to-run noise whose share alone is beyond the threshold: no number of rounds.
        let tau = 0.03; // 1.96 * sqrt(2) * 3% = 8.3% > 5%
        assert_eq!(rounds_needed(6, within, tau, alpha, target), None);
        // Below it, more rounds than without it.
        let with_tau = rounds_needed(6, within, 0.01, alpha, target).unwrap();
        assert!(with_tau > n, "{with_tau} {n}");
        // Never fewer than the rank test's floor at the level (7 a side for a lone change
        // among 40 tests: 2/3432 < 0.00125 < 2/924).
        assert_eq!(rounds_needed(6, 0.0, 0.0, lone_alpha(40), target), Some(7));
    }

    #[test]
    fn worse_direction_percent_round_trips() {
        for fig in [Figure::P50, Figure::OpsPerSec, Figure::CpuPerOp] {
            for pct in [1.0, 5.0, 14.0, 50.0] {
                assert!((worse_pct(fig, worse_log(fig, pct)) - pct).abs() < 1e-9);
            }
        }
        // ops/s 5% lower is a larger log change than a latency 5% higher.
        assert!(worse_log(Figure::OpsPerSec, 5.0) > worse_log(Figure::P50, 5.0));
        assert_eq!(worse_log(Figure::OpsPerSec, 100.0), f64::INFINITY);
    }
}
