//! The blocking UDP echo server: one thread, one blocking recvfrom(2) and one sendto(2) per
//! datagram (a receive timeout of [`STOP_POLL`] lets it see `Stop`); with GRO (`serve_gro`),
//! one recvmsg(2) of a coalesced run and one sendmsg(2) with UDP_SEGMENT echoing it.

use crate::io::udp::{recv_from, send_to, Peer};
use crate::io::Stop;
use crate::proto::udp::{UdpCounters, MAX_DATAGRAM};
use std::io;
use std::net::UdpSocket;
use std::time::Duration;

/// How often a server waiting for a datagram looks at `Stop`.
const STOP_POLL: Duration = Duration::from_millis(50);

pub(crate) fn serve(sock: UdpSocket, stop: &Stop) -> io::Result<UdpCounters> {
    sock.set_nonblocking(false)?;
    sock.set_read_timeout(Some(STOP_POLL))?;
    let mut c = UdpCounters::default();
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut peer = Peer::new();
    stop.ready();
    while !stop.requested() {
        c.recv_calls += 1;
        let n = match recv_from(&sock, &mut buf, &mut peer, 0) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(_) => {
                c.recv_errors += 1;
                continue;
            }
        };
        let d = &buf[..n.min(MAX_DATAGRAM)];
        if !c.judge(d, n > MAX_DATAGRAM) {
            continue;
        }
        c.send_calls += 1;
        match send_to(&sock, d, &peer) {
            Ok(()) => c.datagrams_out += 1,
            Err(_) => c.send_errors += 1,
        }
    }
    Ok(c)
}

/// The GRO echo server (`io::udp_gso`, the socket's UDP_GRO already set): one blocking
/// recvmsg(2) of a coalesced run (its segment size in the UDP_GRO cmsg) into a
/// [`GRO_BUF`](crate::io::udp_gso::GRO_BUF)-byte buffer, every segment judged, and the sound ones echoed by one sendmsg(2)
/// with UDP_SEGMENT per [`MAX_ECHO_SEGMENTS`](crate::io::udp_gso::MAX_ECHO_SEGMENTS).
pub(crate) fn serve_gro(sock: UdpSocket, stop: &Stop) -> io::Result<UdpCounters> {
    use crate::io::udp_gso::{chunks, gro_size, judge_run, send_run, Ctrl, GRO_BUF};
    use std::os::fd::AsRawFd;
    sock.set_nonblocking(false)?;
    sock.set_read_timeout(Some(STOP_POLL))?;
    let mut c = UdpCounters::default();
    let mut buf = vec![0u8; GRO_BUF];
    let mut peer = Peer::new();
    let mut ctrl = Ctrl::ZERO;
    stop.ready();
    while !stop.requested() {
        c.recv_calls += 1;
        peer.len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: plain data; zeroes are a valid msghdr.
        let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
        h.msg_name = (&mut peer.addr as *mut libc::sockaddr_storage).cast();
        h.msg_namelen = peer.len;
        h.msg_iov = &mut iov;
        h.msg_iovlen = 1;
        h.msg_control = ctrl.0.as_mut_ptr().cast();
        h.msg_controllen = ctrl.0.len() as _;
        // raw: recvmsg(2) with a control buffer.
        // SAFETY: the header points at live buffers of the stated sizes.
        let r = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut h, libc::MSG_TRUNC) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
            ) {
                c.recv_errors += 1;
            }
            continue;
        }
        let n = r as usize;
        let truncated = n > buf.len() || h.msg_flags & libc::MSG_TRUNC != 0;
        let seg = gro_size(&ctrl.0[..h.msg_controllen.min(ctrl.0.len())]);
        peer.len = h.msg_namelen;
        let run = judge_run(&mut c, &mut buf, n, seg, truncated);
        for (at, len) in chunks(run) {
            send_run(&sock, &buf[at..at + len], run.seg, &peer, &mut c);
        }
    }
    Ok(c)
}
