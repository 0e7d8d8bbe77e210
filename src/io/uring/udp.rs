//! The io_uring UDP echo server: the ring `ring::build` makes from the row's knobs (plain,
//! DEFER_TASKRUN, SQPOLL); receives either as [`SLOTS`] recvmsg SQEs in flight, each into its
//! slot's buffer and echoed from there by a sendmsg to the datagram's source before the slot
//! receives again (`Rx::Single`), or as one multishot recvmsg into a provided buffer ring
//! (`Rx::Multishot`, 6.0), each datagram copied out of its provided buffer into a free send slot
//! (the buffer goes back to the ring at once) and echoed by a sendmsg. A datagram that finds
//! every send slot busy is dropped and counted (`send_errors`), never queued without bound.
//! Knobs the server cannot honour are refused by `UringKnobs::runs` (`Shape::Datagram`).
//!
//! With GRO (`serve_gro`, `io::udp_gso`: the socket's UDP_GRO set) every buffer is 64 KiB
//! and carries control bytes: a receive may hold a coalesced run (its segment size in its
//! UDP_GRO cmsg, read from the slot's control buffer or the multishot buffer's
//! `io_uring_recvmsg_out`), judged segment by segment and echoed from its slot by sendmsg with
//! UDP_SEGMENT, one chunk after another ([`MAX_ECHO_SEGMENTS`](crate::io::udp_gso::MAX_ECHO_SEGMENTS)
//! segments each); the multishot ring then has [`GRO_PROVIDED`] buffers.
//!
//! Stop: a poll on the stop eventfd ends the loop; every request in flight is then cancelled
//! and its completion awaited (at most [`TEARDOWN`]); buffers a request still holds after that
//! are leaked, never freed under the kernel.

use super::bufring::BufRing;
use super::ring::{self, Setup};
use crate::error::CaseError;
use crate::io::udp::Peer;
use crate::io::udp_gso::{
    chunks, gro_size, judge_run, put_segment, segments, Ctrl, Run, CTRL_BYTES, GRO_BUF,
};
use crate::io::Stop;
use crate::measure::pin::CpuPlan;
use crate::model::{Rx, UringKnobs};
use crate::proto::udp::{UdpCounters, MAX_DATAGRAM};
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::io;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::time::Duration;

/// Receive slots (`Rx::Single`), or send slots (multishot: as many as the provided buffers, so
/// a full completion queue's datagrams find one).
pub(crate) const SLOTS: usize = 64;
const SEND_SLOTS: usize = PROVIDED as usize;
/// Provided buffers of the multishot receive.
const PROVIDED: u16 = 256;
/// Provided buffers (and send slots) of the multishot receive with GRO: 64 KiB each.
const GRO_PROVIDED: u16 = 64;
/// Its buffer group id.
const BGID: u16 = 0x0DD0;
const SQ_ENTRIES: u32 = 256;
/// How long a stopping server waits for its cancelled requests.
const TEARDOWN: Duration = Duration::from_secs(2);

const UD_STOP: u64 = u64::MAX;
const UD_CANCEL: u64 = u64::MAX - 1;
const UD_MULTI: u64 = u64::MAX - 2;
const UD_SEND: u64 = 1 << 32;

/// One slot: a datagram's buffer, its source, and the header of its recvmsg or sendmsg.
struct Slot {
    buf: Vec<u8>,
    peer: Peer,
    iov: libc::iovec,
    hdr: libc::msghdr,
    /// GRO: the receive's control bytes, then the send's UDP_SEGMENT.
    ctrl: Ctrl,
    /// GRO: the run being echoed and the offset of its next chunk.
    run: Run,
    next: usize,
    /// Datagrams in the send in flight.
    chunk_n: u64,
}

struct Server {
    ring: IoUring,
    fd: types::Fd,
    /// SQEs point into them: made once at their full count and never grown, so they never
    /// move.
    slots: Vec<Slot>,
    /// Send slots free (multishot mode).
    free: Vec<usize>,
    provided: Option<BufRing>,
    /// The multishot receive's header (only the name and control lengths are read).
    tmpl: Box<libc::msghdr>,
    inflight: usize,
    c: UdpCounters,
    stopping: bool,
    /// Completions reaped and not yet handled, in order.
    pending: std::collections::VecDeque<(u64, i32, u32)>,
    /// UDP_GRO is set on the socket: buffers of `GRO_BUF` with control bytes.
    gro: bool,
}

/// Serves `sock` until `stop`; returns the counts and how the ring was set up.
pub(crate) fn serve(
    sock: UdpSocket,
    k: &UringKnobs,
    plan: &CpuPlan,
    stop: &Stop,
) -> Result<(UdpCounters, Setup), CaseError> {
    serve_with(sock, k, plan, stop, false)
}

/// As [`serve`], on a socket with UDP_GRO set (`io::udp_gso`).
pub(crate) fn serve_gro(
    sock: UdpSocket,
    k: &UringKnobs,
    plan: &CpuPlan,
    stop: &Stop,
) -> Result<(UdpCounters, Setup), CaseError> {
    serve_with(sock, k, plan, stop, true)
}

fn serve_with(
    sock: UdpSocket,
    k: &UringKnobs,
    plan: &CpuPlan,
    stop: &Stop,
    gro: bool,
) -> Result<(UdpCounters, Setup), CaseError> {
    k.runs(crate::model::Shape::Datagram { gro })?;
    sock.set_nonblocking(false)?;
    let (ring, setup) = ring::build(k, SQ_ENTRIES, plan)?;
    let multishot = matches!(k.rx, Rx::Multishot(_));
    let (buf_len, ctrl_len, provided_n) = match gro {
        true => (GRO_BUF, CTRL_BYTES, GRO_PROVIDED),
        false => (MAX_DATAGRAM, 0, PROVIDED),
    };
    let provided = if multishot {
        let len = std::mem::size_of::<types::RecvMsgOut>()
            + std::mem::size_of::<libc::sockaddr_storage>()
            + ctrl_len
            + buf_len;
        Some(
            BufRing::with_flags(&ring.submitter(), BGID, provided_n, len, 0).map_err(|e| {
                CaseError::unavailable(format!("a provided buffer ring was refused: {e}"))
            })?,
        )
    } else {
        None
    };
    let n_slots = match (multishot, gro) {
        (true, true) => usize::from(GRO_PROVIDED),
        (true, false) => SEND_SLOTS,
        (false, _) => SLOTS,
    };
    let slots = (0..n_slots)
        .map(|_| {
            Slot {
                buf: vec![0u8; buf_len],
                peer: Peer::new(),
                // SAFETY: plain data; pointed at the buffer before each use.
                iov: unsafe { std::mem::zeroed() },
                hdr: unsafe { std::mem::zeroed() },
                ctrl: Ctrl::ZERO,
                run: Run {
                    bytes: 0,
                    seg: 0,
                    count: 0,
                },
                next: 0,
                chunk_n: 1,
            }
        })
        .collect();
    // SAFETY: plain data; only the lengths are set.
    let mut tmpl: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
    tmpl.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    tmpl.msg_controllen = ctrl_len as _;
    let mut s = Server {
        fd: types::Fd(sock.as_raw_fd()),
        ring,
        slots,
        free: if multishot {
            (0..n_slots).rev().collect()
        } else {
            Vec::new()
        },
        provided,
        tmpl,
        inflight: 0,
        c: UdpCounters::default(),
        stopping: false,
        pending: std::collections::VecDeque::with_capacity(1024),
        gro,
    };
    let r = s.run(stop);
    s.teardown();
    r?;
    // The socket closes after the ring's requests are done (`sock` drops last).
    drop(sock);
    Ok((s.c, setup))
}

impl Server {
    fn run(&mut self, stop: &Stop) -> io::Result<()> {
        let poll = opcode::PollAdd::new(types::Fd(stop.fd()), libc::POLLIN as u32)
            .build()
            .user_data(UD_STOP);
        self.push(poll)?;
        if self.provided.is_some() {
            self.arm_multi()?;
        } else {
            for i in 0..SLOTS {
                self.arm_recv(i)?;
            }
        }
        stop.ready();
        while !self.stopping {
            self.enter()?;
            for cqe in self.ring.completion() {
                self.pending
                    .push_back((cqe.user_data(), cqe.result(), cqe.flags()));
            }
            while let Some((ud, res, flags)) = self.pending.pop_front() {
                self.on_cqe(ud, res, flags)?;
            }
            if let Some(p) = self.provided.as_mut() {
                p.commit();
            }
        }
        Ok(())
    }

    fn on_cqe(&mut self, ud: u64, res: i32, flags: u32) -> io::Result<()> {
        match ud {
            UD_STOP => {
                self.stopping = true;
                Ok(())
            }
            UD_CANCEL => Ok(()),
            UD_MULTI => self.on_multi(res, flags),
            ud if ud & UD_SEND != 0 => {
                let i = self.on_sent(ud, res);
                self.echo_next(i)
            }
            ud => {
                self.inflight -= 1;
                self.on_recv(ud as usize, res)
            }
        }
    }

    /// A sendmsg completed: counted; returns its slot.
    fn on_sent(&mut self, ud: u64, res: i32) -> usize {
        self.inflight -= 1;
        let i = (ud & !UD_SEND) as usize;
        let n = self.slots[i].chunk_n;
        match res {
            r if r >= 0 => self.c.datagrams_out += n,
            _ => self.c.send_errors += n,
        }
        i
    }

    /// Slot `i`'s send completed (or its run was judged): sends its run's next chunk, or,
    /// the run done, frees the slot (multishot) or receives into it again.
    fn echo_next(&mut self, i: usize) -> io::Result<()> {
        let s = &mut self.slots[i];
        if let Some((at, len)) = chunks(s.run).find(|&(at, _)| at >= s.next) {
            s.next = at + len;
            let n = segments(len, s.run.seg);
            s.chunk_n = n;
            s.iov = libc::iovec {
                // SAFETY: inside the slot's buffer (`at + len <= run.bytes <= buf.len()`).
                iov_base: unsafe { s.buf.as_mut_ptr().add(at) }.cast(),
                iov_len: len,
            };
            if n > 1 {
                s.hdr.msg_controllen = put_segment(&mut s.ctrl, s.run.seg as u16) as _;
                s.hdr.msg_control = s.ctrl.0.as_mut_ptr().cast();
                self.c.gso_sends += 1;
            } else {
                s.hdr.msg_control = std::ptr::null_mut();
                s.hdr.msg_controllen = 0;
            }
            s.hdr.msg_namelen = s.peer.family_len();
            return self.push_send(i);
        }
        s.run = Run {
            bytes: 0,
            seg: 0,
            count: 0,
        };
        s.next = 0;
        s.chunk_n = 1;
        match self.provided {
            Some(_) => {
                self.free.push(i);
                Ok(())
            }
            None => self.arm_recv(i),
        }
    }

    /// Multishot, every send slot busy: submits the queued sends (a datagram socket's send
    /// completes at once) and frees the slots of the sends that completed; the other
    /// completions wait their turn in `pending`.
    fn reclaim_send_slots(&mut self) {
        if self.ring.submit().is_err() {
            return;
        }
        let done: Vec<(u64, i32, u32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result(), c.flags()))
            .collect();
        for (ud, res, flags) in done {
            // A GRO run with chunks still to send keeps its slot: handled in turn.
            let more = |i: usize| self.slots.get(i).is_some_and(|s| s.next < s.run.bytes);
            if ud != UD_STOP
                && ud != UD_CANCEL
                && ud != UD_MULTI
                && ud & UD_SEND != 0
                && !more((ud & !UD_SEND) as usize)
            {
                let i = self.on_sent(ud, res);
                self.free.push(i);
            } else {
                self.pending.push_back((ud, res, flags));
            }
        }
    }

    /// A slot's recvmsg completed (`Rx::Single`): echo from the slot, or receive again.
    fn on_recv(&mut self, i: usize, res: i32) -> io::Result<()> {
        if res < 0 {
            if !self.stopping && res != -libc::ECANCELED {
                self.c.recv_errors += 1;
            }
            return self.arm_recv(i);
        }
        let n = res as usize;
        let s = &mut self.slots[i];
        if self.gro {
            let truncated = n > s.buf.len() || s.hdr.msg_flags & libc::MSG_TRUNC != 0;
            let cl = s.hdr.msg_controllen.min(CTRL_BYTES);
            let seg = gro_size(&s.ctrl.0[..cl]);
            s.run = judge_run(&mut self.c, &mut s.buf, n, seg, truncated);
            s.next = 0;
            return self.echo_next(i);
        }
        let truncated = n > MAX_DATAGRAM || s.hdr.msg_flags & libc::MSG_TRUNC != 0;
        if !self.c.judge(&s.buf[..n.min(MAX_DATAGRAM)], truncated) {
            return self.arm_recv(i);
        }
        s.iov.iov_len = n;
        s.hdr.msg_namelen = s.peer.family_len();
        self.send(i)
    }

    /// The multishot recvmsg posted a datagram (or ended).
    fn on_multi(&mut self, res: i32, flags: u32) -> io::Result<()> {
        let more = cqueue::more(flags);
        if !more {
            self.inflight -= 1;
        }
        if res >= 0 {
            if let Some(bid) = cqueue::buffer_select(flags) {
                self.on_datagram(bid, res as usize);
            }
        } else if res == -libc::ENOBUFS {
            self.c.no_buffers += 1;
        } else if !self.stopping && res != -libc::ECANCELED {
            self.c.recv_errors += 1;
        }
        if !more && !self.stopping {
            self.c.rearms += 1;
            self.arm_multi()?;
        }
        Ok(())
    }

    /// Copies the datagram in provided buffer `bid` into a free send slot and echoes it; the
    /// buffer goes back to the ring either way.
    fn on_datagram(&mut self, bid: u16, len: usize) {
        if self.free.is_empty() {
            self.reclaim_send_slots();
        }
        let Some(p) = self.provided.as_mut() else {
            return;
        };
        // SAFETY: the kernel handed `bid` to this completion and it is not yet pushed back.
        let buf = unsafe { p.buf(bid, len) };
        let mut echo = None;
        let gro = match self.gro {
            true => types::RecvMsgOut::parse(buf, &self.tmpl).ok(),
            false => None,
        };
        if let Some(out) = gro {
            let seg = gro_size(out.control_data());
            let d = out.payload_data();
            let truncated = out.is_payload_truncated();
            match self.free.pop() {
                Some(i) => {
                    let s = &mut self.slots[i];
                    let n = d.len().min(s.buf.len());
                    s.buf[..n].copy_from_slice(&d[..n]);
                    copy_name(&mut s.peer, out.name_data());
                    s.run = judge_run(&mut self.c, &mut s.buf, n, seg, truncated);
                    s.next = 0;
                    echo = Some(i);
                }
                // Every send slot busy: each segment lost at the server, counted.
                None => {
                    let n = d.len().div_ceil(seg.unwrap_or(d.len()).max(1)) as u64;
                    self.c.datagrams_in += n;
                    self.c.send_errors += n;
                }
            }
            p.push(bid);
            if let Some(i) = echo {
                if self.echo_next(i).is_err() {
                    self.c.send_errors += 1;
                    self.free.push(i);
                }
            }
            return;
        }
        if let Ok(out) = types::RecvMsgOut::parse(buf, &self.tmpl) {
            let d = out.payload_data();
            let truncated = out.is_payload_truncated();
            if self.c.judge(d, truncated) {
                match self.free.pop() {
                    Some(i) => {
                        let s = &mut self.slots[i];
                        s.buf[..d.len()].copy_from_slice(d);
                        copy_name(&mut s.peer, out.name_data());
                        s.iov.iov_len = d.len();
                        echo = Some(i);
                    }
                    // Every send slot busy: dropped here, counted as lost at the server.
                    None => self.c.send_errors += 1,
                }
            }
        } else {
            self.c.dropped_length += 1;
        }
        p.push(bid);
        if let Some(i) = echo {
            let s = &mut self.slots[i];
            s.hdr.msg_namelen = s.peer.family_len();
            if self.send(i).is_err() {
                self.c.send_errors += 1;
                self.free.push(i);
            }
        }
    }

    fn arm_multi(&mut self) -> io::Result<()> {
        let e = opcode::RecvMsgMulti::new(self.fd, &*self.tmpl, BGID)
            .build()
            .user_data(UD_MULTI);
        self.inflight += 1;
        self.push(e)
    }

    fn arm_recv(&mut self, i: usize) -> io::Result<()> {
        if self.stopping {
            return Ok(());
        }
        let s = &mut self.slots[i];
        s.peer.len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        s.iov = libc::iovec {
            iov_base: s.buf.as_mut_ptr().cast(),
            iov_len: MAX_DATAGRAM,
        };
        s.hdr.msg_name = (&mut s.peer.addr as *mut libc::sockaddr_storage).cast();
        s.hdr.msg_namelen = s.peer.len;
        s.hdr.msg_iov = &mut s.iov;
        s.hdr.msg_iovlen = 1;
        s.hdr.msg_flags = 0;
        s.iov.iov_len = s.buf.len();
        if self.gro {
            s.hdr.msg_control = s.ctrl.0.as_mut_ptr().cast();
            s.hdr.msg_controllen = CTRL_BYTES as _;
        } else {
            s.hdr.msg_control = std::ptr::null_mut();
            s.hdr.msg_controllen = 0;
        }
        let e = opcode::RecvMsg::new(self.fd, &mut s.hdr)
            .flags(libc::MSG_TRUNC as u32)
            .build()
            .user_data(i as u64);
        self.inflight += 1;
        self.c.recv_calls += 1;
        self.push(e)
    }

    /// Sends slot `i`'s datagram (its iov length and address set) to its source.
    fn send(&mut self, i: usize) -> io::Result<()> {
        let s = &mut self.slots[i];
        s.iov.iov_base = s.buf.as_mut_ptr().cast();
        s.hdr.msg_control = std::ptr::null_mut();
        s.hdr.msg_controllen = 0;
        s.chunk_n = 1;
        self.push_send(i)
    }

    /// Pushes slot `i`'s sendmsg (its iov, control and name length set).
    fn push_send(&mut self, i: usize) -> io::Result<()> {
        let s = &mut self.slots[i];
        s.hdr.msg_name = (&mut s.peer.addr as *mut libc::sockaddr_storage).cast();
        s.hdr.msg_iov = &mut s.iov;
        s.hdr.msg_iovlen = 1;
        s.hdr.msg_flags = 0;
        let e = opcode::SendMsg::new(self.fd, &s.hdr)
            .build()
            .user_data(UD_SEND | i as u64);
        self.inflight += 1;
        self.c.send_calls += 1;
        self.push(e)
    }

    fn enter(&mut self) -> io::Result<()> {
        loop {
            self.c.waits += 1;
            match self.ring.submit_and_wait(1) {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    fn push(&mut self, e: squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: every buffer, header and address an SQE points at is in a slot (never
            // moved) or the boxed template, alive until its completion (teardown waits, or leaks them).
            if unsafe { self.ring.submission().push(&e) }.is_ok() {
                return Ok(());
            }
            match self.ring.submit() {
                Ok(_) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::EBUSY | libc::EINTR)) => {
                    self.ring.submitter().squeue_wait().ok();
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Cancels every request in flight and waits for their completions; leaks what is still
    /// held after [`TEARDOWN`].
    fn teardown(&mut self) {
        self.stopping = true;
        let cancel = opcode::AsyncCancel2::new(types::CancelBuilder::any())
            .build()
            .user_data(UD_CANCEL);
        let deadline = std::time::Instant::now() + TEARDOWN;
        if self.push(cancel).is_ok() {
            while self.inflight > 0 && std::time::Instant::now() < deadline {
                if ring::submit_and_wait_for(&self.ring, Duration::from_millis(50)).is_err() {
                    break;
                }
                let done: Vec<(u64, i32, u32)> = self
                    .ring
                    .completion()
                    .map(|c| (c.user_data(), c.result(), c.flags()))
                    .collect();
                for (ud, _, flags) in done {
                    match ud {
                        UD_STOP | UD_CANCEL => {}
                        UD_MULTI if cqueue::more(flags) => {}
                        _ => self.inflight -= 1,
                    }
                }
            }
        }
        if self.inflight > 0 {
            // Requests still hold buffers: leak them rather than free them under the kernel.
            std::mem::forget(std::mem::take(&mut self.slots));
            std::mem::forget(std::mem::replace(
                &mut self.tmpl,
                Box::new(unsafe { std::mem::zeroed() }),
            ));
            if let Some(p) = self.provided.take() {
                std::mem::forget(p);
            }
        } else if let Some(mut p) = self.provided.take() {
            if p.unregister(&self.ring.submitter()).is_err() {
                std::mem::forget(p);
            }
        }
    }
}

/// Copies a source address the kernel wrote into a multishot buffer into `peer`.
fn copy_name(peer: &mut Peer, name: &[u8]) {
    let nl = name
        .len()
        .min(std::mem::size_of::<libc::sockaddr_storage>());
    // SAFETY: copying at most sizeof(sockaddr_storage) bytes into it.
    unsafe {
        std::ptr::copy_nonoverlapping(
            name.as_ptr(),
            (&mut peer.addr as *mut libc::sockaddr_storage).cast::<u8>(),
            nl,
        );
    }
}
