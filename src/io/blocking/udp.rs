//! The blocking UDP echo server: one thread, one blocking recvfrom(2) and one sendto(2) per
//! datagram (a receive timeout of [`STOP_POLL`] lets it see `Stop`).

use crate::io::udp::{recv_from, send_to, Peer};
use crate::io::Stop;
use crate::proto::udp::{UdpCounters, MAX_DATAGRAM};
use std::io;
use std::net::UdpSocket;
use std::time::Duration;

/// How often a server waiting for a datagram looks at `Stop`.
const STOP_POLL: Duration = Duration::from_millis(50);

pub(crate) fn serve(sock: UdpSocket, stop: &Stop) -> io::Result<UdpCounters> {
    sock.set_nonblocking(false)?;
    sock.set_read_timeout(Some(STOP_POLL))?;
    let mut c = UdpCounters::default();
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut peer = Peer::new();
    stop.ready();
    while !stop.requested() {
        c.recv_calls += 1;
        let n = match recv_from(&sock, &mut buf, &mut peer, 0) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(_) => {
                c.recv_errors += 1;
                continue;
            }
        };
        let d = &buf[..n.min(MAX_DATAGRAM)];
        if !c.judge(d, n > MAX_DATAGRAM) {
            continue;
        }
        c.send_calls += 1;
        match send_to(&sock, d, &peer) {
            Ok(()) => c.datagrams_out += 1,
            Err(_) => c.send_errors += 1,
        }
    }
    Ok(c)
}
