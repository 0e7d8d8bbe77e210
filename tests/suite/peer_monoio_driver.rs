//! monoio serves on io_uring, never on epoll: while it serves, this process (its own test
//! binary, so that no other test's rings or epoll sets are counted) holds an io_uring
//! descriptor and no epoll one. monoio's legacy driver would show the reverse.

use ringside::model::PeerKind;
use ringside::peer::{availability, serve_echo};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn anon_inodes() -> Vec<String> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|l| l.display().to_string())
        .filter(|l| l.starts_with("anon_inode:"))
        .collect()
}

#[test]
fn monoio_serves_on_io_uring_not_epoll() {
    if let Some(why) = availability(PeerKind::Monoio).reason() {
        eprintln!("skipped: monoio unavailable: {why}");
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let server = std::thread::spawn(move || {
        serve_echo(PeerKind::Monoio, listener, s, ringside::peer::Setup::TWO)
    });

    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(b"ring").unwrap();
    let mut b = [0u8; 4];
    c.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"ring");

    let fds = anon_inodes();
    assert!(fds.iter().any(|l| l.contains("io_uring")), "{fds:?}");
    assert!(!fds.iter().any(|l| l.contains("eventpoll")), "{fds:?}");

    stop.store(true, Ordering::Relaxed);
    server.join().unwrap().unwrap();
}
