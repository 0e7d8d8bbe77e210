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
    let cs = charts::build(&run);
    assert!(!cs.is_empty());
    assert_eq!(
        dom.matches("<svg").count(),
        cs.len(),
        "one rendered <svg> per chart"
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
    // A laptop and a phone. RINGSIDE_SCREENSHOTS=DIR keeps the screenshots for a look.
    let keep = std::env::var_os("RINGSIDE_SCREENSHOTS").map(std::path::PathBuf::from);
    for (name, size) in [("laptop", "1280,2000"), ("phone", "390,2400")] {
        let shot = keep
            .as_deref()
            .unwrap_or(d.path())
            .join(format!("report-{name}.png"));
        chromium(&profile)
            .args([
                &format!("--screenshot={}", shot.display()),
                &format!("--window-size={size}"),
                &url,
            ])
            .assert()
            .success();
        let png = std::fs::read(&shot).expect("screenshot written");
        assert!(
            png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
            "{name}: {} bytes",
            png.len()
        );
    }
}
