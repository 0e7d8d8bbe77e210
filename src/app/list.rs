//! `ringside list`: models and workloads from the registry, with availability here and the
//! shapes each model runs (`ModelSpec::runs`).

use crate::model::{ModelSpec, Refusal, Shape};
use crate::registry::{MODELS, WORKLOADS};
use std::fmt::Write;

pub fn run() -> anyhow::Result<()> {
    let env = crate::env::probe();
    let mut out = String::from(
        "models (* a family's leader: what a run measures without --models; the others run \
         when named, `--models ID,...`, or with `--models all`):\n",
    );
    let mark = |default: bool| if default { '*' } else { ' ' };
    let w = MODELS.iter().map(|m| m.id.len()).max().unwrap_or(0);
    for m in MODELS {
        let _ = writeln!(
            out,
            "{} {:<w$}  {}  [{}]",
            mark(m.default_run),
            m.id,
            m.summary,
            m.availability(&env)
        );
        let _ = writeln!(out, "  {:<w$}  runs: {}", "", shapes(m));
    }
    out.push_str(
        "\nworkloads (* runs in the default run, `ringside run` naming no suite; the others \
         when their id or suite is named):\n",
    );
    let w = WORKLOADS.iter().map(|x| x.id().len()).max().unwrap_or(0);
    // The models each workload runs under the default CPU plan (`run` without CPU flags).
    use crate::measure::{pin, topology};
    let plan = topology::plan(&topology::Topology::read(), &topology::Request::default())
        .unwrap_or_else(|_| pin::CpuPlan::default_for(&pin::allowed_cpus()));
    for x in WORKLOADS {
        let models: Vec<&str> = MODELS
            .iter()
            .filter(|m| x.accepts_on(m, &plan).is_ok())
            .map(|m| m.id)
            .collect();
        let _ = writeln!(
            out,
            "{} {:<w$}  {}\n  {:<w$}  models: {}",
            mark(x.by_default()),
            x.id(),
            x.about(),
            "",
            models.join(", ")
        );
    }
    super::stdout::print(&out)?;
    Ok(())
}

/// The shapes `m` runs, by name; one its family has but that cannot run yet is marked so.
fn shapes(m: &ModelSpec) -> String {
    Shape::ALL
        .iter()
        .filter_map(|s| match m.runs(*s) {
            Ok(()) => Some(s.name().to_string()),
            Err(Refusal::Unavailable(_)) => Some(format!("{} (not yet)", s.name())),
            Err(Refusal::NotApplicable(_)) => None,
        })
        .collect::<Vec<_>>()
        .join(", ")
}
