//! The only place where bytes become integers and back.
//!
//! Encodings (all little-endian, as LevelDB's):
//! - `fixed32` / `fixed64`: 4 / 8 raw bytes.
//! - `varint32` / `varint64`: LEB128, seven bits a byte, high bit set on all but the last.
//!   A varint32 takes at most 5 bytes, a varint64 at most 10.
//! - length-prefixed slice: a varint32 length, then that many bytes.
//!
//! Decoding goes through [`Decoder`], a cursor over untrusted bytes: every read checks the
//! bounds and returns [`Error::Corruption`] with the offset where the bad field starts.
//! Nothing here panics or allocates on the strength of a length read from the input.

use crate::error::{Error, Result};

/// Largest encoded size of a varint32.
pub const MAX_VARINT32_LEN: usize = 5;
/// Largest encoded size of a varint64.
pub const MAX_VARINT64_LEN: usize = 10;

/// Orders two byte strings as `a.cmp(b)` does (bytewise, a prefix first), comparing
/// eight bytes at a time as big-endian words: keys are short, and this stays inline where
/// `cmp` on slices calls `memcmp` (the memtable and the merge compare keys millions of
/// times a second).
#[inline]
pub fn compare_bytes(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let mut wa = a.chunks_exact(8);
    let mut wb = b.chunks_exact(8);
    for (x, y) in (&mut wa).zip(&mut wb) {
        let (x, y) = (word(x), word(y));
        if x != y {
            return x.cmp(&y);
        }
    }
    let n = a.len().min(b.len()) & !7;
    let (ra, rb) = (&a[n..], &b[n..]);
    for (x, y) in ra.iter().zip(rb) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

/// How many leading bytes `a` and `b` share, found a word at a time (table blocks
/// prefix-compress every key against the one before it).
#[inline]
pub fn shared_prefix_len(a: &[u8], b: &[u8]) -> usize {
    let mut n = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let diff = word(x) ^ word(y);
        if diff != 0 {
            return n + (diff.leading_zeros() / 8) as usize;
        }
        n += 8;
    }
    n + a[n..]
        .iter()
        .zip(&b[n..])
        .take_while(|(x, y)| x == y)
        .count()
}

/// An 8-byte chunk as a big-endian word. Requires: `chunk.len() == 8`.
#[inline(always)]
fn word(chunk: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(chunk);
    u64::from_be_bytes(w)
}

/// Appends `v` as 4 little-endian bytes.
#[inline]
pub fn put_fixed32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as 8 little-endian bytes.
#[inline]
pub fn put_fixed64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Reads a fixed32 from the first 4 bytes of `src`, or `None` if it is shorter.
#[inline]
pub fn decode_fixed32(src: &[u8]) -> Option<u32> {
    let bytes: [u8; 4] = src.get(..4)?.try_into().ok()?;
    Some(u32::from_le_bytes(bytes))
}

/// Reads a fixed64 from the first 8 bytes of `src`, or `None` if it is shorter.
#[inline]
pub fn decode_fixed64(src: &[u8]) -> Option<u64> {
    let bytes: [u8; 8] = src.get(..8)?.try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// Appends `v` as a varint.
#[inline]
pub fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, u64::from(v));
}

/// Appends `v` as a varint.
#[inline]
pub fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Number of bytes [`put_varint64`] writes for `v`.
#[inline]
pub fn varint_length(mut v: u64) -> usize {
    let mut len = 1;
    while v >= 0x80 {
        v >>= 7;
        len += 1;
    }
    len
}

/// Appends a varint32 length and then `s`.
///
/// Requires: `s.len() < 2^32` (callers check user input against the engine's limits first).
#[inline]
pub fn put_length_prefixed(dst: &mut Vec<u8>, s: &[u8]) {
    put_varint64(dst, s.len() as u64);
    dst.extend_from_slice(s);
}

/// Decodes a varint32 at the start of `src`: the value and the bytes it took.
/// `None` if `src` ends first, the encoding is longer than 5 bytes, or the value needs
/// more than 32 bits.
#[inline]
pub fn decode_varint32(src: &[u8]) -> Option<(u32, usize)> {
    // Fast path: one byte, the common case for lengths in blocks.
    let first = *src.first()?;
    if first < 0x80 {
        return Some((u32::from(first), 1));
    }
    let (v, n) = decode_varint64(src.get(..src.len().min(MAX_VARINT32_LEN))?)?;
    u32::try_from(v).ok().map(|v| (v, n))
}

/// Decodes a varint64 at the start of `src`: the value and the bytes it took.
/// `None` if `src` ends first, the encoding is longer than 10 bytes, or the value needs
/// more than 64 bits.
#[inline]
pub fn decode_varint64(src: &[u8]) -> Option<(u64, usize)> {
    let mut result: u64 = 0;
    for (i, &byte) in src.iter().take(MAX_VARINT64_LEN).enumerate() {
        let bits = u64::from(byte & 0x7f);
        let shift = 7 * i as u32;
        if i == MAX_VARINT64_LEN - 1 && byte > 1 {
            return None; // would overflow 64 bits
        }
        result |= bits << shift;
        if byte < 0x80 {
            return Some((result, i + 1));
        }
    }
    None
}

/// A bounds-checked cursor over untrusted bytes.
///
/// Every method either consumes a whole field and returns it, or returns a corruption
/// error naming the field and its offset (relative to the start of the input) and leaves
/// the cursor where that field started.
#[derive(Debug, Clone)]
pub struct Decoder<'a> {
    input: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    /// A cursor at the start of `input`.
    pub fn new(input: &'a [u8]) -> Self {
        Decoder { input, pos: 0 }
    }

    /// Offset of the next unread byte.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The unread bytes.
    pub fn remaining(&self) -> &'a [u8] {
        self.input.get(self.pos..).unwrap_or_default()
    }

    /// True when every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.input.len()
    }

    fn error(&self, what: &str) -> Error {
        Error::corruption("", self.pos as u64, what)
    }

    /// Reads one byte.
    #[inline]
    pub fn u8(&mut self, what: &str) -> Result<u8> {
        let b = *self
            .remaining()
            .first()
            .ok_or_else(|| self.error(&format!("truncated {what}")))?;
        self.pos += 1;
        Ok(b)
    }

    /// Reads a fixed32.
    #[cfg(any(test, feature = "internals"))]
    pub fn fixed32(&mut self, what: &str) -> Result<u32> {
        let v = decode_fixed32(self.remaining())
            .ok_or_else(|| self.error(&format!("truncated {what} (fixed32)")))?;
        self.pos += 4;
        Ok(v)
    }

    /// Reads a fixed64.
    #[cfg(any(test, feature = "internals"))]
    pub fn fixed64(&mut self, what: &str) -> Result<u64> {
        let v = decode_fixed64(self.remaining())
            .ok_or_else(|| self.error(&format!("truncated {what} (fixed64)")))?;
        self.pos += 8;
        Ok(v)
    }

    /// Reads a varint32.
    #[inline]
    pub fn varint32(&mut self, what: &str) -> Result<u32> {
        let (v, n) = decode_varint32(self.remaining())
            .ok_or_else(|| self.error(&format!("bad varint32 for {what}")))?;
        self.pos += n;
        Ok(v)
    }

    /// Reads a varint64.
    pub fn varint64(&mut self, what: &str) -> Result<u64> {
        let (v, n) = decode_varint64(self.remaining())
            .ok_or_else(|| self.error(&format!("bad varint64 for {what}")))?;
        self.pos += n;
        Ok(v)
    }

    /// Reads `n` raw bytes.
    #[inline]
    pub fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let rest = self.remaining();
        let out = rest.get(..n).ok_or_else(|| {
            self.error(&format!(
                "truncated {what}: {n} bytes expected, {} left",
                rest.len()
            ))
        })?;
        self.pos += n;
        Ok(out)
    }

    /// Reads a length-prefixed slice. The length is checked against the bytes actually
    /// left before anything is returned, so a corrupt length cannot cause a large read.
    #[inline]
    pub fn length_prefixed(&mut self, what: &str) -> Result<&'a [u8]> {
        let start = self.pos;
        let len = self.varint32(what)? as usize;
        match self.bytes(len, what) {
            Ok(s) => Ok(s),
            Err(e) => {
                self.pos = start;
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_bytes_matches_slice_order() {
        let samples: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![1],
            vec![0xff],
            b"abcdefgh".to_vec(),
            b"abcdefgh\0".to_vec(),
            b"abcdefgi".to_vec(),
            b"abcdefghabcdefgh".to_vec(),
            b"abcdefghabcdefgz".to_vec(),
            b"abcdefghabcdefg".to_vec(),
            b"0000000000000001".to_vec(),
            b"0000000000000010".to_vec(),
            vec![0x80; 9],
            vec![0x7f; 17],
        ];
        for a in &samples {
            for b in &samples {
                assert_eq!(compare_bytes(a, b), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }
    use proptest::prelude::*;

    #[test]
    fn fixed_round_trip_and_layout() {
        let mut buf = Vec::new();
        put_fixed32(&mut buf, 0x0403_0201);
        put_fixed64(&mut buf, 0x0c0b_0a09_0807_0605);
        assert_eq!(buf, (1u8..=12).collect::<Vec<_>>());
        assert_eq!(decode_fixed32(&buf), Some(0x0403_0201));
        assert_eq!(decode_fixed64(&buf[4..]), Some(0x0c0b_0a09_0807_0605));
        assert_eq!(decode_fixed32(&buf[..3]), None);
        assert_eq!(decode_fixed64(&buf[..7]), None);
    }

    #[test]
    fn varint_known_encodings() {
        let cases: [(u64, &[u8]); 5] = [
            (0, &[0]),
            (127, &[0x7f]),
            (128, &[0x80, 0x01]),
            (300, &[0xac, 0x02]),
            (
                u64::MAX,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
        ];
        for (v, enc) in cases {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            assert_eq!(buf, enc);
            assert_eq!(varint_length(v), enc.len());
            assert_eq!(decode_varint64(enc), Some((v, enc.len())));
        }
    }

    #[test]
    fn varint_rejects_bad_input() {
        assert_eq!(decode_varint32(&[]), None);
        assert_eq!(decode_varint32(&[0x80]), None); // truncated
        assert_eq!(decode_varint32(&[0xff, 0xff, 0xff, 0xff, 0x1f]), None); // > 32 bits
        assert_eq!(
            decode_varint32(&[0xff, 0xff, 0xff, 0xff, 0x0f]),
            Some((u32::MAX, 5))
        );
        assert_eq!(decode_varint32(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00]), None);
        assert_eq!(decode_varint64(&[0xff; 10]), None);
        assert_eq!(
            decode_varint64(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]),
            None
        );
    }

    #[test]
    fn decoder_reports_field_and_offset() {
        let mut buf = Vec::new();
        put_varint32(&mut buf, 3);
        buf.extend_from_slice(b"ab"); // one byte short
        let mut d = Decoder::new(&buf);
        let err = d.length_prefixed("key").unwrap_err();
        let c = err.as_corruption().unwrap();
        assert_eq!(c.offset, 1);
        assert!(c.what.contains("key"), "{}", c.what);
        assert_eq!(d.position(), 0, "cursor stays at the failed field");
    }

    #[test]
    fn decoder_huge_length_does_not_allocate() {
        let mut buf = Vec::new();
        put_varint32(&mut buf, u32::MAX);
        let mut d = Decoder::new(&buf);
        assert!(d.length_prefixed("value").is_err());
    }

    proptest! {
        #[test]
        fn shared_prefix_len_counts_equal_leading_bytes(
            prefix in proptest::collection::vec(any::<u8>(), 0..30),
            a in proptest::collection::vec(0u8..3, 0..20),
            b in proptest::collection::vec(0u8..3, 0..20),
        ) {
            let a = [prefix.clone(), a].concat();
            let b = [prefix, b].concat();
            let want = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            prop_assert_eq!(shared_prefix_len(&a, &b), want);
            prop_assert_eq!(shared_prefix_len(&b, &a), want);
            prop_assert_eq!(shared_prefix_len(&a, &a), a.len());
        }

        #[test]
        fn compare_bytes_is_slice_order(
            prefix in proptest::collection::vec(any::<u8>(), 0..20),
            a in proptest::collection::vec(any::<u8>(), 0..20),
            b in proptest::collection::vec(0u8..4, 0..20),
        ) {
            // A shared prefix, so the words often tie and the tails decide.
            let a = [prefix.clone(), a].concat();
            let b = [prefix, b].concat();
            prop_assert_eq!(compare_bytes(&a, &b), a.cmp(&b));
            prop_assert_eq!(compare_bytes(&b, &a), b.cmp(&a));
        }

        #[test]
        fn varint64_round_trips(v: u64) {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            prop_assert_eq!(buf.len(), varint_length(v));
            prop_assert_eq!(decode_varint64(&buf), Some((v, buf.len())));
        }

        #[test]
        fn varint32_round_trips(v: u32) {
            let mut buf = Vec::new();
            put_varint32(&mut buf, v);
            prop_assert_eq!(decode_varint32(&buf), Some((v, buf.len())));
        }

        #[test]
        fn decoder_round_trips_a_sequence(a: u32, b: u64, c: u32, d: u64, s in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut buf = Vec::new();
            put_varint32(&mut buf, a);
            put_varint64(&mut buf, b);
            put_fixed32(&mut buf, c);
            put_fixed64(&mut buf, d);
            put_length_prefixed(&mut buf, &s);
            let mut dec = Decoder::new(&buf);
            prop_assert_eq!(dec.varint32("a").unwrap(), a);
            prop_assert_eq!(dec.varint64("b").unwrap(), b);
            prop_assert_eq!(dec.fixed32("c").unwrap(), c);
            prop_assert_eq!(dec.fixed64("d").unwrap(), d);
            prop_assert_eq!(dec.length_prefixed("s").unwrap(), &s[..]);
            prop_assert!(dec.is_empty());
        }

        #[test]
        fn decoder_never_panics_on_random_bytes(input in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut d = Decoder::new(&input);
            while !d.is_empty() {
                if d.length_prefixed("x").is_err() && d.varint64("y").is_err() {
                    break;
                }
            }
        }
    }
}
