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
/// own (`unshare(CLONE_FILES)`), and returns what it returned. Everything `f` opens is opened,
/// used and closed on that thread; the caller waits, so no fd crosses between the tables.
pub(crate) fn alone<T: Send>(
    ctx: &Ctx<'_>,
    f: impl FnOnce() -> Result<T, CaseError> + Send,
) -> Result<T, CaseError> {
    on_own_table(ctx.plan.measured, f)
}

fn on_own_table<T: Send>(
    cpu: u32,
    f: impl FnOnce() -> Result<T, CaseError> + Send,
) -> Result<T, CaseError> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("ringside-micro".into())
            .spawn_scoped(s, || {
                crate::measure::pin::pin_this_thread(cpu)
                    .map_err(|e| CaseError::Failed(anyhow::anyhow!("pinning to CPU {cpu}: {e}")))?;
                // SAFETY: the table is this thread's from here on. `f` opens, uses and closes
                // its fds on this thread and returns none (`T` holds figures); the fds it
                // borrows from the caller (opened before the copy) stay open in both tables
                // while the caller waits for it.
                unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::FILES) }
                    .map_err(|e| {
                        CaseError::Failed(anyhow::anyhow!("a private fd table (unshare): {e}"))
                    })?;
                f()
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
    use std::os::fd::AsRawFd;

    #[test]
    fn a_repetition_closes_fds_in_its_own_table_only() {
        let cpu = crate::measure::pin::allowed_cpus()[0];
        let (rd, wr) = rustix::pipe::pipe().unwrap();
        let raw = wr.as_raw_fd();
        let me = rustix::thread::gettid();
        let (tid, saw) = on_own_table(cpu, || {
            // The caller's fd is there (the table is a copy); closing it here closes this
            // table's entry only.
            // SAFETY: `raw` is open in this thread's copy of the table and nothing here uses it after.
            let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) };
            let saw = rustix::io::fcntl_getfd(&fd).is_ok();
            drop(fd);
            Ok((rustix::thread::gettid(), saw))
        })
        .unwrap();
        assert!(saw, "the caller's fds are in the repetition's table");
        assert_ne!(tid, me, "the repetition runs on a thread of its own");
        // Still open here: the write end still reaches the read end.
        rustix::io::write(&wr, b"x").unwrap();
        let mut b = [0u8; 1];
        assert_eq!(rustix::io::read(&rd, &mut b).unwrap(), 1);
    }
}
