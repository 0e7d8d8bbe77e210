//! UDP segmentation offload for the UDP echo servers (`udp.echo_gso`, `ringside serve
//! --protocol udp-echo-gro`): the server's socket has UDP_GRO set, so a run of same-size
//! datagrams from one source arrives as one buffer (on loopback: the client's UDP_SEGMENT
//! send, kept whole) with a UDP_GRO control message giving the segment size; the server judges
//! every segment (`proto::udp::judge`: a bad segment is dropped and counted, never echoed),
//! moves the sound ones together, and echoes the run with one sendmsg carrying UDP_SEGMENT.
//!
//! The parts every family's loop shares: the probe (`probe`: the kernel refusing
//! setsockopt UDP_GRO or UDP_SEGMENT makes the cells unavailable with the errno), the control
//! messages built and parsed as bytes (`put_segment`, `gro_size`: tested here without
//! sockets), the judging of a run (`judge_run`) and its cutting into sends of at most
//! [`MAX_ECHO_SEGMENTS`] (`chunks`). Everything a peer controls is bounded: a receive buffer is
//! [`GRO_BUF`] bytes (a UDP payload is smaller), a segment size is what the kernel said or the
//! buffer's length, and the segments of one buffer are judged in place.
//!
//! Which models serve it: `ModelSpec::runs` with `Shape::Datagram { gro: true }` (the peers
//! and the thread pool have no such server; io_uring rows as their plain UDP server).

use crate::error::CaseError;
use crate::measure::pin::CpuPlan;
use crate::measure::Counters;
use crate::model::{Knobs, ModelSpec, Shape};
use crate::proto::udp::UdpCounters;
use std::io;
use std::net::UdpSocket;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::OnceLock;

use super::Stop;

/// A receive buffer of a GRO server: more than the largest UDP payload (65,507 bytes), so a
/// coalesced run is never truncated.
pub(crate) const GRO_BUF: usize = 64 * 1024;
/// Segments one UDP_SEGMENT send carries at most (the kernel's UDP_MAX_SEGMENTS before 6.11);
/// a longer run is echoed in several sends.
pub(crate) const MAX_ECHO_SEGMENTS: usize = 64;
/// Room for the control messages of one datagram (a UDP_GRO or UDP_SEGMENT cmsg, and any
/// other the kernel adds is cut off: MSG_CTRUNC, ignored).
pub const CTRL_BYTES: usize = 64;

/// An aligned control buffer (cmsghdr needs the alignment of a size_t).
#[derive(Clone, Copy)]
#[repr(C, align(8))]
pub struct Ctrl(pub [u8; CTRL_BYTES]);

impl Ctrl {
    pub const ZERO: Ctrl = Ctrl([0; CTRL_BYTES]);
}

const HDR: usize = std::mem::size_of::<libc::cmsghdr>();

fn align(n: usize) -> usize {
    let a = std::mem::size_of::<usize>();
    (n + a - 1) & !(a - 1)
}

/// Writes one UDP_SEGMENT control message of segment size `size` at the start of `ctrl`;
/// returns the control length to give the kernel (msg_controllen).
pub fn put_segment(ctrl: &mut Ctrl, size: u16) -> usize {
    let len = HDR + std::mem::size_of::<u16>();
    ctrl.0[..HDR + 8].fill(0);
    let h = libc::cmsghdr {
        cmsg_len: len as _,
        cmsg_level: libc::SOL_UDP,
        cmsg_type: libc::UDP_SEGMENT,
    };
    // SAFETY: `ctrl` is aligned for cmsghdr and longer than one.
    unsafe { std::ptr::write(ctrl.0.as_mut_ptr().cast::<libc::cmsghdr>(), h) };
    ctrl.0[HDR..HDR + 2].copy_from_slice(&size.to_ne_bytes());
    align(len)
}

/// The segment size of a UDP_GRO control message among the `len` control bytes the kernel
/// wrote (`None`: no such message, or a size of 0). Reads only inside `ctrl[..len]`.
pub(crate) fn gro_size(ctrl: &[u8]) -> Option<usize> {
    let mut at = 0;
    while at + HDR <= ctrl.len() {
        let word = std::mem::size_of::<usize>();
        let mut l = [0u8; 8];
        l[..word].copy_from_slice(&ctrl[at..at + word]);
        let cmsg_len = u64::from_ne_bytes(l) as usize;
        let level = i32::from_ne_bytes(ctrl[at + word..at + word + 4].try_into().ok()?);
        let kind = i32::from_ne_bytes(ctrl[at + word + 4..at + word + 8].try_into().ok()?);
        if cmsg_len < HDR || at + cmsg_len > ctrl.len() {
            return None;
        }
        if level == libc::SOL_UDP && kind == libc::UDP_GRO && cmsg_len >= HDR + 4 {
            let v = i32::from_ne_bytes(ctrl[at + HDR..at + HDR + 4].try_into().ok()?);
            return usize::try_from(v).ok().filter(|&v| v > 0);
        }
        at += align(cmsg_len);
    }
    None
}

/// The echo of one received buffer: its sound segments moved to the front, `bytes` in all,
/// each `seg` bytes but the last (which may be shorter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) bytes: usize,
    pub(crate) seg: usize,
    pub(crate) count: usize,
}

/// Judges the `len` bytes received into `buf` as segments of `seg` bytes (`None`: one
/// datagram), counting each in `c` (`gro_buffers`, `gro_segments` where the kernel coalesced
/// them); moves the sound ones to the front of `buf` in order and returns the run to echo.
/// `truncated`: the kernel said the datagram was longer than `buf` (MSG_TRUNC), which a
/// [`GRO_BUF`] buffer never sees: it is dropped whole.
pub(crate) fn judge_run(
    c: &mut UdpCounters,
    buf: &mut [u8],
    len: usize,
    seg: Option<usize>,
    truncated: bool,
) -> Run {
    let len = len.min(buf.len());
    if truncated || len == 0 {
        c.judge(&buf[..len], true);
        return Run {
            bytes: 0,
            seg: 0,
            count: 0,
        };
    }
    let gro = seg.is_some();
    if gro {
        c.gro_buffers += 1;
    }
    let seg = seg.map_or(len, |s| s.min(len));
    let mut out = 0;
    let mut count = 0;
    let mut at = 0;
    while at < len {
        let end = (at + seg).min(len);
        c.gro_segments += u64::from(gro);
        if c.judge(&buf[at..end], false) {
            buf.copy_within(at..end, out);
            out += end - at;
            count += 1;
        }
        at = end;
    }
    Run {
        bytes: out,
        seg,
        count,
    }
}

/// The sends of run `r`: (offset, bytes) of each piece of at most [`MAX_ECHO_SEGMENTS`]
/// segments, in order.
pub(crate) fn chunks(r: Run) -> impl Iterator<Item = (usize, usize)> {
    let step = r.seg.max(1) * MAX_ECHO_SEGMENTS;
    (0..r.bytes)
        .step_by(step)
        .map(move |at| (at, step.min(r.bytes - at)))
}

/// Segments in a send of `bytes` cut at `seg`.
pub(crate) fn segments(bytes: usize, seg: usize) -> u64 {
    bytes.div_ceil(seg.max(1)) as u64
}

/// Whether the kernel takes UDP_GRO and UDP_SEGMENT on a UDP socket; tried once per process,
/// the reason with the errno otherwise.
pub fn probe() -> Result<(), String> {
    static ONCE: OnceLock<Result<(), String>> = OnceLock::new();
    ONCE.get_or_init(|| {
        let s = UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("a UDP socket: {e}"))?;
        let fd = s.as_fd().try_clone_to_owned().map_err(|e| e.to_string())?;
        super::sys::set_int_opt(&fd, libc::SOL_UDP, libc::UDP_GRO, 1)
            .map_err(|e| format!("the kernel refused setsockopt UDP_GRO: {e}"))?;
        super::sys::set_int_opt(&fd, libc::SOL_UDP, libc::UDP_SEGMENT, 1400)
            .map_err(|e| format!("the kernel refused setsockopt UDP_SEGMENT: {e}"))?;
        Ok(())
    })
    .clone()
}

/// Sets UDP_GRO on the server's socket.
pub(crate) fn enable_gro(sock: &UdpSocket) -> io::Result<()> {
    let fd = sock.as_fd().try_clone_to_owned()?;
    super::sys::set_int_opt(&fd, libc::SOL_UDP, libc::UDP_GRO, 1)
}

/// Runs model `m`'s UDP echo server with UDP_GRO on `sock` until `stop`.
pub(crate) fn serve_udp_gro(
    m: &ModelSpec,
    sock: UdpSocket,
    plan: &CpuPlan,
    stop: &Stop,
) -> Result<Counters, CaseError> {
    if let Err(r) = m.runs(Shape::Datagram { gro: true }) {
        return Err(CaseError::not_applicable(format!(
            "model '{}' has no UDP GRO echo server: {}",
            m.id,
            r.why()
        )));
    }
    probe().map_err(CaseError::unavailable)?;
    enable_gro(&sock)?;
    let c = match &m.knobs {
        Knobs::Blocking(_) => super::blocking::udp::serve_gro(sock, stop)?,
        Knobs::Epoll(k) => super::epoll::udp::serve_gro(sock, k, stop)?,
        Knobs::Uring(k) => {
            let (c, setup) = super::uring::udp::serve_gro(sock, k, plan, stop)?;
            let mut out = super::udp::to_counters(&c);
            setup.flags.add_to(&mut out);
            return Ok(out);
        }
        Knobs::Peer(_) => return Err(CaseError::not_applicable("peers serve from src/peer")),
    };
    Ok(super::udp::to_counters(&c))
}

/// One sendmsg(2) of `buf` to `peer`, cut at `seg` by the kernel when it holds more than one
/// segment (UDP_SEGMENT); counts it in `c`.
pub(crate) fn send_run(
    sock: &UdpSocket,
    buf: &[u8],
    seg: usize,
    peer: &super::udp::Peer,
    c: &mut UdpCounters,
) {
    let mut ctrl = Ctrl::ZERO;
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: plain data; zeroes are a valid msghdr.
    let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
    h.msg_name = (&peer.addr as *const libc::sockaddr_storage) as *mut libc::c_void;
    h.msg_namelen = peer.len;
    h.msg_iov = &mut iov;
    h.msg_iovlen = 1;
    let n = segments(buf.len(), seg);
    if n > 1 {
        h.msg_controllen = put_segment(&mut ctrl, seg as u16) as _;
        h.msg_control = ctrl.0.as_mut_ptr().cast();
        c.gso_sends += 1;
    }
    c.send_calls += 1;
    // SAFETY: the header points at live buffers of the stated sizes.
    let r = unsafe { libc::sendmsg(sock.as_raw_fd(), &h, 0) };
    match r {
        r if r >= 0 => c.datagrams_out += n,
        _ => c.send_errors += n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::udp::encode;

    #[test]
    fn a_segment_cmsg_reads_back_and_a_gro_cmsg_is_found_among_others() {
        let mut c = Ctrl::ZERO;
        let n = put_segment(&mut c, 1400);
        assert_eq!(n, align(HDR + 2));
        // SAFETY: aligned and written above.
        let h = unsafe { std::ptr::read(c.0.as_ptr().cast::<libc::cmsghdr>()) };
        assert_eq!(
            (h.cmsg_level, h.cmsg_type),
            (libc::SOL_UDP, libc::UDP_SEGMENT)
        );
        assert_eq!(h.cmsg_len as usize, HDR + 2);
        assert_eq!(u16::from_ne_bytes([c.0[HDR], c.0[HDR + 1]]), 1400);
        // Not a GRO message.
        assert_eq!(gro_size(&c.0[..n]), None);

        // A GRO message after another one, as the kernel writes them.
        let mut g = Ctrl::ZERO;
        let mut at = 0;
        for (kind, v) in [(libc::IP_TOS, 7i32), (libc::UDP_GRO, 1400)] {
            let level = if kind == libc::UDP_GRO {
                libc::SOL_UDP
            } else {
                libc::SOL_IP
            };
            let h = libc::cmsghdr {
                cmsg_len: (HDR + 4) as _,
                cmsg_level: level,
                cmsg_type: kind,
            };
            // SAFETY: aligned offset inside the buffer.
            unsafe { std::ptr::write(g.0.as_mut_ptr().add(at).cast::<libc::cmsghdr>(), h) };
            g.0[at + HDR..at + HDR + 4].copy_from_slice(&v.to_ne_bytes());
            at += align(HDR + 4);
        }
        assert_eq!(gro_size(&g.0[..at]), Some(1400));
        // Cut short: the GRO message is not read past the control length.
        assert_eq!(gro_size(&g.0[..at - 5]), None);
        assert_eq!(gro_size(&[]), None);
        // A length that runs past the buffer ends the walk.
        let mut bad = g;
        bad.0[0] = 200;
        assert_eq!(gro_size(&bad.0[..at]), None);
    }

    fn run_of(n: usize, len: usize, tail: usize) -> Vec<u8> {
        let mut v = vec![0u8; n * len + tail];
        for i in 0..n {
            encode(1, i as u64, len, &mut v[i * len..(i + 1) * len]);
        }
        if tail > 0 {
            encode(1, n as u64, tail, &mut v[n * len..]);
        }
        v
    }

    #[test]
    fn a_gro_run_with_one_bad_segment_echoes_the_others_in_order() {
        let mut buf = run_of(8, 100, 60);
        buf[3 * 100 + 30] ^= 1; // pattern byte: the server does not check it
        buf[5 * 100] ^= 1; // magic: dropped
        let total = buf.len();
        let mut c = UdpCounters::default();
        let r = judge_run(&mut c, &mut buf, total, Some(100), false);
        assert_eq!(
            r,
            Run {
                bytes: 8 * 100 + 60 - 100,
                seg: 100,
                count: 8
            }
        );
        assert_eq!((c.datagrams_in, c.dropped_header), (9, 1));
        assert_eq!((c.gro_buffers, c.gro_segments), (1, 9));
        let seqs: Vec<u64> = buf[..r.bytes]
            .chunks(100)
            .map(|d| u64::from_le_bytes(d[12..20].try_into().unwrap()))
            .collect();
        assert_eq!(seqs, [0, 1, 2, 3, 4, 6, 7, 8]);
        assert_eq!(chunks(r).collect::<Vec<_>>(), [(0, r.bytes)]);
    }

    #[test]
    fn one_datagram_without_a_cmsg_is_a_run_of_one_and_long_runs_are_cut() {
        let mut buf = run_of(1, 64, 0);
        let mut c = UdpCounters::default();
        let r = judge_run(&mut c, &mut buf, 64, None, false);
        assert_eq!((r.bytes, r.count, c.gro_buffers), (64, 1, 0));
        let mut t = vec![0u8; 100];
        let r = judge_run(&mut c, &mut t, 100, None, true);
        assert_eq!((r.count, c.dropped_length), (0, 1));
        // A segment size above what a datagram may be: every segment dropped for length.
        let mut big = vec![0u8; 10_000];
        let r = judge_run(&mut c, &mut big, 10_000, Some(5_000), false);
        assert_eq!((r.count, c.dropped_length), (0, 3));
        let long = Run {
            bytes: 100 * 20 + 7,
            seg: 20,
            count: 101,
        };
        let parts: Vec<_> = chunks(long).collect();
        assert_eq!(
            parts,
            [(0, 64 * 20), (64 * 20, 36 * 20 + 7)],
            "at most {MAX_ECHO_SEGMENTS} segments a send"
        );
        assert_eq!(segments(36 * 20 + 7, 20), 37);
    }
}
