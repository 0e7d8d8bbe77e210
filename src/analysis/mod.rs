//! What the run's cells support, decided once and typed: which cells form a point, what a
//! workload is ranked by (its basis), each point's ranking and the run's answer rate. The
//! runner reads it while measuring (a point's undecided claims decide whether it adds a round)
//! and the exporters word what it decides; what it holds is decided nowhere else. Still to
//! move here (issue 44): the verdicts' own grouping of sweep points (`export::verdict`).
//!
//! It sits between the numbers (`stats`: summaries, rank tests, claims) and their readers
//! (`runner`, `export`), and uses neither of those (`tests/suite/module_graph.rs`).

pub mod basis;
pub(crate) mod cells;

pub use basis::past_capacity_cells;
pub(crate) use basis::{answer, basis, higher_is_better, highlighted, points, rank_point};
pub(crate) use basis::{Basis, NotRanked, On};
