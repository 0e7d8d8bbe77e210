//! The servers under test, driven from the registry: a model row added there is tested here
//! without a line changed in the tests.

use ringside::model::{Availability, Knobs, ModelSpec, PeerKind};
use ringside::peer::availability;
use ringside::registry::MODELS;

/// Every built-in TCP server in the registry (`io::serves_tcp`) that this machine can run. One
/// it cannot run is printed as skipped with its reason; blocking and epoll can never skip.
pub fn servers() -> Vec<&'static ModelSpec> {
    let env = ringside::env::probe();
    let mut v = Vec::new();
    for m in MODELS.iter().filter(|m| ringside::io::serves_tcp(m)) {
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

/// Every registry model with a UDP echo server (`io::udp::udp_refusal`: the families, the
/// thread pool and the built-in peers) that this machine can run; one it cannot is printed as
/// skipped with its reason. blocking, the thread pool and epoll can never skip.
pub fn udp_servers() -> Vec<&'static ModelSpec> {
    let env = ringside::env::probe();
    let mut v = Vec::new();
    for m in MODELS
        .iter()
        .filter(|m| ringside::io::udp::udp_refusal(m).is_none())
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
