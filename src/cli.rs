//! The command line: clap derive. The only file that knows clap; it turns arguments into the
//! plain types the rest of the code uses.

use crate::export::Format;
use crate::profile::Profile;
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "ringside",
    version = concat!(env!("CARGO_PKG_VERSION"), " (git ", env!("RINGSIDE_GIT"), ")"),
    about = "Blocking syscalls, epoll and io_uring, measured side by side on this machine",
    long_about = "ringside measures Linux I/O models natively, in one run, on this machine: \
                  per-op latency percentiles, ops/s, measured syscalls per op and CPU per op. \
                  `ringside run` runs every suite at the quick profile and writes \
                  ringside-results/<UTC timestamp>/."
)]
pub struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Measure suites or workloads (all of them by default) and write results.
    Run(Box<RunArgs>),
    /// What this machine, kernel and user allow, and why.
    Env {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Models and workloads, with availability on this machine.
    List,
    /// Run one model's server until SIGINT/SIGTERM: prints `listening on ADDR` once the model
    /// is up, then on exit `counters <json>`. Exits 69 when the model cannot run here.
    Serve(ServeArgs),
    /// Drive a server with the load generator and report what it measured.
    Load(LoadArgs),
    /// Re-render report.md, report.html and the chart SVGs from a saved results file; of
    /// several files, draw them side by side (compare.html and compare.md, as `compare --out`).
    Report {
        /// A results.json written by `ringside run`; several: the first is the reference.
        #[arg(required = true, num_args = 1.., value_name = "RESULTS")]
        results: Vec<PathBuf>,
        /// Where to write report.md, report.html and charts/, or of several files compare.html
        /// and compare.md (default: beside the (first) results file).
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = Format::Summary)]
        format: Format,
        /// Print one cell's latency distribution in HdrHistogram's percentile format (.hgrm,
        /// microseconds) instead: the cell as `report` and `compare` name it ("micro.pipe
        /// uring msg_bytes=64"), or by the words that tell it from the others ("uring
        /// conns=100": model, workload, the parameters that vary). Writes no report.
        #[arg(long, value_name = "CELL")]
        hgrm: Option<String>,
        /// Print one cell's repetitions over time as CSV instead: ops, ops/s, mean and longest
        /// latency per 100 ms interval of each repetition's window (network suites); the cell
        /// named as for --hgrm. Writes no report.
        #[arg(long, value_name = "CELL", conflicts_with = "hgrm")]
        timeline: Option<String>,
    },
    /// Compare results files cell by cell: the first (the baseline) with each later one;
    /// exits 0 PASS (every compared cell tested with power to see the threshold, none
    /// regressed), 1 REGRESSION, 3 INCONCLUSIVE (no regression found, but cells it could not
    /// test).
    Compare {
        /// The baseline results.json, then the results.json(s) to judge against it (2 to 26
        /// files; more than two print one matrix, corrected as one family).
        #[arg(required = true, num_args = 2.., value_name = "RESULTS")]
        files: Vec<PathBuf>,
        /// Percent change in median latency or ops/s that counts as a regression, and that
        /// every compared cell's test must be able to see for a PASS.
        #[arg(long, default_value_t = crate::analysis::compare::DEFAULT_THRESHOLD_PCT)]
        threshold: f64,
        /// Also write the runs side by side as a page, compare.html and compare.md (with a
        /// chart per workload and figure), into this directory; nothing is written without it.
        #[arg(long)]
        out: Option<PathBuf>,
        /// PASS (exit 0) where nothing regressed, whatever could not be tested (too few
        /// repetitions, noise too high for the threshold, disturbed cells, cells only one
        /// file has), listing it. A regression and a measured cell that failed still exit 1,
        /// an unfinished NEW and a comparison of nothing still 3.
        #[arg(long)]
        allow_untested: bool,
    },
    /// On a server host of `run --server-host`, over SSH: one repetition's server, measured
    /// here (see src/remote/mod.rs).
    #[command(hide = true)]
    RemoteServe(RemoteServeArgs),
    /// On another host of `run`, over SSH: this host's environment and its network path back
    /// to the SSH client, as JSON.
    #[command(hide = true)]
    RemoteEnv,
    /// On a load host of `run --load-host`, over SSH: one repetition's load generator, run
    /// here on `go` (see src/load/remote.rs).
    #[command(hide = true)]
    RemoteLoad(RemoteLoadArgs),
}

/// `ringside remote-load`: one load host's share of a repetition.
#[derive(clap::Args, Debug)]
pub struct RemoteLoadArgs {
    /// The server's address.
    #[arg(long)]
    pub(crate) target: String,
    /// echo or http.
    #[arg(long, value_enum)]
    pub(crate) protocol: LoadProtocolArg,
    #[arg(long)]
    pub(crate) conns: usize,
    #[arg(long)]
    pub(crate) warmup_ms: u64,
    #[arg(long)]
    pub(crate) duration_ms: u64,
    /// Open loop: messages/s over this host's connections.
    #[arg(long)]
    pub(crate) rate: Option<f64>,
    /// Echo: message size, bytes.
    #[arg(long)]
    pub(crate) msg_bytes: Option<usize>,
    /// HTTP: the path requested.
    #[arg(long, default_value = "/")]
    pub(crate) path: String,
    /// HTTP: the server answers `serve --body-bytes N`'s body, and every response must carry
    /// it byte for byte (default: the default body).
    #[arg(long)]
    pub(crate) body_bytes: Option<usize>,
}

/// `ringside remote-serve`: what a remote repetition's server needs.
#[derive(clap::Args, Debug)]
pub struct RemoteServeArgs {
    #[arg(long, value_enum)]
    pub(crate) protocol: ProtocolArg,
    #[arg(long)]
    pub(crate) model: String,
    /// Server threads (the client's plan's count; the CPUs come from this host's own plan).
    #[arg(long, default_value_t = 1)]
    pub(crate) server_threads: u32,
    /// Count the server's syscalls (the counting repetition).
    #[arg(long)]
    pub(crate) count_syscalls: bool,
    /// Address to bind (default: the address the SSH client reached this host at, port 0).
    #[arg(long)]
    pub(crate) addr: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Suites (micro) or workload ids (micro.pipe); all when none given.
    pub(crate) items: Vec<String>,
    #[arg(long, value_enum, default_value_t = ProfileArg::Quick)]
    pub(crate) profile: ProfileArg,
    /// Comma-separated model ids, or `all` for every model (default: each family's leaders,
    /// the rows `ringside list` marks; an ablation ladder runs its rungs). `ext:NAME` names a
    /// --contender: named so, only the contenders named run; otherwise every one joins.
    #[arg(long, value_delimiter = ',')]
    pub(crate) models: Option<Vec<String>>,
    /// Output directory (default: ringside-results/<UTC timestamp>). One that holds the
    /// results.json of an earlier run is refused unless --force.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Replace the earlier run in --out DIR: its results.json, report and charts are removed
    /// before this run writes its own (other files in DIR are left alone).
    #[arg(long)]
    pub(crate) force: bool,
    /// Measured repetitions per case, 1..=1000 (overrides the profile).
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) runs: Option<u64>,
    /// Connections of every point that has them (echo, stream), e.g. 100, or a sweep
    /// "10,100"; overrides the profile's points. Refused, naming them, when a selected
    /// workload has no connections parameter (HTTP's are --clients).
    #[arg(long, value_name = "N[,N...]", allow_negative_numbers = true)]
    pub(crate) conns: Option<String>,
    /// HTTP clients (connections) of every HTTP point, e.g. 100 or "50,500".
    #[arg(long, value_name = "N[,N...]", allow_negative_numbers = true)]
    pub(crate) clients: Option<String>,
    /// Offered rate, messages or requests/s, of every open-loop rate point (echo.rate,
    /// http.rate), e.g. 20000 or "10000,40000".
    #[arg(long, value_name = "N[,N...]", allow_negative_numbers = true)]
    pub(crate) rate: Option<String>,
    /// Message size, bytes, of every point that has one (micro.pipe, micro.batching, echo).
    #[arg(long, value_name = "N[,N...]", allow_negative_numbers = true)]
    pub(crate) msg_bytes: Option<String>,
    /// HTTP response body, bytes (0..=1048576), of every HTTP point: ringside's servers
    /// answer it (`serve --body-bytes`) and every response is checked against it.
    #[arg(long, value_name = "N[,N...]", allow_negative_numbers = true)]
    pub(crate) body_bytes: Option<String>,
    /// Measured window of every network point, seconds ("3", "2.5", "3s", "500ms").
    #[arg(long, value_name = "SECS[,SECS...]", allow_negative_numbers = true)]
    pub(crate) duration: Option<String>,
    /// Warm-up before each network repetition's window, seconds ("0.5", "500ms").
    #[arg(long, value_name = "SECS[,SECS...]", allow_negative_numbers = true)]
    pub(crate) warmup: Option<String>,
    /// Print the cells (workload, models, points), repetitions and an estimated time, then
    /// exit 0: nothing is measured and no output directory is made.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// What to print on stdout when done.
    #[arg(long, value_enum, default_value_t = Format::Summary)]
    pub(crate) format: Format,
    /// No progress output.
    #[arg(long)]
    pub(crate) quiet: bool,
    /// CPUs: the measured thread first, then its helper (SQPOLL poller, load generator), e.g.
    /// "1,0"; the two must differ. Shorthand for --server-cpus A --load-cpus B.
    #[arg(long, conflicts_with_all = ["server_cpus", "load_cpus"])]
    pub(crate) cpus: Option<String>,
    /// The server's CPU (the measured thread of micro and storage workloads), e.g. "3"
    /// (default: one CPU of the last physical core, its SMT siblings left idle).
    #[arg(long)]
    pub(crate) server_cpus: Option<String>,
    /// The load generator's CPUs, one thread each, e.g. "0-2" (default: every other allowed
    /// CPU of the server's NUMA node, the server core's SMT siblings excepted).
    #[arg(long)]
    pub(crate) load_cpus: Option<String>,
    /// What the load generator drives echo and HTTP connections with (see `ringside load
    /// --engine`); recorded in results.json (`load_engine`).
    #[arg(long, value_enum, default_value = "epoll")]
    pub(crate) load_engine: EngineArg,
    /// Let --server-cpus and --load-cpus overlap (cells are marked shared_cpus).
    #[arg(long)]
    pub(crate) allow_shared: bool,
    /// Storage suite: directory to make test files in (default: the current directory's
    /// filesystem). Its filesystem, device and O_DIRECT support are recorded.
    #[arg(long)]
    pub(crate) dir: Option<PathBuf>,
    /// Storage suite: drop the page cache before read repetitions (root only; otherwise the
    /// results say the cache was warm).
    #[arg(long)]
    pub(crate) drop_caches: bool,
    /// Storage suite: also run fio jobs equivalent to storage.randread (psync and io_uring)
    /// and store fio's figures as their own rows.
    #[arg(long)]
    pub(crate) crosscheck: bool,
    /// Network and storage cells: where the CPU goes. After a cell's timed repetitions, one
    /// more untimed repetition samples the server's CPUs (storage: the measured CPU) with
    /// `perf record -e cpu-clock -g` and groups the samples (syscalls, TCP/IP, softirq,
    /// scheduler, io_uring, copies, lock slow paths, user, idle); the report draws them.
    /// Costs one extra repetition per cell plus perf's start, stop and symbol resolution:
    /// about 3 s per network cell on a 2-vCPU VM. Needs perf and CPU-wide sampling (root or
    /// perf_event_paranoid <= 0); otherwise each breakdown is "unavailable" with the reason
    /// and the run goes on.
    ///
    /// `--explain MODEL[,MODEL...]` (model ids of this run, `ext:NAME` for a contender)
    /// samples only the points those models run, every cell of them, and each caption
    /// explains a named model against its point's leader (against the runner-up where it
    /// leads). Alone, the captions explain each point's leader against its runner-up. A
    /// workload or suite right after a bare `--explain` (`run --explain echo`) is taken as
    /// what to run, not as a model.
    #[arg(long, value_name = "MODEL[,MODEL...]", num_args = 0..=1, value_delimiter = ',')]
    pub(crate) explain: Option<Vec<String>>,
    /// An external server as a contender in the network suites, model `ext:NAME`:
    /// `NAME='command with {port}'`, or `echo:NAME=...` / `http:NAME=...` for a server that
    /// speaks one protocol only. Repeatable. It runs pinned like ringside's servers and is
    /// measured by the same code; it must stay in the foreground (no daemon).
    #[arg(long = "contender", value_name = "[PROTO:]NAME=CMD")]
    pub(crate) contenders: Vec<String>,
    /// Network suites: run each repetition's server on this host over SSH (OpenSSH with your
    /// keys and ~/.ssh/config), measured there; the same ringside must be installed there.
    #[arg(long, value_name = "[USER@]HOST[:PORT]")]
    pub(crate) server_host: Option<String>,
    /// Echo and HTTP suites: run the load generator on this host instead of here (repeatable:
    /// the connections are shared out and the hosts' figures merged, histograms added), over
    /// SSH like --server-host; the same ringside must be installed there.
    #[arg(long = "load-host", value_name = "[USER@]HOST[:PORT]")]
    pub(crate) load_hosts: Vec<String>,
    /// With --load-host: the address servers on this host listen on (default: the address the
    /// load hosts see this host's SSH connection come from).
    #[arg(long, value_name = "ADDR")]
    pub(crate) bind: Option<String>,
    /// An extra ssh argument (repeatable), e.g. --ssh-opt=-i --ssh-opt=/path/key.
    #[arg(long = "ssh-opt", value_name = "ARG", allow_hyphen_values = true)]
    pub(crate) ssh_opts: Vec<String>,
    /// The ringside to run on other hosts (default: `ringside` on their PATH).
    #[arg(long, value_name = "PATH", default_value = "ringside")]
    pub(crate) remote_ringside: String,
}

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Wire protocol: echo, http, sink or source (bulk transfer: read-verify-discard, or
    /// pattern bytes on request), or pubsub (the broker).
    #[arg(long, value_enum)]
    pub(crate) protocol: ProtocolArg,
    /// HTTP only: response body size, bytes (0..=1048576; default: "Hello, World!").
    #[arg(long)]
    pub(crate) body_bytes: Option<u64>,
    /// Model id (see `ringside list`).
    #[arg(long)]
    pub(crate) model: String,
    /// Address to bind; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub(crate) addr: String,
    /// CPUs: the server first (it pins itself there), then its helper (SQPOLL poller), e.g. "0,1".
    /// With --threads N > 1 (or tokio-mt): the server threads' CPUs, round-robin.
    #[arg(long)]
    pub(crate) cpus: Option<String>,
    /// Server threads, shared nothing: each its own SO_REUSEPORT listener on the address and
    /// its own event loop or ring (1..=1024; default 1). `blocking` gets N acceptors, each
    /// spawning a thread per connection; `tokio-mt` one runtime of N workers on one listener.
    #[arg(long, default_value_t = 1)]
    pub(crate) threads: u64,
    /// With --threads N > 1: where SQPOLL pollers go (default: none, SQPOLL is then
    /// unavailable unless --cpus names a second CPU with one thread).
    #[arg(long)]
    pub(crate) sqpoll_cpu: Option<u32>,
    /// Close a connection after this many ms without a reply (slowloris defence), built-in
    /// servers only; 0: never (0..=86400000). Default: the protocol's own (echo: never).
    #[arg(long)]
    pub(crate) idle_timeout_ms: Option<u64>,
}

#[derive(clap::Args, Debug)]
pub struct LoadArgs {
    /// The protocol spoken to the server.
    #[arg(long, value_enum)]
    pub(crate) protocol: LoadProtocolArg,
    /// The server, HOST:PORT.
    #[arg(long)]
    pub(crate) target: String,
    /// Connections (1..=100000).
    #[arg(long, default_value_t = 50)]
    pub(crate) conns: u64,
    /// Bytes per message (12..=1048576; each message carries its connection id and sequence).
    #[arg(long, default_value_t = 64)]
    pub(crate) msg_bytes: u64,
    /// HTTP only: the request target.
    #[arg(long, default_value = "/")]
    pub(crate) path: String,
    /// HTTP only: the Host header (default: the target HOST:PORT).
    #[arg(long)]
    pub(crate) host: Option<String>,
    /// HTTP only: every 2xx response must carry, byte for byte, the body `ringside serve
    /// --protocol http --body-bytes N` answers (0..=1048576; default: the body it answers
    /// without --body-bytes, "Hello, World!").
    #[arg(long, conflicts_with = "any_body")]
    pub(crate) body_bytes: Option<u64>,
    /// HTTP only: accept any body, checking only the status and the framing (a server whose
    /// answer is not ringside's).
    #[arg(long)]
    pub(crate) any_body: bool,
    /// Measured seconds, after the warm-up.
    #[arg(long, default_value_t = 10.0)]
    pub(crate) duration: f64,
    /// Warm-up seconds before the measured window.
    #[arg(long, default_value_t = 1.0)]
    pub(crate) warmup: f64,
    /// Open loop: messages per second over all connections, latency from each message's
    /// intended send time. Default: closed loop.
    #[arg(long)]
    pub(crate) rate: Option<f64>,
    /// Seconds a message may wait for its answer before it counts as a timeout (and the
    /// longest a warm-up waits for a connection's first answer).
    #[arg(long, default_value_t = crate::load::DEFAULT_MSG_TIMEOUT.as_secs_f64())]
    pub(crate) timeout: f64,
    /// Event-loop threads (default: one per CPU it is given).
    #[arg(long)]
    pub(crate) threads: Option<u64>,
    /// A connection per message (neper's tcp_crr, `run conn.churn`): after each verified
    /// response the connection is closed with SO_LINGER 0 and a new one opened; --conns are
    /// then concurrent clients, and latency runs from each connect's start.
    #[arg(long)]
    pub(crate) churn: bool,
    /// CPUs for the load generator's threads, e.g. "0" or "0-1" (default: not pinned).
    #[arg(long)]
    pub(crate) cpus: Option<String>,
    /// What drives the connections of echo and HTTP: epoll (one send and one recv syscall per
    /// message) or io_uring (multishot receives into a buffer ring, sends batched into the
    /// loop's wait, registered files). Bulk streams and pubsub always use epoll.
    #[arg(long, value_enum, default_value = "epoll")]
    pub(crate) engine: EngineArg,
    /// Sample where the load generator's CPUs went over the window (perf, as `run --explain`
    /// samples a server's): user space, syscalls, TCP/IP, softirq, ... Needs --cpus.
    #[arg(long)]
    pub(crate) explain: bool,
    /// Also write the report as JSON to this file (atomically).
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
}

/// `load --engine`, `run --load-engine`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    Epoll,
    Uring,
}

impl From<EngineArg> for crate::load::Engine {
    fn from(e: EngineArg) -> Self {
        match e {
            EngineArg::Uring => crate::load::Engine::Uring,
            EngineArg::Epoll => crate::load::Engine::Epoll,
        }
    }
}

/// `serve --protocol`: what the server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProtocolArg {
    Echo,
    Http,
    Sink,
    Source,
    Pubsub,
    /// UDP echo (`udp.echo`): datagrams echoed to their source.
    UdpEcho,
    /// UDP echo with UDP_GRO on the socket (`udp.echo_gso`): runs echoed with UDP_SEGMENT.
    UdpEchoGro,
}

impl From<ProtocolArg> for crate::proto::ServeProtocol {
    fn from(p: ProtocolArg) -> Self {
        use crate::proto::ServeProtocol as P;
        match p {
            ProtocolArg::Echo => P::Echo,
            ProtocolArg::Http => P::Http,
            ProtocolArg::Sink => P::Sink,
            ProtocolArg::Source => P::Source,
            ProtocolArg::Pubsub => P::Pubsub,
            ProtocolArg::UdpEcho => P::UdpEcho,
            ProtocolArg::UdpEchoGro => P::UdpEchoGro,
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LoadProtocolArg {
    Echo,
    Http,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ProfileArg {
    Smoke,
    Quick,
    Full,
}

impl RunArgs {
    /// The knob flags as given, for `plan::Overrides::parse`.
    pub(crate) fn knobs(&self) -> Vec<(crate::plan::Knob, Option<&str>)> {
        use crate::plan::Knob;
        [
            (Knob::Conns, &self.conns),
            (Knob::Clients, &self.clients),
            (Knob::Rate, &self.rate),
            (Knob::MsgBytes, &self.msg_bytes),
            (Knob::BodyBytes, &self.body_bytes),
            (Knob::Duration, &self.duration),
            (Knob::Warmup, &self.warmup),
        ]
        .into_iter()
        .map(|(k, v)| (k, v.as_deref()))
        .collect()
    }
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

/// Parses the command line (clap prints help/version or usage errors and exits 0/2 itself).
pub fn parse() -> Cli {
    Cli::parse()
}
