//! `micro.pipe`: one message through a pipe in one thread, per model.
//! blocking: write + read. epoll: the message is already written; the timed receive path is
//! epoll_wait + read. io_uring: a WRITE SQE linked to a READ SQE, one io_uring_enter waiting for
//! both; SQPOLL: no enter, completions awaited by spinning on the CQ.

use super::measure_batches;
use crate::error::CaseError;
use crate::io;
use crate::measure::Sample;
use crate::model::ModelSpec;
use crate::profile::Profile;
use crate::workload::{Ctx, Point, Workload};

pub(crate) struct Pipe;

/// `micro.pipe`'s parameters.
#[derive(serde::Serialize, serde::Deserialize)]
struct Args {
    msg_bytes: u64,
}

impl Workload for Pipe {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Micro
    }
    fn id(&self) -> &'static str {
        "micro.pipe"
    }
    fn about(&self) -> &'static str {
        "one message through a pipe in one thread: write+read, epoll_wait+read, linked io_uring pair"
    }
    fn op(&self) -> &'static str {
        "one message written and read back (epoll: the wait + read are timed, the write is not; syscalls count all three)"
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        Ok(m.runs(crate::model::Shape::Pipe)?)
    }
    fn points(&self, profile: Profile, _: &ModelSpec) -> Vec<Point> {
        let sizes: &[u64] = match profile {
            Profile::Smoke => &[64, 4096],
            _ => &[64, 256, 1024, 4096, 16384],
        };
        sizes
            .iter()
            .map(|&msg_bytes| Point::of(Args { msg_bytes }))
            .collect()
    }
    fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
        let msg = p.args::<Args>()?.msg_bytes;
        super::alone(ctx, || {
            let mut shape = io::pipe_batch(m, 1, msg as usize, ctx.plan)?;
            measure_batches(ctx, shape.as_mut(), 1, msg)
        })
    }
}
