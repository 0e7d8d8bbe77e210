//! The HTTP response reader (`load::http::HttpGet::response`) on arbitrary bytes, read the
//! way the load engine reads (never more than `NeedMore` asks): no panic, `NeedMore` never 0,
//! never more held than a head and a chunked body at their caps (no length a peer sends
//! becomes an allocation), and the verdict on exactly its own bytes the same as on the bytes
//! that completed it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringside::load::http::{Expect, HttpGet, MAX_CHUNKED_BODY_BYTES, MAX_RESPONSE_HEAD_BYTES};
use ringside::load::{Exchange, Response};

fuzz_target!(|data: &[u8]| {
    let [expect, step, wire @ ..] = data else {
        return;
    };
    // 0: any body; 1: serve's default body; n: `serve --body-bytes n-2`'s.
    let expect = match *expect {
        0 => Expect::Any,
        1 => Expect::Served(None),
        n => Expect::Served(Some(n as usize - 2)),
    };
    let g = HttpGet::new("h", "/", expect);
    // Reads of at most `step` bytes (0: as much as asked), as a socket delivers them.
    let step = if *step == 0 { usize::MAX } else { *step as usize };
    let mut got = 0usize;
    loop {
        let r = g.response(b"", &wire[..got]);
        match r {
            Response::NeedMore(n) => {
                assert!(n > 0, "NeedMore(0) stalls the engine");
                assert!(
                    got + n <= MAX_RESPONSE_HEAD_BYTES + MAX_CHUNKED_BODY_BYTES,
                    "asks to hold {got} + {n} bytes"
                );
                if got == wire.len() {
                    return;
                }
                got += n.min(step).min(wire.len() - got);
            }
            Response::Complete { len, .. } => {
                assert!(len > 0, "an empty response would never end");
                if len <= wire.len() as u64 {
                    assert_eq!(
                        g.response(b"", &wire[..len as usize]),
                        r,
                        "verdict depends on later bytes"
                    );
                }
                return;
            }
            Response::Unreadable(why) => {
                assert!(!why.is_empty());
                return;
            }
        }
    }
});
