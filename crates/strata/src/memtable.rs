//! [`MemTable`]: recent writes, sorted by internal key, in memory.
//!
//! A lock-free skip list (`crossbeam-skiplist`): the write-group leader inserts while any
//! number of readers look up and iterate, with no lock on either side. Entries are never
//! removed; a full memtable is frozen (becomes immutable), flushed to a level-0 table and
//! dropped when the last reader lets go of it.
//!
//! Invariants:
//! - M1 one writer at a time (the database's write path guarantees it); readers any time.
//! - M2 each (user key, seqnum) is inserted at most once, so internal keys are unique.
//! - M3 `approximate_memory_usage` only grows.

use std::cmp::Ordering as CmpOrdering;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam_skiplist::SkipMap;
use crossbeam_skiplist::map::Entry;

use crate::batch::{BatchOp, WriteBatch};
use crate::error::Result;
use crate::iter::Cursor;
use crate::key::{self, SeqNum, ValueType, compare_internal_keys, make_internal_key};

/// An internal key owned by the memtable, ordered by K2.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MemKey(Box<[u8]>);

impl Ord for MemKey {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        compare_internal_keys(&self.0, &other.0)
    }
}

impl PartialOrd for MemKey {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

/// What a memtable knows about a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The newest visible version is this value.
    Value(Vec<u8>),
    /// The newest visible version is a deletion.
    Deleted,
}

/// A sorted in-memory table of internal keys and values.
#[derive(Debug, Default)]
pub struct MemTable {
    map: SkipMap<MemKey, Vec<u8>>,
    usage: AtomicUsize,
}

/// Bytes charged per entry beyond its key and value: skip-list node and pointers.
const ENTRY_OVERHEAD: usize = 64;

impl MemTable {
    /// An empty memtable.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an entry. Requires: M1, M2.
    pub fn add(&self, seqnum: SeqNum, ty: ValueType, user_key: &[u8], value: &[u8]) {
        let ikey = make_internal_key(user_key, seqnum, ty);
        self.usage
            .fetch_add(ikey.len() + value.len() + ENTRY_OVERHEAD, Ordering::Relaxed);
        self.map
            .insert(MemKey(ikey.into_boxed_slice()), value.to_vec());
    }

    /// Adds every operation of `batch`, the first at the batch's seqnum. Stops at the
    /// first malformed record (batches from disk are checked before they get here).
    pub fn insert_batch(&self, batch: &WriteBatch) -> Result<()> {
        for (seqnum, op) in (batch.seqnum()..).zip(batch.iter()) {
            match op? {
                BatchOp::Put(k, v) => self.add(seqnum, ValueType::Value, k, v),
                BatchOp::Delete(k) => self.add(seqnum, ValueType::Deletion, k, &[]),
            }
        }
        Ok(())
    }

    /// The newest version of `user_key` with a seqnum at most `seqnum`, if any.
    pub fn get(&self, user_key: &[u8], seqnum: SeqNum) -> Option<Lookup> {
        let target =
            MemKey(make_internal_key(user_key, seqnum, ValueType::Value).into_boxed_slice());
        let entry = self.map.lower_bound(Bound::Included(&target))?;
        let parsed = key::ParsedInternalKey::parse(&entry.key().0)?;
        if parsed.user_key != user_key {
            return None;
        }
        Some(match parsed.ty {
            ValueType::Value => Lookup::Value(entry.value().clone()),
            ValueType::Deletion => Lookup::Deleted,
        })
    }

    /// Bytes used, approximately (keys, values and per-entry overhead).
    pub fn approximate_memory_usage(&self) -> usize {
        self.usage.load(Ordering::Relaxed)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// A cursor over the entries (internal keys), keeping the memtable alive.
    pub fn iter(self: &Arc<Self>) -> MemTableIter {
        MemTableIter(Position::new(Arc::clone(self), |_| None))
    }
}

type At<'a> = Option<Entry<'a, MemKey, Vec<u8>>>;

self_cell::self_cell!(
    /// The memtable and a position in it, borrowed from it.
    struct Position {
        owner: Arc<MemTable>,
        #[covariant]
        dependent: At,
    }
);

/// A cursor over a memtable. Sees entries added after it was created too (the database
/// hides them with seqnums).
pub struct MemTableIter(Position);

impl std::fmt::Debug for MemTableIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTableIter")
            .field("valid", &self.valid())
            .finish()
    }
}

impl Cursor for MemTableIter {
    fn valid(&self) -> bool {
        self.0.borrow_dependent().is_some()
    }

    fn seek_to_first(&mut self) {
        self.0.with_dependent_mut(|mem, at| *at = mem.map.front());
    }

    fn seek_to_last(&mut self) {
        self.0.with_dependent_mut(|mem, at| *at = mem.map.back());
    }

    fn seek(&mut self, target: &[u8]) {
        let target = MemKey(target.into());
        self.0
            .with_dependent_mut(|mem, at| *at = mem.map.lower_bound(Bound::Included(&target)));
    }

    fn next(&mut self) {
        self.0
            .with_dependent_mut(|_, at| *at = at.as_ref().and_then(Entry::next));
    }

    fn prev(&mut self) {
        self.0
            .with_dependent_mut(|_, at| *at = at.as_ref().and_then(Entry::prev));
    }

    fn key(&self) -> &[u8] {
        self.0
            .borrow_dependent()
            .as_ref()
            .map_or(&[], |e| &e.key().0)
    }

    fn value(&self) -> &[u8] {
        self.0
            .borrow_dependent()
            .as_ref()
            .map_or(&[], |e| e.value())
    }

    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_sees_newest_visible_version() {
        let m = MemTable::new();
        m.add(1, ValueType::Value, b"a", b"a1");
        m.add(2, ValueType::Value, b"b", b"b2");
        m.add(3, ValueType::Deletion, b"a", b"");
        m.add(4, ValueType::Value, b"a", b"a4");
        assert_eq!(m.get(b"a", 4), Some(Lookup::Value(b"a4".to_vec())));
        assert_eq!(m.get(b"a", 3), Some(Lookup::Deleted));
        assert_eq!(m.get(b"a", 2), Some(Lookup::Value(b"a1".to_vec())));
        assert_eq!(m.get(b"a", 0), None);
        assert_eq!(m.get(b"c", 10), None);
        assert_eq!(m.get(b"", 10), None);
        assert!(m.approximate_memory_usage() > 0);
    }

    #[test]
    fn cursor_walks_both_ways() {
        let m = Arc::new(MemTable::new());
        for (i, k) in [b"c", b"a", b"b"].iter().enumerate() {
            m.add(i as u64 + 1, ValueType::Value, *k, *k);
        }
        let mut it = m.iter();
        assert!(!it.valid());
        it.seek_to_first();
        let mut keys = Vec::new();
        while it.valid() {
            keys.push(key::user_key(it.key()).to_vec());
            it.next();
        }
        assert_eq!(keys, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        it.seek_to_last();
        assert_eq!(it.value(), b"c");
        it.prev();
        assert_eq!(it.value(), b"b");
        it.seek(&make_internal_key(b"bb", 100, ValueType::Value));
        assert_eq!(it.value(), b"c");
        // The iterator keeps the memtable alive.
        drop(m);
        it.prev();
        assert_eq!(it.value(), b"b");
    }
}
