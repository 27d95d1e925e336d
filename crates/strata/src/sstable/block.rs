//! [`Block`] and [`BlockIter`]: reading a block's entries.
//!
//! ```text
//! entry*  restart: fixed32 * num_restarts  num_restarts: fixed32
//! entry := shared: varint32 | non_shared: varint32 | value_len: varint32
//!          | key[shared..] (non_shared bytes) | value (value_len bytes)
//! ```
//!
//! Fences (T5, T6 in `fences.rs`): a kept block whose keys are internal keys over
//! bytewise user keys carries a summary of its restart keys, built when it is read, that
//! decides most of a seek's comparisons without reading entries; a table's index keeps
//! each data block's handle beside it.
//!
//! A block's bytes are untrusted. [`Block::new`] checks the restart array (every restart
//! offset inside the entry area); the iterator checks each entry as it decodes it and,
//! on damage, becomes invalid with a corruption error whose offset is relative to the
//! block (the table adds the file and the block's position).

use std::cmp::Ordering;
use std::sync::Arc;

use crate::coding::{decode_fixed32, decode_varint32};
use crate::comparator::{Comparator, INTERNAL_KEY_COMPARATOR};
use crate::env::MappedBytes;
use crate::error::{Error, Result};
use crate::iter::Cursor;
use crate::key::user_key;

use super::fences::{Fences, Found, Place};
use super::key_buf::KeyBuf;

/// A decoded block: its bytes and where its restart array starts.
#[derive(Debug)]
pub struct Block {
    data: Bytes,
    /// Offset of the restart array; entries live in `data[..restarts]`.
    restarts: usize,
    num_restarts: usize,
    /// T5, empty when the block has none.
    fences: Fences,
    /// The block is kept (cached, or a table's index) and sought long after it was read,
    /// when its lines have likely left the CPU's caches: a seek touches its restart
    /// region first. A block read for one lookup is in the caches already (just decoded)
    /// or was touched whole (read in place), and is not touched again.
    kept: bool,
}

/// A block's bytes: its own (read, uncompressed or copied out), or a range of a mapped
/// table file read in place (a block stored uncompressed; see `env/mapped_read.rs`).
#[derive(Debug)]
enum Bytes {
    Owned(Vec<u8>),
    Mapped(MappedBytes),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            Bytes::Mapped(m) => m,
        }
    }
}

impl crate::cache::Cached for Block {
    fn charge(&self) -> usize {
        self.size()
    }

    fn into_buffer(self) -> Vec<u8> {
        self.into_data()
    }
}

impl Block {
    /// The block's bytes, for reuse as the buffer of another block (nothing for a block
    /// read in place).
    pub fn into_data(self) -> Vec<u8> {
        match self.data {
            Bytes::Owned(v) => v,
            Bytes::Mapped(_) => Vec::new(),
        }
    }

    /// Checks the block's trailer and restart array.
    pub fn new(data: Vec<u8>) -> Result<Self> {
        Self::from_bytes(Bytes::Owned(data))
    }

    /// [`Block::new`] over bytes of a mapped table read in place (no fences: such a block
    /// is not cached, so it is searched once or scanned).
    pub fn in_place(data: MappedBytes) -> Result<Self> {
        Self::from_bytes(Bytes::Mapped(data))
    }

    fn from_bytes(data: Bytes) -> Result<Self> {
        let n = data.len();
        let num_restarts = n
            .checked_sub(4)
            .and_then(|at| decode_fixed32(&data[at..]))
            .ok_or_else(|| Error::corruption("", 0, format!("block of {n} bytes is too short")))?
            as usize;
        let max_restarts = (n - 4) / 4;
        if num_restarts > max_restarts {
            return Err(Error::corruption(
                "",
                (n - 4) as u64,
                format!("block claims {num_restarts} restart points, room for {max_restarts}"),
            ));
        }
        let restarts = n - 4 - num_restarts * 4;
        let block = Block {
            data,
            restarts,
            num_restarts,
            fences: Fences::default(),
            kept: false,
        };
        let mut previous = 0;
        for i in 0..num_restarts {
            let r = block.restart_point(i);
            if r > restarts || r < previous {
                return Err(Error::corruption(
                    "",
                    (restarts + 4 * i) as u64,
                    format!(
                        "restart point {i} is {r}: outside entries 0..{restarts} or out of order"
                    ),
                ));
            }
            previous = r;
        }
        Ok(block)
    }

    /// [`Block::new`] for a block that is kept and sought many times (the block cache, a
    /// table's index): a seek touches the lines it is about to read first, and with
    /// `fences` the block gets them (T5) when it has at least two restarts and every
    /// restart key is undamaged. Fences only for blocks of internal keys whose user keys
    /// are ordered bytewise: a seek uses them only under such an order. They cost a pass
    /// over the restart keys, which a block read for one lookup would not earn back.
    pub fn kept(data: Vec<u8>, fences: bool) -> Result<Self> {
        let mut block = Block::new(data)?;
        if fences {
            block.fences = block.build_fences(None::<fn(&[u8]) -> Option<u64>>);
        }
        block.kept = true;
        Ok(block)
    }

    /// [`Block::kept`] for a table's index: with fences, and a block of one entry per
    /// restart whose every value `aux` summarizes (`None` for one it cannot), each
    /// summary is kept beside its restart's fence, so [`Block::find`] answers a lookup
    /// from the fences alone (T6).
    pub fn kept_index(
        data: Vec<u8>,
        fences: bool,
        aux: impl Fn(&[u8]) -> Option<u64>,
    ) -> Result<Self> {
        let mut block = Block::new(data)?;
        if fences {
            block.fences = block.build_fences(Some(aux));
        }
        block.kept = true;
        Ok(block)
    }

    /// The block's fences (T5), with each restart's value summarized by `aux` beside its
    /// fence when there is one entry per restart and `aux` summarizes every value (T6).
    /// None when the block has fewer than two restarts or a damaged restart entry (its
    /// seeks read entries and report it).
    fn build_fences(&self, aux: Option<impl Fn(&[u8]) -> Option<u64>>) -> Fences {
        let mut users = Vec::with_capacity(self.num_restarts);
        let mut values = Vec::new();
        for i in 0..self.num_restarts {
            let Some(e) = self.restart_entry(i) else {
                return Fences::default();
            };
            let key = &self.data[e.delta..e.delta + e.non_shared];
            if key.len() < crate::key::TAG_SIZE {
                return Fences::default();
            }
            users.push(user_key(key));
            let value = e.delta + e.non_shared;
            let next = self.region_end(i);
            // One entry per restart: each value ends where the next restart starts.
            if let Some(aux) = &aux
                && values.len() == i
                && value + e.value_len == next
                && let Some(word) = aux(&self.data[value..next])
            {
                values.push(word);
            }
        }
        let aux = (values.len() == self.num_restarts).then_some(&values[..]);
        Fences::build(&users, aux)
    }

    /// The first entry at or after internal key `target` and its value's summary, from
    /// the fences alone, in a block built by [`Block::kept_index`] (T6).
    #[inline]
    pub fn find(&self, target: &[u8]) -> Found {
        self.fences.find(target)
    }

    /// Size of the block in memory (its bytes and fences), for cache accounting.
    pub fn size(&self) -> usize {
        self.data.len() + self.fences.bytes()
    }

    /// How many restart points the block has (in an index block, written with one entry
    /// per restart point, how many entries).
    pub fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    /// The block's bytes, restart array included.
    pub fn contents(&self) -> &[u8] {
        &self.data
    }

    /// The header of the entry at `offset`; `None` if it runs past the entries.
    #[inline(always)]
    fn entry_at(&self, offset: usize) -> Option<Entry> {
        let src = self.data.get(offset..self.restarts)?;
        // Most headers are three one-byte varints (every length below 128): tried first,
        // as LevelDB's `DecodeEntry` does.
        let (shared, non_shared, value_len, header) = match *src {
            [s, n, v, ..] if (s | n | v) < 0x80 => (s.into(), n.into(), v.into(), 3),
            _ => {
                let (shared, a) = decode_varint32(src)?;
                let (non_shared, b) = decode_varint32(&src[a..])?;
                let (value_len, c) = decode_varint32(&src[a + b..])?;
                (
                    shared as usize,
                    non_shared as usize,
                    value_len as usize,
                    a + b + c,
                )
            }
        };
        if (src.len() - header) < non_shared.checked_add(value_len)? {
            return None;
        }
        Some(Entry {
            shared,
            non_shared,
            value_len,
            delta: offset + header,
        })
    }

    /// Asks the CPU for every cache line of restart region `index` (its entries up to the
    /// next restart point), where the scan that follows would otherwise meet each miss
    /// in turn (a region of 16 entries of a hundred bytes spans about 30 lines).
    /// Prefetches rather than loads, so the scan starts as the first lines arrive.
    #[inline]
    fn touch_region(&self, index: usize) {
        let start = self.restart_point(index);
        let end = self.region_end(index);
        if let Some(region) = self.data.get(start..end.max(start)) {
            crate::prefetch::lines(region);
        }
    }

    /// Where restart region `index` ends: the next restart point, or the end of the
    /// entries after the last.
    #[inline]
    fn region_end(&self, index: usize) -> usize {
        if index + 1 < self.num_restarts {
            self.restart_point(index + 1)
        } else {
            self.restarts
        }
    }

    /// The header of the entry at restart point `index`, or `None` if it is damaged (a
    /// restart entry shares nothing with the key before it).
    #[inline]
    fn restart_entry(&self, index: usize) -> Option<Entry> {
        self.entry_at(self.restart_point(index))
            .filter(|e| e.shared == 0)
    }

    /// The full key stored at restart point `index`, or `None` if it is damaged.
    fn restart_key(&self, index: usize) -> Option<&[u8]> {
        let e = self.restart_entry(index)?;
        Some(&self.data[e.delta..e.delta + e.non_shared])
    }

    fn restart_point(&self, i: usize) -> usize {
        decode_fixed32(&self.data[self.restarts + 4 * i..]).unwrap_or(0) as usize
    }

    /// A cursor over the entries, ordered by `order`.
    pub fn iter<O: Comparator + Clone>(self: &Arc<Self>, order: O) -> BlockIter<O> {
        BlockIter::over(Arc::clone(self), order)
    }

    /// A cursor that borrows the block: for one lookup in a block nobody else holds (read
    /// in place from the map) or that its owner outlives (a table's index), with no
    /// reference count to take and, for a block read in place, no allocation.
    pub fn iter_borrowed<O: Comparator + Clone>(&self, order: O) -> BlockIter<O, &Block> {
        BlockIter::over(self, order)
    }
}

/// What a cursor holds its block by: a shared reference count, or a borrow.
pub trait BlockRef: std::ops::Deref<Target = Block> + std::fmt::Debug {
    /// Bytes `start..end` of the block as a view that keeps them alive.
    fn pin(&self, start: usize, end: usize) -> BlockSlice;
}

impl BlockRef for Arc<Block> {
    fn pin(&self, start: usize, end: usize) -> BlockSlice {
        BlockSlice::Block {
            block: Arc::clone(self),
            start,
            end,
        }
    }
}

impl BlockRef for &Block {
    /// A mapped block's bytes stay alive by the map (no copy); a block of its own is
    /// copied, since the borrow ends with the cursor.
    fn pin(&self, start: usize, end: usize) -> BlockSlice {
        match &self.data {
            Bytes::Mapped(m) => BlockSlice::Mapped(m.clone().range(start, end)),
            Bytes::Owned(v) => BlockSlice::Owned(v.get(start..end).unwrap_or(&[]).to_vec()),
        }
    }
}

impl<O: Comparator + Clone, B: BlockRef> BlockIter<O, B> {
    fn over(block: B, order: O) -> Self {
        let (restarts, num_restarts) = (block.restarts, block.num_restarts);
        BlockIter {
            block,
            order,
            current: restarts,
            restart_index: num_restarts,
            next_restart: usize::MAX,
            key: KeyBuf::default(),
            value: (restarts, restarts),
            behind: Behind::default(),
            err: None,
        }
    }
}

/// Entries of the current restart region before the current entry, decoded by one
/// backward step and handed out by the next ones: a backward walk decodes each region
/// once instead of rescanning it from its restart point at every step (RocksDB's block
/// cursor keeps the same). Emptied by every other move.
#[derive(Debug, Default)]
struct Behind {
    /// Per entry, oldest first: its offset, where its key ends in `keys`, its value.
    entries: Vec<(usize, usize, (usize, usize))>,
    /// The entries' full keys, one after another.
    keys: Vec<u8>,
}

impl Behind {
    fn clear(&mut self) {
        self.entries.clear();
        self.keys.clear();
    }
}

/// One decoded entry header.
struct Entry {
    shared: usize,
    non_shared: usize,
    value_len: usize,
    /// Offset of the key delta.
    delta: usize,
}

/// Bytes inside a block, kept alive by the view: a value handed out without a copy (but
/// from a borrowed block of its own, [`BlockRef`]).
#[derive(Debug, Clone)]
pub enum BlockSlice {
    /// Bytes `start..end` of a shared block.
    Block {
        block: Arc<Block>,
        start: usize,
        end: usize,
    },
    /// Bytes of a mapped table (a block read in place), kept alive by the map.
    Mapped(MappedBytes),
    /// A copy.
    Owned(Vec<u8>),
}

impl std::ops::Deref for BlockSlice {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            BlockSlice::Block { block, start, end } => &block.data[*start..*end],
            BlockSlice::Mapped(m) => m,
            BlockSlice::Owned(v) => v,
        }
    }
}

/// A cursor over a block's entries.
#[derive(Debug)]
pub struct BlockIter<O: Comparator + Clone, B: BlockRef = Arc<Block>> {
    block: B,
    order: O,
    /// Offset of the current entry; `block.restarts` when not valid.
    current: usize,
    /// The restart region the current entry is in.
    restart_index: usize,
    /// Where the next restart region starts (`usize::MAX` after the last): kept beside
    /// `restart_index` so a forward step does not decode the restart array.
    next_restart: usize,
    key: KeyBuf,
    /// The current value as `data[value.0..value.1]`; `value.1` is where the next entry
    /// starts.
    value: (usize, usize),
    /// What a backward step left for the next ones.
    behind: Behind,
    err: Option<Error>,
}

impl<O: Comparator + Clone, B: BlockRef> BlockIter<O, B> {
    /// The current value as a view that keeps its bytes alive (empty when not valid).
    pub fn value_slice(&self) -> BlockSlice {
        let (start, end) = if self.valid() { self.value } else { (0, 0) };
        self.block.pin(start, end)
    }

    /// The number of the restart point the current entry starts at; `None` when it
    /// starts at none (or the cursor is not valid). In a block written with one entry per
    /// restart point (every index block LevelDB or Strata writes) it is the entry's
    /// number. Reads the restart array only where the cursor just was.
    pub fn restart_number(&self) -> Option<usize> {
        if !self.valid() {
            return None;
        }
        // `restart_index` is the region the entry is in, or the one before when the entry
        // starts exactly at the next restart point (`parse_next_key` moves it on only
        // past a restart point, as LevelDB's cursor does).
        let i = self.restart_index;
        (i..self.block.num_restarts.min(i + 2))
            .find(|&r| self.block.restart_point(r) == self.current)
    }

    fn corrupt(&mut self, what: &str) {
        if self.err.is_none() {
            self.err = Some(Error::corruption(
                "",
                self.current as u64,
                format!("bad block entry: {what}"),
            ));
        }
        self.invalidate();
    }

    fn invalidate(&mut self) {
        self.current = self.block.restarts;
        self.restart_index = self.block.num_restarts;
        self.next_restart = usize::MAX;
        self.key.clear();
        self.value = (self.current, self.current);
        self.behind.clear();
    }

    fn next_entry_offset(&self) -> usize {
        self.value.1
    }

    fn seek_to_restart_point(&mut self, index: usize) {
        self.behind.clear();
        self.key.clear();
        self.set_restart_index(index);
        let offset = self.block.restart_point(index);
        self.value = (offset, offset);
    }

    fn set_restart_index(&mut self, index: usize) {
        self.restart_index = index;
        self.next_restart = if index + 1 < self.block.num_restarts {
            self.block.restart_point(index + 1)
        } else {
            usize::MAX
        };
    }

    /// Decodes the entry after the current one; false at the end or on damage.
    fn parse_next_key(&mut self) -> bool {
        self.current = self.next_entry_offset();
        if self.current >= self.block.restarts {
            self.invalidate();
            return false;
        }
        let Some(e) = self.block.entry_at(self.current) else {
            self.corrupt("truncated or overlong entry");
            return false;
        };
        if e.shared > self.key.len() {
            self.corrupt("shared prefix longer than the previous key");
            return false;
        }
        self.key
            .rebuild(e.shared, &self.block.data[e.delta..e.delta + e.non_shared]);
        let value_start = e.delta + e.non_shared;
        self.value = (value_start, value_start + e.value_len);
        while self.next_restart < self.current {
            self.set_restart_index(self.restart_index + 1);
        }
        true
    }
}

impl<O: Comparator + Clone, B: BlockRef> Cursor for BlockIter<O, B> {
    fn valid(&self) -> bool {
        self.current < self.block.restarts
    }

    fn seek_to_first(&mut self) {
        if self.err.is_some() || self.block.num_restarts == 0 {
            return self.invalidate();
        }
        self.seek_to_restart_point(0);
        self.parse_next_key();
    }

    fn seek_to_last(&mut self) {
        if self.err.is_some() || self.block.num_restarts == 0 {
            return self.invalidate();
        }
        self.seek_to_restart_point(self.block.num_restarts - 1);
        while self.parse_next_key() && self.next_entry_offset() < self.block.restarts {}
    }

    fn seek(&mut self, target: &[u8]) {
        if self.err.is_some() || self.block.num_restarts == 0 {
            return self.invalidate();
        }
        // Binary search for the last restart point whose key is before the target, on the
        // fences where they decide (T5).
        debug_assert!(
            self.block.fences.is_empty() || self.order.name() == INTERNAL_KEY_COMPARATOR,
            "a block with fences is sought in internal-key order only (T5)"
        );
        let place = self.block.fences.place(target);
        let (mut left, mut right) = (0, self.block.num_restarts - 1);
        match place {
            Place::Before => right = 0,
            // Above every key with the prefix: the last restart, or the last but one when
            // the last key lies outside the prefix (then its entry decides).
            Place::After => left = self.block.fences.prefixed() - 1,
            Place::Word(_) | Place::Unknown => {}
        }
        while left < right {
            let mid = (left + right).div_ceil(2);
            let by_fence = match place {
                Place::Word(t) => match self.block.fences.word(mid).cmp(&t) {
                    Ordering::Less => Some(true),
                    Ordering::Greater => Some(false),
                    Ordering::Equal => None,
                },
                _ => None,
            };
            let before = match by_fence {
                Some(before) => before,
                None => {
                    let Some(mid_key) = self.block.restart_key(mid) else {
                        self.current = self.block.restart_point(mid);
                        return self.corrupt("restart point entry is damaged");
                    };
                    self.order.compare(mid_key, target) == Ordering::Less
                }
            };
            if before {
                left = mid;
            } else {
                right = mid - 1;
            }
        }
        self.seek_to_restart_point(left);
        if self.block.kept {
            self.block.touch_region(left);
        }
        while self.parse_next_key() {
            if self.order.compare(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }

    fn next(&mut self) {
        if self.valid() {
            self.behind.clear();
            self.parse_next_key();
        }
    }

    fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        // The entry before this one was decoded by an earlier step back: no scan.
        if let Some((offset, key_end, value)) = self.behind.entries.pop() {
            let key_start = self.behind.entries.last().map_or(0, |e| e.1);
            self.key.set(&self.behind.keys[key_start..key_end]);
            self.behind.keys.truncate(key_start);
            self.current = offset;
            self.value = value;
            return; // same restart region: `restart_index` stands
        }
        // Back up to a restart point before the current entry, then scan forward to the
        // entry just before it, keeping the entries passed for the next steps back.
        let original = self.current;
        while self.block.restart_point(self.restart_index) >= original {
            if self.restart_index == 0 {
                return self.invalidate();
            }
            self.restart_index -= 1;
        }
        self.seek_to_restart_point(self.restart_index);
        while self.parse_next_key() && self.next_entry_offset() < original {
            self.behind.keys.extend_from_slice(&self.key);
            self.behind
                .entries
                .push((self.current, self.behind.keys.len(), self.value));
        }
    }

    fn key(&self) -> &[u8] {
        if self.valid() { &self.key } else { &[] }
    }

    fn value(&self) -> &[u8] {
        if self.valid() {
            &self.block.data[self.value.0..self.value.1]
        } else {
            &[]
        }
    }

    fn status(&self) -> Result<()> {
        crate::iter::status_of(&self.err)
    }

    /// The next entry's header decoded where it lies: none past the block's last entry,
    /// or when the key bytes it stores are fewer than 8 and short of the whole key.
    fn next_hint(&self) -> Option<crate::iter::Hint<'_>> {
        if !self.valid() {
            return None;
        }
        let e = self.block.entry_at(self.next_entry_offset())?;
        if e.non_shared < 8 && e.shared > 0 {
            return None;
        }
        let data = &self.block.data;
        Some(crate::iter::Hint {
            key_tail: data.get(e.delta..e.delta + e.non_shared)?,
            value: data.get(e.delta + e.non_shared..e.delta + e.non_shared + e.value_len)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparator::BytewiseComparator;
    use crate::sstable::BlockBuilder;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn build(entries: &[(Vec<u8>, Vec<u8>)], interval: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(interval);
        for (k, v) in entries {
            b.add(k, v);
        }
        Arc::new(Block::new(b.finish().to_vec()).unwrap())
    }

    fn entries(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        (0..n)
            .map(|i| {
                (
                    format!("key{:05}", i * 2).into_bytes(),
                    format!("v{i}").into_bytes(),
                )
            })
            .collect()
    }

    fn collect_forward(it: &mut BlockIter<BytewiseComparator>) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        out
    }

    #[test]
    fn a_borrowed_cursor_seeks_and_pins_as_a_shared_one() {
        let e = entries(100);
        let block = build(&e, 16);
        let mut shared = block.iter(BytewiseComparator);
        let mut borrowed = block.iter_borrowed(BytewiseComparator);
        for (k, v) in &e {
            shared.seek(k);
            borrowed.seek(k);
            assert_eq!(borrowed.key(), shared.key());
            // A borrowed block of its own hands out a copy; a shared one a view.
            let (copy, view) = (borrowed.value_slice(), shared.value_slice());
            assert!(matches!(copy, BlockSlice::Owned(_)));
            assert!(matches!(view, BlockSlice::Block { .. }));
            assert_eq!((&copy[..], &view[..]), (&v[..], &v[..]));
        }
        borrowed.seek(b"zzz");
        assert!(!borrowed.valid());
        assert!(borrowed.value_slice().is_empty());
    }

    #[test]
    fn restart_number_is_the_entry_number_with_one_entry_per_restart() {
        let e = entries(50);
        let dense = build(&e, 1);
        let mut it = dense.iter(BytewiseComparator);
        for (i, (k, _)) in e.iter().enumerate() {
            it.seek(k);
            assert_eq!(it.restart_number(), Some(i), "seek to entry {i}");
            // Between keys: the seek lands on the next entry.
            let mut between = k.clone();
            between.push(0);
            it.seek(&between);
            assert_eq!(it.restart_number(), (i + 1 < e.len()).then_some(i + 1));
        }
        it.seek_to_first();
        for i in 0..e.len() {
            assert_eq!(it.restart_number(), Some(i), "step to entry {i}");
            it.next();
        }
        assert_eq!(it.restart_number(), None, "not valid");
        // Three entries a restart: only entries at a restart point have a number.
        let sparse = build(&e, 3);
        let mut it = sparse.iter(BytewiseComparator);
        for (i, (k, _)) in e.iter().enumerate() {
            it.seek(k);
            let want = (i % 3 == 0).then_some(i / 3);
            assert_eq!(it.restart_number(), want, "entry {i}");
        }
    }

    #[test]
    fn golden_layout() {
        let mut b = BlockBuilder::new(2);
        b.add(b"apple", b"1");
        b.add(b"apply", b"2");
        b.add(b"banana", b"3");
        let bytes = b.finish().to_vec();
        let expected: &[u8] = b"\x00\x05\x01apple1\x04\x01\x01y2\x00\x06\x01banana3\
            \x00\x00\x00\x00\x0e\x00\x00\x00\x02\x00\x00\x00";
        assert_eq!(bytes, expected);
    }

    #[test]
    fn empty_block() {
        let block = build(&[], 16);
        let mut it = block.iter(BytewiseComparator);
        it.seek_to_first();
        assert!(!it.valid());
        it.seek_to_last();
        assert!(!it.valid());
        it.seek(b"x");
        assert!(!it.valid());
        assert!(it.status().is_ok());
    }

    #[test]
    fn forward_backward_and_seek() {
        for interval in [1, 2, 16] {
            let es = entries(100);
            let block = build(&es, interval);
            let mut it = block.iter(BytewiseComparator);
            assert_eq!(collect_forward(&mut it), es);
            let mut back = Vec::new();
            it.seek_to_last();
            while it.valid() {
                back.push((it.key().to_vec(), it.value().to_vec()));
                it.prev();
            }
            back.reverse();
            assert_eq!(back, es);
            for (i, (k, _)) in es.iter().enumerate() {
                it.seek(k);
                assert_eq!(it.key(), &k[..]);
                // Between keys: lands on the next one.
                let mut between = k.clone();
                between.push(0);
                it.seek(&between);
                match es.get(i + 1) {
                    Some((next, _)) => assert_eq!(it.key(), &next[..]),
                    None => assert!(!it.valid()),
                }
            }
            it.seek(b"");
            assert_eq!(it.key(), &es[0].0[..]);
            it.seek(b"zzz");
            assert!(!it.valid());
            assert!(it.status().is_ok());
        }
    }

    #[test]
    fn rejects_bad_restart_arrays() {
        assert!(Block::new(vec![]).is_err());
        assert!(Block::new(vec![1, 0, 0]).is_err());
        assert!(Block::new(vec![0xff, 0xff, 0xff, 0x7f]).is_err());
        let mut bytes = {
            let mut b = BlockBuilder::new(1);
            b.add(b"a", b"1");
            b.add(b"b", b"2");
            b.finish().to_vec()
        };
        let n = bytes.len();
        bytes[n - 8] = 200; // second restart beyond the entries
        assert!(Block::new(bytes).is_err());
    }

    #[test]
    fn damaged_entry_is_an_error_not_the_end() {
        let es = entries(10);
        let mut bytes = {
            let mut b = BlockBuilder::new(16);
            for (k, v) in &es {
                b.add(k, v);
            }
            b.finish().to_vec()
        };
        // Second entry: claim a shared prefix longer than the previous key.
        let second = 3 + es[0].0.len() + es[0].1.len();
        bytes[second] = 60;
        let block = Arc::new(Block::new(bytes).unwrap());
        let mut it = block.iter(BytewiseComparator);
        let got = collect_forward(&mut it);
        assert_eq!(got.len(), 1);
        assert!(it.status().unwrap_err().is_corruption());
    }

    /// Internal keys over user keys `prefix + tail`, tails drawn from bytes that make
    /// the fences' edge cases common: zero bytes (the padding), 0xff, keys that are
    /// prefixes of others, long shared prefixes.
    fn internal_entries(prefix: &[u8], tails: &BTreeSet<Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut es = Vec::new();
        for (i, t) in tails.iter().enumerate() {
            let user = [prefix, t].concat();
            // Two versions of some keys: equal user keys, tags descending.
            for seq in if i % 3 == 0 { vec![9, 4] } else { vec![5] } {
                let k = crate::key::make_internal_key(&user, seq, crate::key::ValueType::Value);
                es.push((k, vec![i as u8]));
            }
        }
        es
    }

    fn byte() -> impl Strategy<Value = u8> {
        prop_oneof![Just(0u8), Just(1u8), Just(b'a'), Just(0xffu8)]
    }

    proptest! {
        /// T5: seeks on a block with fences land where seeks on the same bytes without
        /// fences do, for every target (stored keys, their neighbours, other prefixes).
        #[test]
        fn fences_change_no_seek(
            prefix in proptest::collection::vec(byte(), 0..20),
            tails in proptest::collection::btree_set(proptest::collection::vec(byte(), 0..12), 1..80),
            interval in 1usize..6,
            probes in proptest::collection::vec((proptest::collection::vec(byte(), 0..34), 0u64..12), 0..40),
            successor in any::<bool>(),
        ) {
            let mut es = internal_entries(&prefix, &tails);
            if successor {
                // Ends as a table's index does: the short successor of the last user key,
                // mostly outside the prefix the others share.
                let last = user_key(&es[es.len() - 1].0).to_vec();
                let mut next = last.clone();
                crate::comparator::short_successor(&mut next);
                if next > last {
                    let k = crate::key::make_internal_key(&next, 3, crate::key::ValueType::Value);
                    es.push((k, b"end".to_vec()));
                }
            }
            let mut b = BlockBuilder::new(interval);
            for (k, v) in &es {
                b.add(k, v);
            }
            let bytes = b.finish().to_vec();
            let index_bytes = bytes.clone();
            let plain = Arc::new(Block::new(bytes.clone()).unwrap());
            let fenced = Arc::new(Block::kept(bytes.clone(), true).unwrap());
            prop_assert_eq!(fenced.fences.is_empty(), plain.num_restarts < 2);
            // A block read for one use has neither fences nor touches; a kept one
            // without fences (another order) touches only.
            let kept = Block::kept(bytes, false).unwrap();
            prop_assert!(!plain.kept && plain.fences.is_empty());
            prop_assert!(fenced.kept && kept.kept && kept.fences.is_empty());
            let order = crate::comparator::InternalBytewise;
            let mut targets: Vec<Vec<u8>> = es.iter().map(|(k, _)| k.clone()).collect();
            for (user, seq) in probes {
                targets.push(crate::key::make_internal_key(&user, seq, crate::key::ValueType::Value));
                let with_prefix = [&prefix[..], &user].concat();
                targets.push(crate::key::make_internal_key(&with_prefix, seq, crate::key::ValueType::Value));
                targets.push(user); // not an internal key when shorter than a tag
            }
            let (mut a, mut f) = (plain.iter(order), fenced.iter(order));
            // T6: an index-like block with each value's summary beside its fence.
            let summary = |v: &[u8]| Some(v.iter().fold(v.len() as u64, |h, &x| h * 131 + u64::from(x)));
            let indexed = Block::kept_index(index_bytes, true, summary).unwrap();
            for t in &targets {
                match indexed.find(t) {
                    Found::Entry { number, aux } => {
                        prop_assert_eq!(interval, 1);
                        a.seek(t);
                        prop_assert!(a.valid());
                        prop_assert_eq!(a.restart_number(), Some(number));
                        prop_assert_eq!(Some(aux), summary(a.value()));
                    }
                    Found::End => {
                        prop_assert_eq!(interval, 1);
                        a.seek(t);
                        prop_assert!(!a.valid());
                    }
                    Found::Undecided => {}
                }
            }
            for t in &targets {
                a.seek(t);
                f.seek(t);
                prop_assert_eq!(a.valid(), f.valid());
                prop_assert_eq!(a.key(), f.key());
                prop_assert_eq!(a.value(), f.value());
                prop_assert_eq!(a.restart_number(), f.restart_number());
                let expected = es.iter().find(|(k, _)| order.compare(k, t) != Ordering::Less);
                prop_assert_eq!(f.key(), expected.map_or(&[][..], |(k, _)| &k[..]));
            }
        }
    }

    /// A table's index ends with the short successor of its last key (`"1"` after keys
    /// `"0000..."`): the other keys keep their long shared prefix, so the fences decide.
    #[test]
    fn an_index_ending_in_a_short_successor_keeps_its_prefix() {
        let user = |i: u32| format!("{:016}", 1000 + 37 * i).into_bytes();
        let ikey = |u: &[u8]| crate::key::make_internal_key(u, 7, crate::key::ValueType::Value);
        let mut es: Vec<(Vec<u8>, Vec<u8>)> = (0..500).map(|i| (ikey(&user(i)), vec![1])).collect();
        es.push((ikey(b"1"), vec![2]));
        let mut b = BlockBuilder::new(1);
        for (k, v) in &es {
            b.add(k, v);
        }
        let block = Arc::new(Block::kept(b.finish().to_vec(), true).unwrap());
        assert_eq!(
            block.fences.skip(),
            11,
            "the prefix of the keys before the successor"
        );
        assert_eq!(block.fences.prefixed(), 500);
        assert_eq!(block.fences.word(500), u64::MAX);
        let order = crate::comparator::InternalBytewise;
        let mut it = block.iter(order);
        for (i, (k, _)) in es.iter().enumerate() {
            it.seek(k);
            assert_eq!(it.restart_number(), Some(i));
        }
        // Past every key with the prefix, below the successor; and past the successor.
        it.seek(&ikey(b"0000000000999999"));
        assert_eq!(it.restart_number(), Some(500));
        it.seek(&ikey(b"2"));
        assert!(!it.valid());
        // A target below the prefix lands on the first key.
        it.seek(&ikey(b"0"));
        assert_eq!(it.restart_number(), Some(0));

        // T6: the same index with each value summarized beside its fence finds the entry
        // after a key between two stored ones from the fences alone.
        let mut b = BlockBuilder::new(1);
        for (i, (k, _)) in es.iter().enumerate() {
            b.add(k, &(i as u32).to_le_bytes());
        }
        let aux = |v: &[u8]| Some(u64::from(u32::from_le_bytes(v.try_into().ok()?)) + 1);
        let index = Block::kept_index(b.finish().to_vec(), true, aux).unwrap();
        let between = |i: u32| ikey(format!("{:016}", 1000 + 37 * i + 1).as_bytes());
        for i in 0..499 {
            assert_eq!(
                index.find(&between(i)),
                Found::Entry {
                    number: i as usize + 1,
                    aux: u64::from(i) + 2
                }
            );
        }
        assert_eq!(index.find(&ikey(b"0")), Found::Entry { number: 0, aux: 1 });
        assert_eq!(
            index.find(&between(499)),
            Found::Entry {
                number: 500,
                aux: 501
            },
            "past the prefixed keys, below the successor whose fence is the largest"
        );
        assert_eq!(
            index.find(&es[7].0),
            Found::Undecided,
            "a tie reads the entry"
        );
        assert_eq!(
            index.find(&ikey(b"2")),
            Found::Undecided,
            "the successor decides"
        );
        // A value the summary refuses: no summaries at all.
        let refused = Block::kept_index(index.contents().to_vec(), true, |v| {
            (v != 7u32.to_le_bytes()).then_some(1)
        })
        .unwrap();
        assert_eq!(refused.find(&between(3)), Found::Undecided);
        assert_eq!(
            refused.size(),
            block.size() - block.contents().len() + refused.contents().len()
        );
    }

    proptest! {
        #[test]
        fn matches_a_sorted_map(keys in proptest::collection::btree_set(proptest::collection::vec(any::<u8>(), 0..12), 0..200), interval in 1usize..20, probes in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 0..20)) {
            let es: Vec<(Vec<u8>, Vec<u8>)> = keys.iter().map(|k| (k.clone(), k.iter().rev().copied().collect())).collect();
            let block = build(&es, interval);
            let mut it = block.iter(BytewiseComparator);
            prop_assert_eq!(collect_forward(&mut it), es.clone());
            for p in probes {
                it.seek(&p);
                let expected = keys.range(p.clone()..).next();
                prop_assert_eq!(it.valid(), expected.is_some());
                if let Some(k) = expected {
                    prop_assert_eq!(it.key(), &k[..]);
                    it.prev();
                    let before = keys.range(..p.clone()).next_back();
                    prop_assert_eq!(it.valid(), before.is_some());
                    if let Some(b) = before { prop_assert_eq!(it.key(), &b[..]); }
                }
            }
        }
    }
}
