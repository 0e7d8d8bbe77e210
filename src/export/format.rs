//! The table every dialect renders and the number formats every view shares, kept apart from
//! `table` (which builds the tables, the ladder's included) so that `ladder` does not depend on
//! it.

/// A table any dialect can render. Cells are already formatted.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub title: String,
    /// What one op is, and other context.
    pub(crate) note: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Unavailable, failed or not-applicable cells, with their reasons.
    pub(crate) footnotes: Vec<String>,
}

/// Nanoseconds, human-scaled: "512 ns", "12.3 us", "4.10 ms" (milliseconds from 1 ms, so a
/// column never holds "4251.6 us" beside "10.60 ms").
pub(crate) fn fmt_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "-".into();
    }
    if ns < 10_000.0 {
        format!("{ns:.0} ns")
    } else if ns < 999_950.0 {
        format!("{:.1} us", ns / 1e3)
    } else {
        format!("{:.2} ms", ns / 1e6)
    }
}

/// What the p99 a claim states is, beside the figure: the median of the repetitions' p99s
/// (`CaseFigures::p99_typical`), apart from the pooled p99 over every repetition's samples.
pub(crate) const P99_TYPICAL: &str = "median of runs";

/// A spike among a cell's repetitions (`CaseFigures::p99_spike`), named beside its figures:
/// "one run's p99 was 202 ms", "2 of 6 runs' p99s up to 202 ms".
pub(crate) fn spike_text(top: f64, n: usize, of: usize) -> String {
    if n == 1 {
        format!("one run's p99 was {}", fmt_ns(top))
    } else {
        format!("{n} of {of} runs' p99s up to {}", fmt_ns(top))
    }
}

/// Rates: "1.95 M", "812 k", "930".
pub(crate) fn fmt_rate(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else if x >= 1e4 {
        format!("{:.0} k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// Bytes, binary units, signed (a change can be negative): "-312 B", "5.21 KiB", "1.50 MiB".
pub(crate) fn fmt_bytes(b: f64) -> String {
    if !b.is_finite() {
        return "-".into();
    }
    let units = ["B", "KiB", "MiB", "GiB"];
    let mut v = b.abs();
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    let sign = if b < 0.0 && v >= 0.5 { "-" } else { "" };
    if i == 0 {
        format!("{sign}{v:.0} {}", units[i])
    } else {
        format!("{sign}{v:.2} {}", units[i])
    }
}

/// Small ratios such as syscalls per op: enough decimals to show 1/64.
pub(crate) fn fmt_ratio(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.abs() < 0.1 {
        format!("{x:.4}")
    } else {
        format!("{x:.2}")
    }
}
