//! io_uring through the `io-uring` crate: SQ and CQ are the crate's; ring construction from a
//! model's knobs happens only in `ring.rs`.

pub mod file;
pub mod pipe;
pub mod ring;
