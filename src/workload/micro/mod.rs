//! The micro suite: what one syscall, one pipe message, one readiness wait and one batch cost,
//! per model, in one pinned thread.
//!
//! Each repetition runs [`alone`]: on a thread of its own with a file-descriptor table of its
//! own, as the single-threaded C loop it is held to (`benches/micro_vs_reference.py`). In a
//! process whose threads share one table, every read(2), write(2), epoll_wait(2) and
//! io_uring_enter(2) takes and drops a reference on its file (two atomics) where a lone
//! thread's borrows it; on a 2-vCPU VM that was 12% of a 64-byte pipe write+read.

pub(crate) mod batching;
pub(crate) mod fd_scaling;
pub(crate) mod pipe;
pub(crate) mod syscall;

use crate::error::CaseError;
use crate::io::PipeBatch;
use crate::measure::Sample;
use crate::workload::Ctx;

/// Runs `f` (one repetition) on a scoped thread pinned to the measured CPU whose fd table is its
/// own (`unshare(CLONE_FILES)`), and returns its sample. Everything `f` opens is opened, used
/// and closed on that thread; the caller waits, so no fd crosses between the tables. Where the
/// kernel refuses a table of its own (a seccomp filter, as in a default Docker container), the
/// thread shares the process's and the sample says so (counter `fd_table_shared`).
pub(crate) fn alone(
    ctx: &Ctx<'_>,
    f: impl FnOnce() -> Result<Sample, CaseError> + Send,
) -> Result<Sample, CaseError> {
    let (mut s, private) = on_own_table(ctx.plan.measured, f)?;
    if !private {
        s.counters.other.add(FD_TABLE_SHARED, 1);
    }
    Ok(s)
}

/// The counter a micro repetition carries when its thread could not have its own fd table.
pub(crate) const FD_TABLE_SHARED: &str = "fd_table_shared";

/// `f`'s result, and whether it ran with a table of its own.
fn on_own_table<T: Send>(
    cpu: u32,
    f: impl FnOnce() -> Result<T, CaseError> + Send,
) -> Result<(T, bool), CaseError> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("ringside-micro".into())
            .spawn_scoped(s, || {
                crate::measure::pin::pin_this_thread(cpu)
                    .map_err(|e| CaseError::Failed(anyhow::anyhow!("pinning to CPU {cpu}: {e}")))?;
                // SAFETY: on success the table is this thread's from here on. `f` opens, uses
                // and closes its fds on this thread and returns none (a sample holds
                // figures); the fds it borrows from the caller (opened before the copy) stay
                // open in both tables while the caller waits for it.
                let private =
                    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::FILES) }
                        .is_ok();
                f().map(|t| (t, private))
            })
            .map_err(|e| CaseError::Failed(anyhow::anyhow!("starting the measured thread: {e}")))?
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// Runs `ctx.ops` messages through a pipe-batch shape of `n` pipes: `ctx.ops / n` timed
/// batches, each followed by nothing and preceded by the untimed `prepare`. One op is one
/// message; each batch's time is recorded once per message, amortized.
pub(crate) fn measure_batches(
    ctx: &Ctx<'_>,
    shape: &mut dyn PipeBatch,
    n: u64,
    msg_bytes: u64,
) -> Result<Sample, CaseError> {
    let batches = (ctx.ops / n).max(1);
    for _ in 0..ctx.warm_ops.div_ceil(n) {
        shape.prepare()?;
        shape.run()?;
    }
    shape.verify()?;
    let mut w = ctx.window();
    for _ in 0..batches {
        shape.prepare()?;
        let t0 = w.start();
        shape.run()?;
        w.record(t0, n);
    }
    let ops = batches * n;
    let s = w.finish(ops, ops * msg_bytes, shape.counters());
    shape.verify()?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};

    #[test]
    fn a_repetition_opens_fds_in_its_own_table_only() {
        let cpu = crate::measure::pin::allowed_cpus()[0];
        let (rd, _wr) = rustix::pipe::pipe().unwrap();
        let me = rustix::thread::gettid();
        let ((tid, saw, copy), private) = on_own_table(cpu, || {
            // The caller's fds are there (the table is a copy of the caller's).
            let saw = rustix::io::fcntl_getfd(&rd).is_ok();
            // A descriptor opened here, far above the test process's others, left open.
            let copy = rustix::io::fcntl_dupfd_cloexec(&rd, 900).unwrap();
            Ok((rustix::thread::gettid(), saw, copy.into_raw_fd()))
        })
        .unwrap();
        assert!(saw, "the caller's fds are in the repetition's table");
        assert_ne!(tid, me, "the repetition runs on a thread of its own");
        // SAFETY: `copy` is a number only; it is not used as a descriptor unless open here.
        let here = rustix::io::fcntl_getfd(unsafe { BorrowedFd::borrow_raw(copy) });
        if private {
            // Its table went with its thread: the descriptor never existed in the caller's.
            assert_eq!(here.unwrap_err(), rustix::io::Errno::BADF);
        } else {
            // Refused (a seccomp filter): one table, so the descriptor is the caller's too.
            assert!(here.is_ok());
            // SAFETY: open in this table, owned by nothing else.
            drop(unsafe { OwnedFd::from_raw_fd(copy) });
        }
    }
}
