//! Progress: an indicatif bar with the current case and ETA on a terminal, plain lines on
//! stderr otherwise, one line per finished case either way.

use super::Observer;
use crate::export::table::fmt_ns;
use crate::plan::Case;
use crate::results::{CaseResult, Status};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};

pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    /// Cases in the run, for the plain "[i/N]" lines.
    total: AtomicUsize,
    /// Cases finished so far (the runner interleaves the cases of a point, so they finish in
    /// groups, not in index order).
    done: AtomicUsize,
}

impl Progress {
    pub(crate) fn new() -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("{bar:30.cyan/blue} {pos}/{len} ETA {eta} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b
        });
        Progress {
            bar,
            total: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
        }
    }

    fn line(&self, s: String) {
        match &self.bar {
            Some(b) => b.println(s),
            None => eprintln!("{s}"),
        }
    }
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}

fn case_label(
    workload: &str,
    label: &str,
    params: &crate::workload::Params,
    equal_load: bool,
) -> String {
    let mut p: Vec<String> = params.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if equal_load {
        p.push(crate::results::EQUAL_LOAD_WORD.to_string());
    }
    format!("{workload} {label} {}", p.join(" "))
}

impl Observer for Progress {
    fn run_started(&self, cases: usize) {
        self.total.store(cases, Ordering::Relaxed);
        if let Some(b) = &self.bar {
            b.set_length(cases as u64);
        }
    }

    fn case_started(&self, _index: usize, case: &Case) {
        if let Some(b) = &self.bar {
            let variant = case.point.as_ref().and_then(|p| p.variant);
            let label = match variant {
                Some(v) => format!("{}/{v}", case.model.id),
                None => case.model.id.to_string(),
            };
            let params = case
                .point
                .as_ref()
                .map(|p| p.params.clone())
                .unwrap_or_default();
            let equal_load = case.point.as_ref().is_some_and(|p| p.equal_load.is_some());
            b.set_message(case_label(case.workload.id(), &label, &params, equal_load));
        }
    }

    fn case_finished(&self, _index: usize, r: &CaseResult) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let what = case_label(&r.workload, &r.label(), &r.params, r.equal_load.is_some());
        let tail = match (&r.status, &r.figures) {
            (Status::Measured, Some(f)) => format!(
                "p50 {} p99 {} syscalls/op {}",
                fmt_ns(f.latency_ns.p50),
                fmt_ns(f.latency_ns.p99),
                f.syscalls_per_op
                    .value()
                    .map(|v| format!("{v:.3}"))
                    .unwrap_or_else(|| "unavailable".into())
            ),
            (s, _) => format!("{s}: {}", r.reason.as_deref().unwrap_or("")),
        };
        match &self.bar {
            Some(b) => {
                b.set_position(done as u64);
                b.println(format!("{what}: {tail}"));
            }
            None => self.line(format!(
                "[{}/{}] {what}: {tail}",
                done,
                self.total.load(Ordering::Relaxed)
            )),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
