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

pub mod echo;
pub mod http;

pub use echo::Echo;
pub use http::Http;

/// A connection's unsent output above which a server stops reading from it, bytes. Bounds the
/// memory a client that sends and never reads can make the server hold.
pub const OUT_BOUND_BYTES: usize = 256 * 1024;

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
}
