//! Echo: every received byte is sent back unchanged, in order. The reply is always
//! `Reply::Input`, so loops send from their receive buffer and echo costs no copy.

use super::{Next, Protocol, Reply, Step};

/// The echo protocol (stateless).
#[derive(Clone, Copy, Debug, Default)]
pub struct Echo;

impl Protocol for Echo {
    type Conn = ();

    fn id(&self) -> &'static str {
        "echo"
    }

    #[inline]
    fn on_bytes(&self, _conn: &mut (), input: &[u8], _out: &mut Vec<u8>) -> Step {
        Step {
            reply: if input.is_empty() {
                Reply::Nothing
            } else {
                Reply::Input
            },
            next: Next::More,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_replies_with_the_input_and_writes_nothing() {
        let mut out = b"pending".to_vec();
        let s = Echo.on_bytes(&mut (), b"hello", &mut out);
        assert_eq!(s.reply, Reply::Input);
        assert_eq!(s.next, Next::More);
        assert_eq!(out, b"pending", "echo never touches out");
        let s = Echo.on_bytes(&mut (), b"", &mut out);
        assert_eq!(s.reply, Reply::Nothing);
        assert_eq!(Echo.on_eof(&mut (), &mut out), Reply::Nothing);
    }
}
