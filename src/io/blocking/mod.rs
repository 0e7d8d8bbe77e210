//! Blocking syscalls: the call returns when the work is done. Micro shapes run in one thread.

pub mod file;
mod pipe;
pub mod pool;

pub use pipe::PipeLoop;
