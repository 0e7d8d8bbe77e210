//! The client side of the tests.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

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

/// What [`push_until_stalled`] saw.
#[allow(dead_code)]
pub struct Pushed {
    /// Bytes the server's socket took.
    pub sent: usize,
    /// The socket stayed full for 300 ms: the server stopped reading.
    pub stalled: bool,
    /// The server reset the connection (a bounded server may drop such a client).
    pub dropped: bool,
}

/// A client that writes and never reads: writes `chunk` again and again, non-blocking, until
/// `limit` bytes went out, 3 s passed, the socket stayed full for 300 ms, or the server reset
/// the connection. Any other error panics, naming `what`.
#[allow(dead_code)]
pub fn push_until_stalled(s: &TcpStream, chunk: &[u8], limit: usize, what: &str) -> Pushed {
    s.set_nonblocking(true).unwrap();
    let mut p = Pushed {
        sent: 0,
        stalled: false,
        dropped: false,
    };
    let mut full_since: Option<Instant> = None;
    let deadline = Instant::now() + Duration::from_secs(3);
    while p.sent < limit && Instant::now() < deadline {
        match (&*s).write(chunk) {
            Ok(n) => {
                p.sent += n;
                full_since = None;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                let t = *full_since.get_or_insert_with(Instant::now);
                if t.elapsed() > Duration::from_millis(300) {
                    p.stalled = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) => {
                p.dropped = true;
                break;
            }
            Err(e) => panic!("{what}: writing to the server: {e}"),
        }
    }
    p
}
