//! The claims engine: every statement a report or `compare` makes about two models ("X leads",
//! "behind by", "equivalent", "undecided", a crossover, a regression) is a typed value computed
//! here, from repetitions measured in rounds. Exporters render claims; they compute none.
//!
//! **Paired rounds.** The runner measures a point's models in rounds: each round runs every
//! model once, in a freshly shuffled order. Repetition k of every model at a point belongs to
//! round k, so two models are compared by their per-round ratio (B/A within round k): drift
//! that a round shares (the machine got slower for a minute) cancels in the ratio.
//!
//! **The test.** The per-round log ratios are tested with the Wilcoxon signed-rank test, exact
//! (the distribution of W+ counted over the 2^n sign assignments, midranks at ties) for up
//! to [`EXACT_MAX`](super::signed_rank::EXACT_MAX) rounds, else its normal approximation with
//! the tie correction (`stats::signed_rank`). It
//! assumes only that the rounds are independent and the log ratio's distribution symmetric
//! under no difference; it is valid at any number of rounds, but the smallest two-sided p it
//! can reach is 2 / 2^n ([`min_p`]): 0.0625 at 5 rounds, 0.031 at 6, so a claim needs at
//! least [`rounds_needed`] (6) rounds at alpha 0.05. The effect is the Hodges-Lehmann
//! estimate of the log ratio (the median of the Walsh averages) with its distribution-free
//! interval (the Walsh averages between the signed-rank test's critical ranks), so the
//! interval excludes "no difference" exactly when the test rejects it.
//!
//! **Three outcomes.** An interval inside +-[`MARGIN`] is *equivalent* (whatever the p);
//! otherwise a difference the test supports after the family's correction (Holm over the
//! comparisons at one point, Benjamini-Hochberg) is a decided *lead* with its factor and interval; anything else is
//! *undecided*, with the rounds behind it. [`Claim::invisible_pct`] says how large a
//! difference the rounds could not have told apart from none.

use super::sequential::{self, Looks};
pub(crate) use super::signed_rank::{hodges_lehmann, min_p, signed_rank_p, signed_rank_p_greater};

/// Significance level of every claim (a cell's `claim_alpha` may lower it: adaptive rounds).
pub(crate) const ALPHA: f64 = crate::results::schema::DEFAULT_CLAIM_ALPHA;
/// The level claims over `cells` are judged at: the smallest of their `claim_alpha`, under
/// the sequential design covering theirs (`Looks::union`; none where every cell's rounds were
/// fixed).
pub(crate) fn level_of<'a>(
    cells: impl IntoIterator<Item = &'a crate::results::CaseResult>,
) -> Level {
    let mut level = Level::from(ALPHA);
    for f in cells.into_iter().filter_map(|c| c.figures.as_ref()) {
        level = level.with(f);
    }
    level
}

impl Level {
    /// This level joined with a cell's: the smaller alpha, the design covering both.
    pub(crate) fn with(self, f: &crate::results::schema::CaseFigures) -> Level {
        Level {
            alpha: self.alpha.min(f.claim_alpha),
            looks: match (self.looks, f.looks) {
                (Some(a), Some(b)) => Some(a.union(b)),
                (a, b) => a.or(b),
            },
        }
    }
}

/// Two models whose ratio lies within +-5% (on the log scale: between 1/1.05 and 1.05) are
/// equivalent, when two one-sided tests say so.
pub(crate) const MARGIN: f64 = 0.05;

/// How a point's claims are judged: at `alpha`, its rounds looked at once (`looks` none) or
/// after every round of a sequential design (`stats::sequential`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Level {
    pub(crate) alpha: f64,
    pub(crate) looks: Option<Looks>,
}

impl From<f64> for Level {
    fn from(alpha: f64) -> Level {
        Level { alpha, looks: None }
    }
}

impl Level {
    pub(crate) fn sequential(alpha: f64, looks: Looks) -> Level {
        Level {
            alpha,
            looks: Some(looks),
        }
    }

    /// The level each look is judged at: alpha for one look, the design's per-look level for
    /// a sequential one.
    pub(crate) fn nominal(&self) -> f64 {
        match self.looks {
            None => self.alpha,
            Some(l) => sequential::design(l).nominal(self.alpha),
        }
    }

    /// A look's repeated p-value from its nominal two-sided p (the p itself for one look).
    fn repeated(&self, p: f64) -> f64 {
        match self.looks {
            None => p,
            Some(l) => sequential::design(l).repeated_p(p),
        }
    }

    /// The same for a one-sided p.
    fn repeated1(&self, p: f64) -> f64 {
        match self.looks {
            None => p,
            Some(l) => sequential::design(l).repeated_p1(p),
        }
    }

    /// The fewest paired rounds that can support a claim at this level.
    pub(crate) fn first_claim(&self) -> u32 {
        (1..=crate::profile::MAX_ROUNDS)
            .find(|&n| self.enough(n as usize))
            .unwrap_or(crate::profile::MAX_ROUNDS)
    }

    /// Whether `rounds` paired rounds can support a claim: at least the design's first look,
    /// and enough for the smallest p they can give to reach the per-look level.
    pub(crate) fn enough(&self, rounds: usize) -> bool {
        let first = self.looks.map_or(0, |l| l.first as usize);
        rounds >= first && min_p(rounds) < self.nominal()
    }
}
/// Samples beyond the p99 each repetition needs before a p99 is claimed (in a report or by
/// `compare`): a p99 from a thinner tail is mostly one hiccup, shown and not claimed.
pub(crate) const TAIL_MIN: u64 = 50;
/// A repetition is a stall when its figure is this many times worse than the median of the
/// same cell's other repetitions (a throughput at under half of theirs).
pub(crate) const STALL_FACTOR: f64 = 2.0;

/// The fewest rounds with which a paired claim can reach `alpha` (6 at 0.05).
pub(crate) fn rounds_needed(alpha: f64) -> usize {
    (1..=64).find(|&n| min_p(n) < alpha).unwrap_or(64)
}

/// Per-round log ratios ln(b_k / a_k) over the rounds both have (the first `min(len)`),
/// skipping rounds where either value is not positive and finite.
pub(crate) fn log_ratios(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .filter(|(x, y)| **x > 0.0 && **y > 0.0 && x.is_finite() && y.is_finite())
        .map(|(x, y)| (y / x).ln())
        .collect()
}

/// What the rounds say about B against A.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The interval of the ratio lies within +-[`MARGIN`].
    Equivalent,
    /// B is worse than A: decided (p below alpha after the family's correction).
    Behind,
    /// B is better than A: decided.
    Ahead,
    /// Neither: more rounds, or a quieter machine, would be needed.
    Undecided,
}

/// One paired claim: B against A on one figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Claim {
    pub(crate) outcome: Outcome,
    /// How many times worse B is than A (> 1: worse; < 1: better), the Hodges-Lehmann
    /// estimate over the rounds, on the figure's "worse" direction.
    pub(crate) times: f64,
    /// Interval of `times`.
    pub(crate) ci: (f64, f64),
    /// The signed-rank p of "no difference", before any correction (`None` when every round
    /// tied); under a sequential design the look's repeated p-value (`stats::sequential`).
    pub(crate) p: Option<f64>,
    /// The p of "not equivalent" (two one-sided tests of a difference of at least
    /// [`MARGIN`], the larger of their p; repeated under a sequential design), paired claims
    /// only.
    pub(crate) p_eq: Option<f64>,
    /// The pair's p after the family's correction (Benjamini-Hochberg's adjusted p over the
    /// point's comparisons, or over every test `compare` makes), of the smaller of `p` and
    /// `p_eq`: the claim the pair supports.
    pub(crate) p_adj: Option<f64>,
    /// Rounds paired (unpaired: the fewer repetitions of the two sides).
    pub(crate) rounds: usize,
    /// A paired claim (signed-rank over rounds), or an unpaired one (Mann-Whitney).
    pub(crate) paired: bool,
    /// The significance level it was judged at.
    pub(crate) alpha: f64,
    /// The sequential design it was judged under (`None`: one look).
    pub(crate) looks: Option<Looks>,
}

impl Claim {
    /// Decided either way (a lead), not equivalent or undecided.
    pub(crate) fn decided(&self) -> bool {
        matches!(self.outcome, Outcome::Behind | Outcome::Ahead)
    }

    /// The level it was judged at.
    pub(crate) fn level(&self) -> Level {
        Level {
            alpha: self.alpha,
            looks: self.looks,
        }
    }

    /// The p of the claim the pair supports: the smaller of "no difference" and "not
    /// equivalent" (`None` when neither was tested).
    pub(crate) fn p_claim(&self) -> Option<f64> {
        match (self.p, self.p_eq) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The smallest difference, in percent, these rounds could have told apart: the
    /// interval's half-width (infinite below the rounds a claim needs, where no p reaches
    /// the level).
    pub(crate) fn invisible_pct(&self) -> f64 {
        if self.paired && !self.level().enough(self.rounds) {
            return f64::INFINITY;
        }
        let (lo, hi) = (self.ci.0.max(1e-12).ln(), self.ci.1.max(1e-12).ln());
        (((hi - lo) / 2.0).exp() - 1.0) * 100.0
    }

    /// About how many paired rounds in all would decide this undecided pair at the noise its
    /// rounds showed: its interval narrows as 1/sqrt(rounds), and it is decided once the
    /// interval's half-width is below the estimate's distance from 1 (behind or ahead) or
    /// from the margin (equivalent), whichever is larger. `None` for a decided or unpaired
    /// claim, or one whose interval is not finite.
    pub(crate) fn rounds_to_decide(&self) -> Option<usize> {
        if !self.paired || self.outcome != Outcome::Undecided || self.rounds == 0 {
            return None;
        }
        let (lo, hi) = (self.ci.0.ln(), self.ci.1.ln());
        let half = (hi - lo) / 2.0;
        let est = self.times.ln().abs();
        let target = est.max((1.0 + MARGIN).ln() - est);
        if !half.is_finite() || half <= 0.0 || target <= 0.0 {
            return None;
        }
        let need = (self.rounds as f64 * (half / target).powi(2)).ceil() as usize;
        let first = self
            .looks
            .map_or(rounds_needed(self.alpha), |l| l.first as usize);
        Some(need.max(self.rounds + 1).max(first))
    }
}

/// "0.031", "<0.001".
pub(crate) fn p_text(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// B against A from their per-round values of a figure, `higher_is_better` saying which
/// way is better, judged at `level` (an alpha, or an alpha and a sequential design; the
/// family's correction is the caller's: [`correct`]). `None` with no round in common.
pub(crate) fn pair(
    a: &[f64],
    b: &[f64],
    higher_is_better: bool,
    level: impl Into<Level>,
) -> Option<Claim> {
    let mut d = log_ratios(a, b);
    if higher_is_better {
        d.iter_mut().for_each(|x| *x = -*x);
    }
    from_log_diffs(&d, level)
}

/// A claim from per-round log "worse" factors (> 0: B worse): the Hodges-Lehmann estimate
/// and its interval at the level each look is judged at (under a sequential design, the
/// repeated confidence interval), the p of "no difference" and the p of "not equivalent"
/// (the larger of the two one-sided tests of the log ratio shifted by the margin, each at half
/// the level: equivalent where the interval shown lies within the margin).
pub(crate) fn from_log_diffs(d: &[f64], level: impl Into<Level>) -> Option<Claim> {
    let level = level.into();
    let (est, (lo, hi)) = hodges_lehmann(d, level.nominal())?;
    let p = signed_rank_p(d).map(|p| level.repeated(p));
    let m = (1.0 + MARGIN).ln();
    let below: Vec<f64> = d.iter().map(|x| m - x).collect();
    let above: Vec<f64> = d.iter().map(|x| x + m).collect();
    let p_eq = match (signed_rank_p_greater(&below), signed_rank_p_greater(&above)) {
        // Each one-sided test at half the level, so that "equivalent" agrees with the
        // two-sided interval shown: it lies within the margin.
        (Some(a), Some(b)) => Some((2.0 * level.repeated1(a.max(b))).min(1.0)),
        _ => None,
    };
    let mut c = Claim {
        outcome: Outcome::Undecided,
        times: est.exp(),
        ci: (lo.exp(), hi.exp()),
        p,
        p_eq,
        p_adj: None,
        rounds: d.iter().filter(|x| x.is_finite()).count(),
        paired: true,
        alpha: level.alpha,
        looks: level.looks,
    };
    c.p_adj = c.p_claim();
    c.outcome = judge(&c, level.alpha);
    Some(c)
}

/// B against A from two sets of repetitions that were not measured in the same rounds (two
/// points of a sweep, two runs): Mann-Whitney's p on the values, the ratio of medians and
/// its 95% bootstrap interval. `None` with fewer than two values a side.
pub(crate) fn unpaired(a: &[f64], b: &[f64], higher_is_better: bool, alpha: f64) -> Option<Claim> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (ma, mb) = (super::median(a), super::median(b));
    if ma <= 0.0 || mb <= 0.0 {
        return None;
    }
    let (lo, hi) = super::bootstrap::change_pct_ci(a, b)?;
    let (lo, hi) = (1.0 + lo / 100.0, 1.0 + hi / 100.0);
    let (times, ci) = if higher_is_better {
        (ma / mb, (1.0 / hi.max(1e-12), 1.0 / lo.max(1e-12)))
    } else {
        (mb / ma, (lo, hi))
    };
    let p = super::rank::mann_whitney(a, b);
    let mut c = Claim {
        outcome: Outcome::Undecided,
        times,
        ci,
        p,
        p_eq: None,
        p_adj: p,
        rounds: a.len().min(b.len()),
        paired: false,
        alpha,
        looks: None,
    };
    c.outcome = judge(&c, alpha);
    Some(c)
}

/// The outcome of a claim at `alpha`, from its interval and (corrected) p.
fn judge(c: &Claim, alpha: f64) -> Outcome {
    let ahead_or_behind = || {
        if c.times > 1.0 {
            Outcome::Behind
        } else {
            Outcome::Ahead
        }
    };
    if c.paired {
        // Below the rounds a claim needs (the design's first look, and enough for the smallest
        // p to reach the per-look level), nothing is claimed.
        let level = Level {
            alpha,
            looks: c.looks,
        };
        if !level.enough(c.rounds) || !c.p_adj.is_some_and(|p| p < alpha) {
            return Outcome::Undecided;
        }
        // The pair's claim is the hypothesis with the smaller p: equivalence when "not
        // equivalent" is the one rejected.
        let eq = match (c.p, c.p_eq) {
            (Some(p), Some(e)) => e <= p,
            (None, Some(_)) => true,
            _ => false,
        };
        return if eq {
            Outcome::Equivalent
        } else if c.ci.0 > 1.0 || c.ci.1 < 1.0 {
            ahead_or_behind()
        } else {
            Outcome::Undecided
        };
    }
    // Unpaired (two runs, two points of a sweep): the bootstrap interval within the margin
    // is equivalent, a corrected p below alpha with the interval beside 1 a difference. An
    // interval is only as sure as its repetitions allow: below the repetitions a test needs
    // to reach alpha, no ground for "equivalent".
    let m = 1.0 + MARGIN;
    let enough = super::rank::min_p(c.rounds, c.rounds) < alpha;
    if enough && c.ci.0 >= 1.0 / m && c.ci.1 <= m {
        Outcome::Equivalent
    } else if c.p_adj.is_some_and(|p| p < alpha) && (c.ci.0 > 1.0 || c.ci.1 < 1.0) {
        ahead_or_behind()
    } else {
        Outcome::Undecided
    }
}

/// The correction over one family of claims (the comparisons at one point, or every test
/// `compare` makes): Benjamini-Hochberg, keeping the share of false claims among the decided
/// ones under alpha; Holm's for claims under a sequential design. Each claim's `p_adj` becomes its adjusted p and its outcome is judged
/// again. (Holm's family-wise control would need 2/2^n * (models - 1) < alpha: 10 rounds at
/// eleven models, where the false discovery rate needs 6.)
pub(crate) fn correct(claims: &mut [&mut Claim], alpha: f64) {
    correct_among(claims, alpha, 0);
}

/// [`correct`] for `claims` that are part of a family with `unbuilt` more tests that were
/// not made (a report lists a point's first pairs only): those count as p = 1, which can only
/// raise the adjusted p of these (a smaller unknown p would lower them), so it stays valid.
pub(crate) fn correct_among(claims: &mut [&mut Claim], alpha: f64, unbuilt: usize) {
    let idx: Vec<usize> = (0..claims.len())
        .filter(|&i| claims[i].p_claim().is_some())
        .collect();
    let mut ps: Vec<f64> = idx.iter().filter_map(|&i| claims[i].p_claim()).collect();
    ps.extend(std::iter::repeat_n(1.0, unbuilt));
    // A sequential design's claims are corrected by Holm's step-down: its bound (each true
    // null's repeated p below alpha / m0 at some look, summed) holds at whatever look the
    // rounds stopped, which Benjamini-Hochberg's thresholds, moving with the other pairs'
    // p from look to look, do not (its false discovery rate then exceeded alpha in
    // `stats::sequential`'s tests). Holm keeps the family-wise rate, and so the false
    // discovery rate, under alpha.
    let sequential = idx.iter().any(|&i| claims[i].looks.is_some());
    let adj = if sequential {
        holm(&ps)
    } else {
        benjamini_hochberg(&ps, alpha).1
    };
    for (k, &i) in idx.iter().enumerate() {
        claims[i].p_adj = Some(adj[k]);
    }
    for c in claims.iter_mut() {
        c.alpha = alpha;
        c.outcome = judge(c, alpha);
    }
}

/// Holm's step-down adjusted p-values of `ps`: the k-th smallest times (m - k + 1), made
/// non-decreasing in that order, at most 1.
pub(crate) fn holm(ps: &[f64]) -> Vec<f64> {
    let m = ps.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| ps[a].total_cmp(&ps[b]));
    let mut adj = vec![1.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max((ps[i] * (m - rank) as f64).min(1.0));
        adj[i] = running;
    }
    adj
}

/// Benjamini-Hochberg: which of `ps` are discoveries with the false discovery rate kept at
/// `q`, and each p's adjusted value (the smallest q at which it would be one).
pub(crate) fn benjamini_hochberg(ps: &[f64], q: f64) -> (Vec<bool>, Vec<f64>) {
    let m = ps.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| ps[a].total_cmp(&ps[b]));
    let mut adj = vec![1.0; m];
    let mut running: f64 = 1.0;
    for (rank, &i) in order.iter().enumerate().rev() {
        let v = (ps[i] * m as f64 / (rank + 1) as f64).min(1.0);
        running = running.min(v);
        adj[i] = running;
    }
    (adj.iter().map(|a| *a <= q).collect(), adj)
}

/// The repetitions of one cell that stalled: those whose figure is [`STALL_FACTOR`] times
/// worse than the median of the cell's other repetitions (at least two others), by index.
#[cfg(test)]
pub(crate) fn stalls(reps: &[f64], higher_is_better: bool) -> Vec<usize> {
    if reps.len() < 3 {
        return Vec::new();
    }
    (0..reps.len())
        .filter(|&i| {
            let others: Vec<f64> = reps
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, v)| *v)
                .collect();
            is_stall(reps[i], &others, higher_is_better)
        })
        .collect()
}

/// Whether `v` is a stall against `others` (at least two of them).
pub(crate) fn is_stall(v: f64, others: &[f64], higher_is_better: bool) -> bool {
    if others.len() < 2 {
        return false;
    }
    let med = super::median(others);
    if med.is_nan() || med <= 0.0 || !v.is_finite() {
        return false;
    }
    if higher_is_better {
        v * STALL_FACTOR < med
    } else {
        v > med * STALL_FACTOR
    }
}

/// One model's per-round values of a figure at a point.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub(crate) label: String,
    /// Per round, in round order.
    pub(crate) rounds: Vec<f64>,
}

/// A decided crossover along a sweep: `winner` is decided worse than `loser` at `before` and
/// decided better at `after` (each a paired claim, corrected over the pairs at its point).
#[derive(Clone, Debug, PartialEq)]
pub struct Crossover {
    pub(crate) winner: String,
    pub(crate) loser: String,
    pub(crate) before: f64,
    pub(crate) after: f64,
}

/// The decided crossovers of series along a sweep: `points` holds, per sweep value (in
/// order), the entries there. Pairs not decided at both neighbouring points are counted in
/// the second value (shown, not claimed).
pub(crate) fn crossovers(
    points: &[(f64, Vec<Entry>)],
    higher_is_better: bool,
    level: impl Into<Level>,
) -> (Vec<Crossover>, usize) {
    let level = level.into();
    // Per point: every pair's claim, corrected over the pairs of that point.
    let claims: Vec<Vec<(String, String, Claim)>> = points
        .iter()
        .map(|(_, es)| {
            let mut v: Vec<(String, String, Claim)> = Vec::new();
            for (i, a) in es.iter().enumerate() {
                for b in &es[i + 1..] {
                    if let Some(c) = pair(&a.rounds, &b.rounds, higher_is_better, level) {
                        v.push((a.label.clone(), b.label.clone(), c));
                    }
                }
            }
            let mut fam: Vec<&mut Claim> = v.iter_mut().map(|x| &mut x.2).collect();
            correct(&mut fam, level.alpha);
            v
        })
        .collect();
    let find = |k: usize, a: &str, b: &str| {
        claims[k]
            .iter()
            .find(|(x, y, _)| x == a && y == b)
            .map(|(_, _, c)| c.clone())
            .or_else(|| {
                claims[k]
                    .iter()
                    .find(|(x, y, _)| x == b && y == a)
                    .map(|(_, _, c)| flip(c))
            })
    };
    let (mut out, mut undecided) = (Vec::new(), 0);
    for k in 1..points.len() {
        for (a, b, after) in &claims[k] {
            let Some(before) = find(k - 1, a, b) else {
                continue;
            };
            // The raw medians' order changed: a crossing to judge.
            let sign = |c: &Claim| c.times > 1.0;
            if sign(&before) == sign(after) {
                continue;
            }
            if before.decided() && after.decided() {
                let (winner, loser) = if after.outcome == Outcome::Behind {
                    (a, b)
                } else {
                    (b, a)
                };
                out.push(Crossover {
                    winner: winner.clone(),
                    loser: loser.clone(),
                    before: points[k - 1].0,
                    after: points[k].0,
                });
            } else {
                undecided += 1;
            }
        }
    }
    (out, undecided)
}

/// The same claim seen from the other side (A against B).
pub(crate) fn flip(c: &Claim) -> Claim {
    Claim {
        outcome: match c.outcome {
            Outcome::Behind => Outcome::Ahead,
            Outcome::Ahead => Outcome::Behind,
            o => o,
        },
        times: 1.0 / c.times,
        ci: (1.0 / c.ci.1, 1.0 / c.ci.0),
        ..c.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded pseudo-random stream for synthetic rounds.
    struct Rng(fastrand::Rng);
    fn seeded(seed: u64) -> Rng {
        Rng(fastrand::Rng::with_seed(seed))
    }
    impl Rng {
        fn next(&mut self) -> f64 {
            self.0.f64()
        }
        /// Roughly normal, mean 0, sd 1 (sum of 12 uniforms).
        fn normal(&mut self) -> f64 {
            (0..12).map(|_| self.next()).sum::<f64>() - 6.0
        }
    }

    /// `n` rounds of a figure near `base` with `noise` relative sd per repetition and a
    /// per-round machine factor `drift[k]` shared by every model of the round.
    fn rounds(rng: &mut Rng, base: f64, noise: f64, drift: &[f64]) -> Vec<f64> {
        drift
            .iter()
            .map(|d| base * d * (1.0 + noise * rng.normal()))
            .collect()
    }

    #[test]
    fn smallest_p_and_rounds_needed() {
        assert!((min_p(5) - 0.0625).abs() < 1e-12);
        assert!((min_p(6) - 0.03125).abs() < 1e-12);
        assert_eq!(rounds_needed(0.05), 6);
        // Five rounds all one way: 0.0625, never a claim.
        assert!((signed_rank_p(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap() - 0.0625).abs() < 1e-12);
        let c = from_log_diffs(&[0.5, 0.6, 0.7, 0.8, 0.9], ALPHA).unwrap();
        assert_eq!(c.outcome, Outcome::Undecided);
        assert_eq!(c.invisible_pct(), f64::INFINITY);
        let c = from_log_diffs(&[0.5, 0.6, 0.7, 0.8, 0.9, 0.55], ALPHA).unwrap();
        assert_eq!(c.outcome, Outcome::Behind);
    }

    #[test]
    fn signed_rank_known_values() {
        // n = 8, W+ = 3 (ranks 1 and 2 positive): P(W+ <= 3) = 5 / 256, two-sided 0.039.
        let d = [1.0, 2.0, -3.0, -4.0, -5.0, -6.0, -7.0, -8.0];
        let p = signed_rank_p(&d).unwrap();
        assert!((p - 10.0 / 256.0).abs() < 1e-12, "{p}");
        // Symmetric data: p = 1.
        let p = signed_rank_p(&[1.0, -1.5, 2.0, -2.5]).unwrap();
        assert!(p > 0.6, "{p}");
    }

    #[test]
    fn the_interval_excludes_zero_exactly_when_the_test_rejects() {
        let mut rng = seeded(7);
        for _ in 0..300 {
            let n = 6 + (rng.next() * 10.0) as usize;
            let shift = rng.next() * 0.2 - 0.1;
            let d: Vec<f64> = (0..n).map(|_| shift + 0.05 * rng.normal()).collect();
            let p = signed_rank_p(&d).unwrap();
            let (_, (lo, hi)) = hodges_lehmann(&d, ALPHA).unwrap();
            assert_eq!(p < ALPHA, lo > 0.0 || hi < 0.0, "n={n} p={p} [{lo}, {hi}]");
        }
    }

    #[test]
    fn drift_shared_by_a_round_cancels() {
        // The machine swings between two states (1.0 and 1.45) from round to round; two
        // models, one 10% more costly, are each measured once per round.
        let mut rng = seeded(11);
        let drift: Vec<f64> = (0..8)
            .map(|k| if k % 3 == 0 { 1.45 } else { 1.0 })
            .collect();
        let a = rounds(&mut rng, 1000.0, 0.01, &drift);
        let b = rounds(&mut rng, 1100.0, 0.01, &drift);
        let c = pair(&a, &b, false, ALPHA).unwrap();
        assert_eq!(c.outcome, Outcome::Behind, "{c:?}");
        assert!((c.times - 1.1).abs() < 0.03, "{c:?}");
        assert!(c.ci.0 > 1.05 && c.ci.1 < 1.15, "{c:?}");
        // The same figures unpaired would not separate: the drift dwarfs the effect.
        assert!(super::super::rank::mann_whitney(&a, &b).unwrap() > ALPHA);
    }

    #[test]
    fn a_known_ten_percent_effect_is_found() {
        let mut rng = seeded(3);
        let mut found = 0;
        for _ in 0..100 {
            let drift: Vec<f64> = (0..8).map(|_| 1.0 + 0.2 * rng.next()).collect();
            let a = rounds(&mut rng, 50_000.0, 0.02, &drift);
            let b = rounds(&mut rng, 45_000.0, 0.02, &drift);
            let c = pair(&a, &b, true, ALPHA).unwrap();
            if c.outcome == Outcome::Behind {
                found += 1;
                assert!(c.ci.0 < 1.111 * 1.04 && c.ci.1 > 1.111 / 1.04, "{c:?}");
            }
        }
        assert!(found >= 95, "found {found} of 100");
    }

    #[test]
    fn an_a_a_pair_makes_no_claim_and_a_tight_one_is_equivalent() {
        let mut rng = seeded(5);
        let mut claims = 0;
        let mut equivalent = 0;
        for _ in 0..200 {
            let drift: Vec<f64> = (0..8).map(|_| 1.0 + 0.5 * rng.next()).collect();
            let a = rounds(&mut rng, 1000.0, 0.01, &drift);
            let b = rounds(&mut rng, 1000.0, 0.01, &drift);
            let c = pair(&a, &b, false, ALPHA).unwrap();
            claims += c.decided() as usize;
            equivalent += (c.outcome == Outcome::Equivalent) as usize;
        }
        // alpha 0.05 over 200 independent A/A pairs: about 10 false claims at most by chance;
        // none are expected to be decided after the margin (1% noise: always equivalent).
        assert_eq!(claims, 0, "{claims}");
        assert!(equivalent >= 190, "{equivalent}");
    }

    #[test]
    fn too_few_rounds_are_never_equivalent() {
        // Two identical rounds: the interval [0, 0] is only a 50% one.
        let c = from_log_diffs(&[0.0, 0.0], ALPHA).unwrap();
        assert_eq!(c.outcome, Outcome::Undecided);
        let c = from_log_diffs(&[0.01, -0.01, 0.0, 0.005, -0.005, 0.002], ALPHA).unwrap();
        assert_eq!(c.outcome, Outcome::Equivalent);
    }

    #[test]
    fn a_stall_is_named() {
        let ops = [40007.0, 39692.0, 202.0, 39755.0, 2000.0, 40100.0];
        assert_eq!(stalls(&ops, true), vec![2, 4]);
        assert!(stalls(&[10.0, 11.0, 9.5, 10.2], true).is_empty());
        // Lower is better: a repetition at 3x the others' CPU per op.
        assert_eq!(stalls(&[7.0, 7.2, 21.0, 6.9], false), vec![2]);
    }

    #[test]
    fn the_correction_keeps_false_claims_under_their_level() {
        // A thousand null cells of 8 paired rounds: the false discovery rate after BH stays
        // under q, and with no true effect at all BH rarely finds anything.
        let mut rng = seeded(17);
        let ps: Vec<f64> = (0..1000)
            .map(|_| {
                let d: Vec<f64> = (0..8).map(|_| 0.05 * rng.normal()).collect();
                signed_rank_p(&d).unwrap()
            })
            .collect();
        let raw = ps.iter().filter(|p| **p < ALPHA).count();
        assert!(raw > 10, "uncorrected tests do find noise: {raw}");
        let (found, adj) = benjamini_hochberg(&ps, ALPHA);
        assert_eq!(found.iter().filter(|x| **x).count(), 0);
        assert!(adj.iter().all(|a| (0.0..=1.0).contains(a)));
        // With 100 true effects among 900 nulls, the share of nulls among discoveries stays
        // under q.
        let mut ps2: Vec<(f64, bool)> = ps[..900].iter().map(|p| (*p, false)).collect();
        for _ in 0..100 {
            let d: Vec<f64> = (0..10).map(|_| 0.3 + 0.05 * rng.normal()).collect();
            ps2.push((signed_rank_p(&d).unwrap(), true));
        }
        let (found, _) = benjamini_hochberg(&ps2.iter().map(|x| x.0).collect::<Vec<_>>(), 0.05);
        let disc: Vec<bool> = ps2
            .iter()
            .zip(&found)
            .filter(|(_, f)| **f)
            .map(|(x, _)| x.1)
            .collect();
        let false_share = disc.iter().filter(|t| !**t).count() as f64 / disc.len() as f64;
        assert!(
            disc.len() >= 95 && false_share <= 0.05,
            "{} {false_share}",
            disc.len()
        );
        // A point's family: three comparisons, one strong.
        let mut a = from_log_diffs(&[0.3, 0.31, 0.29, 0.33, 0.3, 0.32, 0.28, 0.3], ALPHA).unwrap();
        let mut b = from_log_diffs(&[0.1, -0.2, 0.15, -0.1, 0.2, -0.05, 0.1, 0.0], ALPHA).unwrap();
        let mut c = from_log_diffs(&[0.02, -0.3, 0.4, -0.1, 0.3, -0.25, 0.1, 0.2], ALPHA).unwrap();
        correct(&mut [&mut a, &mut b, &mut c], ALPHA);
        assert_eq!(a.outcome, Outcome::Behind);
        assert!(a.p_adj.unwrap() >= a.p.unwrap() * 2.9);
        assert_eq!(b.outcome, Outcome::Undecided);
        assert_eq!(c.outcome, Outcome::Undecided);
    }

    fn entry(label: &str, v: &[f64]) -> Entry {
        Entry {
            label: label.into(),
            rounds: v.to_vec(),
        }
    }

    #[test]
    fn a_crossover_is_claimed_only_when_decided_at_both_points() {
        let pt = |x: f64, a: &[f64], b: &[f64]| (x, vec![entry("a", a), entry("b", b)]);
        let pts = vec![
            pt(
                1.0,
                &[10.0, 10.5, 10.2, 10.1, 10.4, 10.3],
                &[20.0, 21.0, 20.4, 20.2, 20.8, 20.6],
            ),
            pt(
                8.0,
                &[30.0, 31.0, 30.5, 30.2, 30.8, 30.4],
                &[10.0, 10.5, 10.2, 10.1, 10.4, 10.3],
            ),
            // Crosses back within noise: counted, not claimed.
            pt(
                64.0,
                &[10.0, 12.0, 9.0, 11.0, 10.0, 12.0],
                &[12.0, 9.0, 13.0, 10.0, 12.5, 11.0],
            ),
        ];
        let (xs, undecided) = crossovers(&pts, false, ALPHA);
        assert_eq!(xs.len(), 1, "{xs:?}");
        assert_eq!((xs[0].winner.as_str(), xs[0].loser.as_str()), ("b", "a"));
        assert_eq!((xs[0].before, xs[0].after), (1.0, 8.0));
        assert_eq!(undecided, 1);
    }
}
