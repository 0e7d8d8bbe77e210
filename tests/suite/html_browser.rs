//! The HTML report in a real browser: a smoke run's report.html loaded by headless Chromium
//! (Debian's `chromium`, installed by `.ci/run`): a screenshot is taken, the rendered DOM must
//! hold every chart as an `<svg>` with its series, and the console must stay silent (the
//! report has no script, so any console line, "Uncaught" or a failed load, is a defect).
//! Without /usr/bin/chromium the test prints that it skipped and why (a failure in CI:
//! `common::tools`).

use crate::common;

use assert_cmd::Command;
use ringside::export::charts;
use ringside::results::store;
use std::path::Path;
use std::time::Duration;

const CHROMIUM: &str = "/usr/bin/chromium";

/// Headless Chromium with a private profile and no network side-traffic, 60 s at most.
fn chromium(profile: &Path) -> Command {
    let mut c = Command::new(CHROMIUM);
    c.timeout(Duration::from_secs(60)).args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
        &format!("--user-data-dir={}", profile.display()),
    ]);
    c
}

/// Console messages and uncaught errors in Chromium's stderr log.
fn console_lines(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| {
            l.contains(":CONSOLE")
                || l.contains("Uncaught")
                || l.contains("Failed to load resource")
        })
        .map(str::to_string)
        .collect()
}

/// The rendered DOM of `url`, and the console lines the page produced.
fn dump_dom(profile: &Path, url: &str) -> (String, Vec<String>) {
    let out = chromium(profile)
        .args(["--dump-dom", url])
        .output()
        .expect("chromium runs");
    (
        String::from_utf8_lossy(&out.stdout).to_string(),
        console_lines(&out.stderr),
    )
}

#[test]
fn report_renders_in_headless_chromium_without_console_errors() {
    if !Path::new(CHROMIUM).exists() {
        common::tools::missing(
            "chromium",
            &format!("{CHROMIUM} is absent (install Debian's `chromium`; .ci/run does)"),
        );
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("run");
    Command::cargo_bin("ringside")
        .unwrap()
        .timeout(Duration::from_secs(180))
        .args([
            "run",
            "micro",
            "micro.fd_scaling",
            "micro.batching",
            "--profile",
            "smoke",
            "--runs",
            "2",
            "--quiet",
        ])
        .args(["--out", out.to_str().unwrap()])
        .assert()
        .success();
    let report = out.join("report.html");
    assert!(report.exists());
    let url = format!("file://{}", report.display());
    let profile = d.path().join("chromium-profile");

    // The console check can fail: a page with an error is caught.
    let bad = d.path().join("bad.html");
    std::fs::write(
        &bad,
        "<html><body><script>undefinedFn();</script></body></html>",
    )
    .unwrap();
    let (_, errs) = dump_dom(&profile, &format!("file://{}", bad.display()));
    assert!(
        errs.iter().any(|l| l.contains("Uncaught")),
        "the console check missed an uncaught error: {errs:?}"
    );

    let (dom, errs) = dump_dom(&profile, &url);
    assert!(errs.is_empty(), "console output from the report: {errs:#?}");
    let run = store::load(&out.join("results.json")).unwrap();
    let cs = charts::build(&run, &ringside::analysis::Analysis::of(&run));
    assert!(!cs.is_empty());
    assert_eq!(
        dom.matches("<svg").count(),
        2 * cs.len(),
        "two rendered <svg> per chart: a laptop's and a phone's"
    );
    for c in &cs {
        let start = dom
            .find(&format!("data-chart=\"{}\"", c.id))
            .unwrap_or_else(|| panic!("chart {} not in the rendered DOM", c.id));
        let fig = &dom[start..start + dom[start..].find("</figure>").unwrap()];
        assert!(fig.contains("<svg"), "{}: no svg", c.id);
        assert!(
            fig.contains(&format!("data-series=\"{}\"", c.series.len())),
            "{}: series count",
            c.id
        );
        // Drawn series: each has its legend entry and at least one plotted shape.
        for s in &c.series {
            assert!(fig.contains(&s.label), "{}: legend lacks {}", c.id, s.label);
        }
        assert!(
            fig.matches("<polygon").count() >= c.series.len(),
            "{}: fewer markers than series",
            c.id
        );
    }

    // The findings open the report, before the environment, one linked line per workload.
    let f = dom
        .find("id=\"findings\"")
        .expect("findings section rendered");
    assert!(f < dom.find("id=\"environment\"").unwrap());
    for w in charts::workloads(&run) {
        assert!(
            dom[f..].contains(&format!(">{w}</a>: ")),
            "no finding for {w}"
        );
    }
    check_axes(&profile, &report, &run, "micro", false);

    // The default run's report (a quick run on the 2-vCPU VM, 2026-11-29, written before
    // equal-load points were typed: its `offered` params read as the marker): a bottom line
    // per network suite, and every chart clear at both widths.
    let default = d.path().join("default");
    Command::cargo_bin("ringside")
        .unwrap()
        .timeout(Duration::from_secs(60))
        .args(["report", "tests/fixtures/default-run.json", "--out"])
        .arg(&default)
        .assert()
        .success();
    let run = store::load(Path::new("tests/fixtures/default-run.json")).unwrap();
    let cs = charts::build(&run, &ringside::analysis::Analysis::of(&run));
    let suites = cs.iter().filter(|c| c.id.starts_with("summary-")).count();
    assert_eq!(suites, 2, "echo and http");
    bottom_line_answers(&profile, &default.join("report.html"), &cs);
    let html = std::fs::read_to_string(default.join("report.html")).unwrap();
    assert!(!html.contains("offered=") && html.contains("equal-load"));
    check_axes(
        &profile,
        &default.join("report.html"),
        &run,
        "default-run",
        false,
    );

    // Servers and files: many series, faded ones, cells that fell behind their offered rate,
    // log and linear axes, page-cache and O_DIRECT panels.
    let fixture = d.path().join("fixture");
    Command::cargo_bin("ringside")
        .unwrap()
        .timeout(Duration::from_secs(60))
        .args(["report", "tests/fixtures/charts.json", "--out"])
        .arg(&fixture)
        .assert()
        .success();
    let run = store::load(Path::new("tests/fixtures/charts.json")).unwrap();
    let cs = charts::build(&run, &ringside::analysis::Analysis::of(&run));
    assert!(cs.iter().any(|c| c.series.iter().any(|s| s.faded)));
    assert!(cs.iter().any(|c| c.id == "http.rate-p99-achieved"));
    // Each network suite's summary, and a troubled cell's repetitions over time.
    assert!(cs.iter().any(|c| c.id == "summary-http"));
    assert!(cs.iter().any(|c| c.id == "http.rate-timeline-ops-1"));
    // Equal-load points have no throughput chart (flat by design); O_DIRECT has its panel.
    assert!(cs.iter().any(|c| c.id == "storage.randread-ops-2"));
    assert!(cs
        .iter()
        .any(|c| c.series.iter().any(|s| s.points.iter().any(|p| p.behind))));
    check_axes(
        &profile,
        &fixture.join("report.html"),
        &run,
        "servers",
        true,
    );

    bottom_line_answers(&profile, &fixture.join("report.html"), &cs);

    // Faded only on the figure the ranking decided on (http.rate: CPU per op at equal load),
    // never on throughput or p99: in the charts and in the rendered captions.
    let dom = std::fs::read_to_string(fixture.join("report.html")).unwrap();
    let mut faded_cpu = 0;
    for c in cs.iter().filter(|c| c.workload == "http.rate") {
        let start = dom.find(&format!("data-chart=\"{}\"", c.id)).unwrap();
        let fig = &dom[start..start + dom[start..].find("</figure>").unwrap()];
        let faded = c.series.iter().any(|s| s.faded);
        assert_eq!(fig.contains("faded:"), faded, "{}", c.id);
        if faded {
            assert_eq!(c.metric, charts::Metric::CpuPerOp, "{}: faded", c.id);
            faded_cpu += 1;
        }
    }
    assert!(
        faded_cpu > 0,
        "no model faded on CPU per op: the check cannot fail"
    );

    // The same file with fewer models and one offered rate: each model keeps its colour,
    // marker and dash, and the one-rate sweep is drawn as points, not a line.
    let mut fewer: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("tests/fixtures/charts.json").unwrap())
            .unwrap();
    let keep = ["blocking", "epoll-lt", "tokio", "uring-sqpoll"];
    fewer["cases"].as_array_mut().unwrap().retain(|c| {
        keep.contains(&c["model"].as_str().unwrap_or_default())
            && (c["workload"] != "http.rate" || c["params"]["rate_per_sec"] == 40000)
    });
    let fewer_json = d.path().join("fewer.json");
    std::fs::write(&fewer_json, serde_json::to_vec(&fewer).unwrap()).unwrap();
    let fewer_out = d.path().join("fewer");
    Command::cargo_bin("ringside")
        .unwrap()
        .timeout(Duration::from_secs(60))
        .arg("report")
        .arg(&fewer_json)
        .arg("--out")
        .arg(&fewer_out)
        .assert()
        .success();
    let small = store::load(&fewer_json).unwrap();
    let small_cs = charts::build(&small, &ringside::analysis::Analysis::of(&small));
    let mut styles = std::collections::HashMap::new();
    for s in cs.iter().flat_map(|c| &c.series) {
        if !s.label.starts_with("repetition") {
            styles.insert(s.label.clone(), s.style);
        }
    }
    let mut same = 0;
    for s in small_cs.iter().flat_map(|c| &c.series) {
        if let Some(st) = styles.get(&s.label) {
            assert_eq!(
                *st, s.style,
                "{}: another style in the smaller report",
                s.label
            );
            same += 1;
        }
    }
    assert!(same > 0);
    // And in the drawings: a model's legend swatch is the same colour in both reports.
    let swatch = |report: &Path, label: &str| -> Option<String> {
        let svg = std::fs::read_to_string(report.join("charts").join("http.rate-cpu.svg")).ok()?;
        let at = svg.find(&format!(">\n{label}\n</text>"))?;
        let before = &svg[..at];
        let fill = before.rfind("stroke=\"#")? + 8;
        Some(before[fill..fill + 7].to_string())
    };
    for label in keep {
        let (a, b) = (swatch(&fixture, label), swatch(&fewer_out, label));
        assert!(a.is_some(), "{label}: no legend entry in the full report");
        assert_eq!(a, b, "{label}: its colour differs between the reports");
    }
    assert!(small_cs
        .iter()
        .any(|c| c.workload == "http.rate" && c.kind == charts::Kind::Points));
    check_axes(
        &profile,
        &fewer_out.join("report.html"),
        &small,
        "fewer-models",
        false,
    );
}

/// The bottom line opens the rendered `report`, before the findings: for every network suite
/// of its charts `cs` (each has a summary chart), a sentence with a figure and its 95%
/// interval ("echo.conns (...): ... used 1.14 ± 0.05 times epoll-lt's ... (1.09 to 1.17; ...)").
fn bottom_line_answers(profile: &Path, report: &Path, cs: &[charts::Chart]) {
    let (dom, _) = dump_dom(profile, &format!("file://{}", report.display()));
    let at = dom
        .find("id=\"bottom-line\"")
        .expect("bottom line rendered");
    assert!(at < dom.find("id=\"findings\"").unwrap());
    let bottom = &dom[at..at + dom[at..].find("</section>").unwrap()];
    let suites: Vec<&str> = cs
        .iter()
        .filter_map(|c| c.id.strip_prefix("summary-"))
        .collect();
    assert!(
        !suites.is_empty(),
        "no network suite in {}",
        report.display()
    );
    for suite in suites {
        let answered = bottom.split("<li>").skip(1).any(|li| {
            li.starts_with(&format!("{suite}."))
                && li.contains(" ± ")
                && li.contains(" to ")
                && li.chars().any(|ch| ch.is_ascii_digit())
        });
        assert!(
            answered,
            "no bottom line with a number and interval for {suite}: {bottom}"
        );
    }
}

/// Where screenshots go: RINGSIDE_SCREENSHOTS=DIR, else the test's output directory.
fn screenshot_dir() -> std::path::PathBuf {
    let dir = std::env::var_os("RINGSIDE_SCREENSHOTS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("html_browser"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Appended to a copy of the report (the report itself has no script): opens every
/// workload's `<details>`, then writes, for each chart drawing the browser shows, its axes' data and the
/// box and rendered font size of each of its texts, as JSON in `<pre id="probe">`.
const PROBE: &str = r#"<script>
(function () {
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  var out = [];
  document.querySelectorAll('figure.chart div.drawn').forEach(function (div) {
    var r = div.getBoundingClientRect();
    if (r.width < 1) return;
    var svg = div.querySelector('svg');
    var scale = r.width / svg.viewBox.baseVal.width;
    var texts = [];
    svg.querySelectorAll('text').forEach(function (t) {
      var s = t.textContent.trim();
      if (!s) return;
      var b = t.getBoundingClientRect();
      texts.push({s: s, l: b.left, t: b.top, r: b.right, b: b.bottom,
                  px: parseFloat(t.getAttribute('font-size')) * scale});
    });
    var titles = [];
    svg.querySelectorAll('title').forEach(function (t) { titles.push(t.textContent.trim()); });
    var d = div.dataset;
    out.push({chart: div.closest('figure').dataset.chart, layout: d.layout, titles: titles,
              x_scale: d.xScale, y_scale: d.yScale, x_title: d.xTitle, y_title: d.yTitle,
              x_ticks: d.xTicks, y_ticks: d.yTicks, texts: texts});
  });
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
  // The key-value tables' cells (every probed fact): the narrowest one rendered, px.
  var kv = {cells: 0, narrowest: 1e9, what: ''};
  document.querySelectorAll('table.kv th, table.kv td').forEach(function (c) {
    var w = c.getBoundingClientRect().width;
    kv.cells += 1;
    if (w < kv.narrowest) { kv.narrowest = w; kv.what = c.textContent.slice(0, 40); }
  });
  var k = document.createElement('pre');
  k.id = 'kv';
  k.textContent = JSON.stringify(kv);
  document.body.appendChild(k);
})();
</script>"#;

/// The smallest rendered text a chart may have, CSS px.
const MIN_TEXT_PX: f64 = 10.0;

/// The narrowest a key-value table's cell may render, CSS px: at a phone's 390 px a key and
/// its value each take the width (stacked), never a column a character wide.
const MIN_KV_CELL_PX: f64 = 120.0;

/// A time unit's nanoseconds.
fn time_unit(u: &str) -> Option<f64> {
    match u {
        "ns" => Some(1.0),
        "us" => Some(1e3),
        "ms" => Some(1e6),
        "s" => Some(1e9),
        _ => None,
    }
}

/// A tick label's value: "250", "2.5 ms" (time), "40k", "1.5M" (counts); `unit` is the
/// title's time unit, if it names one. `None`: not a number with a unit its axis allows.
fn tick_value(label: &str, time: bool, unit: Option<f64>) -> Option<f64> {
    if time {
        match (label.rsplit_once(' '), unit) {
            (None, Some(u)) => Some(label.parse::<f64>().ok()? * u),
            (Some((n, u)), None) => Some(n.parse::<f64>().ok()? * time_unit(u)?),
            // "0" needs no unit.
            (None, None) if label == "0" => Some(0.0),
            _ => None,
        }
    } else if let Some(p) = label.strip_suffix('%') {
        // A percentile on a spectrum's 1/(1-q) axis.
        Some(1.0 / (1.0 - p.parse::<f64>().ok()? / 100.0))
    } else {
        let (n, mul) = match label.strip_suffix('k') {
            Some(n) => (n, 1e3),
            None => match label.strip_suffix('M') {
                Some(n) => (n, 1e6),
                None => (label, 1.0),
            },
        };
        Some(n.parse::<f64>().ok()? * mul)
    }
}

/// The style sheet's rule that stacks a key-value table at a phone's width.
const KV_STACKED: &str =
    "table.kv, .kv tbody, .kv tr, .kv th, .kv td { display: block; width: 100%; }";

/// Every chart of `report` in headless Chromium at 1280 and 390 px, all clear (see
/// [`problems`]); with `break_it`, the same report broken four ways, each caught. Screenshots of both
/// widths (every workload's section open) are kept.
fn check_axes(
    profile: &Path,
    report: &Path,
    run: &ringside::results::RunResults,
    name: &str,
    break_it: bool,
) {
    let html = std::fs::read_to_string(report).unwrap();
    let shots = screenshot_dir();
    for width in [1280, 390] {
        let found = problems(profile, report, &html, run, width);
        assert!(found.is_empty(), "{name} at {width} px: {found:#?}");
        // Screenshots of the opened page, for a look.
        let probe = report.with_file_name("probe.html");
        let shot = shots.join(format!("{name}-{width}.png"));
        chromium(profile)
            .args([
                &format!("--screenshot={}", shot.display()),
                &format!("--window-size={width},6000"),
                &format!("file://{}", probe.display()),
            ])
            .assert()
            .success();
        let png = std::fs::read(&shot).expect("screenshot written");
        assert!(
            png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
            "{name} at {width}: {} bytes",
            png.len()
        );
        eprintln!("screenshot: {}", shot.display());
    }
    if !break_it {
        return;
    }
    // The checks can fail: overlapping texts, a phone shown the laptop's drawing, a wrong
    // unit, a log scale not said.
    let style = |css: &str| html.replace("</head>", &format!("<style>{css}</style></head>"));
    let broken = [
        (
            1280,
            style("figure.chart svg text { font-size: 40px !important; }"),
            "overlap",
        ),
        (
            390,
            style(
                "figure.chart .narrow { display: none !important; } \
                 figure.chart .wide { display: block !important; }",
            ),
            "renders at",
        ),
        (
            1280,
            html.replace(", us", ", ns"),
            "outside the labelled ticks",
        ),
        (1280, html.replace(" (log)", ""), "title"),
        // A category label with a word dropped.
        (
            1280,
            html.replacen(">\nhttp.rate 40 k req/s\n<", ">\nhttp.rate 40 k\n<", 1),
            "lost a word",
        ),
        // The probed facts' table without its phone layout: its values squeezed.
        (390, html.replace(KV_STACKED, ""), "renders"),
    ];
    for (width, page, expect) in broken {
        assert_ne!(page, html, "{expect:?}: the page is not broken");
        let bad = report.with_file_name("broken.html");
        std::fs::write(&bad, page).unwrap();
        let found = problems(
            profile,
            &bad,
            &std::fs::read_to_string(&bad).unwrap(),
            run,
            width,
        );
        assert!(
            found.iter().any(|p| p.contains(expect)),
            "{name} at {width} px: a broken page's {expect:?} not caught: {found:#?}"
        );
    }
}

/// What is wrong with the charts of `html` (written beside `report`) in headless Chromium at
/// `width` px: each must show one drawing, the one for its width; an axis title says "(log)"
/// exactly where the scale is log; a time axis names its unit in the title exactly where its
/// ticks are bare numbers in that unit, else every tick carries its own; tick labels are
/// distinct, drawn, and span the data (the lowest decade of a log axis labelled); no two
/// texts overlap; no text renders under [`MIN_TEXT_PX`].
fn problems(
    profile: &Path,
    report: &Path,
    html: &str,
    run: &ringside::results::RunResults,
    width: u32,
) -> Vec<String> {
    let probe = report.with_file_name("probe.html");
    std::fs::write(&probe, html.replace("</body>", &format!("{PROBE}</body>"))).unwrap();
    let url = format!("file://{}", probe.display());
    let cs = charts::build(run, &ringside::analysis::Analysis::of(run));
    let layout = if width < 640 { "narrow" } else { "wide" };
    let mut found = Vec::new();
    let mut fail = |m: String| {
        if found.len() < 40 {
            found.push(m)
        }
    };
    let size = format!("--window-size={width},3000");
    let out = chromium(profile)
        .args([size.as_str(), "--dump-dom", url.as_str()])
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.find("<pre id=\"probe\">").expect("the probe ran") + 16;
    let json = dom[start..start + dom[start..].find("</pre>").unwrap()]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let drawn: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    let kv_at = dom
        .find("<pre id=\"kv\">")
        .expect("the probe measured the tables")
        + 13;
    let kv: serde_json::Value = serde_json::from_str(
        &dom[kv_at..kv_at + dom[kv_at..].find("</pre>").unwrap()]
            .replace("&quot;", "\"")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&"),
    )
    .unwrap();
    let narrowest = kv["narrowest"].as_f64().unwrap_or(0.0);
    if kv["cells"].as_u64().unwrap_or(0) == 0 {
        fail("no key-value table rendered".into());
    } else if narrowest < MIN_KV_CELL_PX {
        fail(format!(
            "a probed fact's cell {:?} renders {narrowest:.0} px wide",
            kv["what"]
        ));
    }
    if drawn.len() != cs.len() {
        fail(format!(
            "{} drawings shown for {} charts",
            drawn.len(),
            cs.len()
        ));
    }
    for c in &cs {
        let Some(e) = drawn.iter().find(|e| e["chart"] == c.id.as_str()) else {
            fail(format!("{} not shown", c.id));
            continue;
        };
        let at = c.id.as_str();
        if e["layout"] != layout {
            fail(format!("{at}: the {} drawing shown", e["layout"]));
        }
        let texts = e["texts"].as_array().unwrap();
        let drawn_text = |t: &str| texts.iter().any(|x| x["s"] == t);
        let field = |k: &str| e[k].as_str().unwrap_or_default().to_string();
        // Axis kinds: "(log)" exactly on log scales, and log only where the chart is.
        let (ys, yt) = (field("y_scale"), field("y_title"));
        if (ys == "log") != c.log_y {
            fail(format!("{at}: y scale {ys}, chart log_y {}", c.log_y));
        }
        if yt.ends_with(" (log)") != (ys == "log") {
            fail(format!("{at}: y title {yt:?} on a {ys} scale"));
        }
        if !drawn_text(&yt) {
            fail(format!("{at}: y title {yt:?} not drawn"));
        }
        let (xs, xt) = (field("x_scale"), field("x_title"));
        if xt.contains("(log)") != (xs == "log") {
            fail(format!("{at}: x title {xt:?} on a {xs} scale"));
        }
        if c.kind == charts::Kind::Lines && !drawn_text(&xt) {
            fail(format!("{at}: x title {xt:?} not drawn"));
        }
        if c.kind.categorical() && xs != "linear" {
            fail(format!("{at}: bars on a {xs} x"));
        }
        // Units: a time axis names the unit its bare ticks are in, or its ticks do.
        use charts::Metric::*;
        let time = matches!(c.metric, LatencyP50 | LatencyP99 | CpuPerOp);
        let bare = yt.trim_end_matches(" (log)");
        let unit = bare.rsplit_once(", ").and_then(|(_, u)| time_unit(u));
        if !time && unit.is_some() {
            fail(format!("{at}: a time unit on {yt:?}"));
        }
        // Ticks: distinct, drawn, spanning the data.
        for (axis, ticks) in [("x", field("x_ticks")), ("y", field("y_ticks"))] {
            if axis == "x" && c.kind.categorical() {
                continue;
            }
            let ticks: Vec<&str> = ticks.split('|').collect();
            if ticks.len() < 2 {
                fail(format!("{at}: {axis} ticks {ticks:?}"));
            }
            let mut seen = std::collections::HashSet::new();
            for t in &ticks {
                if !seen.insert(*t) {
                    fail(format!("{at}: {axis} tick {t:?} twice"));
                }
                if !drawn_text(t) {
                    fail(format!("{at}: {axis} tick {t:?} not drawn"));
                }
            }
            let y = axis == "y";
            let vals: Vec<f64> = ticks
                .iter()
                .filter_map(|t| {
                    let v = tick_value(t, y && time, if y { unit } else { None });
                    if v.is_none() {
                        fail(format!("{at}: {axis} tick {t:?} under the title {yt:?}"));
                    }
                    v
                })
                .collect();
            let lo = vals.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let data = c
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| if y { p.y } else { p.x }))
                .filter(|v| *v > 0.0 || (y && ys != "log"));
            for v in data {
                if !(lo <= v * (1.0 + 1e-9) && v <= hi * (1.0 + 1e-9)) {
                    fail(format!(
                        "{at}: {axis} value {v} outside the labelled ticks {ticks:?}"
                    ));
                    break;
                }
            }
        }
        // Labels keep their words: each category's words, in order, among the drawn texts
        // (compared without spaces: a word wider than its category may be split), or cut
        // short with "…" and whole in a <title>; each series' label drawn whole.
        let all: String = texts
            .iter()
            .filter_map(|t| t["s"].as_str())
            .collect::<String>()
            .split_whitespace()
            .collect();
        let titles: Vec<&str> = e["titles"]
            .as_array()
            .map(|v| v.iter().filter_map(|t| t.as_str()).collect())
            .unwrap_or_default();
        if c.kind.categorical() {
            for cat in &c.categories {
                let cat = if cat.is_empty() { "all models" } else { cat };
                let whole: String = cat.split_whitespace().collect();
                let cut = titles.contains(&cat) && all.contains('…');
                if !(all.contains(&whole) || cut) {
                    fail(format!("{at}: the label {cat:?} lost a word"));
                }
            }
        }
        for s in &c.series {
            if !drawn_text(&s.label) {
                fail(format!("{at}: the legend's {:?} not drawn whole", s.label));
            }
        }
        // A line chart draws a line: two x values at least.
        if c.kind == charts::Kind::Lines {
            let mut xs: Vec<f64> = c
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.x))
                .collect();
            xs.sort_by(f64::total_cmp);
            xs.dedup();
            if xs.len() < 2 {
                fail(format!("{at}: a line chart of one point"));
            }
        }
        // Texts: readable, and no two overlap (boxes less a pixel each side).
        let bx = |t: &serde_json::Value| {
            let f = |k: &str| t[k].as_f64().unwrap();
            (f("l") + 1.0, f("t") + 1.0, f("r") - 1.0, f("b") - 1.0)
        };
        for (i, a) in texts.iter().enumerate() {
            let px = a["px"].as_f64().unwrap();
            if px < MIN_TEXT_PX {
                fail(format!("{at}: {} renders at {px:.1} px", a["s"]));
            }
            let (al, top, ar, ab) = bx(a);
            for b in &texts[..i] {
                let (bl, bt, br, bb) = bx(b);
                if !(ar <= bl || br <= al || ab <= bt || bb <= top) {
                    fail(format!("{at}: texts {} and {} overlap", a["s"], b["s"]));
                }
            }
        }
    }
    found
}
