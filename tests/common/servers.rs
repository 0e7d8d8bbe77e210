//! The servers under test, driven from the registry: a model row added there is tested here
//! without a line changed in the tests.

use ringside::model::{Availability, Knobs, ModelSpec, PeerKind, Proto, Shape};
use ringside::peer::availability;
use ringside::registry::MODELS;

/// Every built-in TCP server in the registry (not a peer; `ModelSpec::runs` gives the model a
/// TCP server, or one it cannot run yet) that this machine can run. One it cannot run is
/// printed as skipped with its reason; blocking and epoll can never skip.
pub fn servers() -> Vec<&'static ModelSpec> {
    let env = ringside::env::probe();
    let mut v = Vec::new();
    let tcp = Shape::Tcp(Proto::Echo);
    let built_in = |m: &&ModelSpec| !matches!(m.knobs, Knobs::Peer(_)) && m.applies(tcp).is_ok();
    for m in MODELS.iter().filter(built_in) {
        match m.availability(&env) {
            Availability::Ready => v.push(m),
            Availability::Unavailable(why) => {
                assert!(
                    !m.always_available(),
                    "{} must always be available, got: {why}",
                    m.id
                );
                println!("skipped {}: {why}", m.id);
            }
        }
    }
    assert!(v.iter().any(|m| m.id == "blocking") && v.iter().any(|m| m.id == "epoll-et"));
    v
}

/// Every registry model with a UDP echo server (`ModelSpec::runs`: the families, the
/// thread pool and the built-in peers) that this machine can run; one it cannot is printed as
/// skipped with its reason. blocking, the thread pool and epoll can never skip.
pub fn udp_servers() -> Vec<&'static ModelSpec> {
    let env = ringside::env::probe();
    let mut v = Vec::new();
    for m in MODELS
        .iter()
        .filter(|m| m.runs(Shape::Datagram { gro: false }).is_ok())
    {
        match m.availability(&env) {
            Availability::Ready => v.push(m),
            Availability::Unavailable(why) => {
                assert!(
                    !m.always_available(),
                    "{} must always be available, got: {why}",
                    m.id
                );
                println!("skipped {}: {why}", m.id);
            }
        }
    }
    v
}

/// The built-in contenders in the registry (tokio, monoio), whether or not they can run here
/// (see [`peer_ready`]).
pub fn peers() -> Vec<PeerKind> {
    MODELS
        .iter()
        .filter_map(|m| match m.knobs {
            Knobs::Peer(k) if k.in_process() => Some(k),
            _ => None,
        })
        .collect()
}

/// Whether contender `kind` can run here; prints why not. tokio needs nothing from the
/// machine: only a build without it may skip it.
pub fn peer_ready(kind: PeerKind) -> bool {
    match availability(kind) {
        Availability::Ready => true,
        Availability::Unavailable(why) => {
            assert!(
                !matches!(kind, PeerKind::Tokio | PeerKind::TokioMt)
                    || why.contains("built without"),
                "tokio unavailable: {why}"
            );
            eprintln!("skipped {kind:?}: unavailable: {why}");
            false
        }
    }
}
