//! The epoll UDP echo server: the socket non-blocking in an epoll set with the stop eventfd;
//! on readiness, recvmmsg(2) takes up to [`BATCH`] datagrams at once and sendmmsg(2) echoes the
//! sound ones in one call, until the socket is drained (the row's trigger applies; both drain).

use super::{Ctl, Epoll};
use crate::io::udp::Peer;
use crate::io::Stop;
use crate::model::EpollKnobs;
use crate::proto::udp::{UdpCounters, MAX_DATAGRAM};
use std::io;
use std::net::UdpSocket;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Datagrams one recvmmsg takes at most.
pub(crate) const BATCH: usize = 64;

const SOCK: u64 = 0;
const STOP: u64 = 1;

/// The buffers and headers of one batch, allocated once; the headers point into the buffers
/// (heap memory that never moves while the batch lives).
struct Batch {
    bufs: Vec<u8>,
    peers: Vec<Peer>,
    iov: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    /// The send side: headers of the datagrams to echo, pointing at the same buffers.
    out_iov: Vec<libc::iovec>,
    out: Vec<libc::mmsghdr>,
}

impl Batch {
    fn new() -> Batch {
        let mut b = Batch {
            bufs: vec![0u8; BATCH * MAX_DATAGRAM],
            peers: vec![Peer::new(); BATCH],
            // SAFETY (both): iovec and mmsghdr are plain data; zeroes are valid values.
            iov: vec![unsafe { std::mem::zeroed() }; BATCH],
            hdrs: vec![unsafe { std::mem::zeroed() }; BATCH],
            out_iov: vec![unsafe { std::mem::zeroed() }; BATCH],
            out: vec![unsafe { std::mem::zeroed() }; BATCH],
        };
        for i in 0..BATCH {
            b.iov[i] = libc::iovec {
                iov_base: b.bufs[i * MAX_DATAGRAM..].as_mut_ptr().cast(),
                iov_len: MAX_DATAGRAM,
            };
        }
        b
    }

    /// Points receive header `i` at its buffer and address storage, lengths reset.
    fn arm(&mut self) {
        for i in 0..BATCH {
            let p = &mut self.peers[i];
            p.len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            let h = &mut self.hdrs[i].msg_hdr;
            h.msg_name = (&mut p.addr as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = p.len;
            h.msg_iov = &mut self.iov[i];
            h.msg_iovlen = 1;
            h.msg_control = std::ptr::null_mut();
            h.msg_controllen = 0;
            h.msg_flags = 0;
            self.hdrs[i].msg_len = 0;
        }
    }
}

pub(crate) fn serve(sock: UdpSocket, k: &EpollKnobs, stop: &Stop) -> io::Result<UdpCounters> {
    let ep = Epoll::with_knobs(k)?;
    sock.set_nonblocking(true)?;
    ep.ctl(Ctl::Add, &sock, libc::EPOLLIN as u32, SOCK)?;
    // SAFETY: the stop eventfd outlives this loop (`stop` is borrowed for all of it).
    let stop_fd = unsafe { BorrowedFd::borrow_raw(stop.fd()) };
    ep.ctl(Ctl::Add, stop_fd, libc::EPOLLIN as u32, STOP)?;
    let mut c = UdpCounters::default();
    let mut b = Batch::new();
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 4];
    stop.ready();
    loop {
        c.waits += 1;
        let n = ep.wait(&mut events, -1)?;
        if events[..n].iter().any(|e| e.u64 == STOP) || stop.requested() {
            break;
        }
        if n > 0 {
            drain(&sock, &mut b, &mut c);
        }
    }
    Ok(c)
}

/// Receives and echoes batches until the socket has nothing more.
fn drain(sock: &UdpSocket, b: &mut Batch, c: &mut UdpCounters) {
    // A queued socket error (an ICMP error) fails one receive; a few in a row end the drain.
    let mut errors = 0;
    loop {
        b.arm();
        c.recv_calls += 1;
        // raw: recvmmsg(2) has no rustix wrapper.
        // SAFETY: BATCH headers, each pointing at live buffers and address storage.
        let r = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                b.hdrs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ) {
                c.recv_errors += 1;
                errors += 1;
                if errors < 8 {
                    continue;
                }
            }
            return;
        }
        let got = r as usize;
        let mut echo = 0;
        for i in 0..got {
            let len = b.hdrs[i].msg_len as usize;
            let truncated =
                len > MAX_DATAGRAM || b.hdrs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
            let d = &b.bufs[i * MAX_DATAGRAM..i * MAX_DATAGRAM + len.min(MAX_DATAGRAM)];
            if !c.judge(d, truncated) {
                continue;
            }
            b.out_iov[echo] = libc::iovec {
                iov_base: b.iov[i].iov_base,
                iov_len: len,
            };
            let h = &mut b.out[echo].msg_hdr;
            h.msg_name = (&mut b.peers[i].addr as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = b.hdrs[i].msg_hdr.msg_namelen;
            h.msg_iov = &mut b.out_iov[echo];
            h.msg_iovlen = 1;
            h.msg_control = std::ptr::null_mut();
            h.msg_controllen = 0;
            h.msg_flags = 0;
            echo += 1;
        }
        let mut sent = 0;
        while sent < echo {
            c.send_calls += 1;
            // SAFETY: `echo - sent` headers from `sent`, each pointing at live buffers.
            let r = unsafe {
                libc::sendmmsg(
                    sock.as_raw_fd(),
                    b.out[sent..].as_mut_ptr(),
                    (echo - sent) as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if r <= 0 {
                // The datagram at `sent` was refused (ENOBUFS, EAGAIN...): lost, counted.
                c.send_errors += 1;
                sent += 1;
                continue;
            }
            c.datagrams_out += r as u64;
            sent += r as usize;
        }
        if got < BATCH {
            return;
        }
    }
}
