//! The sockets of a loop: connecting (from a source address on loopback) and reading a
//! connect's error, for both engines; and the epoll engine's [`Sockets`]: registering, the
//! syscalls themselves, and waiting on the epoll instance.

use super::*;
use rustix::event::epoll;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

/// The epoll engine: every connection registered once, edge-triggered, for reading and
/// writing; a receive or a send is one syscall.
pub(super) struct Epoll {
    ep: OwnedFd,
}

impl Epoll {
    pub(super) fn new() -> io::Result<Epoll> {
        Ok(Epoll {
            ep: epoll::create(epoll::CreateFlags::CLOEXEC)?,
        })
    }
}

impl Sockets for Epoll {
    fn open(&mut self, c: &mut Conn, target: SocketAddr) -> io::Result<()> {
        let fd = connect(target, c.source, c.abortive)?;
        register(self.ep.as_fd(), &fd, c.idx)?;
        c.fd = Some(fd);
        Ok(())
    }

    fn ready(&mut self, _: &Conn) -> io::Result<()> {
        Ok(())
    }

    /// One recv(2) (recvfrom(2) with no address, as glibc's recv).
    fn recv(&mut self, c: &Conn, buf: &mut [MaybeUninit<u8>]) -> rustix::io::Result<usize> {
        let fd = c.fd.as_ref().ok_or(rustix::io::Errno::BADF)?;
        rustix::net::recv(fd, buf, rustix::net::RecvFlags::empty()).map(|((got, _), _)| got.len())
    }

    /// One send(2) (sendto(2) with no address, as glibc's send).
    fn send(&mut self, c: &Conn, from: usize) -> rustix::io::Result<usize> {
        let fd = c.fd.as_ref().ok_or(rustix::io::Errno::BADF)?;
        rustix::net::send(fd, &c.out[from..], rustix::net::SendFlags::NOSIGNAL)
    }

    /// Closing removes it from the epoll set.
    fn close(&mut self, c: &mut Conn) {
        c.fd = None;
    }

    fn wait(&mut self, events: &mut [libc::epoll_event], timeout_ns: u64) -> io::Result<usize> {
        wait(&self.ep, events, timeout_ns)
    }
}

/// Registers `fd` with the loop's epoll, edge-triggered, for reading and writing (one
/// epoll_ctl(2)).
fn register(ep: BorrowedFd<'_>, fd: &OwnedFd, idx: usize) -> io::Result<()> {
    use epoll::EventFlags as E;
    let flags = E::IN | E::OUT | E::ET | E::RDHUP;
    Ok(epoll::add(
        ep,
        fd,
        epoll::EventData::new_u64(idx as u64),
        flags,
    )?)
}

/// Loopback targets with more than `conns_per_source` connections (default
/// CONNS_PER_SOURCE): connection `id` binds 127.0.0.(1 + id / conns_per_source).
pub(super) fn source_for(cfg: &Config, id: usize) -> Option<Ipv4Addr> {
    let per = cfg.conns_per_source.max(1);
    match cfg.target.ip() {
        IpAddr::V4(ip) if ip.is_loopback() && cfg.conns > per => {
            let k = 1 + id / per;
            Some(Ipv4Addr::new(127, 0, 0, k.min(254) as u8))
        }
        _ => None,
    }
}

/// A non-blocking socket with TCP_NODELAY whose connect is under way; `abortive`: with
/// SO_LINGER 0, so that its close sends a RST and leaves no TIME_WAIT ([`Config::churn`]).
pub(super) fn connect(
    target: SocketAddr,
    source: Option<Ipv4Addr>,
    abortive: bool,
) -> io::Result<OwnedFd> {
    let fd = crate::io::sys::tcp_socket(&target, rustix::net::SocketFlags::NONBLOCK)?;
    rustix::net::sockopt::set_tcp_nodelay(&fd, true)?;
    if abortive {
        rustix::net::sockopt::set_socket_linger(&fd, Some(std::time::Duration::ZERO))?;
    }
    if let Some(src) = source {
        // The port is picked at connect time from the whole 4-tuple, not at bind time.
        crate::io::sys::set_int_opt(&fd, libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT, 1)?;
        rustix::net::bind(&fd, &SocketAddr::new(IpAddr::V4(src), 0))?;
    }
    match rustix::net::connect(&fd, &target) {
        Ok(()) | Err(rustix::io::Errno::INPROGRESS) => Ok(fd),
        Err(e) => Err(e.into()),
    }
}

/// The pending error of a connect (SO_ERROR); without a socket, EBADF.
pub(super) fn so_error(fd: Option<&OwnedFd>) -> io::Result<()> {
    let fd = fd.ok_or(rustix::io::Errno::BADF)?;
    Ok(rustix::net::sockopt::socket_error(fd)??)
}

/// epoll_pwait2 with a nanosecond timeout (falls back to epoll_wait, rounded up to 1 ms).
///
/// raw: rustix's epoll wait makes epoll_pwait(2) with a millisecond timeout where it fits.
fn wait(ep: &OwnedFd, events: &mut [libc::epoll_event], timeout_ns: u64) -> io::Result<usize> {
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    {
        // SAFETY: valid epoll fd, event buffer of the stated length, timespec and no sigmask.
        let r = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                ep.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                &ts as *const libc::timespec,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => Ok(0),
            Some(libc::ENOSYS) => {
                let ms = timeout_ns.div_ceil(1_000_000).min(i32::MAX as u64) as libc::c_int;
                // SAFETY: as above.
                let r = unsafe {
                    libc::epoll_wait(
                        ep.as_raw_fd(),
                        events.as_mut_ptr(),
                        events.len() as libc::c_int,
                        ms,
                    )
                };
                if r < 0 {
                    let e = io::Error::last_os_error();
                    if e.kind() == io::ErrorKind::Interrupted {
                        Ok(0)
                    } else {
                        Err(e)
                    }
                } else {
                    Ok(r as usize)
                }
            }
            _ => Err(e),
        }
    }
}
