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

    /// The histogram [`Hist::to_base64`] wrote (V2 or V2-deflate, base64); `""` is an empty
    /// one. It keeps resizing, so that adding it to another never clips.
    pub fn from_base64(s: &str) -> Result<Hist, String> {
        use base64::Engine;
        use hdrhistogram::serialization::Deserializer;
        if s.is_empty() {
            return Ok(Hist::new());
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(|e| format!("histogram: not base64: {e}"))?;
        let mut h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("histogram: not an HdrHistogram V2: {e:?}"))?;
        h.auto(true);
        Ok(Hist(h))
    }
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `#[serde(with = "crate::measure::hist::base64_v2")]`: a [`Hist`] as [`Hist::to_base64`]'s
/// text (a load host's report carries its latency histogram this way).
pub mod base64_v2 {
    use super::Hist;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(h: &Hist, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&h.to_base64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Hist, D::Error> {
        let s = String::deserialize(d)?;
        Hist::from_base64(&s).map_err(serde::de::Error::custom)
    }
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

    #[test]
    fn a_histogram_survives_base64_and_keeps_every_count() {
        let mut a = Hist::new();
        for v in 1..=1000 {
            a.record(v * 1_000);
        }
        a.record(7_000_000_000);
        let b = Hist::from_base64(&a.to_base64()).unwrap();
        assert_eq!(b.len(), a.len());
        for q in [0.0, 0.5, 0.99, 0.999, 1.0] {
            assert_eq!(b.quantile(q), a.quantile(q), "{q}");
        }
        assert!(Hist::from_base64("").unwrap().is_empty());
        assert!(Hist::from_base64("not base64!").is_err());
        assert!(Hist::from_base64("Zm9v").is_err());
    }
}
