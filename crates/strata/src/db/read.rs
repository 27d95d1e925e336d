//! Reads: point lookups (`get`, `get_pinned`), snapshots, iterators and ranges, and the
//! merged view of memtables and tables they read through. Writes: `write.rs`.
//!
//! A read takes the state mutex only to copy what it reads (the seqnum, the memtables,
//! the current version); the lookups and cursors run outside it.

use std::ops::{Bound, RangeBounds};
use std::sync::{Arc, MutexGuard};

use super::Db;
use super::background;
use super::iter::{DbIterator, Range};
use super::level_iter::LevelIter;
use super::pinned::PinnedSlice;
use super::state::{DbInner, State};
use crate::error::{Error, Result};
use crate::iter::{BoxCursor, ErrorCursor, MergingIter};
use crate::key::ValueType;
use crate::memtable::{Lookup, MemTable};
use crate::options::ReadOptions;
use crate::snapshot::Snapshot;
use crate::sstable::BlockReads;
use crate::version::{GetResult, Version};

impl Db {
    /// The value of `key`, if any.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, &ReadOptions::default())
    }

    /// The value of `key` with the given read options.
    pub fn get_opt(&self, key: impl AsRef<[u8]>, options: &ReadOptions) -> Result<Option<Vec<u8>>> {
        self.lookup(
            key.as_ref(),
            options,
            |v| v,
            |blobs, key, r| blobs.read(key, r),
            |tables, f, ikey, reads| tables.get_version(f.number, f.size, ikey, reads),
        )
    }

    /// The value of `key` as a view into the block that holds it, without copying it out
    /// (the `rocksdb` crate's `get_pinned`): the view keeps its block alive, whatever the
    /// cache or the database do meanwhile. A separated value stored raw in a complete blob
    /// file is a view into the file's map. A value still in the memtable, a compressed
    /// blob value or one read without a map comes as a copy.
    pub fn get_pinned(&self, key: impl AsRef<[u8]>) -> Result<Option<PinnedSlice>> {
        self.get_pinned_opt(key, &ReadOptions::default())
    }

    /// [`Db::get_pinned`] with read options.
    pub fn get_pinned_opt(
        &self,
        key: impl AsRef<[u8]>,
        options: &ReadOptions,
    ) -> Result<Option<PinnedSlice>> {
        self.lookup(
            key.as_ref(),
            options,
            PinnedSlice::owned,
            |blobs, key, r| {
                Ok(match blobs.read_pinned(key, r)? {
                    Ok(view) => PinnedSlice::blob(view),
                    Err(copy) => PinnedSlice::owned(copy),
                })
            },
            |tables, f, ikey, reads| {
                Ok(tables
                    .get_version_pinned(f.number, f.size, ikey, reads)?
                    .map(|(ty, v)| (ty, PinnedSlice::block(v))))
            },
        )
    }

    /// A point lookup: the memtables, then the tables level by level; `from_memtable`
    /// turns a memtable's value into the caller's kind, `from_table` looks in one table.
    fn lookup<V: AsRef<[u8]>>(
        &self,
        key: &[u8],
        options: &ReadOptions,
        from_memtable: impl Fn(Vec<u8>) -> V,
        from_blob: impl Fn(&crate::blob::BlobStore, &[u8], &[u8]) -> Result<V>,
        from_table: impl Fn(
            &crate::table_cache::TableCache,
            &crate::version::FileMeta,
            &[u8],
            BlockReads,
        ) -> Result<Option<(ValueType, V)>>,
    ) -> Result<Option<V>> {
        let inner = &self.inner;
        let (seqnum, mem, imm, version) = {
            let st = inner.lock();
            let seqnum = self.read_seqnum(&st, options)?;
            (
                seqnum,
                Arc::clone(&st.mem),
                Arc::clone(&st.imm),
                st.versions.current(),
            )
        };
        // Newest first: the live memtable, then the full ones from the newest.
        for m in std::iter::once(&mem).chain(imm.iter().rev().map(|(_, m)| m)) {
            match m.get(key, seqnum) {
                Some(Lookup::Value(v)) => return Ok(Some(from_memtable(v))),
                Some(Lookup::Blob(r)) => {
                    return Ok(Some(from_blob(&inner.blobs, key, &r)?));
                }
                Some(Lookup::Deleted) => return Ok(None),
                None => {}
            }
        }
        let reads = options.block_reads();
        let (result, seek_charged) = version.get(key, seqnum, |f, ikey| {
            from_table(&inner.table_cache, f, ikey, reads)
        })?;
        if seek_charged.is_some() {
            let mut st = inner.lock();
            background::maybe_schedule(inner, &mut st);
        }
        Ok(match result {
            GetResult::Value(v) => Some(v),
            GetResult::Blob(r) => Some(from_blob(&inner.blobs, key, r.as_ref())?),
            GetResult::Deleted | GetResult::Absent => None,
        })
    }

    fn read_seqnum(&self, st: &State, options: &ReadOptions) -> Result<u64> {
        match &options.snapshot {
            Some(s) if !s.belongs_to(&self.inner.snapshots) => Err(Error::InvalidArgument(
                "the snapshot belongs to another database".into(),
            )),
            Some(s) => Ok(s.seqnum()),
            None => Ok(st.versions.last_seqnum),
        }
    }

    /// A snapshot of the database as it is now; reads through it see nothing later.
    pub fn snapshot(&self) -> Snapshot {
        let st = self.inner.lock();
        self.inner.snapshots.acquire(st.versions.last_seqnum)
    }

    /// A cursor over the whole database as of now.
    pub fn raw_iterator(&self) -> DbIterator {
        self.raw_iterator_opt(&ReadOptions::default())
    }

    /// A cursor over the whole database with the given read options.
    pub fn raw_iterator_opt(&self, options: &ReadOptions) -> DbIterator {
        let st = self.inner.lock();
        let (seqnum, err) = match self.read_seqnum(&st, options) {
            Ok(s) => (s, None),
            Err(e) => (0, Some(e)),
        };
        let view = merged_view(&self.inner, st, options.block_reads(), err);
        DbIterator::new(
            view.cursor,
            seqnum,
            view.version,
            view.mems,
            Arc::clone(&self.inner.blobs),
        )
    }

    /// The entries with keys in `range`, in key order.
    pub fn range<K: AsRef<[u8]>>(&self, range: impl RangeBounds<K>) -> Range {
        self.range_opt(range, false, &ReadOptions::default())
    }

    /// The entries with keys in `range`, in reverse key order.
    pub fn range_rev<K: AsRef<[u8]>>(&self, range: impl RangeBounds<K>) -> Range {
        self.range_opt(range, true, &ReadOptions::default())
    }

    /// The entries with keys in `range`, in either order, with the given read options.
    pub fn range_opt<K: AsRef<[u8]>>(
        &self,
        range: impl RangeBounds<K>,
        reverse: bool,
        options: &ReadOptions,
    ) -> Range {
        let own = |b: Bound<&K>| match b {
            Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        Range::new(
            self.raw_iterator_opt(options),
            own(range.start_bound()),
            own(range.end_bound()),
            reverse,
        )
    }
}

/// Every entry of the database (internal keys, all versions) as one merged cursor, with
/// what keeps its sources alive.
pub(super) struct MergedView {
    pub(super) cursor: MergingIter,
    pub(super) version: Arc<Version>,
    pub(super) mems: Vec<Arc<MemTable>>,
}

/// The merged view of the memtables (taken under `st`, released here) and the current
/// version's tables. `err`, when given, is what the cursor reports.
pub(super) fn merged_view(
    inner: &DbInner,
    st: MutexGuard<'_, State>,
    reads: BlockReads,
    err: Option<Error>,
) -> MergedView {
    let version = st.versions.current();
    let mut children: Vec<BoxCursor> = vec![Box::new(st.mem.iter())];
    let mut mems = vec![Arc::clone(&st.mem)];
    for (_, imm) in st.imm.iter() {
        children.push(Box::new(imm.iter()));
        mems.push(Arc::clone(imm));
    }
    drop(st);
    if let Some(e) = err {
        children.push(Box::new(ErrorCursor(e)));
    }
    for f in &version.levels[0] {
        children.push(match inner.table_cache.iter(f.number, f.size, reads) {
            Ok(it) => Box::new(it),
            Err(e) => Box::new(ErrorCursor(e)),
        });
    }
    for files in version.levels.iter().skip(1).filter(|f| !f.is_empty()) {
        children.push(Box::new(LevelIter::over_level(
            files.clone(),
            Arc::clone(&inner.table_cache),
            reads,
        )));
    }
    MergedView {
        cursor: MergingIter::new(children, inner.table_cache.order().clone()),
        version,
        mems,
    }
}
