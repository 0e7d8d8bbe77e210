//! Sequential claims: a point's claims looked at after every round, with error rates that stay
//! valid however often they are looked at.
//!
//! **The design.** The runner measures a point in rounds and, from round `first` on, looks at
//! its claims after every round; it stops once every comparison that matters is decided, or
//! at round `last`, or when its time is spent ([`Looks`]). Looking after every round and
//! stopping on a claim is a group-sequential design (Jennison & Turnbull, *Group Sequential
//! Methods with Applications to Clinical Trials*, 2000, ch. 2 and 9): judged at a fixed alpha
//! at every look, the chance of a false claim grows with the looks (Armitage, McPherson & Rowe
//! 1969). The test at each look is the Wilcoxon signed-rank test of the per-round log ratios
//! (`stats::claims`); its repeated use is R. G. Miller's sequential signed-rank test (JASA 65,
//! 1970, 1554-1561).
//!
//! **Why it can be calibrated exactly.** Under "no difference" (the per-round log ratios
//! independent, continuous and symmetric about 0) the signs of the rounds are independent fair
//! coins, independent of the order of their magnitudes, and that order is a uniformly random
//! permutation. So the whole sequence of signed-rank statistics W+(n), n = 1, 2, ..., has one
//! distribution whatever the noise's shape or size: the distribution of the smallest nominal
//! p over the looks `first..=last` can be simulated once, from any symmetric continuous
//! distribution, and holds for every point (the exact null tables of W+ give each look's p).
//!
//! **Repeated p-values.** A Pocock-type design (one nominal level c at every look, Pocock
//! 1977) claims at the look where the nominal p falls below c, with c chosen so that under no
//! difference the smallest nominal p over all the design's looks is below c with probability
//! alpha. Its repeated p-value at look n is F(p_n), F the distribution of that smallest p
//! (Jennison & Turnbull §9.1): P(F(p_n) <= a at any look) = P(min p <= F^-1(a)) <= a, so it
//! is valid whatever rule stopped the rounds, at any look, and can enter Benjamini-Hochberg
//! like any p-value. Its repeated confidence interval at look n is the Hodges-Lehmann
//! interval at the nominal level c (the shifts the look does not reject): it covers the true
//! ratio at every look at once with probability 1 - alpha.
//!
//! **Equivalence.** Two one-sided tests (Schuirmann 1987, TOST): "B is at least `MARGIN`
//! worse" and "B is at least `MARGIN` better" are each rejected by the one-sided signed-rank
//! test of the log ratios shifted by the margin, sequentially like the above (the shifted
//! ratios are symmetric about 0 at the boundary of each null, so the same simulated
//! distribution, of the smallest one-sided p, calibrates them). Both rejected: equivalent.
//!
//! A pair has at most one true null among "no difference" and "not equivalent" (a true ratio
//! of exactly 1 makes the first true and the second false; one at or beyond the margin the
//! reverse), so the smaller of the two repeated p-values is the pair's, and the claim it
//! supports is false only when that null is the true one: a point's pairs are corrected as one
//! Benjamini-Hochberg family of these (`stats::claims::correct`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

pub(crate) use crate::results::schema::Looks;

/// Simulated null paths per design: the Monte Carlo error of a repeated p of 0.05 is about
/// 0.0007, of 0.005 about 0.0002.
const PATHS: usize = 100_000;

/// The exact null distribution of W+ at `n` rounds (no ties): `lower[w]` = P(W+ <= w),
/// `upper[w]` = P(W+ >= w).
struct Table {
    lower: Vec<f64>,
    upper: Vec<f64>,
}

impl Table {
    fn of(n: usize) -> Table {
        let max = n * (n + 1) / 2;
        let mut c = vec![0.0f64; max + 1];
        c[0] = 1.0;
        for r in 1..=n {
            for w in (r..=max).rev() {
                c[w] += c[w - r];
            }
        }
        let all = 2f64.powi(n as i32);
        let mut lower = Vec::with_capacity(max + 1);
        let mut cum = 0.0;
        for x in &c {
            cum += x;
            lower.push((cum / all).min(1.0));
        }
        let mut upper = vec![0.0; max + 1];
        let mut cum = 0.0;
        for w in (0..=max).rev() {
            cum += c[w];
            upper[w] = (cum / all).min(1.0);
        }
        Table { lower, upper }
    }

    /// Two-sided p of W+ = w.
    fn two_sided(&self, w: usize) -> f64 {
        (2.0 * self.lower[w].min(self.upper[w])).min(1.0)
    }
}

/// A design's null distribution of the smallest nominal p over its looks, two-sided and
/// one-sided, each sorted.
pub(crate) struct Design {
    min_two: Vec<f64>,
    min_one: Vec<f64>,
}

/// Every design simulated so far in this process (each once: a few tenths of a second).
fn cache() -> &'static Mutex<HashMap<Looks, Arc<Design>>> {
    static C: OnceLock<Mutex<HashMap<Looks, Arc<Design>>>> = OnceLock::new();
    C.get_or_init(Default::default)
}

/// The design of `looks`, simulated on first use (seeded: every run and report gets the same
/// values).
pub(crate) fn design(looks: Looks) -> Arc<Design> {
    let looks = Looks::new(looks.first, looks.last);
    if let Some(d) = cache()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&looks)
    {
        return d.clone();
    }
    let d = Arc::new(Design::simulate(looks, PATHS, 0x5eed_5e90));
    cache()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(looks, d.clone());
    d
}

impl Design {
    /// Simulates `paths` null sequences of `looks.last` rounds (uniform on (-1, 1): any
    /// continuous symmetric distribution gives the same W+ sequence) and keeps each one's
    /// smallest two-sided and one-sided (upper) nominal p over the looks.
    fn simulate(looks: Looks, paths: usize, seed: u64) -> Design {
        let last = looks.last as usize;
        let tables: Vec<Table> = (0..=last).map(Table::of).collect();
        let mut rng = fastrand::Rng::with_seed(seed);
        let (mut min_two, mut min_one) = (Vec::with_capacity(paths), Vec::with_capacity(paths));
        // Magnitudes in ascending order with their signs.
        let mut sorted: Vec<(f64, bool)> = Vec::with_capacity(last);
        for _ in 0..paths {
            sorted.clear();
            let mut w_plus = 0usize;
            let (mut two, mut one) = (1.0f64, 1.0f64);
            for (n, t) in tables.iter().enumerate().skip(1) {
                let x = rng.f64() * 2.0 - 1.0;
                let (mag, pos) = (x.abs(), x > 0.0);
                let r = sorted.partition_point(|(m, _)| *m < mag);
                // Every positive above it moves up one rank; it takes rank r + 1.
                w_plus += sorted[r..].iter().filter(|(_, p)| *p).count();
                if pos {
                    w_plus += r + 1;
                }
                sorted.insert(r, (mag, pos));
                if n >= looks.first as usize {
                    two = two.min(t.two_sided(w_plus));
                    one = one.min(t.upper[w_plus]);
                }
            }
            min_two.push(two);
            min_one.push(one);
        }
        min_two.sort_by(f64::total_cmp);
        min_one.sort_by(f64::total_cmp);
        Design { min_two, min_one }
    }

    /// P(min <= x) over `sorted`, the Monte Carlo estimate made conservative ((k + 1) /
    /// (N + 1)), and never below x itself (one look alone reaches x with probability x).
    fn cdf(sorted: &[f64], x: f64) -> f64 {
        let k = sorted.partition_point(|v| *v <= x * (1.0 + 1e-12));
        (((k + 1) as f64) / ((sorted.len() + 1) as f64))
            .max(x)
            .min(1.0)
    }

    /// The largest nominal level c whose repeated p stays below `alpha` (the per-look level
    /// of the design at `alpha`).
    fn inverse(sorted: &[f64], alpha: f64) -> f64 {
        // The k-th smallest with (k + 1) / (N + 1) <= alpha.
        let k = ((alpha * (sorted.len() + 1) as f64).floor() as usize).saturating_sub(1);
        if k == 0 {
            return sorted.first().copied().unwrap_or(alpha).min(alpha) * 0.999;
        }
        // Just below the next simulated value: the levels in between claim nothing more.
        sorted[k.min(sorted.len() - 1)] * (1.0 - 1e-9)
    }

    /// The repeated p-value of a look's two-sided nominal p.
    pub(crate) fn repeated_p(&self, nominal: f64) -> f64 {
        Design::cdf(&self.min_two, nominal)
    }

    /// The repeated p-value of a look's one-sided nominal p.
    pub(crate) fn repeated_p1(&self, nominal: f64) -> f64 {
        Design::cdf(&self.min_one, nominal)
    }

    /// The design's per-look two-sided level at `alpha`: a look claims where its nominal p is
    /// below it (about 0.013 for looks 6 to 24 at 0.05).
    pub(crate) fn nominal(&self, alpha: f64) -> f64 {
        Design::inverse(&self.min_two, alpha)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::claims::signed_rank_p;

    #[test]
    fn the_exact_tables_match_the_signed_rank_test() {
        // n = 8: W+ = 3 has P(W+ <= 3) = 5 / 256.
        let t = Table::of(8);
        assert!((t.lower[3] - 5.0 / 256.0).abs() < 1e-12);
        assert!((t.upper[33] - 5.0 / 256.0).abs() < 1e-12);
        let d = [1.0, 2.0, -3.0, -4.0, -5.0, -6.0, -7.0, -8.0];
        assert!((t.two_sided(3) - signed_rank_p(&d).unwrap()).abs() < 1e-12);
    }

    #[test]
    fn a_single_look_is_the_fixed_test() {
        // One look at 10 rounds: the repeated p is the nominal one (up to Monte Carlo).
        let d = Design::simulate(Looks::new(10, 10), 40_000, 1);
        for p in [0.01, 0.05, 0.2] {
            let r = d.repeated_p(p);
            assert!((r - p).abs() < 0.006, "{p}: {r}");
        }
    }

    #[test]
    fn more_looks_cost_a_lower_level_per_look() {
        let few = Design::simulate(Looks::new(6, 12), 40_000, 2);
        let many = Design::simulate(Looks::new(6, 24), 40_000, 2);
        let (a, b) = (few.nominal(0.05), many.nominal(0.05));
        assert!(a > b && b > 0.005 && a < 0.05, "{a} {b}");
        // The level and the repeated p agree.
        assert!(many.repeated_p(b) <= 0.05 + 1e-9, "{}", many.repeated_p(b));
        assert!(many.repeated_p(b * 1.2) > 0.05);
    }

    use crate::stats::claims::{correct, from_log_diffs, Claim, Level, Outcome, ALPHA};

    /// The looks of a network point at quick: six rounds, then up to 24.
    const QUICK: Looks = Looks { first: 6, last: 24 };

    /// Roughly normal noise (sum of 12 uniforms), mean 0, sd 1.
    fn normal(rng: &mut fastrand::Rng) -> f64 {
        (0..12).map(|_| rng.f64()).sum::<f64>() - 6.0
    }

    /// One point measured as the runner does: a round at a time, the pairs' claims (each
    /// model against the first, per-round log ratios `effects[k] + sd * noise`) corrected as
    /// one family and looked at after every round from the design's first; it stops when
    /// every pair is decided or at `max_rounds`. The claims at the stop, and its rounds.
    fn run_point(
        effects: &[f64],
        sd: f64,
        looks: Looks,
        max_rounds: usize,
        rng: &mut fastrand::Rng,
    ) -> (Vec<Claim>, usize) {
        let level = Level::sequential(ALPHA, looks);
        let mut d: Vec<Vec<f64>> = vec![Vec::new(); effects.len()];
        for n in 1..=max_rounds {
            for (k, e) in effects.iter().enumerate() {
                d[k].push(e + sd * normal(rng));
            }
            if n < looks.first as usize && n < max_rounds {
                continue;
            }
            let mut cs: Vec<Claim> = d.iter().filter_map(|x| from_log_diffs(x, level)).collect();
            let mut fam: Vec<&mut Claim> = cs.iter_mut().collect();
            correct(&mut fam, ALPHA);
            if n == max_rounds || cs.iter().all(|c| c.outcome != Outcome::Undecided) {
                return (cs, n);
            }
        }
        unreachable!()
    }

    #[test]
    fn a_look_after_every_round_keeps_false_claims_under_alpha() {
        // 1,000 A/A points, one pair each, looked at after every round from 6 to 24 and
        // stopped at the first claim: a claim of a difference is false. The noise's size
        // does not matter to the test (its null distribution is the same for any).
        let mut rng = fastrand::Rng::with_seed(41);
        let mut false_claims = 0;
        for _ in 0..1000 {
            let (cs, _) = run_point(&[0.0], 0.05, QUICK, 24, &mut rng);
            false_claims += cs.iter().filter(|c| c.decided()).count();
        }
        let rate = false_claims as f64 / 1000.0;
        // Under 0.05 by more than the simulation's error (sd 0.007 at 1,000).
        assert!(rate < 0.04, "{rate}");
        // Looking after every round at a fixed 0.05 would claim far more often.
        let mut rng = fastrand::Rng::with_seed(41);
        let mut naive = 0;
        for _ in 0..1000 {
            let d: Vec<f64> = (0..24).map(|_| normal(&mut rng)).collect();
            naive += (6..=24).any(|n| crate::stats::claims::signed_rank_p(&d[..n]).unwrap() < ALPHA)
                as usize;
        }
        assert!(naive as f64 / 1000.0 > 0.1, "{naive}");
    }

    #[test]
    fn a_five_percent_difference_is_decided_behind_and_a_tie_equivalent() {
        // The noise of a round's paired log ratio with interleaved slices on the 2-vCPU VM:
        // 0.03 to 0.06 (docs/method.md); 0.04 here.
        let mut rng = fastrand::Rng::with_seed(43);
        let (mut behind, mut equivalent, mut rounds) = (0, 0, 0);
        for _ in 0..200 {
            let (cs, n) = run_point(&[0.05_f64.ln_1p()], 0.04, QUICK, 24, &mut rng);
            behind += (cs[0].outcome == Outcome::Behind) as usize;
            rounds += n;
            let (cs, _) = run_point(&[0.0], 0.04, QUICK, 24, &mut rng);
            equivalent += (cs[0].outcome == Outcome::Equivalent) as usize;
        }
        assert!(behind >= 180, "{behind} of 200 decided behind");
        assert!(rounds < 200 * 12, "mean rounds {}", rounds as f64 / 200.0);
        assert!(equivalent >= 180, "{equivalent} of 200 equivalent");
        // Never the other way round.
        let mut rng = fastrand::Rng::with_seed(44);
        for _ in 0..200 {
            let (cs, _) = run_point(&[0.05_f64.ln_1p()], 0.04, QUICK, 24, &mut rng);
            assert_ne!(cs[0].outcome, Outcome::Ahead);
        }
    }

    #[test]
    fn at_the_budget_it_stops_and_says_undecided() {
        // A 2% difference in rounds as noisy as a contiguous window's (0.15): ten rounds
        // decide nothing either way, and the claim says so with the rounds that would.
        let mut rng = fastrand::Rng::with_seed(45);
        let mut undecided = 0;
        for _ in 0..100 {
            let (cs, n) = run_point(&[0.02], 0.15, QUICK, 10, &mut rng);
            assert!(n <= 10);
            if cs[0].outcome == Outcome::Undecided {
                undecided += 1;
                let need = cs[0].rounds_to_decide().unwrap();
                assert!(need > 10, "{need}");
            }
        }
        assert!(undecided >= 90, "{undecided}");
    }

    #[test]
    fn false_discoveries_stay_under_alpha_across_points() {
        // 300 points of four pairs: one pair in four differs by 10%, the rest are A/A. Of
        // the differences claimed over every point, the share that is false stays under alpha.
        let mut rng = fastrand::Rng::with_seed(47);
        let (mut claimed, mut false_claims) = (0, 0);
        for _ in 0..300 {
            let effects = [0.0, 0.0, 0.1, 0.0];
            let (cs, _) = run_point(&effects, 0.05, QUICK, 24, &mut rng);
            for (c, e) in cs.iter().zip(effects) {
                if c.decided() {
                    claimed += 1;
                    false_claims += (e == 0.0) as usize;
                }
            }
        }
        let fdr = false_claims as f64 / claimed.max(1) as f64;
        assert!(claimed >= 270, "{claimed}");
        assert!(fdr < ALPHA, "{fdr} ({false_claims} of {claimed})");
    }
}
