//! `Params`: a case's named parameters, as the results record them.

use crate::error::CaseError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Named parameters, as recorded in the results ("msg_bytes": 64).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Params(pub BTreeMap<String, serde_json::Value>);

impl Params {
    pub fn new() -> Params {
        Params::default()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn with(mut self, key: &str, v: impl Into<serde_json::Value>) -> Params {
        self.0.insert(key.to_string(), v.into());
        self
    }
    /// A numeric parameter the workload itself set; missing means a programming error, which
    /// fails the case rather than the run.
    pub fn u64(&self, key: &str) -> Result<u64, CaseError> {
        self.0
            .get(key)
            .and_then(|v| v.as_u64())
            .ok_or_else(|| CaseError::Failed(anyhow::anyhow!("parameter '{key}' missing")))
    }
}
