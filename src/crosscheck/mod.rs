//! Cross-checks: peer tools run on the same machine and inputs, their own figures stored as
//! rows of their own beside ringside's (model `fio:<engine>`), never mixed into ours.

pub(crate) mod fio;
pub(crate) mod perf;
pub mod wrk;
