//! The ablation ladder's table (`echo.ladder`, `http.ladder`): one row per rung at a point,
//! with what its knob bought in server CPU per op over the row it adds the knob to, as
//! `analysis::ladder` computed it (held by the workload's analysis). A rung that could not run
//! is a row with its reason (a gap).

use super::format::{fmt_ns, Table};
use crate::analysis::Workload;
use crate::results::schema::Status;

/// The ladder table of the point of `w` at `params` (`None` for workloads that are not
/// ladders, and for cells in no point of the ladder).
pub(crate) fn table(w: &Workload, params: &str) -> Option<Table> {
    let point = w.ladder.iter().find(|p| p.at == params)?;
    let workload = &w.id;
    let header = [
        "rung",
        "adds",
        "kernel",
        "CPU/op",
        "change",
        "evidence",
        "p50",
        "p99",
        "syscalls/op",
    ];
    let mut rows = Vec::new();
    let mut footnotes = Vec::new();
    for s in &point.steps {
        let r = s.rung;
        let over = r.over.map(|o| format!(" (over {o})")).unwrap_or_default();
        let mut row = vec![
            r.model.to_string(),
            format!("{}{over}", r.adds),
            format!(">= {}", r.min_kernel),
        ];
        match &s.cell {
            Some(c) if c.status == Status::Measured => {
                let f = c.figures.as_ref();
                row.push(s.cpu_ns_per_op.map(fmt_ns).unwrap_or_else(|| "-".into()));
                row.push(
                    s.change_pct
                        .map(|p| format!("{p:+.1}%"))
                        .unwrap_or_else(|| "-".into()),
                );
                row.push(
                    s.evidence
                        .as_ref()
                        .map(|e| e.text())
                        .unwrap_or_else(|| "-".into()),
                );
                row.push(f.map(|f| fmt_ns(f.p50_ns)).unwrap_or_default());
                row.push(f.map(|f| fmt_ns(f.p99_ns)).unwrap_or_default());
                row.push(
                    f.and_then(|f| f.syscalls_per_op.map(|v| format!("{v:.3}")))
                        .unwrap_or_else(|| "-".into()),
                );
            }
            Some(c) => {
                row.push(format!("{}: gap", c.status));
                row.extend(std::iter::repeat_n(String::new(), 5));
                footnotes.push(format!(
                    "{}: {}: {}",
                    r.model,
                    c.status,
                    c.reason.as_deref().unwrap_or("no reason recorded")
                ));
            }
            None => {
                row.push("not run".into());
                row.extend(std::iter::repeat_n(String::new(), 5));
            }
        }
        rows.push(row);
    }
    footnotes.extend(
        crate::workload::net::ladder::RUNGS
            .iter()
            .filter_map(|r| r.note.map(|n| format!("{}: {n}", r.model))),
    );
    Some(Table {
        title: format!("{workload} ladder: {params}"),
        note: "each rung's change is its server CPU per op against the row it adds its knob \
               to (negative: the knob saved CPU); evidence: Mann-Whitney on the per-repetition \
               CPU per op"
            .into(),
        header: header.iter().map(|h| h.to_string()).collect(),
        rows,
        footnotes,
    })
}
