//! The io_uring rows after 6.1 engage their feature (not only echo correctly, which
//! tests/suite/conformance.rs checks for every row): bundle receives span several buffers through the
//! copy-out path, incremental buffers take several pieces, bundles over an incremental ring do
//! both, the hybrid waits in epoll and accepts there, EPOLL_WAIT
//! waits through the ring; rows that cannot run on loopback say what is missing.

use ringside::io::{self, Stop};
use ringside::measure::pin::CpuPlan;
use ringside::model::Availability;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// Serves model `id` in-process, echoes `msg` once over each of `conns` connections, stops,
/// and returns the server's counters (None when the model is unavailable here).
fn echo_counters(id: &str, msg: &[u8], conns: usize) -> Option<ringside::measure::Counters> {
    let env = ringside::env::probe();
    let m = ringside::registry::model(id).unwrap();
    if let Availability::Unavailable(why) = m.availability(&env) {
        eprintln!("{id}: skipped: {why}");
        return None;
    }
    Some(serve_echo(id, msg, conns))
}

/// As `echo_counters`, whatever the model's availability says.
fn serve_echo(id: &str, msg: &[u8], conns: usize) -> ringside::measure::Counters {
    let m = ringside::registry::model(id).unwrap();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let stop = Arc::new(Stop::new().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    let s2 = stop.clone();
    std::thread::spawn(move || {
        let plan = CpuPlan::pair(0, None);
        let _ = tx.send(io::serve(m, l, ringside::proto::Echo, &plan, &s2));
    });
    for _ in 0..conns {
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(msg).unwrap();
        let mut back = vec![0u8; msg.len()];
        c.read_exact(&mut back).unwrap();
        assert!(back == msg, "{id}: echoed bytes differ");
    }
    stop.request();
    let c = rx
        .recv_timeout(Duration::from_secs(5))
        .unwrap_or_else(|_| panic!("{id}: did not stop within 5 s"))
        .unwrap_or_else(|e| panic!("{id}: {e}"));
    assert_eq!(c.get("accepts"), conns as u64, "{id}: {c:?}");
    assert_eq!(
        c.get("bytes_out"),
        (msg.len() * conns) as u64,
        "{id}: {c:?}"
    );
    c
}

fn big() -> Vec<u8> {
    (0..200_000u32).map(|i| (i % 251) as u8).collect()
}

#[test]
fn bundle_receives_span_several_buffers_and_are_copied_out_of_the_ring() {
    // The recv asks for bundles (IORING_RECVSEND_BUNDLE): with 200 KB queued at once the
    // kernel maps several 8 KiB buffers per completion (its first completion per arm maps
    // one), and every byte comes through the copy-out path and echoes exactly.
    let Some(c) = echo_counters("uring-bundle", &big(), 2) else {
        return;
    };
    let (bufs, recvs) = (c.get("bundle_bufs"), c.get("bundle_recvs"));
    assert!(recvs > 0 && bufs > recvs, "{c:?}");
    assert!(c.get("bundle_multi") > 0, "{c:?}");
    assert!(bufs * 8192 >= c.get("bytes_in"), "{c:?}");
    assert_eq!(c.get("buf_more"), 0, "not an incremental ring: {c:?}");
}

/// `uring-bundle-inc`: bundles over an incremental ring. Large messages make completions that
/// run through several 64 KiB buffers and end inside one, which the kernel keeps
/// (IORING_CQE_F_BUF_MORE); the next completion starts where that one ended. Small messages
/// each take a piece of the head buffer. The echo checks every byte.
#[test]
fn bundles_over_an_incremental_ring_span_buffers_and_consume_pieces() {
    let Some(c) = echo_counters("uring-bundle-inc", &big(), 3) else {
        return;
    };
    let (bufs, recvs) = (c.get("bundle_bufs"), c.get("bundle_recvs"));
    assert!(
        c.get("bundle_multi") > 0,
        "no completion spanned buffers: {c:?}"
    );
    assert!(bufs > recvs, "{c:?}");
    assert!(c.get("buf_more") > 0, "no completion left a piece: {c:?}");
    // 600 KB through 64 KiB buffers: at least 10 buffers touched.
    assert!(bufs >= 10, "{c:?}");
    let Some(c) = echo_counters("uring-bundle-inc", b"ringside incremental bundle", 20) else {
        return;
    };
    assert_eq!(c.get("bundle_recvs"), 20, "{c:?}");
    assert_eq!(c.get("bundle_bufs"), 20, "{c:?}");
    assert_eq!(
        c.get("buf_more"),
        20,
        "each message a piece of one buffer: {c:?}"
    );
    assert_eq!(c.get("bundle_multi"), 0, "{c:?}");
}

#[test]
fn incremental_buffers_are_consumed_piecewise() {
    // Small messages: each takes a piece of a 64 KiB buffer.
    let Some(c) = echo_counters("uring-inc", b"ringside incremental", 20) else {
        return;
    };
    assert_eq!(c.get("bundle_recvs"), 20, "{c:?}");
    assert_eq!(c.get("bundle_bufs"), 20, "{c:?}");
}

#[test]
fn the_hybrid_accepts_in_epoll_and_the_ring_carries_the_data() {
    let Some(c) = echo_counters("hybrid", &big(), 3) else {
        return;
    };
    assert!(c.get("hybrid_epoll_waits") > 0, "{c:?}");
    assert!(c.get("sqes") > 0 && c.get("cqes") > 0, "{c:?}");
}

#[test]
fn epoll_wait_through_the_ring_and_min_wait_serve() {
    if let Some(c) = echo_counters("uring-epollwait", &big(), 2) {
        assert!(c.get("epoll_waits") > 0 && c.get("events") > 0, "{c:?}");
    }
    if let Some(c) = echo_counters("uring-minwait", &big(), 2) {
        assert!(c.get("io_uring_enter") > 0, "{c:?}");
    }
}

#[test]
fn rows_that_cannot_run_on_loopback_name_what_is_missing() {
    let env = ringside::env::probe();
    if !env.io_uring.is_ready() {
        return;
    }
    // The single-knob row and the ladder's top rung, which adds NAPI to the rung below it.
    for id in ["uring-napi", "uring-bundle-inc-minwait-napi"] {
        let napi = ringside::registry::model(id).unwrap();
        let why = napi.availability(&env);
        assert!(
            why.reason().is_some_and(|r| r.contains("NAPI")),
            "{id}: {why}"
        );
    }
    let zcrx = ringside::registry::model("uring-zcrx").unwrap();
    let why = zcrx.availability(&env);
    assert!(
        why.reason()
            .is_some_and(|r| r.contains("header/data split")),
        "{why}"
    );
    // They never run without --models (only the families' leaders do).
    for m in ringside::registry::MODELS.iter().filter(|m| !m.default_run) {
        assert!(!ringside::plan::select_models_for(None)
            .unwrap()
            .iter()
            .any(|x| x.id == m.id));
    }
}

/// `epoll-busypoll` is `uring-napi`'s fair pair: the same NAPI decision (one function, not a
/// copy), so on loopback both are unavailable with the same reason; it joins named runs only,
/// and plain epoll rows keep their results-file knobs (`{"epoll": "level"}`).
#[test]
fn epoll_busypoll_shares_the_napi_decision_with_uring_napi() {
    let env = ringside::env::probe();
    let bp = ringside::registry::model("epoll-busypoll").unwrap();
    assert!(!bp.default_run && !bp.always_available());
    let path = ringside::model::probe::napi_path(&env, ringside::model::probe::Serving::Loopback);
    let mine = bp.availability(&env);
    match path.reason() {
        Some(why) => {
            assert!(why.contains("NAPI"), "{why}");
            assert!(mine.reason().is_some_and(|r| r.contains(why)), "{mine}");
            if env.io_uring.is_ready() {
                let napi = ringside::registry::model("uring-napi").unwrap();
                let theirs = napi.availability(&env);
                assert!(theirs.reason().is_some_and(|r| r.contains(why)), "{theirs}");
            }
        }
        // A machine whose loopback carries NAPI ids: only the ioctl's own probe may refuse.
        None => assert_eq!(
            mine.reason(),
            env.modern(ringside::env::uring::modern::EPOLL_BUSY_POLL)
                .reason()
        ),
    }
    let knobs = |id: &str| serde_json::to_value(ringside::registry::model(id).unwrap().knobs);
    assert_eq!(
        knobs("epoll-lt").unwrap(),
        serde_json::json!({"epoll": "level"})
    );
    assert_eq!(
        knobs("epoll-et").unwrap(),
        serde_json::json!({"epoll": "edge"})
    );
    let b = knobs("epoll-busypoll").unwrap();
    assert_eq!(b["epoll"]["trigger"], "level", "{b}");
    assert_eq!(b["epoll"]["busy_poll"]["busy_poll_usecs"], 50, "{b}");
    // The micro shapes refuse it: a pipe or an eventfd has no NAPI queue.
    for w in ["micro.pipe", "micro.fd_scaling"] {
        let w = ringside::registry::workload(w).unwrap();
        assert!(w.accepts(bp).unwrap_err().contains("NAPI"));
    }
}

/// `uring-zc` sends with SEND_ZC from registered buffers: each connection's receive buffer is
/// registered once, and its echoes name it (the bytes still echo exactly).
#[test]
fn send_zc_names_the_registered_receive_buffer() {
    let Some(c) = echo_counters("uring-zc", &big(), 3) else {
        return;
    };
    assert_eq!(c.get("zc_buf_registers"), 3, "{c:?}");
    assert_eq!(c.get("zc_buf_register_errors"), 0, "{c:?}");
    assert!(c.get("zc_fixed_sends") > 0, "{c:?}");
}

/// A NAPI row's io_uring server reads each served socket's NAPI id at its first bytes (a
/// direct descriptor through FIXED_FD_INSTALL): over loopback every one is 0, which the counters show and the
/// runner turns into the `no_napi_id` warning. Served here despite the row being unavailable
/// on loopback, to see the check count what the probe predicts.
#[test]
fn a_napi_row_counts_the_sockets_that_had_no_napi_id() {
    use ringside::env::uring::modern as f;
    let env = ringside::env::probe();
    if !env.io_uring.is_ready() || env.modern(f::NAPI).reason().is_some() {
        eprintln!("NAPI registration unavailable here: skipped");
        return;
    }
    for id in ["uring-napi", "uring-bundle-inc-minwait-napi"] {
        let c = serve_echo(id, b"ringside napi", 4);
        assert_eq!(c.get("setup_napi"), 1, "{id}: {c:?}");
        assert_eq!(c.get("napi_socks"), 4, "{id}: {c:?}");
        assert_eq!(c.get("napi_id_zero"), 4, "{id}: loopback: {c:?}");
        assert_eq!(c.get("napi_check_errors"), 0, "{id}: {c:?}");
    }
    // Rows without busy polling do not ask.
    let c = serve_echo("uring-tuned", b"ringside napi", 2);
    assert_eq!(c.get("napi_socks") + c.get("napi_check_errors"), 0, "{c:?}");
}

/// `epoll-busypoll` (its fair pair) checks its sockets the same way, plain epoll does not.
#[test]
fn epoll_busypoll_counts_the_sockets_that_had_no_napi_id() {
    use ringside::env::uring::modern as f;
    let env = ringside::env::probe();
    if env.modern(f::EPOLL_BUSY_POLL).reason().is_some() {
        eprintln!("EPIOCSPARAMS unavailable here: skipped");
        return;
    }
    let c = serve_echo("epoll-busypoll", b"ringside napi", 3);
    assert_eq!(c.get("napi_socks"), 3, "{c:?}");
    assert_eq!(c.get("napi_id_zero"), 3, "loopback: {c:?}");
    assert_eq!(c.get("napi_check_errors"), 0, "{c:?}");
    let c = serve_echo("epoll-lt", b"ringside napi", 2);
    assert_eq!(c.get("napi_socks") + c.get("napi_check_errors"), 0, "{c:?}");
}
