//! The run-to-run noise of each group of tests and of each model, and the decisive p with
//! it.

use super::*;

/// Every decisive test's (log change, within-run variance), grouped by `key` in first-seen
/// order, each group centred on its median change: a change every cell of a group shares is
/// not noise (the machine's, judged against the point's other models or the probes; or one
/// model's real change, which shifts every other model's relative value at its points a
/// little, as it is in their reference).
pub(super) fn centred_groups<K: Eq + std::hash::Hash + Clone>(
    cells: &[CellChange],
    key: impl Fn(&CellChange, &FigureChange) -> K,
) -> Vec<(K, Vec<(f64, f64)>)> {
    let mut groups: Vec<(K, Vec<(f64, f64)>)> = Vec::new();
    let mut index: std::collections::HashMap<K, usize> = Default::default();
    for c in cells {
        for f in c.figures.iter().filter(|f| f.test.p_rounds.is_some()) {
            let k = key(c, f);
            let at = *index.entry(k.clone()).or_insert_with(|| {
                groups.push((k, Vec::new()));
                groups.len() - 1
            });
            groups[at].1.push((f.test.log_change, f.test.within_var));
        }
    }
    for (_, v) in groups.iter_mut() {
        let mid = median(&v.iter().map(|x| x.0).collect::<Vec<_>>());
        v.iter_mut().for_each(|x| x.0 -= mid);
    }
    groups
}

/// The run-to-run noise of every (workload, figure, relative or not) group of tests, from
/// their changes: per group with at least [`crate::stats::stability::NOISE_MIN_CELLS`] tests, else
/// over every workload's tests of that figure, else none.
pub(super) fn noise_of(cells: &[CellChange]) -> Vec<RunNoise> {
    let groups = centred_groups(cells, |c, f| {
        (c.workload.clone(), f.figure, f.test.relative)
    });
    // Every workload's tests of a figure together, for groups with too few of their own.
    let mut pooled: std::collections::HashMap<
        (Figure, bool),
        Option<crate::stats::stability::Noise>,
    > = Default::default();
    groups
        .iter()
        .map(|((w, fig, rel), v)| {
            let own = crate::stats::stability::run_noise(v);
            let tau = own.or_else(|| {
                *pooled.entry((*fig, *rel)).or_insert_with(|| {
                    let all: Vec<(f64, f64)> = groups
                        .iter()
                        .filter(|g| g.0 .1 == *fig && g.0 .2 == *rel)
                        .flat_map(|g| g.1.iter().copied())
                        .collect();
                    crate::stats::stability::run_noise(&all)
                })
            });
            RunNoise {
                workload: w.clone(),
                figure: *fig,
                relative: *rel,
                tests: v.len(),
                pooled: own.is_none(),
                tau,
                within_var: median(&v.iter().map(|x| x.1).collect::<Vec<_>>()),
            }
        })
        .collect()
}

/// One model's own run-to-run noise in a workload's figure: how far its changes scatter
/// over its points around their median (`tau`, log sd per run). A real change of a model
/// moves its points together; two runs that each caught the model in another state move them
/// apart, in both directions. Estimated from at least [`MODEL_NOISE_MIN`] points: the median
/// of the squared deviations against chi-square(1)'s, less the typical within-run variance
/// (with three points one deviation is 0, so one point's change alone does not raise it).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ModelNoise {
    pub(crate) workload: String,
    pub(crate) label: String,
    pub(crate) figure: Figure,
    pub(crate) relative: bool,
    pub(crate) points: usize,
    pub(crate) tau: f64,
}

/// The fewest points of a model from which [`ModelNoise`] is estimated.
pub(crate) const MODEL_NOISE_MIN: usize = 3;

/// Every model's own noise per (workload, figure), where it has enough points (0 when its
/// changes agree).
pub(super) fn model_noise_of(cells: &[CellChange]) -> Vec<ModelNoise> {
    centred_groups(cells, |c, f| {
        (
            c.workload.clone(),
            c.label.clone(),
            f.figure,
            f.test.relative,
        )
    })
    .into_iter()
    .filter(|g| g.1.len() >= MODEL_NOISE_MIN)
    .map(|((workload, label, figure, relative), v)| {
        let sq: Vec<f64> = v.iter().map(|x| x.0 * x.0).collect();
        let within = median(&v.iter().map(|x| x.1).collect::<Vec<_>>());
        // 0.4549: the median of chi-square with one degree of freedom.
        let t2 = ((median(&sq) / 0.454_936_4 - within) / 2.0).max(0.0);
        ModelNoise {
            workload,
            label,
            figure,
            relative,
            points: v.len(),
            tau: t2.sqrt(),
        }
    })
    .collect()
}

/// The run-to-run noise of one group of tests (a workload's figure, relative or not).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RunNoise {
    pub(crate) workload: String,
    pub(crate) figure: Figure,
    pub(crate) relative: bool,
    pub(crate) tests: usize,
    /// Estimated over every workload's tests of the figure (this one had too few).
    pub(crate) pooled: bool,
    /// Log sd per run (the estimate, and the 95% upper bound tests are judged with);
    /// `None`: too few tests anywhere to estimate it.
    pub(crate) tau: Option<crate::stats::stability::Noise>,
    /// The median within-run variance of the group's changes.
    pub(crate) within_var: f64,
}

impl RunNoise {
    /// The run-to-run noise per run, percent: (estimate, 95% upper bound).
    pub(crate) fn pct(&self) -> Option<(f64, f64)> {
        let p = |t: f64| (t.exp() - 1.0) * 100.0;
        self.tau.map(|t| (p(t.estimate), p(t.upper)))
    }

    /// The smallest change a lone test of this group could tell from noise at the 5% level
    /// (two-sided, before any correction): 1.96 standard deviations of a change between two
    /// single runs, with the noise at its upper bound, percent.
    pub(crate) fn invisible_pct(&self) -> Option<f64> {
        let t = self.tau?.upper;
        Some(((1.96 * (2.0 * t * t + self.within_var).sqrt()).exp() - 1.0) * 100.0)
    }
}

/// The run-to-run noise of each workload's figures and of each model's, then each decisive
/// test's p with the larger.
pub(super) fn add_run_noise(cmp: &mut Comparison) {
    cmp.noise = noise_of(&cmp.cells);
    cmp.model_noise = model_noise_of(&cmp.cells);
    let model_tau: HashMap<(&str, &str, Figure, bool), f64> = cmp
        .model_noise
        .iter()
        .map(|m| {
            (
                (m.workload.as_str(), m.label.as_str(), m.figure, m.relative),
                m.tau,
            )
        })
        .collect();
    for c in &mut cmp.cells {
        let w = c.workload.clone();
        for f in &mut c.figures {
            let t = &mut f.test;
            let Some(p_rounds) = t.p_rounds else {
                continue;
            };
            let group = cmp
                .noise
                .iter()
                .find(|n| n.workload == w && n.figure == f.figure && n.relative == t.relative)
                .and_then(|n| n.tau)
                .map(|t| t.upper);
            let model = model_tau
                .get(&(w.as_str(), c.label.as_str(), f.figure, t.relative))
                .copied();
            t.run_noise = match (group, model) {
                (Some(g), Some(m)) => Some(g.max(m)),
                (g, m) => g.or(m),
            };
            let var = t.within_var + 2.0 * t.run_noise.unwrap_or(0.0).powi(2);
            t.p_runs = Some(if var > 0.0 {
                (2.0 * normal_sf(t.log_change.abs() / var.sqrt())).min(1.0)
            } else if t.log_change == 0.0 {
                1.0
            } else {
                0.0
            });
            t.p = Some(p_rounds.max(t.p_runs.unwrap_or(0.0)));
        }
    }
}
