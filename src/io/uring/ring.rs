//! The one place a ring is built from `UringKnobs`: setup flags (SQPOLL, DEFER_TASKRUN),
//! SQPOLL CPU placement, and the errors that make a model unavailable rather than failed.

use crate::error::CaseError;
use crate::measure::pin::CpuPlan;
use crate::model::{Drive, UringKnobs};
use io_uring::IoUring;
use std::io;

crate::counter_set! {
    /// How a ring was set up: 1 per flag `build` set, recorded as these counters with every
    /// case that used the ring (the io_uring server's own counters, or a UDP server's).
    pub(crate) struct SetupFlags {
        setup_sqpoll, setup_sq_aff, setup_defer_taskrun, setup_single_issuer, setup_iopoll,
        setup_napi,
    }
}

impl SetupFlags {
    /// The flags into the server's counters. Destructured whole: a flag added here does not
    /// compile until it is recorded there.
    pub(crate) fn record(&self, c: &mut crate::io::uring::server::UringCounters) {
        let SetupFlags {
            setup_sqpoll,
            setup_sq_aff,
            setup_defer_taskrun,
            setup_single_issuer,
            setup_iopoll,
            setup_napi,
        } = *self;
        c.setup_sqpoll += setup_sqpoll;
        c.setup_sq_aff += setup_sq_aff;
        c.setup_defer_taskrun += setup_defer_taskrun;
        c.setup_single_issuer += setup_single_issuer;
        c.setup_iopoll += setup_iopoll;
        c.setup_napi += setup_napi;
    }

    /// The flags set, into a name -> count map (a UDP server's counters).
    pub(crate) fn add_to(&self, out: &mut crate::measure::Counters) {
        use crate::measure::CounterSet;
        self.for_each(&mut |name, n| {
            if n > 0 {
                out.add(name, n);
            }
        });
    }
}

/// How a ring was set up, recorded with the counters of every case that used it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Setup {
    pub(crate) flags: SetupFlags,
    pub(crate) sqpoll_cpu: Option<u32>,
}

/// Builds a ring with `entries` SQ entries for a model.
///
/// SQPOLL's poller is placed on the plan's SQPOLL CPU (an idle SMT sibling of the server's
/// core, else the highest load CPU): on the measured thread's own CPU each op would wait for a
/// scheduler slice. A plan with no CPU apart from the measured one makes SQPOLL unavailable.
pub(crate) fn build(
    k: &UringKnobs,
    entries: u32,
    plan: &CpuPlan,
) -> Result<(IoUring, Setup), CaseError> {
    let mut b = IoUring::builder();
    let mut setup = Setup::default();
    match k.drive {
        Drive::Enter => {}
        Drive::Sqpoll { idle_ms } => {
            let Some(cpu) = plan.sqpoll_cpu() else {
                return Err(CaseError::unavailable(
                    "SQPOLL needs a CPU apart from the measured thread's (or the server \
                     threads') for its poller, and the CPU plan has none left (pass --cpus \
                     A,B, or --server-cpus and --load-cpus leaving one)",
                ));
            };
            b.setup_sqpoll(idle_ms).setup_sqpoll_cpu(cpu);
            setup.flags.setup_sqpoll = 1;
            setup.flags.setup_sq_aff = 1;
            setup.sqpoll_cpu = Some(cpu);
        }
        Drive::Defer => {
            b.setup_defer_taskrun().setup_single_issuer();
            setup.flags.setup_defer_taskrun = 1;
            setup.flags.setup_single_issuer = 1;
        }
        Drive::Iopoll => {
            b.setup_iopoll();
            setup.flags.setup_iopoll = 1;
        }
    }
    let ring = b.build(entries).map_err(|e| refusal(k, e))?;
    if let Some(us) = k.wait.napi_busy_poll_us {
        // NAPI busy polling (6.9): the ring polls the NIC queues its sockets arrive on
        // (dynamic tracking). Not a setup flag but part of how the ring waits.
        let mut n = io_uring::types::Napi::new().set_busy_poll_timeout(us);
        ring.submitter()
            .register_napi(&mut n)
            .map_err(|e| CaseError::unavailable(format!("IORING_REGISTER_NAPI refused: {e}")))?;
        setup.flags.setup_napi = 1;
    }
    Ok((ring, setup))
}

/// Submits what `ring` has queued and waits up to `timeout` for one completion. A wait that
/// timed out, was interrupted by a signal, or met the completion queue's backlog (EBUSY: reap,
/// then enter again) is an empty wait, not an error.
pub(crate) fn submit_and_wait_for(ring: &IoUring, timeout: std::time::Duration) -> io::Result<()> {
    let ts = io_uring::types::Timespec::from(timeout);
    let args = io_uring::types::SubmitArgs::new().timespec(&ts);
    match ring.submitter().submit_with_args(1, &args) {
        Ok(_) => Ok(()),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ETIME | libc::EINTR | libc::EBUSY)
            ) =>
        {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

fn refusal(k: &UringKnobs, e: io::Error) -> CaseError {
    let what = match k.drive {
        Drive::Sqpoll { .. } => "io_uring_setup with SQPOLL",
        Drive::Iopoll => "io_uring_setup with IOPOLL",
        Drive::Defer => "io_uring_setup with DEFER_TASKRUN|SINGLE_ISSUER",
        Drive::Enter => "io_uring_setup",
    };
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) | Some(libc::ENOSYS) | Some(libc::EINVAL)
        | Some(libc::ENOMEM) => CaseError::unavailable(format!("{what} refused: {e}")),
        _ => CaseError::Failed(anyhow::anyhow!("{what}: {e}")),
    }
}
