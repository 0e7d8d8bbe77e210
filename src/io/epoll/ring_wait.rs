//! `uring-epollwait`: an epoll event loop whose waits are IORING_OP_EPOLL_WAIT SQEs on a ring
//! (kernel 6.15), the migration path for readiness-based code: the loop, its epoll_ctl calls
//! and its non-blocking reads and writes stay as they are; only the wait goes through the ring.
//!
//! One EPOLL_WAIT is in flight at a time, into a buffer this waiter owns (the caller's slice
//! could move between calls). A wait that times out leaves it armed; the next wait reaps it.

use crate::io::uring::ring;
use crate::measure::pin::CpuPlan;
use crate::model::UringKnobs;
use io_uring::{opcode, types, IoUring};
use std::io;
use std::os::fd::RawFd;

const WAIT: u64 = 1;
const ENTRIES: u32 = 8;

pub(crate) struct RingWait {
    /// Declared first: dropped (cancelling the armed wait) before the buffer it writes to.
    ring: IoUring,
    events: Box<[libc::epoll_event]>,
    armed: bool,
}

impl RingWait {
    /// A waiter on a ring built from the row's knobs `k` (its setup flags, if any).
    pub(crate) fn new(max_events: usize, k: &UringKnobs) -> io::Result<RingWait> {
        let (ring, _) = ring::build(k, ENTRIES, &CpuPlan::pair(0, None))
            .map_err(|e| io::Error::other(e.to_string()))?;
        Ok(RingWait {
            ring,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; max_events.max(1)]
                .into_boxed_slice(),
            armed: false,
        })
    }

    /// Waits on epoll instance `epfd` through the ring, up to `timeout_ms` (-1: no limit);
    /// copies the events into `out` and returns how many.
    pub(crate) fn wait(
        &mut self,
        epfd: RawFd,
        out: &mut [libc::epoll_event],
        timeout_ms: i32,
    ) -> io::Result<usize> {
        if !self.armed {
            let n = self.events.len().min(out.len()) as u32;
            let sqe = opcode::EpollWait::new(
                types::Fd(epfd),
                self.events.as_mut_ptr().cast::<types::epoll_event>(),
                n,
            )
            .build()
            .user_data(WAIT);
            // SAFETY: `events` lives as long as the ring (dropped after it) and is never
            // moved (a boxed slice); only one wait is in flight.
            unsafe { self.ring.submission().push(&sqe) }
                .map_err(|_| io::Error::other("EPOLL_WAIT: submission queue full"))?;
            self.armed = true;
        }
        let r = if timeout_ms < 0 {
            self.ring.submit_and_wait(1)
        } else {
            let ts = types::Timespec::from(std::time::Duration::from_millis(timeout_ms as u64));
            let args = types::SubmitArgs::new().timespec(&ts);
            self.ring.submitter().submit_with_args(1, &args)
        };
        match r {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ETIME) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        let mut got = None;
        for cqe in self.ring.completion() {
            if cqe.user_data() == WAIT {
                got = Some(cqe.result());
            }
        }
        let Some(res) = got else {
            return Ok(0);
        };
        self.armed = false;
        match res {
            n if n >= 0 => {
                let n = n as usize;
                out[..n].copy_from_slice(&self.events[..n]);
                Ok(n)
            }
            e if -e == libc::EINTR || -e == libc::EAGAIN => Ok(0),
            e => Err(io::Error::from_raw_os_error(-e)),
        }
    }
}
