//! `ringside list`: models and workloads from the registry, with availability here.

use crate::registry::{MODELS, WORKLOADS};

pub fn run() -> anyhow::Result<()> {
    let env = crate::env::probe();
    println!("models:");
    let w = MODELS.iter().map(|m| m.id.len()).max().unwrap_or(0);
    for m in MODELS {
        println!("  {:<w$}  {}  [{}]", m.id, m.summary, m.availability(&env));
    }
    println!("\nworkloads:");
    let w = WORKLOADS.iter().map(|x| x.id().len()).max().unwrap_or(0);
    for x in WORKLOADS {
        let models: Vec<&str> = MODELS
            .iter()
            .filter(|m| x.accepts(m).is_ok())
            .map(|m| m.id)
            .collect();
        println!(
            "  {:<w$}  {}\n  {:<w$}  models: {}",
            x.id(),
            x.about(),
            "",
            models.join(", ")
        );
    }
    Ok(())
}
