//! The integration tests, one binary: each file here is a module (named as the test files
//! were), sharing `tests/common`. Four stay binaries of their own (`tests/*.rs`) because they
//! change or read their whole process: `crosscheck_bounds` (PATH), `export_scaling` (a
//! counting global allocator), `cpu_accounting` (the process's CPU) and `lifecycle` (the
//! stale-child sweep of this process's children).

#[path = "../common/mod.rs"]
mod common;

mod blocking_fds;
mod chart_labels;
mod claims_agree;
mod cli;
mod cli_http;
mod compare_gate;
mod compare_golden;
mod compare_many;
mod conformance;
mod conn_churn;
mod conn_idle;
mod cores;
mod echo_suite;
mod env_seccomp;
mod equal_load_verdicts;
mod explain;
mod export_golden;
mod findings;
mod hostile_load;
mod html_browser;
mod http_conformance;
mod http_suite;
mod idle_timeout;
mod interrupt;
mod ladder;
mod ladder_waterfall;
mod load;
mod load_http;
mod micro_smoke;
mod module_graph;
mod out_dir;
mod peer_monoio_driver;
mod peer_protocols;
mod peers;
mod pubsub_conformance;
mod readme_recipes;
mod remote_forged;
mod remote_ssh;
mod report_hostile;
mod run_knobs;
mod schema;
mod storage;
mod stream_conformance;
mod threads;
mod two_hosts;
mod udp_conformance;
mod udp_gso;
mod uring_after_6_1;
