//! Thin syscall helpers shared by the families: errno to `io::Result`, pipes with messages
//! that carry a sequence number, and the fd limit.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `-1` to the current errno, anything else to `Ok`.
pub(crate) fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `-1` to the current errno for ssize_t returns.
pub(crate) fn cvt_size(r: libc::ssize_t) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// Lowest fd number a pipe's write end is moved to, so that read ends take the low numbers
/// (select(2) can only watch fds below FD_SETSIZE).
pub(crate) const WRITE_END_FLOOR: RawFd = libc::FD_SETSIZE as RawFd;

/// A pipe; `O_NONBLOCK` on both ends, close-on-exec.
pub(crate) struct Pipe {
    pub(crate) rd: OwnedFd,
    pub(crate) wr: OwnedFd,
}

impl Pipe {
    pub(crate) fn new() -> io::Result<Pipe> {
        let mut fds = [0; 2];
        // SAFETY: fds is a valid 2-element array.
        cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) })?;
        // SAFETY: pipe2 returned two fresh fds that we now own.
        let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // Move the write end above FD_SETSIZE so the next read end can take a low number.
        // SAFETY: F_DUPFD_CLOEXEC on an fd we own returns a new fd we own.
        let hi = unsafe { libc::fcntl(wr.as_raw_fd(), libc::F_DUPFD_CLOEXEC, WRITE_END_FLOOR) };
        let wr = if hi >= 0 {
            // SAFETY: fresh fd from fcntl.
            unsafe { OwnedFd::from_raw_fd(hi) }
        } else {
            wr
        };
        Ok(Pipe { rd, wr })
    }
}

/// N pipes with one send and one receive buffer each. The first 8 bytes of every message are
/// a sequence number, so a stale or misrouted message is caught.
pub(crate) struct PipeSet {
    pub(crate) pipes: Vec<Pipe>,
    pub(crate) msg_bytes: usize,
    pub(crate) send: Vec<Vec<u8>>,
    pub(crate) recv: Vec<Vec<u8>>,
    pub(crate) seq: u64,
}

impl PipeSet {
    pub(crate) fn new(n: usize, msg_bytes: usize) -> io::Result<PipeSet> {
        if msg_bytes < 8 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "messages are at least 8 bytes",
            ));
        }
        raise_nofile(2 * n as u64 + 64)?;
        let pipes = (0..n)
            .map(|_| Pipe::new())
            .collect::<io::Result<Vec<_>>>()?;
        let pattern: Vec<u8> = (0..msg_bytes).map(|i| (i % 251) as u8).collect();
        Ok(PipeSet {
            pipes,
            msg_bytes,
            send: vec![pattern.clone(); n],
            recv: vec![vec![0; msg_bytes]; n],
            seq: 0,
        })
    }

    /// Stamps the next sequence number into every send buffer (8 bytes each, untimed cost).
    pub(crate) fn stamp(&mut self) {
        self.seq += 1;
        let s = self.seq.to_le_bytes();
        for b in &mut self.send {
            b[..8].copy_from_slice(&s);
        }
    }

    /// Checks every receive buffer holds the last stamped message.
    pub(crate) fn verify(&self) -> io::Result<()> {
        for (i, (r, s)) in self.recv.iter().zip(&self.send).enumerate() {
            if r != s {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "pipe {i}: received bytes differ from the message sent (seq {})",
                        self.seq
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Makes sure `need` fds can be open: raises the soft RLIMIT_NOFILE up to the hard limit, and
/// the hard limit too when privileged. Says what it needed and what it got when it cannot.
pub(crate) fn raise_nofile(need: u64) -> io::Result<()> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid pointer to an rlimit we own.
    cvt(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) })?;
    if rl.rlim_cur >= need {
        return Ok(());
    }
    let want = libc::rlimit {
        rlim_cur: need.max(rl.rlim_cur),
        rlim_max: need.max(rl.rlim_max),
    };
    // SAFETY: valid pointer to an rlimit we own.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } == 0 {
        return Ok(());
    }
    if rl.rlim_max >= need {
        let soft = libc::rlimit {
            rlim_cur: need,
            rlim_max: rl.rlim_max,
        };
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &soft) } == 0 {
            return Ok(());
        }
    }
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "needs {need} open files; RLIMIT_NOFILE is {} (hard {}) and could not be raised",
            rl.rlim_cur, rl.rlim_max
        ),
    ))
}

/// Reads exactly `buf.len()` bytes from a non-blocking fd that is known to be readable.
pub(crate) fn read_exact_ready(fd: RawFd, buf: &mut [u8]) -> io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: the slice is valid for writes of its remaining length.
        let r = unsafe { libc::read(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        match cvt_size(r) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes all of `buf` to a pipe with room for it.
pub(crate) fn write_all(fd: RawFd, buf: &[u8]) -> io::Result<()> {
    let mut put = 0;
    while put < buf.len() {
        // SAFETY: the slice is valid for reads of its remaining length.
        let r = unsafe { libc::write(fd, buf[put..].as_ptr().cast(), buf.len() - put) };
        match cvt_size(r) {
            Ok(n) => put += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `a` as a `sockaddr_storage` and its length, for bind(2) and connect(2).
pub(crate) fn sockaddr(a: std::net::SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; zero is a valid start.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match a {
        std::net::SocketAddr::V4(v4) => {
            // SAFETY: sockaddr_storage is large enough and aligned for sockaddr_in.
            let sin = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in) };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = v4.port().to_be();
            sin.sin_addr.s_addr = u32::from_ne_bytes(v4.ip().octets());
            std::mem::size_of::<libc::sockaddr_in>()
        }
        std::net::SocketAddr::V6(v6) => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in6) };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = v6.port().to_be();
            sin6.sin6_addr.s6_addr = v6.ip().octets();
            sin6.sin6_scope_id = v6.scope_id();
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// A TCP socket of `addr`'s family, close-on-exec, with `flags` (e.g. SOCK_NONBLOCK).
pub(crate) fn tcp_socket(addr: &std::net::SocketAddr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let family = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain socket creation; the fd is owned at once.
    Ok(unsafe {
        OwnedFd::from_raw_fd(cvt(libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC | flags,
            0,
        ))?)
    })
}

/// setsockopt(2) of an int option.
pub(crate) fn set_int_opt(
    fd: &OwnedFd,
    level: libc::c_int,
    name: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    // SAFETY: valid fd and a pointer to an int of the stated size.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

/// A TCP listener on `addr` with SO_REUSEADDR and SO_REUSEPORT set before bind, so that several
/// (one per server thread) share one address and the kernel spreads connections over them by
/// their 4-tuple hash.
pub(crate) fn reuseport_listener(
    addr: std::net::SocketAddr,
    backlog: i32,
) -> io::Result<std::net::TcpListener> {
    let fd = tcp_socket(&addr, 0)?;
    for opt in [libc::SO_REUSEADDR, libc::SO_REUSEPORT] {
        set_int_opt(&fd, libc::SOL_SOCKET, opt, 1)?;
    }
    let (ss, len) = sockaddr(addr);
    // SAFETY: ss holds a sockaddr of `len` bytes.
    cvt(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&ss as *const libc::sockaddr_storage).cast(),
            len,
        )
    })?;
    // SAFETY: valid socket fd.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), backlog) })?;
    Ok(std::net::TcpListener::from(fd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_ends_take_low_fds_and_messages_round_trip() {
        let mut set = PipeSet::new(4, 64).unwrap();
        for p in &set.pipes {
            assert!(p.rd.as_raw_fd() < WRITE_END_FLOOR);
            assert!(p.wr.as_raw_fd() >= WRITE_END_FLOOR);
        }
        set.stamp();
        for i in 0..4 {
            write_all(set.pipes[i].wr.as_raw_fd(), &set.send[i]).unwrap();
            let fd = set.pipes[i].rd.as_raw_fd();
            read_exact_ready(fd, &mut set.recv[i]).unwrap();
        }
        set.verify().unwrap();
        set.stamp();
        assert!(set.verify().is_err(), "a stale message is caught");
    }
}
