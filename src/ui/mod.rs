//! What the user sees while measuring: observers of the runner. They never compute a figure.

mod progress;

pub(crate) use progress::Progress;

use crate::plan::Case;
use crate::results::CaseResult;

/// Runner events, each with a no-op default.
pub(crate) trait Observer {
    fn run_started(&self, _cases: usize) {}
    fn case_started(&self, _index: usize, _case: &Case) {}
    fn case_finished(&self, _index: usize, _result: &CaseResult) {}
}

/// Observes nothing (`--quiet`, tests).
pub(crate) struct Silent;
impl Observer for Silent {}
