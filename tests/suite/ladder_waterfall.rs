//! The ladder's waterfall in report.html, on a fixture ladder (tests/fixtures/ladder.json:
//! echo.ladder at 50 and 1000 connections, capacity and equal load, every rung measured but
//! the top one (uring-bundle-inc-minwait-napi), unavailable with loopback's reason; its CPU figures are made up for the test):
//! one waterfall per point, rungs in ladder order with their minimum kernels, the NAPI rung a
//! gap with its reason, cheaper and dearer bars told apart. With /usr/bin/chromium the report
//! is also rendered at 1280 and 390 px (RINGSIDE_SCREENSHOTS=DIR keeps the screenshots).

use ringside::export::Format;
use ringside::model::ladder::RUNGS;
use ringside::results::store;
use std::path::Path;

fn fixture_html() -> String {
    let run = store::load(Path::new("tests/fixtures/ladder.json")).expect("fixture loads");
    String::from_utf8(Format::Html.render(&run).unwrap()).unwrap()
}

/// The `<figure>` elements that are waterfalls, in document order.
fn waterfalls(html: &str) -> Vec<&str> {
    html.match_indices("data-waterfall=")
        .map(|(i, _)| &html[i..i + html[i..].find("</figure>").unwrap()])
        .collect()
}

/// The contents of an SVG's `<text>` elements, trimmed, in document order.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .map(|t| {
            let body = &t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()];
            body.trim().to_string()
        })
        .collect()
}

#[test]
fn one_waterfall_per_point_with_rungs_in_order_kernels_and_gaps() {
    let html = fixture_html();
    let ws = waterfalls(&html);
    assert_eq!(
        ws.len(),
        4,
        "50 and 1000 connections, capacity and equal load"
    );
    for (w, point) in ws.iter().zip([
        "conns=50:",
        "conns=50 equal-load:",
        "conns=1000:",
        "conns=1000 equal-load:",
    ]) {
        assert!(w.contains(point), "title names the point {point}");
        assert!(w.contains(&format!("data-rungs=\"{}\"", RUNGS.len())));
        // Rung labels in ladder order, each followed by its minimum kernel.
        let texts = texts(w);
        let mut at = 0;
        for r in RUNGS {
            let i = texts[at..]
                .iter()
                .position(|t| t == r.model)
                .unwrap_or_else(|| panic!("{} missing or out of order: {texts:?}", r.model));
            at += i + 1;
            let kernel = format!("&gt;= {}", r.min_kernel);
            assert!(
                texts[at].starts_with(&kernel),
                "{}: kernel {kernel} on its label: {}",
                r.model,
                texts[at]
            );
        }
        // The NAPI rung is a gap with its reason, drawn and in the caption whole.
        assert!(w.contains("gap: unavailable: loopback has no NAPI"), "{w}");
        assert!(w.contains(
            "uring-bundle-inc-minwait-napi: unavailable: loopback has no NAPI: a loopback \
             socket's \
             SO_INCOMING_NAPI_ID is 0"
        ));
        // Cheaper (uring-defer) and dearer (uring-bundle) bars in their own colours; the
        // within-noise uring-bundle-inc change is marked so.
        assert!(w.contains("fill=\"#009E73\""), "cheaper colour");
        assert!(w.contains("fill=\"#D55E00\""), "dearer colour");
        assert!(w.contains("(not decided)"));
        assert!(w.contains("(-12.5%) *"), "uring-defer's significant change");
    }
}

#[test]
fn the_waterfalls_render_in_headless_chromium_at_laptop_and_phone_widths() {
    const CHROMIUM: &str = "/usr/bin/chromium";
    if !Path::new(CHROMIUM).exists() {
        eprintln!("ladder_waterfall: chromium check SKIPPED: {CHROMIUM} is absent");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let report = d.path().join("report.html");
    std::fs::write(&report, fixture_html()).unwrap();
    let keep = std::env::var_os("RINGSIDE_SCREENSHOTS").map(std::path::PathBuf::from);
    for (name, size) in [("laptop", "1280,2400"), ("phone", "390,2400")] {
        let shot = keep
            .as_deref()
            .unwrap_or(d.path())
            .join(format!("waterfall-{name}.png"));
        let out = std::process::Command::new(CHROMIUM)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                &format!("--user-data-dir={}", d.path().join("profile").display()),
                &format!("--screenshot={}", shot.display()),
                &format!("--window-size={size}"),
                &format!("file://{}#w-echo-ladder", report.display()),
            ])
            .output()
            .expect("chromium runs");
        assert!(out.status.success(), "{name}: {out:?}");
        let png = std::fs::read(&shot).expect("screenshot written");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000);
    }
}

#[test]
fn report_writes_each_waterfall_as_an_svg_linked_from_report_md() {
    let d = tempfile::tempdir().unwrap();
    assert_cmd::Command::cargo_bin("ringside")
        .unwrap()
        .args(["report", "tests/fixtures/ladder.json", "--out"])
        .arg(d.path())
        .assert()
        .success();
    let md = std::fs::read_to_string(d.path().join("report.md")).unwrap();
    for i in 1..=4 {
        let file = format!("charts/echo.ladder-waterfall-{i}.svg");
        assert!(md.contains(&format!("]({file})")), "report.md links {file}");
        let svg = std::fs::read_to_string(d.path().join(&file)).unwrap();
        assert!(
            svg.starts_with("<svg")
                && svg.contains("xmlns=")
                && svg.contains("uring-bundle-inc-minwait-napi")
        );
    }
    assert!(!d.path().join("charts/echo.ladder-waterfall-5.svg").exists());
}
