//! Exporters from a frozen results file (`tests/fixtures/results.json`: a smoke run trimmed
//! by hand, with measured, unavailable, failed and not_applicable cells and poll/select
//! variants): exact Markdown, CSV and JSON against golden files, structural checks of the
//! HTML, and `ringside compare` on a known regression and on pure noise.
//!
//! After an intended change of output, regenerate the golden files with
//! `RINGSIDE_BLESS=1 cargo test --release --test export_golden` and review the diff.

use crate::common;

use common::bin::{fixture, ringside};

use ringside::export::charts;
use ringside::export::Format;
use ringside::results::{store, RunResults, Status};
use std::path::{Path, PathBuf};

fn run() -> RunResults {
    store::load(&fixture()).expect("fixture loads")
}

pub(super) fn golden(name: &str, got: &[u8]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/golden")
        .join(name);
    if std::env::var_os("RINGSIDE_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with RINGSIDE_BLESS=1 to create it",
            path.display()
        )
    });
    if want != got {
        let (w, g) = (String::from_utf8_lossy(&want), String::from_utf8_lossy(got));
        let line = w
            .lines()
            .zip(g.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(w.lines().count().min(g.lines().count()));
        panic!(
            "{name} differs from {} at line {}:\n want: {:?}\n  got: {:?}",
            path.display(),
            line + 1,
            w.lines().nth(line),
            g.lines().nth(line)
        );
    }
}

#[test]
fn fixture_has_every_kind_of_cell() {
    let r = run();
    for s in [
        Status::Measured,
        Status::Unavailable,
        Status::Failed,
        Status::NotApplicable,
    ] {
        assert!(r.cases.iter().any(|c| c.status == s), "no {s} cell");
    }
    assert!(r.cases.iter().any(|c| c.variant.is_some()));
}

#[test]
fn markdown_csv_json_match_golden_files() {
    let r = run();
    golden("report.md", &Format::Markdown.render(&r).unwrap());
    golden("results.csv", &Format::Csv.render(&r).unwrap());
    golden("results.json", &Format::Json.render(&r).unwrap());
    golden("table.txt", &Format::Table.render(&r).unwrap());
}

fn html(r: &RunResults) -> String {
    String::from_utf8(Format::Html.render(r).unwrap()).unwrap()
}

/// The `<figure ...>...</figure>` of a chart.
fn figure<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("data-chart=\"{id}\""))
        .unwrap_or_else(|| panic!("no figure for chart {id}"));
    let end = start + html[start..].find("</figure>").unwrap();
    &html[start..end]
}

#[test]
fn html_is_self_contained_and_complete() {
    let r = run();
    let h = html(&r);
    for bad in [
        "http://", "https://", "src=", "<script", "@import", "url(", "<link",
    ] {
        assert!(!h.contains(bad), "the HTML contains {bad:?}");
    }
    let cs = charts::build(&r, &ringside::analysis::Analysis::of(&r));
    assert_eq!(
        h.matches("<svg").count(),
        2 * cs.len(),
        "two inline SVGs per chart: a laptop's and a phone's"
    );
    // The kinds of chart the micro suite asks for.
    for id in [
        "micro.pipe-latency",
        "micro.pipe-ops",
        "micro.pipe-syscalls",
        "micro.pipe-cpu",
        "micro.fd_scaling-latency",
        "micro.batching-latency",
    ] {
        assert!(cs.iter().any(|c| c.id == id), "no chart {id}");
    }
    let fd = cs
        .iter()
        .find(|c| c.id == "micro.fd_scaling-latency")
        .unwrap();
    assert!(fd.log_x && fd.log_y);
    let labels: Vec<&str> = fd.series.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["epoll-lt", "blocking/poll", "blocking/select"]);
    for c in &cs {
        let f = figure(&h, &c.id);
        assert!(f.contains("<svg"), "{}", c.id);
        assert!(
            f.contains(&format!("data-series=\"{}\"", c.series.len())),
            "{}",
            c.id
        );
        assert!(!c.series.is_empty(), "{} has no series", c.id);
        for s in &c.series {
            assert!(
                f.contains(&format!(">\n{}\n</text>", s.label)),
                "{}: legend lacks {}",
                c.id,
                s.label
            );
        }
    }
    // Every cell that was not measured is listed with its reason.
    for c in r.cases.iter().filter(|c| c.status != Status::Measured) {
        let why = c.reason.as_deref().unwrap();
        assert!(h.contains(why), "reason {why:?} missing from the HTML");
    }
    // The same model has the same marker and dash in every chart, and the same colour in
    // every chart of a workload; no two series of a chart share a colour.
    let styles = charts::Styles::for_run(&r);
    let mut colour: std::collections::HashMap<(&str, &str), Option<usize>> = Default::default();
    for c in &cs {
        let mut seen = std::collections::HashSet::new();
        for s in &c.series {
            assert_eq!(s.style.slot, styles.of(&s.label).slot);
            let was = *colour
                .entry((c.workload.as_str(), s.label.as_str()))
                .or_insert(s.style.colour);
            assert_eq!(was, s.style.colour, "{}: {}", c.id, s.label);
            if let Some(k) = s.style.colour {
                assert!(seen.insert(k), "{}: colour {k} twice", c.id);
            }
        }
    }
    for needle in [
        "Environment",
        "Reproduce",
        "ringside run micro --profile smoke --runs 5",
        "io_uring",
        "mitigations",
        "CPU plan",
        "timer",
        "Verdicts",
        "class=\"status finished\"",
    ] {
        assert!(h.contains(needle), "{needle:?} missing");
    }
}

/// Text from the results file is text in the HTML wherever it shows, never markup, and never
/// a placeholder of the page: a profile holding "{{body}}" once put the whole body in <title>.
#[test]
fn html_shows_hostile_text_from_the_results_file_as_text() {
    let mut r = run();
    let hostile = "<script>x(\"a\" & 'b')</script>{{body}}";
    r.profile = format!("smoke{hostile}");
    r.command.push(hostile.into());
    for c in r.cases.iter_mut().filter(|c| c.status != Status::Measured) {
        c.reason = Some(hostile.into());
    }
    let h = html(&r);
    assert!(!h.contains("<script"), "raw markup from the results file");
    let text = "&lt;script&gt;x(&quot;a&quot; &amp; 'b')&lt;/script&gt;{{body}}";
    let title = &h[h.find("<title>").unwrap() + "<title>".len()..h.find("</title>").unwrap()];
    assert!(
        title.contains(text) && !title.contains('<'),
        "title: {title}"
    );
    // Every unmeasured cell's reason, as text.
    for c in r.cases.iter().filter(|c| c.status != Status::Measured) {
        let line = format!("{}: {text}</li>", c.status);
        assert!(h.contains(&line), "{line} missing");
    }
    assert_eq!(h.matches("<body>").count(), 1);
    assert_eq!(h.matches("<header>").count(), 1);
}

#[test]
fn verdicts_are_computed_with_noise_and_crossovers() {
    let r = run();
    let pipe = ringside::export::words::verdicts_in(&r, "micro.pipe");
    assert!(!pipe.is_empty());
    // One ranked line per point (micro.pipe is bars: no sweep lines).
    assert!(
        pipe.iter().all(|v| v
            .text
            .starts_with("ranked by median latency per op (lower is better) at ")),
        "{pipe:#?}"
    );
    let mut params = Vec::new();
    for c in r.cases.iter().filter(|c| c.workload == "micro.pipe") {
        if !params.contains(&c.params) {
            params.push(c.params.clone());
        }
    }
    let points = params.len();
    assert!(
        pipe.len() <= points,
        "{} lines for {points} points",
        pipe.len()
    );
    // Unavailable cells are never compared.
    assert!(!pipe
        .iter()
        .any(|v| v.text.contains("uring-sqpoll") && v.text.contains("4096")));
    let batching = ringside::export::words::verdicts_in(&r, "micro.batching");
    assert!(
        batching
            .iter()
            .any(|v| v.text.starts_with("along batch") && v.text.contains("epoll-lt: batch=")),
        "{batching:?}"
    );

    // A made-up sweep where b overtakes a between x=10 and x=100, far outside the noise.
    let mut m = r.clone();
    m.cases.retain(|c| c.workload == "micro.fd_scaling");
    for c in &mut m.cases {
        let fds = c.params.0["fds"].as_f64().unwrap();
        let v = match c.label().as_str() {
            "epoll-lt" => 5000.0,
            _ => 10.0 * fds,
        };
        let f = c.figures.as_mut().unwrap();
        f.latency_ns.p50 = v;
        f.run_p50_ns.min = v * 0.99;
        f.run_p50_ns.max = v * 1.01;
        f.runs_p50_ns = [0.99, 1.0, 1.01, 1.0, 0.995, 1.005]
            .iter()
            .map(|k| k * v)
            .collect();
    }
    let v = ringside::export::words::verdicts_in(&m, "micro.fd_scaling");
    let cross: Vec<_> = v
        .iter()
        .filter(|v| v.text.starts_with("crossover"))
        .collect();
    assert!(
        cross.iter().any(|v| v.text
            == "crossover: epoll-lt overtakes blocking/poll between fds=100 and fds=1000"
            && !v.within_noise),
        "{v:?}"
    );
    // Rounds that swing by orders of magnitude decide nothing: marked.
    for c in &mut m.cases {
        let f = c.figures.as_mut().unwrap();
        let v = f.latency_ns.p50;
        f.runs_p50_ns = vec![1.0, 1e9, v, 1e3, 1e6, v * 1.5];
    }
    let v = ringside::export::words::verdicts_in(&m, "micro.fd_scaling");
    assert!(
        v.iter()
            .all(|v| v.within_noise && v.line().ends_with("(nothing decided)")),
        "{v:?}"
    );
    // A crossing not decided at both points is no evidence: counted in one line, not listed.
    assert!(!v.iter().any(|v| v.text.starts_with("crossover")), "{v:?}");
    assert!(
        v.iter().any(|v| v.text.contains("crossing")
            && v.text.contains("along fds not claimed")
            && v.text.starts_with(|c: char| c.is_ascii_digit())),
        "{v:?}"
    );
}

#[test]
fn unfinished_runs_are_marked() {
    let mut r = run();
    r.finished = false;
    let h = html(&r);
    assert!(h.contains("class=\"status unfinished\""));
    let md = String::from_utf8(Format::Markdown.render(&r).unwrap()).unwrap();
    assert!(md.contains("**unfinished**"));
}

/// The terminal's default is short: the findings, a row of numbers per cell and a line a
/// suite, nothing wider than 100 columns, ending with the summary; `--format table` adds
/// every wide table before it.
#[test]
fn the_terminal_default_is_short_and_ends_with_a_summary() {
    let d = tempfile::tempdir().unwrap();
    let report = |format: Option<&str>| {
        let mut c = ringside();
        c.args(["report", fixture().to_str().unwrap(), "--out"])
            .arg(d.path().join("out"));
        if let Some(f) = format {
            c.args(["--format", f]);
        }
        let a = c.assert().success();
        String::from_utf8_lossy(&a.get_output().stdout).to_string()
    };
    let short = report(None);
    let wide = report(Some("table"));
    let r = run();
    let suites: Vec<String> = charts::workloads(&r)
        .iter()
        .map(|w| w.split('.').next().unwrap().to_string())
        .collect();
    for out in [&short, &wide] {
        let tail = &out[out.rfind("\nSummary").expect("a closing summary")..];
        for s in &suites {
            assert!(tail.contains(&format!("\n  {s} ")), "{s}: {tail}");
        }
        assert!(tail.contains("pipe: "), "{tail}");
    }
    // Issue 45: the bottom line first, the findings after it.
    assert!(short.starts_with("Bottom line\n  - "), "{short}");
    assert!(short.contains("\n  Confidence: "), "{short}");
    assert!(short
        .find("\nFindings")
        .is_some_and(|f| f < short.find("\nNumbers").unwrap()));
    assert!(!short.contains("median (p50)"), "{short}");
    assert!(wide.contains("median (p50)"), "{wide}");
    let widest = |s: &str| s.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(widest(&short) <= 100, "{}", widest(&short));
    assert!(widest(&wide) > 100, "{}", widest(&wide));
    // Issue 45: the short form's numbers are one row per cell (a model at a point), not the
    // wide tables' row per metric.
    assert!(short.contains("\nNumbers per point: "), "{short}");
    assert!(!wide.contains("\nNumbers per point: "), "{wide}");
    assert!(short.lines().count() * 3 < wide.lines().count() * 2);
}

#[test]
fn report_writes_html_markdown_and_svgs_from_json_alone() {
    let d = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture()).unwrap()).unwrap();
    v["finished"] = false.into();
    let p = d.path().join("results.json");
    std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
    let out = d.path().join("out");
    let a = ringside()
        .args([
            "report",
            p.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(["--format", "csv"])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&a.get_output().stdout).to_string();
    assert!(stdout.starts_with("workload,model,variant"), "{stdout}");
    let h = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(h.contains("unfinished"));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let r = run();
    for c in charts::build(&r, &ringside::analysis::Analysis::of(&r)) {
        let svg = out.join("charts").join(format!("{}.svg", c.id));
        let s = std::fs::read_to_string(&svg).unwrap_or_else(|e| panic!("{}: {e}", svg.display()));
        assert!(s.starts_with("<svg"), "{}", svg.display());
        assert!(
            md.contains(&format!("](charts/{}.svg)", c.id)),
            "report.md does not link {}",
            c.id
        );
    }
}

/// Writes a copy of the fixture with `edit` applied to the case matching `key`.
fn variant_file(dir: &Path, name: &str, edit: impl Fn(&str, &mut serde_json::Value)) -> PathBuf {
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture()).unwrap()).unwrap();
    for c in v["cases"].as_array_mut().unwrap() {
        let key = format!(
            "{} {} {}",
            c["workload"].as_str().unwrap(),
            c["model"].as_str().unwrap(),
            c["params"]
        );
        edit(&key, c);
    }
    super::compare_gate::save(dir, name, &v)
}

fn scale(c: &mut serde_json::Value, field: &str, by: impl Fn(usize) -> f64) {
    if let Some(a) = c.get_mut(field).and_then(|a| a.as_array_mut()) {
        for (i, x) in a.iter_mut().enumerate() {
            *x = (x.as_f64().unwrap() * by(i)).into();
        }
    }
}

/// `ringside compare` of the fixture against `new`: its stdout, the exit code asserted.
fn compare_with_fixture(new: &Path, code: i32) -> String {
    let a = ringside()
        .args([
            "compare",
            fixture().to_str().unwrap(),
            new.to_str().unwrap(),
        ])
        .assert()
        .code(code);
    String::from_utf8_lossy(&a.get_output().stdout).to_string()
}

#[test]
fn compare_flags_a_known_regression() {
    let d = tempfile::tempdir().unwrap();
    // uring and epoll-lt on pipes at both sizes: every run 30% slower, throughput down
    // accordingly (eight tests with every repetition apart: the correction over all of them
    // confirms them).
    let slowed = [
        "micro.pipe uring {\"msg_bytes\":64}",
        "micro.pipe uring {\"msg_bytes\":4096}",
        "micro.pipe epoll-lt {\"msg_bytes\":64}",
        "micro.pipe epoll-lt {\"msg_bytes\":4096}",
    ];
    let slow = variant_file(d.path(), "slow.json", |key, c| {
        if slowed.contains(&key) {
            scale(c, "runs_p50_ns", |_| 1.3);
            scale(c, "runs_ops_per_sec", |_| 1.0 / 1.3);
        }
    });
    let out = compare_with_fixture(&slow, 1);
    let line = out
        .lines()
        .find(|l| l.starts_with("micro.pipe uring msg_bytes=64 "))
        .unwrap_or_else(|| panic!("cell missing:\n{out}"));
    assert!(
        line.contains("REGRESSION") && line.contains("+30.0%"),
        "{line}"
    );
    // The change carries its 95% bootstrap interval over the repetitions.
    assert!(line.contains("+30.0% [+"), "{line}");
    let rows = |out: &str, word: &str| {
        out.lines()
            .filter(|l| l.starts_with("micro.") && l.contains(word))
            .count()
    };
    assert_eq!(rows(&out, "REGRESSION"), 4, "{out}");
    assert!(
        out.starts_with("REGRESSION: 4 regression(s) beyond 5%: micro.pipe"),
        "{out}"
    );
    // The same change under a 40% threshold is not a regression; six repetitions a side
    // cannot confirm a change alone among the fixture's tests, so it is not a pass either.
    ringside()
        .args([
            "compare",
            fixture().to_str().unwrap(),
            slow.to_str().unwrap(),
        ])
        .args(["--threshold", "40"])
        .assert()
        .code(3);
    // One cell alone 30% slower, at a point of four models: it moves each of the other
    // three by -8.4% relative to their point's others (the slowed cell is in their
    // reference), so four tests of that point reach the correction together; only the
    // slowed cell moved beyond the threshold as measured, so it alone is a regression.
    let lone = variant_file(d.path(), "lone.json", |key, c| {
        if key == slowed[0] {
            scale(c, "runs_p50_ns", |_| 1.3);
            scale(c, "runs_ops_per_sec", |_| 1.0 / 1.3);
        }
    });
    let out = compare_with_fixture(&lone, 1);
    assert_eq!(rows(&out, "REGRESSION"), 1, "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("micro.pipe uring msg_bytes=64 "))
        .unwrap();
    assert!(line.contains("REGRESSION"), "{line}");
    // A model alone at its point (micro.syscall) 30% slower: no neighbour shares its test,
    // and six repetitions a side cannot confirm a lone change among every test compare
    // makes (2/924 = 0.002 at best): untested, and the gate is inconclusive.
    let alone = variant_file(d.path(), "alone.json", |key, c| {
        if key.starts_with("micro.syscall blocking") {
            scale(c, "runs_p50_ns", |_| 1.3);
            scale(c, "runs_ops_per_sec", |_| 1.0 / 1.3);
        }
    });
    let out = compare_with_fixture(&alone, 3);
    assert!(!out.contains("REGRESSION"), "{out}");
    assert!(
        out.contains("UNTESTED") && out.contains("a lone change among"),
        "{out}"
    );
}

#[test]
fn compare_of_pure_noise_calls_nothing_and_lists_one_sided_cells() {
    let d = tempfile::tempdir().unwrap();
    // Every run jittered by +-0.3% and reordered; one cell dropped.
    let noisy = variant_file(d.path(), "noisy.json", |_, c| {
        for f in ["runs_p50_ns", "runs_ops_per_sec"] {
            scale(c, f, |i| if i % 2 == 0 { 1.003 } else { 0.997 });
            if let Some(a) = c.get_mut(f).and_then(|a| a.as_array_mut()) {
                a.reverse();
            }
        }
    });
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&noisy).unwrap()).unwrap();
    v["cases"].as_array_mut().unwrap().remove(0);
    super::compare_gate::save(d.path(), "noisy.json", &v);
    // A cell NEW lacks is untested (and so are the rest, six repetitions a side being too
    // few for a change alone among the tests): inconclusive unless that is accepted.
    let a = ringside()
        .args([
            "compare",
            fixture().to_str().unwrap(),
            noisy.to_str().unwrap(),
        ])
        .assert()
        .code(3);
    let out = String::from_utf8_lossy(&a.get_output().stdout).to_string();
    assert!(
        out.contains("  micro.syscall blocking: in BASE only"),
        "{out}"
    );
    let a = ringside()
        .args([
            "compare",
            fixture().to_str().unwrap(),
            noisy.to_str().unwrap(),
            "--allow-untested",
        ])
        .assert()
        .code(0);
    let out = String::from_utf8_lossy(&a.get_output().stdout).to_string();
    assert!(!out.contains("REGRESSION"), "{out}");
    assert!(
        out.contains("only in") && out.contains("micro.syscall blocking"),
        "{out}"
    );
    assert!(
        out.contains("not compared: micro.pipe uring-sqpoll msg_bytes=4096"),
        "{out}"
    );
    assert!(out.contains("environment: no difference"), "{out}");
}

#[test]
fn compare_refuses_bad_files_with_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("truncated.json");
    std::fs::write(&t, b"{\"schema_version\": 1, \"cases\": [").unwrap();
    let a = ringside()
        .args(["compare", fixture().to_str().unwrap(), t.to_str().unwrap()])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    assert!(
        err.contains("truncated.json") && err.contains("truncated"),
        "{err}"
    );
    ringside()
        .args([
            "compare",
            "/nonexistent/base.json",
            fixture().to_str().unwrap(),
        ])
        .assert()
        .code(2);
    ringside()
        .args([
            "compare",
            fixture().to_str().unwrap(),
            fixture().to_str().unwrap(),
        ])
        .args(["--threshold", "-3"])
        .assert()
        .code(2);
}

#[test]
fn progress_is_plain_lines_off_a_terminal_and_silent_with_quiet() {
    let d = tempfile::tempdir().unwrap();
    let a = ringside()
        .args(["run", "micro.syscall", "--profile", "smoke", "--runs", "2"])
        .args(["--out", d.path().join("a").to_str().unwrap()])
        .assert()
        .success();
    let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    assert!(
        err.lines()
            .any(|l| l.starts_with("[1/1] micro.syscall blocking") && l.contains("p50")),
        "{err}"
    );
    assert!(
        !err.contains('\r') && !err.contains("\x1b["),
        "no bar codes off a terminal: {err:?}"
    );
    assert!(err.contains("report.html"), "{err}");
    let q = ringside()
        .args([
            "run",
            "micro.syscall",
            "--profile",
            "smoke",
            "--runs",
            "2",
            "--quiet",
        ])
        .args(["--out", d.path().join("b").to_str().unwrap()])
        .assert()
        .success();
    let err = String::from_utf8_lossy(&q.get_output().stderr).to_string();
    assert!(!err.contains("[1/1]"), "--quiet printed progress: {err}");
    assert!(d.path().join("b/report.html").exists() && d.path().join("b/report.md").exists());
}

#[test]
fn per_model_and_common_params_do_not_split_points() {
    // Give uring a parameter of its own (as a queue depth or a pool size would be).
    let mut r = run();
    for c in r.cases.iter_mut() {
        if c.workload == "micro.pipe" && c.model == "uring" {
            c.params = c.params.clone().with("depth", 8);
        }
    }
    let roles = charts::ParamRoles::of(&r, "micro.pipe");
    assert_eq!(roles.per_model, ["depth"]);
    assert!(roles.common.is_empty());
    let batching = charts::ParamRoles::of(&r, "micro.batching");
    assert_eq!(batching.common_text(), "msg_bytes=64");
    let tables: Vec<_> =
        ringside::export::table::metric_tables(&r, &ringside::analysis::Analysis::of(&r))
            .into_iter()
            .filter(|t| t.title.starts_with("micro.pipe"))
            .collect();
    assert_eq!(tables.len(), 2, "still one table per msg_bytes");
    assert!(
        tables[0].header.contains(&"uring (depth=8)".to_string()),
        "{:?}",
        tables[0].header
    );
    let bars = charts::build(&r, &ringside::analysis::Analysis::of(&r))
        .into_iter()
        .find(|c| c.id == "micro.pipe-latency")
        .unwrap();
    assert_eq!(bars.categories, ["msg_bytes=64", "msg_bytes=4096"]);
}

/// Issue 45: `report --hgrm` and `--timeline` take a cell by the words that tell it from the
/// others; a selector naming several cells exits 2 listing them, one naming none lists the
/// file's cells.
#[test]
fn hgrm_and_timeline_take_a_cell_by_its_varying_parameters() {
    let fixture = fixture();
    let report = |flag: &str, cell: &str| {
        let o = ringside()
            .arg("report")
            .arg(&fixture)
            .args([flag, cell])
            .output()
            .unwrap();
        assert!(o.stdout.is_empty());
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    // Found by model and parameter (the frozen file keeps no histogram or timeline, which
    // the refusal says of the cell it found).
    for flag in ["--hgrm", "--timeline"] {
        let (code, err) = report(flag, "uring msg_bytes=4096");
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("'micro.pipe uring msg_bytes=4096' "), "{err}");
        assert!(
            !err.contains("no such cell") && !err.contains("names"),
            "{err}"
        );
    }
    let (code, err) = report("--hgrm", "fds=100");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("'fds=100': names 3 cells"), "{err}");
    for label in ["blocking/poll", "blocking/select", "epoll-lt"] {
        assert!(
            err.contains(&format!("\n  micro.fd_scaling {label} fds=100")),
            "{err}"
        );
    }
    let (code, err) = report("--timeline", "fds=7");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("no such cell") && err.contains("micro.pipe blocking msg_bytes=64"),
        "{err}"
    );
}
