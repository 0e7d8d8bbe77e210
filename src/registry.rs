//! The two registries: every model and every workload ringside knows. Listing, CLI
//! validation, `ringside env`, the conformance tests and the reports iterate these tables;
//! nothing else enumerates models or workloads by hand. Adding either is one row here.

use crate::model::{
    Bufs, Drive, EpollKnobs, Family, Files, Knobs, Loop, ModelSpec, Provided, Rx, Threading, Tx,
    UringKnobs, Wait,
};
use crate::workload::{micro, net, storage, Workload};

/// SQPOLL poller idle time before it sleeps, ms. Long enough that it stays awake between the
/// ops of a measured window, short enough not to burn a CPU between cases.
pub(crate) const SQPOLL_IDLE_MS: u32 = 50;

/// The knobs of `uring-tuned`, the base the rows of features after 6.1 add one knob to.
const TUNED: UringKnobs = UringKnobs {
    drive: Drive::Defer,
    files: Files::Registered,
    rx: Rx::Multishot(Provided::WHOLE),
    ..UringKnobs::PLAIN
};
/// The ladder's top rungs' receive: bundles over an incremental ring.
const BUNDLE_INC: Provided = Provided {
    bundle: true,
    incremental: true,
};
/// `uring-minwait`'s and `uring-napi`'s settings (with the ladder's rungs, in `model`).
pub(crate) use crate::model::{MIN_WAIT_US, NAPI_BUSY_POLL_US};

pub static MODELS: &[ModelSpec] = &[
    ModelSpec {
        id: "blocking",
        summary: "blocking syscalls; servers: one thread per connection",
        family: Family::Blocking,
        default_run: true,
        knobs: Knobs::Blocking(Threading::PerConnection),
    },
    ModelSpec {
        id: "threadpool",
        summary: "blocking calls handed to worker threads (how tokio does files: not pollable)",
        family: Family::Blocking,
        default_run: true,
        knobs: Knobs::Blocking(Threading::Pool { threads: None }),
    },
    ModelSpec {
        id: "epoll-lt",
        summary: "epoll, level-triggered, non-blocking syscalls",
        family: Family::Epoll,
        default_run: true,
        knobs: Knobs::Epoll(EpollKnobs::LEVEL),
    },
    ModelSpec {
        id: "epoll-et",
        summary: "epoll, edge-triggered: drain until EAGAIN or a short read",
        family: Family::Epoll,
        default_run: false,
        knobs: Knobs::Epoll(EpollKnobs::EDGE),
    },
    ModelSpec {
        id: "uring",
        summary: "io_uring, plain: one io_uring_enter submits and waits",
        family: Family::Uring,
        default_run: false,
        knobs: Knobs::Uring(UringKnobs::PLAIN),
    },
    ModelSpec {
        id: "uring-defer",
        summary: "io_uring with DEFER_TASKRUN|SINGLE_ISSUER (kernel 6.1+)",
        family: Family::Uring,
        default_run: true,
        knobs: Knobs::Uring(UringKnobs {
            drive: Drive::Defer,
            ..UringKnobs::PLAIN
        }),
    },
    ModelSpec {
        id: "uring-fixed",
        summary: "io_uring with registered files (IOSQE_FIXED_FILE)",
        family: Family::Uring,
        default_run: false,
        knobs: Knobs::Uring(UringKnobs {
            files: Files::Registered,
            ..UringKnobs::PLAIN
        }),
    },
    ModelSpec {
        id: "uring-fixed-bufs",
        summary: "io_uring with registered files and registered buffers (READ_FIXED/WRITE_FIXED)",
        family: Family::Uring,
        default_run: false,
        knobs: Knobs::Uring(UringKnobs {
            files: Files::Registered,
            bufs: Bufs::Registered,
            ..UringKnobs::PLAIN
        }),
    },
    ModelSpec {
        id: "uring-iopoll",
        summary: "io_uring with IOPOLL: completions polled from the device (O_DIRECT, poll queues)",
        family: Family::Uring,
        default_run: false,
        knobs: Knobs::Uring(UringKnobs {
            drive: Drive::Iopoll,
            ..UringKnobs::PLAIN
        }),
    },
    ModelSpec {
        id: "uring-sqpoll",
        summary: "io_uring with SQPOLL: a kernel thread on another CPU submits, no enter per op",
        family: Family::Uring,
        default_run: false,
        knobs: Knobs::Uring(UringKnobs {
            drive: Drive::Sqpoll {
                idle_ms: SQPOLL_IDLE_MS,
            },
            ..UringKnobs::PLAIN
        }),
    },
    ModelSpec {
        id: "uring-multishot",
        summary: "io_uring, multishot accept and recv into a provided buffer ring",
        family: Family::Uring,
        default_run: false,
        knobs: Knobs::Uring(UringKnobs {
            rx: Rx::Multishot(Provided::WHOLE),
            ..UringKnobs::PLAIN
        }),
    },
    // A rung of the ablation ladders (`workload::net::ladder`), between uring-defer and
    // uring-tuned.
    ModelSpec {
        id: "uring-defer-fixed",
        summary: "io_uring with DEFER_TASKRUN|SINGLE_ISSUER and registered files (a rung of \
                  the ablation ladder)",
        family: Family::Uring,
        default_run: false,
        knobs: Knobs::Uring(UringKnobs {
            drive: Drive::Defer,
            files: Files::Registered,
            ..UringKnobs::PLAIN
        }),
    },
    ModelSpec {
        id: "uring-tuned",
        summary: "io_uring with every server knob that pays on small messages: \
                  DEFER_TASKRUN|SINGLE_ISSUER, registered files, multishot accept and recv \
                  into a provided buffer ring",
        family: Family::Uring,
        default_run: true,
        knobs: Knobs::Uring(TUNED),
    },
    ModelSpec {
        id: "uring-zc",
        summary: "io_uring with SEND_ZC zero-copy sends from registered buffers (for large \
                  payloads)",
        family: Family::Uring,
        default_run: false,
        knobs: Knobs::Uring(UringKnobs {
            tx: Tx::ZeroCopy { registered: true },
            ..UringKnobs::PLAIN
        }),
    },
    // io_uring after 6.1: each row is `uring-tuned` plus one feature, so that it answers what
    // that feature buys over the best 6.1 server. They run when their suite is named, not in
    // the bare `ringside run` (`default_run: false`), and say why where they cannot run.
    ModelSpec {
        id: "uring-bundle",
        summary: "uring-tuned + receive bundles: one multishot recv completion covers several \
                  provided buffers (IORING_RECVSEND_BUNDLE, kernel 6.10)",
        family: Family::Uring,
        default_run: false,
        knobs: Knobs::Uring(UringKnobs {
            rx: Rx::Multishot(Provided {
                bundle: true,
                incremental: false,
            }),
            ..TUNED
        }),
    },
    ModelSpec {
        id: "uring-inc",
        summary: "uring-tuned + incremental buffer consumption: fewer, larger provided buffers \
                  consumed piecewise (IOU_PBUF_RING_INC, kernel 6.12)",
        family: Family::Uring,
        default_run: false,
        knobs: Knobs::Uring(UringKnobs {
            rx: Rx::Multishot(Provided {
                bundle: false,
                incremental: true,
            }),
            ..TUNED
        }),
    },
    ModelSpec {
        id: "uring-minwait",
        summary: "uring-tuned + minimum wait: each wait asks for a batch of completions and \
                  waits at most 20 us for it (min_wait_usec, kernel 6.12)",
        family: Family::Uring,
        default_run: false,
        knobs: Knobs::Uring(UringKnobs {
            wait: Wait {
                min_wait_us: Some(MIN_WAIT_US),
                napi_busy_poll_us: None,
            },
            ..TUNED
        }),
    },
    ModelSpec {
        id: "uring-napi",
        summary: "uring-tuned + NAPI busy polling registered on the ring (kernel 6.9; needs \
                  sockets with a NAPI id: not loopback)",
        family: Family::Uring,
        default_run: false,
        knobs: Knobs::Uring(UringKnobs {
            wait: Wait {
                min_wait_us: None,
                napi_busy_poll_us: Some(NAPI_BUSY_POLL_US),
            },
            ..TUNED
        }),
    },
    // The ablation ladder's rungs after uring-tuned, each the rung above plus one knob
    // (`model::ladder::RUNGS`): bundles over an incremental ring, then min-wait, then NAPI.
    ModelSpec {
        id: "uring-bundle-inc",
        summary: "uring-bundle + incremental buffer consumption: receive bundles over an \
                  IOU_PBUF_RING_INC ring, a completion's bytes running from where the last one \
                  ended through as many buffers as they fill (kernel 6.12; spanning several \
                  buffers from 6.15)",
        family: Family::Uring,
        default_run: false,
        knobs: Knobs::Uring(UringKnobs {
            rx: Rx::Multishot(BUNDLE_INC),
            ..TUNED
        }),
    },
    ModelSpec {
        id: "uring-bundle-inc-minwait",
        summary: "uring-bundle-inc + minimum wait (20 us for a batch of completions, kernel \
                  6.12)",
        family: Family::Uring,
        default_run: false,
        knobs: Knobs::Uring(UringKnobs {
            rx: Rx::Multishot(BUNDLE_INC),
            wait: Wait {
                min_wait_us: Some(MIN_WAIT_US),
                napi_busy_poll_us: None,
            },
            ..TUNED
        }),
    },
    ModelSpec {
        id: "uring-bundle-inc-minwait-napi",
        summary: "uring-bundle-inc-minwait + NAPI busy polling registered on the ring: the \
                  ladder's top rung (needs sockets with a NAPI id: not loopback)",
        family: Family::Uring,
        default_run: false,
        knobs: Knobs::Uring(UringKnobs {
            rx: Rx::Multishot(BUNDLE_INC),
            wait: Wait {
                min_wait_us: Some(MIN_WAIT_US),
                napi_busy_poll_us: Some(NAPI_BUSY_POLL_US),
            },
            ..TUNED
        }),
    },
    ModelSpec {
        id: "epoll-busypoll",
        summary: "epoll-lt with epoll's own busy polling (EPIOCSPARAMS, kernel 6.9): uring-napi's \
                  fair pair; needs sockets with a NAPI id: not loopback",
        family: Family::Epoll,
        default_run: false,
        knobs: Knobs::Epoll(EpollKnobs {
            busy_poll: Some(crate::model::EPOLL_BUSY_POLL),
            ..EpollKnobs::LEVEL
        }),
    },
    ModelSpec {
        id: "uring-epollwait",
        summary: "epoll-lt's event loop with each wait an IORING_OP_EPOLL_WAIT on a ring \
                  (kernel 6.15): the migration path for readiness-based code",
        family: Family::Uring,
        default_run: false,
        knobs: Knobs::Uring(UringKnobs {
            looping: Loop::EpollWait,
            ..UringKnobs::PLAIN
        }),
    },
    ModelSpec {
        id: "hybrid",
        summary: "epoll accepts and watches the listener (and the ring's fd); each accepted \
                  connection's data runs on io_uring (recv/send SQEs): incremental migration",
        family: Family::Uring,
        default_run: false,
        knobs: Knobs::Uring(UringKnobs {
            looping: Loop::Hybrid,
            ..UringKnobs::PLAIN
        }),
    },
    ModelSpec {
        id: "uring-zcrx",
        summary: "uring-tuned + zero-copy receive (IORING_OP_RECV_ZC, kernel 6.15; needs a NIC \
                  queue with header/data split and flow steering)",
        family: Family::Uring,
        default_run: false,
        knobs: Knobs::Uring(UringKnobs {
            rx: Rx::ZeroCopy,
            ..TUNED
        }),
    },
    ModelSpec {
        id: "tokio",
        summary:
            "contender: tokio current_thread runtime (epoll), a read/write_all task per connection",
        family: Family::Peer,
        default_run: true,
        knobs: Knobs::Peer(crate::model::PeerKind::Tokio),
    },
    ModelSpec {
        id: "tokio-mt",
        summary: "contender: tokio multi-thread runtime (epoll, work stealing), one worker per \
                  server CPU, a read/write_all task per connection",
        family: Family::Peer,
        default_run: false,
        knobs: Knobs::Peer(crate::model::PeerKind::TokioMt),
    },
    ModelSpec {
        id: "monoio",
        summary: "contender: monoio on its io_uring driver, a read/write_all task per connection",
        family: Family::Peer,
        default_run: true,
        knobs: Knobs::Peer(crate::model::PeerKind::Monoio),
    },
];

pub static WORKLOADS: &[&dyn Workload] = &[
    &micro::syscall::Syscall,
    &micro::pipe::Pipe,
    &micro::fd_scaling::FdScaling,
    &micro::batching::Batching,
    &storage::page_cycle::PageCycle,
    &storage::randread::RandRead,
    &storage::seqread::SeqRead,
    &storage::small_files::SmallFiles,
    &net::echo::EchoConns,
    &net::echo::EchoPayload,
    &net::echo::EchoRate,
    &net::cores::EchoCores,
    &net::http::HttpClients,
    &net::http::HttpRate,
    &net::cores::HttpCores,
    &net::ladder::EchoLadder,
    &net::ladder::HttpLadder,
    &net::stream::StreamSend,
    &net::stream::StreamDuplex,
    &net::pubsub::PubsubFanout,
    &net::udp::UdpEcho,
    &net::udp_gso::UdpEchoGso,
    &net::idle::ConnIdle,
    &net::churn::ConnChurn,
    &net::churn::ConnChurnRate,
];

/// Suites are the first component of workload ids, in registry order.
pub(crate) fn suites() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = Vec::new();
    for w in WORKLOADS {
        let s = suite_of(w.id());
        if !v.contains(&s) {
            v.push(s);
        }
    }
    v
}

pub(crate) fn suite_of(workload_id: &'static str) -> &'static str {
    workload_id.split('.').next().unwrap_or(workload_id)
}

pub fn model(id: &str) -> Option<&'static ModelSpec> {
    MODELS.iter().find(|m| m.id == id)
}

pub fn workload(id: &str) -> Option<&'static dyn Workload> {
    WORKLOADS.iter().copied().find(|w| w.id() == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workload whose load can run on another host is a network server's, driven by the
    /// load generator in a whole suite that takes `--load-host` (the echo and HTTP ones):
    /// the row says so, and the refusal names suites by it.
    #[test]
    fn remote_load_is_a_network_rows_and_covers_its_suites() {
        let remote: Vec<&str> = WORKLOADS
            .iter()
            .filter(|w| w.remote_load())
            .map(|w| w.id())
            .collect();
        assert!(
            remote.contains(&"echo.conns") && remote.contains(&"http.rate"),
            "{remote:?}"
        );
        for w in WORKLOADS.iter().filter(|w| w.remote_load()) {
            assert!(w.facts().net, "{}", w.id());
        }
        for id in [
            "micro.pipe",
            "storage.randread",
            "pubsub.fanout",
            "udp.echo",
        ] {
            assert!(!remote.contains(&id), "{id}");
        }
    }

    #[test]
    fn ids_are_unique_and_well_formed() {
        let mut ids: Vec<_> = MODELS.iter().map(|m| m.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), MODELS.len());
        for m in MODELS {
            assert!(
                m.id.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{}",
                m.id
            );
        }
        for w in WORKLOADS {
            assert_eq!(w.id().split('.').count(), 2, "{}", w.id());
            assert!(workload(w.id()).is_some());
        }
        assert_eq!(
            suites(),
            vec!["micro", "storage", "echo", "http", "stream", "pubsub", "udp", "conn"]
        );
    }
}
