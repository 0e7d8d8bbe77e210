//! The rank tests every comparison of two sets of repetitions rests on: Mann-Whitney U (two
//! samples: two runs, two points of a sweep) with its smallest attainable p, and the standard
//! normal's upper tail. A leaf of `stats`: `claims`, `compare` and `stability` use it.

/// The smallest two-sided p-value the Mann-Whitney U test can reach with `n1` and `n2`
/// values: both samples completely apart, the one arrangement in C(n1 + n2, n1) (per tail)
/// that is most extreme. Ties only coarsen the distribution, so no p is ever smaller.
pub(crate) fn min_p(n1: usize, n2: usize) -> f64 {
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
pub(crate) fn testable(n1: usize, n2: usize, alpha: f64) -> bool {
    n1 >= 2 && n2 >= 2 && min_p(n1, n2) < alpha
}

/// The fewest repetitions per side with which a change can be significant at `alpha`
/// (4 at 0.05: 2/70 = 0.029, while 3 gives 2/20 = 0.1).
pub(crate) fn reps_needed(alpha: f64) -> usize {
    (2..=1000).find(|&n| testable(n, n, alpha)).unwrap_or(1000)
}

/// Two-sided p-value of the Mann-Whitney U test; `None` with fewer than 2 values a side. Never
/// below [`min_p`] (the normal approximation used with ties could otherwise claim more than
/// the samples can show).
pub(crate) fn mann_whitney(a: &[f64], b: &[f64]) -> Option<f64> {
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

/// Upper tail of the standard normal (statrs' erfc).
pub(crate) fn normal_sf(z: f64) -> f64 {
    statrs::function::erf::erfc(z / std::f64::consts::SQRT_2) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALPHA: f64 = 0.05;

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
