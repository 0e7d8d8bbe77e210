//! The README's recipes ("Answering a question") run as written, at the smoke profile: each
//! `<!-- recipe: NAME -->` block's command goes through `sh` with `ringside` on the PATH,
//! `--profile smoke --duration 0.2 --quiet --out DIR` added to `ringside run`, and the
//! placeholders a reader replaces (their server, the old build, the two runs to compare)
//! replaced by this build.

use crate::common::bin::bin;
use std::path::Path;
use std::process::Command;

/// The recipes: (name, command with continuation lines joined).
fn recipes() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        let Some(name) = l.strip_prefix("<!-- recipe: ") else {
            continue;
        };
        let name = name.trim_end_matches("-->").trim().to_string();
        assert_eq!(
            lines.next(),
            Some("```sh"),
            "recipe {name}: no ```sh block after it"
        );
        let mut cmd = String::new();
        for l in lines.by_ref() {
            if l == "```" {
                break;
            }
            match l.strip_suffix('\\') {
                Some(head) => cmd.push_str(head),
                None => {
                    cmd.push_str(l);
                    cmd.push('\n');
                }
            }
        }
        out.push((name, cmd.trim().to_string()));
    }
    out
}

/// Runs `cmd` through sh in `dir` with this build as `ringside` on the PATH.
fn sh(dir: &Path, cmd: &str) -> std::process::Output {
    let bindir = dir.join("bin");
    std::fs::create_dir_all(&bindir).unwrap();
    let link = bindir.join("ringside");
    if !link.exists() {
        std::os::unix::fs::symlink(bin(), &link).unwrap();
    }
    let path = format!(
        "{}:{}",
        bindir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("sh")
        .args(["-c", cmd])
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .unwrap()
}

fn text(o: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `ringside run ...` at smoke, into `out`; the placeholders replaced. Windows of 200 ms
/// (smoke's are 400): the test checks that each command runs and measures, not its figures,
/// and `my-server` alone is some 56 cells of the echo suite (65 s at 400 ms, 2026-11-28).
fn smoke(cmd: &str, out: &str) -> String {
    let serve = format!(
        "{} serve --protocol echo --model epoll-et --addr 127.0.0.1:{{port}}",
        bin().display()
    );
    assert!(cmd.starts_with("ringside run "), "{cmd}");
    // This build's path holds "target/release/ringside": that one first.
    cmd.replace("target/release/ringside", &bin().display().to_string())
        .replace("/path/to/old/ringside", &bin().display().to_string())
        .replace("/path/to/your/server --port {port}", &serve)
        .replacen(
            "ringside run ",
            &format!("ringside run --profile smoke --duration 0.2 --quiet --out {out} "),
            1,
        )
}

#[test]
fn the_readme_recipes_run_as_written() {
    let recipes = recipes();
    let names: Vec<&str> = recipes.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["io_uring-for-http", "my-server", "ab-builds", "compare"],
        "the README's recipes changed: update this test"
    );
    let dir = tempfile::tempdir().unwrap();
    for (name, cmd) in &recipes {
        let t = std::time::Instant::now();
        struct T<'a>(&'a str, std::time::Instant);
        impl Drop for T<'_> {
            fn drop(&mut self) {
                eprintln!("TIMING {}: {:?}", self.0, self.1.elapsed());
            }
        }
        let _t = T(name, t);
        if name == "compare" {
            // The two runs it compares: the same selection twice.
            for run in ["BEFORE", "AFTER"] {
                let o = sh(
                    dir.path(),
                    &smoke(
                        "ringside run echo.rate --models epoll-lt",
                        &format!("ringside-results/{run}"),
                    ),
                );
                assert!(o.status.success(), "{run}: {}", text(&o));
            }
            let o = sh(dir.path(), cmd);
            // Smoke's one repetition per cell is too few to test a change: compare says so
            // (INCONCLUSIVE, exit 3), never PASS; a cell that failed in one of the two runs
            // is a REGRESSION (1). Bad input or a crash is neither.
            let stdout = String::from_utf8_lossy(&o.stdout);
            let word = match o.status.code() {
                Some(3) => "INCONCLUSIVE: ",
                Some(1) => "REGRESSION: ",
                _ => panic!("compare: {}", text(&o)),
            };
            assert!(stdout.starts_with(word), "compare: {}", text(&o));
            assert!(
                stdout.contains("echo.rate"),
                "compare names no cell: {}",
                text(&o)
            );
            continue;
        }
        let out = format!("out-{name}");
        let o = sh(dir.path(), &smoke(cmd, &out));
        assert!(o.status.success(), "recipe {name}: `{cmd}`: {}", text(&o));
        let results: serde_json::Value = serde_json::from_slice(
            &std::fs::read(dir.path().join(&out).join("results.json")).unwrap(),
        )
        .unwrap();
        let measured = results["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["status"] == "measured")
            .count();
        assert!(measured > 0, "recipe {name} measured nothing");
        if name == "my-server" || name == "ab-builds" {
            let ext = results["cases"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["model"].as_str().is_some_and(|m| m.starts_with("ext:")))
                .filter(|c| c["status"] == "measured")
                .count();
            assert!(ext > 0, "recipe {name}: no contender cell measured");
        }
    }
}

/// Issue 45: the recipes call `ringside`, so the README says how to put it on PATH before the
/// first of them: in the quick start's commands and again where the recipes begin.
#[test]
fn the_readme_says_how_to_put_ringside_on_path_before_the_recipes() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let install = "cargo install --path .";
    let first_recipe = text.find("<!-- recipe: ").expect("a recipe");
    let quick = text.find("## Quick start").expect("a quick start");
    let answering = text
        .find("## Answering a question")
        .expect("the recipes' section");
    let quick_block = &text[quick..answering];
    assert!(
        quick_block
            .lines()
            .any(|l| l.starts_with(install) && l.contains("PATH")),
        "{quick_block}"
    );
    assert!(
        text[answering..first_recipe].contains(install),
        "{}",
        &text[answering..first_recipe]
    );
    // No line before the install instruction calls `ringside` as a command.
    let first_install = text.find(install).unwrap();
    assert!(
        !text[..first_install]
            .lines()
            .any(|l| l.trim_start().starts_with("ringside ")),
        "a recipe calls ringside before the README says how to install it"
    );
}
