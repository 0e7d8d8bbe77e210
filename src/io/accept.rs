//! The one accept policy of every server ringside measures: its own (blocking, epoll,
//! io_uring) and the built-in contenders (tokio, monoio). A side-by-side comparison must not
//! let one server shrug off an error that ends another, nor retry at once where another waits.
//!
//! What a failed accept means, by errno ([`accept_action`]):
//!
//! | action | errno | why |
//! |---|---|---|
//! | [`Wait`](AcceptAction::Wait) | EAGAIN, EWOULDBLOCK | not an error: the backlog is empty; wait for the next connection as usual (readiness, or the re-armed accept) |
//! | [`Retry`](AcceptAction::Retry) | ECONNABORTED, ECONNRESET, EPROTO, EPERM (a firewall rule refused this one), EINTR, and the network errors Linux passes on from the new socket (ETIMEDOUT, ENETDOWN, ENETUNREACH, EHOSTDOWN, EHOSTUNREACH, ENONET, ENOPROTOOPT, EOPNOTSUPP, ESOCKTNOSUPPORT, EPROTONOSUPPORT) | about one connection (or a signal), which the failed call took off the backlog: accept again now; this cannot spin, each retry drains the backlog by one |
//! | [`Pause`](AcceptAction::Pause) | EMFILE, ENFILE, ENOBUFS, ENOMEM, ENOSR, and any errno not listed here | a shortage that passes when connections close (descriptors, socket memory), or something unforeseen: stop accepting for [`ACCEPT_PAUSE`] and keep serving the open connections; retrying at once would spin on the same error |
//! | [`Fatal`](AcceptAction::Fatal) | EBADF, ENOTSOCK, EINVAL, EFAULT | the listener or the call itself is wrong (not a socket, not listening, bad flags or addresses): a programming error no wait cures; the server stops with the error |
//!
//! (accept(2) lists the errors and says Linux hands pending network errors of the new socket
//! to accept, to be treated like EAGAIN by retrying.) io_uring's own ECANCELED is not an
//! accept failure: the server cancelled the accept itself, and handles it before asking here.

use std::io;
use std::time::Duration;

/// How long accepting pauses after a [`Pause`](AcceptAction::Pause) error, in every server.
pub(crate) const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// What a server does after a failed accept (see the module doc for the table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AcceptAction {
    /// The backlog is empty: wait for the next connection as usual.
    Wait,
    /// About one connection: accept again now.
    Retry,
    /// A shortage: keep serving, accept again after [`ACCEPT_PAUSE`].
    Pause,
    /// The listener is broken: stop serving, with the error.
    Fatal,
}

/// The action for a failed accept's errno (positive, as `io::Error::raw_os_error` gives it;
/// io_uring's negative CQE results are negated by the caller).
pub(crate) fn accept_action(errno: i32) -> AcceptAction {
    match errno {
        // EWOULDBLOCK is EAGAIN on Linux.
        libc::EAGAIN => AcceptAction::Wait,
        libc::ECONNABORTED
        | libc::ECONNRESET
        | libc::EPROTO
        | libc::EPERM
        | libc::EINTR
        | libc::ETIMEDOUT
        | libc::ENETDOWN
        | libc::ENETUNREACH
        | libc::EHOSTDOWN
        | libc::EHOSTUNREACH
        | libc::ENONET
        | libc::ENOPROTOOPT
        | libc::EOPNOTSUPP
        | libc::ESOCKTNOSUPPORT
        | libc::EPROTONOSUPPORT => AcceptAction::Retry,
        libc::EBADF | libc::ENOTSOCK | libc::EINVAL | libc::EFAULT => AcceptAction::Fatal,
        // EMFILE, ENFILE, ENOBUFS, ENOMEM, ENOSR, and whatever else.
        _ => AcceptAction::Pause,
    }
}

/// [`accept_action`] for an `io::Error` (one without an errno pauses).
pub(crate) fn accept_error_action(e: &io::Error) -> AcceptAction {
    e.raw_os_error().map_or(AcceptAction::Pause, accept_action)
}

#[cfg(test)]
mod tests {
    use super::*;
    use AcceptAction::*;

    #[test]
    fn every_accept_errno_has_one_action() {
        let table = [
            (libc::EAGAIN, Wait),
            (libc::EWOULDBLOCK, Wait),
            (libc::ECONNABORTED, Retry),
            (libc::ECONNRESET, Retry),
            (libc::EPERM, Retry),
            (libc::EINTR, Retry),
            (libc::EPROTO, Retry),
            (libc::ETIMEDOUT, Retry),
            (libc::ENETDOWN, Retry),
            (libc::ENETUNREACH, Retry),
            (libc::EHOSTDOWN, Retry),
            (libc::EHOSTUNREACH, Retry),
            (libc::ENONET, Retry),
            (libc::ENOPROTOOPT, Retry),
            (libc::EOPNOTSUPP, Retry),
            (libc::ESOCKTNOSUPPORT, Retry),
            (libc::EPROTONOSUPPORT, Retry),
            (libc::EMFILE, Pause),
            (libc::ENFILE, Pause),
            (libc::ENOBUFS, Pause),
            (libc::ENOMEM, Pause),
            (libc::ENOSR, Pause),
            (libc::EINVAL, Fatal),
            (libc::EBADF, Fatal),
            (libc::ENOTSOCK, Fatal),
            (libc::EFAULT, Fatal),
            // Not accept errors at all: paused on, never fatal, never retried at once.
            (libc::EDOM, Pause),
            (libc::ENOSPC, Pause),
        ];
        let wrong: Vec<String> = table
            .iter()
            .filter(|(e, want)| accept_action(*e) != *want)
            .map(|(e, want)| {
                format!(
                    "{}: {:?}, want {want:?}",
                    io::Error::from_raw_os_error(*e),
                    accept_action(*e)
                )
            })
            .collect();
        assert!(wrong.is_empty(), "{wrong:#?}");
        let no_errno = io::Error::other("no errno");
        assert_eq!(accept_error_action(&no_errno), Pause);
        let emfile = io::Error::from_raw_os_error(libc::EMFILE);
        assert_eq!(accept_error_action(&emfile), Pause);
    }

    /// A listener that stops listening (shutdown(SHUT_RD) on it makes accept fail with EINVAL,
    /// fatal by the accept policy) ends every server with an error naming accept, within 3 s:
    /// ringside's own servers and the built-in contenders alike.
    #[test]
    fn a_listener_that_stops_listening_ends_every_server() {
        use crate::measure::pin::{allowed_cpus, CpuPlan};
        use crate::model::{Availability, Knobs};
        use std::io::{Read, Write};
        use std::os::fd::AsRawFd;
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{mpsc, Arc};
        use std::time::Duration;
        let env = crate::env::probe();
        let mut tried = Vec::new();
        for m in crate::registry::MODELS {
            let peer = match m.knobs {
                Knobs::Peer(k) if k.in_process() => Some(k),
                _ => None,
            };
            if m.applies(crate::io::BUILT_IN_TCP).is_err() {
                continue;
            }
            if let Availability::Unavailable(why) = m.availability(&env) {
                assert!(!m.always_available(), "{}: {why}", m.id);
                continue;
            }
            let id = m.id;
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let (addr, fd) = (l.local_addr().unwrap(), l.as_raw_fd());
            let stop = Arc::new(crate::io::Stop::new().unwrap());
            let flag = Arc::new(AtomicBool::new(false));
            let (tx, rx) = mpsc::channel();
            {
                let (stop, flag) = (stop.clone(), flag.clone());
                std::thread::spawn(move || {
                    let r = match peer {
                        Some(k) => crate::peer::serve_echo(k, l, flag, crate::peer::Setup::TWO)
                            .map(drop)
                            .map_err(|e| format!("{e:#}")),
                        None => {
                            let plan = CpuPlan::default_for(&allowed_cpus());
                            crate::io::serve(m, l, crate::proto::Echo, &plan, &stop)
                                .map(drop)
                                .map_err(|e| e.to_string())
                        }
                    };
                    let _ = tx.send(r);
                });
            }
            // Serving: one echo.
            let mut c = std::net::TcpStream::connect(addr).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            c.write_all(b"hi").unwrap();
            let mut b = [0u8; 2];
            c.read_exact(&mut b).unwrap();
            drop(c);
            // SAFETY: shutdown(2) on the listener, which the server thread keeps open.
            unsafe { libc::shutdown(fd, libc::SHUT_RD) };
            match rx.recv_timeout(Duration::from_secs(3)) {
                Ok(Err(e)) => assert!(e.contains("accept"), "{id}: {e}"),
                Ok(Ok(())) => panic!("{id}: ended without an error"),
                Err(_) => {
                    stop.request();
                    flag.store(true, Ordering::SeqCst);
                    panic!("{id}: still serving 3 s after its listener stopped listening");
                }
            }
            tried.push(id);
        }
        assert!(
            tried.contains(&"epoll-lt") && tried.contains(&"blocking"),
            "{tried:?}"
        );
        println!("ended on a fatal accept error: {tried:?}");
    }
}
