//! Accepting: `ACCEPT_DEPTH` single-shot accepts in flight, or one multishot accept; into the
//! registered file table with direct descriptors. Errors follow the one policy of
//! `io::accept`: one about a connection re-arms at once; a pause (EMFILE...) cancels every armed
//! accept and a timeout of `ACCEPT_PAUSE` ends it, while the connections already open keep
//! being served; a fatal one ends the server.

use super::super::user_data::{Op, UserData};
use super::conn::{Conn, Fd};
use super::{Server, ACCEPT_DEPTH};
use crate::io::accept::{accept_action, AcceptAction};
use crate::proto::Protocol;
use io_uring::{cqueue, opcode, types};
use std::io;
use std::time::Duration;

pub(super) struct Acceptor {
    /// Accept SQEs in flight (a multishot accept counts once).
    armed: u32,
    /// A pause is under way: nothing re-arms accepting until its timeout.
    paused: bool,
    /// The pause's length (the timeout SQE points at it).
    pause: types::Timespec,
}

impl Acceptor {
    pub(crate) fn new(pause: Duration) -> Acceptor {
        Acceptor {
            armed: 0,
            paused: false,
            pause: types::Timespec::from(pause),
        }
    }
}

impl<P: Protocol> Server<P> {
    /// Tops accepting up: one multishot accept, or `ACCEPT_DEPTH` single-shot ones. Nothing
    /// while a pause is under way.
    pub(super) fn arm_accepts(&mut self) -> io::Result<()> {
        if self.hybrid.is_some() {
            return Ok(()); // epoll accepts (`hybrid`)
        }
        let depth = if self.mode.ms_accept { 1 } else { ACCEPT_DEPTH };
        while !self.accept.paused && self.accept.armed < depth {
            self.arm_accept()?;
        }
        Ok(())
    }

    fn arm_accept(&mut self) -> io::Result<()> {
        let ud = UserData::global(Op::Accept).encode();
        let lfd = types::Fd(self.lfd);
        // Direct descriptors have no close-on-exec flag (the kernel rejects it).
        let flags = if self.mode.fixed {
            0
        } else {
            libc::SOCK_CLOEXEC
        };
        let e = if self.mode.ms_accept {
            opcode::AcceptMulti::new(lfd)
                .allocate_file_index(self.mode.fixed)
                .flags(flags)
                .build()
        } else {
            let a = opcode::Accept::new(lfd, std::ptr::null_mut(), std::ptr::null_mut());
            let slot = self.mode.fixed.then(types::DestinationSlot::auto_target);
            a.flags(flags).file_index(slot).build()
        };
        self.accept.armed += 1;
        self.push(e.user_data(ud))
    }

    pub(super) fn on_accept(&mut self, res: i32, flags: u32) -> io::Result<()> {
        let more = self.mode.ms_accept && cqueue::more(flags);
        if !more {
            self.accept.armed -= 1;
        }
        if res >= 0 {
            self.c.accepts += 1;
            if self.mode.ms_accept && !more {
                self.c.accept_rearms += 1;
            }
            let fd = if self.mode.fixed {
                Fd::Fixed(res as u32)
            } else {
                Fd::Raw(res)
            };
            self.open(fd)?;
            return self.arm_accepts();
        }
        if res == -libc::ECANCELED {
            return Ok(()); // a pause cancelled it, or the stop
        }
        match accept_action(-res) {
            AcceptAction::Wait => self.arm_accepts(),
            AcceptAction::Retry => {
                self.c.accept_errors += 1;
                self.arm_accepts()
            }
            // Never re-arm at once: a persistent error would spin.
            AcceptAction::Pause => self.pause_accepting(),
            AcceptAction::Fatal => {
                let e = io::Error::from_raw_os_error(-res);
                Err(io::Error::new(e.kind(), format!("accept: {e}")))
            }
        }
    }

    /// Stops accepting until the pause's timeout: every accept still armed is cancelled.
    fn pause_accepting(&mut self) -> io::Result<()> {
        if self.accept.paused {
            return Ok(()); // another accept in flight met the same error
        }
        self.accept.paused = true;
        self.c.accept_pauses += 1;
        if self.accept.armed > 0 {
            // The multishot accept, or the other single-shot ones, are still armed: cancel
            // them all; the pause's end re-arms.
            let all = types::CancelBuilder::user_data(UserData::global(Op::Accept).encode()).all();
            let c = opcode::AsyncCancel2::new(all)
                .build()
                .user_data(UserData::global(Op::Cancel).encode());
            self.push(c)?;
        }
        let t = opcode::Timeout::new(&self.accept.pause as *const types::Timespec)
            .build()
            .user_data(UserData::global(Op::AcceptPause).encode());
        self.push(t)
    }

    pub(super) fn on_accept_pause_end(&mut self) -> io::Result<()> {
        self.accept.paused = false;
        self.arm_accepts()
    }

    /// A new connection accepted outside the ring (`hybrid`).
    pub(super) fn open_conn(&mut self, fd: Fd) -> io::Result<()> {
        self.open(fd)
    }

    /// A new connection: a slot, then its first receive.
    fn open(&mut self, fd: Fd) -> io::Result<()> {
        let (own_buf, now) = (!self.mode.ms_recv, self.now);
        let idx = self.conns.insert(|gen| Conn::new(gen, fd, own_buf, now));
        if idx < self.mode.zc_fixed_slots {
            self.register_recv_buf(idx);
        }
        self.progress(idx)
    }

    /// Registers connection `idx`'s receive buffer at table slot `idx` (replacing the buffer
    /// of the slot's previous connection, whose sends have all completed: a slot is freed only
    /// once none of its ops is in flight). Refused: its sends go unregistered (counted).
    fn register_recv_buf(&mut self, idx: u32) {
        let Some(conn) = self.conns.at(idx) else {
            return;
        };
        let iov = libc::iovec {
            iov_base: conn.recv_buf.as_mut_ptr().cast(),
            iov_len: conn.recv_buf.len(),
        };
        // SAFETY: the buffer lives as long as the connection; a later connection in this slot
        // replaces the entry before any SQE names it again, and only this connection's sends
        // name it (`buf_registered`).
        match unsafe {
            self.ring
                .submitter()
                .register_buffers_update(idx, &[iov], None)
        } {
            Ok(()) => {
                conn.buf_registered = true;
                self.c.zc_buf_registers += 1;
            }
            Err(_) => self.c.zc_buf_register_errors += 1,
        }
    }
}
