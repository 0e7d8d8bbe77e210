//! NAPI rows (`uring-napi`, the ladder's top rung): whether the sockets served really carry a
//! NAPI id. Busy polling registered on the ring polls the device queues its sockets name
//! (SO_INCOMING_NAPI_ID); a socket with id 0 (loopback, a veth pair without GRO) gives it
//! nothing to poll, and the row then measures plain `uring-tuned` plus a spinning wait. The
//! probe before a run asks the path once; this asks each connection the server measured, at
//! its first received bytes (the id is the queue of the last packet received), and counts:
//! `napi_socks` read, `napi_id_zero` of them with id 0 (the runner warns `no_napi_id`),
//! `napi_check_errors`. A direct descriptor has no fd to ask: one IORING_OP_FIXED_FD_INSTALL
//! (6.8) gives a plain fd for the one getsockopt, closed at once; the connection never waits
//! for it (its completion touches no connection state).

use super::conn::Fd;
use super::Server;
use crate::io::uring::user_data::{Op, UserData};
use crate::proto::Protocol;
use io_uring::{opcode, types};
use std::io;
use std::os::fd::RawFd;

/// SO_INCOMING_NAPI_ID of `fd`.
fn napi_id(fd: RawFd) -> io::Result<u32> {
    let mut id: u32 = 0;
    let mut len = std::mem::size_of::<u32>() as libc::socklen_t;
    // SAFETY: `id` and `len` are valid for writes of the sizes given.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_INCOMING_NAPI_ID,
            (&mut id as *mut u32).cast(),
            &mut len,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(id)
}

impl<P: Protocol> Server<P> {
    /// At a connection's first received bytes on a NAPI row: reads its NAPI id (a direct
    /// descriptor through FIXED_FD_INSTALL first).
    pub(super) fn napi_check(&mut self, idx: u32) -> io::Result<()> {
        let Some(conn) = self.conns.at(idx) else {
            return Ok(());
        };
        if conn.napi_checked {
            return Ok(());
        }
        conn.napi_checked = true;
        match conn.fd {
            Fd::Raw(fd) => {
                self.count_napi_id(napi_id(fd));
                Ok(())
            }
            Fd::Fixed(slot) => {
                let e = opcode::FixedFdInstall::new(types::Fixed(slot), 0)
                    .build()
                    .user_data(UserData::new(Op::NapiFd, idx, conn.gen).encode());
                self.push(e)
            }
        }
    }

    /// FIXED_FD_INSTALL completed: `res` is a plain fd (O_CLOEXEC) for the socket, or -errno.
    pub(super) fn on_napi_fd(&mut self, res: i32) -> io::Result<()> {
        if res < 0 {
            self.count_napi_id(Err(io::Error::from_raw_os_error(-res)));
            return Ok(());
        }
        let id = napi_id(res);
        // SAFETY: the kernel installed `res` for us; nothing else owns it.
        unsafe { libc::close(res) };
        self.count_napi_id(id);
        Ok(())
    }

    fn count_napi_id(&mut self, id: io::Result<u32>) {
        match id {
            Ok(0) => {
                self.c.napi_socks += 1;
                self.c.napi_id_zero += 1;
            }
            Ok(_) => self.c.napi_socks += 1,
            Err(_) => self.c.napi_check_errors += 1,
        }
    }
}
