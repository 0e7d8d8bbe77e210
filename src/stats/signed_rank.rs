//! The Wilcoxon signed-rank test of per-round differences and the Hodges-Lehmann estimate
//! with its distribution-free interval: the paired test every claim rests on
//! (`stats::claims`). Exact (W+ counted over the 2^n sign assignments, midranks at ties) up
//! to [`EXACT_MAX`] differences, else the normal approximation with the tie correction.

use super::rank::normal_sf;

/// Up to this many rounds the signed-rank test is exact.
pub(crate) const EXACT_MAX: usize = 40;

/// The smallest two-sided p the signed-rank test can give with `n` rounds: every round's
/// difference of one sign, 2 / 2^n.
pub(crate) fn min_p(n: usize) -> f64 {
    if n == 0 {
        return 1.0;
    }
    (2.0 / 2f64.powi(n as i32)).min(1.0)
}

/// Counts of W+ (the sum of the ranks of the positive differences) over all 2^n sign
/// assignments of ranks 1..=n: index w holds how many give W+ = w.
fn signed_rank_counts(n: usize) -> Vec<f64> {
    let max = n * (n + 1) / 2;
    let mut c = vec![0.0; max + 1];
    c[0] = 1.0;
    for r in 1..=n {
        for w in (r..=max).rev() {
            c[w] += c[w - r];
        }
    }
    c
}

/// Ranks of `|d|` (average ranks at ties), and whether any tie occurred.
fn abs_ranks(d: &[f64]) -> (Vec<f64>, bool) {
    let mut idx: Vec<usize> = (0..d.len()).collect();
    idx.sort_by(|&a, &b| d[a].abs().total_cmp(&d[b].abs()));
    let mut ranks = vec![0.0; d.len()];
    let mut ties = false;
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && d[idx[j + 1]].abs() == d[idx[i]].abs() {
            j += 1;
        }
        ties |= j > i;
        let r = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            ranks[k] = r;
        }
        i = j + 1;
    }
    (ranks, ties)
}

/// Two-sided p of the Wilcoxon signed-rank test that `d` is centred on 0 (zeros dropped);
/// `None` when no difference is left. Never below [`min_p`] of the differences used.
pub(crate) fn signed_rank_p(d: &[f64]) -> Option<f64> {
    let (n, lower, upper) = signed_rank_tails(d)?;
    Some((2.0 * lower.min(upper)).clamp(min_p(n), 1.0))
}

/// One-sided p of the signed-rank test that `d` is centred above 0 (against "at most 0"),
/// zeros dropped; `None` when no difference is left. Never below half of [`min_p`].
pub(crate) fn signed_rank_p_greater(d: &[f64]) -> Option<f64> {
    let (n, _, upper) = signed_rank_tails(d)?;
    Some(upper.clamp(min_p(n) / 2.0, 1.0))
}

/// The null tails of the signed-rank statistic W+ (the sum of the ranks of the positive
/// differences) of `d`, zeros dropped: (differences used, P(W+ <= w), P(W+ >= w)) at the
/// observed w. Exact (the distribution of W+ counted over the 2^n sign assignments of the
/// ranks as they are, midranks at ties doubled to integers) up to [`EXACT_MAX`] differences,
/// else the normal approximation with continuity and tie corrections.
fn signed_rank_tails(d: &[f64]) -> Option<(usize, f64, f64)> {
    let d: Vec<f64> = d
        .iter()
        .copied()
        .filter(|x| *x != 0.0 && x.is_finite())
        .collect();
    let n = d.len();
    if n == 0 {
        return None;
    }
    let (ranks, ties) = abs_ranks(&d);
    let w_plus: f64 = d
        .iter()
        .zip(&ranks)
        .filter(|(x, _)| **x > 0.0)
        .map(|(_, r)| r)
        .sum();
    let total = (n * (n + 1)) as f64 / 2.0;
    if n <= EXACT_MAX {
        let twice: Vec<usize> = ranks.iter().map(|r| (2.0 * r).round() as usize).collect();
        let max: usize = twice.iter().sum();
        let mut c = vec![0.0f64; max + 1];
        c[0] = 1.0;
        for &r in &twice {
            for s in (r..=max).rev() {
                c[s] += c[s - r];
            }
        }
        let all = 2f64.powi(n as i32);
        let k = ((2.0 * w_plus).round() as usize).min(max);
        let lower = c[..=k].iter().sum::<f64>() / all;
        let upper = c[k..].iter().sum::<f64>() / all;
        return Some((n, lower.min(1.0), upper.min(1.0)));
    }
    let nf = n as f64;
    let mu = total / 2.0;
    let mut var = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0;
    if ties {
        // Tie correction: sum of (t^3 - t) / 48 over groups of equal magnitudes.
        let mut sorted = ranks.clone();
        sorted.sort_by(f64::total_cmp);
        let mut i = 0;
        while i < sorted.len() {
            let mut j = i;
            while j + 1 < sorted.len() && sorted[j + 1] == sorted[i] {
                j += 1;
            }
            let t = (j - i + 1) as f64;
            var -= (t * t * t - t) / 48.0;
            i = j + 1;
        }
    }
    if var <= 0.0 {
        return Some((n, 1.0, 1.0));
    }
    let sd = var.sqrt();
    let lower = normal_sf((mu - w_plus - 0.5) / sd);
    let upper = normal_sf((w_plus - mu - 0.5) / sd);
    Some((n, lower.min(1.0), upper.min(1.0)))
}

/// The Hodges-Lehmann estimate of `d`'s centre (the median of the Walsh averages
/// (d_i + d_j) / 2, i <= j) and its distribution-free interval at about `1 - alpha`: the
/// Walsh averages at ranks k+1 and M-k (of M), k the largest W+ the signed-rank test rejects
/// at (P(W+ <= k) < alpha / 2; k = 0 when n is too small for any: the interval is then
/// [min, max] of the averages, at the confidence 1 - 2 / 2^n it has). `None` without a value.
pub(crate) fn hodges_lehmann(d: &[f64], alpha: f64) -> Option<(f64, (f64, f64))> {
    let d: Vec<f64> = d.iter().copied().filter(|x| x.is_finite()).collect();
    let n = d.len();
    if n == 0 {
        return None;
    }
    let mut walsh = Vec::with_capacity(n * (n + 1) / 2);
    for i in 0..n {
        for j in i..n {
            walsh.push((d[i] + d[j]) / 2.0);
        }
    }
    walsh.sort_by(f64::total_cmp);
    let m = walsh.len();
    let est = if m % 2 == 1 {
        walsh[m / 2]
    } else {
        (walsh[m / 2 - 1] + walsh[m / 2]) / 2.0
    };
    let k = if n <= EXACT_MAX {
        let c = signed_rank_counts(n);
        let all = 2f64.powi(n as i32);
        // The largest w the test rejects at (P(W <= w) < alpha / 2): the interval excludes 0
        // exactly when W+ or W- is at most it (W- counts the negative Walsh averages).
        let mut cum = 0.0;
        let mut k = 0;
        for (w, x) in c.iter().enumerate() {
            cum += x;
            if cum / all < alpha / 2.0 {
                k = w;
            } else {
                break;
            }
        }
        k
    } else {
        let nf = n as f64;
        let mu = nf * (nf + 1.0) / 4.0;
        let sd = (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt();
        (mu - 1.959_964 * sd).floor().max(0.0) as usize
    };
    let k = k.min((m - 1) / 2);
    Some((est, (walsh[k], walsh[m - 1 - k])))
}
