//! The UDP echo servers' shared parts (`ringside serve --protocol udp-echo`): the socket, the
//! raw receive and send of one datagram (which models serve UDP: `ModelSpec::runs` with
//! `Shape::Datagram`). Each family's loop is in
//! its own directory (`blocking/udp.rs`: recvfrom/sendto; `epoll/udp.rs`: recvmmsg/sendmmsg
//! batches; `uring/udp.rs`: recvmsg and sendmsg on a ring, multishot into a provided buffer
//! ring where the row says so); every one judges each datagram with `proto::udp::judge` and
//! counts in `proto::udp::UdpCounters`. One socket, one thread: `--threads` above 1 is refused.
//! The thread pool's server (`blocking/udp_pool.rs`) is N threads on the one socket, its size
//! the row's knob; the peers' (tokio, tokio-mt, monoio) are in `peer` (`peer::serve_udp`), with
//! the same judging and counters, started by `ringside serve` as the TCP peers are.

use crate::error::CaseError;
use crate::measure::pin::CpuPlan;
use crate::measure::{CounterSet, Counters};
use crate::model::{Knobs, ModelSpec, Shape, Threading};
use crate::proto::udp::UdpCounters;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use super::Stop;

/// The receive buffer a server asks for (SO_RCVBUFFORCE where allowed, else SO_RCVBUF, which
/// the kernel caps at net.core.rmem_max): room for bursts of 1,400-byte datagrams.
pub(crate) const RCVBUF_BYTES: i32 = 4 << 20;

/// Binds the server's socket on `addr` with a large receive buffer.
pub(crate) fn bind(addr: SocketAddr) -> io::Result<UdpSocket> {
    let s = UdpSocket::bind(addr)?;
    let fd = rustix::fd::AsFd::as_fd(&s);
    let owned = fd.try_clone_to_owned()?;
    if super::sys::set_int_opt(&owned, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, RCVBUF_BYTES)
        .is_err()
    {
        // Not privileged: the kernel caps it at rmem_max.
        let _ = super::sys::set_int_opt(&owned, libc::SOL_SOCKET, libc::SO_RCVBUF, RCVBUF_BYTES);
    }
    Ok(s)
}

/// Runs model `m`'s UDP echo server on `sock` until `stop`; returns what it counted.
pub(crate) fn serve_udp(
    m: &ModelSpec,
    sock: UdpSocket,
    plan: &CpuPlan,
    stop: &Stop,
) -> Result<Counters, CaseError> {
    if let Err(r) = m.runs(Shape::Datagram { gro: false }) {
        return Err(CaseError::not_applicable(format!(
            "model '{}' has no UDP echo server: {}",
            m.id,
            r.why()
        )));
    }
    match &m.knobs {
        Knobs::Blocking(Threading::PerConnection) => {
            Ok(to_counters(&super::blocking::udp::serve(sock, stop)?))
        }
        Knobs::Blocking(Threading::Pool { threads }) => {
            let n = super::blocking::udp_pool::threads(*threads);
            let mut out = to_counters(&super::blocking::udp_pool::serve(sock, n, stop)?);
            out.add("server_threads", n as u64);
            Ok(out)
        }
        Knobs::Epoll(k) => Ok(to_counters(&super::epoll::udp::serve(sock, k, stop)?)),
        Knobs::Uring(k) => {
            let (c, setup) = super::uring::udp::serve(sock, k, plan, stop)?;
            let mut out = to_counters(&c);
            // How the ring was set up, as the TCP server records it (`setup_<flag>`).
            setup.flags.add_to(&mut out);
            Ok(out)
        }
        // `ringside serve` runs them with `peer::serve_udp` (the peers are a layer above io).
        Knobs::Peer(_) => Err(CaseError::not_applicable(
            "the peers' UDP servers run from peer::serve_udp",
        )),
    }
}

/// The server's counts by name.
pub(crate) fn to_counters(c: &UdpCounters) -> Counters {
    let mut out = Counters::default();
    c.for_each(&mut |n, v| out.add(n, v));
    out
}

/// One datagram's source address, as the kernel wrote it.
#[derive(Clone, Copy)]
pub(crate) struct Peer {
    pub(crate) addr: libc::sockaddr_storage,
    pub(crate) len: libc::socklen_t,
}

impl Peer {
    pub(crate) fn new() -> Peer {
        // SAFETY: sockaddr_storage is plain data; all zeroes is a valid (AF_UNSPEC) value.
        Peer {
            addr: unsafe { std::mem::zeroed() },
            len: std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t,
        }
    }

    /// The length of the address its family holds (for an address the kernel wrote without
    /// telling its length back).
    pub(crate) fn family_len(&self) -> libc::socklen_t {
        match i32::from(self.addr.ss_family) {
            libc::AF_INET6 => std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            _ => std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        }
    }
}

/// One recvfrom(2) with MSG_TRUNC: the datagram's full length (more than `buf` when it was
/// truncated) and its source.
///
/// raw: rustix's recvfrom returns its own address type; the echo sends to the same
/// sockaddr_storage, untouched.
pub(crate) fn recv_from(
    sock: &UdpSocket,
    buf: &mut [u8],
    peer: &mut Peer,
    flags: libc::c_int,
) -> io::Result<usize> {
    peer.len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: valid fd, buffer and address storage of the stated sizes.
    let n = unsafe {
        libc::recvfrom(
            sock.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            flags | libc::MSG_TRUNC,
            (&mut peer.addr as *mut libc::sockaddr_storage).cast(),
            &mut peer.len,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// One sendto(2) of `buf` to `peer`.
pub(crate) fn send_to(sock: &UdpSocket, buf: &[u8], peer: &Peer) -> io::Result<()> {
    // SAFETY: valid fd, buffer and address of the stated sizes.
    let n = unsafe {
        libc::sendto(
            sock.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            0,
            (&peer.addr as *const libc::sockaddr_storage).cast(),
            peer.len,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
