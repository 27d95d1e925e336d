//! [`MemTable`]: recent writes, sorted by internal key, in memory.
//!
//! An arena skip list ([`skiplist`]): each entry (internal key and value) is one arena
//! allocation beside its skip-list node. The write-group leader inserts while any number of
//! readers look up and iterate with no lock. Entries are never removed; a full memtable is
//! frozen (becomes immutable), flushed to a level-0 table and dropped, all its memory at
//! once, when the last reader lets go of it.
//!
//! Invariants:
//! - M1 one writer at a time (the database's write path guarantees it; the skip list also
//!   serializes inserts itself, S2); readers any time.
//! - M2 each (user key, seqnum) is inserted at most once, so internal keys are unique.
//! - M3 `approximate_memory_usage` only grows; it counts the bytes of every entry's node
//!   (key, value, tower, alignment), so a write buffer of N bytes holds about N bytes of
//!   memory (plus at most one 32 KiB arena block). A new memtable counts only its head
//!   node, far below the smallest write buffer: a fresh memtable is never "full".

mod skiplist;

use std::sync::Arc;

use crate::batch::{BatchOp, WriteBatch};
use crate::error::Result;
use crate::iter::Cursor;
use crate::key::{SeqNum, ValueType, pack_tag};
use skiplist::SkipList;

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
    list: Arc<SkipList>,
}

impl MemTable {
    /// An empty memtable.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an entry. Requires: M1, M2.
    pub fn add(&self, seqnum: SeqNum, ty: ValueType, user_key: &[u8], value: &[u8]) {
        self.list.insert(user_key, pack_tag(seqnum, ty), value);
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
        let (tag, value) = self
            .list
            .get(user_key, pack_tag(seqnum, ValueType::Value))?;
        Some(if tag & 0xff == ValueType::Value as u64 {
            Lookup::Value(value.to_vec())
        } else {
            Lookup::Deleted
        })
    }

    /// Bytes of memory the memtable's entries take (M3).
    pub fn approximate_memory_usage(&self) -> usize {
        self.list.memory_usage()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// A cursor over the entries (internal keys), keeping the memtable alive.
    pub fn iter(&self) -> MemTableIter {
        MemTableIter(skiplist::Cursor::new(Arc::clone(&self.list)))
    }
}

/// A cursor over a memtable. Sees entries added after it was created too (the database
/// hides them with seqnums).
#[derive(Debug)]
pub struct MemTableIter(skiplist::Cursor);

impl Cursor for MemTableIter {
    fn valid(&self) -> bool {
        self.0.valid()
    }

    fn seek_to_first(&mut self) {
        self.0.seek_to_first();
    }

    fn seek_to_last(&mut self) {
        self.0.seek_to_last();
    }

    fn seek(&mut self, target: &[u8]) {
        self.0.seek(target);
    }

    fn next(&mut self) {
        self.0.next();
    }

    fn prev(&mut self) {
        self.0.prev();
    }

    fn key(&self) -> &[u8] {
        self.0.key()
    }

    fn value(&self) -> &[u8] {
        self.0.value()
    }

    fn status(&self) -> Result<()> {
        Ok(())
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{self, make_internal_key};

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
