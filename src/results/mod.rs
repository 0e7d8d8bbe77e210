//! Results: the serde schema (`schema_version` 1) and its atomic storage. `report` and
//! `compare` work from these files alone.

pub(crate) mod check;
pub mod explain;
pub(crate) mod facts;
pub(crate) mod params;
pub(crate) mod rates;
pub mod schema;
pub(crate) mod spread;
pub mod store;

pub use params::Params;
pub use schema::{
    json_schema, Answer, CaseResult, EqualLoadAt, RunResults, Status, Warning, EQUAL_LOAD_WORD,
    SCHEMA_ID, SCHEMA_VERSION,
};
pub(crate) use spread::Spread;
