//! Availability of a model on this machine, decided from the environment probe alone.

use super::{
    Availability, Bufs, Drive, Files, Knobs, Loop, ModelSpec, PeerKind, Provided, Rx, Tx,
    UringKnobs, Wait,
};
use crate::env::EnvReport;

/// Where the servers under test take their connections: over loopback (every local run) or
/// over a network address (`serve` on a non-loopback address, `run --server-host`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Serving {
    Loopback,
    Network,
}

impl ModelSpec {
    /// Whether this model can run here, serving over loopback, and if not, why. Looks only at
    /// `env`, never guesses.
    pub fn availability(&self, env: &EnvReport) -> Availability {
        self.availability_serving(env, Serving::Loopback)
    }

    /// [`ModelSpec::availability`] for servers that take their connections `at`.
    pub(crate) fn availability_serving(&self, env: &EnvReport, at: Serving) -> Availability {
        match &self.knobs {
            Knobs::Blocking(_) => Availability::Ready,
            Knobs::Epoll(k) => match k.busy_poll {
                None => Availability::Ready,
                Some(_) => {
                    use crate::env::uring::modern as f;
                    env.modern(f::EPOLL_BUSY_POLL).and(&napi_path(env, at))
                }
            },
            Knobs::Uring(k) => uring_availability(k, env, at),
            // Compiled in (features peer-tokio, peer-monoio), and monoio needs io_uring: only
            // its io_uring driver is built, never a silent epoll fallback.
            Knobs::Peer(k @ (PeerKind::Tokio | PeerKind::TokioMt | PeerKind::External)) => {
                built(*k)
            }
            Knobs::Peer(k @ PeerKind::Monoio) => built(*k).and(&env.io_uring),
        }
    }
}

/// Whether busy polling has a NAPI queue to poll where the servers take their connections
/// (`uring-napi` and `epoll-busypoll` both ask this). Loopback sockets carry no NAPI id (the
/// probe tries one). Over a network address the ids are the path's: a NIC's receive queues
/// have them; a veth pair only where the receiving end runs NAPI (GRO on, or XDP attached)
/// and the sender does not hand it TSO super-packets (on 6.18: GRO on and TSO off). No probe
/// can see that before traffic, so a network path is taken as offered.
pub fn napi_path(env: &EnvReport, at: Serving) -> Availability {
    match at {
        Serving::Loopback => env.modern(crate::env::uring::modern::NAPI_LOOPBACK),
        Serving::Network => Availability::Ready,
    }
}

/// Whether contender `kind` was compiled into this binary. Static: no probing.
pub(crate) fn built(kind: PeerKind) -> Availability {
    match kind {
        PeerKind::Tokio | PeerKind::TokioMt if !cfg!(feature = "peer-tokio") => {
            Availability::unavailable("built without feature peer-tokio")
        }
        PeerKind::Monoio if !cfg!(feature = "peer-monoio") => {
            Availability::unavailable("built without feature peer-monoio")
        }
        _ => Availability::Ready,
    }
}

/// What an io_uring row needs from the kernel: every group destructured, so a new knob
/// decides here what it needs before it compiles.
fn uring_availability(k: &UringKnobs, env: &EnvReport, at: Serving) -> Availability {
    use crate::env::uring::modern as f;
    let UringKnobs {
        drive,
        files,
        bufs,
        rx,
        tx,
        wait: Wait {
            min_wait_us,
            napi_busy_poll_us,
        },
        looping,
    } = *k;
    let mut a = env.io_uring.clone();
    match drive {
        Drive::Enter | Drive::Iopoll => {}
        Drive::Sqpoll { .. } => a = a.and(&env.sqpoll),
        Drive::Defer => a = a.and(&env.defer_taskrun),
    }
    if files == Files::Registered {
        a = a.and(&env.registered_files);
    }
    if bufs == Bufs::Registered {
        a = a.and(&env.registered_buffers);
    }
    if rx != Rx::Single {
        // Multishot accept and recv into a buffer ring (zero-copy receive too).
        a = a
            .and(&env.buf_ring)
            .and(&env.multishot_recv)
            .and(&env.multishot_accept);
    }
    match rx {
        Rx::Single => {}
        Rx::Multishot(Provided {
            bundle,
            incremental,
        }) => {
            if bundle {
                a = a.and(&env.modern(f::BUNDLE));
            }
            if incremental {
                a = a.and(&env.modern(f::INC));
            }
        }
        Rx::ZeroCopy => {
            a = a
                .and(&env.modern(f::RECV_ZC))
                .and(&Availability::unavailable(
                    "the echo and HTTP suites run over loopback, which no NIC queue serves, \
                     and the servers have no RECV_ZC path",
                ));
        }
    }
    match tx {
        Tx::Copy => {}
        Tx::ZeroCopy { registered } => {
            a = a.and(&env.send_zc);
            if registered {
                a = a.and(&env.registered_buffers);
            }
        }
    }
    if min_wait_us.is_some() {
        a = a.and(&env.modern(f::MIN_WAIT));
    }
    if napi_busy_poll_us.is_some() {
        a = a.and(&env.modern(f::NAPI)).and(&napi_path(env, at));
    }
    match looping {
        Loop::Ring | Loop::Hybrid => {}
        Loop::EpollWait => a = a.and(&env.modern(f::EPOLL_WAIT)),
    }
    a
}
