//! NAPI rows check the path they measure: busy polling (io_uring's registered NAPI, epoll's
//! EPIOCSPARAMS) polls the device queues its sockets name in SO_INCOMING_NAPI_ID; a socket
//! with id 0 (loopback, a veth pair without GRO) gives it nothing to poll. The servers of those
//! rows read each connection's id at its first received bytes (the id is the receive queue of
//! the last packet) and count `napi_socks`, `napi_id_zero`, `napi_check_errors`; the runner
//! warns `no_napi_id` on a cell whose server saw an id 0.

use std::io;
use std::os::fd::RawFd;

/// SO_INCOMING_NAPI_ID of socket `fd` (0: none).
pub fn incoming_napi_id(fd: RawFd) -> io::Result<u32> {
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

/// Adds one reading to a server's three NAPI counters (socks, id_zero, errors).
pub fn count(id: io::Result<u32>, socks: &mut u64, id_zero: &mut u64, errors: &mut u64) {
    match id {
        Ok(0) => {
            *socks += 1;
            *id_zero += 1;
        }
        Ok(_) => *socks += 1,
        Err(_) => *errors += 1,
    }
}
