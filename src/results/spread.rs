//! `Spread`: the median, range and MAD of a per-repetition figure, as the results record it
//! (`stats` computes it; the schema holds it).

use serde::{Deserialize, Serialize};

/// Median of a slice (mean of the middle two for even lengths); NaN for an empty slice.
pub(crate) fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Median absolute deviation from the median (unscaled).
pub(crate) fn mad(xs: &[f64]) -> f64 {
    let m = median(xs);
    let dev: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    median(&dev)
}

/// Spread of a per-repetition figure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub(crate) mad: f64,
}

impl Spread {
    pub(crate) fn of(xs: &[f64]) -> Spread {
        Spread {
            median: median(xs),
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            mad: mad(xs),
        }
    }
    /// MAD relative to the median (0 when the median is 0).
    pub(crate) fn rel_mad(&self) -> f64 {
        if self.median == 0.0 {
            0.0
        } else {
            self.mad / self.median.abs()
        }
    }
}
