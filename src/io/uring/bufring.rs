//! A provided-buffer ring (kernel 5.19): `entries` buffers of `buf_len` bytes the kernel picks
//! from for receives with IOSQE_BUFFER_SELECT, on top of the io-uring crate's
//! `Submitter::register_buf_ring_with_flags` and `types::BufRingEntry`.
//!
//! The entry ring is page-aligned anonymous memory shared with the kernel; the buffers are one
//! heap block the kernel writes into, held as a raw pointer (never a `Box` or a slice the
//! kernel could write under). A buffer id the kernel hands out is the application's until it
//! is pushed back with `push` and published with `commit` (one tail store for a batch): only
//! then may it be read ([`BufRing::buf`], `unsafe` for that reason). Dropped while still
//! registered, the ring and the buffers are leaked, never freed under the kernel.

use io_uring::types::BufRingEntry;
use io_uring::Submitter;
use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

/// A registered buffer ring. [`BufRing::unregister`] it before dropping it: dropped while
/// registered, its memory is leaked (the kernel may write to its buffers until then).
pub(crate) struct BufRing {
    ring: *mut BufRingEntry,
    ring_bytes: usize,
    entries: u16,
    tail: u16,
    /// `entries * buf_len` bytes from `Box::into_raw`: freed in `Drop` once unregistered.
    bufs: *mut u8,
    buf_len: usize,
    bgid: u16,
    registered: bool,
}

// SAFETY: the raw pointer is to memory this value owns; it is used from one thread at a time.
unsafe impl Send for BufRing {}

impl BufRing {
    /// Maps, registers and fills a ring of `entries` (a power of two, at most 32768) buffers,
    /// registered with `flags` (IOU_PBUF_RING_INC: buffers consumed piecewise).
    pub(crate) fn with_flags(
        sub: &Submitter<'_>,
        bgid: u16,
        entries: u16,
        buf_len: usize,
        flags: u16,
    ) -> io::Result<BufRing> {
        if !entries.is_power_of_two()
            || entries > 32768
            || buf_len == 0
            || buf_len > u32::MAX as usize
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "buffer ring: entries must be a power of two <= 32768, buffers 1..4 GiB",
            ));
        }
        let ring_bytes = entries as usize * std::mem::size_of::<BufRingEntry>();
        // SAFETY: anonymous private mapping; the result is checked against MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut br = BufRing {
            ring: p.cast(),
            ring_bytes,
            entries,
            tail: 0,
            bufs: Box::into_raw(vec![0u8; entries as usize * buf_len].into_boxed_slice()).cast(),
            buf_len,
            bgid,
            registered: false,
        };
        // SAFETY: the ring memory is page-aligned (mmap), holds `entries` entries and lives
        // until `self` drops, which the owner does only after unregistering.
        unsafe { sub.register_buf_ring_with_flags(p as u64, entries, bgid, flags)? };
        br.registered = true;
        for bid in 0..entries {
            br.push(bid);
        }
        br.commit();
        Ok(br)
    }

    pub(crate) fn bgid(&self) -> u16 {
        self.bgid
    }

    pub(crate) fn buf_len(&self) -> usize {
        self.buf_len
    }

    pub(crate) fn entries(&self) -> u16 {
        self.entries
    }

    /// Start of buffer `bid`; panics past the ring (a programming error).
    pub(crate) fn ptr(&self, bid: u16) -> *mut u8 {
        assert!(bid < self.entries, "buffer {bid} of {}", self.entries);
        // SAFETY: in bounds of the buffers' allocation (checked above).
        unsafe { self.bufs.add(bid as usize * self.buf_len) }
    }

    /// The first `len` bytes of buffer `bid` (the kernel wrote them; the CQE said how many),
    /// at most the buffer.
    ///
    /// # Safety
    ///
    /// The kernel handed `bid` out (a CQE named it) and it has not been pushed back since, so
    /// the kernel does not write these bytes while the slice lives. (An incremental buffer
    /// the kernel keeps is written past the bytes its CQEs reported, never within them.)
    pub(crate) unsafe fn buf(&self, bid: u16, len: usize) -> &[u8] {
        // SAFETY: `ptr` checked the range start; `len` is capped to the buffer; the caller
        // vouches that the kernel does not write these bytes meanwhile.
        unsafe { std::slice::from_raw_parts(self.ptr(bid), len.min(self.buf_len)) }
    }

    /// Buffer `bid`, writable: tests stand in for the kernel's writes.
    ///
    /// # Safety
    ///
    /// No receive that could select a buffer is in flight.
    #[cfg(test)]
    pub(crate) unsafe fn buf_mut(&mut self, bid: u16) -> &mut [u8] {
        // SAFETY: in range (`ptr`), and the caller vouches the kernel is not writing.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(bid), self.buf_len) }
    }

    /// The buffer id in ring slot `pos` (masked): which buffer the kernel takes at that
    /// position of its head (bundles read the buffers a completion spanned from here).
    pub(crate) fn bid_at(&self, pos: u16) -> u16 {
        let mask = self.entries - 1;
        // SAFETY: the index is masked into the ring, which holds `entries` entries.
        unsafe { (*self.ring.add((pos & mask) as usize)).bid() }
    }

    /// Gives buffer `bid` back (visible to the kernel at the next `commit`).
    pub(crate) fn push(&mut self, bid: u16) {
        let mask = self.entries - 1;
        // SAFETY: the index is masked into the ring, which holds `entries` entries.
        let e = unsafe { &mut *self.ring.add((self.tail & mask) as usize) };
        e.set_addr(self.ptr(bid) as u64);
        e.set_len(self.buf_len as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Publishes every pushed buffer with one release store of the tail.
    pub(crate) fn commit(&mut self) {
        // SAFETY: `tail` points at the ring's shared tail field (the first entry's resv), a
        // naturally aligned u16 the kernel reads with acquire semantics.
        unsafe {
            let t = BufRingEntry::tail(self.ring) as *const AtomicU16;
            (*t).store(self.tail, Ordering::Release);
        }
    }

    /// Unregisters from the ring; afterwards the kernel no longer touches the buffers.
    pub(crate) fn unregister(&mut self, sub: &Submitter<'_>) -> io::Result<()> {
        if self.registered {
            sub.unregister_buf_ring(self.bgid)?;
            self.registered = false;
        }
        Ok(())
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        if self.registered {
            // The kernel may still read the ring and write the buffers: leak both.
            return;
        }
        // SAFETY: unregistered (or never registered): the kernel touches neither. The ring
        // was mapped in `with_flags` and the buffers came from `Box::into_raw` there, with
        // this length; each is freed exactly once.
        unsafe {
            libc::munmap(self.ring.cast(), self.ring_bytes);
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.bufs,
                self.entries as usize * self.buf_len,
            )));
        }
    }
}
