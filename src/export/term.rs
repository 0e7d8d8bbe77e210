//! Terminal tables: aligned columns, footnotes under each table; and the default summary's
//! numbers, as wrk and oha print them: per workload, a row per model at each point.

use super::charts::{by_workload, Ordered, ParamRoles};
use super::table::{fmt_ns, fmt_rate, metric_tables, Table, THIN_TAIL};
use super::words::finding::{headline, suites, trust_text};
use super::Exporter;
use crate::analysis::Analysis;
use crate::results::{CaseResult, RunResults, Status};

pub(crate) struct Term;

/// The default terminal output: the findings, one line a workload, and a closing summary,
/// one line a suite; the wide tables are `--format table`'s (and the report's).
pub(crate) struct Summary;

/// Terminal width the summary wraps to.
const COLUMNS: usize = 100;

/// `text` wrapped at [`COLUMNS`]: the first line after `first`, the rest after `indent`.
fn wrap(first: &str, indent: &str, text: &str) -> String {
    let mut out = String::from(first);
    let mut col = first.chars().count();
    let mut line_start = true;
    for word in text.split(' ') {
        let n = word.chars().count();
        if !line_start && col + 1 + n > COLUMNS {
            out.push('\n');
            out.push_str(indent);
            col = indent.chars().count();
            line_start = true;
        }
        if !line_start {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += n;
        line_start = false;
    }
    out.push('\n');
    out
}

/// The closing summary, hyperfine's way: a line a suite (wrapped at [`COLUMNS`]), each
/// workload's leader in a few words (`words::finding::headline`).
pub(crate) fn summary_text(a: &Analysis) -> String {
    let mut suites: Vec<(String, Vec<String>)> = Vec::new();
    for w in &a.workloads {
        let (suite, name) = w.id.split_once('.').unwrap_or((&w.id, &w.id));
        let part = format!("{name}: {}", headline(&w.finding));
        match suites.last_mut() {
            Some((s, parts)) if s == suite => parts.push(part),
            _ => suites.push((suite.to_string(), vec![part])),
        }
    }
    let width = suites.iter().map(|(s, _)| s.len()).max().unwrap_or(0);
    let mut out = String::from("Summary: each workload's leader (points it led of those ranked)\n");
    for (s, parts) in &suites {
        out += &wrap(
            &format!("  {s:<width$}  "),
            &" ".repeat(width + 4),
            &parts.join(" · "),
        );
    }
    out
}

impl Exporter for Summary {
    fn render(&self, run: &RunResults, a: &Analysis) -> anyhow::Result<Vec<u8>> {
        let mut out = bottom_text(a);
        out += "Findings (wide tables: --format table; charts and evidence: report.html)\n";
        for s in suites(a) {
            out += &format!("  {} suite\n", s.suite);
            for l in &s.lines {
                out += &wrap(&format!("  - {}: ", l.workload), "      ", &l.short);
            }
        }
        out += &wrap("  How far to trust this run: ", "    ", &trust_text(run, a));
        out.push('\n');
        out += &numbers_text(run);
        out.push('\n');
        out += &summary_text(a);
        Ok(out.into_bytes())
    }
}

/// Widest a label of the numbers block may be before it is cut (`~` marks the cut).
const LABEL_MAX: usize = 30;

/// Marks a percentile of the numbers block with fewer than [`THIN_TAIL`] samples beyond it.
const THIN_MARK: &str = "*";

/// A row of the numbers block: throughput, the four latency percentiles, errors; or the
/// cell's status where it was not measured.
type NumberCells = Result<[String; 6], String>;

/// The figures of one cell in the numbers block.
fn number_cells(c: &CaseResult) -> NumberCells {
    let f = match (&c.status, &c.figures) {
        (Status::Measured, Some(f)) => f,
        (s, _) => return Err(s.to_string()),
    };
    // A percentile with fewer than THIN_TAIL samples beyond it is marked (the tables say
    // how many).
    let pct = |ns: f64, q: f64| {
        let thin = f.ci95.as_ref().is_some_and(|i| i.tail(q) < THIN_TAIL);
        format!("{}{}", fmt_ns(ns), if thin { THIN_MARK } else { "" })
    };
    let l = &f.latency_ns;
    Ok([
        fmt_rate(f.ops_per_sec.median),
        pct(l.p50, 0.5),
        pct(l.p90, 0.9),
        pct(l.p99, 0.99),
        pct(l.p999, 0.999),
        c.load_errors()
            .map_or_else(|| "-".to_string(), |n| n.to_string()),
    ])
}

/// `s` cut to `n` characters, `~` in place of the last one kept when cut.
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('~');
        t
    }
}

/// The numbers block of the default terminal output, as wrk and oha print theirs: a table per
/// workload, a group of rows per point, a row per model: throughput in the workload's unit
/// (the median of the repetitions), the latency percentiles p50, p90, p99 and p99.9 as
/// results.json holds them (pooled over every op of every repetition), and the load
/// generator's errors. Every figure is the stored one, formatted; nothing wider than
/// [`COLUMNS`].
pub(crate) fn numbers_text(run: &RunResults) -> String {
    let mut out = String::new();
    let mut thin = false;
    for (workload, cases) in by_workload(run) {
        let roles = ParamRoles::of_cases(&cases);
        let f = crate::analysis::cells::facts_in(run, workload);
        let unit = if f.net { f.units.rate } else { "ops/s" };
        // Cells grouped by point, in the order their points first ran; a model that takes
        // no part at all (n/a without params) has no row.
        let mut points = Ordered::default();
        let mut groups: Vec<Vec<&CaseResult>> = Vec::new();
        for c in cases.iter().copied() {
            if c.status == Status::NotApplicable && c.params.0.is_empty() {
                continue;
            }
            let g = points.add(roles.point(c, None));
            if g == groups.len() {
                groups.push(Vec::new());
            }
            groups[g].push(c);
        }
        if groups.is_empty() {
            continue;
        }
        let label = |c: &CaseResult| {
            let mp = roles.model_params(c);
            if mp.is_empty() {
                c.label()
            } else {
                format!("{} ({mp})", c.label())
            }
        };
        let rows: Vec<Vec<(String, NumberCells)>> = groups
            .iter()
            .map(|g| g.iter().map(|c| (label(c), number_cells(c))).collect())
            .collect();
        let head: [[&str; 6]; 2] = [
            [unit, "p50", "p90", "p99", "p99.9", "errors"],
            ["median", "pooled", "pooled", "pooled", "pooled", ""],
        ];
        let mut w = [0usize; 6];
        for (i, wi) in w.iter_mut().enumerate() {
            *wi = head.iter().map(|h| h[i].chars().count()).max().unwrap_or(0);
            for (_, r) in rows.iter().flatten() {
                if let Ok(cells) = r {
                    *wi = (*wi).max(cells[i].chars().count());
                }
            }
        }
        let numbers: usize = w.iter().map(|n| n + 2).sum();
        // The label column: as wide as the widest label, within LABEL_MAX and COLUMNS.
        let lw = rows
            .iter()
            .flatten()
            .map(|(l, _)| l.chars().count())
            .max()
            .unwrap_or(0)
            .max(workload.chars().count().saturating_sub(2))
            .min(LABEL_MAX)
            .min(COLUMNS.saturating_sub(6 + numbers))
            .max(8);
        // Rows under a point's heading are indented below it.
        let ind = if points.order.iter().any(|p| !p.is_empty()) {
            "      "
        } else {
            "    "
        };
        thin |= rows.iter().flatten().any(|(_, r)| {
            r.as_ref()
                .is_ok_and(|c| c.iter().any(|x| x.ends_with(THIN_MARK)))
        });
        let line = |first: String, cells: [&str; 6]| {
            let mut l = format!("{ind}{:<lw$}", cut(&first, lw));
            for (c, n) in cells.iter().zip(w) {
                l += &format!("  {c:>n$}");
            }
            l.trim_end().to_string() + "\n"
        };
        out += &format!("\n  {workload}\n");
        out += &line(String::new(), head[0]);
        out += &line(String::new(), head[1]);
        for (point, rows) in points.order.iter().zip(&rows) {
            if !point.is_empty() {
                out += &wrap("    ", "      ", point);
            }
            for (l, r) in rows {
                match r {
                    Ok(cells) => out += &line(l.clone(), cells.each_ref().map(String::as_str)),
                    Err(status) => {
                        out += &format!("{ind}{:<lw$}  {status}\n", cut(l, lw));
                    }
                }
            }
        }
    }
    if out.is_empty() {
        return out;
    }
    let legend = format!(
        "throughput is the median of the repetitions; p50 to p99.9 are pooled over every op of \
         every repetition; errors are the load generator's in the measured windows, summed \
         over them (- where none ran){}",
        if thin {
            format!("; {THIN_MARK} fewer than {THIN_TAIL:.0} samples lie beyond that percentile")
        } else {
            String::new()
        }
    );
    wrap("Numbers per point: ", "  ", &legend) + &out
}

/// The bottom line that opens the terminal's summary and tables (`words::bottom`).
pub(crate) fn bottom_text(a: &Analysis) -> String {
    let mut out = String::from("Bottom line\n");
    let lines = super::words::bottom::lines(a);
    let (confidence, answers) = lines.split_last().expect("the confidence line");
    for l in answers {
        out += &wrap("  - ", "      ", l);
    }
    out += &wrap("  ", "    ", confidence);
    out.push('\n');
    out
}

/// The findings block that opens the terminal summary.
pub(crate) fn findings_text(run: &RunResults, a: &Analysis) -> String {
    let mut out = bottom_text(a);
    out += "Findings (computed from the cells below)\n";
    for s in suites(a) {
        out += &format!("  {} suite\n", s.suite);
        for l in &s.lines {
            out += &format!("  - {}: {}\n", l.workload, l.short);
            if l.text != l.short {
                out += &format!("      evidence: {}\n", l.text);
            }
        }
    }
    out += &format!("  How far to trust this run: {}\n", trust_text(run, a));
    out
}

/// Renders one table with aligned columns (first column left, the rest right).
pub(crate) fn render_table(t: &Table) -> String {
    let ncol = t.header.len();
    let mut w = vec![0usize; ncol];
    for row in std::iter::once(&t.header).chain(&t.rows) {
        for (i, c) in row.iter().enumerate().take(ncol) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |row: &[String]| {
        row.iter()
            .enumerate()
            .map(|(i, c)| {
                if i == 0 {
                    format!("{c:<w$}", w = w[i])
                } else {
                    format!("{c:>w$}", w = w[i])
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = format!("{}\n  {}\n", t.title, t.note);
    out += &line(&t.header);
    out.push('\n');
    out += &w
        .iter()
        .map(|n| "-".repeat(*n))
        .collect::<Vec<_>>()
        .join("  ");
    out.push('\n');
    for r in &t.rows {
        out += &line(r);
        out.push('\n');
    }
    for f in &t.footnotes {
        out += &format!("  * {f}\n");
    }
    out
}

impl Exporter for Term {
    fn render(&self, run: &RunResults, a: &Analysis) -> anyhow::Result<Vec<u8>> {
        let tables = metric_tables(run, a);
        let mut body: Vec<String> = vec![findings_text(run, a)];
        body.extend(tables.iter().map(render_table));
        body.push(summary_text(a));
        Ok(body.join("\n").into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::cell::LoadCounters;

    fn fixture() -> RunResults {
        crate::results::store::parse(include_str!("../../tests/fixtures/results.json")).unwrap()
    }

    /// Issue 45: the default terminal output holds a numbers block, a table per workload and a
    /// row per model at each point, every figure the stored one formatted, each percentile
    /// named as what it is (pooled over the repetitions' ops), throughput as the median of
    /// the repetitions, within the terminal's width.
    #[test]
    fn the_numbers_block_shows_stored_figures_labelled_and_bounded() {
        let run = fixture();
        let text = numbers_text(&run);
        assert!(text.starts_with("Numbers per point: "), "{text}");
        let legend = text.replace("\n  ", " ");
        assert!(legend.contains("median of the repetitions"), "{text}");
        assert!(
            legend.contains("pooled over every op of every repetition"),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() <= COLUMNS), "{text}");
        // Each workload's table: its heading, then the two header lines naming every column.
        for (w, _) in by_workload(&run) {
            let at = text
                .find(&format!("\n  {w}\n"))
                .unwrap_or_else(|| panic!("{w}: {text}"));
            let mut lines = text[at + 1..].lines().skip(1);
            let h1: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
            let h2: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
            assert_eq!(h1, ["ops/s", "p50", "p90", "p99", "p99.9", "errors"], "{w}");
            assert_eq!(
                h2,
                ["median", "pooled", "pooled", "pooled", "pooled"],
                "{w}"
            );
        }
        // Every measured cell's row holds its stored figures, in order; a cell not measured
        // says its status.
        let fd = text.find("\n  micro.fd_scaling\n").unwrap();
        let (before, after) = text[fd..].split_once("    fds=100\n").unwrap();
        assert!(before.contains("    fds=1\n"), "{before}");
        let c = run
            .cases
            .iter()
            .find(|c| {
                c.workload == "micro.fd_scaling" && c.label() == "epoll-lt" && {
                    c.params.0.get("fds") == Some(&serde_json::json!(100))
                }
            })
            .unwrap();
        let f = c.figures.as_ref().unwrap();
        let l = &f.latency_ns;
        let want = [
            fmt_rate(f.ops_per_sec.median),
            fmt_ns(l.p50),
            fmt_ns(l.p90),
            fmt_ns(l.p99),
            fmt_ns(l.p999),
            "-".to_string(),
        ];
        let row = after
            .lines()
            .find(|r| r.trim_start().starts_with("epoll-lt "))
            .unwrap();
        let cells: Vec<String> = row
            .trim_start()
            .strip_prefix("epoll-lt")
            .unwrap()
            .split("  ")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        assert_eq!(cells, want, "{row}");
        let pipe = &text[text.find("\n  micro.pipe\n").unwrap()..];
        assert!(
            pipe.lines().any(
                |r| r.split_whitespace().collect::<Vec<_>>() == ["uring-sqpoll", "unavailable"]
            ),
            "{pipe}"
        );
        let batching = &text[text.find("\n  micro.batching\n").unwrap()..];
        assert!(
            batching
                .lines()
                .any(|r| r.split_whitespace().collect::<Vec<_>>() == ["uring", "failed"]),
            "{batching}"
        );
        // A model with no part in the workload at all has no row.
        let syscall = &text
            [text.find("\n  micro.syscall\n").unwrap()..text.find("\n  micro.pipe\n").unwrap()];
        assert!(!syscall.contains("epoll-lt"), "{syscall}");
        // The default output holds it, between the findings and the closing summary.
        let out = String::from_utf8(Summary.render(&run, &Analysis::of(&run)).unwrap()).unwrap();
        let (n, s) = (
            out.find("\nNumbers per point").unwrap(),
            out.find("\nSummary").unwrap(),
        );
        assert!(out.find("How far to trust").unwrap() < n && n < s, "{out}");
    }

    /// A network cell's errors are the load generator's, and its unit the workload's; a
    /// thin tail is marked and the mark explained; a long label is cut to keep the width.
    #[test]
    fn a_network_cell_shows_its_unit_errors_and_thin_tails() {
        let mut run = fixture();
        let mut c = run
            .cases
            .iter()
            .find(|c| c.status == Status::Measured)
            .unwrap()
            .clone();
        c.workload = "http.clients".into();
        c.model = "a-model-with-a-name-far-longer-than-any-row-of-the-registry".into();
        c.params = crate::results::Params::default().with("clients", 100);
        let f = c.figures.as_mut().unwrap();
        f.counters.load = Some(LoadCounters {
            load_resets: 2,
            load_non_2xx: 3,
            load_timeouts: 1,
            load_reconnects: 40,
            load_warmup_errors: 7,
            ..LoadCounters::default()
        });
        f.ci95 = Some(crate::results::schema::Intervals {
            samples: 5_000,
            ..Default::default()
        });
        run.cases = vec![c];
        run.workloads.clear();
        let text = numbers_text(&run);
        assert!(text.lines().all(|l| l.chars().count() <= COLUMNS), "{text}");
        let h1 = text.lines().find(|l| l.ends_with("errors")).unwrap();
        assert!(h1.trim_start().starts_with("req/s "), "{text}");
        let row = text.lines().last().unwrap();
        // Resets, non-2xx and timeouts are errors; reconnects and the warm-up's are not.
        assert!(row.ends_with("  6"), "{row}");
        assert!(
            row.trim_start().starts_with("a-model-with-a-name-far-lo"),
            "{row}"
        );
        assert!(row.contains("~ "), "{row}");
        // 5,000 samples: 5 beyond p99.9 (marked), 50 beyond p99 (not).
        let p999 = fmt_ns(run.cases[0].figures.as_ref().unwrap().latency_ns.p999);
        let p99 = fmt_ns(run.cases[0].figures.as_ref().unwrap().latency_ns.p99);
        assert!(row.contains(&format!("{p999}*")), "{row}");
        assert!(!row.contains(&format!("{p99}*")), "{row}");
        assert!(
            text.contains("* fewer than 10 samples lie beyond"),
            "{text}"
        );
        assert!(!numbers_text(&fixture()).contains("* fewer"));
    }
}
