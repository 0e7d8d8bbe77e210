//! Blocking syscalls: the call returns when the work is done. Micro shapes run in one thread.

pub(crate) mod file;
mod live;
mod pipe;
pub(crate) mod pool;
pub(crate) mod pubsub;
pub(crate) mod server;
pub(crate) mod udp;
pub(crate) mod udp_pool;

pub(crate) use pipe::PipeLoop;
