//! results.json's JSON Schema: `docs/results.schema.json` is generated from the serde types
//! (`ringside::results::json_schema`) and `docs/results.md` from the schema, so neither can
//! drift from what ringside writes; every results.json a test reads through
//! `common::schema::results_json` is validated against it.
//!
//! After an intended change of the results types, regenerate both with
//! `RINGSIDE_BLESS=1 cargo test --release --test suite schema::` and review the diff.

use crate::common;

use common::schema::{results_json, validate, violations};
use serde_json::{Map, Value};
use std::path::Path;

fn docs(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs")
        .join(name)
}

/// `want` is the committed `docs/NAME`, or becomes it under RINGSIDE_BLESS.
fn committed(name: &str, want: &str) {
    let path = docs(name);
    if std::env::var_os("RINGSIDE_BLESS").is_some() {
        std::fs::write(&path, want).unwrap();
        return;
    }
    let got = std::fs::read_to_string(&path).unwrap_or_default();
    if got != want {
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "docs/{name} is not what the types generate (first difference at line {}: {:?} \
             should be {:?}); regenerate it with RINGSIDE_BLESS=1 cargo test --release --test \
             suite schema::",
            line + 1,
            got.lines().nth(line),
            want.lines().nth(line)
        );
    }
}

fn schema_text() -> String {
    serde_json::to_string_pretty(&ringside::results::json_schema()).unwrap() + "\n"
}

#[test]
fn the_committed_schema_is_the_one_the_types_generate() {
    let s = ringside::results::json_schema();
    assert_eq!(s["$id"], ringside::results::SCHEMA_ID);
    assert_eq!(
        s["$schema"], "https://json-schema.org/draft/2020-12/schema",
        "{s:#}"
    );
    committed("results.schema.json", &schema_text());
}

/// A type's short name in the docs: a `$ref` is its definition's name, linked.
fn type_of(s: &Value) -> String {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap();
        return format!("[{name}](#{})", name.to_lowercase());
    }
    if let Some(c) = s.get("const") {
        return format!("`{c}`");
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        return e
            .iter()
            .map(|v| format!("`{v}`"))
            .collect::<Vec<_>>()
            .join(" \\| ");
    }
    for k in ["anyOf", "oneOf"] {
        if let Some(a) = s.get(k).and_then(Value::as_array) {
            return a.iter().map(type_of).collect::<Vec<_>>().join(" \\| ");
        }
    }
    let ty = match s.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" \\| "),
        _ => return "any".into(),
    };
    if let Some(p) = s.get("prefixItems").and_then(Value::as_array) {
        return format!("[{}]", p.iter().map(type_of).collect::<Vec<_>>().join(", "));
    }
    if let Some(i) = s.get("items") {
        return ty.replace("array", &format!("array of {}", type_of(i)));
    }
    if let Some(a) = s.get("additionalProperties").filter(|a| a.is_object()) {
        return ty.replace("object", &format!("map of {}", type_of(a)));
    }
    if let Some(f) = s.get("format").and_then(Value::as_str) {
        return format!("{ty} ({f})");
    }
    ty
}

fn one_line(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// One definition: its description, then a table of its fields, or its variants.
fn section(out: &mut String, name: &str, s: &Map<String, Value>) {
    out.push_str(&format!("\n### {name}\n\n"));
    if let Some(d) = s.get("description").and_then(Value::as_str) {
        out.push_str(&one_line(d));
        out.push_str("\n\n");
    }
    let required: Vec<&str> = s
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut props: Vec<(String, Value)> = s
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    // A flattened optional struct (a measured cell's figures) is an `anyOf` of the object and
    // nothing: its fields are listed as optional ones.
    for k in ["anyOf", "oneOf", "allOf"] {
        for alt in s.get(k).and_then(Value::as_array).into_iter().flatten() {
            if let Some(p) = alt.get("properties").and_then(Value::as_object) {
                props.extend(p.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
    }
    if !props.is_empty() {
        out.push_str("| field | type | | meaning |\n|---|---|---|---|\n");
        for (k, v) in &props {
            let req = if required.contains(&k.as_str()) {
                "required"
            } else {
                "optional"
            };
            let d = v.get("description").and_then(Value::as_str).unwrap_or("");
            out.push_str(&format!(
                "| `{k}` | {} | {req} | {} |\n",
                type_of(v),
                one_line(d)
            ));
        }
    } else {
        let alts = s.get("oneOf").or_else(|| s.get("anyOf"));
        if let Some(a) = alts.and_then(Value::as_array) {
            out.push_str("| value | meaning |\n|---|---|\n");
            for alt in a {
                let d = alt.get("description").and_then(Value::as_str).unwrap_or("");
                out.push_str(&format!("| {} | {} |\n", type_of(alt), one_line(d)));
            }
        } else {
            out.push_str(&format!("Type: {}.\n", type_of(&Value::Object(s.clone()))));
        }
    }
}

/// docs/results.md, from the schema alone.
fn results_md(schema: &Value) -> String {
    let mut out = String::from(
        "# results.json\n\n\
         <!-- Generated from the results types by tests/suite/schema.rs; do not edit. \
         Regenerate with RINGSIDE_BLESS=1 cargo test --release --test suite schema:: -->\n\n\
         Every `ringside run` writes `results.json` in its `--out` directory; `ringside report` \
         and `ringside compare` work from it alone. Its JSON Schema (draft 2020-12) is \
         [results.schema.json](results.schema.json), generated from the serde types in \
         `src/results/`; every file names it in `$schema` and carries `schema_version`.\n\n\
         Field names carry their unit (`_ns`, `_per_sec`, `_bytes`). A figure that could not \
         be measured is `{\"unavailable\": \"<reason>\"}`, never a placeholder. An optional \
         field is absent where it does not apply; files written by earlier versions load \
         (`ringside report`, `ringside compare`).\n\n## The file\n",
    );
    let o = schema.as_object().unwrap();
    section(&mut out, "RunResults", o);
    out.push_str("\n## Types\n");
    if let Some(defs) = schema.get("$defs").and_then(Value::as_object) {
        for (name, d) in defs {
            section(&mut out, name, d.as_object().unwrap());
        }
    }
    out
}

/// Every property name anywhere in `s`, with the definition it belongs to.
fn every_property(s: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match s {
        Value::Object(m) => {
            if let Some(p) = m.get("properties").and_then(Value::as_object) {
                out.extend(p.keys().map(|k| (at.to_string(), k.clone())));
            }
            for (k, v) in m {
                let at = if at == "$defs" { k.as_str() } else { at };
                every_property(v, if k == "$defs" { "$defs" } else { at }, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| every_property(v, at, out)),
        _ => {}
    }
}

#[test]
fn the_docs_describe_every_field_of_the_schema() {
    let schema = ringside::results::json_schema();
    let md = results_md(&schema);
    let mut props = Vec::new();
    every_property(&schema, "RunResults", &mut props);
    assert!(props.len() > 100, "{}", props.len());
    for (def, p) in &props {
        assert!(
            md.contains(&format!("| `{p}` |")),
            "docs/results.md does not describe {def}.{p}"
        );
    }
    for (def, p) in [
        ("RunResults", "$schema"),
        ("CaseResult", "params"),
        ("CaseResult", "latency_ns"),
    ] {
        assert!(
            props.contains(&(def.into(), p.into())),
            "{def}.{p}: {props:?}"
        );
    }
    committed("results.md", &md);
}

/// A file the schema refuses: a figure of the wrong type, a status no cell has, a missing
/// required field.
#[test]
fn the_schema_refuses_a_file_that_breaks_it() {
    let r = ringside::results::store::load(&common::bin::fixture()).unwrap();
    let good = serde_json::to_value(&r).unwrap();
    validate("the fixture as this build writes it", &good);
    let broken = |edit: &dyn Fn(&mut Value)| {
        let mut v = good.clone();
        edit(&mut v);
        violations(&v)
    };
    let cell = good["cases"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c["status"] == "measured")
        .unwrap();
    for (what, errs) in [
        (
            "p50 as a string",
            broken(&|v| v["cases"][cell]["latency_ns"]["p50"] = "fast".into()),
        ),
        (
            "an unknown status",
            broken(&|v| v["cases"][cell]["status"] = "great".into()),
        ),
        (
            "no cases",
            broken(&|v| {
                v.as_object_mut().unwrap().remove("cases");
            }),
        ),
        (
            "a negative op count",
            broken(&|v| v["cases"][cell]["ops_total"] = (-1).into()),
        ),
    ] {
        assert!(!errs.is_empty(), "the schema accepted {what}");
    }
}

/// What a run writes follows the schema: a smoke run of the micro suite, with a model the
/// workloads do not take (a not_applicable cell).
#[test]
fn a_run_writes_a_file_the_schema_validates() {
    let d = tempfile::tempdir().unwrap();
    common::bin::ringside()
        .timeout(std::time::Duration::from_secs(300))
        .args([
            "run",
            "micro.pipe",
            "--profile",
            "smoke",
            "--quiet",
            "--out",
        ])
        .arg(d.path())
        .assert()
        .success();
    let v = results_json(d.path());
    assert_eq!(v["$schema"], ringside::results::SCHEMA_ID);
    assert_eq!(v["schema_version"], ringside::results::SCHEMA_VERSION);

    // `report --hgrm CELL`: a measured cell's distribution in HdrHistogram's percentile
    // format, its total count the cell's latency samples; an unknown cell is bad input.
    let c = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["status"] == "measured")
        .expect("a measured cell");
    let params: Vec<String> = c["params"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let key = format!(
        "{} {} {}",
        c["workload"].as_str().unwrap(),
        c["model"].as_str().unwrap(),
        params.join(" ")
    );
    let results = d.path().join("results.json");
    let out = common::bin::ringside()
        .arg("report")
        .arg(&results)
        .args(["--hgrm", &key])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with("       Value     Percentile TotalCount 1/(1-Percentile)\n\n"),
        "{text}"
    );
    let total: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("#[Max     = "))
        .and_then(|l| l.split("Total count    =").nth(1))
        .and_then(|n| n.trim().trim_end_matches(']').trim().parse().ok())
        .unwrap_or_else(|| panic!("no total count: {text}"));
    assert!(total > 0, "{text}");
    if let Some(samples) = c["ci95"]["samples"].as_u64() {
        assert_eq!(total, samples, "{text}");
    }
    let o = common::bin::ringside()
        .arg("report")
        .arg(&results)
        .args(["--hgrm", "micro.pipe nosuch"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("'micro.pipe nosuch'") && err.contains(&key),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    // `report --timeline CELL` of a cell that records none (micro) is bad input, said so.
    let o = common::bin::ringside()
        .arg("report")
        .arg(&results)
        .args(["--timeline", &key])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("recorded no timeline"), "{err}");
}
