//! Errors: `InputError` for what the user typed (exit 2, naming the bad value and the valid
//! ones), `CaseError` at the workload boundary (a cell that is unavailable, not applicable, or
//! failed; the run goes on).

use std::fmt;

#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("unknown suite or workload '{given}'; valid: {valid}")]
    UnknownSelection { given: String, valid: String },
    #[error("unknown model '{given}'; valid models: {valid}")]
    UnknownModel { given: String, valid: String },
    #[error("{flag} '{given}': {why}")]
    BadCpus {
        flag: &'static str,
        given: String,
        why: String,
    },
    /// A CPU plan refused (`--server-cpus`, `--load-cpus`).
    #[error("{0}")]
    BadPlan(String),
    #[error("--runs {0}: must be between 1 and 1000")]
    BadRuns(u64),
    #[error("{flag} {given}: {valid}")]
    BadValue {
        flag: &'static str,
        given: String,
        valid: String,
    },
    #[error("output directory '{dir}' cannot be written: {why}")]
    OutputDir { dir: String, why: String },
    #[error("storage directory '{dir}' cannot be used: {why}")]
    StorageDir { dir: String, why: String },
    #[error(
        "--contender '{given}': {why}; expected NAME='command with {{port}}', NAME made of \
         a-z, 0-9 and '-'"
    )]
    BadContender { given: String, why: String },
    #[error("--addr '{given}': {why}")]
    BadAddr { given: String, why: String },
    #[error("model '{given}' has no built-in TCP server; valid models: {valid}")]
    NotAServer { given: String, valid: String },
}

/// Why a case produced no measurement.
#[derive(Debug)]
pub enum CaseError {
    /// This machine lacks something the case needs; the sentence says what.
    Unavailable(String),
    /// The model does not take part in this workload (a design fact, not a machine fact).
    NotApplicable(String),
    /// It should have worked and did not.
    Failed(anyhow::Error),
    /// The repetition completed nothing in its measured window while its server still ran:
    /// a stall at least as long as the window. The runner runs the repetition once more
    /// (recorded as a re-run) before it fails the cell with this.
    Stalled(anyhow::Error),
}

impl CaseError {
    pub(crate) fn unavailable(why: impl Into<String>) -> Self {
        CaseError::Unavailable(why.into())
    }
    pub(crate) fn not_applicable(why: impl Into<String>) -> Self {
        CaseError::NotApplicable(why.into())
    }
}

impl fmt::Display for CaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaseError::Unavailable(r) => write!(f, "unavailable: {r}"),
            CaseError::NotApplicable(r) => write!(f, "not applicable: {r}"),
            CaseError::Failed(e) | CaseError::Stalled(e) => write!(f, "failed: {e:#}"),
        }
    }
}

impl std::error::Error for CaseError {}

impl From<std::io::Error> for CaseError {
    fn from(e: std::io::Error) -> Self {
        CaseError::Failed(e.into())
    }
}

impl From<anyhow::Error> for CaseError {
    fn from(e: anyhow::Error) -> Self {
        CaseError::Failed(e)
    }
}
