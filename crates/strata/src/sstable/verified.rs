//! [`Verified`]: which data blocks of a mapped table have had their checksum checked, and
//! how each is stored.
//!
//! A table is never written after it is complete, and a mapped table's bytes are read
//! where they lie (`env/mapped_read.rs`, R2). So a block whose CRC-32C matched once is
//! the same bytes at every later read, exactly as a verified block in the block cache
//! is: checking it again would find what the first check found. A read that asks for
//! verification checks a block only the first time; one that does not ask neither
//! checks nor marks. The mark also says whether the block is stored uncompressed, so a
//! later read goes straight to the block's bytes in the map (or straight to the block
//! cache) without looking at its trailer again.
//!
//! A block's marks are found by its offset (a binary search of the index's offsets) or,
//! for a point lookup, by the number of the index entry that named it: the index cursor
//! already stands on that entry, and at scale (hundreds of tables, thousands of blocks
//! each) the search cost a cache miss per step, a fifth of a random read's time.
//!
//! Invariant:
//! - T4 a block is marked only after a check of the bytes at its offset passed, with the
//!   compression its trailer gave, and only at an offset that is a data block's in the
//!   table's index (an offset the index does not name is never taken as checked). An
//!   entry number is used only when the index is dense (one entry per restart point,
//!   every entry's handle in order), where entry `i` names `offsets[i]`; callers pass the
//!   number of the entry whose handle gave `offset`.
//!
//! Limit (`docs/durability.md`): bytes that change on disk after their block was first
//! checked, while the database has the table open, and reach the map again (the page
//! cache dropped the page and read it back) are not seen; the block cache has the same
//! limit for the blocks it holds. `Options::mmap_reads = false` checks every read.

use std::sync::atomic::{AtomicU64, Ordering};

use super::block::Block;
use super::format::BlockHandle;
use crate::comparator::BytewiseComparator;
use crate::iter::Cursor;

/// How a checked block is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Uncompressed: readable in place.
    Plain,
    /// Compressed.
    Compressed,
}

/// Two bits per data block (checked, stored plain), found by the block's offset.
#[derive(Debug, Default)]
pub struct Verified {
    /// The data blocks' offsets, in the index's order (increasing in the file).
    offsets: Vec<u64>,
    bits: Vec<AtomicU64>,
    /// Every index entry is a restart point and gave an offset here: entry `i`'s block
    /// is `offsets[i]`.
    dense: bool,
}

const CHECKED: u64 = 1;
const PLAIN: u64 = 2;

impl Verified {
    /// The blocks named by `index` (a table's index block). Entries whose handle does not
    /// decode, or that are out of order, are left out: their blocks are checked at every
    /// read.
    pub fn new(index: &std::sync::Arc<Block>) -> Verified {
        let mut offsets: Vec<u64> = Vec::new();
        let mut entries = 0;
        // The index's keys are never compared here: any order walks it front to back.
        let mut it = index.iter(BytewiseComparator);
        it.seek_to_first();
        while it.valid() {
            entries += 1;
            if let Ok(h) = BlockHandle::decode_exact(it.value())
                && offsets.last().is_none_or(|&last| h.offset > last)
            {
                offsets.push(h.offset);
            }
            it.next();
        }
        let dense =
            it.status().is_ok() && entries == offsets.len() && entries == index.num_restarts();
        let bits = (0..offsets.len().div_ceil(32))
            .map(|_| AtomicU64::new(0))
            .collect();
        Verified {
            offsets,
            bits,
            dense,
        }
    }

    /// The word and the shift of the two bits of the block at `offset`, named by index
    /// entry `entry` when the caller knows it (T4).
    #[inline]
    fn slot(&self, entry: Option<usize>, offset: u64) -> Option<(&AtomicU64, u32)> {
        let i = match entry {
            Some(i) if self.dense && i < self.offsets.len() => {
                debug_assert_eq!(self.offsets[i], offset, "entry {i} names another block");
                i
            }
            _ => self.offsets.binary_search(&offset).ok()?,
        };
        Some((self.bits.get(i / 32)?, 2 * (i % 32) as u32))
    }

    /// How the block at `offset` (named by index entry `entry`, if known) is stored, if
    /// it was checked before; `None` if not.
    #[inline]
    pub fn get(&self, entry: Option<usize>, offset: u64) -> Option<Stored> {
        let (word, shift) = self.slot(entry, offset)?;
        let bits = word.load(Ordering::Relaxed) >> shift;
        if bits & CHECKED == 0 {
            None
        } else if bits & PLAIN != 0 {
            Some(Stored::Plain)
        } else {
            Some(Stored::Compressed)
        }
    }

    /// Records that the block at `offset` (named by index entry `entry`, if known),
    /// stored as `stored`, was checked (T4: call only after it passed).
    pub fn insert(&self, entry: Option<usize>, offset: u64, stored: Stored) {
        if let Some((word, shift)) = self.slot(entry, offset) {
            let plain = if stored == Stored::Plain { PLAIN } else { 0 };
            word.fetch_or((CHECKED | plain) << shift, Ordering::Relaxed);
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
        index_with_interval(offsets, 1)
    }

    fn index_with_interval(offsets: &[u64], interval: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(interval);
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
        assert_eq!(v.get(None, 0), None);
        v.insert(None, 0, Stored::Plain);
        v.insert(None, 19_900, Stored::Compressed);
        v.insert(None, 3_100, Stored::Plain); // the 32nd block: the second word's first bits
        v.insert(None, 150, Stored::Plain); // not a block
        assert_eq!(v.get(None, 0), Some(Stored::Plain));
        assert_eq!(v.get(None, 19_900), Some(Stored::Compressed));
        assert_eq!(v.get(None, 3_100), Some(Stored::Plain));
        assert_eq!(v.get(None, 150), None);
        assert_eq!(v.get(None, 100), None);
        assert_eq!(
            offsets
                .iter()
                .filter(|&&o| v.get(None, o).is_some())
                .count(),
            3,
            "no other block is taken as checked"
        );
    }

    #[test]
    fn out_of_order_handles_are_left_out() {
        let v = Verified::new(&index(&[0, 500, 300, 900]));
        v.insert(None, 300, Stored::Plain);
        assert_eq!(v.get(None, 300), None);
        v.insert(None, 900, Stored::Compressed);
        assert_eq!(v.get(None, 900), Some(Stored::Compressed));
    }

    #[test]
    fn a_dense_index_finds_marks_by_entry_number_as_by_offset() {
        let offsets: Vec<u64> = (0..100).map(|i| i * 4096).collect();
        let idx = index(&offsets);
        let v = Verified::new(&idx);
        assert!(v.dense);
        // The entry a seek lands on gives the number; both ways reach the same bits.
        let mut it = idx.iter(BytewiseComparator);
        it.seek(b"k0041");
        assert_eq!(it.restart_number(), Some(41));
        v.insert(Some(41), 41 * 4096, Stored::Plain);
        assert_eq!(v.get(None, 41 * 4096), Some(Stored::Plain));
        v.insert(None, 70 * 4096, Stored::Compressed);
        assert_eq!(v.get(Some(70), 70 * 4096), Some(Stored::Compressed));
        assert_eq!(v.get(Some(40), 40 * 4096), None);
    }

    #[test]
    fn entry_numbers_are_not_trusted_where_the_index_is_not_dense() {
        let offsets: Vec<u64> = (0..100).map(|i| i * 4096).collect();
        // Two entries per restart point: entry numbers are not restart numbers.
        let sparse = Verified::new(&index_with_interval(&offsets, 2));
        assert!(!sparse.dense);
        sparse.insert(Some(3), 41 * 4096, Stored::Plain);
        assert_eq!(sparse.get(None, 41 * 4096), Some(Stored::Plain));
        assert_eq!(
            sparse.get(None, 3 * 4096),
            None,
            "found by offset, not by number"
        );
        // An entry left out (out of order) shifts every number after it.
        let holed = Verified::new(&index(&[0, 500, 300, 900]));
        assert!(!holed.dense);
        holed.insert(Some(2), 900, Stored::Plain);
        assert_eq!(holed.get(None, 900), Some(Stored::Plain));
    }
}
