//! [`MemTable`]: recent writes, sorted by internal key, in memory.
//!
//! Made of runs: arena skip lists (`skiplist`), each entry (internal key and value) one
//! arena allocation beside its node. The write-group leader inserts into the newest run
//! while any number of readers look up and iterate with no lock. A write buffer larger than
//! [`MIN_RUN_BYTES`] is cut into up to [`MAX_RUNS`] runs: when the newest run reaches its
//! share, it is frozen and a new one takes the inserts. A skip list's insert misses the CPU
//! caches more the larger it grows (measured here: about 0.5 us per random insert into a
//! 4 MiB list, 1.8 us at 32 MiB, 2.3 us at 120 MiB), so a large write buffer made of
//! cache-sized runs takes writes as fast as a small one. A lookup tries the runs newest
//! first; every run of a cut memtable keeps a Bloom filter of its user keys (`run_filter`),
//! so a key absent from a run costs a probe, not a search. Iterators and flushes merge the runs.
//! Entries are never removed; a full memtable is frozen (becomes immutable), flushed to a
//! level-0 table and dropped, all its memory at once, when the last reader lets go of it.
//!
//! Invariants:
//! - M1 one writer at a time (the database's write path guarantees it; the skip list also
//!   serializes inserts itself, S2); readers any time.
//! - M2 each (user key, seqnum) is inserted at most once, so internal keys are unique.
//! - M3 `approximate_memory_usage` only grows; it counts the bytes of every entry's node
//!   (key, value, tower, alignment) and of the run filters, so a write buffer of N bytes
//!   holds about N bytes of memory (plus at most one 32 KiB arena block per run). A new
//!   memtable counts only its head node, far below the smallest write buffer: a fresh
//!   memtable is never "full".
//! - M4 runs are in seqnum order: every entry of a run has a higher seqnum than every entry
//!   of the runs before it (one writer, seqnums increasing), so the newest run holding a
//!   visible version of a key holds the newest visible version.

mod run_filter;
mod skiplist;

/// The skip list's publication orderings (S3), for the model that checks them.
#[cfg(feature = "internals")]
pub use skiplist::{OBSERVE, PUBLISH};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::batch::{BatchOp, WriteBatch};
use crate::comparator::InternalOrder;
use crate::error::Result;
use crate::iter::{BoxCursor, Cursor, MergingIter};
use crate::key::{SeqNum, ValueType, pack_tag};
use run_filter::{KeyHash, RunFilter};
use skiplist::SkipList;

/// The default smallest run (`Options::memtable_run_size`): a write buffer up to this size
/// is one run. 1 MiB: the default 4 MiB write buffer in four runs took random writes
/// 1.15x faster (fillrandom) and overwrites 1.09x than one 4 MiB list, while 256 KiB runs
/// were no faster than 1 MiB (`docs/results/2026-11-26-memtable-runs/`).
pub const MIN_RUN_BYTES: usize = 1 << 20;
/// Most runs a memtable is cut into.
pub const MAX_RUNS: usize = 16;

/// What a memtable knows about a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The newest visible version is this value.
    Value(Vec<u8>),
    /// The newest visible version is a deletion.
    Deleted,
    /// The newest visible version is a value in a blob file: this encoded ref.
    Blob(Vec<u8>),
}

/// One run: a skip list, and the Bloom filter of its user keys when the memtable has
/// several runs.
#[derive(Debug, Clone)]
struct Run {
    list: Arc<SkipList>,
    filter: Option<Arc<RunFilter>>,
}

impl Run {
    fn new(filter_bytes: Option<usize>, order: &InternalOrder) -> Self {
        Run {
            list: Arc::new(SkipList::with_order(order.clone())),
            filter: filter_bytes.map(|b| Arc::new(RunFilter::new(b))),
        }
    }

    fn memory_usage(&self) -> usize {
        self.list.memory_usage() + self.filter.as_ref().map_or(0, |f| f.memory_usage())
    }

    fn cursor(&self) -> RunCursor {
        RunCursor(skiplist::Cursor::new(Arc::clone(&self.list)))
    }
}

/// A sorted in-memory table of internal keys and values.
#[derive(Debug)]
pub struct MemTable {
    /// The runs, oldest first; the last takes inserts (M4). Replaced whole when a run is
    /// frozen, so a reader holds a fixed set.
    runs: Mutex<Arc<Vec<Run>>>,
    /// Bytes at which the newest run is frozen; `None`: one run.
    run_bytes: Option<usize>,
    order: InternalOrder,
    /// What [`MemTable::approximate_memory_usage`] and [`MemTable::len`] answer: stored
    /// by the one writer after each insert (M1), so the write path reads them without
    /// taking the runs' lock.
    usage: AtomicUsize,
    entries: AtomicUsize,
}

impl Default for MemTable {
    fn default() -> Self {
        Self::new()
    }
}

impl MemTable {
    /// An empty memtable of one run, bytewise.
    pub fn new() -> Self {
        Self::with_order(InternalOrder::default())
    }

    /// An empty memtable of one run, in `order`.
    pub fn with_order(order: InternalOrder) -> Self {
        Self::of_runs(vec![Run::new(None, &order)], None, order)
    }

    /// An empty memtable for a write buffer of `write_buffer_size` bytes: cut into runs of
    /// at least `min_run` bytes (and at most [`MAX_RUNS`] runs) when it is larger than
    /// that; `min_run == 0` keeps one run.
    pub fn for_write_buffer(
        write_buffer_size: usize,
        min_run: usize,
        order: InternalOrder,
    ) -> Self {
        let run = min_run.max(write_buffer_size.div_ceil(MAX_RUNS));
        if min_run == 0 || run >= write_buffer_size {
            return Self::with_order(order);
        }
        Self::of_runs(vec![Run::new(Some(run), &order)], Some(run), order)
    }

    fn of_runs(runs: Vec<Run>, run_bytes: Option<usize>, order: InternalOrder) -> Self {
        let usage = runs.iter().map(Run::memory_usage).sum();
        MemTable {
            runs: Mutex::new(Arc::new(runs)),
            run_bytes,
            order,
            usage: AtomicUsize::new(usage),
            entries: AtomicUsize::new(0),
        }
    }

    /// Records the size and length of `runs` (by the one writer, M1).
    fn count(&self, runs: &[Run]) {
        let usage = runs.iter().map(Run::memory_usage).sum();
        let entries = runs.iter().map(|r| r.list.len()).sum();
        self.usage.store(usage, Ordering::Relaxed);
        self.entries.store(entries, Ordering::Relaxed);
    }

    fn runs(&self) -> Arc<Vec<Run>> {
        Arc::clone(&self.runs.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Adds an entry. Requires: M1, M2.
    #[cfg(any(test, feature = "internals"))]
    pub fn add(&self, seqnum: SeqNum, ty: ValueType, user_key: &[u8], value: &[u8]) {
        let mut runs = self.runs();
        self.add_to(&mut runs, seqnum, ty, user_key, value);
        self.count(&runs);
    }

    /// Adds an entry to the newest run, first freezing it if it is full (and publishing the
    /// list with the new run).
    fn add_to(
        &self,
        runs: &mut Arc<Vec<Run>>,
        seqnum: SeqNum,
        ty: ValueType,
        user_key: &[u8],
        value: &[u8],
    ) {
        if let Some(limit) = self.run_bytes
            && runs
                .last()
                .is_some_and(|r| r.list.memory_usage() >= limit && !r.list.is_empty())
        {
            let mut next = Vec::clone(runs);
            next.push(Run::new(Some(limit), &self.order));
            *runs = Arc::new(next);
            // Readers find the new run from here on; only the writer (M1) swaps the list.
            *self.runs.lock().unwrap_or_else(|p| p.into_inner()) = Arc::clone(runs);
        }
        if let Some(run) = runs.last() {
            if let Some(f) = &run.filter {
                f.add(KeyHash::of(user_key));
            }
            run.list.insert(user_key, pack_tag(seqnum, ty), value);
        }
    }

    /// Adds every operation of `batch`, the first at the batch's seqnum. Stops at the
    /// first malformed record (batches from disk are checked before they get here).
    pub fn insert_batch(&self, batch: &WriteBatch) -> Result<()> {
        // The list of runs is the writer's own (M1): readers take its lock only to clone
        // it, and never wait for a batch's inserts.
        let mut runs = self.runs();
        let mut result = Ok(());
        for (seqnum, op) in (batch.seqnum()..).zip(batch.iter()) {
            match op {
                Ok(BatchOp::Put(k, v)) => self.add_to(&mut runs, seqnum, ValueType::Value, k, v),
                Ok(BatchOp::Delete(k)) => {
                    self.add_to(&mut runs, seqnum, ValueType::Deletion, k, &[])
                }
                Ok(BatchOp::BlobRef(k, r)) => {
                    self.add_to(&mut runs, seqnum, ValueType::BlobRef, k, r)
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.count(&runs);
        result
    }

    /// The newest version of `user_key` with a seqnum at most `seqnum`, if any.
    pub fn get(&self, user_key: &[u8], seqnum: SeqNum) -> Option<Lookup> {
        let runs = self.runs();
        let tag = pack_tag(seqnum, ValueType::FOR_SEEK);
        let hash = (runs.len() > 1).then(|| KeyHash::of(user_key));
        // M4: newest run first; the first that holds a visible version answers. Every
        // run of a cut memtable has a filter, the newest too (its bits are set before
        // each insert, and a reader learns of a version only after its insert finished):
        // a key it rules out costs one cache line instead of a search of the run.
        for run in runs.iter().rev() {
            if let (Some(f), Some(h)) = (&run.filter, hash)
                && !f.may_contain(h)
            {
                continue;
            }
            if let Some((tag, value)) = run.list.get(user_key, tag) {
                return Some(match ValueType::from_byte(tag as u8) {
                    Some(ValueType::Value) => Lookup::Value(value.to_vec()),
                    Some(ValueType::BlobRef) => Lookup::Blob(value.to_vec()),
                    _ => Lookup::Deleted,
                });
            }
        }
        None
    }

    /// Bytes of memory the memtable's entries and run filters take (M3).
    pub fn approximate_memory_usage(&self) -> usize {
        self.usage.load(Ordering::Relaxed)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.load(Ordering::Relaxed)
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of runs (one unless the write buffer is larger than [`MIN_RUN_BYTES`]).
    #[cfg(any(test, feature = "internals"))]
    pub fn runs_count(&self) -> usize {
        self.runs().len()
    }

    /// A cursor over the entries (internal keys), keeping the memtable's runs alive.
    pub fn iter(&self) -> MemTableIter {
        let runs = self.runs();
        if let [run] = runs.as_slice() {
            return MemTableIter(Inner::One(run.cursor()));
        }
        let children: Vec<BoxCursor> = runs
            .iter()
            .map(|r| Box::new(r.cursor()) as BoxCursor)
            .collect();
        MemTableIter(Inner::Many(MergingIter::new(children, self.order.clone())))
    }
}

/// A cursor over one run.
#[derive(Debug)]
struct RunCursor(skiplist::Cursor);

impl Cursor for RunCursor {
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

#[derive(Debug)]
enum Inner {
    One(RunCursor),
    Many(MergingIter),
}

/// A cursor over a memtable. Sees entries added after it was created too, in the runs it
/// was created with (the database hides them with seqnums).
#[derive(Debug)]
pub struct MemTableIter(Inner);

impl MemTableIter {
    fn cursor(&self) -> &dyn Cursor {
        match &self.0 {
            Inner::One(c) => c,
            Inner::Many(m) => m,
        }
    }

    fn cursor_mut(&mut self) -> &mut dyn Cursor {
        match &mut self.0 {
            Inner::One(c) => c,
            Inner::Many(m) => m,
        }
    }
}

impl Cursor for MemTableIter {
    fn valid(&self) -> bool {
        self.cursor().valid()
    }

    fn seek_to_first(&mut self) {
        self.cursor_mut().seek_to_first();
    }

    fn seek_to_last(&mut self) {
        self.cursor_mut().seek_to_last();
    }

    fn seek(&mut self, target: &[u8]) {
        self.cursor_mut().seek(target);
    }

    fn next(&mut self) {
        self.cursor_mut().next();
    }

    fn prev(&mut self) {
        self.cursor_mut().prev();
    }

    fn key(&self) -> &[u8] {
        self.cursor().key()
    }

    fn value(&self) -> &[u8] {
        self.cursor().value()
    }

    fn status(&self) -> Result<()> {
        self.cursor().status()
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

    /// Entries of every size, some keys written many times and deleted, into a memtable
    /// of many small runs: lookups at every seqnum and both directions of iteration match
    /// a sorted model of the internal keys.
    #[test]
    fn runs_answer_as_one_sorted_table() {
        use std::collections::BTreeMap;
        let m = MemTable::for_write_buffer(64 << 10, 2 << 10, InternalOrder::default());
        assert_eq!(m.runs_count(), 1);
        // Model: (user key, seqnum) -> Some(value) or None (a deletion).
        let mut model: BTreeMap<(Vec<u8>, u64), Option<Vec<u8>>> = BTreeMap::new();
        let mut x = 7u64;
        for seq in 1..=3000u64 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let k = format!("k{:03}", (x >> 33) % 300).into_bytes();
            if (x >> 20).is_multiple_of(7) {
                m.add(seq, ValueType::Deletion, &k, b"");
                model.insert((k, seq), None);
            } else {
                let v = vec![b'v'; ((x >> 40) % 60) as usize];
                m.add(seq, ValueType::Value, &k, &v);
                model.insert((k, seq), Some(v));
            }
        }
        assert!(m.runs_count() > 8, "{} runs", m.runs_count());
        assert_eq!(m.len(), 3000);
        for probe in (0..310u64).map(|i| format!("k{i:03}").into_bytes()) {
            for at in [0u64, 1, 500, 1499, 1500, 2999, 3000, u64::from(u32::MAX)] {
                let want = model
                    .range((probe.clone(), 0)..=(probe.clone(), at))
                    .next_back()
                    .map(|(_, v)| match v {
                        Some(v) => Lookup::Value(v.clone()),
                        None => Lookup::Deleted,
                    });
                assert_eq!(m.get(&probe, at), want, "{probe:?} at {at}");
            }
        }
        // Internal-key order: user key ascending, seqnum descending.
        let mut expected: Vec<(Vec<u8>, u64)> = model.keys().cloned().collect();
        expected.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut it = m.iter();
        it.seek_to_first();
        let mut forward = Vec::new();
        while it.valid() {
            let k = it.key();
            forward.push((key::user_key(k).to_vec(), key::tag(k) >> 8));
            it.next();
        }
        assert_eq!(forward, expected);
        it.seek_to_last();
        let mut backward = Vec::new();
        while it.valid() {
            let k = it.key();
            backward.push((key::user_key(k).to_vec(), key::tag(k) >> 8));
            it.prev();
        }
        backward.reverse();
        assert_eq!(backward, expected);
        it.seek(&make_internal_key(b"k150", 1000, ValueType::Value));
        let first_at = expected
            .iter()
            .position(|(k, s)| k.as_slice() > b"k150".as_slice() || (k == b"k150" && *s <= 1000));
        assert_eq!(
            it.valid()
                .then(|| (key::user_key(it.key()).to_vec(), key::tag(it.key()) >> 8)),
            first_at.map(|i| expected[i].clone())
        );
    }

    #[test]
    fn a_small_write_buffer_or_run_size_zero_is_one_run() {
        for m in [
            MemTable::for_write_buffer(MIN_RUN_BYTES, MIN_RUN_BYTES, InternalOrder::default()),
            MemTable::for_write_buffer(64 << 20, 0, InternalOrder::default()),
        ] {
            for i in 0..20_000u64 {
                m.add(i + 1, ValueType::Value, &i.to_be_bytes(), &[0; 100]);
            }
            assert_eq!(m.runs_count(), 1);
        }
        // A large one: runs of at least the minimum, at most MAX_RUNS of them.
        let m = MemTable::for_write_buffer(1 << 30, MIN_RUN_BYTES, InternalOrder::default());
        assert_eq!(m.run_bytes, Some((1 << 30) / MAX_RUNS));
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
