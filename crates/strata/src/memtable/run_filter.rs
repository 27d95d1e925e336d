//! [`RunFilter`]: a Bloom filter over the user keys of one memtable run, so a lookup skips
//! the runs that cannot hold its key.
//!
//! Blocked: the bits of a key all lie in one 512-bit block (one cache line), so a probe
//! costs one cache miss at most. Sized from the run's byte budget (one bit per 16 bytes of
//! entries: about ten bits per key at 100-byte values, about 2 % false positives).
//!
//! Thread-safety: one writer (the memtable's inserter, M1) sets bits with plain atomic
//! loads and stores; readers test them at any time. A reader that must see a key's bits
//! (a lookup at a seqnum the key was inserted under) learned that seqnum through the
//! database's state mutex after the insert finished, which orders the bits before it.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::filter::leveldb_hash;

/// Bits set per key.
const PROBES: u32 = 6;
/// Bits per block: one 64-byte cache line.
const BLOCK_BITS: u64 = 512;
const WORDS_PER_BLOCK: usize = (BLOCK_BITS / 64) as usize;
/// Bytes of run entries per filter bit.
const BYTES_PER_BIT: usize = 16;

/// A key's hash, computed once per lookup and tested against every run.
#[derive(Debug, Clone, Copy)]
pub(super) struct KeyHash(u64);

impl KeyHash {
    pub(super) fn of(user_key: &[u8]) -> Self {
        let h = u64::from(leveldb_hash(user_key, 0x6d65_6d74));
        KeyHash(h.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (h << 29))
    }
}

/// The Bloom filter of one run (see the module docs).
#[derive(Debug)]
pub(super) struct RunFilter {
    words: Box<[AtomicU64]>,
    blocks: u64,
}

impl RunFilter {
    /// A filter for a run of about `run_bytes` bytes of entries.
    pub(super) fn new(run_bytes: usize) -> Self {
        let blocks = (run_bytes / BYTES_PER_BIT)
            .div_ceil(BLOCK_BITS as usize)
            .max(1);
        RunFilter {
            words: (0..blocks * WORDS_PER_BLOCK)
                .map(|_| AtomicU64::new(0))
                .collect(),
            blocks: blocks as u64,
        }
    }

    /// Bytes the filter takes.
    pub(super) fn memory_usage(&self) -> usize {
        self.words.len() * 8
    }

    /// The words of `hash`'s block and its probe positions in it.
    fn probes(&self, hash: KeyHash) -> (usize, impl Iterator<Item = u64>) {
        let block = ((hash.0 >> 32) * self.blocks) >> 32;
        let mut h = hash.0 as u32;
        let delta = h.rotate_right(17) | 1;
        let bits = (0..PROBES).map(move |_| {
            let bit = u64::from(h) % BLOCK_BITS;
            h = h.wrapping_add(delta);
            bit
        });
        (block as usize * WORDS_PER_BLOCK, bits)
    }

    /// Records a key. Requires: one caller at a time (M1).
    pub(super) fn add(&self, hash: KeyHash) {
        let (base, bits) = self.probes(hash);
        for bit in bits {
            if let Some(w) = self.words.get(base + (bit / 64) as usize) {
                let mask = 1u64 << (bit % 64);
                w.store(w.load(Ordering::Relaxed) | mask, Ordering::Relaxed);
            }
        }
    }

    /// False only if no key with this hash was added.
    pub(super) fn may_contain(&self, hash: KeyHash) -> bool {
        let (base, mut bits) = self.probes(hash);
        bits.all(|bit| {
            self.words
                .get(base + (bit / 64) as usize)
                .is_some_and(|w| w.load(Ordering::Relaxed) & (1u64 << (bit % 64)) != 0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        // A 1 MiB run of 150-byte entries: about 7,000 keys.
        let f = RunFilter::new(1 << 20);
        let n = 7000u32;
        for i in 0..n {
            f.add(KeyHash::of(format!("{i:016}").as_bytes()));
        }
        for i in 0..n {
            assert!(f.may_contain(KeyHash::of(format!("{i:016}").as_bytes())));
        }
        let false_positives = (n..n + 100_000)
            .filter(|i| f.may_contain(KeyHash::of(format!("{i:016}").as_bytes())))
            .count();
        assert!(false_positives < 3_000, "{false_positives} in 100,000");
        assert_eq!(f.memory_usage(), (1 << 20) / 16 / 8);
    }

    #[test]
    fn tiny_filter_still_answers() {
        let f = RunFilter::new(0);
        assert!(!f.may_contain(KeyHash::of(b"a")));
        f.add(KeyHash::of(b"a"));
        assert!(f.may_contain(KeyHash::of(b"a")));
    }
}
