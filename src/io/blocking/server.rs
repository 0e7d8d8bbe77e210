//! The blocking server: one thread per connection, `recv` then send-all.
//!
//! Backpressure is structural: a thread blocked in send does not read, so a client that never
//! reads costs one socket buffer and one parked thread. Threads are bounded by the fd limit
//! (one socket each) and by `MAX_THREADS`; each has a small stack (`STACK_BYTES`). Past
//! `MAX_THREADS` live connections, accepting pauses until one ends, the same as EMFILE (accept
//! errors follow the one policy of `io::accept`; a fatal one ends the server). The acceptor
//! waits on the listener and the stop eventfd with poll(2); on stop, every live socket is shut
//! down, which wakes its thread, and the threads are joined. A connection costs one fd: the
//! live sockets are shut down through their raw fds (`live::LiveSockets`), not clones.
//!
//! Idle limit (`Protocol::idle_timeout`, slowloris defence): each connection's socket gets
//! SO_RCVTIMEO and SO_SNDTIMEO of one sweep tick, so a thread blocked in read or send wakes
//! to check how long ago its protocol last replied, and closes past the limit
//! (`idle_closes`). Without a limit nothing is set and the clock is never read.

use super::live::{LiveConn, LiveSockets};
use crate::io::accept::{accept_error_action, AcceptAction, ACCEPT_PAUSE};
use crate::io::idle::{coarse_now_ns, Idle};
use crate::io::stop::Stop;
use crate::measure::CounterSet;
use crate::proto::{Next, Protocol, Reply};
use std::io::{self, Read};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::thread::JoinHandle;

/// Live connections (threads) at most.
pub(crate) const MAX_THREADS: usize = 16_384;
/// Stack of a connection thread, bytes.
pub(crate) const STACK_BYTES: usize = 64 * 1024;
const RECV_BUF: usize = 16 * 1024;

crate::counter_set! {
    /// What the blocking server counts for itself: one set per thread (the acceptor's and
    /// each connection's), merged as the threads are joined.
    pub(crate) struct BlockingCounters {
        /// Connections accepted; accepts failed on one connection (retried at once, see
        /// `io::accept`); pauses of accepting (EMFILE..., or `MAX_THREADS` live).
        accepts, accept_errors, accept_pauses,
        /// Connection threads the system refused to create (accepting pauses).
        spawn_failures,
        /// recv and send calls.
        reads, writes,
        bytes_in, bytes_out,
        peer_fins, resets, idle_closes, closes, live_at_stop,
    }
}

/// Serves `proto` on `listener` until `stop` is requested.
pub(crate) fn serve<P: Protocol>(
    listener: TcpListener,
    proto: P,
    stop: &Stop,
) -> io::Result<BlockingCounters> {
    serve_conns(listener, stop, move |s| conn_loop(&proto, s))
}

/// The accept loop of every blocking server (echo/HTTP/stream and the pubsub broker): accepts
/// on `listener` until `stop`, running `conn(stream)` on a thread of its own per connection
/// (at most `MAX_THREADS`, `STACK_BYTES` of stack each), and merges what each counted. Each
/// socket is registered in one `LiveSockets` and handed to its thread as a `LiveConn` (its
/// id, the registry, the socket); on stop every live socket is shut down (which wakes its
/// thread) and the threads are joined.
pub(crate) fn serve_conns<F>(
    listener: TcpListener,
    stop: &Stop,
    conn: F,
) -> io::Result<BlockingCounters>
where
    F: Fn(LiveConn) -> BlockingCounters + Clone + Send + 'static,
{
    listener.set_nonblocking(true)?;
    let live = LiveSockets::default();
    let mut threads: Vec<JoinHandle<BlockingCounters>> = Vec::new();
    let mut c = BlockingCounters::default();
    let mut next_id = 0u64;
    let mut pause = false;
    stop.ready();
    let mut fatal = None;
    'serve: loop {
        let mut fds = [
            libc::pollfd {
                fd: listener.as_raw_fd(),
                events: if pause { 0 } else { libc::POLLIN },
                revents: 0,
            },
            libc::pollfd {
                fd: stop.fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two valid pollfds.
        let r = unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                2,
                if pause {
                    ACCEPT_PAUSE.as_millis() as i32
                } else {
                    -1
                },
            )
        };
        if r < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Err(io::Error::last_os_error());
        }
        if stop.requested() {
            break;
        }
        pause = false;
        // Reap finished threads so the list stays as long as the live connections.
        let mut i = 0;
        while i < threads.len() {
            if threads[i].is_finished() {
                let t = threads.swap_remove(i);
                if let Ok(tc) = t.join() {
                    c.merge(&tc);
                }
            } else {
                i += 1;
            }
        }
        loop {
            if threads.len() >= MAX_THREADS {
                c.accept_pauses += 1;
                pause = true;
                break;
            }
            match listener.accept() {
                Ok((s, _)) => {
                    c.accepts += 1;
                    if s.set_nonblocking(false).is_err() {
                        continue;
                    }
                    let s = live.register(next_id, s);
                    next_id += 1;
                    let run = conn.clone();
                    // The connection's `LiveConn` unregisters it as it drops: when `run`
                    // returns or unwinds, or here, with the closure, if no thread starts.
                    let spawned = std::thread::Builder::new()
                        .name("conn".into())
                        .stack_size(STACK_BYTES)
                        .spawn(move || run(s));
                    match spawned {
                        Ok(t) => threads.push(t),
                        Err(_) => {
                            c.spawn_failures += 1;
                            pause = true;
                            break;
                        }
                    }
                }
                Err(e) => match accept_error_action(&e) {
                    AcceptAction::Wait => break,
                    AcceptAction::Retry => c.accept_errors += 1,
                    AcceptAction::Pause => {
                        c.accept_pauses += 1;
                        pause = true;
                        break;
                    }
                    AcceptAction::Fatal => {
                        fatal = Some(io::Error::new(e.kind(), format!("accept: {e}")));
                        break 'serve;
                    }
                },
            }
        }
    }
    c.live_at_stop += live.shutdown_all() as u64;
    for t in threads {
        if let Ok(tc) = t.join() {
            c.merge(&tc);
        }
    }
    match fatal {
        Some(e) => Err(e),
        None => Ok(c),
    }
}

fn conn_loop<P: Protocol>(proto: &P, conn: LiveConn) -> BlockingCounters {
    let s: &TcpStream = &conn;
    let mut rd = s;
    let mut c = BlockingCounters::default();
    let mut st = P::Conn::default();
    let mut buf = vec![0u8; RECV_BUF];
    let mut out = Vec::new();
    // Idle limit: reads and sends wake every tick (SO_RCVTIMEO/SO_SNDTIMEO) to check it.
    let idle = Idle::new(proto.idle_timeout());
    let mut last = 0;
    if let Some(i) = &idle {
        if s.set_read_timeout(Some(i.tick)).is_err() || s.set_write_timeout(Some(i.tick)).is_err() {
            c.resets += 1;
            c.closes += 1;
            return c;
        }
        last = coarse_now_ns();
    }
    loop {
        let n = match rd.read(&mut buf) {
            Ok(0) => {
                c.peer_fins += 1;
                if proto.on_eof(&mut st, &mut out) == Reply::Out {
                    let _ = send_all(s, &out, &mut c, idle.as_ref().map(|i| (i, last)));
                }
                break;
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if is_timeout(&e) && idle.is_some() => {
                if idle.is_some_and(|i| i.expired(last, coarse_now_ns())) {
                    c.idle_closes += 1;
                    break;
                }
                continue;
            }
            Err(_) => {
                c.resets += 1;
                break;
            }
        };
        c.reads += 1;
        c.bytes_in += n as u64;
        let step = proto.on_bytes(&mut st, &buf[..n], &mut out);
        if let Some(i) = &idle {
            let now = coarse_now_ns();
            if step.reply != Reply::Nothing {
                last = now;
            } else if i.expired(last, now) {
                c.idle_closes += 1;
                break;
            }
        }
        let deadline = idle.as_ref().map(|i| (i, last));
        let r = match step.reply {
            Reply::Nothing => Ok(()),
            Reply::Input => send_all(s, &buf[..n], &mut c, deadline),
            Reply::Out => {
                let sent = send_all(s, &out, &mut c, deadline);
                out.clear();
                sent
            }
        };
        if let Err(e) = r {
            if is_timeout(&e) {
                c.idle_closes += 1;
            } else {
                c.resets += 1;
            }
            break;
        }
        if step.next == Next::Close {
            break;
        }
    }
    c.closes += 1;
    c
}

/// A read or send that SO_RCVTIMEO/SO_SNDTIMEO ended (EAGAIN on a blocking socket).
fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// write_all with MSG_NOSIGNAL (a reset peer is an error, not SIGPIPE), retrying EINTR. With
/// an idle limit and the time of the last reply, a send that times out (SO_SNDTIMEO) is
/// retried until the limit passes, then fails with `TimedOut`.
pub(super) fn send_all(
    s: &TcpStream,
    mut b: &[u8],
    c: &mut BlockingCounters,
    idle: Option<(&Idle, u64)>,
) -> io::Result<()> {
    while !b.is_empty() {
        // SAFETY: the slice is valid for reads of its length.
        let r = unsafe {
            libc::send(
                s.as_raw_fd(),
                b.as_ptr().cast(),
                b.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        c.writes += 1;
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if let (true, Some((i, last))) = (is_timeout(&e), idle) {
                if i.expired(last, coarse_now_ns()) {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                continue;
            }
            return Err(e);
        }
        c.bytes_out += r as u64;
        b = &b[r as usize..];
    }
    Ok(())
}
