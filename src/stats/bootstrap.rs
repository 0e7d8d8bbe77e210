//! Bootstrap confidence intervals over repetitions: resample the per-repetition values with
//! replacement, take the statistic of each resample, and report the central `LEVEL` share of
//! those statistics (the percentile bootstrap). Seeded from the data, so the same results
//! always give the same interval (reports re-render identically).

use crate::measure::Hist;

/// Confidence level of every interval here.
pub(crate) const LEVEL: f64 = 0.95;
/// Resamples per interval.
pub(crate) const RESAMPLES: usize = 2000;

/// A seed that depends only on the values (FNV-1a over their bits).
fn seed_of(xs: &[f64]) -> u64 {
    xs.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, x| {
        (h ^ x.to_bits()).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The `q` quantile (0..=1) of sorted values, nearest rank.
fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    let i = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
    sorted[i]
}

/// The median of `xs` (mean of the middle two for an even count).
fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// The percentile-bootstrap interval at `level` of `stat` over `xs`, from `resamples`
/// resamples. `None` with fewer than two finite values (one repetition says nothing about its
/// spread).
pub(crate) fn interval(
    xs: &[f64],
    stat: fn(&mut [f64]) -> f64,
    level: f64,
    resamples: usize,
) -> Option<(f64, f64)> {
    let xs: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if xs.len() < 2 || resamples == 0 {
        return None;
    }
    let mut rng = fastrand::Rng::with_seed(seed_of(&xs));
    let mut buf = vec![0.0; xs.len()];
    let mut stats: Vec<f64> = (0..resamples)
        .map(|_| {
            for b in buf.iter_mut() {
                *b = xs[rng.usize(..xs.len())];
            }
            stat(&mut buf)
        })
        .collect();
    stats.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    Some((
        quantile_sorted(&stats, tail),
        quantile_sorted(&stats, 1.0 - tail),
    ))
}

/// Resamples for the percentile intervals (each merges whole repetitions' histograms).
pub(crate) const HIST_RESAMPLES: usize = 200;

/// 95% intervals of the quantiles `qs` of the merged latency of `reps`, resampling whole
/// repetitions (a cluster bootstrap: a hiccup stays in the repetition it hit). `None` per
/// quantile with fewer than two repetitions.
pub(crate) fn quantile_cis(reps: &[&Hist], qs: &[f64]) -> Vec<Option<(f64, f64)>> {
    if reps.len() < 2 {
        return vec![None; qs.len()];
    }
    let seed = reps.iter().fold(0x9e37_79b9_7f4a_7c15u64, |h, r| {
        (h ^ r.len()).wrapping_mul(0x0100_0000_01b3)
    });
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut merged = Hist::new();
    let mut stats: Vec<Vec<f64>> = vec![Vec::with_capacity(HIST_RESAMPLES); qs.len()];
    for _ in 0..HIST_RESAMPLES {
        merged.clear();
        for _ in 0..reps.len() {
            merged.merge(reps[rng.usize(..reps.len())]);
        }
        for (i, q) in qs.iter().enumerate() {
            stats[i].push(merged.quantile(*q) as f64);
        }
    }
    let tail = (1.0 - LEVEL) / 2.0;
    stats
        .into_iter()
        .map(|mut v| {
            v.sort_by(f64::total_cmp);
            Some((quantile_sorted(&v, tail), quantile_sorted(&v, 1.0 - tail)))
        })
        .collect()
}

/// The 95% bootstrap interval of the median of per-repetition values.
pub(crate) fn median_ci(xs: &[f64]) -> Option<(f64, f64)> {
    interval(xs, median, LEVEL, RESAMPLES)
}

/// The 95% bootstrap interval of the change of the median from `base` to `new`, percent of
/// the base: each side's repetitions resampled on their own (`ringside compare`). `None` with
/// fewer than two repetitions a side or a zero base.
pub(crate) fn change_pct_ci(base: &[f64], new: &[f64]) -> Option<(f64, f64)> {
    let clean = |v: &[f64]| -> Vec<f64> { v.iter().copied().filter(|x| x.is_finite()).collect() };
    let (b, n) = (clean(base), clean(new));
    if b.len() < 2 || n.len() < 2 {
        return None;
    }
    let mut rng = fastrand::Rng::with_seed(seed_of(&b) ^ seed_of(&n).rotate_left(17));
    let (mut rb, mut rn) = (vec![0.0; b.len()], vec![0.0; n.len()]);
    let mut stats = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        for x in rb.iter_mut() {
            *x = b[rng.usize(..b.len())];
        }
        for x in rn.iter_mut() {
            *x = n[rng.usize(..n.len())];
        }
        let mb = median(&mut rb);
        if mb == 0.0 {
            return None;
        }
        stats.push((median(&mut rn) - mb) / mb * 100.0);
    }
    stats.sort_by(f64::total_cmp);
    let tail = (1.0 - LEVEL) / 2.0;
    Some((
        quantile_sorted(&stats, tail),
        quantile_sorted(&stats, 1.0 - tail),
    ))
}

#[cfg(test)]
mod tests {
    /// Known answer: every new repetition exactly 30% above every base one.
    #[test]
    fn change_interval_of_a_pure_shift_is_the_shift() {
        let b = [100.0, 101.0, 99.0, 100.5, 100.0];
        let n: Vec<f64> = b.iter().map(|x| x * 1.3).collect();
        let (lo, hi) = change_pct_ci(&b, &n).unwrap();
        assert!(
            lo > 27.0 && hi < 33.0 && lo <= 30.0 && hi >= 30.0,
            "{lo}..{hi}"
        );
        // Identical runs: the interval holds 0.
        let (lo, hi) = change_pct_ci(&b, &b).unwrap();
        assert!(lo <= 0.0 && hi >= 0.0, "{lo}..{hi}");
        assert_eq!(change_pct_ci(&b[..1], &b), None);
    }

    use super::*;

    #[test]
    fn equal_values_give_a_point_interval_and_one_value_none() {
        assert_eq!(median_ci(&[5.0; 5]), Some((5.0, 5.0)));
        assert_eq!(median_ci(&[5.0]), None);
        assert_eq!(median_ci(&[]), None);
    }

    /// Known answer: repetitions whose latencies are all 100 ns but one whose are all 1000 ns.
    /// Resampling whole repetitions, the merged p50 stays 100 (a resample needs 3 of 5 draws
    /// of the slow one, P = 0.058, to move it; 2.5% < 5.8%, so the upper bound moves) and the
    /// p99 can be either: the interval shows that one repetition decides it.
    #[test]
    fn percentile_intervals_resample_whole_repetitions() {
        let mk = |ns: u64| {
            let mut h = Hist::new();
            h.record_n(ns, 1000);
            h
        };
        let reps = [mk(100), mk(100), mk(100), mk(100), mk(1000)];
        let refs: Vec<&Hist> = reps.iter().collect();
        let ci = quantile_cis(&refs, &[0.5, 0.99]);
        let (lo, hi) = ci[0].unwrap();
        assert!((lo - 100.0).abs() < 1.0, "p50 low {lo}");
        assert!((hi - 1000.0).abs() < 2.0, "p50 high {hi}");
        let (lo, hi) = ci[1].unwrap();
        assert!(
            (lo - 100.0).abs() < 1.0 && (hi - 1000.0).abs() < 2.0,
            "{lo}..{hi}"
        );
        // Identical repetitions: a point interval; one repetition: none.
        let same = [mk(100), mk(100)];
        let refs: Vec<&Hist> = same.iter().collect();
        let (lo, hi) = quantile_cis(&refs, &[0.99])[0].unwrap();
        assert!((lo - 100.0).abs() < 1.0 && lo == hi);
        assert_eq!(quantile_cis(&refs[..1], &[0.99]), vec![None]);
    }

    #[test]
    fn same_data_same_interval() {
        let xs = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0];
        assert_eq!(median_ci(&xs), median_ci(&xs));
    }

    /// Known answer: the median of 0..=1000 (n = 1001). The distribution-free interval for a
    /// median uses order statistics n/2 -+ 1.96 sqrt(n)/2, i.e. about 469..531; the bootstrap
    /// must land close to it and contain the true median.
    #[test]
    fn median_interval_matches_the_order_statistic_interval() {
        let xs: Vec<f64> = (0..=1000).map(|i| ((i * 7919) % 1001) as f64).collect();
        let (lo, hi) = median_ci(&xs).unwrap();
        assert!(lo < 500.0 && hi > 500.0, "{lo}..{hi}");
        assert!((lo - 469.0).abs() <= 12.0, "lower {lo}");
        assert!((hi - 531.0).abs() <= 12.0, "upper {hi}");
    }

    /// Known answer for five repetitions 1..5: the resampled median is 1 with probability
    /// P(at least 3 of 5 draws are 1) = 0.058 > 0.025, so the 95% interval is the whole range.
    #[test]
    fn five_repetitions_span_their_range() {
        assert_eq!(median_ci(&[1.0, 2.0, 3.0, 4.0, 5.0]), Some((1.0, 5.0)));
    }
}
