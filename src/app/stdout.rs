//! The one way subcommands write to stdout. A closed stdout (`ringside list | head -1`: the
//! reader is gone, every write fails with EPIPE) is not an error of the command: printing stops
//! quietly and the command goes on (`run` keeps measuring and writing its files, `compare`
//! keeps its exit code). Rust ignores SIGPIPE, so without this a write returns EPIPE and
//! `println!` panics (exit 101).

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `bytes` to stdout and flushes. Once the reader has gone (EPIPE), this and every later
/// call write nothing and return `Ok`; any other error is returned.
pub(crate) fn write(bytes: &[u8]) -> io::Result<()> {
    if CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut out = io::stdout().lock();
    match out.write_all(bytes).and_then(|_| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
            CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        r => r,
    }
}

/// `write` for text.
pub(crate) fn print(text: &str) -> io::Result<()> {
    write(text.as_bytes())
}

/// Whether `e` (anywhere in its chain) is a closed pipe: what `main` treats as a quiet end for
/// a write that did not go through [`write`].
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}
