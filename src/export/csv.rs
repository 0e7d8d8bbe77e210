//! CSV: one row per case (RFC 4180 quoting).

use super::rows::case_rows;
use super::Exporter;
use crate::analysis::Analysis;
use crate::results::RunResults;

pub(crate) struct Csv;

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl Exporter for Csv {
    fn render(&self, run: &RunResults, _: &Analysis) -> anyhow::Result<Vec<u8>> {
        let t = case_rows(run);
        let mut out = String::new();
        for r in std::iter::once(&t.header).chain(&t.rows) {
            out += &r.iter().map(|c| field(c)).collect::<Vec<_>>().join(",");
            out += "\r\n";
        }
        Ok(out.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn quoting() {
        assert_eq!(super::field("a,b"), "\"a,b\"");
        assert_eq!(super::field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(super::field("plain"), "plain");
    }
}
