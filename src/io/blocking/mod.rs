//! Blocking syscalls: the call returns when the work is done. Micro shapes run in one thread.

pub mod file;
mod pipe;
pub mod pool;
pub mod pubsub;
pub mod server;

pub use pipe::PipeLoop;
