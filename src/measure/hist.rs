//! Latency histograms: HdrHistogram in nanoseconds, 3 significant digits, auto-resizing so a
//! stall of any length is kept rather than clipped.

use hdrhistogram::Histogram;

/// A per-op latency histogram, ns.
#[derive(Clone, Debug)]
pub struct Hist(Histogram<u64>);

impl Default for Hist {
    fn default() -> Self {
        Self::new()
    }
}

impl Hist {
    /// Sized for 1 ns .. 100 s up front, so recording inside a measured window never
    /// allocates (an allocation can be a syscall); longer values still fit by resizing.
    pub fn new() -> Hist {
        let mut h = Histogram::<u64>::new_with_bounds(1, 100_000_000_000, 3)
            .expect("valid bounds and precision");
        h.auto(true);
        Hist(h)
    }

    /// Records `count` ops of `ns` each (a batch's amortized per-op cost counts once per op).
    #[inline]
    pub fn record_n(&mut self, ns: u64, count: u64) {
        // Auto-resize makes recording infallible for any u64.
        let _ = self.0.record_n(ns, count);
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.record_n(ns, 1);
    }

    pub fn merge(&mut self, other: &Hist) {
        let _ = self.0.add(&other.0);
    }

    /// Empties it, keeping its size.
    pub fn clear(&mut self) {
        self.0.reset();
    }

    pub fn len(&self) -> u64 {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn inner(&self) -> &Histogram<u64> {
        &self.0
    }

    /// The value at quantile `q` (0..=1), ns.
    pub fn quantile(&self, q: f64) -> u64 {
        self.0.value_at_quantile(q)
    }

    /// V2-deflate serialized, base64: any percentile can be recomputed from saved results.
    pub fn to_base64(&self) -> String {
        use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
        let mut buf = Vec::new();
        if V2DeflateSerializer::new()
            .serialize(&self.0, &mut buf)
            .is_err()
        {
            return String::new();
        }
        base64_encode(&buf)
    }
}

fn base64_encode(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_and_merge() {
        let mut a = Hist::new();
        for v in 1..=100 {
            a.record(v * 1000);
        }
        assert_eq!(a.len(), 100);
        assert_eq!(a.quantile(0.5), 50_015); // 3 significant digits
        let mut b = Hist::new();
        b.record_n(10_000_000_000, 100); // a 10 s stall is kept, not clipped
        a.merge(&b);
        assert_eq!(a.len(), 200);
        assert!(a.quantile(1.0) >= 10_000_000_000);
    }

    #[test]
    fn base64_matches_known_vectors() {
        assert_eq!(base64_encode(b""), "");
        assert_eq!(base64_encode(b"f"), "Zg==");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
        assert_eq!(base64_encode(b"foo"), "Zm9v");
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
    }
}
