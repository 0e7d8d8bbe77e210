//! Exporters: results in, bytes out. Tables are built once (`table.rs`) and rendered by each
//! dialect; no exporter computes a figure.

mod csv;
mod json;
mod markdown;
pub mod table;
mod term;

use crate::results::RunResults;

/// Output formats. Adding one is a variant here and one arm in `exporter`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    Csv,
    Json,
}

pub trait Exporter {
    fn render(&self, run: &RunResults) -> anyhow::Result<Vec<u8>>;
}

impl Format {
    pub fn exporter(self) -> &'static dyn Exporter {
        match self {
            Format::Table => &term::Term,
            Format::Markdown => &markdown::Markdown,
            Format::Csv => &csv::Csv,
            Format::Json => &json::Json,
        }
    }
}
