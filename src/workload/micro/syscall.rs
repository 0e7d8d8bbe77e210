//! `micro.syscall`: getpid(2) through the raw syscall instruction (glibc's wrapper may cache):
//! the floor every model pays for entering the kernel.
//!
//! raw: on purpose, through libc's `syscall(2)` (the figure this workload has always recorded).

use crate::error::CaseError;
use crate::measure::{Counters, Sample};
use crate::model::{Family, ModelSpec};
use crate::profile::Profile;
use crate::workload::{Ctx, Params, Point, Workload};

pub(crate) struct Syscall;

impl Workload for Syscall {
    fn kind(&self) -> crate::workload::Kind {
        crate::workload::Kind::Micro
    }
    fn id(&self) -> &'static str {
        "micro.syscall"
    }
    fn about(&self) -> &'static str {
        "getpid(2) via the raw syscall: the cost of entering the kernel at all"
    }
    fn op(&self) -> &'static str {
        "one getpid syscall"
    }
    fn accepts(&self, m: &ModelSpec) -> Result<(), String> {
        match m.id {
            "blocking" => Ok(()),
            _ if m.family == Family::Peer => Err("peers only serve TCP".into()),
            _ => Err(
                "a bare syscall is the same for every model; measured once under 'blocking'".into(),
            ),
        }
    }
    fn points(&self, _: Profile, _: &ModelSpec) -> Vec<Point> {
        vec![Point::new(Params::new())]
    }
    fn run_once(&self, ctx: &Ctx<'_>, _: &ModelSpec, _: &Point) -> Result<Sample, CaseError> {
        super::alone(ctx, || {
            for _ in 0..ctx.warm_ops {
                // SAFETY: getpid has no preconditions.
                unsafe { libc::syscall(libc::SYS_getpid) };
            }
            let mut w = ctx.window();
            for _ in 0..ctx.ops {
                let t0 = w.start();
                // SAFETY: as above.
                std::hint::black_box(unsafe { libc::syscall(libc::SYS_getpid) });
                w.record(t0, 1);
            }
            Ok(w.finish(ctx.ops, 0, Counters::default()))
        })
    }
}
