//! NAPI rows (`uring-napi`, the ladder's top rung): whether the sockets served really carry a
//! NAPI id (see `io::napi`). The probe before a run asks the path once; this asks each
//! connection the server measured, at its first received bytes. A direct descriptor has no fd to ask: one IORING_OP_FIXED_FD_INSTALL
//! (6.8) gives a plain fd for the one getsockopt, closed at once; the connection never waits
//! for it (its completion touches no connection state).

use super::conn::Fd;
use super::Server;
use crate::io::napi::incoming_napi_id as napi_id;
use crate::io::uring::user_data::{Op, UserData};
use crate::proto::Protocol;
use io_uring::{opcode, types};
use std::io;

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
        let c = &mut self.c;
        crate::io::napi::count(
            id,
            &mut c.napi_socks,
            &mut c.napi_id_zero,
            &mut c.napi_check_errors,
        );
    }
}
