//! io_uring through the `io-uring` crate: SQ and CQ are the crate's; ring construction from a
//! model's knobs happens only in `ring.rs`.

pub(crate) mod bufring;
pub(crate) mod file;
pub(crate) mod pipe;
pub(crate) mod ring;
pub mod server;
pub(crate) mod udp;
pub(crate) mod user_data;
