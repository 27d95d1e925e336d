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
//! Invariant:
//! - T4 a block is marked only after a check of the bytes at its offset passed, with the
//!   compression its trailer gave, and only at an offset that is a data block's in the
//!   table's index (an offset the index does not name is never taken as checked).
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
}

const CHECKED: u64 = 1;
const PLAIN: u64 = 2;

impl Verified {
    /// The blocks named by `index` (a table's index block). Entries whose handle does not
    /// decode, or that are out of order, are left out: their blocks are checked at every
    /// read.
    pub fn new(index: &std::sync::Arc<Block>) -> Verified {
        let mut offsets: Vec<u64> = Vec::new();
        // The index's keys are never compared here: any order walks it front to back.
        let mut it = index.iter(BytewiseComparator);
        it.seek_to_first();
        while it.valid() {
            if let Ok(h) = BlockHandle::decode_exact(it.value())
                && offsets.last().is_none_or(|&last| h.offset > last)
            {
                offsets.push(h.offset);
            }
            it.next();
        }
        let bits = (0..offsets.len().div_ceil(32))
            .map(|_| AtomicU64::new(0))
            .collect();
        Verified { offsets, bits }
    }

    /// The block at `offset`'s word and the shift of its two bits.
    #[inline]
    fn slot(&self, offset: u64) -> Option<(&AtomicU64, u32)> {
        let i = self.offsets.binary_search(&offset).ok()?;
        Some((self.bits.get(i / 32)?, 2 * (i % 32) as u32))
    }

    /// How the block at `offset` is stored, if it was checked before; `None` if not.
    #[inline]
    pub fn get(&self, offset: u64) -> Option<Stored> {
        let (word, shift) = self.slot(offset)?;
        let bits = word.load(Ordering::Relaxed) >> shift;
        if bits & CHECKED == 0 {
            None
        } else if bits & PLAIN != 0 {
            Some(Stored::Plain)
        } else {
            Some(Stored::Compressed)
        }
    }

    /// Records that the block at `offset`, stored as `stored`, was checked (T4: call only
    /// after it passed).
    pub fn insert(&self, offset: u64, stored: Stored) {
        if let Some((word, shift)) = self.slot(offset) {
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
        assert_eq!(v.get(0), None);
        v.insert(0, Stored::Plain);
        v.insert(19_900, Stored::Compressed);
        v.insert(3_100, Stored::Plain); // the 32nd block: the second word's first bits
        v.insert(150, Stored::Plain); // not a block
        assert_eq!(v.get(0), Some(Stored::Plain));
        assert_eq!(v.get(19_900), Some(Stored::Compressed));
        assert_eq!(v.get(3_100), Some(Stored::Plain));
        assert_eq!(v.get(150), None);
        assert_eq!(v.get(100), None);
        assert_eq!(
            offsets.iter().filter(|&&o| v.get(o).is_some()).count(),
            3,
            "no other block is taken as checked"
        );
    }

    #[test]
    fn out_of_order_handles_are_left_out() {
        let v = Verified::new(&index(&[0, 500, 300, 900]));
        v.insert(300, Stored::Plain);
        assert_eq!(v.get(300), None);
        v.insert(900, Stored::Compressed);
        assert_eq!(v.get(900), Some(Stored::Compressed));
    }
}
