//! Shutdown on a signal, owned in one place: the stop flag every loop polls, the SIGINT/SIGTERM
//! handlers, and the async-signal-safe cleanup a handler does itself (remove the storage work
//! directory, stop a running fio child). A leaf: the runner, the workloads and the cross-checks
//! read it, and it reads none of them.
//!
//! Ctrl-C stops after the repetition in progress and keeps every finished case
//! (`"finished": false`); a second Ctrl-C stops at once, keeping what was saved. SIGTERM,
//! SIGHUP (the terminal closed, the ssh session dropped) and SIGQUIT do the same; after a
//! SIGHUP stdout and stderr are pointed at /dev/null first, since the terminal they wrote to is
//! gone and a write there would fail.

use std::ffi::CString;
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, Ordering};
use std::time::Duration;

static STOP: AtomicBool = AtomicBool::new(false);

/// Signals (SIGINT/SIGTERM) received so far.
static SIGNALS: AtomicU32 = AtomicU32::new(0);

/// Write end of the pipe that wakes the abort thread (-1: none).
static ABORT_FD: AtomicI32 = AtomicI32::new(-1);

/// /dev/null, opened when the handlers are installed, for stdout and stderr after a SIGHUP
/// (-1: could not be opened).
static DEV_NULL: AtomicI32 = AtomicI32::new(-1);

/// The signals that stop a run (or a load) cleanly: a first one stops after the work in
/// progress, a second at once.
pub const STOP_SIGNALS: [libc::c_int; 4] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// SIGHUP: the terminal is gone. Points stdout and stderr at /dev/null (a write to a hung-up
/// terminal fails, and a failed print would end the run before it saves), then stops like
/// SIGINT. Async-signal-safe: dup2 and what `on_sigint` calls.
extern "C" fn on_sighup(sig: libc::c_int) {
    detach_output();
    on_sigint(sig);
}

/// Points stdout and stderr at /dev/null (async-signal-safe: dup2 of a descriptor opened
/// beforehand).
pub fn detach_output() {
    let null = DEV_NULL.load(Ordering::SeqCst);
    if null >= 0 {
        // SAFETY: dup2 of a descriptor we own onto 1 and 2: async-signal-safe.
        unsafe {
            libc::dup2(null, 1);
            libc::dup2(null, 2);
        }
    }
}

/// Opens /dev/null for [`detach_output`] (once).
pub fn prepare_detach() {
    if DEV_NULL.load(Ordering::SeqCst) >= 0 {
        return;
    }
    if let Ok(f) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let fd = OwnedFd::from(f).into_raw_fd();
        if DEV_NULL
            .compare_exchange(-1, fd, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            // SAFETY: our own descriptor, not stored anywhere.
            unsafe { libc::close(fd) };
        }
    }
}

/// How long the abort thread's work (saying what was kept, rendering the report) may take
/// before the process exits anyway.
pub const ABORT_WITHIN: Duration = Duration::from_secs(10);

/// First signal: request a clean stop (and end a running fio job, which may have been sent the
/// signal only through us). Second: remove the storage work directory and wake the abort
/// thread, which says what was kept, renders the report and exits 130; the run's own thread
/// saves nothing more. Third (or a second with no abort thread): exit now. Async-signal-safe
/// calls only.
extern "C" fn on_sigint(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
    stop_child();
    let n = SIGNALS.fetch_add(1, Ordering::SeqCst);
    if n == 0 {
        return;
    }
    remove_work_dir_now();
    let fd = ABORT_FD.load(Ordering::SeqCst);
    if n == 1 && fd >= 0 {
        let b = 1u8;
        // SAFETY: write(2) of one byte from the stack to our pipe: async-signal-safe.
        if unsafe { libc::write(fd, (&b as *const u8).cast(), 1) } == 1 {
            return;
        }
    }
    // SAFETY: _exit is async-signal-safe; 130 = interrupted, as on a clean stop.
    unsafe { libc::_exit(130) };
}

/// What the abort thread does on a second signal before the process exits 130 (say what was
/// kept and where, render the report), bounded by [`ABORT_WITHIN`].
pub type OnAbort = Box<dyn FnOnce() + Send>;

/// Makes SIGINT, SIGTERM, SIGHUP and SIGQUIT ([`STOP_SIGNALS`]) request a clean stop instead
/// of killing the process. A second signal (any of them) ends it without waiting for the
/// repetition in progress: the storage work directory is removed, `on_abort` runs on a thread
/// of its own, and the process exits 130. A third ends it at once.
pub fn install_stop_handler(on_abort: Option<OnAbort>) {
    if let Some(f) = on_abort {
        if let Ok((r, w)) = crate::child::pipe_cloexec() {
            let spawned = std::thread::Builder::new()
                .name("abort".into())
                .spawn(move || abort_thread(r, f));
            if spawned.is_ok() {
                ABORT_FD.store(w.into_raw_fd(), Ordering::SeqCst);
            }
        }
    }
    prepare_detach();
    // SAFETY: the handlers make only async-signal-safe calls (atomics, kill, write, dup2, the
    // raw syscalls of `remove_work_dir_now`, _exit).
    unsafe {
        for sig in STOP_SIGNALS {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = if sig == libc::SIGHUP {
                on_sighup as *const () as usize
            } else {
                on_sigint as *const () as usize
            };
            sa.sa_flags = 0;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

fn abort_thread(wake: OwnedFd, f: OnAbort) {
    let mut b = 0u8;
    loop {
        // SAFETY: read(2) of one byte into a stack variable from our pipe.
        let n = unsafe { libc::read(wake.as_raw_fd(), (&mut b as *mut u8).cast(), 1) };
        if n == 1 {
            break;
        }
        if n == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return;
        }
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let _ = std::thread::Builder::new()
        .name("abort-report".into())
        .spawn(move || {
            f();
            let _ = tx.send(());
        });
    let _ = rx.recv_timeout(ABORT_WITHIN);
    remove_work_dir_now();
    std::process::exit(130);
}

/// True once Ctrl-C was pressed.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// True once a second signal came: the process is about to exit; save nothing more.
pub fn aborting() -> bool {
    SIGNALS.load(Ordering::SeqCst) >= 2
}

/// The work directory of the run as a NUL-terminated path (leaked: a signal handler may read
/// it at any moment, so it is never freed), or null when there is none.
static WORK_DIR: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

/// Removes the run's work directory and the files in it (it holds no subdirectories) with
/// raw syscalls only — open, getdents64, unlinkat, rmdir — so that a signal handler may call
/// it: a second Ctrl-C ends the process at once, and must not leave test files behind.
pub fn remove_work_dir_now() {
    let dir = WORK_DIR.load(Ordering::SeqCst);
    if dir.is_null() {
        return;
    }
    // SAFETY: `dir` is a leaked NUL-terminated string, never freed. Only async-signal-safe
    // syscalls follow; the buffer is on the stack, and every dirent read from it lies within
    // the length getdents64 returned.
    unsafe {
        let fd = libc::open(dir, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC);
        if fd >= 0 {
            let mut buf = [0u8; 4096];
            // Unlinking while reading may make getdents skip entries: read again from the
            // start until a pass finds nothing to remove (bounded).
            for _ in 0..64 {
                libc::lseek(fd, 0, libc::SEEK_SET);
                let mut removed = 0;
                loop {
                    let n = libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len());
                    if n <= 0 {
                        break;
                    }
                    let mut off = 0usize;
                    while off < n as usize {
                        let d = buf.as_ptr().add(off);
                        // struct linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name.
                        let reclen = u16::from_ne_bytes([*d.add(16), *d.add(17)]) as usize;
                        let name = d.add(19) as *const libc::c_char;
                        let dot = *name == b'.' as libc::c_char
                            && (*name.add(1) == 0
                                || (*name.add(1) == b'.' as libc::c_char && *name.add(2) == 0));
                        if !dot && libc::unlinkat(fd, name, 0) == 0 {
                            removed += 1;
                        }
                        if reclen == 0 {
                            break;
                        }
                        off += reclen;
                    }
                }
                if removed == 0 {
                    break;
                }
            }
            libc::close(fd);
        }
        libc::rmdir(dir);
    }
}

/// The running cross-check child's pid (0: none: fio), for the signal handler to stop it.
static CHILD: AtomicI32 = AtomicI32::new(0);

/// Sends SIGTERM to the running cross-check child (a fio job), if any (async-signal-safe: an atomic load and kill).
pub fn stop_child() {
    let pid = CHILD.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe; the pid is our own child's (it may have exited
        // and not been reaped yet, which keeps the pid ours).
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
}

/// Publishes the run's work directory for [`remove_work_dir_now`] (the string is leaked: a
/// signal handler may read it at any moment).
pub fn set_work_dir(dir: CString) {
    WORK_DIR.store(dir.into_raw(), Ordering::SeqCst);
}

/// The run's work directory is gone (or was never made): nothing for a handler to remove.
pub fn clear_work_dir() {
    WORK_DIR.store(std::ptr::null_mut(), Ordering::SeqCst);
}

/// Records the running cross-check child, for a signal to stop it.
pub fn watch_child(pid: i32) {
    CHILD.store(pid, Ordering::SeqCst);
}

/// The cross-check child has exited (and was reaped).
pub fn forget_child() {
    CHILD.store(0, Ordering::SeqCst);
}
