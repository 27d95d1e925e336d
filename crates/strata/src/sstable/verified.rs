//! [`Verified`]: which data blocks of a mapped table have had their checksum checked.
//!
//! A table is never written after it is complete, and a mapped table's bytes are read
//! where they lie (`env/mapped_read.rs`, R2). So a block whose CRC-32C matched once is
//! the same bytes at every later read, exactly as a verified block in the block cache
//! is: checking it again would find what the first check found. A read that asks for
//! verification checks a block only the first time; one that does not ask neither
//! checks nor marks.
//!
//! Invariant:
//! - T4 a block's bit is set only after a check of the bytes at its offset passed, and
//!   only for an offset that is a data block's in the table's index (an offset the index
//!   does not name is never taken as checked).
//!
//! Limit (`docs/durability.md`): bytes that change on disk after their block was first
//! checked, while the database has the table open, and reach the map again (the page
//! cache dropped the page and read it back) are not seen; the block cache has the same
//! limit for the blocks it holds. `Options::mmap_reads = false` checks every read.

use std::sync::atomic::{AtomicU64, Ordering};

use super::block::Block;
use super::format::BlockHandle;
use crate::iter::Cursor;
use crate::key::Bytewise;

/// One bit per data block, found by the block's offset.
#[derive(Debug, Default)]
pub struct Verified {
    /// The data blocks' offsets, in the index's order (increasing in the file).
    offsets: Vec<u64>,
    bits: Vec<AtomicU64>,
}

impl Verified {
    /// The blocks named by `index` (a table's index block). Entries whose handle does not
    /// decode, or that are out of order, are left out: their blocks are checked at every
    /// read.
    pub fn new(index: &std::sync::Arc<Block>) -> Verified {
        let mut offsets: Vec<u64> = Vec::new();
        // The index's keys are never compared here: any order walks it front to back.
        let mut it = index.iter(Bytewise);
        it.seek_to_first();
        while it.valid() {
            if let Ok(h) = BlockHandle::decode_exact(it.value())
                && offsets.last().is_none_or(|&last| h.offset > last)
            {
                offsets.push(h.offset);
            }
            it.next();
        }
        let bits = (0..offsets.len().div_ceil(64))
            .map(|_| AtomicU64::new(0))
            .collect();
        Verified { offsets, bits }
    }

    /// The bit of the block at `offset`: its word and mask.
    fn slot(&self, offset: u64) -> Option<(&AtomicU64, u64)> {
        let i = self.offsets.binary_search(&offset).ok()?;
        Some((self.bits.get(i / 64)?, 1u64 << (i % 64)))
    }

    /// True if the block at `offset` was checked before.
    #[inline]
    pub fn contains(&self, offset: u64) -> bool {
        self.slot(offset)
            .is_some_and(|(word, mask)| word.load(Ordering::Relaxed) & mask != 0)
    }

    /// Records that the block at `offset` was checked (T4: call only after it passed).
    pub fn insert(&self, offset: u64) {
        if let Some((word, mask)) = self.slot(offset) {
            word.fetch_or(mask, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use super::*;
    use crate::sstable::BlockBuilder;

    fn index(offsets: &[u64]) -> Arc<Block> {
        let mut b = BlockBuilder::new(1);
        for (i, &o) in offsets.iter().enumerate() {
            let mut v = Vec::new();
            BlockHandle {
                offset: o,
                size: 10,
            }
            .encode_to(&mut v);
            b.add(format!("k{i:04}").as_bytes(), &v);
        }
        Arc::new(Block::new(b.finish().to_vec()).unwrap())
    }

    #[test]
    fn only_offsets_the_index_names_are_marked() {
        let offsets: Vec<u64> = (0..200).map(|i| i * 100).collect();
        let v = Verified::new(&index(&offsets));
        assert!(!v.contains(0));
        v.insert(0);
        v.insert(19_900);
        v.insert(150); // not a block
        assert!(v.contains(0));
        assert!(v.contains(19_900));
        assert!(!v.contains(150));
        assert!(!v.contains(100));
        assert_eq!(
            offsets.iter().filter(|&&o| v.contains(o)).count(),
            2,
            "no other block is taken as checked"
        );
    }

    #[test]
    fn out_of_order_handles_are_left_out() {
        let v = Verified::new(&index(&[0, 500, 300, 900]));
        v.insert(300);
        assert!(!v.contains(300));
        v.insert(900);
        assert!(v.contains(900));
    }
}
