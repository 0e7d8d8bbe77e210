//! The one place a ring is built from `UringKnobs`: setup flags (SQPOLL, DEFER_TASKRUN),
//! SQPOLL CPU placement, and the errors that make a model unavailable rather than failed.

use crate::error::CaseError;
use crate::measure::pin::CpuPlan;
use crate::model::{Drive, UringKnobs};
use io_uring::IoUring;
use std::io;

/// Every flag `build` may record in `Setup::flags` (each has its `setup_*` counter in the
/// io_uring server: checked below).
#[cfg(test)]
pub(crate) const SETUP_FLAGS: &[&str] = &[
    "SQPOLL",
    "SQ_AFF",
    "DEFER_TASKRUN",
    "SINGLE_ISSUER",
    "IOPOLL",
    "NAPI",
];

/// How a ring was set up, recorded with the counters of every case that used it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Setup {
    pub(crate) flags: Vec<&'static str>,
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
            setup.flags.push("SQPOLL");
            setup.flags.push("SQ_AFF");
            setup.sqpoll_cpu = Some(cpu);
        }
        Drive::Defer => {
            b.setup_defer_taskrun().setup_single_issuer();
            setup.flags.push("DEFER_TASKRUN");
            setup.flags.push("SINGLE_ISSUER");
        }
        Drive::Iopoll => {
            b.setup_iopoll();
            setup.flags.push("IOPOLL");
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
        setup.flags.push("NAPI");
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

#[cfg(test)]
mod tests {
    use super::SETUP_FLAGS;
    use crate::measure::CounterSet;

    /// The io_uring server counts each setup flag of its ring as `setup_<flag>`: every flag
    /// `build` records has that counter.
    #[test]
    fn every_setup_flag_has_its_server_counter() {
        let names = crate::io::uring::server::UringCounters::NAMES;
        for f in SETUP_FLAGS {
            let want = format!("setup_{}", f.to_ascii_lowercase());
            assert!(names.contains(&want.as_str()), "{want}");
        }
    }
}
