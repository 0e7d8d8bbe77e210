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
    pub(crate) fn new() -> Hist {
        let mut h = Histogram::<u64>::new_with_bounds(1, 100_000_000_000, 3)
            .expect("valid bounds and precision");
        h.auto(true);
        Hist(h)
    }

    /// Records `count` ops of `ns` each (a batch's amortized per-op cost counts once per op).
    #[inline]
    pub(crate) fn record_n(&mut self, ns: u64, count: u64) {
        // Auto-resize makes recording infallible for any u64.
        let _ = self.0.record_n(ns, count);
    }

    #[inline]
    pub(crate) fn record(&mut self, ns: u64) {
        self.record_n(ns, 1);
    }

    pub(crate) fn merge(&mut self, other: &Hist) {
        let _ = self.0.add(&other.0);
    }

    /// Empties it, keeping its size.
    pub(crate) fn clear(&mut self) {
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
    pub(crate) fn quantile(&self, q: f64) -> u64 {
        self.0.value_at_quantile(q)
    }

    /// V2-deflate serialized, base64: any percentile can be recomputed from saved results.
    pub(crate) fn to_base64(&self) -> String {
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
    ///
    /// Text from outside (another host, a results file) is checked before it is decoded: a
    /// length its header declares must be the bytes present, the inflated form is read at
    /// most [`MAX_V2_BYTES`], and the precision and range must be ones this code writes, so
    /// no header sizes an allocation.
    pub(crate) fn from_base64(s: &str) -> Result<Hist, String> {
        use base64::Engine;
        use hdrhistogram::serialization::Deserializer;
        if s.is_empty() {
            return Ok(Hist::new());
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(|e| format!("histogram: not base64: {e}"))?;
        let v2 = checked_v2(&bytes)?;
        let mut h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut v2.as_slice())
            .map_err(|e| format!("histogram: not an HdrHistogram V2: {e:?}"))?;
        h.auto(true);
        Ok(Hist(h))
    }
}

/// The most bytes an uncompressed V2 histogram may hold (header and counts). One of ours,
/// 1 ns .. centuries at 3 digits, is well under 1 MiB even with every count set.
pub(crate) const MAX_V2_BYTES: usize = 4 << 20;

const V2_COOKIE: u32 = 0x1c84_9303;
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9304;
/// cookie, payload length, normalizing offset, significant digits, lowest, highest, ratio.
const V2_HEADER_BYTES: usize = 40;

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// The uncompressed V2 form of `bytes` (V2 or V2-deflate), once its header is consistent
/// with what is there: every declared length is the bytes present, inflating stops at
/// [`MAX_V2_BYTES`], 0 to 5 significant digits (hdrhistogram's own range).
fn checked_v2(bytes: &[u8]) -> Result<Vec<u8>, String> {
    use std::io::Read;
    if bytes.len() < 8 {
        return Err(format!(
            "histogram: {} bytes, too short for a header",
            bytes.len()
        ));
    }
    // The cookie's second nibble carries a word size (0x10 for V2): not part of the type.
    let kind = |c: u32| c & !0xf0;
    let v2 = match kind(be32(bytes, 0)) {
        V2_COOKIE => bytes.to_vec(),
        V2_DEFLATE_COOKIE => {
            let declared = be32(bytes, 4) as usize;
            if declared != bytes.len() - 8 {
                return Err(format!(
                    "histogram: declares {declared} compressed bytes but holds {}",
                    bytes.len() - 8
                ));
            }
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(&bytes[8..])
                .take(MAX_V2_BYTES as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| format!("histogram: does not inflate: {e}"))?;
            if out.len() > MAX_V2_BYTES {
                return Err(format!("histogram: inflates past {MAX_V2_BYTES} bytes"));
            }
            out
        }
        c => return Err(format!("histogram: unknown cookie {c:#x}")),
    };
    if v2.len() < V2_HEADER_BYTES || kind(be32(&v2, 0)) != V2_COOKIE {
        return Err("histogram: not an HdrHistogram V2".into());
    }
    let declared = be32(&v2, 4) as usize;
    if declared != v2.len() - V2_HEADER_BYTES {
        return Err(format!(
            "histogram: declares {declared} payload bytes but holds {}",
            v2.len() - V2_HEADER_BYTES
        ));
    }
    let digits = be32(&v2, 12);
    if digits > 5 {
        return Err(format!(
            "histogram: {digits} significant digits (at most 5)"
        ));
    }
    Ok(v2)
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `#[serde(with = "crate::measure::hist::base64_v2")]`: a [`Hist`] as [`Hist::to_base64`]'s
/// text (a load host's report carries its latency histogram this way).
pub(crate) mod base64_v2 {
    use super::Hist;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(h: &Hist, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&h.to_base64())
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Hist, D::Error> {
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

    /// A 60-byte V2 header declaring a 4 GiB payload (or a compressed one declaring more than
    /// it holds) is refused from its header, before anything is sized from it; so is one that
    /// inflates past the cap. (Before: the deserializer resized to the declared length first,
    /// 4 GiB per repetition from one forged load host.)
    #[test]
    fn a_histogram_whose_header_lies_is_refused_before_any_allocation() {
        use base64::Engine;
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        let mut forged = Vec::new();
        forged.extend_from_slice(&V2_COOKIE.to_be_bytes());
        forged.extend_from_slice(&0xFFFF_FFF0u32.to_be_bytes());
        forged.extend_from_slice(&0u32.to_be_bytes());
        forged.extend_from_slice(&3u32.to_be_bytes());
        forged.extend_from_slice(&1u64.to_be_bytes());
        forged.extend_from_slice(&100_000_000_000u64.to_be_bytes());
        forged.extend_from_slice(&1f64.to_bits().to_be_bytes());
        forged.resize(60, 0);
        let e = Hist::from_base64(&b64(&forged)).unwrap_err();
        assert!(
            e.contains("declares 4294967280 payload bytes but holds 20"),
            "{e}"
        );
        let mut deflated = Vec::new();
        deflated.extend_from_slice(&V2_DEFLATE_COOKIE.to_be_bytes());
        deflated.extend_from_slice(&0xFFFF_FFF0u32.to_be_bytes());
        deflated.extend_from_slice(&[0x78, 0x9c, 0, 0]);
        let e = Hist::from_base64(&b64(&deflated)).unwrap_err();
        assert!(
            e.contains("declares 4294967280 compressed bytes but holds 4"),
            "{e}"
        );
        // A zlib stream of 8 MiB of zeros: inflating stops at the cap.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut z, &vec![0u8; 8 << 20]).unwrap();
        let z = z.finish().unwrap();
        let mut bomb = V2_DEFLATE_COOKIE.to_be_bytes().to_vec();
        bomb.extend_from_slice(&(z.len() as u32).to_be_bytes());
        bomb.extend_from_slice(&z);
        let e = Hist::from_base64(&b64(&bomb)).unwrap_err();
        assert!(e.contains("inflates past"), "{e}");
        // Ours still decode, recorded values intact.
        let mut h = Hist::new();
        h.record_n(12_345, 7);
        h.record(9_000_000_000_000);
        let back = Hist::from_base64(&h.to_base64()).unwrap();
        assert_eq!(back.len(), 8);
        assert_eq!(back.quantile(1.0), h.quantile(1.0));
    }
}
