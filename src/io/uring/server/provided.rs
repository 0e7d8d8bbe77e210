//! The provided-buffer ring of a server (multishot recv) and how a completion's bytes are
//! found in it (`CopyOut`: whole buffers, bundles, incremental buffers): the state that
//! `recv` and `bundle` share, kept apart from both so that neither depends on the other.

use crate::io::uring::bufring::BufRing;

/// The provided-buffer ring and the connections waiting for one of its buffers.
pub(super) struct Provided {
    pub(crate) ring: BufRing,
    /// A buffer went back to the ring since starved connections were last re-armed (they are
    /// re-armed at the end of a batch while it is set).
    pub(crate) recycled: bool,
    /// Connections (slot, generation) whose multishot recv ended on ENOBUFS.
    pub(crate) starved: Vec<(u32, u32)>,
    /// Bundles or incremental buffers: the bytes are copied out (see `bundle`).
    pub(crate) copy: Option<CopyOut>,
}

impl Provided {
    pub(crate) fn new(ring: BufRing) -> Provided {
        Provided {
            ring,
            recycled: false,
            starved: Vec::new(),
            copy: None,
        }
    }

    /// Gives buffer `bid` back to the ring (published at the end of the batch).
    pub(crate) fn give_back(&mut self, bid: u16) {
        self.ring.push(bid);
        self.recycled = true;
    }
}

/// How the bytes of a completion are found.
pub(super) enum CopyOut {
    /// Bundles: the next ring position the kernel takes a buffer from.
    Bundle { head: u16 },
    /// Incremental: per buffer id, the bytes of it already consumed.
    Inc { offs: Vec<u32> },
    /// Bundles over an incremental ring: the kernel's head position and the bytes of the
    /// buffer there already consumed.
    BundleInc { head: u16, off: u32 },
}

impl CopyOut {
    pub(crate) fn bundle() -> CopyOut {
        CopyOut::Bundle { head: 0 }
    }

    pub(crate) fn inc(entries: u16) -> CopyOut {
        CopyOut::Inc {
            offs: vec![0; entries as usize],
        }
    }

    pub(crate) fn bundle_inc() -> CopyOut {
        CopyOut::BundleInc { head: 0, off: 0 }
    }
}
