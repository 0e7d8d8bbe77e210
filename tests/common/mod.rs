//! The harness the integration tests share (each file that says `mod common;` compiles all of
//! it; what one file does not use is allowed to lie dead there):
//! - [`bin`]: the binary under test (`bin`, `ringside`) and the results fixture;
//! - [`schema`]: results.json checked against `docs/results.schema.json`;
//! - [`servers`]: the servers under test, from the registry (built-in servers, contenders);
//! - [`child`]: `ringside serve` as a child process, stopped with SIGTERM;
//! - [`engines`]: a load generator's test run once per engine;
//! - [`inproc`]: servers run on a thread of the test process (built-in ones through
//!   `io::serve`, contenders through `peer::serve_*`), stopped on request;
//! - [`net`]: the client side: connecting with timeouts, exact reads, resets;
//! - [`par`]: one check per server run a few at a time, so that their waits overlap;
//! - [`netns`]: two network namespaces joined by a veth pair (two hosts on one machine);
//! - [`run`]: a `ringside run` child watched from outside (cases saved, stderr collected);
//! - [`standin`]: a stand-in echo server with broken modes for the load generator's tests
//!   (re-exported: `common::serve`, `common::serve_on`, `common::Mode`, `common::echo`);
//! - [`tools`]: a tool CI installs, or a capability CI's machine has (root, network namespaces,
//!   sshd in one, perf sampling, two CPUs), that is missing: skipped here, a failure in CI.
#![allow(dead_code, unused_imports)]

pub mod bin;
pub mod child;
pub mod engines;
pub mod inproc;
pub mod net;
pub mod netns;
pub mod par;
pub mod run;
pub mod schema;
pub mod servers;
pub mod standin;
pub mod tools;

pub use standin::{echo, serve, serve_on, Mode};
