//! JSON: the results themselves, pretty-printed.

use super::Exporter;
use crate::analysis::Analysis;
use crate::results::RunResults;

pub(crate) struct Json;

impl Exporter for Json {
    fn render(&self, run: &RunResults, _: &Analysis) -> anyhow::Result<Vec<u8>> {
        let mut v = serde_json::to_vec_pretty(run)?;
        v.push(b'\n');
        Ok(v)
    }
}
