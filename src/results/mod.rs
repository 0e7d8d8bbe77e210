//! Results: the serde schema (`schema_version` 1) and its atomic storage. `report` and
//! `compare` work from these files alone.

pub mod schema;
pub mod store;

pub use schema::{CaseResult, RunResults, Status, Warning, SCHEMA_VERSION};
