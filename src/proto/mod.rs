//! Sans-I/O protocols (anchors-style P8): a protocol is a state machine fed the bytes a
//! connection received; the server loops only move bytes. Protocol correctness is tested here
//! once, without sockets, and every model inherits it.
//!
//! The contract a loop relies on:
//! - `on_bytes` always consumes all of `input`. A protocol that needs more bytes to make sense
//!   of a message (HTTP headers split over reads) keeps them in its `Conn`, bounded, and answers
//!   `Next::Close` with an error reply when the bound is hit (431 for HTTP).
//! - The reply is either `Reply::Input` ("these input bytes, verbatim": echo), which lets a
//!   loop send straight from its receive buffer, io_uring's provided buffer included, without a
//!   copy; or `Reply::Out` ("what I appended to `out`"), for replies the protocol writes.
//! - `Next::Close` means: send what is pending (including this reply), then close. Pipelined
//!   requests are answered in order because the loop sends replies in the order they are made.
//! - Backpressure belongs to the loop: it stops reading (stops calling `on_bytes`) while a
//!   connection's unsent output is over [`OUT_BOUND_BYTES`], and resumes when it drains.
//! - Idle connections belong to the loop too: with [`Protocol::idle_timeout`] set, a
//!   connection that gets no reply for that long is closed (`idle_closes`); see `io::idle`.

pub(crate) mod echo;
pub mod http;
pub mod pubsub;
pub mod stream;
pub mod udp;

pub use echo::Echo;
pub use http::Http;
pub(crate) use stream::Stream;

/// What `ringside serve --protocol` serves: the wire a server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServeProtocol {
    Echo,
    Http,
    /// Bulk transfer: read, verify and discard (`proto::stream`).
    Sink,
    /// Bulk transfer: pattern bytes on request.
    Source,
    /// The broker (`proto::pubsub`).
    Pubsub,
    /// UDP datagrams echoed to their source (`proto::udp`).
    UdpEcho,
    /// The same, the socket's UDP_GRO set: coalesced runs echoed with UDP_SEGMENT
    /// (`io::udp_gso`, `udp.echo_gso`).
    UdpEchoGro,
}

impl ServeProtocol {
    /// Its name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ServeProtocol::Echo => "echo",
            ServeProtocol::Http => "http",
            ServeProtocol::Sink => "sink",
            ServeProtocol::Source => "source",
            ServeProtocol::Pubsub => "pubsub",
            ServeProtocol::UdpEcho => "udp-echo",
            ServeProtocol::UdpEchoGro => "udp-echo-gro",
        }
    }
}

/// A connection's unsent output above which a server stops reading from it, bytes. Bounds the
/// memory a client that sends and never reads can make the server hold.
pub(crate) const OUT_BOUND_BYTES: usize = 256 * 1024;

/// What to send in answer to the bytes just fed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Nothing to send.
    Nothing,
    /// Send the input bytes themselves, unchanged (echo): no copy needed.
    Input,
    /// Send what the protocol appended to `out`.
    Out,
}

/// What the connection does after the reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Keep reading.
    More,
    /// Send what is pending, then close (HTTP `Connection: close`, 400/431/505).
    Close,
}

/// A protocol's answer to one batch of input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub reply: Reply,
    pub next: Next,
}

/// A wire protocol, independent of how bytes are moved.
pub trait Protocol: Clone + Send + Sync + 'static {
    /// Per-connection state (an HTTP parser's partial request; nothing for echo).
    type Conn: Default + Send;
    /// Stable id used on the command line: "echo", "http".
    fn id(&self) -> &'static str;
    /// Feeds received bytes (all consumed); appends a written reply to `out` when it answers
    /// `Reply::Out`. `out` may already hold unsent bytes: append, never clear.
    fn on_bytes(&self, conn: &mut Self::Conn, input: &[u8], out: &mut Vec<u8>) -> Step;
    /// The peer closed its sending side (FIN). Return `Reply::Out` to append a last reply
    /// (e.g. an error for a truncated request); the loop then flushes and closes.
    fn on_eof(&self, _conn: &mut Self::Conn, _out: &mut Vec<u8>) -> Reply {
        Reply::Nothing
    }
    /// A connection that has gone this long without the protocol making a reply (counted from
    /// accept, then from each reply: `Reply::Input` or `Reply::Out`) is closed by the server
    /// loop; slowloris defence. `None` (echo): never.
    fn idle_timeout(&self) -> Option<std::time::Duration> {
        None
    }
}

/// `inner` with its idle timeout replaced by `idle` (`ringside serve --idle-timeout-ms`);
/// everything else delegates.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WithIdle<P> {
    pub(crate) inner: P,
    /// The timeout the server loops enforce; `None`: never.
    pub(crate) idle: Option<std::time::Duration>,
}

impl<P: Protocol> Protocol for WithIdle<P> {
    type Conn = P::Conn;

    fn id(&self) -> &'static str {
        self.inner.id()
    }

    #[inline]
    fn on_bytes(&self, conn: &mut Self::Conn, input: &[u8], out: &mut Vec<u8>) -> Step {
        self.inner.on_bytes(conn, input, out)
    }

    #[inline]
    fn on_eof(&self, conn: &mut Self::Conn, out: &mut Vec<u8>) -> Reply {
        self.inner.on_eof(conn, out)
    }

    #[inline]
    fn idle_timeout(&self) -> Option<std::time::Duration> {
        self.idle
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_idle_overrides_only_the_timeout() {
        let d = std::time::Duration::from_millis(250);
        let w = WithIdle {
            inner: Echo,
            idle: Some(d),
        };
        assert_eq!(Echo.idle_timeout(), None, "echo never times out");
        assert_eq!(w.idle_timeout(), Some(d));
        assert_eq!(w.id(), "echo");
        let mut out = Vec::new();
        let s = w.on_bytes(&mut (), b"x", &mut out);
        assert_eq!(s.reply, Reply::Input);
        assert_eq!(w.on_eof(&mut (), &mut out), Reply::Nothing);
        let never = WithIdle {
            inner: Echo,
            idle: None,
        };
        assert_eq!(never.idle_timeout(), None);
    }
}
