//! Statistics: pure functions from samples to summaries. Medians and MAD across repetitions
//! (each repetition a separate run), percentiles over all samples of all repetitions.

pub(crate) mod bootstrap;
pub(crate) mod claims;
pub(crate) mod equal_load;
pub(crate) mod findings;
pub(crate) mod rank;
pub(crate) mod scaling;
pub(crate) mod sequential;
pub(crate) mod signed_rank;
pub(crate) mod stability;
pub(crate) mod summary;
pub(crate) mod wrk;

pub(crate) use summary::{mad, median, summarize};
