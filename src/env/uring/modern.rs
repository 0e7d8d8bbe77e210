//! io_uring after 6.1, each feature tried for real on a small ring of its own: what the
//! kernel that introduced it is, what the io-uring crate (0.7.15) offers for it, and whether it
//! works here. `ringside env` lists them; the model rows that use one (`uring-bundle`,
//! `uring-inc`, `uring-minwait`, `uring-napi`, `uring-zcrx`, `uring-epollwait`) read their
//! availability from here (`EnvReport::modern`).
//!
//! Every wait is bounded (a timer SQE in `reap`, or a timeout in the wait arguments). The
//! zero-copy receive test registers an interface queue only on a NIC that is up and is not
//! loopback; the kernel refuses a NIC without header/data split before it touches the queue.

use super::{cqe_refusal, errno, push, reap, setup_err, Cqe, Pages, Ring, ENTRIES, WAIT};
use crate::avail::Availability;
use crate::env::explain::{self, Evidence};
use io_uring::types::{self, BufRingEntry, Fd, SubmitArgs, Timespec};
use io_uring::{cqueue, opcode, IoUring, Probe};
use rustix::event::{epoll, eventfd, EventfdFlags};
use rustix::pipe::{pipe_with, PipeFlags};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Instant;

/// The crate version these lines describe (Cargo.lock pins it).
pub(crate) const CRATE: &str = "io-uring 0.7.15";

/// One io_uring feature newer than 6.1: where it came from, what the crate offers, whether it
/// works here (tried for real) and why not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Feature {
    /// Stable name (`recvsend_bundle`, `pbuf_ring_inc`, ...), read by `EnvReport::modern`.
    pub(crate) name: String,
    /// The kernel version that introduced it.
    pub(crate) kernel: String,
    /// What the crate offers for it (or that it offers nothing ringside could use).
    pub(crate) crate_api: String,
    /// Whether it works here.
    pub(crate) here: Availability,
}

/// Names, in the order `ringside env` lists them.
pub(crate) const BUNDLE: &str = "recvsend_bundle";
pub(crate) const INC: &str = "pbuf_ring_inc";
pub(crate) const MIN_WAIT: &str = "min_wait";
pub(crate) const WAIT_REGION: &str = "registered_wait_region";
pub const NAPI: &str = "napi_busy_poll";
pub(crate) const NAPI_LOOPBACK: &str = "napi_on_loopback";
pub const EPOLL_BUSY_POLL: &str = "epoll_busy_poll";
pub(crate) const EPOLL_WAIT: &str = "op_epoll_wait";
pub(crate) const READ_MULTISHOT: &str = "read_multishot";
pub(crate) const READ_MULTISHOT_FILE: &str = "read_multishot_regular_file";
pub(crate) const HYBRID_IOPOLL: &str = "hybrid_iopoll";
pub(crate) const RECV_ZC: &str = "recv_zc";

const TAG: u64 = 40;
const BUF_LEN: u32 = 256;

/// Runs every test; `io_uring` is the plain ring's verdict (every line shares its refusal).
pub(super) fn probe(io_uring: &Availability, ev: &Evidence) -> Vec<Feature> {
    let f = |name: &str, kernel: &str, api: &str, here: Result<(), String>| Feature {
        name: name.into(),
        kernel: kernel.into(),
        crate_api: api.into(),
        here: match (io_uring, here) {
            (Availability::Unavailable(why), _) => {
                Availability::Unavailable(format!("io_uring unavailable: {why}"))
            }
            (_, Ok(())) => Availability::Ready,
            (_, Err(why)) => Availability::Unavailable(why),
        },
    };
    let live = io_uring.is_ready();
    let run = |t: &dyn Fn() -> Result<(), String>| if live { t() } else { Ok(()) };
    let no_crate = |what: &str| -> Result<(), String> {
        Err(format!(
            "{CRATE} has {what}; ringside does not hand-roll ring setup or registration"
        ))
    };
    vec![
        f(
            BUNDLE,
            "6.10",
            "RecvMultiBundle, SendBundle, is_feature_recvsend_bundle",
            run(&|| bundle(ev)),
        ),
        f(
            INC,
            "6.12",
            "register_buf_ring_with_flags(IOU_PBUF_RING_INC), cqueue::buffer_more",
            run(&|| incremental(ev)),
        ),
        f(
            MIN_WAIT,
            "6.12",
            "SubmitArgs::min_wait_usec, is_feature_min_timeout",
            run(&|| min_wait(ev)),
        ),
        f(
            WAIT_REGION,
            "6.13",
            "EnterFlags::EXT_ARG_REG only",
            no_crate("the enter flag EXT_ARG_REG but no IORING_REGISTER_MEM_REGION call"),
        ),
        f(
            NAPI,
            "6.9",
            "register_napi, Napi (busy_poll_timeout, prefer_busy_poll)",
            run(&|| napi(ev)),
        ),
        f(NAPI_LOOPBACK, "6.9", "-", run(&napi_loopback)),
        f(
            EPOLL_BUSY_POLL,
            "6.9",
            "none (libc ioctl EPIOCSPARAMS)",
            run(&epoll_busy_poll),
        ),
        f(
            EPOLL_WAIT,
            "6.15",
            "opcode::EpollWait",
            run(&|| epoll_wait(ev)),
        ),
        f(
            READ_MULTISHOT,
            "6.7",
            "opcode::ReadMulti",
            run(&|| read_multishot(ev)),
        ),
        f(
            READ_MULTISHOT_FILE,
            "6.7",
            "opcode::ReadMulti",
            run(&|| read_multishot_file(ev)),
        ),
        f(
            HYBRID_IOPOLL,
            "6.13",
            "the IORING_SETUP_HYBRID_IOPOLL constant only (crate-private), no builder",
            no_crate("no builder method for IORING_SETUP_HYBRID_IOPOLL (only a private constant)"),
        ),
        f(
            RECV_ZC,
            "6.15",
            "opcode::RecvZc, register_ifq, cqueue::Entry32",
            run(&recv_zc),
        ),
    ]
}

/// A ring with every opcode the probe says the kernel has.
fn ring_and_probe() -> Result<(Ring, Probe), String> {
    let ring = super::build_retrying(|| Ring::new(ENTRIES))
        .map_err(|e| format!("io_uring_setup: {}", crate::env::sys::os_text(&e)))?;
    let mut probe = Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(|e| format!("IORING_REGISTER_PROBE: {}", crate::env::sys::os_text(&e)))?;
    Ok((ring, probe))
}

/// Fills `entries` buffers of `BUF_LEN` bytes (in `pages`' second page) into a buffer ring in
/// its first page and registers it as group `bgid` with `flags`.
fn buf_ring(
    ring: &Ring,
    pages: &Pages,
    entries: u16,
    bgid: u16,
    flags: u16,
    buf_len: u32,
    ev: &Evidence,
) -> Result<(), String> {
    let base = pages.ptr.as_ptr().cast::<BufRingEntry>();
    for i in 0..entries {
        // SAFETY: a few 16-byte entries fit in the first page; nothing else uses it yet.
        let e = unsafe { &mut *base.add(usize::from(i)) };
        e.set_addr(pages.second() as u64 + u64::from(i) * u64::from(buf_len));
        e.set_len(buf_len);
        e.set_bid(i);
    }
    // SAFETY: the tail overlays entry 0's reserved field; a release store publishes the entries.
    unsafe { (*BufRingEntry::tail(base).cast::<AtomicU16>()).store(entries, Ordering::Release) };
    // SAFETY: the pages outlive the ring (callers drop the ring first).
    unsafe {
        ring.submitter()
            .register_buf_ring_with_flags(base as u64, entries, bgid, flags)
    }
    .map_err(|e| explain::call_refusal("IORING_REGISTER_PBUF_RING", errno(&e), ev))
}

/// Bundles: 600 bytes arrive in one multishot bundle recv that spans three 256-byte buffers.
fn bundle(ev: &Evidence) -> Result<(), String> {
    let pages = Pages::two().map_err(setup_err("mmap"))?;
    let mut ring = super::build_retrying(|| Ring::new(ENTRIES)).map_err(|e| e.to_string())?;
    if !ring.params().is_feature_recvsend_bundle() {
        return Err("the kernel does not report IORING_FEAT_RECVSEND_BUNDLE (needs 6.10)".into());
    }
    buf_ring(&ring, &pages, 4, 11, 0, BUF_LEN, ev)?;
    let (a, mut b) = UnixStream::pair().map_err(setup_err("socketpair"))?;
    let msg: Vec<u8> = (0..600u32).map(|i| (i * 7 % 251) as u8).collect();
    b.write_all(&msg).map_err(setup_err("write"))?;
    let sqe = opcode::RecvMultiBundle::new(Fd(a.as_raw_fd()), 11)
        .build()
        .user_data(TAG);
    // SAFETY: the buffers belong to the registered ring, whose pages outlive `ring`.
    unsafe { push(&mut ring, &sqe)? };
    // The bytes may come as several CQEs (the kernel sizes a bundle from what is queued);
    // one of them must span more than one buffer.
    let total = |c: &[Cqe]| c.iter().map(|c| c.result.max(0) as usize).sum::<usize>();
    let mut got: Vec<Cqe> = Vec::new();
    reap(&mut ring, TAG, &mut got, |c| {
        total(c) >= msg.len() || c.iter().any(|c| c.result <= 0)
    })
    .map_err(|e| format!("bundle RECV: {e}"))?;
    if let Some(c) = got.iter().find(|c| c.result < 0) {
        return Err(cqe_refusal(
            "multishot bundle RECV",
            c.result,
            ev,
            "needs 6.10",
        ));
    }
    if cqueue::buffer_select(got[0].flags) != Some(0) || total(&got) != msg.len() {
        return Err(format!(
            "bundle RECV: {} bytes from buffer {:?} on; sent {}",
            total(&got),
            cqueue::buffer_select(got[0].flags),
            msg.len()
        ));
    }
    if !got.iter().any(|c| c.result as u32 > BUF_LEN) {
        return Err(format!(
            "bundle RECV: no completion spanned more than one {BUF_LEN}-byte buffer \
             ({} completions)",
            got.len()
        ));
    }
    // SAFETY: buffers 0..3 are contiguous in the second page and the kernel wrote them.
    let data = unsafe { std::slice::from_raw_parts(pages.second(), msg.len()) };
    if data != msg {
        return Err("bundle RECV: the bytes across the buffers differ from those sent".into());
    }
    drop(ring);
    Ok(())
}

/// Incremental consumption: two writes land in the same buffer, one after the other, the
/// first CQE saying the kernel keeps the buffer (IORING_CQE_F_BUF_MORE).
fn incremental(ev: &Evidence) -> Result<(), String> {
    let pages = Pages::two().map_err(setup_err("mmap"))?;
    let mut ring = super::build_retrying(|| Ring::new(ENTRIES)).map_err(|e| e.to_string())?;
    buf_ring(
        &ring,
        &pages,
        1,
        12,
        types::IOU_PBUF_RING_INC as u16,
        1024,
        ev,
    )
    .map_err(|e| format!("{e} (IOU_PBUF_RING_INC needs 6.12)"))?;
    let (a, mut b) = UnixStream::pair().map_err(setup_err("socketpair"))?;
    let sqe = opcode::RecvMulti::new(Fd(a.as_raw_fd()), 12)
        .build()
        .user_data(TAG);
    // SAFETY: as in `bundle`.
    unsafe { push(&mut ring, &sqe)? };
    let msgs: [&[u8]; 2] = [&[b'a'; 100], &[b'b'; 50]];
    let mut got: Vec<Cqe> = Vec::new();
    let mut off = 0usize;
    for (n, msg) in msgs.iter().enumerate() {
        b.write_all(msg).map_err(setup_err("write"))?;
        reap(&mut ring, TAG, &mut got, |c| c.len() > n)
            .map_err(|e| format!("incremental RECV: {e}"))?;
        let c = got[n];
        if c.result < 0 {
            return Err(cqe_refusal(
                "RECV from an incremental buffer ring",
                c.result,
                ev,
                "",
            ));
        }
        if cqueue::buffer_select(c.flags) != Some(0) || c.result as usize != msg.len() {
            return Err(format!(
                "incremental RECV: {} bytes in buffer {:?}, expected {} in buffer 0",
                c.result,
                cqueue::buffer_select(c.flags),
                msg.len()
            ));
        }
        if n == 0 && !cqueue::buffer_more(c.flags) {
            return Err(
                "incremental RECV: no IORING_CQE_F_BUF_MORE: the buffer was not \
                        kept for more"
                    .into(),
            );
        }
        // SAFETY: inside the second page, written by the kernel before the CQE.
        let data = unsafe { std::slice::from_raw_parts(pages.second().add(off), msg.len()) };
        if data != *msg {
            return Err("incremental RECV: the bytes are not where the offset says".into());
        }
        off += msg.len();
    }
    drop(ring);
    Ok(())
}

/// Min wait: with one NOP queued, a wait for two completions and a 2 ms minimum wait returns
/// with the one (a kernel without it would wait for the 250 ms timeout).
fn min_wait(ev: &Evidence) -> Result<(), String> {
    let mut ring = super::build_retrying(|| {
        Ring::builder()
            .setup_defer_taskrun()
            .setup_single_issuer()
            .build(ENTRIES)
    })
    .map_err(|e| explain::defer_taskrun_refusal(errno(&e), ev))?;
    if !ring.params().is_feature_min_timeout() {
        return Err("the kernel does not report IORING_FEAT_MIN_TIMEOUT (needs 6.12)".into());
    }
    // SAFETY: a NOP points at nothing.
    unsafe { push(&mut ring, &opcode::Nop::new().build().user_data(TAG))? };
    let ts = Timespec::new().nsec(WAIT.as_nanos() as u32);
    let args = SubmitArgs::new().min_wait_usec(2000).timespec(&ts);
    let t0 = Instant::now();
    let r = ring.submitter().submit_with_args(2, &args);
    let took = t0.elapsed();
    match r {
        Ok(_) | Err(_) if !ring.completion().is_empty() && took < WAIT => Ok(()),
        Ok(_) => Err(format!(
            "a wait with min_wait_usec returned after {took:?} with no completion"
        )),
        Err(e) => Err(explain::call_refusal(
            "io_uring_enter with min_wait_usec",
            errno(&e),
            ev,
        )),
    }
}

/// NAPI busy polling registered on a ring (dynamic tracking).
fn napi(ev: &Evidence) -> Result<(), String> {
    let ring = super::build_retrying(|| Ring::new(ENTRIES)).map_err(|e| e.to_string())?;
    let mut n = types::Napi::new().set_busy_poll_timeout(50);
    ring.submitter()
        .register_napi(&mut n)
        .map_err(|e| explain::call_refusal("IORING_REGISTER_NAPI (6.9+)", errno(&e), ev))?;
    let _ = ring.submitter().unregister_napi(&mut n);
    Ok(())
}

/// Whether a loopback TCP socket carries a NAPI id (SO_INCOMING_NAPI_ID), i.e. whether busy
/// polling has a device queue to poll in the echo and HTTP suites.
fn napi_loopback() -> Result<(), String> {
    let id = loopback_napi_id().map_err(setup_err("loopback TCP pair"))?;
    if id == 0 {
        return Err(
            "loopback has no NAPI: a loopback socket's SO_INCOMING_NAPI_ID is 0, so \
                    busy polling has no device queue to poll (measure over a NIC or veth)"
                .into(),
        );
    }
    Ok(())
}

/// SO_INCOMING_NAPI_ID of a loopback TCP socket that has received a byte.
pub(crate) fn loopback_napi_id() -> std::io::Result<u32> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let mut c = TcpStream::connect(l.local_addr()?)?;
    let (mut s, _) = l.accept()?;
    c.write_all(b"x")?;
    s.set_read_timeout(Some(WAIT))?;
    let mut b = [0u8; 1];
    s.read_exact(&mut b)?;
    napi_id(s.as_raw_fd())
}

/// SO_INCOMING_NAPI_ID of `fd` (0: none).
///
/// raw: rustix has no SO_INCOMING_NAPI_ID.
pub fn napi_id(fd: i32) -> std::io::Result<u32> {
    let mut v: u32 = 0;
    let mut len = std::mem::size_of::<u32>() as libc::socklen_t;
    // SAFETY: valid out-pointers of the right size.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_INCOMING_NAPI_ID,
            (&mut v as *mut u32).cast(),
            &mut len,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(v)
}

/// `struct epoll_params` of <linux/eventpoll.h> (6.9).
#[repr(C)]
pub(crate) struct EpollParams {
    pub(crate) busy_poll_usecs: u32,
    pub(crate) busy_poll_budget: u16,
    pub(crate) prefer_busy_poll: u8,
    pub(crate) pad: u8,
}

// The uapi struct is 8 bytes (a u32, a u16, two u8): EPIOCSPARAMS encodes that size.
const _: () = assert!(std::mem::size_of::<EpollParams>() == 8);

/// EPIOCSPARAMS = _IOW(0x8A, 0x01, struct epoll_params).
pub(crate) const EPIOCSPARAMS: libc::c_ulong = 0x4008_8a01;

/// Sets epoll busy polling on `epfd` (budget at most 64 without CAP_NET_ADMIN).
pub(crate) fn set_epoll_busy_poll(
    epfd: i32,
    usecs: u32,
    budget: u16,
    prefer: bool,
) -> std::io::Result<()> {
    let p = EpollParams {
        busy_poll_usecs: usecs,
        busy_poll_budget: budget,
        prefer_busy_poll: prefer as u8,
        pad: 0,
    };
    // raw: rustix has no EPIOCSPARAMS (and its generic `ioctl` is as unsafe).
    // SAFETY: EPIOCSPARAMS reads one epoll_params from the pointer.
    let r = unsafe { libc::ioctl(epfd, EPIOCSPARAMS as _, &p as *const EpollParams) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// epoll's own busy polling: EPIOCSPARAMS on a fresh epoll instance.
fn epoll_busy_poll() -> Result<(), String> {
    let ep = epoll::create(epoll::CreateFlags::CLOEXEC)
        .map_err(|e| setup_err("epoll_create1")(e.into()))?;
    set_epoll_busy_poll(ep.as_raw_fd(), 50, 8, false).map_err(|e| {
        format!(
            "ioctl EPIOCSPARAMS (6.9+) refused: {}",
            crate::env::sys::os_text(&e)
        )
    })
}

/// IORING_OP_EPOLL_WAIT: an epoll instance with a readable eventfd reports it through the ring.
fn epoll_wait(ev: &Evidence) -> Result<(), String> {
    let (mut ring, probe) = ring_and_probe()?;
    if !probe.is_supported(opcode::EpollWait::CODE) {
        return Err("IORING_OP_EPOLL_WAIT is not in the kernel's opcode probe (needs 6.15)".into());
    }
    let made = epoll::create(epoll::CreateFlags::CLOEXEC)
        .and_then(|ep| eventfd(1, EventfdFlags::CLOEXEC).map(|efd| (ep, efd)));
    let (ep, efd) = made.map_err(|e| setup_err("epoll_create1/eventfd")(e.into()))?;
    epoll::add(
        &ep,
        &efd,
        epoll::EventData::new_u64(77),
        epoll::EventFlags::IN,
    )
    .map_err(|e| setup_err("epoll_ctl")(e.into()))?;
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 4];
    let sqe = opcode::EpollWait::new(
        Fd(ep.as_raw_fd()),
        events.as_mut_ptr().cast::<types::epoll_event>(),
        4,
    )
    .build()
    .user_data(TAG);
    // SAFETY: `events` outlives the ring's use of it: the CQE is reaped (or the ring dropped)
    // before this function returns.
    unsafe { push(&mut ring, &sqe)? };
    let mut got: Vec<Cqe> = Vec::new();
    let r = reap(&mut ring, TAG, &mut got, |c| !c.is_empty());
    drop(ring);
    r.map_err(|e| format!("EPOLL_WAIT: {e}"))?;
    match got[0].result {
        1 if { events[0].u64 } == 77 => Ok(()),
        r if r < 0 => Err(cqe_refusal("IORING_OP_EPOLL_WAIT", r, ev, "")),
        r => Err(format!(
            "EPOLL_WAIT reported {r} events, expected the one eventfd"
        )),
    }
}

/// READ_MULTISHOT: one multishot read on a pipe completes twice from the buffer ring.
fn read_multishot(ev: &Evidence) -> Result<(), String> {
    let pages = Pages::two().map_err(setup_err("mmap"))?;
    let (mut ring, probe) = ring_and_probe()?;
    if !probe.is_supported(opcode::ReadMulti::CODE) {
        return Err(
            "IORING_OP_READ_MULTISHOT is not in the kernel's opcode probe (needs 6.7)".into(),
        );
    }
    buf_ring(&ring, &pages, 4, 13, 0, BUF_LEN, ev)?;
    let (r, w) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)
        .map_err(|e| setup_err("pipe2")(e.into()))?;
    let mut w = std::fs::File::from(w);
    let sqe = opcode::ReadMulti::new(Fd(r.as_raw_fd()), 0, 13)
        .build()
        .user_data(TAG);
    // SAFETY: as in `bundle`.
    unsafe { push(&mut ring, &sqe)? };
    let mut got: Vec<Cqe> = Vec::new();
    for n in 0..2 {
        w.write_all(b"ringside").map_err(setup_err("write"))?;
        reap(&mut ring, TAG, &mut got, |c| c.len() > n)
            .map_err(|e| format!("READ_MULTISHOT: {e}"))?;
        let c = got[n];
        if c.result < 0 {
            return Err(cqe_refusal("READ_MULTISHOT on a pipe", c.result, ev, ""));
        }
        if c.result != 8 || !cqueue::more(c.flags) {
            return Err(format!(
                "READ_MULTISHOT: {} bytes, F_MORE {}; expected 8 and still armed",
                c.result,
                cqueue::more(c.flags)
            ));
        }
    }
    drop(ring);
    Ok(())
}

/// READ_MULTISHOT on a regular file, as the storage suite reads them: the kernel serves
/// multishot reads only on files it can poll (pipes, sockets), so where it refuses one, no
/// storage row can use it and the line says what the kernel answered.
fn read_multishot_file(ev: &Evidence) -> Result<(), String> {
    let pages = Pages::two().map_err(setup_err("mmap"))?;
    let (mut ring, probe) = ring_and_probe()?;
    if !probe.is_supported(opcode::ReadMulti::CODE) {
        return Err(
            "IORING_OP_READ_MULTISHOT is not in the kernel's opcode probe (needs 6.7)".into(),
        );
    }
    buf_ring(&ring, &pages, 4, 14, 0, BUF_LEN, ev)?;
    let path = std::env::temp_dir().join(format!("ringside-read-mshot-{}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .map_err(setup_err("a temporary file"));
    let _ = std::fs::remove_file(&path);
    let mut file = file?;
    file.write_all(b"ringside").map_err(setup_err("write"))?;
    let sqe = opcode::ReadMulti::new(Fd(file.as_raw_fd()), 0, 14)
        .build()
        .user_data(TAG);
    // SAFETY: as in `bundle`.
    unsafe { push(&mut ring, &sqe)? };
    let mut got: Vec<Cqe> = Vec::new();
    reap(&mut ring, TAG, &mut got, |c| !c.is_empty())
        .map_err(|e| format!("READ_MULTISHOT on a regular file: {e}"))?;
    let c = got[0];
    drop(ring);
    if c.result < 0 {
        return Err(format!(
            "the kernel refuses a multishot read of a regular file ({}): it serves only files it \
             can poll (pipes, sockets), so the storage suite, which reads regular files, has no \
             row for it",
            explain::errno_name(-c.result)
        ));
    }
    Ok(())
}

/// Drivers without netdev queue-management ops: the kernel refuses a zero-copy receive
/// registration on them (EOPNOTSUPP) before it touches any queue, so trying one is harmless.
const ZCRX_HARMLESS_DRIVERS: &[&str] = &[
    "virtio_net",
    "veth",
    "e1000",
    "e1000e",
    "vmxnet3",
    "hv_netvsc",
];

/// The environment variable that lets the probe try a zero-copy receive registration on a NIC
/// whose driver may accept it (registering restarts that NIC's queue 0: live traffic on it
/// stalls for the restart, so `ringside env` never does it unasked).
pub(crate) const PROBE_ZCRX_ENV: &str = "RINGSIDE_PROBE_ZCRX";

/// Zero-copy receive needs a NIC whose queue can be given to io_uring: header/data split,
/// flow steering and queue management in its driver. Each NIC that is up and not loopback
/// is tried with IORING_REGISTER_ZCRX_IFQ on its queue 0 where that cannot disturb it: its
/// driver has no queue management (the kernel refuses first), or the user set
/// `RINGSIDE_PROBE_ZCRX=1`; any other NIC is named as not tried, with the way to try it.
fn recv_zc() -> Result<(), String> {
    let nics = nics();
    if nics.is_empty() {
        return Err(
            "no NIC here but loopback, and zero-copy receive needs a NIC queue with \
                    header/data split and flow steering (the kernel has no device-less mode)"
                .into(),
        );
    }
    let mut whys = Vec::new();
    let asked = std::env::var(PROBE_ZCRX_ENV).is_ok_and(|v| v == "1");
    for (name, idx, driver) in &nics {
        if !asked && !ZCRX_HARMLESS_DRIVERS.contains(&driver.as_str()) {
            whys.push(format!(
                "{name} (driver {driver}): not tried, since registering restarts its queue 0 \
                 under live traffic ({PROBE_ZCRX_ENV}=1 tries it)"
            ));
            continue;
        }
        match zcrx_register(*idx) {
            Ok(()) => return Ok(()),
            Err(e) => whys.push(format!("{name} (driver {driver}): {e}")),
        }
    }
    Err(format!(
        "no NIC here offers a queue with header/data split and flow steering: {}; \
         loopback has no device queue at all (the kernel has no device-less mode)",
        whys.join("; ")
    ))
}

/// Non-loopback interfaces that are up: (name, index, driver).
fn nics() -> Vec<(String, u32, String)> {
    let mut v = Vec::new();
    let Ok(dir) = std::fs::read_dir("/sys/class/net") else {
        return v;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let p = e.path();
        let up = std::fs::read_to_string(p.join("operstate"))
            .map(|s| s.trim() == "up")
            .unwrap_or(false);
        let has_device = p.join("device").exists();
        if name == "lo" || !up || !has_device {
            continue;
        }
        let driver = std::fs::read_link(p.join("device/driver"))
            .ok()
            .and_then(|l| l.file_name().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "unknown".into());
        let idx = std::fs::read_to_string(p.join("ifindex"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        v.push((name, idx, driver));
    }
    v.sort();
    v
}

/// Tries to register queue 0 of interface `idx` for zero-copy receive on a ring built as
/// zcrx requires (DEFER_TASKRUN, SINGLE_ISSUER, 32-byte CQEs).
fn zcrx_register(idx: u32) -> Result<(), String> {
    let ring: IoUring<io_uring::squeue::Entry, cqueue::Entry32> = IoUring::builder()
        .setup_defer_taskrun()
        .setup_single_issuer()
        .build(ENTRIES)
        .map_err(|e| format!("ring with 32-byte CQEs: {}", crate::env::sys::os_text(&e)))?;
    let area = Pages::two().map_err(setup_err("mmap"))?;
    let rq = Pages::two().map_err(setup_err("mmap"))?;
    let mut area_reg = types::io_uring_zcrx_area_reg {
        addr: area.ptr.as_ptr() as u64,
        len: area.len as u64,
        rq_area_token: 0,
        flags: 0,
        dmabuf_fd: 0,
        __resv2: [0; 2],
    };
    let mut region = types::io_uring_region_desc {
        user_addr: rq.ptr.as_ptr() as u64,
        size: rq.len as u64,
        flags: types::IORING_MEM_REGION_TYPE_USER,
        id: 0,
        mmap_offset: 0,
        __resv: [0; 4],
    };
    // SAFETY: a plain C struct of integers; zero is a valid value for each field.
    let mut reg: types::io_uring_zcrx_ifq_reg = unsafe { std::mem::zeroed() };
    reg.if_idx = idx;
    reg.if_rxq = 0;
    reg.rq_entries = 4;
    reg.area_ptr = &mut area_reg as *mut _ as u64;
    reg.region_ptr = &mut region as *mut _ as u64;
    let r = ring.submitter().register_ifq(&reg);
    drop(ring);
    r.map_err(|e| {
        let what = match errno(&e) {
            libc::EOPNOTSUPP => "the driver cannot hand a queue to io_uring (no queue \
                                 management / header-data split)"
                .to_string(),
            libc::EINVAL => "refused (EINVAL: tcp-data-split disabled or unsupported on this \
                             NIC, or a header-data split threshold set)"
                .to_string(),
            _ => crate::env::sys::os_text(&e),
        };
        format!("IORING_REGISTER_ZCRX_IFQ on queue 0: {what}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_feature_names_its_kernel_and_a_reason_when_unavailable() {
        let r = crate::env::probe();
        let f = &r.io_uring_modern;
        let mut names: Vec<_> = f.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names.len(), 12);
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 12, "names must be unique");
        for x in f {
            let v: Vec<u32> = x.kernel.split('.').filter_map(|p| p.parse().ok()).collect();
            assert!(
                v.len() == 2 && v[0] == 6 && v[1] > 1,
                "{}: {}",
                x.name,
                x.kernel
            );
            if let Some(why) = x.here.reason() {
                assert!(!why.trim().is_empty(), "{}", x.name);
            }
        }
        // What the crate lacks is said, not hand-rolled.
        let hybrid = r.modern(HYBRID_IOPOLL);
        assert!(hybrid.reason().unwrap().contains(CRATE), "{hybrid}");
        // A regular file cannot be polled: where multishot reads work at all, the kernel
        // refuses them on one (EBADFD), and the line says so for the storage suite.
        if r.modern(READ_MULTISHOT).is_ready() {
            let file = r.modern(READ_MULTISHOT_FILE);
            assert!(
                file.reason().is_some_and(|w| w.contains("storage suite")),
                "{file}"
            );
        }
        // Loopback never has a NAPI id.
        assert!(r.modern(NAPI_LOOPBACK).reason().is_some());
        assert!(r
            .modern("nope")
            .reason()
            .unwrap()
            .contains("was not probed"));
    }
}
