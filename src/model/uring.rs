//! An io_uring row's knobs as typed groups: how the ring is driven, how SQEs name files and
//! buffers, how a server receives and sends, how it waits, and whose loop it runs. Each group is
//! an enum (or a small struct) whose invalid combinations cannot be built; the combinations a
//! shape cannot run are refused in one place, [`UringKnobs::runs`] (the io_uring column of
//! `ModelSpec::runs`), which destructures every group: a new knob does not compile until it
//! decides there, in the availability probe (`probe.rs`) and in its one reader.
//!
//! Results files keep the flat form they always had (`{"sqpoll_idle_ms": null,
//! "defer_taskrun": true, ...}`): [`Flat`] is that form, written by `Serialize`.

use super::shape::{FileIo, Refusal, Shape};
use serde::Serialize;

/// How submissions reach the kernel and when completions run (ring setup flags; read in
/// `io::uring::ring::build`). One at a time: the kernel refuses DEFER_TASKRUN with SQPOLL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drive {
    /// One io_uring_enter submits and waits; completions run as task work on any return to
    /// user space.
    Enter,
    /// IORING_SETUP_DEFER_TASKRUN | SINGLE_ISSUER (6.1): completions run only when the task
    /// asks for them.
    Defer,
    /// IORING_SETUP_SQPOLL: a kernel thread polls the SQ; no io_uring_enter to submit while it
    /// is awake. It sleeps after `idle_ms` without work.
    Sqpoll { idle_ms: u32 },
    /// IORING_SETUP_IOPOLL: completions are polled from the device (O_DIRECT reads and writes
    /// on a device with poll queues only; never fsync).
    Iopoll,
}

/// How SQEs name their descriptors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Files {
    Plain,
    /// Registered files (IOSQE_FIXED_FILE): no fd lookup per op.
    Registered,
}

/// Which buffers file reads and writes use (the pipe and storage shapes; the servers refuse
/// registered ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bufs {
    Plain,
    /// Registered buffers (READ_FIXED/WRITE_FIXED): no page pinning per op.
    Registered,
}

/// How a server accepts and receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rx {
    /// One accept SQE per connection and one recv SQE per read, into the connection's buffer.
    Single,
    /// Multishot accept, and multishot recv into a provided buffer ring: one SQE, many
    /// completions, the kernel picking the buffer.
    Multishot(Provided),
    /// Zero-copy receive (IORING_OP_RECV_ZC, 6.15) from a NIC queue, on multishot accept.
    ZeroCopy,
}

/// How a multishot recv consumes its provided buffer ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Provided {
    /// Recv bundles (IORING_RECVSEND_BUNDLE, 6.10): one completion covers several buffers.
    pub(crate) bundle: bool,
    /// Incremental consumption (IOU_PBUF_RING_INC, 6.12): fewer, larger buffers, each
    /// consumed piecewise.
    pub(crate) incremental: bool,
}

impl Provided {
    /// One completion per buffer, each buffer used whole.
    pub(crate) const WHOLE: Provided = Provided {
        bundle: false,
        incremental: false,
    };
}

/// How a server sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tx {
    /// send copies the bytes.
    Copy,
    /// SEND_ZC: zero-copy send (pays only for large payloads). `registered`: each connection's
    /// receive buffer is registered (a sparse buffer table, one slot per connection slot) and
    /// its sends carry the buffer's index, so the kernel skips pinning the pages per send.
    ZeroCopy { registered: bool },
}

/// How a server's ring waits for completions (read in the io_uring server and `ring::build`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    /// Minimum wait (6.12): each wait asks for `MIN_WAIT_BATCH` completions and waits at most
    /// this long (us) for them before returning with what has arrived.
    pub(crate) min_wait_us: Option<u32>,
    /// NAPI busy polling registered on the ring (6.9), busy-poll timeout in us.
    pub(crate) napi_busy_poll_us: Option<u32>,
}

impl Wait {
    pub(crate) const PLAIN: Wait = Wait {
        min_wait_us: None,
        napi_busy_poll_us: None,
    };
}

/// Whose event loop a server row runs (read where the server is chosen, `io::serve`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loop {
    /// The io_uring server.
    Ring,
    /// The level-triggered epoll server with its waits as IORING_OP_EPOLL_WAIT on a ring
    /// (6.15).
    EpollWait,
    /// `hybrid`: epoll accepts and watches the listener, each connection's data runs on the
    /// ring.
    Hybrid,
}

/// Every io_uring knob a model row may set, in typed groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UringKnobs {
    pub(crate) drive: Drive,
    pub files: Files,
    pub(crate) bufs: Bufs,
    pub(crate) rx: Rx,
    pub(crate) tx: Tx,
    pub(crate) wait: Wait,
    pub looping: Loop,
}

const PIPE_NO_MEANING: &str = "knob has no meaning for a pipe write/read pair";
const FILES_NO_MEANING: &str = "knob is for sockets; no meaning for files";

impl UringKnobs {
    /// Plain io_uring: every knob off.
    pub(crate) const PLAIN: UringKnobs = UringKnobs {
        drive: Drive::Enter,
        files: Files::Plain,
        bufs: Bufs::Plain,
        rx: Rx::Single,
        tx: Tx::Copy,
        wait: Wait::PLAIN,
        looping: Loop::Ring,
    };

    /// Whether `shape` runs this row, and why not: the io_uring family's column of
    /// `ModelSpec::runs`. Every group is destructured and each classified by an exhaustive
    /// match: a new knob decides here for every shape before it compiles.
    pub(crate) fn runs(&self, shape: Shape) -> Result<(), Refusal> {
        use Refusal::{NotApplicable as Na, Unavailable};
        let UringKnobs {
            drive,
            files,
            bufs,
            rx,
            tx,
            wait:
                Wait {
                    min_wait_us,
                    napi_busy_poll_us,
                },
            looping,
        } = *self;
        let polled = match drive {
            Drive::Enter | Drive::Defer | Drive::Sqpoll { .. } => false,
            Drive::Iopoll => true,
        };
        let fixed_files = match files {
            Files::Plain => false,
            Files::Registered => true,
        };
        let fixed_bufs = match bufs {
            Bufs::Plain => false,
            Bufs::Registered => true,
        };
        // Multishot accept and receives into a buffer ring (zero-copy receive too).
        let ring_rx = match rx {
            Rx::Single => false,
            Rx::Multishot(_) | Rx::ZeroCopy => true,
        };
        let zc_send = match tx {
            Tx::Copy => false,
            Tx::ZeroCopy { registered: _ } => true,
        };
        let (min_wait, napi) = (min_wait_us.is_some(), napi_busy_poll_us.is_some());
        let own_loop = match looping {
            Loop::Ring => false,
            Loop::EpollWait | Loop::Hybrid => true,
        };
        // The knobs only a server's sockets give a meaning to.
        let sockets_only = ring_rx || zc_send || min_wait || napi || own_loop;
        let sockets_unpolled = Na("IOPOLL polls block devices; sockets cannot be polled that way");
        // The TCP servers, whatever they speak (every protocol is sans-I/O) and the broker,
        // which is the same loop driving the hub. NAPI: every loop's ring can busy-poll.
        let server = || -> Result<(), Refusal> {
            if polled {
                return Err(sockets_unpolled);
            }
            if fixed_bufs {
                return Err(Na("registered buffers are not used by the TCP servers"));
            }
            if let Rx::ZeroCopy = rx {
                return Err(Unavailable(
                    "the TCP servers have no RECV_ZC path: zero-copy receive needs a NIC \
                     queue with header/data split and flow steering, and the suites run \
                     over loopback",
                ));
            }
            match looping {
                Loop::Ring => Ok(()),
                Loop::Hybrid if fixed_files || ring_rx => Err(Na(
                    "epoll accepts plain descriptors one at a time: no direct descriptors or \
                     multishot accept",
                )),
                Loop::Hybrid => Ok(()),
                // The ring only waits (its drive and NAPI apply); reads and sends are the
                // epoll loop's plain syscalls.
                Loop::EpollWait if fixed_files || ring_rx || zc_send || min_wait => Err(Na(
                    "the epoll loop only waits through the ring; its reads and sends are plain \
                     syscalls: no direct descriptors, ring receives, SEND_ZC or minimum wait",
                )),
                Loop::EpollWait => Ok(()),
            }
        };
        match shape {
            Shape::Pipe => {
                let _ = fixed_files; // plain or registered: both name a pipe
                if sockets_only || fixed_bufs || polled {
                    return Err(Na(PIPE_NO_MEANING));
                }
                Ok(())
            }
            Shape::Storage(io) => {
                // Every drive, files and buffers have a meaning for files; a polled ring
                // completes O_DIRECT reads and writes only.
                if sockets_only {
                    return Err(Na(FILES_NO_MEANING));
                }
                match (polled, io) {
                    (false, _) | (true, FileIo::Direct) => Ok(()),
                    (true, FileIo::Buffered) => Err(Na(
                        "IOPOLL polls the device for completions; buffered I/O completes from \
                         the page cache and needs O_DIRECT here",
                    )),
                    (true, FileIo::Fsync) => Err(Na(
                        "IOPOLL rings cannot fsync (polled rings refuse or skip it)",
                    )),
                    (true, FileIo::OpenClose) => {
                        Err(Na("openat and close cannot complete on a polled ring"))
                    }
                }
            }
            Shape::Tcp(_) => server(),
            Shape::Broker => {
                server()?;
                // A SEND_ZC notification comes over loopback only once the subscriber read the
                // bytes; holding up to 8 sends' buffers (`zc_held`) made it pass most runs, but
                // a healthy subscriber was still disconnected at 399 of 4,096 16 KiB messages
                // in one run of the slow-subscriber conformance on a fresh clone.
                if zc_send {
                    return Err(Unavailable(
                        "its SEND_ZC broker does not pass conformance reliably yet (a healthy \
                         subscriber overflowed while its zero-copy sends awaited their \
                         notifications)",
                    ));
                }
                Ok(())
            }
            // One server for both: GRO changes its cmsgs, not which knobs it runs.
            Shape::Datagram { gro: _ } => {
                if polled {
                    return Err(sockets_unpolled);
                }
                if fixed_files {
                    return Err(Na(
                        "the UDP server has one socket and no accepted descriptors: registered \
                         files have nothing to register",
                    ));
                }
                if fixed_bufs {
                    return Err(Na("registered buffers are not used by the UDP server"));
                }
                match rx {
                    Rx::Multishot(Provided {
                        bundle,
                        incremental,
                    }) if bundle || incremental => {
                        return Err(Na(
                            "a datagram is one completion in one buffer: bundles and \
                             incremental buffer consumption are for byte streams",
                        ))
                    }
                    Rx::Single | Rx::Multishot(_) => {}
                    Rx::ZeroCopy => {
                        return Err(Unavailable(
                            "zero-copy receive needs a NIC queue with header/data split; the \
                             UDP server runs over loopback",
                        ))
                    }
                }
                if zc_send {
                    return Err(Na(
                        "SEND_ZC pays only for large payloads; the UDP datagrams are at most \
                         1,400 B",
                    ));
                }
                if min_wait || napi {
                    return Err(Na(
                        "the UDP server does not implement minimum waits or NAPI busy polling",
                    ));
                }
                if own_loop {
                    return Err(Na(
                        "the UDP server is the io_uring loop only (no epoll-wait or hybrid \
                         variant)",
                    ));
                }
                Ok(())
            }
        }
    }

    /// SQPOLL's idle time, ms, where the row polls its SQ.
    pub fn sqpoll_idle_ms(&self) -> Option<u32> {
        match self.drive {
            Drive::Sqpoll { idle_ms } => Some(idle_ms),
            _ => None,
        }
    }

    /// Whether the row sends with SEND_ZC.
    pub(crate) fn zero_copy_send(&self) -> bool {
        matches!(self.tx, Tx::ZeroCopy { .. })
    }

    /// The provided-buffer consumption of a multishot recv row.
    pub fn provided(&self) -> Option<Provided> {
        match self.rx {
            Rx::Multishot(p) => Some(p),
            _ => None,
        }
    }

    /// The row with its multishot recv's consumption changed by `f` (rows without one are
    /// returned as they are): the ladder's rungs add bundles and incremental rings this way.
    pub(crate) fn with_provided(self, f: impl FnOnce(Provided) -> Provided) -> UringKnobs {
        match self.rx {
            Rx::Multishot(p) => UringKnobs {
                rx: Rx::Multishot(f(p)),
                ..self
            },
            _ => self,
        }
    }
}

/// The knobs as results files have always recorded them (flat flags; the newer ones only when
/// set).
#[derive(Serialize)]
struct Flat {
    sqpoll_idle_ms: Option<u32>,
    defer_taskrun: bool,
    fixed_files: bool,
    fixed_bufs: bool,
    multishot: bool,
    buf_ring: bool,
    zc_send: bool,
    #[serde(skip_serializing_if = "is_false")]
    zc_fixed_buf: bool,
    iopoll: bool,
    #[serde(skip_serializing_if = "is_false")]
    bundle: bool,
    #[serde(skip_serializing_if = "is_false")]
    inc_bufs: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_wait_us: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    napi_busy_poll_us: Option<u32>,
    #[serde(skip_serializing_if = "is_false")]
    zc_rx: bool,
    #[serde(skip_serializing_if = "is_false")]
    epoll_wait: bool,
    #[serde(skip_serializing_if = "is_false")]
    epoll_accept: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl From<&UringKnobs> for Flat {
    fn from(k: &UringKnobs) -> Flat {
        let UringKnobs {
            drive,
            files,
            bufs,
            rx,
            tx,
            wait,
            looping,
        } = *k;
        let provided = k.provided();
        // Zero-copy receive is multishot: its flat form kept the multishot and ring flags.
        let multishot = provided.is_some() || rx == Rx::ZeroCopy;
        Flat {
            sqpoll_idle_ms: k.sqpoll_idle_ms(),
            defer_taskrun: drive == Drive::Defer,
            fixed_files: files == Files::Registered,
            fixed_bufs: bufs == Bufs::Registered,
            multishot,
            buf_ring: multishot,
            zc_send: matches!(tx, Tx::ZeroCopy { .. }),
            zc_fixed_buf: tx == Tx::ZeroCopy { registered: true },
            iopoll: drive == Drive::Iopoll,
            bundle: provided.is_some_and(|p| p.bundle),
            inc_bufs: provided.is_some_and(|p| p.incremental),
            min_wait_us: wait.min_wait_us,
            napi_busy_poll_us: wait.napi_busy_poll_us,
            zc_rx: rx == Rx::ZeroCopy,
            epoll_wait: looping == Loop::EpollWait,
            epoll_accept: looping == Loop::Hybrid,
        }
    }
}

impl Serialize for UringKnobs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Flat::from(self).serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Results files record the knobs as they always did: the flat form of a few rows, as
    /// written before the knobs were typed.
    #[test]
    fn knobs_serialize_in_the_flat_form_results_files_have() {
        let json = |id: &str| {
            let m = crate::registry::model(id).unwrap();
            serde_json::to_string(&m.knobs).unwrap()
        };
        let old = [
            (
                "uring",
                r#"{"uring":{"sqpoll_idle_ms":null,"defer_taskrun":false,"fixed_files":false,"fixed_bufs":false,"multishot":false,"buf_ring":false,"zc_send":false,"iopoll":false}}"#,
            ),
            (
                "uring-sqpoll",
                r#"{"uring":{"sqpoll_idle_ms":50,"defer_taskrun":false,"fixed_files":false,"fixed_bufs":false,"multishot":false,"buf_ring":false,"zc_send":false,"iopoll":false}}"#,
            ),
            (
                "uring-fixed-bufs",
                r#"{"uring":{"sqpoll_idle_ms":null,"defer_taskrun":false,"fixed_files":true,"fixed_bufs":true,"multishot":false,"buf_ring":false,"zc_send":false,"iopoll":false}}"#,
            ),
            (
                "uring-iopoll",
                r#"{"uring":{"sqpoll_idle_ms":null,"defer_taskrun":false,"fixed_files":false,"fixed_bufs":false,"multishot":false,"buf_ring":false,"zc_send":false,"iopoll":true}}"#,
            ),
            (
                "uring-zc",
                r#"{"uring":{"sqpoll_idle_ms":null,"defer_taskrun":false,"fixed_files":false,"fixed_bufs":false,"multishot":false,"buf_ring":false,"zc_send":true,"zc_fixed_buf":true,"iopoll":false}}"#,
            ),
            (
                "uring-bundle-inc-minwait-napi",
                r#"{"uring":{"sqpoll_idle_ms":null,"defer_taskrun":true,"fixed_files":true,"fixed_bufs":false,"multishot":true,"buf_ring":true,"zc_send":false,"iopoll":false,"bundle":true,"inc_bufs":true,"min_wait_us":20,"napi_busy_poll_us":50}}"#,
            ),
            (
                "uring-epollwait",
                r#"{"uring":{"sqpoll_idle_ms":null,"defer_taskrun":false,"fixed_files":false,"fixed_bufs":false,"multishot":false,"buf_ring":false,"zc_send":false,"iopoll":false,"epoll_wait":true}}"#,
            ),
            (
                "hybrid",
                r#"{"uring":{"sqpoll_idle_ms":null,"defer_taskrun":false,"fixed_files":false,"fixed_bufs":false,"multishot":false,"buf_ring":false,"zc_send":false,"iopoll":false,"epoll_accept":true}}"#,
            ),
            (
                "uring-zcrx",
                r#"{"uring":{"sqpoll_idle_ms":null,"defer_taskrun":true,"fixed_files":true,"fixed_bufs":false,"multishot":true,"buf_ring":true,"zc_send":false,"iopoll":false,"zc_rx":true}}"#,
            ),
        ];
        for (id, want) in old {
            assert_eq!(json(id), want, "{id}");
        }
    }

    /// Each shape refuses what it cannot run and takes the rest: the pipe takes every drive
    /// but IOPOLL, storage every drive (IOPOLL for O_DIRECT only), the servers no registered
    /// buffers or IOPOLL.
    #[test]
    fn shapes_refuse_what_has_no_meaning_for_them() {
        use super::super::shape::Proto;
        let tcp = Shape::Tcp(Proto::Echo);
        let direct = Shape::Storage(FileIo::Direct);
        let k = UringKnobs::PLAIN;
        for shape in Shape::ALL {
            assert_eq!(k.runs(shape), Ok(()), "{shape:?}");
        }
        let iopoll = UringKnobs {
            drive: Drive::Iopoll,
            ..k
        };
        assert!(iopoll.runs(Shape::Pipe).is_err());
        assert_eq!(iopoll.runs(direct), Ok(()));
        assert!(iopoll.runs(Shape::Storage(FileIo::Buffered)).is_err());
        assert!(iopoll.runs(tcp).is_err());
        let multishot = UringKnobs {
            rx: Rx::Multishot(Provided::WHOLE),
            ..k
        };
        assert!(multishot.runs(Shape::Pipe).is_err());
        assert!(multishot.runs(direct).is_err());
        assert_eq!(multishot.runs(tcp), Ok(()));
        let hybrid_fixed = UringKnobs {
            looping: Loop::Hybrid,
            files: Files::Registered,
            ..k
        };
        assert!(matches!(
            hybrid_fixed.runs(tcp),
            Err(Refusal::NotApplicable(_))
        ));
        let epollwait_fixed = UringKnobs {
            looping: Loop::EpollWait,
            files: Files::Registered,
            ..k
        };
        assert!(matches!(
            epollwait_fixed.runs(Shape::Broker),
            Err(Refusal::NotApplicable(_))
        ));
        let epollwait_defer = UringKnobs {
            looping: Loop::EpollWait,
            drive: Drive::Defer,
            ..k
        };
        assert_eq!(epollwait_defer.runs(tcp), Ok(()));
        let zcrx = UringKnobs {
            rx: Rx::ZeroCopy,
            ..k
        };
        assert!(matches!(zcrx.runs(tcp), Err(Refusal::Unavailable(_))));
    }
}
