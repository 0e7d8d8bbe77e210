//! Ending connections, and the server: a closing connection's cancels, the reset, freeing the
//! slot, the idle sweep that starts closing, and the stop.
//!
//! Every close goes one way: the connection's phase becomes closing, `progress` sends a cancel
//! for each op still in flight, and the slot (with its buffers) is freed once the last CQE is
//! in. A socket is closed with `close(2)`, or with a close SQE on a direct descriptor's slot.

use super::conn::{Fd, Phase, RecvOp, SendOp, Src};
use super::Server;
use crate::io::idle::Idle;
use crate::io::uring::user_data::{Op, UserData};
use crate::proto::Protocol;
use io_uring::{cqueue, opcode, squeue, types};
use std::io;
use std::time::{Duration, Instant};

/// SO_LINGER {on, 0 s}: close sends RST. Static: SQEs point at it.
static LINGER_RESET: libc::linger = libc::linger {
    l_onoff: 1,
    l_linger: 0,
};

/// What follows SO_LINGER {on, 0} in a reset.
pub(super) enum Then {
    /// shutdown(SHUT_RD): ends a multishot recv at once; the close comes when the slot is
    /// freed, and sends RST.
    ShutRead,
    /// close: RST now.
    Close,
}

/// The idle limit and its sweep timer.
pub(super) struct Sweep {
    idle: Idle,
    /// The tick (boxed: the timeout SQE points at it).
    tick: Box<types::Timespec>,
    /// The timer is multishot (cleared when the kernel refuses it).
    multishot: bool,
}

impl Sweep {
    pub(crate) fn new(idle: Idle) -> Sweep {
        Sweep {
            tick: Box::new(types::Timespec::from(idle.tick)),
            idle,
            multishot: true,
        }
    }
}

impl<P: Protocol> Server<P> {
    /// A closing connection: cancels its receive and send; when only a SEND_ZC notification is
    /// out, closes its socket now (with a reset) and keeps the slot and buffer until it comes;
    /// frees the slot once nothing is in flight.
    pub(super) fn wind_down(&mut self, idx: u32) -> io::Result<()> {
        let Some(conn) = self.conns.at(idx) else {
            return Ok(());
        };
        let (gen, fd) = (conn.gen, conn.fd);
        let cancel_recv = conn.recv == RecvOp::Armed;
        if cancel_recv {
            conn.recv = RecvOp::Cancelling;
        }
        let mut cancel_send = false;
        let mut reset_now = false;
        match conn.send {
            // SEND_ZC finished; only its notification is out, which comes when the peer's
            // stack frees the bytes (over loopback: when the peer reads them, perhaps never).
            SendOp::ZcNotif { .. } if conn.phase != Phase::SocketClosed => {
                conn.phase = Phase::SocketClosed;
                reset_now = true;
            }
            // Only held SEND_ZC buffers' notifications are out (broker): the same.
            SendOp::Idle if !conn.zc_held.is_empty() && conn.phase != Phase::SocketClosed => {
                conn.phase = Phase::SocketClosed;
                reset_now = true;
            }
            SendOp::InFlight => {
                conn.send = SendOp::Cancelling;
                cancel_send = true;
            }
            _ => {}
        }
        let busy = conn.busy();
        if reset_now {
            self.c.zc_early_closes += 1;
            self.reset(idx, gen, fd, Then::Close)?;
        }
        if cancel_recv {
            self.cancel(Op::Recv, Op::CancelRecv, idx, gen)?;
        }
        if cancel_send {
            self.cancel(Op::Send, Op::Cancel, idx, gen)?;
        }
        if !busy {
            self.close(idx)?;
        }
        Ok(())
    }

    /// Frees slot `idx` (nothing of it may be in flight): its provided buffers go back to the
    /// ring and its socket is closed, unless it already was.
    pub(super) fn close(&mut self, idx: u32) -> io::Result<()> {
        let Some(conn) = self.conns.remove(idx) else {
            return Ok(());
        };
        if let Some(b) = self.broker.as_mut() {
            b.forget(idx);
        }
        self.c.closes += 1;
        for ch in conn.out.iter() {
            if let Src::Bid(b) = ch.src {
                self.recycle(b);
            }
        }
        if conn.phase == Phase::SocketClosed {
            return Ok(());
        }
        match conn.fd {
            Fd::Raw(fd) => {
                // SAFETY: the fd came from accept and no op on it is in flight.
                unsafe { libc::close(fd) };
                Ok(())
            }
            Fd::Fixed(s) => {
                let e = opcode::Close::new(types::Fixed(s))
                    .build()
                    .user_data(UserData::new(Op::Close, idx, conn.gen).encode());
                self.push(e)
            }
        }
    }

    /// Resets connection `idx`'s socket: SO_LINGER {on, 0}, then `then`. A plain descriptor
    /// takes the two syscalls now; a direct one takes two SQEs, hard-linked so that they run
    /// in order and the second runs even if the first fails.
    pub(super) fn reset(&mut self, idx: u32, gen: u32, fd: Fd, then: Then) -> io::Result<()> {
        let linger: *const libc::c_void = (&LINGER_RESET as *const libc::linger).cast();
        match fd {
            // SAFETY: socket options, shutdown and close on a socket we own. `Then::Close` is
            // asked only when no op on it is in flight or only a finished SEND_ZC's
            // notification is out (io_uring holds its own file reference), and nothing is
            // submitted on it afterwards.
            Fd::Raw(fd) => unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    linger,
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                );
                match then {
                    Then::ShutRead => libc::shutdown(fd, libc::SHUT_RD),
                    Then::Close => libc::close(fd),
                };
                Ok(())
            },
            Fd::Fixed(slot) => {
                let ud = UserData::new(Op::Close, idx, gen).encode();
                let set = opcode::SetSockOpt::new(
                    types::Fixed(slot),
                    libc::SOL_SOCKET as u32,
                    libc::SO_LINGER as u32,
                    linger,
                    std::mem::size_of::<libc::linger>() as u32,
                )
                .build()
                .flags(squeue::Flags::IO_HARDLINK)
                .user_data(ud);
                let next = match then {
                    Then::ShutRead => {
                        // The kernel runs a shutdown in io-wq and resolves the slot there: the
                        // slot stays this connection's (busy) until it completes.
                        if let Some(c) = self.conns.at(idx).filter(|c| c.gen == gen) {
                            c.shutting = true;
                        }
                        opcode::Shutdown::new(types::Fixed(slot), libc::SHUT_RD)
                            .build()
                            .user_data(UserData::new(Op::ShutRead, idx, gen).encode())
                    }
                    Then::Close => opcode::Close::new(types::Fixed(slot)).build().user_data(ud),
                };
                self.push(set)?;
                if let (Then::ShutRead, Some(ts)) = (then, self.race_fault.as_deref()) {
                    let t = opcode::Timeout::new(ts as *const types::Timespec)
                        .build()
                        .flags(squeue::Flags::IO_HARDLINK)
                        .user_data(ud);
                    self.push(t)?;
                }
                self.push(next)
            }
        }
    }

    /// Arms the idle-sweep timer (if the protocol has a limit): multishot (one SQE for the
    /// server's life) unless the kernel refused it, then one-shot, re-armed at each tick.
    pub(super) fn arm_tick(&mut self) -> io::Result<()> {
        let Some(sw) = &self.sweep else {
            return Ok(());
        };
        let flags = if sw.multishot {
            types::TimeoutFlags::MULTISHOT
        } else {
            types::TimeoutFlags::empty()
        };
        let e = opcode::Timeout::new(&*sw.tick as *const types::Timespec)
            .flags(flags)
            .build()
            .user_data(UserData::global(Op::IdleTick).encode());
        self.push(e)
    }

    /// A sweep tick: every connection past the idle limit starts closing.
    pub(super) fn on_tick(&mut self, res: i32, flags: u32) -> io::Result<()> {
        let Some(sw) = self.sweep.as_mut() else {
            return Ok(());
        };
        if res == -libc::EINVAL && sw.multishot {
            // Kernels before 6.4 have no multishot timeouts.
            sw.multishot = false;
            self.c.idle_tick_oneshot += 1;
            return self.arm_tick();
        }
        if res == -libc::ECANCELED || self.stopping {
            return Ok(());
        }
        if res != -libc::ETIME {
            // Not a timer expiry: stop sweeping rather than re-arm into the same error.
            self.c.idle_tick_errors += 1;
            return Ok(());
        }
        let (idle, now) = (sw.idle, self.now);
        for idx in 0..self.conns.slots() {
            let Some(conn) = self.conns.at(idx) else {
                continue;
            };
            if conn.phase.closing() || !idle.expired(conn.last_ns, now) {
                continue;
            }
            conn.phase = Phase::Closing;
            self.c.idle_closes += 1;
            self.progress(idx)?;
        }
        if !cqueue::more(flags) {
            self.arm_tick()?;
        }
        Ok(())
    }

    /// The stop: cancels everything and waits (bounded) for every op's CQE, so no buffer is
    /// freed under the kernel; then closes what is left.
    pub(super) fn teardown(&mut self) -> io::Result<()> {
        self.c.live_at_stop += self.conns.live() as u64;
        let cancel = opcode::AsyncCancel2::new(types::CancelBuilder::any())
            .build()
            .user_data(UserData::global(Op::Cancel).encode());
        self.push(cancel)?;
        let deadline = Instant::now() + Duration::from_secs(2);
        while self.conns.busy() && Instant::now() <= deadline {
            self.c.io_uring_enter += 1;
            crate::io::uring::ring::submit_and_wait_for(&self.ring, Duration::from_millis(50))?;
            self.reap();
            for (ud, res, flags) in std::mem::take(&mut self.cqes) {
                let Some(u) = UserData::decode(ud) else {
                    continue;
                };
                if u.op == Op::NapiFd {
                    // Its fd is still read and closed (`napi`).
                    self.on_napi_fd(res)?;
                    continue;
                }
                if let Some(b) = cqueue::buffer_select(flags) {
                    self.recycle(b);
                }
                let more = cqueue::more(flags);
                if let Some(c) = self.conns.get(u) {
                    match u.op {
                        Op::Recv if !more => c.recv = RecvOp::Idle,
                        Op::Send if cqueue::notif(flags) && c.release_zc(UserData::tag_of(ud)) => {}
                        Op::Send if !more || cqueue::notif(flags) => c.send = SendOp::Idle,
                        _ => {}
                    }
                }
            }
        }
        if self.conns.busy() {
            // The kernel may still write to these buffers: leak them rather than free them.
            self.c.teardown_leaked += 1;
            self.conns.leak();
            if let Some(p) = self.provided.take() {
                std::mem::forget(p);
            }
            return Ok(());
        }
        for idx in 0..self.conns.slots() {
            self.close(idx)?;
        }
        self.ring.submit().ok();
        self.c.cq_overflow += self.ring.completion().overflow() as u64;
        if let Some(mut p) = self.provided.take() {
            // Still registered after a failed unregister, the ring leaks itself on drop
            // rather than free memory the kernel may touch.
            let _ = p.ring.unregister(&self.ring.submitter());
        }
        Ok(())
    }
}
