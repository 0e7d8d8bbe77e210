//! Network suites: servers measured from outside. A server runs as a child process pinned to
//! the plan's measured CPU; the load generator (`crate::load`) runs in this process on the
//! helper CPU.

pub mod cell;
pub(crate) mod churn;
pub(crate) mod cores;
pub mod echo;
pub mod equal_load;
pub mod http;
pub(crate) mod idle;
pub mod ladder;
pub(crate) mod launch;
pub(crate) mod pubsub;
pub(crate) mod stream;
pub(crate) mod udp;
pub(crate) mod udp_gso;
