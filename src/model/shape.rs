//! The capability matrix: which shapes each model runs. One function answers "does model M run
//! shape S?", [`ModelSpec::runs`], with an exhaustive match per family (the io_uring family's
//! in `UringKnobs::runs`, which destructures every knob group): a new family, knob or shape
//! does not compile until it decides here. The workloads' `accepts`, `ringside serve`, the
//! factories in `io`, the conformance tests and `ringside list` all ask it.
//!
//! A refusal says whether the shape has no meaning for the model (`NotApplicable`: the model
//! cannot run it at all) or the family has it but it cannot run yet (`Unavailable`, with the
//! reason). What the machine lacks is the availability probe's to say (`probe.rs`), not this.

use super::{Knobs, ModelSpec, PeerKind, Threading};
use crate::proto::ServeProtocol;

/// The shapes a model runs in: one per kind of loop ringside builds around a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Messages through pipes in one thread (`io::PipeBatch`: `micro.pipe`, `micro.batching`).
    Pipe,
    /// File I/O through a file engine (`io::FileEngine`: the storage suite), doing `FileIo`.
    Storage(FileIo),
    /// A TCP server speaking a sans-I/O protocol (`io::serve`, the peers' `serve`).
    Tcp(Proto),
    /// The pubsub broker (`io::serve_pubsub`, the peers' broker).
    Broker,
    /// The UDP echo server (`io::udp`); `gro`: with UDP_GRO and UDP_SEGMENT (`io::udp_gso`).
    Datagram { gro: bool },
}

/// The TCP protocols a server speaks. Every built-in server and peer serves each of them alike
/// (a protocol is sans-I/O); only an external command's answer depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Echo,
    Http,
    /// Bulk transfer, either direction (`proto::stream`: sink and source).
    Stream,
}

/// What a storage workload asks of its files: a polled ring (IOPOLL) completes only O_DIRECT
/// reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileIo {
    /// O_DIRECT reads (`storage.randread`; its buffered points ask for `Buffered`).
    Direct,
    /// Reads through the page cache (`storage.seqread`).
    Buffered,
    /// Writes made durable with fsync, then read back (`storage.page_cycle`).
    Fsync,
    /// Files opened and closed as ops (`storage.small_files`).
    OpenClose,
}

impl Shape {
    /// Every shape, for `ringside list` and the tests that walk the matrix.
    pub const ALL: [Shape; 11] = [
        Shape::Pipe,
        Shape::Storage(FileIo::Direct),
        Shape::Storage(FileIo::Buffered),
        Shape::Storage(FileIo::Fsync),
        Shape::Storage(FileIo::OpenClose),
        Shape::Tcp(Proto::Echo),
        Shape::Tcp(Proto::Http),
        Shape::Tcp(Proto::Stream),
        Shape::Broker,
        Shape::Datagram { gro: false },
        Shape::Datagram { gro: true },
    ];

    /// Its short name (`ringside list`).
    pub fn name(self) -> &'static str {
        match self {
            Shape::Pipe => "pipe",
            Shape::Storage(FileIo::Direct) => "files-direct",
            Shape::Storage(FileIo::Buffered) => "files-buffered",
            Shape::Storage(FileIo::Fsync) => "files-fsync",
            Shape::Storage(FileIo::OpenClose) => "files-open",
            Shape::Tcp(Proto::Echo) => "echo",
            Shape::Tcp(Proto::Http) => "http",
            Shape::Tcp(Proto::Stream) => "stream",
            Shape::Broker => "pubsub",
            Shape::Datagram { gro: false } => "udp",
            Shape::Datagram { gro: true } => "udp-gro",
        }
    }
}

/// What `ringside serve --protocol` asks a model to run.
impl From<ServeProtocol> for Shape {
    fn from(p: ServeProtocol) -> Shape {
        match p {
            ServeProtocol::Echo => Shape::Tcp(Proto::Echo),
            ServeProtocol::Http => Shape::Tcp(Proto::Http),
            ServeProtocol::Sink | ServeProtocol::Source => Shape::Tcp(Proto::Stream),
            ServeProtocol::Pubsub => Shape::Broker,
            ServeProtocol::UdpEcho => Shape::Datagram { gro: false },
            ServeProtocol::UdpEchoGro => Shape::Datagram { gro: true },
        }
    }
}

/// Why a model does not run a shape: it has no meaning there (`NotApplicable`), or it has but
/// cannot run on this build or machine (`Unavailable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    NotApplicable(&'static str),
    Unavailable(&'static str),
}

impl Refusal {
    pub fn why(self) -> &'static str {
        match self {
            Refusal::NotApplicable(w) | Refusal::Unavailable(w) => w,
        }
    }
}

impl From<Refusal> for crate::error::CaseError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::NotApplicable(w) => crate::error::CaseError::not_applicable(w),
            Refusal::Unavailable(w) => crate::error::CaseError::unavailable(w),
        }
    }
}

/// A workload's `accepts` says why not in words: `Ok(m.runs(shape)?)`.
impl From<Refusal> for String {
    fn from(r: Refusal) -> String {
        r.why().to_string()
    }
}

/// Why `tokio-mt` has no file rows.
pub(crate) const TOKIO_MT_FILES: &str =
    "tokio's file I/O is its blocking thread pool whatever the \
    runtime's flavour: the `tokio` row measures it";
/// Why external contenders have no file rows.
pub(crate) const EXTERNAL_FILES: &str = "an external contender is a TCP server command";

const NO_TCP_SERVER: &str = "it has no built-in TCP server";
const PEERS_TCP: &str = "peers only serve TCP";
const GRO_FAMILIES: &str = "only the blocking, epoll and io_uring families have a UDP GRO/GSO \
                            echo server (cmsgs on recvmsg/sendmsg)";

impl ModelSpec {
    /// Whether this model runs `shape`, and if not, why: the one answer, an exhaustive match
    /// per family. Says nothing about this machine (`ModelSpec::availability` does).
    pub fn runs(&self, shape: Shape) -> Result<(), Refusal> {
        use Refusal::NotApplicable as Na;
        match &self.knobs {
            Knobs::Blocking(t) => match (shape, t) {
                (Shape::Pipe, Threading::PerConnection) => Ok(()),
                (Shape::Pipe, Threading::Pool { .. }) => Err(Na(
                    "a thread pool hands each call to another thread; this loop is one thread",
                )),
                (Shape::Storage(_), _) => Ok(()),
                (Shape::Tcp(_) | Shape::Broker, Threading::PerConnection) => Ok(()),
                (Shape::Tcp(_) | Shape::Broker, Threading::Pool { .. }) => Err(Na(NO_TCP_SERVER)),
                (Shape::Datagram { .. }, Threading::PerConnection) => Ok(()),
                // `blocking/udp_pool.rs`: N threads on the one socket.
                (Shape::Datagram { gro: false }, Threading::Pool { .. }) => Ok(()),
                (Shape::Datagram { gro: true }, Threading::Pool { .. }) => Err(Na(GRO_FAMILIES)),
            },
            Knobs::Epoll(k) => match shape {
                Shape::Pipe if k.server_only() => {
                    Err(Na("busy polling polls a NIC's NAPI queue; a pipe has none"))
                }
                Shape::Pipe => Ok(()),
                Shape::Storage(_) => Err(Na(
                    "regular files are always 'ready': epoll_ctl refuses them (EPERM); epoll \
                     runtimes use a thread pool for files ('threadpool')",
                )),
                Shape::Tcp(_) | Shape::Broker | Shape::Datagram { .. } => Ok(()),
            },
            Knobs::Uring(k) => k.runs(shape),
            Knobs::Peer(kind) => peer_runs(*kind, shape),
        }
    }

    /// Whether `shape` has a meaning for this model: it runs, or would where what it lacks is
    /// there (a `Refusal::Unavailable`); if not, why. A workload plans such a model, and its
    /// cells say `unavailable: <why>`.
    pub fn applies(&self, shape: Shape) -> Result<(), &'static str> {
        match self.runs(shape) {
            Ok(()) | Err(Refusal::Unavailable(_)) => Ok(()),
            Err(Refusal::NotApplicable(why)) => Err(why),
        }
    }
}

/// The contenders' column: tokio, tokio-mt and monoio are servers of every TCP protocol, the
/// broker and UDP echo (`src/peer/`); tokio and monoio run their own file APIs
/// (`peer::files`); an external contender is its command, which serves what it serves.
fn peer_runs(kind: PeerKind, shape: Shape) -> Result<(), Refusal> {
    use Refusal::NotApplicable as Na;
    let external = kind == PeerKind::External;
    match shape {
        Shape::Pipe => Err(Na(PEERS_TCP)),
        Shape::Storage(FileIo::Direct | FileIo::Buffered) => Err(Na(
            "contenders take part in storage.page_cycle and storage.small_files only (their \
             own file APIs)",
        )),
        Shape::Storage(FileIo::Fsync | FileIo::OpenClose) => match kind {
            PeerKind::Tokio | PeerKind::Monoio => Ok(()),
            PeerKind::TokioMt => Err(Na(TOKIO_MT_FILES)),
            PeerKind::External => Err(Na(EXTERNAL_FILES)),
        },
        // Which of echo and HTTP an external contender speaks is its catalog entry's to say
        // (the run keeps it to the suites of that protocol).
        Shape::Tcp(Proto::Echo | Proto::Http) => Ok(()),
        Shape::Tcp(Proto::Stream) if external => Err(Na(
            "an external contender speaks echo or HTTP, not the stream protocols",
        )),
        Shape::Tcp(Proto::Stream) => Ok(()),
        Shape::Broker if external => Err(Na("an external command serves its own protocol")),
        Shape::Broker => Ok(()),
        Shape::Datagram { .. } if external => Err(Na(
            "an external contender serves what its command serves; ringside cannot ask it \
             for UDP echo",
        )),
        Shape::Datagram { gro: false } => Ok(()),
        Shape::Datagram { gro: true } => Err(Na(GRO_FAMILIES)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{model, MODELS};

    fn runs(id: &str, s: Shape) -> Result<(), Refusal> {
        model(id).unwrap().runs(s)
    }

    fn na(id: &str, s: Shape) -> bool {
        matches!(runs(id, s), Err(Refusal::NotApplicable(_)))
    }

    /// Every row answers every shape, a refusal always with a reason, and `applies` agrees.
    #[test]
    fn every_row_answers_every_shape() {
        for m in MODELS {
            for s in Shape::ALL {
                match m.runs(s) {
                    Ok(()) => assert_eq!(m.applies(s), Ok(()), "{} {s:?}", m.id),
                    Err(r) => {
                        assert!(!r.why().is_empty(), "{} {s:?}", m.id);
                        let applies = matches!(r, Refusal::Unavailable(_));
                        assert_eq!(m.applies(s).is_ok(), applies, "{} {s:?}", m.id);
                    }
                }
            }
            // Every row has a shape (uring-zcrx's cannot run yet).
            assert!(Shape::ALL.iter().any(|s| m.applies(*s).is_ok()), "{}", m.id);
        }
        let names: std::collections::BTreeSet<_> = Shape::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(names.len(), Shape::ALL.len());
    }

    #[test]
    fn iopoll_runs_direct_storage_only() {
        for s in Shape::ALL {
            let want = s == Shape::Storage(FileIo::Direct);
            assert_eq!(runs("uring-iopoll", s).is_ok(), want, "{s:?}");
            if !want {
                assert!(na("uring-iopoll", s), "{s:?}");
            }
        }
        let why = |io| runs("uring-iopoll", Shape::Storage(io)).unwrap_err().why();
        assert!(why(FileIo::Buffered).contains("page cache"));
        assert!(why(FileIo::Fsync).contains("fsync"));
        assert!(why(FileIo::OpenClose).contains("openat"));
    }

    #[test]
    fn the_thread_pool_runs_files_and_udp_but_serves_no_tcp() {
        assert!(na("threadpool", Shape::Pipe));
        assert_eq!(runs("threadpool", Shape::Storage(FileIo::Fsync)), Ok(()));
        assert_eq!(
            runs("threadpool", Shape::Tcp(Proto::Echo)),
            Err(Refusal::NotApplicable(NO_TCP_SERVER))
        );
        assert!(na("threadpool", Shape::Broker));
        assert_eq!(runs("threadpool", Shape::Datagram { gro: false }), Ok(()));
        assert!(na("threadpool", Shape::Datagram { gro: true }));
        for s in Shape::ALL {
            assert_eq!(runs("blocking", s), Ok(()), "{s:?}");
        }
    }

    #[test]
    fn peers_serve_tcp_and_the_broker_but_no_pipe() {
        for id in ["tokio", "tokio-mt", "monoio"] {
            for p in [Proto::Echo, Proto::Http, Proto::Stream] {
                assert_eq!(runs(id, Shape::Tcp(p)), Ok(()), "{id}");
            }
            assert_eq!(runs(id, Shape::Broker), Ok(()), "{id}");
            assert_eq!(runs(id, Shape::Datagram { gro: false }), Ok(()), "{id}");
            assert!(na(id, Shape::Datagram { gro: true }), "{id}");
            assert_eq!(
                runs(id, Shape::Pipe),
                Err(Refusal::NotApplicable(PEERS_TCP))
            );
            assert!(na(id, Shape::Storage(FileIo::Direct)), "{id}");
        }
        assert_eq!(runs("tokio", Shape::Storage(FileIo::OpenClose)), Ok(()));
        assert_eq!(
            runs("tokio-mt", Shape::Storage(FileIo::Fsync)),
            Err(Refusal::NotApplicable(TOKIO_MT_FILES))
        );
        let ext = ModelSpec {
            id: "ext:x",
            summary: "an external contender",
            family: crate::model::Family::Peer,
            default_run: false,
            knobs: Knobs::Peer(PeerKind::External),
        };
        assert_eq!(ext.runs(Shape::Tcp(Proto::Echo)), Ok(()));
        assert_eq!(ext.runs(Shape::Tcp(Proto::Http)), Ok(()));
        for s in [
            Shape::Tcp(Proto::Stream),
            Shape::Broker,
            Shape::Datagram { gro: false },
            Shape::Datagram { gro: true },
            Shape::Storage(FileIo::Fsync),
        ] {
            assert!(
                matches!(ext.runs(s), Err(Refusal::NotApplicable(_))),
                "{s:?}"
            );
        }
        assert!(ext
            .runs(Shape::Datagram { gro: true })
            .unwrap_err()
            .why()
            .contains("external"));
    }

    /// What the io_uring rows run, as the servers and loops have always taken them.
    #[test]
    fn uring_rows_as_their_loops_take_them() {
        for id in ["uring", "uring-multishot"] {
            for s in Shape::ALL {
                let want = !matches!(s, Shape::Storage(_) | Shape::Pipe) || id == "uring";
                assert_eq!(runs(id, s).is_ok(), want, "{id} {s:?}");
            }
        }
        for id in ["uring-fixed", "uring-bundle", "uring-zc"] {
            assert!(runs(id, Shape::Datagram { gro: false }).is_err(), "{id}");
        }
        // SEND_ZC's broker is planned but cannot run yet; its echo server runs.
        assert!(matches!(
            runs("uring-zc", Shape::Broker),
            Err(Refusal::Unavailable(w)) if w.contains("SEND_ZC")
        ));
        assert_eq!(runs("uring-zc", Shape::Tcp(Proto::Echo)), Ok(()));
        // Zero-copy receive: the servers have no path for it yet.
        assert!(matches!(
            runs("uring-zcrx", Shape::Tcp(Proto::Echo)),
            Err(Refusal::Unavailable(_))
        ));
        assert_eq!(
            runs("epoll-busypoll", Shape::Pipe),
            Err(Refusal::NotApplicable(
                "busy polling polls a NIC's NAPI queue; a pipe has none"
            ))
        );
        assert_eq!(runs("epoll-busypoll", Shape::Tcp(Proto::Echo)), Ok(()));
    }

    /// UDP echo: every server but an external one and some io_uring rows; with GRO, the
    /// native families only.
    #[test]
    fn who_serves_udp_and_udp_gro() {
        let udp = Shape::Datagram { gro: false };
        let gro = Shape::Datagram { gro: true };
        for id in [
            "blocking",
            "threadpool",
            "epoll-lt",
            "epoll-et",
            "uring",
            "uring-multishot",
            "tokio",
            "tokio-mt",
            "monoio",
        ] {
            assert_eq!(runs(id, udp), Ok(()), "{id}");
        }
        for id in ["uring-fixed", "uring-bundle", "uring-zc", "uring-iopoll"] {
            assert!(runs(id, udp).is_err_and(|r| !r.why().is_empty()), "{id}");
        }
        for id in ["blocking", "epoll-lt", "uring", "uring-multishot"] {
            assert_eq!(runs(id, gro), Ok(()), "{id}");
        }
        for id in ["threadpool", "tokio", "uring-fixed"] {
            assert!(runs(id, gro).is_err(), "{id}");
        }
    }

    #[test]
    fn serve_protocols_map_to_their_shapes() {
        use ServeProtocol as P;
        assert_eq!(Shape::from(P::Sink), Shape::from(P::Source));
        assert_eq!(Shape::from(P::Pubsub), Shape::Broker);
        assert_eq!(Shape::from(P::UdpEchoGro), Shape::Datagram { gro: true });
    }
}
