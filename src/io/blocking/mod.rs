//! Blocking syscalls: the call returns when the work is done. Micro shapes run in one thread.

mod pipe;
pub mod server;

pub use pipe::PipeLoop;
