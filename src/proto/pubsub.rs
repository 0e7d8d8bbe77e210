//! Publish/subscribe (`pubsub.fanout`): a small framed protocol
//! and the broker's delivery bookkeeping, both sans-I/O, so every server family can share
//! them and they are tested here once, without sockets.
//!
//! Frames (every integer little-endian): `len: u32` (the bytes after it, at most
//! [`MAX_FRAME`]), `kind: u8`, then
//! - `SUB` / `UNSUB`: `topic: u32`;
//! - `PUB` (client -> server) and `MSG` (server -> subscriber, the same frame with its kind
//!   changed, so a broker forwards the bytes it received): `topic: u32`, `publisher: u32`,
//!   `seq: u64` (per publisher, from 0), `ts_ns: u64` (the publisher's CLOCK_MONOTONIC at
//!   send, for publish-to-delivery latency on the same host), then the payload.
//!
//! [`Decoder`] splits a connection's bytes into frames: whole frames are handed out of the
//! input without a copy, a frame split over reads is kept (at most one frame, bounded by
//! [`MAX_FRAME`]); a length over the bound, under the smallest frame, or an unknown kind is an
//! error (the server closes that connection).
//!
//! [`Hub`] is the delivery state one event loop keeps: which subscribers each topic has, and
//! a bounded queue of bytes per subscriber ([`Hub::queue_bytes`]). A published frame is
//! appended (as `MSG`) to the queue of every subscriber of its topic; a subscriber whose queue
//! would overflow is **disconnected** ([`Fanout::disconnect`], counted in
//! `HubCounters::slow_disconnects`), never silently skipped: a subscriber that stays connected
//! gets every message of its topics, in order, so the load generator's per-publisher sequence
//! check can demand no loss and no duplicate. Nothing a client sends grows the hub without
//! bound: a connection subscribes to at most [`MAX_TOPICS_PER_CONN`] topics and the hub holds
//! at most [`MAX_SUBSCRIPTIONS`] (more `SUB`s are refused and counted,
//! `HubCounters::refused_subs`); a subscriber with a backlog is disconnected once the queues
//! together hold [`MAX_QUEUED_BYTES`], and so memory is bounded by that plus one frame per
//! subscriber; a connection's removal costs its own subscriptions, not every topic.
//!
//! The one cross-connection mechanism every broker loop shares is [`Hub::on_bytes`]: a
//! connection's received bytes go through its [`Decoder`] into the hub, which answers in a
//! [`Fanout`] which subscriber connections now have bytes queued (the loop sends
//! [`Hub::pending`] on each and arms its send when the socket does not take all, then calls
//! [`Hub::sent`]) and which to disconnect (queue full). Loops never copy the frames themselves.

use std::collections::HashMap;

/// The default bound of one subscriber's queued bytes (`ringside serve --protocol pubsub`):
/// 4 MiB beyond the socket's own buffer (256 messages of 16 KiB, ~45,000 of 64 B): on a busy
/// 2-vCPU machine 1 MiB (40 ms of a 25,000 msgs/s topic at 1 KiB) was less than one stall of
/// the load thread, and healthy subscribers were disconnected. The broker's memory stays
/// within subscribers x this bound.
pub const DEFAULT_QUEUE_BYTES: usize = 4 << 20;

/// The largest frame after its length field, bytes: a 64 KiB payload plus the header.
pub(crate) const MAX_FRAME: usize = (64 << 10) + PUB_HEADER;
/// `kind` + `topic` + `publisher` + `seq` + `ts_ns`.
pub(crate) const PUB_HEADER: usize = 1 + 4 + 4 + 8 + 8;

pub(crate) const SUB: u8 = 1;
pub(crate) const UNSUB: u8 = 2;
pub const PUB: u8 = 3;
pub(crate) const MSG: u8 = 4;

/// One published message as it travels (`PUB` or `MSG`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Publish<'a> {
    pub topic: u32,
    pub publisher: u32,
    pub seq: u64,
    pub ts_ns: u64,
    pub payload: &'a [u8],
}

/// A decoded frame. `raw` of a publish is the whole frame, length field included, for
/// forwarding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    Sub { topic: u32 },
    Unsub { topic: u32 },
    Pub { msg: Publish<'a>, raw: &'a [u8] },
    Msg { msg: Publish<'a>, raw: &'a [u8] },
}

/// Why a connection's bytes are not this protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// A length field over [`MAX_FRAME`] or under the smallest frame of its kind.
    BadLength(u32),
    UnknownKind(u8),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::BadLength(n) => write!(f, "frame length {n} (valid: 5..={MAX_FRAME})"),
            FrameError::UnknownKind(k) => write!(f, "unknown frame kind {k}"),
        }
    }
}

/// Appends a `SUB` (or `UNSUB` when `sub` is false) frame.
pub fn encode_sub(out: &mut Vec<u8>, topic: u32, sub: bool) {
    out.extend_from_slice(&5u32.to_le_bytes());
    out.push(if sub { SUB } else { UNSUB });
    out.extend_from_slice(&topic.to_le_bytes());
}

/// Appends a `PUB` frame (`MSG` when `kind` is [`MSG`]).
pub fn encode_pub(out: &mut Vec<u8>, kind: u8, m: &Publish<'_>) {
    out.extend_from_slice(&((PUB_HEADER + m.payload.len()) as u32).to_le_bytes());
    out.push(kind);
    out.extend_from_slice(&m.topic.to_le_bytes());
    out.extend_from_slice(&m.publisher.to_le_bytes());
    out.extend_from_slice(&m.seq.to_le_bytes());
    out.extend_from_slice(&m.ts_ns.to_le_bytes());
    out.extend_from_slice(m.payload);
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Parses one whole frame (`raw` = length field + body).
fn parse(raw: &[u8]) -> Result<Frame<'_>, FrameError> {
    let body = &raw[4..];
    match body[0] {
        SUB | UNSUB if body.len() == 5 => {
            let topic = u32_at(body, 1);
            Ok(if body[0] == SUB {
                Frame::Sub { topic }
            } else {
                Frame::Unsub { topic }
            })
        }
        PUB | MSG if body.len() >= PUB_HEADER => {
            let msg = Publish {
                topic: u32_at(body, 1),
                publisher: u32_at(body, 5),
                seq: u64_at(body, 9),
                ts_ns: u64_at(body, 17),
                payload: &body[PUB_HEADER..],
            };
            Ok(if body[0] == PUB {
                Frame::Pub { msg, raw }
            } else {
                Frame::Msg { msg, raw }
            })
        }
        SUB | UNSUB | PUB | MSG => Err(FrameError::BadLength(body.len() as u32)),
        k => Err(FrameError::UnknownKind(k)),
    }
}

/// Splits a byte stream into frames; keeps at most one partial frame.
#[derive(Debug, Default)]
pub struct Decoder {
    partial: Vec<u8>,
}

impl Decoder {
    /// Feeds received bytes; calls `each` for every whole frame, in order. After an error
    /// the connection is not this protocol: the caller closes it (the frames before the error
    /// were handed out).
    pub fn feed(
        &mut self,
        mut input: &[u8],
        mut each: impl FnMut(Frame<'_>),
    ) -> Result<(), FrameError> {
        // Complete a frame split over reads first.
        if !self.partial.is_empty() {
            let need = self.need(&self.partial)?;
            let take = (need - self.partial.len()).min(input.len());
            self.partial.extend_from_slice(&input[..take]);
            input = &input[take..];
            // The length may only now be known.
            let need = self.need(&self.partial)?;
            if self.partial.len() < need {
                if take > 0 && !input.is_empty() {
                    return self.feed(input, each);
                }
                return Ok(());
            }
            let whole = std::mem::take(&mut self.partial);
            each(parse(&whole)?);
            self.partial = whole;
            self.partial.clear();
        }
        while !input.is_empty() {
            let need = self.need(input)?;
            if input.len() < need {
                self.partial.extend_from_slice(input);
                return Ok(());
            }
            each(parse(&input[..need])?);
            input = &input[need..];
        }
        Ok(())
    }

    /// The whole size of the frame `b` starts with (length field included), as far as known:
    /// 4 while the length field itself is incomplete.
    fn need(&self, b: &[u8]) -> Result<usize, FrameError> {
        if b.len() < 4 {
            return Ok(4);
        }
        let n = u32_at(b, 0);
        if !(5..=MAX_FRAME as u32).contains(&n) {
            return Err(FrameError::BadLength(n));
        }
        Ok(4 + n as usize)
    }
}

/// Topics one connection may subscribe to; more `SUB`s are refused (and counted). The
/// benchmark's subscribers take one each.
pub(crate) const MAX_TOPICS_PER_CONN: usize = 1024;
/// Subscriptions one hub holds, over every connection (one broker loop); more are refused.
pub(crate) const MAX_SUBSCRIPTIONS: usize = 1 << 18;
/// Bytes all the subscriber queues of one hub may hold together: past it, a subscriber that
/// already has a backlog is disconnected rather than queued to (one that keeps up, with an
/// empty queue, still gets its message).
pub(crate) const MAX_QUEUED_BYTES: usize = 64 << 20;

/// A subscriber's id in a [`Hub`]: the family's connection index.
pub(crate) type SubId = usize;

/// What a hub counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HubCounters {
    pub(crate) published: u64,
    /// Messages appended to a subscriber's queue (one per subscriber reached; those still
    /// queued when a subscriber is disconnected are dropped with it).
    pub(crate) delivered: u64,
    /// Subscribers disconnected because their queue would overflow (their own bound, or the
    /// hub's over all queues).
    pub(crate) slow_disconnects: u64,
    /// `SUB`s refused: past [`MAX_TOPICS_PER_CONN`] or [`MAX_SUBSCRIPTIONS`].
    pub(crate) refused_subs: u64,
}

/// What one publish did: the subscribers whose queue went from empty to non-empty (wake their
/// writers) and those to disconnect (queue full).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Fanout {
    pub(crate) woken: Vec<SubId>,
    pub(crate) disconnect: Vec<SubId>,
}

/// The delivery state of one event loop: topic -> subscribers, subscriber -> bounded queue.
#[derive(Debug)]
pub(crate) struct Hub {
    queue_bytes: usize,
    topics: HashMap<u32, Vec<SubId>>,
    /// Each connection's topics: what its removal has to visit.
    subs_of: HashMap<SubId, Vec<u32>>,
    subscriptions: usize,
    queues: HashMap<SubId, Vec<u8>>,
    /// Bytes in all the queues (not those taken and in flight).
    queued: usize,
    pub(crate) counters: HubCounters,
}

impl Hub {
    /// A hub whose subscriber queues hold at most `queue_bytes` each.
    pub(crate) fn new(queue_bytes: usize) -> Hub {
        Hub {
            queue_bytes,
            topics: HashMap::new(),
            subs_of: HashMap::new(),
            subscriptions: 0,
            queues: HashMap::new(),
            queued: 0,
            counters: HubCounters::default(),
        }
    }

    /// Subscribes `sub` to `topic`, unless it already is, or it holds
    /// [`MAX_TOPICS_PER_CONN`], or the hub [`MAX_SUBSCRIPTIONS`]: then refused and counted.
    pub(crate) fn subscribe(&mut self, sub: SubId, topic: u32) {
        let mine = self.subs_of.entry(sub).or_default();
        if mine.contains(&topic) {
            return;
        }
        if mine.len() >= MAX_TOPICS_PER_CONN || self.subscriptions >= MAX_SUBSCRIPTIONS {
            self.counters.refused_subs += 1;
            return;
        }
        mine.push(topic);
        self.subscriptions += 1;
        self.topics.entry(topic).or_default().push(sub);
        self.queues.entry(sub).or_default();
    }

    pub(crate) fn unsubscribe(&mut self, sub: SubId, topic: u32) {
        let Some(mine) = self.subs_of.get_mut(&sub) else {
            return;
        };
        let before = mine.len();
        mine.retain(|&t| t != topic);
        if mine.len() == before {
            return;
        }
        self.subscriptions -= 1;
        self.drop_from_topic(sub, topic);
    }

    fn drop_from_topic(&mut self, sub: SubId, topic: u32) {
        if let Some(subs) = self.topics.get_mut(&topic) {
            subs.retain(|&s| s != sub);
            if subs.is_empty() {
                self.topics.remove(&topic);
            }
        }
    }

    /// A connection is gone: forget its subscriptions (visiting only its own topics) and its
    /// queue.
    pub(crate) fn remove(&mut self, sub: SubId) {
        for topic in self.subs_of.remove(&sub).unwrap_or_default() {
            self.subscriptions -= 1;
            self.drop_from_topic(sub, topic);
        }
        if let Some(q) = self.queues.remove(&sub) {
            self.queued -= q.len();
        }
    }

    /// Appends the `PUB` frame `raw` as a `MSG` to the queue of every subscriber of `topic`
    /// (the publisher itself too, if it subscribed). A subscriber whose queue would exceed
    /// the bound gets nothing more: it is listed to disconnect and removed.
    pub(crate) fn publish(&mut self, topic: u32, raw: &[u8]) -> Fanout {
        self.counters.published += 1;
        let mut f = Fanout::default();
        let Some(subs) = self.topics.get(&topic) else {
            return f;
        };
        for &s in subs {
            let q = self.queues.entry(s).or_default();
            let over_own = q.len() + raw.len() > self.queue_bytes;
            let over_all = !q.is_empty() && self.queued + raw.len() > MAX_QUEUED_BYTES;
            if over_own || over_all {
                f.disconnect.push(s);
                continue;
            }
            if q.is_empty() {
                f.woken.push(s);
            }
            let at = q.len();
            q.extend_from_slice(raw);
            q[at + 4] = MSG;
            self.queued += raw.len();
            self.counters.delivered += 1;
        }
        for &s in &f.disconnect {
            self.remove(s);
            self.counters.slow_disconnects += 1;
        }
        f
    }

    /// Feeds connection `conn`'s received bytes through its decoder: `SUB`/`UNSUB` change its
    /// subscriptions, each `PUB` is fanned out; the subscribers woken and those to disconnect
    /// are appended to `f` (a subscriber may be in both: disconnect wins). A `MSG` from a
    /// client, or bytes that are not frames, is an error: the caller closes `conn` (and calls
    /// [`Hub::remove`]).
    pub(crate) fn on_bytes(
        &mut self,
        conn: SubId,
        dec: &mut Decoder,
        input: &[u8],
        f: &mut Fanout,
    ) -> Result<(), FrameError> {
        let mut bad = None;
        dec.feed(input, |fr| {
            if bad.is_some() {
                return;
            }
            match fr {
                Frame::Sub { topic } => self.subscribe(conn, topic),
                Frame::Unsub { topic } => self.unsubscribe(conn, topic),
                Frame::Pub { msg, raw } => {
                    let one = self.publish(msg.topic, raw);
                    f.woken.extend(one.woken);
                    f.disconnect.extend(one.disconnect);
                }
                Frame::Msg { .. } => bad = Some(FrameError::UnknownKind(MSG)),
            }
        })?;
        match bad {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Whether `sub` is a subscriber with a queue (not removed).
    pub(crate) fn has_queue(&self, sub: SubId) -> bool {
        self.queues.contains_key(&sub)
    }

    /// Subscriber `sub`'s queued bytes (to send from).
    pub(crate) fn pending(&self, sub: SubId) -> &[u8] {
        self.queues.get(&sub).map_or(&[], |q| q.as_slice())
    }

    /// `n` bytes of `sub`'s queue were sent.
    pub(crate) fn sent(&mut self, sub: SubId, n: usize) {
        if let Some(q) = self.queues.get_mut(&sub) {
            let n = n.min(q.len());
            q.drain(..n);
            self.queued -= n;
        }
    }

    /// Takes all of `sub`'s queued bytes at once, for a loop whose send must own its buffer
    /// until it completes (io_uring, a writer thread, an async task): `into` (cleared here)
    /// becomes the queue, so buffers are swapped, never copied, and a loop that alternates two
    /// reuses both. The queue starts empty again: the next publish wakes `sub` again. A loop
    /// takes again only once its last take is sent, so a subscriber holds at most twice
    /// [`Hub::queue_bytes`] (the queue and the bytes in flight). False: nothing queued (or
    /// no such subscriber), `into` untouched but cleared.
    pub(crate) fn take(&mut self, sub: SubId, into: &mut Vec<u8>) -> bool {
        into.clear();
        match self.queues.get_mut(&sub) {
            Some(q) if !q.is_empty() => {
                self.queued -= q.len();
                std::mem::swap(q, into);
                true
            }
            _ => false,
        }
    }
}

/// Byte `j` of the payload of publisher `publisher`'s message `seq`: a function of all three,
/// so a message delivered to the wrong place, twice, or with its bytes shifted is caught.
#[inline]
pub(crate) fn payload_byte(publisher: u32, seq: u64, j: usize) -> u8 {
    (publisher as u64)
        .wrapping_mul(0x9E37)
        .wrapping_add(seq.wrapping_mul(31))
        .wrapping_add(j as u64) as u8
}

/// Appends the `len`-byte payload of `publisher`'s message `seq`.
pub fn fill_payload(out: &mut Vec<u8>, publisher: u32, seq: u64, len: usize) {
    out.extend((0..len).map(|j| payload_byte(publisher, seq, j)));
}

/// Why a delivered message does not verify.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bad {
    /// Its sequence is past the next expected one: messages were lost.
    Gap { publisher: u32, want: u64, got: u64 },
    /// Its sequence is before the next expected one: a duplicate or a reordering.
    Repeat { publisher: u32, want: u64, got: u64 },
    /// Its payload has a wrong byte (at this offset) or the wrong length.
    Payload { publisher: u32, seq: u64, at: usize },
}

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bad::Gap {
                publisher,
                want,
                got,
            } => {
                write!(
                    f,
                    "publisher {publisher}: got seq {got}, expected {want} (lost)"
                )
            }
            Bad::Repeat {
                publisher,
                want,
                got,
            } => write!(
                f,
                "publisher {publisher}: got seq {got}, expected {want} (duplicate or reordered)"
            ),
            Bad::Payload { publisher, seq, at } => {
                write!(
                    f,
                    "publisher {publisher} seq {seq}: wrong payload byte at {at}"
                )
            }
        }
    }
}

/// One subscriber's check of what it is delivered: per publisher, sequences 0, 1, 2... with
/// no gap and no repeat, and every payload byte (`payload_len` long).
#[derive(Debug, Default)]
pub struct SeqCheck {
    next: HashMap<u32, u64>,
}

impl SeqCheck {
    /// Checks one delivered message against what `publisher` must have sent next.
    pub fn check(&mut self, m: &Publish<'_>, payload_len: usize) -> Result<(), Bad> {
        let want = self.next.entry(m.publisher).or_insert(0);
        if m.seq != *want {
            let (publisher, want, got) = (m.publisher, *want, m.seq);
            return Err(if got > want {
                Bad::Gap {
                    publisher,
                    want,
                    got,
                }
            } else {
                Bad::Repeat {
                    publisher,
                    want,
                    got,
                }
            });
        }
        let at = if m.payload.len() != payload_len {
            Some(m.payload.len().min(payload_len))
        } else {
            m.payload
                .iter()
                .enumerate()
                .position(|(j, &b)| b != payload_byte(m.publisher, m.seq, j))
        };
        if let Some(at) = at {
            return Err(Bad::Payload {
                publisher: m.publisher,
                seq: m.seq,
                at,
            });
        }
        *want += 1;
        Ok(())
    }

    /// The next sequence expected from `publisher` (= how many were verified).
    pub fn verified(&self, publisher: u32) -> u64 {
        self.next.get(&publisher).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(topic: u32, seq: u64, payload: &[u8]) -> Publish<'_> {
        Publish {
            topic,
            publisher: 7,
            seq,
            ts_ns: 1000 + seq,
            payload,
        }
    }

    #[test]
    fn frames_round_trip_split_anywhere() {
        let mut wire = Vec::new();
        encode_sub(&mut wire, 3, true);
        let payload = vec![0xabu8; 1000];
        for seq in 0..3 {
            encode_pub(&mut wire, PUB, &msg(3, seq, &payload));
        }
        encode_sub(&mut wire, 3, false);
        let mut want = Vec::new();
        Decoder::default()
            .feed(&wire, |f| want.push(format!("{f:?}")))
            .unwrap();
        assert_eq!(want.len(), 5);
        assert!(want[0].starts_with("Sub { topic: 3"));
        for step in [1usize, 3, 4, 5, 29, 1000, 1029] {
            let mut d = Decoder::default();
            let mut got = Vec::new();
            for piece in wire.chunks(step) {
                d.feed(piece, |f| got.push(format!("{f:?}"))).unwrap();
            }
            assert_eq!(got, want, "pieces of {step}");
            assert!(d.partial.is_empty());
        }
    }

    #[test]
    fn seq_check_names_loss_repeat_and_bad_bytes() {
        let mut p = Vec::new();
        fill_payload(&mut p, 7, 0, 64);
        let mut c = SeqCheck::default();
        assert_eq!(c.check(&msg(1, 0, &p), 64), Ok(()));
        assert_eq!(
            c.check(&msg(1, 0, &p), 64),
            Err(Bad::Repeat {
                publisher: 7,
                want: 1,
                got: 0
            })
        );
        let mut p2 = Vec::new();
        fill_payload(&mut p2, 7, 2, 64);
        assert_eq!(
            c.check(&msg(1, 2, &p2), 64),
            Err(Bad::Gap {
                publisher: 7,
                want: 1,
                got: 2
            })
        );
        // Seq 1 with seq 0's payload: caught at byte 0.
        assert_eq!(
            c.check(&msg(1, 1, &p), 64),
            Err(Bad::Payload {
                publisher: 7,
                seq: 1,
                at: 0
            })
        );
        let mut p1 = Vec::new();
        fill_payload(&mut p1, 7, 1, 64);
        assert_eq!(c.check(&msg(1, 1, &p1), 64), Ok(()));
        assert_eq!(c.verified(7), 2);
        assert_eq!(c.verified(8), 0);
    }

    #[test]
    fn bad_lengths_and_kinds_are_errors() {
        let mut d = Decoder::default();
        let huge = ((MAX_FRAME + 1) as u32).to_le_bytes();
        assert_eq!(
            d.feed(&huge, |_| {}),
            Err(FrameError::BadLength(MAX_FRAME as u32 + 1))
        );
        let mut d = Decoder::default();
        let mut f = 5u32.to_le_bytes().to_vec();
        f.extend_from_slice(&[9, 0, 0, 0, 0]);
        assert_eq!(d.feed(&f, |_| {}), Err(FrameError::UnknownKind(9)));
        // A PUB shorter than its header.
        let mut d = Decoder::default();
        let mut f = 6u32.to_le_bytes().to_vec();
        f.extend_from_slice(&[PUB, 0, 0, 0, 0, 0]);
        assert_eq!(d.feed(&f, |_| {}), Err(FrameError::BadLength(6)));
    }

    /// Issue 28 item 10: one connection subscribing to 2,000,000 topics took the broker from
    /// 6 MB to 235 MB and made every later close scan every topic. Now a connection holds at
    /// most MAX_TOPICS_PER_CONN, the hub MAX_SUBSCRIPTIONS, the rest refused and counted, and
    /// a removal visits the connection's own topics.
    #[test]
    fn subscriptions_are_capped_per_connection_and_in_total() {
        let mut h = Hub::new(DEFAULT_QUEUE_BYTES);
        for t in 0..2_000_000u32 {
            h.subscribe(0, t);
        }
        assert_eq!(h.topics.len(), MAX_TOPICS_PER_CONN);
        assert_eq!(
            h.counters.refused_subs,
            2_000_000 - MAX_TOPICS_PER_CONN as u64
        );
        // Over many connections, the hub's own bound.
        let conns = MAX_SUBSCRIPTIONS / MAX_TOPICS_PER_CONN + 2;
        for c in 1..conns {
            for t in 0..MAX_TOPICS_PER_CONN as u32 {
                h.subscribe(c, t);
            }
        }
        assert_eq!(h.subscriptions, MAX_SUBSCRIPTIONS);
        let held: usize = h.topics.values().map(Vec::len).sum();
        assert_eq!(held, MAX_SUBSCRIPTIONS);
        // Removing a connection frees its own subscriptions, and only those.
        h.remove(0);
        assert_eq!(h.subscriptions, MAX_SUBSCRIPTIONS - MAX_TOPICS_PER_CONN);
        assert!(h.topics.values().all(|v| !v.contains(&0)));
        h.subscribe(conns, 7);
        assert!(h.topics[&7].contains(&conns), "room again after a removal");
        // Unsubscribing what it does not hold changes nothing.
        h.unsubscribe(conns, 8);
        assert_eq!(h.subscriptions, MAX_SUBSCRIPTIONS - MAX_TOPICS_PER_CONN + 1);
    }

    /// Issue 28 item 10: 100 subscribers that never read reached 400 MB of queues. The hub's
    /// queues together stay within MAX_QUEUED_BYTES (and a frame per subscriber): those with a
    /// backlog are disconnected, and one that keeps up still gets every message.
    #[test]
    fn the_hubs_queues_together_are_bounded() {
        let mut h = Hub::new(DEFAULT_QUEUE_BYTES);
        let mut raw = Vec::new();
        encode_pub(&mut raw, PUB, &msg(1, 0, &vec![7u8; 60_000]));
        for s in 0..101 {
            h.subscribe(s, 0);
        }
        let mut got = 0usize;
        for _ in 0..1000 {
            let f = h.publish(0, &raw);
            // Subscriber 100 keeps up: whatever is queued to it is sent at once.
            let n = h.pending(100).len();
            got += n;
            h.sent(100, n);
            assert!(!f.disconnect.contains(&100));
            let total: usize = (0..101).map(|s| h.pending(s).len()).sum();
            assert_eq!(total, h.queued);
            assert!(total <= MAX_QUEUED_BYTES + 101 * raw.len(), "{total}");
        }
        assert_eq!(got, 1000 * raw.len(), "the one that keeps up lost nothing");
        assert!(h.counters.slow_disconnects > 0);
    }

    #[test]
    fn the_hub_fans_out_in_order_and_disconnects_a_full_subscriber() {
        let mut raw = Vec::new();
        encode_pub(&mut raw, PUB, &msg(1, 0, &[1u8; 100]));
        let size = raw.len();
        let mut h = Hub::new(3 * size);
        h.subscribe(10, 1);
        h.subscribe(11, 1);
        h.subscribe(11, 1); // twice: one delivery
        h.subscribe(12, 2);
        let f = h.publish(1, &raw);
        assert_eq!(f.woken, vec![10, 11]);
        assert!(f.disconnect.is_empty());
        // Delivered as MSG, byte for byte otherwise.
        let mut got = Vec::new();
        Decoder::default()
            .feed(h.pending(10), |fr| got.push(fr.to_owned_kind()))
            .unwrap();
        assert_eq!(got, vec![MSG]);
        assert_eq!(&h.pending(10)[5..], &raw[5..]);
        // 10 drains, 11 does not: 11 is disconnected when its queue would overflow.
        for _ in 0..3 {
            h.sent(10, usize::MAX);
            let f = h.publish(1, &raw);
            assert!(f.disconnect.is_empty() || f.disconnect == vec![11]);
        }
        assert_eq!(h.counters.slow_disconnects, 1);
        assert!(h.pending(11).is_empty(), "its queue is gone");
        let f = h.publish(1, &raw);
        assert_eq!(f.disconnect, Vec::<SubId>::new());
        assert_eq!(h.counters.published, 5);
        assert_eq!(h.counters.delivered, 5 + 3, "10 five times, 11 three times");
        // Nobody on topic 3; topic 2's subscriber gets nothing of topic 1.
        assert_eq!(h.publish(3, &raw), Fanout::default());
        assert!(h.pending(12).is_empty());
        h.remove(10);
        assert_eq!(h.publish(1, &raw), Fanout::default());
    }

    #[test]
    fn take_swaps_the_queue_out_and_the_next_publish_wakes_again() {
        let mut raw = Vec::new();
        encode_pub(&mut raw, PUB, &msg(1, 0, &[2u8; 10]));
        let mut h = Hub::new(1 << 20);
        h.subscribe(4, 1);
        let mut spare = vec![9u8; 3];
        assert!(!h.take(4, &mut spare), "nothing queued");
        assert!(spare.is_empty());
        assert_eq!(h.publish(1, &raw).woken, vec![4]);
        assert!(h.publish(1, &raw).woken.is_empty(), "already queued");
        assert!(h.take(4, &mut spare));
        assert_eq!(spare.len(), 2 * raw.len());
        assert!(h.pending(4).is_empty());
        assert_eq!(
            h.publish(1, &raw).woken,
            vec![4],
            "empty again: woken again"
        );
        assert!(!h.take(5, &mut spare), "not a subscriber");
    }

    impl Frame<'_> {
        fn to_owned_kind(self) -> u8 {
            match self {
                Frame::Sub { .. } => SUB,
                Frame::Unsub { .. } => UNSUB,
                Frame::Pub { .. } => PUB,
                Frame::Msg { .. } => MSG,
            }
        }
    }
}
