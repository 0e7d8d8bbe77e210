//! Connections held idle beside a run (`conn.idle`): opened one after another before the load
//! generator starts, each completing one verified exchange (so the server has accepted it and
//! set up whatever it keeps per connection), then left silent until [`IdleConns::close`].
//! One at a time, so the server's accept queue never overflows and no connect waits for a
//! SYN retry. The load side keeps one socket per connection and one message's buffers in
//! all: its memory is bounded by the count asked for.

use super::{Exchange, Response, Verdict, READ_CHUNK};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// The longest response an idle connection's one exchange may have (an echo is its message).
const MAX_RESPONSE: u64 = 1 << 20;

/// Connections held open and silent.
pub(crate) struct IdleConns {
    socks: Vec<TcpStream>,
}

impl IdleConns {
    /// Opens `n` connections to `target`, connection ids `first_id..first_id + n` (the ids the
    /// exchange carries: apart from the busy connections'), each answering one verified
    /// message within `timeout`. The first failure ends it, saying which connection and why
    /// (a response that did not verify is never held).
    pub(crate) fn open(
        target: SocketAddr,
        n: usize,
        first_id: u32,
        ex: &dyn Exchange,
        timeout: Duration,
    ) -> Result<IdleConns, String> {
        crate::io::sys::raise_nofile(n as u64 + 64).map_err(|e| e.to_string())?;
        let mut socks = Vec::with_capacity(n);
        let (mut out, mut got) = (Vec::new(), Vec::new());
        for i in 0..n {
            let id = first_id + i as u32;
            let s = one(target, id, ex, timeout, &mut out, &mut got)
                .map_err(|e| format!("idle connection {i} of {n} (after {i} were held): {e}"))?;
            socks.push(s);
        }
        Ok(IdleConns { socks })
    }

    /// How many are held.
    pub(crate) fn len(&self) -> usize {
        self.socks.len()
    }

    /// How many are still open and silent now: no bytes, end of stream or error pending on
    /// them (one poll over all of them, not waiting).
    pub(crate) fn live(&self) -> u64 {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        let mut fds: Vec<PollFd<'_>> = self
            .socks
            .iter()
            .map(|s| PollFd::new(s, PollFlags::IN | PollFlags::RDHUP))
            .collect();
        let mut quiet = 0u64;
        for chunk in fds.chunks_mut(4096) {
            // A poll that fails counts none of its chunk live.
            if let Ok(ready) = poll(chunk, Some(&Timespec::default())) {
                quiet += (chunk.len() - ready) as u64;
            }
        }
        quiet
    }

    /// Closes them all.
    pub(crate) fn close(self) {
        drop(self.socks);
    }
}

/// One connection and its verified exchange.
fn one(
    target: SocketAddr,
    id: u32,
    ex: &dyn Exchange,
    timeout: Duration,
    out: &mut Vec<u8>,
    got: &mut Vec<u8>,
) -> io::Result<TcpStream> {
    let mut s = TcpStream::connect_timeout(&target, timeout)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    out.clear();
    ex.request(id, 0, out);
    s.write_all(out)?;
    got.clear();
    let mut chunk = [0u8; 4096];
    loop {
        let want = match ex.response(out, got) {
            Response::NeedMore(k) => k.clamp(1, READ_CHUNK),
            Response::Complete {
                len,
                verdict,
                close,
            } => {
                if len > MAX_RESPONSE {
                    return Err(bad(format!("a response of {len} bytes announced")));
                }
                if (got.len() as u64) < len {
                    (len as usize - got.len()).min(READ_CHUNK)
                } else {
                    match verdict {
                        Verdict::Valid if !close => break,
                        Verdict::Valid => {
                            return Err(bad("the server closes after its answer".into()))
                        }
                        Verdict::Mismatch { at } => {
                            return Err(bad(format!(
                                "its answer did not verify (first wrong byte at {at})"
                            )))
                        }
                        Verdict::Fault(f) => return Err(bad(format!("its answer: {f:?}"))),
                    }
                }
            }
            Response::Unreadable(why) => return Err(bad(why.into())),
        };
        let k = want.min(chunk.len());
        let k = s.read(&mut chunk[..k])?;
        if k == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        got.extend_from_slice(&chunk[..k]);
    }
    Ok(s)
}

fn bad(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::echo::Echo;
    use std::net::TcpListener;

    /// A server that echoes each connection's first message, then keeps it open and silent,
    /// except connection `rude`, which it closes after answering.
    fn server(n: usize, rude: Option<usize>) -> (SocketAddr, std::thread::JoinHandle<()>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let mut held = Vec::new();
            for i in 0..n {
                let (mut s, _) = l.accept().unwrap();
                let mut b = [0u8; 64];
                s.read_exact(&mut b).unwrap();
                s.write_all(&b).unwrap();
                if Some(i) != rude {
                    held.push(s);
                }
            }
            std::thread::sleep(Duration::from_millis(300));
        });
        (a, t)
    }

    #[test]
    fn idle_connections_are_verified_held_and_counted_live() {
        let (a, t) = server(20, Some(7));
        let ex = Echo { msg_bytes: 64 };
        let idle = IdleConns::open(a, 20, 50, &ex, Duration::from_secs(5)).unwrap();
        assert_eq!(idle.len(), 20);
        // The one the server closed is not live once its FIN arrived.
        let mut live = idle.live();
        for _ in 0..100 {
            if live == 19 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
            live = idle.live();
        }
        assert_eq!(live, 19);
        idle.close();
        t.join().unwrap();
    }

    #[test]
    fn an_answer_that_does_not_verify_is_never_held() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut b = [0u8; 64];
            s.read_exact(&mut b).unwrap();
            b[10] ^= 1;
            s.write_all(&b).unwrap();
            std::thread::sleep(Duration::from_millis(100));
        });
        let ex = Echo { msg_bytes: 64 };
        let e = IdleConns::open(a, 3, 0, &ex, Duration::from_secs(5))
            .err()
            .expect("a wrong echo must fail");
        assert!(
            e.contains("connection 0") && e.contains("byte at 10"),
            "{e}"
        );
        t.join().unwrap();
    }
}
