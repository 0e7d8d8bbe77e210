//! Shutdown on a signal, owned in one place: the stop flag every loop polls, the signals that
//! set it, and the cleanup a second signal does (remove the storage work directory, stop a
//! running fio child). A leaf: the runner, the workloads and the cross-checks read it, and it
//! reads none of them.
//!
//! Ctrl-C stops after the repetition in progress and keeps every finished case
//! (`"finished": false`); a second Ctrl-C stops at once, keeping what was saved. SIGTERM,
//! SIGHUP (the terminal closed, the ssh session dropped) and SIGQUIT do the same; after a
//! SIGHUP stdout and stderr are pointed at /dev/null first, since the terminal they wrote to is
//! gone and a write there would fail.
//!
//! The signals are received by `signal-hook` on a thread of their own ("signals"), and
//! everything they cause runs there, on a normal thread: no work in a signal handler.

use signal_hook::iterator::Signals;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

static STOP: AtomicBool = AtomicBool::new(false);

/// Signals received so far.
static SIGNALS: AtomicU32 = AtomicU32::new(0);

/// /dev/null, opened when the handlers are installed, for stdout and stderr after a SIGHUP
/// (unset: could not be opened).
static DEV_NULL: OnceLock<OwnedFd> = OnceLock::new();

/// The signals that stop a run (or a load) cleanly: a first one stops after the work in
/// progress, a second at once.
pub(crate) const STOP_SIGNALS: [libc::c_int; 4] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Points stdout and stderr at /dev/null (the terminal is gone: a write to it fails, and a
/// failed print would end the run before it saves).
pub(crate) fn detach_output() {
    if let Some(null) = DEV_NULL.get() {
        let _ = rustix::stdio::dup2_stdout(null);
        let _ = rustix::stdio::dup2_stderr(null);
    }
}

/// Opens /dev/null for [`detach_output`] (once), before it may be needed.
pub(crate) fn prepare_detach() {
    if DEV_NULL.get().is_some() {
        return;
    }
    if let Ok(f) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        // Another thread's set first: this one is closed as it drops.
        let _ = DEV_NULL.set(OwnedFd::from(f));
    }
}

/// How long the abort's work (saying what was kept, rendering the report) may take before the
/// process exits anyway.
pub(crate) const ABORT_WITHIN: Duration = Duration::from_secs(10);

/// What a second signal does before the process exits 130 (say what was kept and where, render
/// the report), bounded by [`ABORT_WITHIN`].
pub(crate) type OnAbort = Box<dyn FnOnce() + Send>;

/// Makes SIGINT, SIGTERM, SIGHUP and SIGQUIT ([`STOP_SIGNALS`]) request a clean stop instead
/// of killing the process (installed explicitly: a background job of a non-interactive shell
/// starts with SIGINT ignored). A SIGHUP first points the output at /dev/null. A second signal
/// (any of them) ends the process without waiting for the work in progress: the storage work
/// directory is removed, `on_abort` runs (at most [`ABORT_WITHIN`]), and the process exits
/// 130; without `on_abort`, at once. A third ends it at once. Returns the stop flag.
pub(crate) fn install_stop_handler(on_abort: Option<OnAbort>) -> &'static AtomicBool {
    prepare_detach();
    match Signals::new(STOP_SIGNALS) {
        Ok(mut signals) => {
            let spawned = std::thread::Builder::new()
                .name("signals".into())
                .spawn(move || {
                    let mut on_abort = on_abort;
                    for sig in signals.forever() {
                        on_signal(sig, &mut on_abort);
                    }
                });
            if let Err(e) = spawned {
                eprintln!("ringside: no signal thread ({e}): a signal ends the process at once");
            }
        }
        Err(e) => {
            eprintln!("ringside: signals not handled ({e}): a signal ends the process at once")
        }
    }
    &STOP
}

/// One signal, on the signal thread: see [`install_stop_handler`].
fn on_signal(sig: libc::c_int, on_abort: &mut Option<OnAbort>) {
    if sig == libc::SIGHUP {
        detach_output();
    }
    STOP.store(true, Ordering::SeqCst);
    stop_child();
    match SIGNALS.fetch_add(1, Ordering::SeqCst) {
        0 => {}
        1 => {
            remove_work_dir_now();
            let Some(f) = on_abort.take() else {
                std::process::exit(130);
            };
            // On a thread of its own, so that a third signal still ends the process at once.
            let spawned = std::thread::Builder::new()
                .name("abort".into())
                .spawn(move || abort(f));
            if spawned.is_err() {
                std::process::exit(130);
            }
        }
        _ => {
            remove_work_dir_now();
            // raw: rustix's exit_group is only in its `runtime` API (for libc-less programs).
            // SAFETY: _exit ends the process without running anything else: the third signal
            // must not wait for a report or a lock.
            unsafe { libc::_exit(130) };
        }
    }
}

/// The second signal's work: `f`, bounded by [`ABORT_WITHIN`], then exit 130.
fn abort(f: OnAbort) {
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
pub(crate) fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// True once a second signal came: the process is about to exit; save nothing more.
pub(crate) fn aborting() -> bool {
    SIGNALS.load(Ordering::SeqCst) >= 2
}

/// The run's work directory (the storage suite's), removed by a second signal.
static WORK_DIR: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Removes the run's work directory and everything in it, if there is one.
pub(crate) fn remove_work_dir_now() {
    let dir = WORK_DIR.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(d) = dir {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// The running cross-check child's pid (0: none: fio), for a signal to stop it.
static CHILD: AtomicI32 = AtomicI32::new(0);

/// Sends SIGTERM to the running cross-check child (a fio job), if any.
pub(crate) fn stop_child() {
    // The pid is our own child's (it may have exited and not been reaped yet, which keeps
    // the pid ours).
    let pid = CHILD.load(Ordering::SeqCst);
    if let Some(pid) = (pid > 0)
        .then(|| rustix::process::Pid::from_raw(pid))
        .flatten()
    {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
}

/// Publishes the run's work directory for [`remove_work_dir_now`].
pub(crate) fn set_work_dir(dir: PathBuf) {
    *WORK_DIR.lock().unwrap_or_else(|e| e.into_inner()) = Some(dir);
}

/// The run's work directory is gone (or was never made): nothing for a signal to remove.
pub(crate) fn clear_work_dir() {
    *WORK_DIR.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// Records the running cross-check child, for a signal to stop it.
pub(crate) fn watch_child(pid: i32) {
    CHILD.store(pid, Ordering::SeqCst);
}

/// The cross-check child has exited (and was reaped).
pub(crate) fn forget_child() {
    CHILD.store(0, Ordering::SeqCst);
}
