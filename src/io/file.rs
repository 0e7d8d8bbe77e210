//! What every file engine shares: the ops (fio-style: a blocking engine is an async engine
//! whose submissions complete at once), the completions, page-aligned I/O buffers that
//! O_DIRECT and registered buffers can use, and the table of files an engine works on.
//!
//! raw: the ops stay libc. Their fds live in an atomic table shared with pool workers (a
//! closed slot, -1, must fail as the kernel fails it), so rustix would need an unsafe
//! `BorrowedFd::borrow_raw` per call, and its open adds O_LARGEFILE to the measured flags.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ffi::CString;
use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

/// Alignment of every I/O buffer, bytes: O_DIRECT needs the logical block size; a page covers
/// every device here.
pub(crate) const BUF_ALIGN: usize = 4096;

/// What an op does. `file` is an index into the engine's file table (`FileConfig::paths`),
/// `buf` an index into its buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// Open (create) `paths[file]` with the config's flags. io_uring: into a direct
    /// descriptor (registered slot `file`), so that a linked write or read can use it.
    Open,
    Read {
        buf: u32,
        offset: u64,
        len: u32,
    },
    Write {
        buf: u32,
        offset: u64,
        len: u32,
    },
    /// fsync(2): data and metadata.
    Fsync,
    Close,
}

/// One op handed to `FileEngine::submit`.
#[derive(Clone, Copy, Debug)]
pub struct FileOp {
    pub kind: OpKind,
    pub file: u32,
    /// Returned with the completion.
    pub user: u64,
    /// Linked to the next op (IOSQE_IO_LINK): it starts only after this one succeeded, and is
    /// cancelled (-ECANCELED) if this one fails. Blocking engines run a chain in order.
    pub link: bool,
}

/// A finished op: `res` is the syscall's result (bytes, 0, or a fd), or `-errno`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    pub user: u64,
    pub res: i64,
}

impl Done {
    /// The op's result as `io::Result` (short transfers are checked by the caller).
    pub(crate) fn result(&self) -> io::Result<u64> {
        if self.res < 0 {
            Err(io::Error::from_raw_os_error(-self.res as i32))
        } else {
            Ok(self.res as u64)
        }
    }
}

/// What an engine is built for.
#[derive(Clone, Debug)]
pub struct FileConfig {
    /// File table: slot i is `paths[i]`.
    pub paths: Vec<CString>,
    /// open(2) flags for every file (O_RDWR|O_CREAT, maybe O_DIRECT).
    pub open_flags: i32,
    /// I/O buffers, each `buf_len` bytes, page-aligned.
    pub bufs: usize,
    pub buf_len: usize,
    /// Most ops in flight at once (SQ size for io_uring, worker threads for a pool).
    pub depth: usize,
}

impl FileConfig {
    /// What these files ask of a polled ring: O_DIRECT reads and writes, or I/O through the
    /// page cache (the workloads that fsync or open files as ops ask `ModelSpec::runs` for
    /// theirs when they accept a model).
    pub(crate) fn file_io(&self) -> crate::model::FileIo {
        match self.open_flags & libc::O_DIRECT {
            0 => crate::model::FileIo::Buffered,
            _ => crate::model::FileIo::Direct,
        }
    }
}

/// Page-aligned buffers owned by an engine. Ops in flight name them by index; the caller
/// touches a buffer only while no op that uses it is in flight.
pub struct Buffers {
    ptr: *mut u8,
    count: usize,
    len: usize,
}

// SAFETY: the buffers are plain memory; who may touch which buffer when is the engine
// contract above (a buffer belongs to at most one op in flight, and the caller waits for it).
unsafe impl Send for Buffers {}
// SAFETY: as above; concurrent workers touch disjoint buffers.
unsafe impl Sync for Buffers {}

impl Buffers {
    pub(crate) fn new(count: usize, len: usize) -> io::Result<Buffers> {
        let len = len.max(1).next_multiple_of(BUF_ALIGN);
        let layout = Layout::from_size_align(count.max(1) * len, BUF_ALIGN)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        // SAFETY: the layout has non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(io::Error::from(io::ErrorKind::OutOfMemory));
        }
        // Fault every page in now: a large zeroed allocation is untouched mmap memory, and
        // io_uring's non-blocking first attempt cannot take the page fault a read into it
        // needs, so it would punt the op to an io-wq worker — a cost of cold buffers, not of
        // the model. Every engine gets warm buffers.
        for off in (0..count.max(1) * len).step_by(4096) {
            // SAFETY: in bounds of the allocation; a volatile write keeps the touch.
            unsafe { ptr.add(off).write_volatile(0) };
        }
        Ok(Buffers { ptr, count, len })
    }
    /// Bytes per buffer (rounded up to `BUF_ALIGN`).
    pub(crate) fn len(&self) -> usize {
        self.len
    }
    /// Start of buffer `i`; panics when out of range (a programming error).
    pub(crate) fn ptr(&self, i: u32) -> *mut u8 {
        assert!((i as usize) < self.count, "buffer {i} of {}", self.count);
        // SAFETY: in bounds of the allocation (checked above).
        unsafe { self.ptr.add(i as usize * self.len) }
    }
    /// Buffer `i` as a mutable slice; panics when out of range.
    ///
    /// # Safety
    ///
    /// For as long as the slice lives, nothing else touches buffer `i`: no op that uses it is
    /// in flight (submitted and not yet reaped: the kernel or a pool worker reads or writes it
    /// then), and no other slice of buffer `i` from this method is alive. (The buffers are
    /// shared with the kernel and with worker threads, which the borrow checker cannot see;
    /// the caller knows from its own submit/reap bookkeeping which buffers are idle.)
    ///
    /// Safe code cannot call it (two live `&mut` of one buffer, or one the kernel writes to,
    /// would be undefined behaviour):
    ///
    /// ```compile_fail,E0133
    /// let bufs = ringside::io::file::Buffers::new(1, 4096).unwrap();
    /// bufs.slice(0)[0] = 1;
    /// ```
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slice(&self, i: u32) -> &mut [u8] {
        // SAFETY: in bounds (ptr checks `i`, each buffer is `len` bytes); exclusive for the
        // slice's life by the caller's contract above.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(i), self.len) }
    }
    /// iovecs for io_uring buffer registration.
    pub(crate) fn iovecs(&self) -> Vec<libc::iovec> {
        (0..self.count as u32)
            .map(|i| libc::iovec {
                iov_base: self.ptr(i).cast(),
                iov_len: self.len,
            })
            .collect()
    }
}

impl Buffers {
    /// Never frees the memory: for an owner that cannot prove no op still writes into it
    /// (an io_uring whose last completions could not be reaped). A leak, never a use after
    /// free.
    pub(crate) fn leak(self) {
        std::mem::forget(self);
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.count.max(1) * self.len, BUF_ALIGN)
            .expect("layout was valid at allocation");
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, layout) };
    }
}

/// The open files of a blocking engine: one fd per slot (-1 when closed), shared with pool
/// workers. Closed on drop.
pub(crate) struct FdTable {
    fds: Vec<AtomicI32>,
}

impl FdTable {
    pub(crate) fn new(n: usize) -> FdTable {
        FdTable {
            fds: (0..n).map(|_| AtomicI32::new(-1)).collect(),
        }
    }
    pub(crate) fn get(&self, i: u32) -> i32 {
        self.fds
            .get(i as usize)
            .map(|f| f.load(Ordering::Acquire))
            .unwrap_or(-1)
    }
    pub(crate) fn set(&self, i: u32, fd: i32) -> i32 {
        self.fds[i as usize].swap(fd, Ordering::AcqRel)
    }
}

impl Drop for FdTable {
    fn drop(&mut self) {
        for f in &self.fds {
            let fd = f.swap(-1, Ordering::AcqRel);
            if fd >= 0 {
                // SAFETY: the table owns every fd it holds.
                unsafe { libc::close(fd) };
            }
        }
    }
}

/// Performs one op with blocking syscalls in the calling thread; `-errno` on failure.
pub(crate) fn exec(op: &FileOp, cfg: &FileConfig, fds: &FdTable, bufs: &Buffers) -> i64 {
    let err = || {
        -(io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO) as i64)
    };
    let fd = fds.get(op.file);
    match op.kind {
        OpKind::Open => {
            let Some(path) = cfg.paths.get(op.file as usize) else {
                return -(libc::EBADF as i64);
            };
            // SAFETY: path is a NUL-terminated string that outlives the call.
            let r = unsafe { libc::open(path.as_ptr(), cfg.open_flags | libc::O_CLOEXEC, 0o644) };
            if r < 0 {
                return err();
            }
            let old = fds.set(op.file, r);
            if old >= 0 {
                // SAFETY: the slot owned the old fd.
                unsafe { libc::close(old) };
            }
            r as i64
        }
        OpKind::Read { buf, offset, len } => {
            let len = len.min(bufs.len() as u32) as usize;
            // SAFETY: the buffer is ours for this op and at least `len` bytes long.
            let r = unsafe { libc::pread(fd, bufs.ptr(buf).cast(), len, offset as i64) };
            if r < 0 {
                err()
            } else {
                r as i64
            }
        }
        OpKind::Write { buf, offset, len } => {
            let len = len.min(bufs.len() as u32) as usize;
            // SAFETY: as for Read.
            let r = unsafe { libc::pwrite(fd, bufs.ptr(buf).cast(), len, offset as i64) };
            if r < 0 {
                err()
            } else {
                r as i64
            }
        }
        OpKind::Fsync => {
            // SAFETY: fsync takes any fd.
            if unsafe { libc::fsync(fd) } < 0 {
                err()
            } else {
                0
            }
        }
        OpKind::Close => {
            let fd = fds.set(op.file, -1);
            // SAFETY: the slot owned the fd.
            if fd < 0 || unsafe { libc::close(fd) } < 0 {
                if fd < 0 {
                    -(libc::EBADF as i64)
                } else {
                    err()
                }
            } else {
                0
            }
        }
    }
}

/// Opens file slot `file` now, in the calling thread (setup for the blocking engines).
pub(crate) fn open_now(
    file: u32,
    cfg: &FileConfig,
    fds: &FdTable,
    bufs: &Buffers,
) -> io::Result<()> {
    let op = FileOp {
        kind: OpKind::Open,
        file,
        user: 0,
        link: false,
    };
    let mut r = 0;
    exec_all(&[op], cfg, fds, bufs, |d| r = d.res);
    Done { user: 0, res: r }.result().map(|_| ())
}

/// Runs a batch of ops in order, honouring links: after a failed linked op, the rest of its
/// chain completes with -ECANCELED, as io_uring does.
pub(crate) fn exec_all(
    ops: &[FileOp],
    cfg: &FileConfig,
    fds: &FdTable,
    bufs: &Buffers,
    mut out: impl FnMut(Done),
) {
    let mut broken = false;
    for op in ops {
        let res = if broken {
            -(libc::ECANCELED as i64)
        } else {
            exec(op, cfg, fds, bufs)
        };
        if res < 0 && op.link {
            broken = true;
        }
        if !op.link {
            broken = false;
        }
        out(Done { user: op.user, res });
    }
}
