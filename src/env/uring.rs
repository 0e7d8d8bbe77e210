//! io_uring, tried for real, on tiny rings (8 entries). A plain ring first; its features and
//! an opcode probe are read from it, and it then serves every functional test that needs no
//! setup flag: registered files and buffers by writing through them, the buffer ring and
//! multishot RECV/ACCEPT and SEND_ZC by a real exchange on a socket pair or TCP loopback,
//! checking the bytes and the CQE flags (`IORING_CQE_F_MORE`, `F_NOTIF`). SQPOLL and
//! DEFER_TASKRUN each get a ring of their own, built with the flag and dropped at once.
//!
//! Every wait is bounded by an `IORING_OP_TIMEOUT` armed beside the operation, so a kernel that
//! never completes one cannot hang `ringside env`. One shared ring rather than one per test:
//! recent kernels (observed on 6.18), like those before 5.12, charge rings to the per-user
//! `RLIMIT_MEMLOCK` and release a dropped ring's charge asynchronously, so a fresh ring per test
//! could exhaust a small limit that one ring fits in.
//!
//! Kernel floors (liburing man pages): SQPOLL 5.1 (unprivileged 5.13), fixed files and
//! buffers 5.1, IORING_REGISTER_PROBE 5.6, buffer rings 5.19, multishot accept 5.19, multishot
//! recv 6.0, SEND_ZC 6.0, DEFER_TASKRUN 6.1.

pub mod modern;

use super::explain::{self, Evidence};
use super::Reading;
use crate::avail::Availability;
use io_uring::types::{BufRingEntry, Fd, Fixed, Timespec};
use io_uring::{cqueue, opcode, IoUring, Parameters, Probe};
use std::any::Any;
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

/// A ring with the default (64-byte SQE, 16-byte CQE) entries.
type Ring = IoUring;

/// SQ size of every probe ring.
const ENTRIES: u32 = 8;
/// The longest any one functional probe waits for a completion.
const WAIT: Duration = Duration::from_millis(250);
/// SQPOLL idle time before the poller sleeps, ms.
const SQPOLL_IDLE_MS: u32 = 10;
/// `user_data` of the bounding timer.
const TIMER: u64 = u64::MAX;
/// `user_data` of each test's operation, so that a test never sees another's completions.
const FILES: u64 = 1;
const BUFFERS: u64 = 2;
const RECV: u64 = 3;
const ACCEPT: u64 = 4;
const SEND: u64 = 5;
const NOP: u64 = 6;
/// Buffer group id of the probe's buffer ring.
const BGID: u16 = 7;
/// Buffers in the probe's buffer ring (a power of two), and the size of each, bytes.
const BUFS: u16 = 4;
const BUF_LEN: u32 = 256;

/// The opcodes ringside's models use, reported as supported or not.
const OPCODES: [(&str, u8); 22] = [
    ("Nop", opcode::Nop::CODE),
    ("Read", opcode::Read::CODE),
    ("Write", opcode::Write::CODE),
    ("Readv", opcode::Readv::CODE),
    ("Writev", opcode::Writev::CODE),
    ("ReadFixed", opcode::ReadFixed::CODE),
    ("WriteFixed", opcode::WriteFixed::CODE),
    ("Fsync", opcode::Fsync::CODE),
    ("OpenAt", opcode::OpenAt::CODE),
    ("Close", opcode::Close::CODE),
    ("Statx", opcode::Statx::CODE),
    ("Accept", opcode::Accept::CODE),
    ("Recv", opcode::Recv::CODE),
    ("Send", opcode::Send::CODE),
    ("SendZc", opcode::SendZc::CODE),
    ("RecvMsg", opcode::RecvMsg::CODE),
    ("SendMsg", opcode::SendMsg::CODE),
    ("PollAdd", opcode::PollAdd::CODE),
    ("Timeout", opcode::Timeout::CODE),
    ("ProvideBuffers", opcode::ProvideBuffers::CODE),
    ("LinkTimeout", opcode::LinkTimeout::CODE),
    ("AsyncCancel", opcode::AsyncCancel::CODE),
];

/// Reads one feature bit of `io_uring_params.features`.
type FeatureBit = fn(&Parameters) -> bool;

/// The `io_uring_params.features` bits, by the name of their `is_feature_*` accessor.
const FEATURES: [(&str, FeatureBit); 16] = [
    ("single_mmap", Parameters::is_feature_single_mmap),
    ("nodrop", Parameters::is_feature_nodrop),
    ("submit_stable", Parameters::is_feature_submit_stable),
    ("rw_cur_pos", Parameters::is_feature_rw_cur_pos),
    ("cur_personality", Parameters::is_feature_cur_personality),
    ("fast_poll", Parameters::is_feature_fast_poll),
    ("poll_32bits", Parameters::is_feature_poll_32bits),
    ("sqpoll_nonfixed", Parameters::is_feature_sqpoll_nonfixed),
    ("ext_arg", Parameters::is_feature_ext_arg),
    ("native_workers", Parameters::is_feature_native_workers),
    ("resource_tagging", Parameters::is_feature_resource_tagging),
    (
        "skip_cqe_on_success",
        Parameters::is_feature_skip_cqe_on_success,
    ),
    ("linked_file", Parameters::is_feature_linked_file),
    ("recvsend_bundle", Parameters::is_feature_recvsend_bundle),
    ("min_timeout", Parameters::is_feature_min_timeout),
    ("no_iowait", Parameters::is_feature_no_iowait),
];

/// Everything the io_uring half of the probe decides.
pub(super) struct Verdicts {
    pub(crate) io_uring: Availability,
    pub(crate) sqpoll: Availability,
    pub(crate) defer_taskrun: Availability,
    pub(crate) registered_files: Availability,
    pub(crate) registered_buffers: Availability,
    pub(crate) buf_ring: Availability,
    pub(crate) multishot_recv: Availability,
    pub(crate) multishot_accept: Availability,
    pub(crate) send_zc: Availability,
    pub(crate) features: Reading<Vec<String>>,
    pub(crate) opcodes: Reading<BTreeMap<String, bool>>,
    /// io_uring after 6.1, feature by feature (`modern`).
    pub(crate) modern: Vec<modern::Feature>,
}

impl Verdicts {
    /// io_uring itself refused: every feature is unavailable for that reason.
    fn refused(why: String, ev: &Evidence) -> Verdicts {
        let each = || Availability::Unavailable(format!("io_uring unavailable: {why}"));
        let reading = format!("io_uring unavailable: {why}");
        Verdicts {
            sqpoll: each(),
            defer_taskrun: each(),
            registered_files: each(),
            registered_buffers: each(),
            buf_ring: each(),
            multishot_recv: each(),
            multishot_accept: each(),
            send_zc: each(),
            features: Reading::Unavailable(reading.clone()),
            opcodes: Reading::Unavailable(reading),
            modern: modern::probe(&Availability::Unavailable(why.clone()), ev),
            io_uring: Availability::Unavailable(why),
        }
    }
}

/// Runs every io_uring probe; `ev` explains refusals.
pub(super) fn probe(ev: &Evidence) -> Verdicts {
    let ring = match build_retrying(|| Ring::new(ENTRIES)) {
        Ok(r) => r,
        Err(e) => return Verdicts::refused(explain::setup_refusal(errno(&e), ev), ev),
    };
    let features = Reading::Value(
        FEATURES
            .iter()
            .filter(|(_, is)| is(ring.params()))
            .map(|(name, _)| name.to_string())
            .collect(),
    );
    let mut probe = Probe::new();
    let (opcodes, probe) = match ring.submitter().register_probe(&mut probe) {
        Ok(()) => {
            let map = OPCODES
                .iter()
                .map(|(n, c)| (n.to_string(), probe.is_supported(*c)))
                .collect();
            (Reading::Value(map), Some(probe))
        }
        Err(e) => {
            let why = explain::call_refusal("IORING_REGISTER_PROBE (kernel 5.6+)", errno(&e), ev);
            (Reading::Unavailable(why), None)
        }
    };
    // Each test undoes its registrations so that the next is judged as a model using only its
    // own feature would be: registered buffers and buffer rings count against RLIMIT_MEMLOCK.
    // Unregistering cannot fail in a way that matters here, so its result is ignored.
    let mut lab = Lab {
        ring,
        held: Vec::new(),
    };
    let registered_files = verdict(lab.registered_files(ev));
    let _ = lab.ring.submitter().unregister_files();
    let registered_buffers = verdict(lab.registered_buffers(ev));
    let _ = lab.ring.submitter().unregister_buffers();
    let (buf_ring, multishot_recv) = lab.buf_ring_and_multishot_recv(ev);
    let _ = lab.ring.submitter().unregister_buf_ring(BGID);
    let multishot_accept = verdict(lab.multishot_accept(ev));
    let send_zc = verdict(lab.send_zc(ev, probe.as_ref()));
    drop(lab);
    let modern = modern::probe(&Availability::Ready, ev);
    Verdicts {
        io_uring: Availability::Ready,
        sqpoll: verdict(sqpoll(ev)),
        defer_taskrun: verdict(defer_taskrun(ev)),
        registered_files,
        registered_buffers,
        buf_ring: verdict(buf_ring),
        multishot_recv: verdict(multishot_recv),
        multishot_accept,
        send_zc,
        features,
        opcodes,
        modern,
    }
}

fn verdict(r: Result<(), String>) -> Availability {
    match r {
        Ok(()) => Availability::Ready,
        Err(why) => Availability::Unavailable(why),
    }
}

fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// Why a local socket or mapping for a functional test could not be made.
fn setup_err(what: &str) -> impl Fn(io::Error) -> String + '_ {
    move |e| {
        format!(
            "could not set up the test ({what}): {}",
            super::sys::os_text(&e)
        )
    }
}

/// One completion of the op under test, copied out of the CQ.
#[derive(Clone, Copy, Debug)]
struct Cqe {
    result: i32,
    flags: u32,
}

/// Queues `sqe`.
///
/// # Safety
/// Every buffer `sqe` points at must stay valid until its last CQE is reaped or the ring is
/// dropped.
unsafe fn push(ring: &mut Ring, sqe: &io_uring::squeue::Entry) -> Result<(), String> {
    // SAFETY: forwarded to the caller.
    unsafe { ring.submission().push(sqe) }.map_err(|_| "submission queue full".to_string())
}

/// Submits what is queued and collects the completions tagged `tag` into `got` until
/// `done(got)`, or fails after [`WAIT`]. A timer SQE armed on each wait bounds it; other
/// completions (timers, earlier tests' ops) are dropped.
fn reap(
    ring: &mut Ring,
    tag: u64,
    got: &mut Vec<Cqe>,
    done: impl Fn(&[Cqe]) -> bool,
) -> Result<(), String> {
    let deadline = Instant::now() + WAIT;
    loop {
        got.extend(
            ring.completion()
                .filter(|c| c.user_data() == tag)
                .map(|c| Cqe {
                    result: c.result(),
                    flags: c.flags(),
                }),
        );
        if done(got) {
            return Ok(());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("no completion within {} ms", WAIT.as_millis()));
        }
        let ts = Timespec::new()
            .sec(left.as_secs())
            .nsec(left.subsec_nanos());
        let timer = opcode::Timeout::new(&ts).build().user_data(TIMER);
        // SAFETY: the kernel copies `ts` when it prepares the SQE, inside the submit below
        // (these rings have no SQPOLL thread that could read it later); `ts` outlives that.
        unsafe { push(ring, &timer)? };
        loop {
            match ring.submit_and_wait(1) {
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("io_uring_enter: {}", super::sys::os_text(&e))),
            }
        }
    }
}

/// A CQE's negative result as a refusal of `what`; `einval_means` says what EINVAL implies.
fn cqe_refusal(what: &str, result: i32, ev: &Evidence, einval_means: &str) -> String {
    let s = explain::call_refusal(what, -result, ev);
    if -result == libc::EINVAL && !einval_means.is_empty() {
        format!("{einval_means}: {s}")
    } else {
        s
    }
}

/// Reads exactly `want.len()` bytes from `from` (within [`WAIT`]) and compares them.
fn expect_bytes(mut from: impl Read, want: &[u8], what: &str) -> Result<(), String> {
    let mut buf = vec![0; want.len()];
    from.read_exact(&mut buf).map_err(|e| {
        format!(
            "{what}: reading back the bytes: {}",
            super::sys::os_text(&e)
        )
    })?;
    if buf != want {
        return Err(format!(
            "{what}: the bytes that arrived differ from those sent"
        ));
    }
    Ok(())
}

/// Anonymous, page-aligned memory the kernel may read and write (buffer rings, fixed buffers).
struct Pages {
    ptr: NonNull<u8>,
    len: usize,
    page: usize,
}

impl Pages {
    /// Two pages: a buffer ring's entries in the first, its buffers (or one fixed buffer) in
    /// the second.
    fn two() -> io::Result<Pages> {
        // raw: glibc knows the page size already; rustix's `page_size` fetches the aux vector
        // itself on first use (a prctl more).
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let len = 2 * page;
        use rustix::mm::{MapFlags, ProtFlags};
        // SAFETY: a fresh private anonymous mapping; no address hint, no file.
        let p = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE,
            )
        }?;
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave null"))?;
        Ok(Pages { ptr, len, page })
    }

    /// The second page.
    fn second(&self) -> *mut u8 {
        // SAFETY: the mapping is two pages long.
        unsafe { self.ptr.as_ptr().add(self.page) }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly the mapping made in `two`; it is only ever handed to
        // the lab ring, which is dropped before `Lab::held`.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// Builds a ring, retrying ENOMEM for up to ~150 ms. The charge to `RLIMIT_MEMLOCK` is per
/// user, and a ring dropped a moment ago (by this probe, or by an earlier `ringside` of the
/// same user) is freed by a kernel worker, its charge lingering until then: under a tight
/// limit, that alone could refuse this ring.
fn build_retrying(build: impl Fn() -> io::Result<Ring>) -> io::Result<Ring> {
    for _ in 0..15 {
        match build() {
            Err(e) if errno(&e) == libc::ENOMEM => std::thread::sleep(Duration::from_millis(10)),
            r => return r,
        }
    }
    build()
}

/// SQPOLL: a ring with IORING_SETUP_SQPOLL is built (which starts the poller thread).
fn sqpoll(ev: &Evidence) -> Result<(), String> {
    match build_retrying(|| Ring::builder().setup_sqpoll(SQPOLL_IDLE_MS).build(ENTRIES)) {
        Ok(ring) => {
            drop(ring);
            Ok(())
        }
        Err(e) => Err(explain::sqpoll_refusal(errno(&e), ev)),
    }
}

/// DEFER_TASKRUN | SINGLE_ISSUER: a ring is built and a NOP completes on it.
fn defer_taskrun(ev: &Evidence) -> Result<(), String> {
    let mut ring = build_retrying(|| {
        Ring::builder()
            .setup_defer_taskrun()
            .setup_single_issuer()
            .build(ENTRIES)
    })
    .map_err(|e| explain::defer_taskrun_refusal(errno(&e), ev))?;
    // SAFETY: a NOP points at nothing.
    unsafe { push(&mut ring, &opcode::Nop::new().build().user_data(NOP))? };
    let mut got = Vec::new();
    reap(&mut ring, NOP, &mut got, |c| !c.is_empty())
        .map_err(|e| format!("NOP with DEFER_TASKRUN: {e}"))?;
    match got[0].result {
        0 => Ok(()),
        r => Err(cqe_refusal("NOP with DEFER_TASKRUN", r, ev, "")),
    }
}

/// The shared ring of the functional tests, and the memory its operations may refer to.
/// `ring` is declared first so it is dropped first, cancelling whatever is still armed
/// before that memory is unmapped.
struct Lab {
    ring: Ring,
    held: Vec<Box<dyn Any>>,
}

impl Lab {
    /// Two fresh pages that stay mapped until the ring is gone.
    fn pages(&mut self) -> Result<(*mut u8, *mut u8), String> {
        let pages = Pages::two().map_err(setup_err("mmap"))?;
        let both = (pages.ptr.as_ptr(), pages.second());
        self.held.push(Box::new(pages));
        Ok(both)
    }

    /// Registered files: one socket registered, then written through as fixed file 0.
    fn registered_files(&mut self, ev: &Evidence) -> Result<(), String> {
        const MSG: &[u8] = b"ringside fixed file";
        let (a, b) = UnixStream::pair().map_err(setup_err("socketpair"))?;
        b.set_read_timeout(Some(WAIT))
            .map_err(setup_err("SO_RCVTIMEO"))?;
        self.ring
            .submitter()
            .register_files(&[a.as_raw_fd()])
            .map_err(|e| explain::call_refusal("IORING_REGISTER_FILES", errno(&e), ev))?;
        let sqe = opcode::Write::new(Fixed(0), MSG.as_ptr(), MSG.len() as u32)
            .build()
            .user_data(FILES);
        // SAFETY: MSG is static; the registered table holds its own reference to the socket.
        unsafe { push(&mut self.ring, &sqe)? };
        let mut got = Vec::new();
        reap(&mut self.ring, FILES, &mut got, |c| !c.is_empty())
            .map_err(|e| format!("WRITE on a fixed file: {e}"))?;
        match got[0].result {
            r if r == MSG.len() as i32 => expect_bytes(&b, MSG, "WRITE on a fixed file"),
            r if r < 0 => Err(cqe_refusal("WRITE on a registered file", r, ev, "")),
            r => Err(format!(
                "WRITE on a fixed file wrote {r} of {} bytes",
                MSG.len()
            )),
        }
    }

    /// Registered buffers: one page registered, then sent from with WRITE_FIXED.
    fn registered_buffers(&mut self, ev: &Evidence) -> Result<(), String> {
        const MSG: &[u8] = b"ringside fixed buffer";
        let (base, _) = self.pages()?;
        let (a, b) = UnixStream::pair().map_err(setup_err("socketpair"))?;
        b.set_read_timeout(Some(WAIT))
            .map_err(setup_err("SO_RCVTIMEO"))?;
        // SAFETY: the page is longer than MSG and nothing else refers to it yet.
        unsafe { std::ptr::copy_nonoverlapping(MSG.as_ptr(), base, MSG.len()) };
        let iov = libc::iovec {
            iov_base: base.cast(),
            iov_len: MSG.len(),
        };
        // SAFETY: the page stays mapped until the ring is dropped (`Lab::held`).
        unsafe { self.ring.submitter().register_buffers(&[iov]) }
            .map_err(|e| explain::register_buffers_refusal(errno(&e), ev))?;
        let sqe = opcode::WriteFixed::new(Fd(a.as_raw_fd()), base, MSG.len() as u32, 0)
            .build()
            .user_data(BUFFERS);
        // SAFETY: the buffer is registered buffer 0 and outlives the ring.
        unsafe { push(&mut self.ring, &sqe)? };
        let mut got = Vec::new();
        reap(&mut self.ring, BUFFERS, &mut got, |c| !c.is_empty())
            .map_err(|e| format!("WRITE_FIXED: {e}"))?;
        match got[0].result {
            r if r == MSG.len() as i32 => expect_bytes(&b, MSG, "WRITE_FIXED"),
            r if r < 0 => Err(cqe_refusal(
                "WRITE_FIXED from a registered buffer",
                r,
                ev,
                "",
            )),
            r => Err(format!("WRITE_FIXED wrote {r} of {} bytes", MSG.len())),
        }
    }

    /// Buffer ring: registered (page 0 holds the ring, page 1 the buffers). Multishot recv:
    /// one RECV with IORING_RECV_MULTISHOT picks buffers from it for two separate writes.
    fn buf_ring_and_multishot_recv(
        &mut self,
        ev: &Evidence,
    ) -> (Result<(), String>, Result<(), String>) {
        let (ring_mem, bufs) = match self.pages() {
            Ok(p) => p,
            Err(e) => return (Err(e.clone()), Err(e)),
        };
        let ring_base = ring_mem.cast::<BufRingEntry>();
        for i in 0..BUFS {
            // SAFETY: BUFS entries of 16 bytes fit in the first page; nothing else uses it yet.
            let e = unsafe { &mut *ring_base.add(usize::from(i)) };
            e.set_addr(bufs as u64 + u64::from(i) * u64::from(BUF_LEN));
            e.set_len(BUF_LEN);
            e.set_bid(i);
        }
        // SAFETY: the tail overlays entry 0's reserved field, inside the mapping; the kernel
        // reads it with acquire semantics, so a release store publishes the entries above.
        unsafe {
            (*BufRingEntry::tail(ring_base).cast::<AtomicU16>()).store(BUFS, Ordering::Release)
        };
        // SAFETY: the ring memory stays mapped until the ring is dropped (`Lab::held`).
        let reg = unsafe {
            self.ring
                .submitter()
                .register_buf_ring_with_flags(ring_base as u64, BUFS, BGID, 0)
        };
        if let Err(e) = reg {
            let why = match errno(&e) {
                libc::EINVAL => format!(
                    "kernel too old (buffer rings need 5.19): {}",
                    explain::call_refusal("IORING_REGISTER_PBUF_RING", libc::EINVAL, ev)
                ),
                n => explain::call_refusal("IORING_REGISTER_PBUF_RING", n, ev),
            };
            return (Err(why.clone()), Err(format!("needs a buffer ring: {why}")));
        }
        (Ok(()), self.multishot_recv(bufs, ev))
    }

    /// Each of two writes must complete the one RECV with F_MORE (still armed) and the id of
    /// the buffer that holds exactly the bytes written.
    fn multishot_recv(&mut self, bufs: *const u8, ev: &Evidence) -> Result<(), String> {
        let (a, mut b) = UnixStream::pair().map_err(setup_err("socketpair"))?;
        let sqe = opcode::RecvMulti::new(Fd(a.as_raw_fd()), BGID)
            .build()
            .user_data(RECV);
        // SAFETY: the kernel picks its buffers from the registered buffer ring, whose memory
        // outlives the ring.
        unsafe { push(&mut self.ring, &sqe)? };
        let mut got = Vec::new();
        let msgs: [&[u8]; 2] = [b"ringside multishot", b"second completion"];
        for (n, msg) in msgs.into_iter().enumerate() {
            b.write_all(msg).map_err(setup_err("write"))?;
            reap(&mut self.ring, RECV, &mut got, |c| c.len() > n)
                .map_err(|e| format!("multishot RECV: {e}"))?;
            let c = got[n];
            if c.result < 0 {
                let old = "kernel too old (needs 6.0)";
                return Err(cqe_refusal("multishot RECV", c.result, ev, old));
            }
            if !cqueue::more(c.flags) {
                return Err(
                    "multishot RECV completed without IORING_CQE_F_MORE: the kernel \
                            does not keep it armed"
                        .into(),
                );
            }
            let Some(bid) = cqueue::buffer_select(c.flags) else {
                return Err("multishot RECV completed without a buffer id".into());
            };
            if bid >= BUFS || c.result as usize != msg.len() {
                return Err(format!(
                    "multishot RECV: buffer {bid}, {} bytes; sent {}",
                    c.result,
                    msg.len()
                ));
            }
            // SAFETY: the CQE hands buffer `bid` back to us; it lies inside the second page
            // and the kernel wrote `result` bytes into it before posting the CQE.
            let data = unsafe {
                std::slice::from_raw_parts(bufs.add(usize::from(bid) * BUF_LEN as usize), msg.len())
            };
            if data != msg {
                return Err(
                    "multishot RECV: the bytes in the buffer differ from those sent".into(),
                );
            }
        }
        Ok(())
    }

    /// Multishot accept: one ACCEPT with IORING_ACCEPT_MULTISHOT yields two connections.
    fn multishot_accept(&mut self, ev: &Evidence) -> Result<(), String> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!("ringside-env-{}-{nanos}", std::process::id());
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).map_err(setup_err("address"))?;
        let listener = UnixListener::bind_addr(&addr).map_err(setup_err("bind"))?;
        let sqe = opcode::AcceptMulti::new(Fd(listener.as_raw_fd()))
            .flags(libc::SOCK_CLOEXEC)
            .build()
            .user_data(ACCEPT);
        // SAFETY: no buffers; the kernel holds its own reference to the listener.
        unsafe { push(&mut self.ring, &sqe)? };
        let mut got = Vec::new();
        let mut clients = Vec::new();
        for n in 0..2 {
            clients.push(UnixStream::connect_addr(&addr).map_err(setup_err("connect"))?);
            reap(&mut self.ring, ACCEPT, &mut got, |c| c.len() > n)
                .map_err(|e| format!("multishot ACCEPT: {e}"))?;
            let c = got[n];
            if c.result < 0 {
                let old = "kernel too old (needs 5.19)";
                return Err(cqe_refusal("multishot ACCEPT", c.result, ev, old));
            }
            // SAFETY: a non-negative accept result is a new fd that only we own.
            drop(unsafe { OwnedFd::from_raw_fd(c.result) });
            if !cqueue::more(c.flags) {
                return Err(
                    "multishot ACCEPT completed without IORING_CQE_F_MORE: the kernel \
                            does not keep it armed"
                        .into(),
                );
            }
        }
        Ok(())
    }

    /// SEND_ZC on TCP loopback: the send completes with F_MORE, then the notification (F_NOTIF)
    /// says the kernel is done with the buffer, and the peer reads the right bytes.
    fn send_zc(&mut self, ev: &Evidence, probe: Option<&Probe>) -> Result<(), String> {
        const MSG: &[u8] = b"ringside zero-copy send";
        if probe.is_some_and(|p| !p.is_supported(opcode::SendZc::CODE)) {
            return Err(format!(
                "kernel too old (needs 6.0): IORING_OP_SEND_ZC not supported (kernel {})",
                ev.kernel_release
            ));
        }
        let listener =
            TcpListener::bind(("127.0.0.1", 0)).map_err(setup_err("bind 127.0.0.1:0"))?;
        let addr = listener.local_addr().map_err(setup_err("getsockname"))?;
        let client = TcpStream::connect(addr).map_err(setup_err("connect over TCP loopback"))?;
        let (server, _) = listener.accept().map_err(setup_err("accept"))?;
        server
            .set_read_timeout(Some(WAIT))
            .map_err(setup_err("SO_RCVTIMEO"))?;
        let sqe = opcode::SendZc::new(Fd(client.as_raw_fd()), MSG.as_ptr(), MSG.len() as u32)
            .build()
            .user_data(SEND);
        // SAFETY: MSG is static.
        unsafe { push(&mut self.ring, &sqe)? };
        let mut got = Vec::new();
        // Done at the first CQE without F_MORE: the notification, or a failure with none to
        // follow.
        reap(&mut self.ring, SEND, &mut got, |c| {
            c.iter().any(|c| !cqueue::more(c.flags))
        })
        .map_err(|e| format!("SEND_ZC: {e}"))?;
        let first = got[0];
        if first.result < 0 {
            let old = "kernel too old (needs 6.0)";
            return Err(cqe_refusal(
                "SEND_ZC on TCP loopback",
                first.result,
                ev,
                old,
            ));
        }
        if first.result as usize != MSG.len() {
            return Err(format!(
                "SEND_ZC sent {} of {} bytes",
                first.result,
                MSG.len()
            ));
        }
        if !got.iter().any(|c| cqueue::notif(c.flags)) {
            return Err("SEND_ZC completed without a notification CQE (IORING_CQE_F_NOTIF)".into());
        }
        expect_bytes(&server, MSG, "SEND_ZC")
    }
}
