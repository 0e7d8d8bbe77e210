//! Syscalls counted by the kernel: a perf counter on the tracepoint `raw_syscalls:sys_enter`,
//! in counting mode (no sampling, no ring buffer), scoped to one thread or to every task of a
//! process, with `inherit` so threads created later are counted too.
//!
//! The same counting serves other tracepoints ([`TraceCounter`]: io_uring's, in
//! `measure::uring_trace`).
//!
//! The figure is measured, never derived from what the code believes it did. When the counter
//! cannot be opened (tracefs missing, `perf_event_paranoid`, seccomp), the reason travels into
//! the results as `unavailable: <reason>`.

use crate::avail::Availability;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::OnceLock;

const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_ATTR_SIZE_VER0: u32 = 64;
const ATTR_DISABLED: u64 = 1 << 0;
const ATTR_INHERIT: u64 = 1 << 1;
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// The first 64 bytes of `struct perf_event_attr` (PERF_ATTR_SIZE_VER0): all a counting
/// tracepoint event needs. The kernel zero-extends the rest.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttrV0 {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const TRACEFS_DIRS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
/// The syscall counter's tracepoint.
const SYS_ENTER: &str = "raw_syscalls/sys_enter";

/// The tracepoint id of `raw_syscalls:sys_enter`, found once per process.
///
/// Like `perf` itself, when tracefs is not mounted and we are root, it mounts tracefs at
/// `/sys/kernel/tracing` (a read-only view of kernel events; nothing is traced by mounting).
pub(crate) fn tracepoint_id() -> Result<u64, String> {
    static ID: OnceLock<Result<u64, String>> = OnceLock::new();
    ID.get_or_init(|| find_tracepoint_id(SYS_ENTER)).clone()
}

/// The id of tracepoint `event` ("subsystem/name", as under tracefs' `events/`), read from
/// tracefs (mounted first when missing, as for [`tracepoint_id`]).
pub(crate) fn find_tracepoint_id(event: &str) -> Result<u64, String> {
    let rel = format!("events/{event}/id");
    let read = || -> Result<u64, (String, io::Error)> {
        let mut last = None;
        for d in TRACEFS_DIRS {
            let p = Path::new(d).join(&rel);
            match fs::read_to_string(&p) {
                Ok(s) => match s.trim().parse::<u64>() {
                    Ok(id) => return Ok(id),
                    Err(_) => {
                        last = Some((p.display().to_string(), io::ErrorKind::InvalidData.into()))
                    }
                },
                Err(e) if last.is_none() || e.kind() != io::ErrorKind::NotFound => {
                    last = Some((p.display().to_string(), e))
                }
                Err(_) => {}
            }
        }
        Err(last.expect("at least one directory tried"))
    };
    let first = match read() {
        Ok(id) => return Ok(id),
        Err(e) => e,
    };
    let root = rustix::process::geteuid().is_root();
    if first.1.kind() == io::ErrorKind::NotFound && root && mount_tracefs().is_ok() {
        if let Ok(id) = read() {
            return Ok(id);
        }
    }
    let name = event.replacen('/', ":", 1);
    let mounted = Path::new(TRACEFS_DIRS[0]).join("events").is_dir();
    Err(match first.1.kind() {
        io::ErrorKind::NotFound if mounted => format!(
            "tracepoint {name} not found under {}/events: this kernel does not have it",
            TRACEFS_DIRS[0]
        ),
        io::ErrorKind::NotFound => format!(
            "tracepoint {name} not found: tracefs is not mounted at {} \
             (as root: mount -t tracefs nodev /sys/kernel/tracing)",
            TRACEFS_DIRS[0]
        ),
        io::ErrorKind::PermissionDenied => format!(
            "cannot read {} (permission denied): the tracepoint id needs root or read access to tracefs",
            first.0
        ),
        _ => format!("cannot read {}: {}", first.0, first.1),
    })
}

fn mount_tracefs() -> io::Result<()> {
    use rustix::mount::{mount, MountFlags};
    Ok(mount(
        "nodev",
        TRACEFS_DIRS[0],
        "tracefs",
        MountFlags::empty(),
        None,
    )?)
}

/// Which tasks a counter covers.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Scope {
    /// The calling thread (and threads it creates later).
    ThisThread,
    /// Every current task of a process (one counter each), and threads they create later.
    Process(u32),
}

/// Counters of one tracepoint over the tasks of a [`Scope`]: one perf event per task listed
/// at opening, each with `inherit` (threads created later count into it), enabled at once.
pub(crate) struct TraceCounter {
    fds: Vec<OwnedFd>,
}

impl TraceCounter {
    /// Opens and enables a counter of tracepoint `id` (`name` only words a refusal).
    pub(crate) fn open(id: u64, name: &str, scope: Scope) -> Result<TraceCounter, String> {
        let tids: Vec<i32> = match scope {
            Scope::ThisThread => vec![0],
            Scope::Process(pid) => {
                let dir = format!("/proc/{pid}/task");
                let mut t: Vec<i32> = fs::read_dir(&dir)
                    .map_err(|e| format!("cannot list {dir}: {e}"))?
                    .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect();
                t.sort_unstable();
                t
            }
        };
        let mut fds = Vec::with_capacity(tids.len());
        for tid in tids {
            match open_one(id, tid) {
                Ok(fd) => fds.push(fd),
                // A task that exited between the listing and the open (an io-wq worker, a
                // connection thread) has nothing left to count; the process itself must exist.
                Err(e)
                    if e.raw_os_error() == Some(libc::ESRCH)
                        && matches!(scope, Scope::Process(p) if p as i32 != tid) => {}
                Err(e) => return Err(refusal(&e, name)),
            }
        }
        for fd in &fds {
            // raw: rustix has no perf ioctls (and its generic `ioctl` is as unsafe).
            // SAFETY: fd is an open perf event fd; ENABLE takes no argument.
            unsafe { libc::ioctl(fd.as_raw_fd(), PERF_EVENT_IOC_ENABLE, 0) };
        }
        Ok(TraceCounter { fds })
    }

    /// Events counted so far (all covered tasks).
    pub(crate) fn read(&self) -> u64 {
        self.fds
            .iter()
            .map(|fd| {
                let mut v = [0u8; 8];
                match rustix::io::read(fd, &mut v) {
                    Ok(8) => u64::from_ne_bytes(v),
                    _ => 0,
                }
            })
            .sum()
    }
}

impl Drop for TraceCounter {
    fn drop(&mut self) {
        for fd in &self.fds {
            // raw: as at ENABLE.
            // SAFETY: fd is an open perf event fd.
            unsafe { libc::ioctl(fd.as_raw_fd(), PERF_EVENT_IOC_DISABLE, 0) };
        }
    }
}

/// A running syscall counter. Readings are totals since it was opened.
pub(crate) struct SyscallCounter {
    counter: TraceCounter,
    /// Syscalls a start/stop pair counts by itself (the `read` of the second reading),
    /// measured when the counter is opened and subtracted from every window.
    window_overhead: u64,
}

impl SyscallCounter {
    /// Opens and enables the counter, or says why it cannot.
    pub(crate) fn open(scope: Scope) -> Result<SyscallCounter, String> {
        let id = tracepoint_id()?;
        let mut c = SyscallCounter {
            counter: TraceCounter::open(id, "raw_syscalls:sys_enter", scope)?,
            window_overhead: 0,
        };
        if matches!(scope, Scope::ThisThread) {
            // Calibrate: an empty window, several times; keep the smallest.
            c.window_overhead = (0..5)
                .map(|_| {
                    let a = c.read();
                    c.read().saturating_sub(a)
                })
                .min()
                .unwrap_or(0);
        }
        Ok(c)
    }

    /// Total syscalls counted so far (all covered tasks).
    pub(crate) fn read(&self) -> u64 {
        self.counter.read()
    }

    /// Syscalls between two readings, less the counter's own cost (measured at open).
    pub(crate) fn window(&self, start: u64, end: u64) -> u64 {
        end.saturating_sub(start)
            .saturating_sub(self.window_overhead)
    }

    /// The syscalls one start/stop pair adds by itself, as measured.
    pub(crate) fn window_overhead(&self) -> u64 {
        self.window_overhead
    }
}

fn open_one(id: u64, tid: i32) -> io::Result<OwnedFd> {
    let attr = PerfEventAttrV0 {
        kind: PERF_TYPE_TRACEPOINT,
        size: PERF_ATTR_SIZE_VER0,
        config: id,
        flags: ATTR_DISABLED | ATTR_INHERIT,
        ..Default::default()
    };
    // raw: rustix has no perf_event_open.
    // SAFETY: attr is a valid, initialised perf_event_attr of the size it declares.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttrV0,
            tid,
            -1i32,
            -1i32,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a fresh fd that we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

fn refusal(e: &io::Error, name: &str) -> String {
    let paranoid = fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "perf_event_open refused ({e}): kernel.perf_event_paranoid={paranoid}; \
             needs CAP_PERFMON, root, or a lower perf_event_paranoid (or a seccomp filter blocks it)"
        ),
        Some(libc::ENOSYS) => {
            format!("perf_event_open not supported ({e}): kernel without perf events, or seccomp")
        }
        Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::EOPNOTSUPP) => {
            format!("{name} tracepoint cannot be counted here ({e})")
        }
        Some(libc::ESRCH) => format!("the measured process has gone ({e})"),
        _ => format!("perf_event_open failed: {e}"),
    }
}

/// Whether a counter on this thread can be opened, and why not.
pub(crate) fn availability() -> Availability {
    match SyscallCounter::open(Scope::ThisThread) {
        Ok(_) => Availability::Ready,
        Err(r) => Availability::Unavailable(r),
    }
}
