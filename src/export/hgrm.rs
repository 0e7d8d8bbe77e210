//! One cell's latency distribution in HdrHistogram's percentile-distribution text (the
//! `.hgrm` that Java's `outputPercentileDistribution`, wrk2 and HdrHistogram's plotter use),
//! from the histogram results.json keeps for the cell: values in microseconds, five
//! percentile ticks per half distance, the footer of mean, deviation, max, count and buckets.
//! Nothing is computed but the histogram's own iteration.
//!
//! Beside it, [`timeline`]: the cell's repetitions over time (`runs_timeline`) as CSV.

use crate::measure::Hist;
use crate::results::schema::CaseResult;
use std::fmt::Write;

/// ns per unit of the output: microseconds.
const SCALE: f64 = 1000.0;
/// Percentile ticks per half distance to 100%, as HdrHistogram's default.
const TICKS: u32 = 5;

/// `c`'s repetitions over time as CSV: a row per repetition and interval, with the interval's
/// start and length, its ops, their rate, and their mean and longest latency (us; empty where
/// no op completed). An error where the cell recorded none.
pub(crate) fn timeline(c: &CaseResult) -> Result<String, String> {
    let f = c
        .figures
        .as_ref()
        .ok_or_else(|| format!("'{}' has no figures: it is {}", c.key(), c.status))?;
    if f.runs_timeline.is_empty() {
        return Err(format!(
            "'{}' recorded no timeline (only the network suites' loads record one, and \
             files written before they did have none)",
            c.key()
        ));
    }
    let mut out = String::from(
        "repetition,start_s,length_s,ops,ops_per_sec,mean_latency_us,max_latency_us\n",
    );
    for (r, t) in f.runs_timeline.iter().enumerate() {
        let rates = t.ops_per_sec();
        let means = t.mean_ns();
        for (i, len) in t.lengths_ns().enumerate() {
            let us = |v: Option<f64>| v.map(|v| format!("{:.3}", v / SCALE)).unwrap_or_default();
            let _ = writeln!(
                out,
                "{},{:.3},{:.3},{},{:.1},{},{}",
                r + 1,
                i as f64 * t.step_ns as f64 / 1e9,
                len as f64 / 1e9,
                t.ops[i],
                rates[i],
                us(means[i]),
                us((t.ops[i] > 0).then_some(t.latency_max_ns[i] as f64)),
            );
        }
    }
    Ok(out)
}

/// The `.hgrm` text of `c`'s latency histogram; an error where the cell has none.
pub(crate) fn render(c: &CaseResult) -> Result<String, String> {
    let f = c
        .figures
        .as_ref()
        .ok_or_else(|| format!("'{}' has no figures: it is {}", c.key(), c.status))?;
    let hist = Hist::from_base64(&f.histogram)?;
    if hist.is_empty() {
        return Err(format!(
            "'{}' kept no latency histogram (a file written without one)",
            c.key()
        ));
    }
    let h = hist.inner();
    let sig = h.sigfig() as usize;
    let mut out = format!(
        "{:>12} {:>14} {:>10} {:>14}\n\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    let mut total = 0u64;
    for v in h.iter_quantiles(TICKS) {
        total += v.count_since_last_iteration();
        let value = v.value_iterated_to() as f64 / SCALE;
        let q = v.quantile_iterated_to();
        if q < 1.0 {
            let _ = writeln!(
                out,
                "{value:12.sig$} {q:2.12} {total:10} {:14.2}",
                1.0 / (1.0 - q)
            );
        } else {
            let _ = writeln!(out, "{value:12.sig$} {q:2.12} {total:10}");
        }
    }
    let sub_buckets = (2 * 10u64.pow(sig as u32)).next_power_of_two();
    let _ = writeln!(
        out,
        "#[Mean    = {:12.sig$}, StdDeviation   = {:12.sig$}]",
        h.mean() / SCALE,
        h.stdev() / SCALE
    );
    let _ = writeln!(
        out,
        "#[Max     = {:12.sig$}, Total count    = {:12}]",
        h.max() as f64 / SCALE,
        h.len()
    );
    let _ = writeln!(
        out,
        "#[Buckets = {:12}, SubBuckets     = {:12}]",
        h.buckets(),
        sub_buckets
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(h: &Hist) -> CaseResult {
        let mut c: CaseResult = serde_json::from_value(serde_json::json!({
            "workload": "w", "model": "m", "params": {"n": 1}, "status": "measured", "op": "x",
            "knobs": {}, "warmups": 0, "repetitions": 1,
            "latency_ns": {"min": 1.0, "p50": 1.0, "p90": 1.0, "p99": 1.0, "p999": 1.0,
                           "max": 1.0, "mean": 1.0, "stddev": 0.0},
            "run_p50_ns": {"median": 1.0, "min": 1.0, "max": 1.0, "mad": 0.0},
            "ops_per_sec": {"median": 1.0, "min": 1.0, "max": 1.0, "mad": 0.0},
            "cpu_ns_per_op": {"total": 1.0, "user": 0.5, "sys": 0.5},
            "ctx_switches_per_op": 0.0, "syscalls_per_op": 1.0, "ops_total": 1,
            "counters": {}, "histogram": ""
        }))
        .unwrap();
        c.figures.as_mut().unwrap().histogram = h.to_base64();
        c
    }

    /// The format HdrHistogram's tools parse: the header, one line per tick with a rising
    /// cumulative count that ends at the total on the 100% line (which has no 1/(1-p)), and
    /// the footer; values in microseconds.
    #[test]
    fn a_distribution_in_hgrm_form() {
        let mut h = Hist::new();
        for i in 1..=1000u64 {
            h.record(i * 1000); // 1 us .. 1 ms
        }
        let text = render(&cell(&h)).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next().unwrap(),
            "       Value     Percentile TotalCount 1/(1-Percentile)"
        );
        assert_eq!(lines.next().unwrap(), "");
        let rows: Vec<Vec<&str>> = lines
            .clone()
            .take_while(|l| !l.starts_with('#'))
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert!(rows.len() > 20, "{text}");
        let first = &rows[0];
        assert_eq!((first[0], first[2]), ("1.000", "1"), "{text}");
        assert!(first[1].parse::<f64>().unwrap() <= 0.001, "{text}");
        let last = rows.last().unwrap();
        assert_eq!(last.len(), 3, "the 100% line has no 1/(1-p): {text}");
        assert_eq!((last[1], last[2]), ("1.000000000000", "1000"));
        let max: f64 = last[0].parse().unwrap();
        assert!((999.0..=1001.0).contains(&max), "{max}");
        let counts: Vec<u64> = rows.iter().map(|r| r[2].parse().unwrap()).collect();
        assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
        let median = rows
            .iter()
            .find(|r| r[1].parse::<f64>().unwrap() >= 0.5)
            .unwrap();
        let p50: f64 = median[0].parse().unwrap();
        assert!((499.0..=502.0).contains(&p50), "{p50}");
        let footer: Vec<&str> = text.lines().filter(|l| l.starts_with("#[")).collect();
        assert_eq!(footer.len(), 3, "{text}");
        assert!(footer[0].starts_with("#[Mean    = ") && footer[0].contains("StdDeviation"));
        assert!(
            footer[1].contains("Total count    =         1000]"),
            "{}",
            footer[1]
        );
        assert!(
            footer[2].contains("SubBuckets     =         2048]"),
            "{}",
            footer[2]
        );
    }

    #[test]
    fn a_cell_without_a_histogram_says_so() {
        let e = render(&cell(&Hist::new())).unwrap_err();
        assert!(e.contains("no latency histogram"), "{e}");
    }
}
