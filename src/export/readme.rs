//! The README's lists of workloads, their points and the models, made from the registry so
//! that the guide cannot drift from what `ringside run` does. The README holds them between
//! `<!-- generated: NAME ... -->` and `<!-- end generated -->`; a test checks them, and
//! `RINGSIDE_BLESS=1 cargo test --release readme` rewrites them.

use crate::measure::pin::CpuPlan;
use crate::model::ModelSpec;
use crate::profile::Profile;
use crate::registry::{suite_of, MODELS, WORKLOADS};
use crate::workload::{Point, Workload};

/// Parameters every network point carries that are the profile's timing, not its sweep.
const TIMING: &[&str] = &["duration_ms", "warmup_ms"];

/// The first model a workload takes: its points are the same for every model it takes,
/// except where a model cannot do a point (then fewer, never others).
fn sample_model(w: &dyn Workload) -> Option<&'static ModelSpec> {
    MODELS
        .iter()
        .filter(|m| w.accepts(m).is_ok())
        .max_by_key(|m| w.points(Profile::Full, m).len())
}

fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// "conns: 1, 2, 50; msg_bytes: 64" (+ "equal load at N points"): each parameter with its
/// values in the order the points take them. A sweep over server threads depends on the
/// machine's CPUs, so it is named, not listed.
fn points_text(points: &[Point]) -> String {
    let mut keys: Vec<&str> = Vec::new();
    for p in points {
        for k in p.params.0.keys() {
            if !TIMING.contains(&k.as_str()) && !keys.contains(&k.as_str()) {
                keys.push(k);
            }
        }
    }
    // A sweep over server threads: how many points it has depends on the machine's CPUs, so
    // the threads are named and the other parameters given at one thread ("per thread").
    let threads_sweep = keys.contains(&"threads");
    let mut parts = Vec::new();
    for k in keys {
        if k == "threads" {
            parts.push("threads: 1, 2, 4, ... up to the server's CPUs".to_string());
            continue;
        }
        let mut vals: Vec<String> = Vec::new();
        for p in points {
            if p.equal_load.is_some() || (threads_sweep && p.scaling.is_some()) {
                continue;
            }
            if let Some(v) = p.params.0.get(k) {
                let t = value_text(v);
                if !vals.contains(&t) {
                    vals.push(t);
                }
            }
        }
        let per_thread = threads_sweep
            && points.iter().any(|p| {
                p.scaling.is_some() && p.params.0.get(k).map(value_text) != vals.first().cloned()
            });
        if !vals.is_empty() {
            let unit = if per_thread { " per thread" } else { "" };
            parts.push(format!("{k}: {}{unit}", vals.join(", ")));
        }
    }
    let equal = points.iter().filter(|p| p.equal_load.is_some()).count();
    let mut s = if parts.is_empty() {
        "-".to_string()
    } else {
        parts.join("; ")
    };
    if equal > 0 {
        s.push_str(&format!("; + equal load at {equal} of them"));
    }
    s
}

/// The workloads table: suite, workload, whether the default run has it, its points at quick
/// and at full, what it measures.
pub(crate) fn workloads_md() -> String {
    let mut s = String::from(
        "| suite | workload | default run | quick points | full points | what it measures |\n\
         |---|---|---|---|---|---|\n",
    );
    for w in WORKLOADS {
        // A fixed two-CPU plan: a sweep over server threads must not list this machine's.
        let plan = CpuPlan::default_for(&[0, 1]);
        let (quick, full) = match sample_model(*w) {
            Some(m) => (
                points_text(&w.points_on(Profile::Quick, m, &plan)),
                points_text(&w.points_on(Profile::Full, m, &plan)),
            ),
            None => ("-".into(), "-".into()),
        };
        s.push_str(&format!(
            "| {} | `{}` | {} | {} | {} | {} |\n",
            suite_of(w.id()),
            w.id(),
            if w.by_default() { "yes" } else { "when named" },
            quick.replace('|', "\\|"),
            full.replace('|', "\\|"),
            w.about().replace('|', "\\|"),
        ));
    }
    s
}

/// The models, one line each: id, whether it is a family's leader (what a run measures without
/// `--models`), what it is.
pub(crate) fn models_md() -> String {
    let mut s = String::new();
    for m in MODELS {
        s.push_str(&format!(
            "- `{}`{}: {}\n",
            m.id,
            if m.default_run { " (leader)" } else { "" },
            m.summary
        ));
    }
    s
}

/// `text` with each generated block replaced by what `gen` makes of its name; an unknown
/// name or an unterminated block is an error.
pub(crate) fn regenerate(
    text: &str,
    gen: impl Fn(&str) -> Option<String>,
) -> Result<String, String> {
    const OPEN: &str = "<!-- generated: ";
    const END: &str = "<!-- end generated -->";
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(OPEN) {
        let line_end = rest[i..]
            .find('\n')
            .map(|j| i + j + 1)
            .ok_or("a generated block's first line has no end")?;
        let name = rest[i + OPEN.len()..line_end]
            .split(|c: char| c.is_whitespace() || c == '(')
            .next()
            .unwrap_or("");
        let body = gen(name).ok_or_else(|| format!("no generator for block '{name}'"))?;
        let end = rest[line_end..]
            .find(END)
            .map(|j| line_end + j)
            .ok_or_else(|| format!("block '{name}' has no '{END}'"))?;
        out.push_str(&rest[..line_end]);
        out.push_str(&body);
        out.push_str(END);
        rest = &rest[end + END.len()..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The README's generators by block name.
pub(crate) fn generator(name: &str) -> Option<String> {
    match name {
        "workloads" => Some(workloads_md()),
        "models" => Some(models_md()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readme_lists_come_from_the_registry() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
        let text = std::fs::read_to_string(path).unwrap();
        let want = regenerate(&text, generator).unwrap();
        assert!(
            text.contains("<!-- generated: workloads") && text.contains("<!-- generated: models"),
            "README.md lost its generated blocks"
        );
        if std::env::var_os("RINGSIDE_BLESS").is_some() {
            std::fs::write(path, &want).unwrap();
            return;
        }
        assert!(
            text == want,
            "README.md's generated lists differ from the registry: run \
             RINGSIDE_BLESS=1 cargo test --release readme"
        );
    }

    #[test]
    fn every_workload_and_model_is_listed() {
        let w = workloads_md();
        for wl in WORKLOADS {
            assert!(w.contains(&format!("`{}`", wl.id())), "{}", wl.id());
        }
        let m = models_md();
        for spec in MODELS {
            assert!(m.contains(&format!("- `{}`", spec.id)), "{}", spec.id);
        }
        assert!(m.contains("(leader)") && m.lines().any(|l| !l.contains("(leader)")));
    }

    #[test]
    fn blocks_are_replaced_and_bad_ones_refused() {
        let g = |n: &str| (n == "x").then(|| "new\n".to_string());
        let t = "a\n<!-- generated: x (how) -->\nold\n<!-- end generated -->\nb\n";
        assert_eq!(
            regenerate(t, g).unwrap(),
            "a\n<!-- generated: x (how) -->\nnew\n<!-- end generated -->\nb\n"
        );
        assert!(regenerate("<!-- generated: y -->\n<!-- end generated -->", g).is_err());
        assert!(regenerate("<!-- generated: x -->\nold\n", g).is_err());
    }
}
