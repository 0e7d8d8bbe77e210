//! The module graph has no circles: the library's top-level modules form layers, each using only
//! the ones below it. The only circle allowed is the registry naming the workload types it lists
//! (`registry` <-> `workload`). Unit tests (`#[cfg(test)]` blocks) may reach anywhere: they are
//! not part of the graph.
//!
//! The graph is read from the sources as text: every `crate::NAME` outside comments and test
//! blocks is an edge from the file's top-level module to NAME.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The one allowed circle.
const ALLOWED: &[(&str, &str)] = &[("registry", "workload"), ("workload", "registry")];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The file's text without its `#[cfg(test)]` items (from the attribute to the end of the file:
/// the project keeps test modules last) and without line comments.
fn code_of(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") {
            break;
        }
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

fn edges_in(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.insert(name);
        }
        rest = after;
    }
    out
}

fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if top == "main" || top == "lib" {
            continue;
        }
        let code = code_of(&fs::read_to_string(&f).unwrap());
        let deps = g.entry(top.clone()).or_default();
        for d in edges_in(&code) {
            if d != top {
                deps.insert(d);
            }
        }
    }
    g
}

/// A path of edges from `from` back to `to`, if any (depth-first).
fn path(
    g: &BTreeMap<String, BTreeSet<String>>,
    from: &str,
    to: &str,
    seen: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if from == to {
        return Some(vec![to.to_string()]);
    }
    if !seen.insert(from.to_string()) {
        return None;
    }
    for next in g.get(from).into_iter().flatten() {
        if ALLOWED.contains(&(from, next.as_str())) {
            continue;
        }
        if let Some(mut p) = path(g, next, to, seen) {
            p.insert(0, from.to_string());
            return Some(p);
        }
    }
    None
}

/// Every circle through an edge that is not the allowed one, as "a -> b -> ... -> a".
fn circles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut out = Vec::new();
    for (a, deps) in g {
        for b in deps {
            if ALLOWED.contains(&(a.as_str(), b.as_str())) {
                continue;
            }
            if let Some(p) = path(g, b, a, &mut BTreeSet::new()) {
                out.push(format!("{a} -> {}", p.join(" -> ")));
            }
        }
    }
    out
}

#[test]
fn top_level_modules_form_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    assert!(g.len() > 10, "read too few modules: {g:?}");
    let found = circles(&g);
    assert!(
        found.is_empty(),
        "module circles (only registry <-> workload is allowed):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_finds_a_circle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default().insert("a".into());
    g.entry("registry".into())
        .or_default()
        .insert("workload".into());
    g.entry("workload".into())
        .or_default()
        .insert("registry".into());
    let found = circles(&g);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found.iter().all(|c| !c.starts_with("registry")));
    assert_eq!(
        edges_in("use crate::measure::Hist; // crate::nope\n"),
        BTreeSet::from(["measure".to_string(), "nope".to_string()])
    );
    assert!(code_of("use crate::a;\n// crate::b\n#[cfg(test)]\nuse crate::c;\n").contains("a"));
    assert!(!code_of("use crate::a;\n// crate::b\n#[cfg(test)]\nuse crate::c;\n").contains("::b"));
    assert!(!code_of("use crate::a;\n#[cfg(test)]\nuse crate::c;\n").contains("::c"));
}
