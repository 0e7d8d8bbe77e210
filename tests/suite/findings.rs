//! Findings at the top of the reports: golden text on the frozen fixture (a sweep whose lead
//! changes: micro.fd_scaling and micro.batching), on the same fixture with every model within
//! noise, and on network cells (equal load first, fell-behind models not ranked, client-bound
//! capacity cells left out); the trust line counts warnings and repetitions; the HTML and
//! Markdown put the findings first, each linking to its section.
//!
//! After an intended change of wording, re-bless with
//! `RINGSIDE_BLESS=1 cargo test --release --test findings` and read the diff.

use ringside::export::words::{
    finding as for_cases, findings as for_run, trust as trust_text, Line,
};
use ringside::export::Format;
use ringside::results::{store, CaseResult, RunResults};
use serde_json::{json, Value};
use std::path::Path;

fn fixture() -> RunResults {
    store::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results.json"))
        .expect("fixture loads")
}

fn golden(name: &str, got: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/golden")
        .join(name);
    if std::env::var_os("RINGSIDE_BLESS").is_some() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; bless with RINGSIDE_BLESS=1", path.display()));
    assert_eq!(want, got, "{} differs", path.display());
}

/// The bottom line and the findings block of the terminal summary (everything before the
/// second blank line: the bottom line opens it, the findings follow).
fn term_findings(run: &RunResults) -> String {
    let out = String::from_utf8(Format::Table.render(run).unwrap()).unwrap();
    assert!(out.starts_with("Bottom line\n"), "{out}");
    let first = out
        .find("\n\n")
        .expect("a blank line after the bottom line");
    let end = first
        + 2
        + out[first + 2..]
            .find("\n\n")
            .expect("a blank line after the findings");
    out[..end + 1].to_string()
}

#[test]
fn fixture_findings_match_golden_and_name_the_change_of_lead() {
    let run = fixture();
    let text = term_findings(&run);
    golden("findings.txt", &text);
    assert!(text.starts_with("Bottom line") && text.contains("\nFindings"));
    // Each workload: one plain sentence, then its evidence on the next line.
    let line_after = |prefix: &str| -> (String, String) {
        let mut it = text.lines().skip_while(|l| !l.contains(prefix));
        let short = it.next().unwrap().to_string();
        let evidence = it.next().unwrap().to_string();
        assert!(
            evidence.trim_start().starts_with("evidence: "),
            "{evidence}"
        );
        (short, evidence)
    };
    // The crossover along the sweep: blocking leads at batch=1, epoll-lt at batch=64; the
    // sentence says each leads at one point and who is behind by how much.
    let (short, evidence) = line_after("micro.batching:");
    assert!(
        short.contains("epoll-lt leads at 1 of 2 points, blocking at 1"),
        "{short}"
    );
    assert!(
        short.contains("behind the leader where decided: epoll-lt 1.09x (at 1 of 2 points)"),
        "{short}"
    );
    assert!(short.ends_with(" and uring 2.3x"), "{short}");
    assert!(evidence.contains("blocking leads"), "{evidence}");
    assert!(
        evidence.contains("the lead changes: epoll-lt at batch=64"),
        "{evidence}"
    );
    // No change of lead where the leader holds (micro.pipe: within noise at 4096).
    let (short, pipe) = line_after("micro.pipe:");
    // blocking is decided ahead at 64 B only: at 4096 B nobody is, and it is not said to lead.
    assert!(short.contains("blocking leads at 1 of 2 points"), "{short}");
    assert!(!pipe.contains("lead changes"), "{pipe}");
    assert!(
        pipe.contains("95% CI") && pipe.contains("signed-rank over 6 paired rounds, p="),
        "{pipe}"
    );
    assert!(text.contains("How far to trust this run: 22 of 25 cells measured (1 failed)"));
}

/// The finding of the run's micro.pipe cells.
fn micro_pipe_finding(run: &RunResults) -> Line {
    let cases: Vec<&CaseResult> = run
        .cases
        .iter()
        .filter(|c| c.workload == "micro.pipe")
        .collect();
    for_cases("micro.pipe", &cases)
}

#[test]
fn every_model_within_noise_has_no_leader() {
    let mut run = fixture();
    // micro.pipe at both sizes: every model's repetitions overlap.
    for c in run.cases.iter_mut().filter(|c| c.workload == "micro.pipe") {
        if let Some(f) = c.figures.as_mut() {
            let base = f.latency_ns.p50;
            f.runs_p50_ns = vec![600.0, 3000.0, base, 650.0, 2900.0, 1000.0];
        }
    }
    let line = micro_pipe_finding(&run);
    golden("findings_noise.txt", &format!("{}\n", line.text));
    assert!(line.within_noise);
    assert!(
        line.text
            .starts_with("no decided leader by median latency per op at msg_bytes=64"),
        "{}",
        line.text
    );
    assert!(
        line.text.contains("undecided against it: epoll-lt"),
        "{}",
        line.text
    );
}

#[test]
fn every_model_equivalent_is_said_so() {
    let mut run = fixture();
    // micro.pipe at both sizes: every model follows the same rounds within 0.5% of the
    // others (the machine's drift, shared), so every paired ratio's interval lies within 5%.
    let rounds = [600.0, 640.0, 610.0, 660.0, 620.0, 605.0];
    let mut m = 0.0;
    for c in run.cases.iter_mut().filter(|c| c.workload == "micro.pipe") {
        if let Some(f) = c.figures.as_mut() {
            f.runs_p50_ns = rounds.iter().map(|r| r * (1.0 + 0.001 * m)).collect();
            f.latency_ns.p50 = 615.0 * (1.0 + 0.001 * m);
            f.run_p50_ns.median = f.latency_ns.p50;
            m += 1.0;
        }
    }
    let line = micro_pipe_finding(&run);
    golden(
        "findings_equivalent.txt",
        &format!("{}\n{}\n", line.short, line.text),
    );
    assert!(line.within_noise, "{}", line.text);
    // Nobody is decided ahead of anyone: no leader is named, all four are equivalent.
    assert!(
        line.short.contains(
            "no decided leader at any point; equivalent (within 5%) at every point: blocking, \
             epoll-lt, uring and uring-sqpoll"
        ),
        "{}",
        line.short
    );
    assert!(!line.short.contains("leads"), "{}", line.short);
    assert!(!line.short.contains("behind the leader"), "{}", line.short);
    assert!(
        line.text.contains("equivalent to it (within 5%)"),
        "{}",
        line.text
    );
    assert!(!line.text.contains("undecided"), "{}", line.text);
}

/// A measured network cell: `cpu` per repetition (its mean is the cell's CPU per op).
fn net(
    model: &str,
    params: Value,
    ops: f64,
    cpu: &[f64],
    rate: Option<(u64, u64)>,
    warn: &[&str],
) -> CaseResult {
    let reps = cpu.len() as u64;
    let mean = cpu.iter().sum::<f64>() / cpu.len() as f64;
    let mut counters = json!({"load_cpu_ns": 1, "load_window_ns": 2});
    if let Some((offered, achieved)) = rate {
        counters["offered_per_sec"] = json!(offered);
        counters["achieved_per_sec"] = json!(achieved);
        counters["fell_behind"] = json!(u64::from(achieved * 100 < offered * 95));
    }
    // An `equal_load` entry in `params` marks a cell of an equal-load point.
    let mut params = params;
    let equal_load = params.as_object_mut().unwrap().remove("equal_load");
    serde_json::from_value(json!({
        "equal_load": equal_load,
        "workload": "echo.conns", "model": model, "params": params,
        "status": "measured", "op": "one message", "knobs": {}, "warmups": 0,
        "repetitions": reps,
        "latency_ns": {"min": 1.0, "p50": 10.0, "p90": 10.0, "p99": 20.0, "p999": 20.0,
                       "max": 20.0, "mean": 10.0, "stddev": 1.0},
        "run_p50_ns": {"median": 10.0, "min": 10.0, "max": 10.0, "mad": 0.0},
        "ops_per_sec": {"median": ops, "min": ops * 0.99, "max": ops * 1.01, "mad": 0.0},
        "cpu_ns_per_op": {"total": mean, "user": 1.0, "sys": 1.0},
        "ctx_switches_per_op": 0.0, "syscalls_per_op": 1.0, "ops_total": 1000,
        "counters": counters, "histogram": "",
        "runs_ops_per_sec": vec![ops; reps as usize],
        "runs_cpu_ns_per_op": cpu,
        "warnings": warn,
    }))
    .unwrap()
}

/// Six rounds (the fewest a paired claim can decide on at alpha 0.05).
fn six(base: f64) -> Vec<f64> {
    (0..6).map(|i| base + i as f64).collect()
}

#[test]
fn network_findings_rank_at_equal_load_and_skip_what_fell_behind() {
    let cap = json!({"conns": 50, "msg_bytes": 64});
    let eq = json!({"conns": 50, "msg_bytes": 64, "equal_load": {"of_slowest": 0.5}});
    let mut cells = vec![
        net("a", cap.clone(), 90_000.0, &six(100.0), None, &[]),
        net(
            "b",
            cap.clone(),
            120_000.0,
            &six(100.0),
            None,
            &["client_bound"],
        ),
        net(
            "a",
            eq.clone(),
            45_000.0,
            &six(200.0),
            Some((45_000, 45_000)),
            &[],
        ),
        net(
            "b",
            eq.clone(),
            45_000.0,
            &six(100.0),
            Some((45_000, 45_000)),
            &[],
        ),
        // c fell behind: never ranked, however little CPU it used.
        net(
            "c",
            eq.clone(),
            20_000.0,
            &six(10.0),
            Some((45_000, 20_000)),
            &[],
        ),
    ];
    cells[2].rate_per_sec = Some(45_000);
    cells[3].rate_per_sec = Some(45_000);
    cells[4].rate_per_sec = Some(45_000);
    let refs: Vec<&CaseResult> = cells.iter().collect();
    let line = for_cases("echo.conns", &refs);
    golden("findings_net.txt", &format!("{}\n", line.text));
    assert!(
        line.text
            .starts_with("at equal load, b leads by server CPU per message"),
        "{}",
        line.text
    );
    assert!(line.text.contains("2.0x ahead of a"), "{}", line.text);
    assert!(!line.text.contains(" c "), "{}", line.text);

    // Without the equal-load point: capacity only between cells with headroom (a alone).
    let line = for_cases("echo.conns", &refs[..2]);
    assert!(line.text.starts_with("not ranked"), "{}", line.text);

    let run = RunResults {
        cases: cells,
        ..fixture()
    };
    let t = trust_text(&run);
    assert!(t.contains("5 of 5 cells measured"), "{t}");
    assert!(
        t.contains("1 measured cell carries warnings (client_bound 1)"),
        "{t}"
    );
}

#[test]
fn reports_open_with_findings_linked_to_sections() {
    let run = fixture();
    let html = String::from_utf8(Format::Html.render(&run).unwrap()).unwrap();
    let f = html
        .find("<section id=\"findings\">")
        .expect("findings section");
    let e = html.find("<section id=\"environment\">").unwrap();
    assert!(f < e, "findings come before the environment");
    for s in for_run(&run) {
        for l in &s.lines {
            let id: String = l
                .workload
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect();
            let id = format!("w-{id}");
            assert!(html[f..e].contains(&format!("href=\"#{id}\"")), "{id}");
            assert!(html.contains(&format!("id=\"{id}\"")), "{id}");
        }
    }
    let md = String::from_utf8(Format::Markdown.render(&run).unwrap()).unwrap();
    let f = md.find("## Findings").expect("markdown findings");
    assert!(f < md.find("## micro.syscall").unwrap());
    assert!(md.contains(
        "- [micro.pipe](#micropipe): by median latency per op over 2 points: blocking leads at 1 \
         of 2 points"
    ));
    assert!(md.contains("  - evidence: blocking leads by median latency per op"));
}

/// Confidence on the figures: a cell with intervals gets the CI rows and the sample counts;
/// a percentile with fewer than 10 samples beyond it is marked thin (greyed in HTML with the
/// reason); a file without intervals loads and shows none of these rows.
#[test]
fn intervals_show_as_rows_and_thin_tails_are_greyed() {
    let mut run = fixture();
    let c = run
        .cases
        .iter_mut()
        .find(|c| c.workload == "micro.pipe" && c.model == "blocking")
        .unwrap();
    let f = c.figures.as_mut().unwrap();
    f.ci95 = Some(ringside::results::schema::Intervals {
        samples: 1500, // 15 beyond p99, 1 beyond p99.9: the p99.9 is thin
        latency_ns: ringside::results::schema::LatencyIntervals {
            p50: Some((671.0, 691.0)),
            p90: Some((681.0, 701.0)),
            p99: Some((682.0, 702.0)),
            p999: Some((800.0, 1002.0)),
        },
        run_p50_ns: Some((681.0, 681.0)),
        ops_per_sec: Some((1.46e6, 1.48e6)),
        cpu_ns_per_op: None,
        runs_p99_ns: None,
    });
    // Round trip through results.json.
    let json = serde_json::to_string(&run).unwrap();
    let back: RunResults = serde_json::from_str(&json).unwrap();
    let again = serde_json::to_string(&back).unwrap();
    assert_eq!(json, again);
    assert!(
        json.contains("\"ci95\":{\"samples\":1500"),
        "stored as ci95"
    );

    let md = String::from_utf8(Format::Markdown.render(&run).unwrap()).unwrap();
    assert!(md.contains("| p50 95% CI | 671 ns..691 ns |"), "{md}");
    assert!(md.contains("| latency samples (beyond p99 / p99.9) | 1500 (15 / 1) |"));
    assert!(md.contains("| p99.9 (pooled) | 881 ns (thin tail: 1 samples beyond) |"));
    assert!(
        md.contains("| p99 (pooled) | 682 ns |"),
        "15 beyond p99 is not thin"
    );
    let html = String::from_utf8(Format::Html.render(&run).unwrap()).unwrap();
    assert!(html.contains("<td class=\"thin\" title=\"fewer than 10 samples beyond"));
    // The latency bars draw the p50's interval as a band; without intervals, none.
    let band = |run: &RunResults| {
        ringside::export::charts::build_for(
            run,
            &ringside::analysis::Analysis::of(run),
            "micro.pipe",
        )
        .into_iter()
        .filter(|c| c.id.ends_with("-latency"))
        .flat_map(|c| c.series)
        .filter(|s| s.label == "blocking")
        .flat_map(|s| s.points)
        .map(|p| p.band)
        .collect::<Vec<_>>()
    };
    assert!(
        band(&run).contains(&Some((671.0, 691.0))),
        "{:?}",
        band(&run)
    );
    assert!(band(&fixture()).iter().all(Option::is_none));
    // The title names the band only where one is drawn.
    let title = |run: &RunResults| {
        ringside::export::charts::build_for(
            run,
            &ringside::analysis::Analysis::of(run),
            "micro.pipe",
        )
        .into_iter()
        .find(|c| c.id.ends_with("-latency"))
        .unwrap()
        .title
    };
    assert!(
        title(&run).contains("dark band its 95% CI"),
        "{}",
        title(&run)
    );
    assert!(!title(&fixture()).contains("band"), "{}", title(&fixture()));
    // Without intervals (the fixture as written by older versions): no CI rows at all.
    let plain = String::from_utf8(Format::Markdown.render(&fixture()).unwrap()).unwrap();
    assert!(!plain.contains("95% CI |"));
    assert!(!plain.contains("thin tail"));
}

/// The full pairwise comparison sits collapsed under each workload's verdicts: every pair of
/// models per point, better first, with its evidence (decided, equivalent or undecided).
#[test]
fn pairwise_table_is_collapsed_and_complete() {
    let run = fixture();
    let html = String::from_utf8(Format::Html.render(&run).unwrap()).unwrap();
    let start = html
        .find("<section class=\"workload\" id=\"w-micro-pipe\">")
        .unwrap();
    let sec = &html[start..start + html[start..].find("</section>").unwrap()];
    // 4 models at msg_bytes=64 (6 pairs) and 3 at 4096 (3 pairs).
    assert!(
        sec.contains("<details class=\"pairs\"><summary>every pair of models (9), by median latency per op</summary>"),
        "{sec}"
    );
    assert_eq!(sec.matches("<tr><th>msg_bytes=").count(), 9);
    assert!(sec.contains(
        "<tr><th>msg_bytes=64</th><td>blocking</td><td>epoll-lt</td><td>1.07x</td><td>decided, p=0.031, 6 rounds</td></tr>"
    ), "{sec}");
    assert!(
        sec.contains("<td>undecided, p=") || sec.contains("<td>equivalent, p="),
        "blocking vs epoll-lt at 4096: {sec}"
    );
    let (what, pts) = ringside::export::words::pairwise(
        "micro.pipe",
        &run.cases
            .iter()
            .filter(|c| c.workload == "micro.pipe")
            .collect::<Vec<_>>(),
        usize::MAX,
    );
    assert_eq!(what, "median latency per op");
    assert_eq!(pts.iter().map(|p| p.1.len()).sum::<usize>(), 9);
    assert_eq!(pts.iter().map(|p| p.2).sum::<usize>(), 9);
}

/// Issue 28 item 12: a point of 2,000 models has 1,999,000 pairs; only those a report lists
/// are built (and the count of the rest is said), so rendering is not quadratic in the models.
#[test]
fn a_point_of_many_models_builds_only_the_pairs_it_lists() {
    let mut run = fixture();
    let cell = run
        .cases
        .iter()
        .find(|c| c.workload == "micro.pipe" && c.figures.is_some())
        .unwrap()
        .clone();
    run.cases = (0..2000)
        .map(|i| {
            let mut c = cell.clone();
            c.model = format!("m{i}");
            c
        })
        .collect();
    let cells: Vec<&ringside::results::CaseResult> = run.cases.iter().collect();
    let (_, pts) = ringside::export::words::pairwise("micro.pipe", &cells, 200);
    assert_eq!(pts.len(), 1);
    assert_eq!(pts[0].1.len(), 200, "only the listed pairs are built");
    assert_eq!(pts[0].2, 2000 * 1999 / 2, "the rest are counted");
}

/// Issue 44 item 4: the file is the truth. A results file's workload this build does not know
/// (`acme.rpc`, cells of http.rate renamed) renders with the units and the kind the file
/// recorded for it: a server's finding at equal load, its knees in calls/s; without the
/// record the same cells are bars with no units.
#[test]
fn an_unknown_workload_renders_with_the_files_facts() {
    let mut run =
        store::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/charts.json"))
            .expect("fixture loads");
    for c in &mut run.cases {
        if c.workload == "http.rate" {
            c.workload = "acme.rpc".into();
        }
    }
    assert!(ringside::registry::workload("acme.rpc").is_none());
    let bare = String::from_utf8(Format::Markdown.render(&run).unwrap()).unwrap();
    assert!(
        !bare.contains("calls/s"),
        "no units without the file's record"
    );
    assert!(
        !bare.contains("per call"),
        "no units without the file's record"
    );
    run.workloads.insert(
        "acme.rpc".into(),
        serde_json::from_value(serde_json::json!({
            "net": true, "rate_unit": "calls/s", "op_unit": "call", "rate_sweep": true,
            "open_loop": true, "ladder": false, "sweep": ["rate_per_sec"], "verdict": "p99"
        }))
        .unwrap(),
    );
    let md = String::from_utf8(Format::Markdown.render(&run).unwrap()).unwrap();
    let finding = md
        .lines()
        .find(|l| l.starts_with("- [acme.rpc]"))
        .expect("a finding for acme.rpc");
    assert!(
        finding.contains("at equal load, by server CPU per call"),
        "{finding}"
    );
    assert!(
        md.contains("capacity ") && md.contains(" calls/s with p99 <= 10 ms"),
        "{md}"
    );
    assert!(md.contains("open loop, latency from the intended send time: "));
}
