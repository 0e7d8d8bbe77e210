//! Exporters: results in, bytes out. Tables are built once (`table.rs`) and rendered by each
//! dialect; no exporter computes a figure.

pub mod charts;
mod csv;
pub mod html;
mod json;
pub mod load;
pub mod markdown;
pub mod table;
mod term;
pub mod verdict;

use crate::results::RunResults;

/// Output formats. Adding one is a variant here and one arm in `exporter`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    Csv,
    Json,
    Html,
}

/// A table as aligned terminal text (for subcommands that print their own tables).
pub fn term_table(t: &table::Table) -> String {
    term::render_table(t)
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
            Format::Html => &html::Html,
        }
    }
}
