//! The epoll UDP echo server: the socket non-blocking in an epoll set with the stop eventfd;
//! on readiness, recvmmsg(2) takes up to [`BATCH`] datagrams at once and sendmmsg(2) echoes the
//! sound ones in one call, until the socket is drained (the row's trigger applies; both drain).
//! With GRO (`serve_gro`, `io::udp_gso`) each message is a buffer of up to 64 KiB that may hold
//! a coalesced run, echoed as one sendmmsg message carrying UDP_SEGMENT.

use super::{Ctl, Epoll};
use crate::io::udp::Peer;
use crate::io::udp_gso::{
    chunks, gro_size, judge_run, put_segment, segments, Ctrl, CTRL_BYTES, GRO_BUF,
};
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

/// Coalesced buffers one recvmmsg takes at most in GRO mode ([`serve_gro`]).
pub(crate) const GRO_BATCH: usize = 8;
/// Echo sends one sendmmsg carries at most in GRO mode.
const GRO_OUT: usize = 32;

/// The GRO batch: [`GRO_BATCH`] buffers of `GRO_BUF` bytes with their control buffers, and
/// [`GRO_OUT`] send headers, each with its UDP_SEGMENT control buffer; allocated once, the
/// headers pointing into heap memory that never moves.
struct GroBatch {
    bufs: Vec<u8>,
    peers: Vec<Peer>,
    ctrl: Vec<Ctrl>,
    iov: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    out_ctrl: Vec<Ctrl>,
    out_iov: Vec<libc::iovec>,
    out: Vec<libc::mmsghdr>,
    /// Datagrams in each queued send.
    out_n: Vec<u64>,
    queued: usize,
}

impl GroBatch {
    fn new() -> GroBatch {
        let mut b = GroBatch {
            bufs: vec![0u8; GRO_BATCH * GRO_BUF],
            peers: vec![Peer::new(); GRO_BATCH],
            ctrl: vec![Ctrl::ZERO; GRO_BATCH],
            // SAFETY (all): iovec and mmsghdr are plain data; zeroes are valid values.
            iov: vec![unsafe { std::mem::zeroed() }; GRO_BATCH],
            hdrs: vec![unsafe { std::mem::zeroed() }; GRO_BATCH],
            out_ctrl: vec![Ctrl::ZERO; GRO_OUT],
            out_iov: vec![unsafe { std::mem::zeroed() }; GRO_OUT],
            out: vec![unsafe { std::mem::zeroed() }; GRO_OUT],
            out_n: vec![0; GRO_OUT],
            queued: 0,
        };
        for i in 0..GRO_BATCH {
            b.iov[i] = libc::iovec {
                iov_base: b.bufs[i * GRO_BUF..].as_mut_ptr().cast(),
                iov_len: GRO_BUF,
            };
        }
        b
    }

    fn arm(&mut self) {
        for i in 0..GRO_BATCH {
            let p = &mut self.peers[i];
            p.len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            let h = &mut self.hdrs[i].msg_hdr;
            h.msg_name = (&mut p.addr as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = p.len;
            h.msg_iov = &mut self.iov[i];
            h.msg_iovlen = 1;
            h.msg_control = self.ctrl[i].0.as_mut_ptr().cast();
            h.msg_controllen = CTRL_BYTES as _;
            h.msg_flags = 0;
            self.hdrs[i].msg_len = 0;
        }
    }

    /// Queues the send of `len` bytes at `at` of buffer `i`'s run, cut at `seg`.
    fn queue(
        &mut self,
        sock: &UdpSocket,
        c: &mut UdpCounters,
        i: usize,
        at: usize,
        len: usize,
        seg: usize,
    ) {
        if self.queued == GRO_OUT {
            self.flush(sock, c);
        }
        let q = self.queued;
        self.out_iov[q] = libc::iovec {
            // SAFETY: inside buffer i's GRO_BUF bytes.
            iov_base: unsafe { self.iov[i].iov_base.cast::<u8>().add(at) }.cast(),
            iov_len: len,
        };
        let n = segments(len, seg);
        let h = &mut self.out[q].msg_hdr;
        h.msg_name = (&mut self.peers[i].addr as *mut libc::sockaddr_storage).cast();
        h.msg_namelen = self.hdrs[i].msg_hdr.msg_namelen;
        h.msg_iov = &mut self.out_iov[q];
        h.msg_iovlen = 1;
        h.msg_flags = 0;
        if n > 1 {
            h.msg_controllen = put_segment(&mut self.out_ctrl[q], seg as u16) as _;
            h.msg_control = self.out_ctrl[q].0.as_mut_ptr().cast();
            c.gso_sends += 1;
        } else {
            h.msg_control = std::ptr::null_mut();
            h.msg_controllen = 0;
        }
        self.out_n[q] = n;
        self.queued += 1;
    }

    /// Sends every queued echo (the buffers they point at are untouched until then).
    fn flush(&mut self, sock: &UdpSocket, c: &mut UdpCounters) {
        let mut sent = 0;
        while sent < self.queued {
            c.send_calls += 1;
            // SAFETY: `queued - sent` headers from `sent`, each pointing at live buffers.
            let r = unsafe {
                libc::sendmmsg(
                    sock.as_raw_fd(),
                    self.out[sent..].as_mut_ptr(),
                    (self.queued - sent) as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if r <= 0 {
                c.send_errors += self.out_n[sent];
                sent += 1;
                continue;
            }
            let r = r as usize;
            c.datagrams_out += self.out_n[sent..sent + r].iter().sum::<u64>();
            sent += r;
        }
        self.queued = 0;
    }
}

/// The GRO echo server (`io::udp_gso`, the socket's UDP_GRO already set): as [`serve`], but
/// each recvmmsg message may be a coalesced run (its segment size in its UDP_GRO cmsg), judged
/// segment by segment, and each run is echoed by one sendmmsg message with UDP_SEGMENT.
pub(crate) fn serve_gro(sock: UdpSocket, k: &EpollKnobs, stop: &Stop) -> io::Result<UdpCounters> {
    let ep = Epoll::with_knobs(k)?;
    sock.set_nonblocking(true)?;
    ep.ctl(Ctl::Add, &sock, libc::EPOLLIN as u32, SOCK)?;
    // SAFETY: the stop eventfd outlives this loop (`stop` is borrowed for all of it).
    let stop_fd = unsafe { BorrowedFd::borrow_raw(stop.fd()) };
    ep.ctl(Ctl::Add, stop_fd, libc::EPOLLIN as u32, STOP)?;
    let mut c = UdpCounters::default();
    let mut b = GroBatch::new();
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 4];
    stop.ready();
    loop {
        c.waits += 1;
        let n = ep.wait(&mut events, -1)?;
        if events[..n].iter().any(|e| e.u64 == STOP) || stop.requested() {
            break;
        }
        if n > 0 {
            drain_gro(&sock, &mut b, &mut c);
        }
    }
    Ok(c)
}

fn drain_gro(sock: &UdpSocket, b: &mut GroBatch, c: &mut UdpCounters) {
    let mut errors = 0;
    loop {
        b.arm();
        c.recv_calls += 1;
        // SAFETY: GRO_BATCH headers, each pointing at live buffers and address storage.
        let r = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                b.hdrs.as_mut_ptr(),
                GRO_BATCH as libc::c_uint,
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
        for i in 0..got {
            let h = &b.hdrs[i];
            let len = h.msg_len as usize;
            let truncated = len > GRO_BUF || h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
            let cl = h.msg_hdr.msg_controllen.min(CTRL_BYTES);
            let seg = gro_size(&b.ctrl[i].0[..cl]);
            let buf = &mut b.bufs[i * GRO_BUF..(i + 1) * GRO_BUF];
            let run = judge_run(c, buf, len, seg, truncated);
            for (at, n) in chunks(run) {
                b.queue(sock, c, i, at, n, run.seg);
            }
        }
        b.flush(sock, c);
        if got < GRO_BATCH {
            return;
        }
    }
}
