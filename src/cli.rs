//! The command line: clap derive. The only file that knows clap; it turns arguments into the
//! plain types the rest of the code uses.

use crate::export::Format;
use crate::plan::Profile;
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "ringside",
    version,
    about = "Blocking syscalls, epoll and io_uring, measured side by side on this machine",
    long_about = "ringside measures Linux I/O models natively, in one run, on this machine: \
                  per-op latency percentiles, ops/s, measured syscalls per op and CPU per op. \
                  `ringside run` runs every suite at the quick profile and writes \
                  ringside-results/<UTC timestamp>/."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Measure suites or workloads (all of them by default) and write results.
    Run(RunArgs),
    /// What this machine, kernel and user allow, and why.
    Env {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Models and workloads, with availability on this machine.
    List,
    /// Re-render report.md, report.html and the chart SVGs from a saved results file.
    Report {
        /// A results.json written by `ringside run`.
        results: PathBuf,
        /// Where to write report.md, report.html and charts/ (default: beside the results file).
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = FormatArg::Table)]
        format: FormatArg,
    },
    /// Compare two results files cell by cell; exits 1 on a significant regression.
    Compare {
        /// The baseline results.json.
        base: PathBuf,
        /// The results.json to judge against it.
        new: PathBuf,
        /// Percent change in median latency or ops/s that counts as a regression.
        #[arg(long, default_value_t = 5.0)]
        threshold: f64,
    },
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Suites (micro) or workload ids (micro.pipe); all when none given.
    pub items: Vec<String>,
    #[arg(long, value_enum, default_value_t = ProfileArg::Quick)]
    pub profile: ProfileArg,
    /// Comma-separated model ids (default: every model).
    #[arg(long, value_delimiter = ',')]
    pub models: Option<Vec<String>>,
    /// Output directory (default: ringside-results/<UTC timestamp>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Measured repetitions per case (overrides the profile).
    #[arg(long)]
    pub runs: Option<u32>,
    /// What to print on stdout when done.
    #[arg(long, value_enum, default_value_t = FormatArg::Table)]
    pub format: FormatArg,
    /// No progress output.
    #[arg(long)]
    pub quiet: bool,
    /// CPUs: the measured thread first, then its helper (SQPOLL poller), e.g. "1,0".
    #[arg(long)]
    pub cpus: Option<String>,
    /// Storage suite: directory to make test files in (default: the current directory's
    /// filesystem). Its filesystem, device and O_DIRECT support are recorded.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Storage suite: drop the page cache before read repetitions (root only; otherwise the
    /// results say the cache was warm).
    #[arg(long)]
    pub drop_caches: bool,
    /// Storage suite: also run fio jobs equivalent to storage.randread (psync and io_uring)
    /// and store fio's figures as their own rows.
    #[arg(long)]
    pub crosscheck: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ProfileArg {
    Smoke,
    Quick,
    Full,
}

impl From<ProfileArg> for Profile {
    fn from(p: ProfileArg) -> Profile {
        match p {
            ProfileArg::Smoke => Profile::Smoke,
            ProfileArg::Quick => Profile::Quick,
            ProfileArg::Full => Profile::Full,
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum FormatArg {
    Table,
    Markdown,
    Csv,
    Json,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Table => Format::Table,
            FormatArg::Markdown => Format::Markdown,
            FormatArg::Csv => Format::Csv,
            FormatArg::Json => Format::Json,
        }
    }
}

/// Parses the command line (clap prints help/version or usage errors and exits 0/2 itself).
pub fn parse() -> Cli {
    Cli::parse()
}
