//! Rendering a report is linear in the cells of a workload: the work (counted as heap
//! allocations, which every string, key and row of the exporters makes) for 4x the points is
//! about 4x, not 16x. Structure, not speed: the count does not depend on the machine.
//!
//! One test in this binary, counted on its own thread only.

use ringside::analysis::Analysis;
use ringside::export::{charts, html::svg, words, Format};
use ringside::results::{store, CaseResult, RunResults, Status};
use ringside::workload::Params;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.with(|c| c.get())
}

const MODELS: [&str; 4] = ["blocking", "epoll-lt", "uring", "uring-sqpoll"];

/// A run with `n` cells in each of three workloads: bars (one point per message size), a
/// sweep along `conns` split into groups by `msg_bytes`, and a sweep with one group; one cell
/// in eight failed (left out of the charts, listed under them).
fn run_with(n: usize) -> RunResults {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results.json");
    let mut run = store::load(&fixture).unwrap();
    let model = run
        .cases
        .iter()
        .find(|c| c.status == Status::Measured)
        .unwrap()
        .clone();
    let cell = |w: &str, i: usize, params: Params| -> CaseResult {
        let mut c = model.clone();
        c.workload = w.to_string();
        c.model = MODELS[i % MODELS.len()].to_string();
        c.params = params;
        let f = c.figures.as_mut().unwrap();
        // Values that cross between models, so verdicts find crossovers.
        f.latency_ns.p50 = 1000.0 + ((i * 7919) % 997) as f64;
        f.ops_per_sec.median = 1e6 / f.latency_ns.p50;
        if i % 8 == 7 {
            c.status = Status::Failed;
            c.reason = Some(format!("failed at point {i}"));
            c.figures = None;
        }
        c
    };
    let mut cases = Vec::new();
    for i in 0..n {
        let p = i / MODELS.len();
        cases.push(cell(
            "micro.pipe",
            i,
            Params::new().with("msg_bytes", 64 + p as u64),
        ));
        cases.push(cell(
            "echo.conns",
            i,
            Params::new()
                .with("conns", 1 + (p % 4) as u64)
                .with("msg_bytes", 64 + (p / 4) as u64),
        ));
        cases.push(cell(
            "echo.payload",
            i,
            Params::new()
                .with("msg_bytes", 1 + p as u64)
                .with("conns", 50),
        ));
    }
    run.cases = cases;
    run
}

/// Everything `ringside report` renders: every chart drawn, verdicts, tables in every format.
fn render(run: &RunResults) -> usize {
    let mut bytes = 0;
    // Analysed once, as `ringside report` does.
    let a = Analysis::of(run);
    for c in charts::build(run, &a) {
        bytes += svg::draw(&c, false).unwrap().len();
    }
    for w in charts::workloads(run) {
        bytes += words::verdicts_in(run, &w).len();
    }
    for f in [Format::Html, Format::Markdown, Format::Table, Format::Csv] {
        bytes += f.exporter().render(run, &a).unwrap().len();
    }
    bytes
}

fn work(n: usize) -> (u64, usize) {
    let run = run_with(n);
    let before = allocs();
    let bytes = render(&run);
    (allocs() - before, bytes)
}

#[test]
fn report_work_grows_linearly_with_points_per_workload() {
    let (w1, b1) = work(240);
    let (w4, b4) = work(960);
    let ratio = w4 as f64 / w1 as f64;
    eprintln!(
        "allocations: {w1} for 240 points, {w4} for 960 (x{ratio:.2}); output {b1} -> {b4} bytes"
    );
    // The output itself is linear: 4x the points, about 4x the bytes.
    assert!((b4 as f64) < 5.0 * b1 as f64, "{b1} -> {b4}");
    // Linear work is about 4x (plus the fixed cost of the first); quadratic would be ~16x.
    assert!(
        ratio < 5.5,
        "4x the points took x{ratio:.2} the work ({w1} -> {w4})"
    );
}
