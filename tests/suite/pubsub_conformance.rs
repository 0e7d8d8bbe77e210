//! The pubsub broker (`ringside serve --protocol pubsub`) on every server in the registry that
//! serves it (`ModelSpec::runs` with `Shape::Broker`: every built-in family and the tokio and
//! monoio contenders),
//! over real sockets: every subscriber of a topic gets every
//! message of every publisher, verified byte for byte and in sequence, and nothing of other
//! topics; a subscriber that never reads is disconnected once its bounded queue fills
//! (`slow_disconnects`) while the others get everything; a subscriber that resets costs the
//! others nothing; bytes that are not frames close that connection only; a model that does not
//! serve pubsub is refused with exit 2.

use crate::common;

use common::child::Server;
use common::net::{connect, reset};
use common::servers::{peer_ready, peers, servers};
use ringside::model::Shape;
use ringside::proto::pubsub::{
    encode_pub, encode_sub, fill_payload, Decoder, Frame, Publish, SeqCheck, PUB,
};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Publisher ids at or above this are the subscribers' own handshakes (see [`Sub::new`]).
const HANDSHAKE: u32 = 0xFFFF_0000;

/// Every model in the registry that serves pubsub and can run here: the built-in servers and
/// the contenders (tokio, tokio-mt, monoio). `PUBSUB_ONLY=<id>` runs one of them.
fn ids() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = servers()
        .into_iter()
        .filter(|m| m.runs(Shape::Broker).is_ok())
        .map(|m| m.id)
        .collect();
    for m in ringside::registry::MODELS {
        if let ringside::model::Knobs::Peer(k) = m.knobs {
            if peers().contains(&k) && peer_ready(k) {
                assert_eq!(m.runs(Shape::Broker), Ok(()), "{}", m.id);
                v.push(m.id);
            }
        }
    }
    for want in [
        "blocking",
        "epoll-lt",
        "epoll-et",
        "uring",
        "uring-multishot",
    ] {
        assert!(v.contains(&want), "{want} must serve pubsub: {v:?}");
    }
    if let Ok(only) = std::env::var("PUBSUB_ONLY") {
        v.retain(|id| *id == only);
    }
    v
}

fn pub_frame(out: &mut Vec<u8>, topic: u32, publisher: u32, seq: u64, len: usize) {
    let mut p = Vec::new();
    fill_payload(&mut p, publisher, seq, len);
    encode_pub(
        out,
        PUB,
        &Publish {
            topic,
            publisher,
            seq,
            ts_ns: 0,
            payload: &p,
        },
    );
}

/// A subscriber: its connection, its decoder and its check.
struct Sub {
    s: TcpStream,
    dec: Decoder,
    check: SeqCheck,
    topic: u32,
    len: usize,
    /// Messages verified (handshakes not counted).
    got: u64,
}

impl Sub {
    /// Subscribes to `topic`, then publishes one handshake on it from the same connection and
    /// waits for it to come back: the subscription is live before anyone publishes.
    fn new(srv: &Server, topic: u32, id: u32, len: usize) -> Sub {
        let mut s = srv.connect();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut w = Vec::new();
        encode_sub(&mut w, topic, true);
        pub_frame(&mut w, topic, HANDSHAKE + id, 0, 0);
        s.write_all(&w).unwrap();
        let mut sub = Sub {
            s,
            dec: Decoder::default(),
            check: SeqCheck::default(),
            topic,
            len,
            got: 0,
        };
        while sub.check.verified(HANDSHAKE + id) == 0 {
            assert!(sub.read_some(), "{id}: closed during the handshake");
        }
        sub
    }

    /// Reads once and verifies every whole message; false at EOF or a reset.
    fn read_some(&mut self) -> bool {
        let mut buf = [0u8; 65536];
        let n = match self.s.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => n,
        };
        let (check, topic, len, got) = (&mut self.check, self.topic, self.len, &mut self.got);
        self.dec
            .feed(&buf[..n], |f| match f {
                Frame::Msg { msg, .. } => {
                    assert_eq!(msg.topic, topic, "a message of another topic");
                    let want = if msg.publisher >= HANDSHAKE { 0 } else { len };
                    if let Err(e) = check.check(&msg, want) {
                        panic!("topic {topic}: {e}");
                    }
                    if msg.publisher < HANDSHAKE {
                        *got += 1;
                    }
                }
                other => panic!("a subscriber got {other:?}"),
            })
            .expect("the broker sends frames");
        true
    }

    /// Reads until `publisher` has `n` messages verified.
    fn until(&mut self, publisher: u32, n: u64) {
        while self.check.verified(publisher) < n {
            assert!(
                self.read_some(),
                "closed at {} of {n} from publisher {publisher}",
                self.check.verified(publisher)
            );
        }
    }
}

/// Publishes `n` messages of `len` bytes to `topic` as `publisher`, several frames a write,
/// pausing 1 ms every `pace` messages (0: never).
fn publish(at: SocketAddr, topic: u32, publisher: u32, n: u64, len: usize, pace: u64) -> TcpStream {
    let mut s = connect(at);
    let mut w = Vec::new();
    for seq in 0..n {
        pub_frame(&mut w, topic, publisher, seq, len);
        if w.len() > 32 * 1024 || seq + 1 == n {
            s.write_all(&w).unwrap();
            w.clear();
        }
        if pace > 0 && seq % pace == pace - 1 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    s
}

fn counter(c: &serde_json::Value, name: &str) -> u64 {
    c[name]
        .as_u64()
        .unwrap_or_else(|| panic!("no counter {name} in {c}"))
}

#[test]
fn every_subscriber_gets_every_message_in_order() {
    for id in ids() {
        println!("model {id}");
        let srv = Server::start(id, "pubsub", &[], None);
        let n = 2000u64;
        let len = 1000;
        let readers: Vec<_> = (0..3)
            .map(|i| {
                let mut s = Sub::new(&srv, 1, i, len);
                std::thread::spawn(move || {
                    s.until(1, n);
                    s.until(2, n);
                    s.got
                })
            })
            .collect();
        let mut other = Sub::new(&srv, 2, 9, 64);
        let at = srv.addr;
        let pubs: Vec<_> = [1u32, 2]
            .into_iter()
            .map(|p| std::thread::spawn(move || publish(at, 1, p, n, len, 100)))
            .collect();
        let _third = publish(at, 2, 3, 5, 64, 0);
        for r in readers {
            assert_eq!(r.join().unwrap(), 2 * n, "{id}");
        }
        other.until(3, 5);
        assert_eq!(other.got, 5, "{id}: topic 2 got only its own");
        for p in pubs {
            drop(p.join().unwrap());
        }
        let (st, c) = srv.stop();
        assert!(st.success(), "{id}: {st}");
        assert_eq!(counter(&c, "published"), 2 * n + 5 + 4, "{id}: {c}");
        // Each handshake reaches the subscribers of its topic so far: 1 + 2 + 3, and 1.
        assert_eq!(counter(&c, "delivered"), 3 * 2 * n + 5 + 7, "{id}: {c}");
        assert_eq!(counter(&c, "slow_disconnects"), 0, "{id}: {c}");
    }
}

/// How far the slow-subscriber test's publisher may run ahead of what the healthy subscriber
/// has read, in 16 KiB messages: 1 MiB, a quarter of the broker's queue bound, so the healthy
/// one is never the broker's slow one however long a busy machine pauses its reader (a fixed
/// pace was not enough: a reader starved on two loaded vCPUs was closed at 10 of 512), while
/// the slow one, which never reads, passes the bound by far.
const WINDOW: u64 = 64;
/// How long the healthy subscriber stops reading once, mid-stream: the broker holds what the
/// publisher sends meanwhile (up to [`WINDOW`]) and must lose none of it.
const HEALTHY_PAUSE: Duration = Duration::from_millis(30);

/// [`publish`] held to at most [`WINDOW`] messages ahead of `read` (what the healthy
/// subscriber has verified); panics after a minute without progress.
fn publish_gated(
    at: SocketAddr,
    topic: u32,
    publisher: u32,
    n: u64,
    len: usize,
    read: Arc<AtomicU64>,
) -> TcpStream {
    let mut s = connect(at);
    let mut w = Vec::new();
    for seq in 0..n {
        let since = std::time::Instant::now();
        while seq >= read.load(Ordering::Acquire) + WINDOW {
            if !w.is_empty() {
                s.write_all(&w).unwrap();
                w.clear();
            }
            assert!(
                since.elapsed() < Duration::from_secs(60),
                "the healthy subscriber read nothing for a minute at {seq}"
            );
            std::thread::sleep(Duration::from_micros(200));
        }
        pub_frame(&mut w, topic, publisher, seq, len);
        if w.len() > 32 * 1024 || seq + 1 == n {
            s.write_all(&w).unwrap();
            w.clear();
        }
    }
    s
}

/// Reads until `publisher` has `n` messages verified, telling `read` as it goes.
fn until_telling(sub: &mut Sub, publisher: u32, n: u64, read: &AtomicU64) {
    while sub.check.verified(publisher) < n {
        assert!(
            sub.read_some(),
            "closed at {} of {n} from publisher {publisher}",
            sub.check.verified(publisher)
        );
        read.store(sub.check.verified(publisher), Ordering::Release);
    }
}

#[test]
fn a_slow_subscriber_is_disconnected_and_counted_the_others_get_everything() {
    for id in ids() {
        println!("model {id}");
        let srv = Server::start(id, "pubsub", &[], None);
        let len = 16 * 1024;
        // 32 MiB: past the slow one's socket buffers, the 4 MiB queue and the 4 MiB taken.
        let n = 2048u64;
        let mut slow = Sub::new(&srv, 1, 0, len);
        let mut fast = Sub::new(&srv, 1, 1, len);
        let at = srv.addr;
        let read = Arc::new(AtomicU64::new(0));
        let gate = read.clone();
        let p = std::thread::spawn(move || publish_gated(at, 1, 5, n, len, gate));
        // The healthy subscriber pauses as a busy machine pauses a thread, and must lose
        // nothing: see WINDOW.
        until_telling(&mut fast, 5, n / 4, &read);
        std::thread::sleep(HEALTHY_PAUSE);
        until_telling(&mut fast, 5, n, &read);
        drop(p.join().unwrap());
        // The slow one got a verified prefix, then the broker closed it.
        while slow.read_some() {}
        assert!(slow.got < n, "{id}: the slow subscriber got all {n}");
        let (st, c) = srv.stop();
        assert!(st.success(), "{id}: {st}");
        assert_eq!(counter(&c, "slow_disconnects"), 1, "{id}: {c}");
        // Queued: the fast one's, the handshakes (1 + 2), the slow one's received prefix, and
        // what sat in its queue and in flight when it was closed.
        let queued = counter(&c, "delivered");
        let floor = n + 3 + slow.got;
        // A loop that takes the queue to send it (io_uring, blocking) holds the taken bytes
        // and a full queue: twice the bound.
        let bound = 2 * (ringside::proto::pubsub::DEFAULT_QUEUE_BYTES / len) as u64;
        assert!(
            (floor..=floor + bound).contains(&queued),
            "{id}: {queued} queued, want {floor}..={}: {c}",
            floor + bound
        );
    }
}

#[test]
fn a_subscriber_that_resets_costs_the_others_nothing() {
    for id in ids() {
        println!("model {id}");
        let srv = Server::start(id, "pubsub", &[], None);
        let len = 64;
        let n = 5000u64;
        let mut keeps = Sub::new(&srv, 1, 0, len);
        let mut quits = Sub::new(&srv, 1, 1, len);
        let p1 = publish(srv.addr, 1, 7, n, len, 0);
        quits.until(7, 10);
        reset(quits.s);
        let p2 = publish(srv.addr, 1, 8, n, len, 0);
        keeps.until(7, n);
        keeps.until(8, n);
        // Bytes that are not frames close that connection, and only it.
        let mut bad = srv.connect();
        bad.write_all(&[0xff; 64]).unwrap();
        let mut rest = Vec::new();
        let _ = bad.read_to_end(&mut rest);
        assert!(rest.is_empty(), "{id}");
        let mut late = Sub::new(&srv, 1, 2, len);
        let _p3 = publish(srv.addr, 1, 9, 10, len, 0);
        late.until(9, 10);
        keeps.until(9, 10);
        drop((p1, p2));
        let (st, c) = srv.stop();
        assert!(st.success(), "{id}: {st}");
        assert_eq!(counter(&c, "slow_disconnects"), 0, "{id}: {c}");
    }
}

#[test]
fn a_model_without_a_broker_is_refused() {
    for (id, why) in [("threadpool", ""), ("uring-zc", "SEND_ZC")] {
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("ringside"))
            .args(["serve", "--protocol", "pubsub", "--model", id])
            .args(["--addr", "127.0.0.1:0"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{id}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(id) && err.contains(why) && err.contains("epoll-et, "),
            "{err}"
        );
        if id == "uring-zc" {
            assert!(
                !err.contains("uring-zc, "),
                "the valid list names it: {err}"
            );
        }
    }
}

/// The load generator (`load::pubsub`) over three load threads: subscribers of both topics
/// spread over the threads (the third thread has no publisher), every delivery verified per
/// publisher sequence, the threads' counts and histograms added into one report, and the
/// warm-up settled (every subscriber had its first delivery before the window opened).
#[test]
fn the_load_generator_spreads_subscribers_over_threads_and_verifies_every_delivery() {
    use ringside::load::pubsub::Pubsub;
    let srv = Server::start("epoll-et", "pubsub", &[], None);
    let ex = Pubsub {
        publishers: 2,
        fanout: 10,
        payload_bytes: 512,
    };
    let mut cfg = ringside::load::Config::new(srv.addr, ex.conns(), Duration::from_millis(500));
    cfg.warmup = Duration::from_millis(100);
    cfg.rate = Some(2000.0);
    cfg.threads = 3;
    let r = ringside::load::run(&cfg, &ex, &mut |_| {}).unwrap();
    assert_eq!(r.threads, 3, "{r:?}");
    assert_eq!(r.unverified(), None);
    assert_eq!(r.errors(), 0, "{:?}", r.first_error);
    assert_eq!(r.n.live_conns, 22, "every subscriber and publisher lived");
    assert_eq!(
        r.n.unsettled_conns, 0,
        "every subscriber had its first delivery"
    );
    assert!(r.warmup_ns >= 100_000_000, "{}", r.warmup_ns);
    assert!(r.n.msgs > 0);
    assert_eq!(
        r.latency.len(),
        r.n.msgs,
        "one latency per delivery, over every thread"
    );
    assert_eq!(r.n.bytes, r.n.msgs * 512);
    assert_eq!(r.n.verified_bytes, r.n.bytes);
    // Each delivery in the timeline too, over every thread: 100 ms intervals over the window.
    let t = r.timeline.as_ref().expect("a timeline");
    assert_eq!(t.step_ns, 100_000_000);
    assert_eq!(t.window_ns, r.window_ns);
    assert_eq!(t.ops.len() as u64, r.window_ns.div_ceil(t.step_ns));
    assert_eq!(t.ops.iter().sum::<u64>(), r.n.msgs, "{t:?}");
    let most = t.latency_max_ns.iter().max().copied().unwrap();
    let h = r.latency.inner();
    assert!(
        h.equivalent(most, h.max()),
        "the longest delivery is in an interval: {most} against {}",
        h.max()
    );
    // No more deliveries than fan-out x the messages published by the window's end.
    let published = 2000.0 * (r.warmup_ns + r.window_ns) as f64 / 1e9 + 2.0;
    assert!(
        r.n.msgs as f64 <= 10.0 * published,
        "{} deliveries of {published} publishes",
        r.n.msgs
    );
    let (st, c) = srv.stop();
    assert!(st.success(), "{st}");
    assert_eq!(counter(&c, "slow_disconnects"), 0, "{c}");
    assert!(counter(&c, "delivered") >= r.n.msgs, "{c}");
}
