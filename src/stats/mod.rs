//! Statistics: pure functions from samples to summaries. Medians and MAD across repetitions
//! (each repetition a separate run), percentiles over all samples of all repetitions.

pub mod bootstrap;
pub mod claims;
pub mod compare;
pub mod equal_load;
pub mod explain;
pub mod findings;
pub mod ladder;
pub mod rank;
pub mod scaling;
pub mod stability;
pub mod summary;
pub mod wrk;

pub use summary::{mad, median, summarize, Spread};
