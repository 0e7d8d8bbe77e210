//! The blocking server (a thread per connection) keeps one fd per connection, the pubsub
//! broker's subscribers (a reader and a writer thread each) included, and stops with its
//! connections live: each thread woken (its socket shut down through the registry of live
//! fds, `io::blocking::live`, not through a clone) and joined, each connection counted.

use crate::common;

use common::child::Server;
use ringside::proto::pubsub::{encode_pub, encode_sub, Decoder, Frame, Publish, PUB};
use std::io::{Read, Write};
use std::time::Duration;

/// Connections held at once.
const N: usize = 200;

/// Open fds of process `pid`.
fn fds(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// Threads of process `pid`.
fn threads(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .count()
}

/// What `n` held connections added to the server's fds and threads: one fd each (a clone per
/// connection would make it two, a pubsub writer's own clone three), at least
/// `threads_each` threads each. A little slack for an fd the server opens for itself.
fn assert_one_fd_each(s: &Server, base_fds: usize, base_threads: usize, threads_each: usize) {
    let grown = fds(s.pid()) - base_fds;
    assert!(
        (N..N + N / 20).contains(&grown),
        "{N} connections added {grown} fds to the server: one each expected"
    );
    // (Less a few: a thread of the server's own may have ended since the base was read.)
    let t = threads(s.pid()) as isize - base_threads as isize;
    assert!(
        t >= (threads_each * N - N / 20) as isize,
        "{N} connections added {t} threads, {threads_each} each expected"
    );
}

/// Stops the server with every connection still open: it must exit (every thread woken by
/// its shut socket and joined) and count each connection live at the stop and closed.
fn stop_with_all_live(s: Server) {
    let (st, c) = s.stop_within(Duration::from_secs(30));
    assert!(st.success(), "{st:?}");
    assert_eq!(c["accepts"], N as u64, "{c}");
    assert_eq!(c["live_at_stop"], N as u64, "{c}");
    assert_eq!(c["closes"], N as u64, "every thread joined: {c}");
}

#[test]
fn blocking_echo_holds_one_fd_per_connection_and_stops_with_them_live() {
    let s = Server::echo("blocking");
    let (base_fds, base_threads) = (fds(s.pid()), threads(s.pid()));
    let mut conns = Vec::new();
    for i in 0..N {
        let mut c = s.connect();
        let msg = [i as u8, (i >> 8) as u8, 0xA5, 7];
        c.write_all(&msg).unwrap();
        let mut got = [0u8; 4];
        c.read_exact(&mut got).unwrap();
        assert_eq!(got, msg, "connection {i}");
        conns.push(c);
    }
    // Each echoed once: accepted, its thread running.
    assert_one_fd_each(&s, base_fds, base_threads, 1);
    stop_with_all_live(s);
    drop(conns);
}

#[test]
fn blocking_pubsub_subscribers_hold_one_fd_each_and_stop_with_them_live() {
    let s = Server::start("blocking", "pubsub", &[], None);
    let (base_fds, base_threads) = (fds(s.pid()), threads(s.pid()));
    let mut subs = Vec::new();
    for i in 0..N {
        // Subscribe, then publish one message on the topic from the same connection and read
        // it back: its writer thread runs.
        let mut c = s.connect();
        let mut w = Vec::new();
        encode_sub(&mut w, i as u32, true);
        encode_pub(
            &mut w,
            PUB,
            &Publish {
                topic: i as u32,
                publisher: i as u32,
                seq: 0,
                ts_ns: 0,
                payload: &[],
            },
        );
        c.write_all(&w).unwrap();
        let (mut dec, mut got, mut buf) = (Decoder::default(), 0, [0u8; 256]);
        while got == 0 {
            let n = c.read(&mut buf).unwrap();
            assert!(n > 0, "subscriber {i}: closed before its message came back");
            dec.feed(&buf[..n], |f| {
                assert!(matches!(f, Frame::Msg { .. }), "subscriber {i}: {f:?}");
                got += 1;
            })
            .unwrap();
        }
        subs.push(c);
    }
    assert_one_fd_each(&s, base_fds, base_threads, 2);
    stop_with_all_live(s);
    drop(subs);
}
