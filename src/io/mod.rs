//! The I/O models. Each family implements the shapes it supports; one factory per shape maps
//! a model to its implementation with one `match` on the family. Nothing here knows about
//! statistics or output.

pub mod blocking;
pub mod epoll;
pub mod readiness;
pub mod sys;
pub mod uring;

use crate::error::CaseError;
use crate::measure::{pin::CpuPlan, Counters};
use crate::model::{Knobs, ModelSpec};
use std::io;

/// Shape: move one message through each of N pipes, in one thread.
///
/// `micro.pipe` is this shape with N = 1; `micro.batching` sweeps N. What is timed is `run`;
/// `prepare` is the untimed part of an iteration (epoll: writing the messages the timed wait
/// will find ready).
pub trait PipeBatch {
    /// Untimed work before each `run`.
    fn prepare(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Timed: one message through each pipe, every byte accounted for.
    fn run(&mut self) -> io::Result<()>;
    /// Untimed: check the last messages received carry the sequence number that was sent.
    fn verify(&self) -> io::Result<()>;
    /// What the model counted for itself (io_uring_enter calls, events per wait...).
    fn counters(&self) -> Counters;
}

/// Builds the pipe-batch shape for a model.
pub fn pipe_batch(
    m: &ModelSpec,
    pipes: usize,
    msg_bytes: usize,
    plan: &CpuPlan,
) -> Result<Box<dyn PipeBatch>, CaseError> {
    let set = sys::PipeSet::new(pipes, msg_bytes)?;
    match &m.knobs {
        Knobs::Blocking(_) => Ok(Box::new(blocking::PipeLoop::new(set))),
        Knobs::Epoll(t) => Ok(Box::new(epoll::PipeWait::new(set, *t)?)),
        Knobs::Uring(k) => Ok(Box::new(uring::pipe::LinkedPairs::new(set, k, plan)?)),
        Knobs::Peer(_) => Err(CaseError::not_applicable("peers only serve TCP")),
    }
}
