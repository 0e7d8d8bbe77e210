//! The module graph has no circles: the library's top-level modules form layers, each using only
//! the ones below it. Unit tests (`#[cfg(test)]` items, wherever they sit in a file) may reach
//! anywhere: they are not part of the graph.
//!
//! The graph is read from the sources as text: every `crate::NAME` and every NAME of a group
//! `crate::{NAME, ...}` outside comments, string literals and test items is an edge from the
//! file's top-level module to NAME.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Circles allowed: none (the registry naming the workload types it lists, and the
/// environment keeping the run's load engine, were the last two).
const ALLOWED: &[(&str, &str)] = &[];

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

/// The file's code: comments and the contents of string and char literals blanked, and every
/// `#[cfg(test)]` item cut out, from the attribute to the end of the item it marks (to its `;`,
/// or its `{ ... }` matched brace by brace): a test-only function high in a file hides nothing
/// below it.
fn code_of(text: &str) -> String {
    let code = blank(text);
    let b = code.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while let Some(at) = code[i..].find("#[cfg(test)]") {
        let at = i + at;
        out.push_str(&code[i..at]);
        let mut j = at + "#[cfg(test)]".len();
        let mut depth = 0usize;
        while j < b.len() {
            match b[j] {
                b';' if depth == 0 => {
                    j += 1;
                    break;
                }
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        j += 1;
                        break;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        i = j.min(b.len());
    }
    out.push_str(&code[i..]);
    out
}

/// `text` with its comments (line, block, nested) and the insides of its string, raw string
/// and char literals replaced by spaces (newlines kept); lifetimes are left as they are.
fn blank(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let keep_lines = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(keep_lines(c[i]));
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && (i == 0 || !ident(c[i - 1]) || (c[i - 1] == 'b' && (i < 2 || !ident(c[i - 2]))))
            && matches!(next, Some('"') | Some('#'))
        {
            // A raw string r"..." or r#"..."#: to the quote followed by as many hashes.
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            out.push_str("r\"");
            j += 1;
            while j < c.len() {
                if c[j] == '"' && (1..=hashes).all(|k| c.get(j + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                out.push(keep_lines(c[j]));
                j += 1;
            }
            out.push('"');
            i = j;
        } else if c[i] == '"' {
            out.push('"');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    out.push(keep_lines(c[i]));
                    i += 1;
                }
            }
            out.push('"');
            i += 1;
        } else if c[i] == '\'' && (next == Some('\\') || c.get(i + 2) == Some(&'\'')) {
            // A char literal ('x', '\n', '\u{7f}'); a lifetime ('a) has no closing quote.
            out.push('\'');
            i += 1;
            if c.get(i) == Some(&'\\') {
                out.push(' ');
                i += 1;
            }
            while i < c.len() && c[i] != '\'' {
                out.push(' ');
                i += 1;
            }
            out.push('\'');
            i += 1;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// The top-level modules `code` names: `crate::NAME`, and each NAME of a group
/// `crate::{NAME, NAME::...}`.
fn edges_in(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let name_at = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect()
    };
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        if let Some(group) = after.trim_start().strip_prefix('{') {
            // Top-level names of the group: those at its first brace level.
            let mut depth = 0;
            let mut start = true;
            for (k, ch) in group.char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if c.is_whitespace() => {}
                    _ if start && depth == 0 => {
                        let n = name_at(&group[k..]);
                        if !n.is_empty() {
                            out.insert(n);
                        }
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name = name_at(after);
            if !name.is_empty() {
                out.insert(name);
            }
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
        "module circles (none is allowed):\n{}",
        found.join("\n")
    );
}

/// Edges that would not close a circle but break the split of deciding from wording: the
/// runner asks the analysis what is undecided, never an exporter; the analysis decides without
/// reading how anything is worded or measured further up; and the exporters word what the
/// analysis holds, reading claims and their vocabulary through `analysis`, never from the
/// numbers (`stats`) themselves.
const FORBIDDEN: &[(&str, &str)] = &[
    ("runner", "export"),
    ("analysis", "export"),
    ("analysis", "runner"),
    ("export", "stats"),
];

/// The files under `src/<from>` whose code reads `crate::<to>`.
fn files_with_edge(src: &Path, from: &str, to: &str) -> Vec<String> {
    let mut files = Vec::new();
    let dir = src.join(from);
    if dir.is_dir() {
        rust_files(&dir, &mut files);
    }
    let single = src.join(format!("{from}.rs"));
    if single.is_file() {
        files.push(single);
    }
    let mut out: Vec<String> = files
        .iter()
        .filter(|f| edges_in(&code_of(&fs::read_to_string(f).unwrap())).contains(to))
        .map(|f| f.strip_prefix(src).unwrap().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

#[test]
fn deciding_never_reads_the_wording_nor_wording_the_numbers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    assert!(
        g.contains_key("analysis") && g.contains_key("export"),
        "{g:?}"
    );
    let found: Vec<String> = FORBIDDEN
        .iter()
        .filter(|(a, b)| g.get(*a).is_some_and(|d| d.contains(*b)))
        .map(|(a, b)| format!("{a} -> {b} in {:?}", files_with_edge(&src, a, b)))
        .collect();
    assert!(found.is_empty(), "forbidden edges: {found:?}");
    // The file check sees an edge where there is one: `analysis` reads `stats`.
    assert!(!files_with_edge(&src, "analysis", "stats").is_empty());
}

#[test]
fn the_check_finds_a_circle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default().insert("a".into());
    g.entry("d".into()).or_default().insert("a".into());
    let found = circles(&g);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found.iter().all(|c| !c.starts_with('d')), "{found:?}");
}

#[test]
fn edges_are_read_from_code_only() {
    assert_eq!(
        edges_in(&code_of("use crate::measure::Hist; // crate::nope\n")),
        BTreeSet::from(["measure".to_string()])
    );
    let group = "use crate::{env::EnvReport, load::{self, Engine},\n    stats};\n";
    assert_eq!(
        edges_in(&code_of(group)),
        BTreeSet::from(["env".to_string(), "load".to_string(), "stats".to_string()])
    );
    let strings = r##"let a = "crate::one {"; let b = r#"crate::two"#; let c = '{';
        /* crate::three /* nested */ crate::four */ let d: &'static str = "\"{";
        use crate::five;"##;
    assert_eq!(
        edges_in(&code_of(strings)),
        BTreeSet::from(["five".to_string()])
    );
}

/// A test-only item cuts out that item, not the rest of the file: an upward import planted
/// below a test-only function is seen.
#[test]
fn a_test_only_item_hides_only_itself() {
    let text = "use crate::a;\n\
        #[cfg(test)]\nfn helper() -> u8 { let x = { crate::hidden::f() }; x }\n\
        #[cfg(test)]\nuse crate::also_hidden;\n\
        fn later() { crate::planted::g(); }\n\
        #[cfg(test)]\nmod tests {\n    use crate::in_tests;\n    fn f() { if true { } }\n}\n\
        fn last() { crate::after_tests::h(); }\n";
    assert_eq!(
        edges_in(&code_of(text)),
        BTreeSet::from([
            "a".to_string(),
            "planted".to_string(),
            "after_tests".to_string()
        ])
    );
    // The module graph of a crate with such a file: the planted import closes a circle.
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.insert("low".into(), edges_in(&code_of(text)));
    g.entry("planted".into()).or_default().insert("low".into());
    assert_eq!(circles(&g).len(), 2, "{:?}", circles(&g));
}
