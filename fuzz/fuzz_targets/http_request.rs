//! The HTTP request parser (`proto::Http`) on arbitrary bytes, fed in two reads split at an
//! arbitrary point: no panic; `Reply::Out` exactly when bytes were appended; what one read
//! appends stays bounded by that read's length (at most one response per shortest possible
//! request, 14 bytes, plus two: one byte can complete a buffered head and one more draw a
//! 400) and by the pipelining budget; and, below the budget, the split gives the same bytes
//! and the same close as one read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringside::proto::http::{HttpConn, PIPELINE_OUT_BUDGET};
use ringside::proto::{Http, Next, Protocol, Reply};

/// `A / HTTP/1.1\n\n`: no request is shorter.
const MIN_REQUEST: usize = 14;

fn feed(h: &Http, parts: &[&[u8]]) -> (Vec<u8>, bool) {
    let max_resp = (h.response_bytes() + 32).max(128);
    let mut conn = HttpConn::default();
    let mut out = Vec::new();
    for part in parts {
        let before = out.len();
        let s = h.on_bytes(&mut conn, part, &mut out);
        let added = out.len() - before;
        assert_eq!(s.reply == Reply::Out, added > 0, "Reply::Out iff appended");
        assert!(
            added <= (part.len() / MIN_REQUEST + 2) * max_resp,
            "{added} bytes out for {} in",
            part.len()
        );
        assert!(added <= PIPELINE_OUT_BUDGET + max_resp, "{added} over the budget");
        if s.next == Next::Close {
            return (out, true);
        }
    }
    assert_eq!(h.on_eof(&mut conn, &mut out), Reply::Nothing);
    (out, false)
}

fuzz_target!(|data: &[u8]| {
    let [body, cut, input @ ..] = data else {
        return;
    };
    let h = Http::new(match body {
        0 => None,
        n => Some(*n as usize * 61),
    });
    let cut = *cut as usize * input.len() / 255;
    let (a, b) = input.split_at(cut);
    let split = feed(&h, &[a, b]);
    let whole = feed(&h, &[input]);
    if whole.0.len() < PIPELINE_OUT_BUDGET / 2 && split.0.len() < PIPELINE_OUT_BUDGET / 2 {
        assert!(split == whole, "a split at {cut} changed the answer");
    }
});
