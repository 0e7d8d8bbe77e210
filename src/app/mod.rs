//! One file per subcommand: glue between the command line and the library.

pub(crate) mod compare;
pub(crate) mod env;
pub(crate) mod list;
pub(crate) mod load;
pub(crate) mod remote;
pub(crate) mod report;
pub mod run;
pub(crate) mod serve;
pub mod stdout;

use crate::cli::{Cli, Command};

/// A results file as `report`, `compare` and a resumed `run` read it: loaded and checked
/// against itself (`results::store::load`), with at most the registry's models plus
/// `results::check::MAX_CONTENDERS` at one point.
pub(crate) fn load_results(path: &std::path::Path) -> anyhow::Result<crate::results::RunResults> {
    let r = crate::results::store::load(path)?;
    crate::results::check::models_per_point(&r, crate::registry::MODELS.len())
        .map_err(|e| anyhow::anyhow!("'{}': {e}", path.display()))?;
    Ok(r)
}

/// Exit codes: 0 done, 1 failure, 2 bad input, 130 interrupted by Ctrl-C.
pub fn dispatch(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Run(a) => run::run(*a),
        Command::Env { json } => env::run(json).map(|_| 0),
        Command::List => list::run().map(|_| 0),
        Command::Serve(a) => serve::run(a),
        Command::Load(a) => load::run(a),
        Command::Report {
            results,
            hgrm: Some(cell),
            ..
        } => report::cell_text(&results, &cell, "--hgrm", crate::export::hgrm::render),
        Command::Report {
            results,
            timeline: Some(cell),
            ..
        } => report::cell_text(&results, &cell, "--timeline", crate::export::hgrm::timeline),
        Command::Report {
            results,
            out,
            format,
            hgrm: None,
            timeline: None,
        } => report::run(&results, out.as_deref(), format),
        Command::Compare {
            files,
            threshold,
            out,
            allow_untested,
        } => compare::run(&files, threshold, allow_untested, out.as_deref()),
        Command::RemoteServe(a) => remote::serve(a),
        Command::RemoteEnv => remote::env(),
        Command::RemoteLoad(a) => remote::load(a),
    }
}
