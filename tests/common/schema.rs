//! results.json against its JSON Schema (`docs/results.schema.json`): every test that reads a
//! results.json a run wrote reads it through [`results_json`], so the schema is checked
//! against every file the tests write.

use serde_json::Value;
use std::path::Path;
use std::sync::OnceLock;

/// The committed schema, compiled once.
fn validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/results.schema.json");
        let s: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        jsonschema::draft202012::new(&s).expect("docs/results.schema.json is a valid schema")
    })
}

/// Every way `v` breaks the schema, one line each (empty: it is valid).
pub fn violations(v: &Value) -> Vec<String> {
    validator()
        .iter_errors(v)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Panics, naming `what` and each violation, unless `v` is valid.
pub fn validate(what: &str, v: &Value) {
    let errs = violations(v);
    assert!(
        errs.is_empty(),
        "{what} does not follow docs/results.schema.json:\n{}",
        errs.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// The results.json at `path` (a file or the `--out` directory holding it), checked against
/// the schema.
pub fn results_json(path: &Path) -> Value {
    let p = if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_path_buf()
    };
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let v: Value =
        serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    validate(&p.display().to_string(), &v);
    v
}
