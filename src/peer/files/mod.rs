//! The contenders' own file APIs as file engines (`io::FileEngine`), so `storage.page_cycle`
//! and `storage.small_files` run tokio and monoio beside blocking, threadpool and io_uring in
//! the one storage loop:
//! - `tokio`: `tokio::fs` on a current_thread runtime — every call is a job for tokio's
//!   blocking thread pool (`spawn_blocking`), because regular files are not pollable
//!   ([`tokio`]);
//! - `monoio`: monoio's io_uring file API (`monoio::fs::File`: openat, read/write at an
//!   offset, fsync and close are io_uring ops; [`monoio`]).
//!
//! Both run each linked chain of a batch (`FileOp::link`) as one task that awaits its ops in
//! order (a failed op cancels the rest of its chain with -ECANCELED, as IOSQE_IO_LINK does),
//! all of a batch's chains at once; `submit` queues the chains and `reap` runs the runtime
//! until every queued chain has finished. The code is what a user of each runtime writes —
//! no batching, linking or buffer registration of our own — so the rows measure the runtime.

#[cfg(feature = "peer-monoio")]
pub(crate) mod monoio;
#[cfg(feature = "peer-tokio")]
pub(crate) mod tokio;

use crate::error::CaseError;
use crate::io::file::{FileConfig, FileOp};
use crate::io::FileEngine;
use crate::measure::pin::CpuPlan;
use crate::model::shape::{EXTERNAL_FILES, TOKIO_MT_FILES};
use crate::model::PeerKind;

/// tokio's blocking pool is capped at the `threadpool` model's worker count, so the two rows
/// hand the same calls to equally many threads (tokio's default cap is 512).
pub(crate) const TOKIO_BLOCKING_THREADS: usize = 64;

/// The file engine of built-in contender `kind`: unavailable when it was not built in or its
/// runtime cannot start (monoio without io_uring), not applicable for `tokio-mt` (tokio's file
/// I/O is its blocking pool whatever the runtime's flavour: the `tokio` row measures it) and
/// external commands.
pub(crate) fn engine(
    kind: PeerKind,
    cfg: FileConfig,
    plan: &CpuPlan,
) -> Result<Box<dyn FileEngine>, CaseError> {
    if let crate::avail::Availability::Unavailable(why) = super::availability(kind) {
        return Err(CaseError::unavailable(why));
    }
    match kind {
        #[cfg(feature = "peer-tokio")]
        PeerKind::Tokio => Ok(Box::new(tokio::TokioFiles::new(cfg, plan)?)),
        #[cfg(feature = "peer-monoio")]
        PeerKind::Monoio => Ok(Box::new(monoio::MonoioFiles::new(cfg)?)),
        PeerKind::TokioMt => Err(CaseError::not_applicable(TOKIO_MT_FILES)),
        PeerKind::External => Err(CaseError::not_applicable(EXTERNAL_FILES)),
        #[allow(unreachable_patterns)]
        _ => {
            drop((cfg, plan));
            Err(CaseError::unavailable(
                "built without the contender's feature",
            ))
        }
    }
}

/// A batch's ops split into linked chains (each ends at an op without `link`; a trailing
/// unterminated chain is a chain too).
#[cfg_attr(
    not(any(feature = "peer-tokio", feature = "peer-monoio")),
    allow(dead_code)
)]
fn chains(ops: &[FileOp]) -> Vec<Vec<FileOp>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, op) in ops.iter().enumerate() {
        if !op.link {
            out.push(ops[start..=i].to_vec());
            start = i + 1;
        }
    }
    if start < ops.len() {
        out.push(ops[start..].to_vec());
    }
    out
}

/// The open(2) flags the contenders' `OpenOptions` express: access mode, O_CREAT, O_TRUNC
/// (O_CLOEXEC is always set by both). Anything else (O_DIRECT...) is refused with EINVAL: the
/// workloads that take contenders never ask for it.
#[cfg_attr(
    not(any(feature = "peer-tokio", feature = "peer-monoio")),
    allow(dead_code)
)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Open {
    read: bool,
    write: bool,
    create: bool,
    truncate: bool,
}

#[cfg_attr(
    not(any(feature = "peer-tokio", feature = "peer-monoio")),
    allow(dead_code)
)]
impl Open {
    fn from_flags(flags: i32) -> Result<Open, i64> {
        let known = libc::O_ACCMODE | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC;
        if flags & !known != 0 {
            return Err(-(libc::EINVAL as i64));
        }
        let acc = flags & libc::O_ACCMODE;
        Ok(Open {
            read: acc == libc::O_RDONLY || acc == libc::O_RDWR,
            write: acc == libc::O_WRONLY || acc == libc::O_RDWR,
            create: flags & libc::O_CREAT != 0,
            truncate: flags & libc::O_TRUNC != 0,
        })
    }

    /// The same file opened once more for another concurrent user (tokio): never truncated.
    fn again(self) -> Open {
        Open {
            truncate: false,
            ..self
        }
    }
}

/// `-errno` of an error (EIO when it carries none).
#[cfg_attr(
    not(any(feature = "peer-tokio", feature = "peer-monoio")),
    allow(dead_code)
)]
fn neg_errno(e: &std::io::Error) -> i64 {
    -(e.raw_os_error().unwrap_or(libc::EIO) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::file::OpKind;

    fn op(user: u64, link: bool) -> FileOp {
        FileOp {
            kind: OpKind::Fsync,
            file: 0,
            user,
            link,
        }
    }

    #[test]
    fn a_batch_splits_into_its_linked_chains() {
        let ops = [op(0, true), op(1, false), op(2, false), op(3, true)];
        let c = chains(&ops);
        let users: Vec<Vec<u64>> = c
            .iter()
            .map(|c| c.iter().map(|o| o.user).collect())
            .collect();
        assert_eq!(users, vec![vec![0, 1], vec![2], vec![3]]);
    }

    #[test]
    fn open_flags_map_to_options_and_the_rest_is_refused() {
        let o = Open::from_flags(libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC).unwrap();
        assert_eq!(
            o,
            Open {
                read: false,
                write: true,
                create: true,
                truncate: true
            }
        );
        assert!(!o.again().truncate);
        let r = Open::from_flags(libc::O_RDWR).unwrap();
        assert!(r.read && r.write && !r.create);
        assert_eq!(
            Open::from_flags(libc::O_RDONLY | libc::O_DIRECT),
            Err(-(libc::EINVAL as i64))
        );
    }
}
