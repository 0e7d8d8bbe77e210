//! Thin syscall helpers shared by the families: errno to `io::Result` (for the calls that stay
//! raw libc), pipes with messages that carry a sequence number, and the fd limit. rustix makes
//! the same single syscalls as glibc here (pipe2, fcntl, read, write, socket, setsockopt, bind,
//! listen, prlimit64).

use rustix::io::Errno;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};

/// `-1` to the current errno, anything else to `Ok`.
pub(crate) fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
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
        use rustix::pipe::{pipe_with, PipeFlags};
        let (rd, wr) = pipe_with(PipeFlags::NONBLOCK | PipeFlags::CLOEXEC)?;
        // Move the write end above FD_SETSIZE so the next read end can take a low number
        // (F_DUPFD_CLOEXEC; where it fails, the write end stays where it is).
        let wr = rustix::io::fcntl_dupfd_cloexec(&wr, WRITE_END_FLOOR).unwrap_or(wr);
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

/// The most fds [`raise_nofile`] can make room for in this process: the hard RLIMIT_NOFILE,
/// or with CAP_SYS_RESOURCE the kernel's `fs.nr_open` (the hard limit may be raised up to it).
pub(crate) fn nofile_reachable() -> u64 {
    let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .maximum
        .unwrap_or(u64::MAX);
    // Raising the hard limit takes CAP_SYS_RESOURCE, not root (a container's root often
    // lacks it): without it the hard limit is as far as this process gets.
    let raise = rustix::thread::capabilities(None).is_ok_and(|c| {
        c.effective
            .contains(rustix::thread::CapabilitySet::SYS_RESOURCE)
    });
    if raise {
        let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok());
        return nr_open.map_or(hard, |n| n.max(hard));
    }
    hard
}

/// The fds this process has open now (`/proc/self/fd`, less the one that reads it): what a
/// limit on open files must leave room for beside the fds a workload is about to open.
pub(crate) fn open_fds() -> io::Result<u64> {
    let n = std::fs::read_dir("/proc/self/fd")?.count() as u64;
    Ok(n.saturating_sub(1))
}

/// Makes sure `need` fds can be open: raises the soft RLIMIT_NOFILE up to the hard limit, and
/// the hard limit too when privileged. Says what it needed and what it got when it cannot.
pub(crate) fn raise_nofile(need: u64) -> io::Result<()> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // raw: rustix takes getrlimit for infallible (a seccomp filter's refusal would leave its
    // result unwritten); a refusal is reported here. Both are prlimit64(2).
    // SAFETY: valid pointer to an rlimit we own.
    cvt(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) })?;
    if rl.rlim_cur >= need {
        return Ok(());
    }
    // RLIM_INFINITY (u64::MAX) is passed through as it is.
    let set = |cur: u64, max: u64| {
        use rustix::process::{setrlimit, Resource, Rlimit};
        let limit = Rlimit {
            current: Some(cur),
            maximum: Some(max),
        };
        setrlimit(Resource::Nofile, limit).is_ok()
    };
    if set(need.max(rl.rlim_cur), need.max(rl.rlim_max)) {
        return Ok(());
    }
    if rl.rlim_max >= need && set(need, rl.rlim_max) {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "needs {need} open files; RLIMIT_NOFILE is {} (hard {}) and could not be raised",
            rl.rlim_cur, rl.rlim_max
        ),
    ))
}

/// Reads exactly `buf.len()` bytes from a non-blocking fd that is known to be readable (one
/// read(2) per chunk).
pub(crate) fn read_exact_ready(fd: impl AsFd, buf: &mut [u8]) -> io::Result<()> {
    let fd = fd.as_fd();
    let mut got = 0;
    while got < buf.len() {
        match rustix::io::read(fd, &mut buf[got..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Writes all of `buf` to a pipe with room for it (one write(2) per chunk).
pub(crate) fn write_all(fd: impl AsFd, buf: &[u8]) -> io::Result<()> {
    let fd = fd.as_fd();
    let mut put = 0;
    while put < buf.len() {
        match rustix::io::write(fd, &buf[put..]) {
            Ok(n) => put += n,
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// A TCP socket of `addr`'s family, close-on-exec, with `flags` (e.g. NONBLOCK): socket(2)
/// with protocol 0.
pub(crate) fn tcp_socket(
    addr: &std::net::SocketAddr,
    flags: rustix::net::SocketFlags,
) -> io::Result<OwnedFd> {
    use rustix::net::{socket_with, AddressFamily, SocketFlags, SocketType};
    let family = if addr.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    Ok(socket_with(
        family,
        SocketType::STREAM,
        SocketFlags::CLOEXEC | flags,
        None,
    )?)
}

/// setsockopt(2) of an int option.
///
/// raw: for the options rustix has no setter for (IP_BIND_ADDRESS_NO_PORT).
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
    use rustix::net::sockopt::{set_socket_reuseaddr, set_socket_reuseport};
    let fd = tcp_socket(&addr, rustix::net::SocketFlags::empty())?;
    set_socket_reuseaddr(&fd, true)?;
    set_socket_reuseport(&fd, true)?;
    rustix::net::bind(&fd, &addr)?;
    rustix::net::listen(&fd, backlog)?;
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
            write_all(&set.pipes[i].wr, &set.send[i]).unwrap();
            read_exact_ready(&set.pipes[i].rd, &mut set.recv[i]).unwrap();
        }
        set.verify().unwrap();
        set.stamp();
        assert!(set.verify().is_err(), "a stale message is caught");
    }
}
