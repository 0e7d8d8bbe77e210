//! ringside: a native benchmark lab that puts Linux's I/O models side by side.
//!
//! Layers (each a pure function of the one before, see `docs/ARCHITECTURE.md`):
//! `measure` -> samples, `stats` -> case results, `results` (schema + atomic store),
//! `export`/`ui` (tables, JSON, CSV, Markdown, progress). The I/O models live in `io`,
//! the workloads that drive them in `workload`, and the two registries in `registry`.
//! The top-level modules form layers without circles (checked by `tests/suite/module_graph.rs`).

pub mod analysis;
pub mod app;
pub(crate) mod avail;
pub mod child;
pub mod cli;
pub mod crosscheck;
pub mod env;
pub mod error;
pub mod export;
pub mod io;
pub mod load;
pub mod measure;
pub mod model;
pub mod peer;
pub mod plan;
pub mod profile;
pub mod proto;
pub mod registry;
pub(crate) mod remote;
pub mod results;
pub mod runner;
pub(crate) mod shutdown;
pub mod stats;
pub(crate) mod ui;
pub mod workload;
