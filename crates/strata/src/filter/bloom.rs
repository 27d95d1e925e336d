//! LevelDB's built-in Bloom filter (`leveldb.BuiltinBloomFilter2`), bit for bit.
//!
//! A filter for `n` keys is `max(64, n * bits_per_key)` bits rounded up to whole bytes,
//! followed by one byte holding `k`, the number of probes. Each key is hashed once with
//! [`leveldb_hash`] (seed `0xbc9f1d34`); probe `j` tests bit `(h + j * delta) % bits`
//! where `delta = h.rotate_right(17)` (double hashing, arithmetic wrapping at 32 bits).
//!
//! Reading is defensive: a filter shorter than 2 bytes matches nothing, and a `k` above
//! 30 is reserved for other encodings and matches everything (a false positive costs a
//! block read; a false negative would lose data).

use crate::coding::decode_fixed32;

/// The name stored in the table's metaindex (`filter.` + this).
pub const BLOOM_POLICY_NAME: &str = "leveldb.BuiltinBloomFilter2";

const HASH_SEED: u32 = 0xbc9f_1d34;

/// LevelDB's 32-bit hash (a Murmur-like mix), with `seed`.
pub fn leveldb_hash(data: &[u8], seed: u32) -> u32 {
    const M: u32 = 0xc6a4_a793;
    let mut h = seed ^ (data.len() as u32).wrapping_mul(M);
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        h = h.wrapping_add(decode_fixed32(w).unwrap_or(0));
        h = h.wrapping_mul(M);
        h ^= h >> 16;
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        for (i, &b) in rest.iter().enumerate().rev() {
            h = h.wrapping_add(u32::from(b) << (8 * i));
        }
        h = h.wrapping_mul(M);
        h ^= h >> 24;
    }
    h
}

/// The Bloom filter policy with a given number of bits per key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BloomPolicy {
    bits_per_key: usize,
    k: u8,
}

impl BloomPolicy {
    /// A policy using `bits_per_key` bits per key (10 gives about 1% false positives).
    pub fn new(bits_per_key: usize) -> Self {
        // k = bits_per_key * ln 2, rounded down as LevelDB does, clamped to 1..=30.
        let k = ((bits_per_key as f64) * 0.69) as usize;
        BloomPolicy {
            bits_per_key,
            k: k.clamp(1, 30) as u8,
        }
    }

    /// Bits per key.
    pub fn bits_per_key(&self) -> usize {
        self.bits_per_key
    }

    /// Appends the filter for `keys` (duplicates count, as in LevelDB) to `dst`.
    pub fn create_filter<'a>(
        &self,
        keys: impl ExactSizeIterator<Item = &'a [u8]>,
        dst: &mut Vec<u8>,
    ) {
        let n = keys.len();
        let bits = (n * self.bits_per_key).max(64);
        let bytes = bits.div_ceil(8);
        let bits = bytes * 8;
        let start = dst.len();
        dst.resize(start + bytes, 0);
        dst.push(self.k);
        let array = &mut dst[start..start + bytes];
        for key in keys {
            let mut h = leveldb_hash(key, HASH_SEED);
            let delta = h.rotate_right(17);
            for _ in 0..self.k {
                let bit = h as usize % bits;
                array[bit / 8] |= 1 << (bit % 8);
                h = h.wrapping_add(delta);
            }
        }
    }

    /// False only if `key` is certainly not among the keys `filter` was built from.
    pub fn key_may_match(key: &[u8], filter: &[u8]) -> bool {
        let Some((&k, array)) = filter.split_last() else {
            return false;
        };
        if array.is_empty() {
            return false;
        }
        if k > 30 {
            return true;
        }
        let bits = array.len() * 8;
        let mut h = leveldb_hash(key, HASH_SEED);
        let delta = h.rotate_right(17);
        for _ in 0..k {
            let bit = h as usize % bits;
            if array[bit / 8] & (1 << (bit % 8)) == 0 {
                return false;
            }
            h = h.wrapping_add(delta);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_matches_leveldb_vectors() {
        // The vectors of LevelDB's util/hash_test.cc (bytes are unsigned).
        assert_eq!(leveldb_hash(&[], 0xbc9f1d34), 0xbc9f1d34);
        assert_eq!(leveldb_hash(&[0x62], 0xbc9f1d34), 0xef1345c4);
        assert_eq!(leveldb_hash(&[0xc3, 0x97], 0xbc9f1d34), 0x5b663814);
        assert_eq!(leveldb_hash(&[0xe2, 0x99, 0xa5], 0xbc9f1d34), 0x323c078f);
        assert_eq!(
            leveldb_hash(&[0xe1, 0x80, 0xb9, 0x32], 0xbc9f1d34),
            0xed21633a
        );
        let mut long = [0u8; 48];
        for (at, byte) in [
            (0, 0x01),
            (1, 0xc0),
            (16, 0x14),
            (22, 0x04),
            (27, 0x14),
            (31, 0x18),
            (32, 0x28),
            (40, 0x02),
        ] {
            long[at] = byte;
        }
        assert_eq!(leveldb_hash(&long, 0x12345678), 0xf333dabb);
    }

    fn key(i: u32) -> [u8; 4] {
        i.to_le_bytes()
    }

    #[test]
    fn empty_and_tiny_filters() {
        assert!(!BloomPolicy::key_may_match(b"hello", &[]));
        assert!(!BloomPolicy::key_may_match(b"hello", &[5]));
        let mut f = Vec::new();
        BloomPolicy::new(10).create_filter(std::iter::empty(), &mut f);
        assert_eq!(f.len(), 9, "64 bits and the k byte");
        assert!(!BloomPolicy::key_may_match(b"hello", &f));
        // k above 30: reserved, matches everything.
        assert!(BloomPolicy::key_may_match(b"hello", &[0, 0, 0, 31]));
    }

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let policy = BloomPolicy::new(10);
        for n in [1u32, 10, 100, 1000, 10_000] {
            let keys: Vec<[u8; 4]> = (0..n).map(key).collect();
            let mut f = Vec::new();
            policy.create_filter(keys.iter().map(|k| &k[..]), &mut f);
            assert!(f.len() <= (n as usize * 10 / 8) + 40);
            for k in &keys {
                assert!(BloomPolicy::key_may_match(k, &f));
            }
            let fp = (0..10_000u32)
                .filter(|i| BloomPolicy::key_may_match(&key(i + 1_000_000_000), &f))
                .count();
            assert!(fp <= 200, "n={n}: {fp} false positives in 10,000 (over 2%)");
        }
    }

    #[test]
    fn k_follows_bits_per_key() {
        assert_eq!(BloomPolicy::new(10).k, 6);
        assert_eq!(BloomPolicy::new(1).k, 1);
        assert_eq!(BloomPolicy::new(100).k, 30);
    }
}
