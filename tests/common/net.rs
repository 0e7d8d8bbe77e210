//! The client side of the tests.

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// Read and write timeout of every test connection: a server that stops answering fails the
/// test instead of hanging it.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// Connects (within [`IO_TIMEOUT`]) with [`IO_TIMEOUT`] read and write timeouts.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, IO_TIMEOUT).unwrap();
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    s
}

/// Reads exactly `n` bytes; panics naming `what` otherwise.
pub fn read_n(s: &mut TcpStream, n: usize, what: &str) -> Vec<u8> {
    let mut got = vec![0; n];
    s.read_exact(&mut got)
        .unwrap_or_else(|e| panic!("{what}: reading {n} bytes: {e}"));
    got
}

/// Closes with SO_LINGER 0: the peer gets a RST.
pub fn reset(s: TcpStream) {
    let lg = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: valid fd and a linger struct of the stated size.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&lg as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    drop(s);
}
