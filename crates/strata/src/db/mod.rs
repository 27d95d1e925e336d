//! [`Db`]: the database. Design and locking: `docs/design.md`.
//!
//! Each job in its own file, and none of them import each other in a circle
//! (`tests/architecture.rs` fails on a cycle):
//! - `write.rs`: the writer: group commit into the WAL, then the memtable; making room
//!   (switching to a new memtable and log, waiting on level 0).
//! - `background.rs`: the background thread's scheduler; it runs the jobs below.
//! - `flush.rs`: the immutable memtable becomes a table (`flush_memtable`).
//! - `compaction_job.rs`: merging a compaction's inputs into the next level.
//! - `table_file.rs`: writing a whole table, syncing its directory entry, discarding it
//!   (flushes, recovery and repair). `blob_sync.rs`: making blob files durable.
//! - `obsolete.rs`: deleting files nothing needs any more.
//! - `failure.rs`: failed background steps: final errors and the paused state.
//! - `manual.rs`: what users ask of the background and wait for: flush, compact_range,
//!   resume.
//! - `recover.rs`: opening: manifest, WAL replay, a fresh log and manifest.
//! - `repair.rs`: repair and destroy. `info_log.rs`: the `LOG` file.
//! - `iter.rs`, `level_iter.rs`: reading through iterators.
//! - `props.rs`: properties and statistics. `verify.rs`: `Db::verify`.
//!
//! Imports run one way: `info_log` < `failure` < `blob_sync`, `table_file`, `obsolete` <
//! `flush` < `compaction_job` < `background` < `write` < `manual`; `recover` and `repair`
//! use `table_file`, `flush` and `obsolete`.
//!
//! One mutex guards [`State`]; the WAL and table I/O happen outside it. Invariants:
//! - D1 only the write-group leader appends to the WAL and inserts into the memtable.
//! - D2 `versions.last_seqnum` only covers writes fully in the memtable: readers never see
//!   a seqnum whose write is half applied.
//! - D3 after a failed WAL or manifest write or sync, `bg_error` is set and every later
//!   write fails with it; reads go on.
//! - D5 while a flush or compaction is paused (`bg_paused`, C7), writes that fit in the
//!   memtable go on and writes that would wait for the paused step fail with its error
//!   rather than wait; the step runs again at its retry time or at `Db::resume`.
//! - D4 a file is deleted only if no live version, pending output or needed log names it.

mod background;
mod blob_gc;
mod blob_sync;
mod compaction_job;
mod failure;
mod flush;
mod info_log;
mod iter;
mod level_iter;
mod manual;
mod obsolete;
mod props;
mod recover;
mod repair;
mod table_file;
mod verify;

pub use props::Counters;
pub use verify::VerifyReport;
mod write;

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

pub use iter::{DbIterator, KeyValue, Range};
pub use level_iter::LevelIter;

use crate::batch::WriteBatch;
use crate::blob::{BlobStore, BlobWriter};
use crate::env::{Env, FileLock, WritableFile};
use crate::error::{Error, Result};
use crate::filename;
use crate::iter::{BoxCursor, ErrorCursor, MergingIter};
use crate::key::ValueType;
use crate::log::LogWriter;
use crate::memtable::{Lookup, MemTable};
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::snapshot::{Snapshot, SnapshotList};
use crate::sstable::BlockCache;
use crate::sstable::BlockReads;
use crate::table_cache::TableCache;
use crate::version::{GetResult, NUM_LEVELS, VersionEdit, VersionSet};

/// Size of the block cache a database makes for itself when none is given.
const DEFAULT_BLOCK_CACHE: usize = 8 << 20;

/// A waiting write: one batch (or a request to switch memtables) and its outcome.
#[derive(Debug)]
struct Writer {
    /// Taken by the writer itself when it leads; read by a leader that groups it.
    batch: Mutex<Option<WriteBatch>>,
    /// A request to switch memtables rather than a write.
    is_switch: bool,
    sync: bool,
    outcome: Mutex<Option<Result<()>>>,
    /// Signalled when this writer has its outcome or has reached the front of the queue.
    cv: Condvar,
    /// True while the writer sleeps on `cv`; read and written only under the state mutex,
    /// so a leader signals a writer only when it waits (a wake costs a system call).
    waiting: AtomicBool,
}

/// A `compact_range` request for one level, run by the background thread.
#[derive(Debug)]
struct ManualCompaction {
    level: usize,
    /// Compact `level` into itself (`compaction::in_place_compaction`) rather than into
    /// the next level.
    in_place: bool,
    begin: Option<Vec<u8>>,
    end: Option<Vec<u8>>,
    done: bool,
    /// Why it stopped early, if it failed.
    error: Option<Error>,
}

/// Per-level compaction figures, for `leveldb.stats`.
#[derive(Debug, Default, Clone, Copy)]
struct LevelStats {
    micros: u64,
    bytes_read: u64,
    bytes_written: u64,
    count: u64,
}

/// What the state mutex guards.
struct State {
    mem: Arc<MemTable>,
    /// Full memtables waiting for their flush, oldest first, each with the number of its
    /// WAL (and blob file); at most `Options::max_write_buffer_number - 1`. Flushed in
    /// order, so the oldest's WAL is the oldest one needed. Copied on write: a lookup
    /// takes the list with one reference count, and a switch or flush that finds it held
    /// copies the few entries.
    imm: Arc<Vec<(u64, Arc<MemTable>)>>,
    /// The WAL; taken out by the write leader while it writes (D1).
    log: Option<LogWriter<dyn WritableFile>>,
    log_file_number: u64,
    /// Older WALs (with their numbers) left unsynced at a memtable switch, still open so
    /// that the first synced write after the switch can sync them before it is
    /// acknowledged (W4). Dropped unsynced once a flush makes them obsolete.
    unsynced_logs: Vec<(u64, LogWriter<dyn WritableFile>)>,
    /// The current WAL's blob file (value separation), made by the first large value
    /// written to that WAL; taken out by the write leader with the log (D1).
    blob: Option<BlobWriter>,
    /// Blob files of older WALs, from their switch until their WAL is obsolete: a synced
    /// write syncs them first (W4, as `unsynced_logs`) and the flush that names them
    /// syncs them (X1), each through the writer's lock, so a file whose sync failed is
    /// never synced again (its writer remembers the failure).
    older_blobs: Vec<(u64, SharedBlobWriter)>,
    /// Refs written per blob file the manifest does not name yet, as (refs, record
    /// bytes); the flush that retires their WAL names them (X3).
    blob_counts: BTreeMap<u64, (u64, u64)>,
    /// Flushed memtables readers may still hold (an iterator, a lookup in flight), with
    /// their WAL numbers: such a memtable can still lead a reader to its WAL's blob file,
    /// which is kept while it lives even if every table's ref to it is gone (X3).
    retired_mems: Vec<(u64, std::sync::Weak<MemTable>)>,
    versions: VersionSet,
    writers: VecDeque<Arc<Writer>>,
    bg_error: Option<Error>,
    /// A flush or compaction that failed in a way that can pass, waiting to run again
    /// (see `background.rs`).
    bg_paused: Option<failure::Paused>,
    /// How many times paused background work was tried again.
    bg_retries: u64,
    /// Background steps paused in a row since one last succeeded (for `LOG`).
    bg_pause_streak: u64,
    bg_scheduled: bool,
    manual: Option<ManualCompaction>,
    pending_outputs: HashSet<u64>,
    level_stats: [LevelStats; NUM_LEVELS],
    stall_micros: u64,
    /// Compaction shards merged by helper threads.
    helper_shards: u64,
    slowdowns: u64,
    stops: u64,
    flushes: u64,
    /// What recovery dropped or skipped when this database opened (`strata.recovery`).
    recovery_notes: Vec<String>,
}

/// A blob writer that a synced write and a flush may both sync.
type SharedBlobWriter = Arc<Mutex<BlobWriter>>;

pub(crate) struct DbInner {
    dir: PathBuf,
    options: Options,
    env: Arc<dyn Env>,
    table_cache: Arc<TableCache>,
    /// The open blob files (value separation, `crate::blob`).
    blobs: Arc<BlobStore>,
    snapshots: Arc<SnapshotList>,
    state: Mutex<State>,
    /// Signalled when background work is requested or finishes.
    bg_cv: Condvar,
    shutting_down: AtomicBool,
    /// True while a full memtable waits for its flush (read without the lock by
    /// a running compaction, which then flushes first).
    has_imm: AtomicBool,
    _lock: Box<dyn FileLock>,
}

/// An open database. Share it between threads with `Arc`; dropping it waits for the
/// background thread and releases the lock.
pub struct Db {
    inner: Arc<DbInner>,
    background: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("dir", &self.inner.dir)
            .finish_non_exhaustive()
    }
}

/// An empty memtable for `options`: its write buffer, cut into runs as they ask.
fn memtable_for(options: &Options) -> MemTable {
    MemTable::for_write_buffer(
        options.write_buffer_size,
        options.memtable_run_size,
        options.internal_order(),
    )
}

impl DbInner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Code under this lock does not panic on data (errors are values); if a bug ever
        // panics while holding it, later callers still see a consistent-enough state to
        // report errors, so poisoning is not propagated.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wait<'a>(&self, cv: &Condvar, guard: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        cv.wait(guard).unwrap_or_else(|p| p.into_inner())
    }

    fn wait_timeout<'a>(
        &self,
        cv: &Condvar,
        guard: MutexGuard<'a, State>,
        timeout: std::time::Duration,
    ) -> MutexGuard<'a, State> {
        match cv.wait_timeout(guard, timeout) {
            Ok((g, _)) => g,
            Err(p) => p.into_inner().0,
        }
    }

    /// An empty memtable cut into runs as the options ask.
    fn new_memtable(&self) -> MemTable {
        memtable_for(&self.options)
    }

    /// Creates write-ahead log `number` (mapped unless `Options::mmap_wal` is off).
    fn new_log_file(&self, number: u64) -> Result<Box<dyn WritableFile>> {
        self.new_appended_file(&filename::log(&self.dir, number))
    }

    /// A writer for the new blob file `number`, its readers told it grows (read with
    /// `pread` until sealed). The file is written, as the WAL is, through a memory map
    /// when `Options::mmap_wal` is on: an append is a copy into the page cache, where
    /// readers' `pread` finds it at once (X1) without a `write(2)` per group.
    fn new_blob_writer(&self, number: u64) -> Result<BlobWriter> {
        self.blobs.begin_writing(number);
        let file = self.new_appended_file(&filename::blob(&self.dir, number))?;
        // Compressed values only with a threshold: the manifest's flag says compressed
        // refs may exist exactly when both are on (`blob_gc::separation_change`).
        let compress = self.options.blob_compression && self.options.blob_threshold > 0;
        Ok(BlobWriter::new(file, number)?.with_compression(compress))
    }

    fn new_appended_file(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        if self.options.mmap_wal {
            self.env.new_log(path)
        } else {
            self.env.new_writable(path)
        }
    }

    fn table_path(&self, number: u64) -> PathBuf {
        filename::table(&self.dir, number)
    }

    /// `log_and_apply` with the state mutex released while the manifest is appended and
    /// synced: readers and writers go on meanwhile. Sound because only the background
    /// thread edits the version set while the database is open (V4), so nothing installs a
    /// version between the edit's preparation and its installation.
    fn apply_edit<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        edit: &mut VersionEdit,
    ) -> (MutexGuard<'a, State>, Result<()>) {
        let mut pending = match st.versions.prepare_edit(edit) {
            Ok(p) => p,
            Err(e) => return (st, Err(e)),
        };
        drop(st);
        let written = pending.write();
        st = self.lock();
        let applied = st.versions.finish_edit(pending, written);
        (st, applied)
    }
}

/// `InvalidArgument` if `key` or `value` is over its limit.
fn check_sizes(key: &[u8], value: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_SIZE || value.len() > MAX_VALUE_SIZE {
        return Err(Error::InvalidArgument(format!(
            "key of {} bytes or value of {} bytes exceeds the limits ({MAX_KEY_SIZE}, {MAX_VALUE_SIZE})",
            key.len(),
            value.len()
        )));
    }
    Ok(())
}

/// Largest key Strata accepts (LevelDB has no limit; ours keeps every length within a
/// varint32 with room for the tag).
pub const MAX_KEY_SIZE: usize = 1 << 30;
/// Largest value Strata accepts.
pub const MAX_VALUE_SIZE: usize = (1 << 31) - 1;

impl Db {
    /// Opens the database in `path`.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let inner = Arc::new(recover::open(path.as_ref(), options)?);
        let bg = Arc::clone(&inner);
        let handle = std::thread::Builder::new()
            .name("strata-bg".into())
            .spawn(move || background::run(&bg))
            .map_err(|e| Error::io("spawn background thread", e))?;
        {
            let mut st = inner.lock();
            background::maybe_schedule(&inner, &mut st);
        }
        Ok(Db {
            inner,
            background: Mutex::new(Some(handle)),
        })
    }

    /// Sets `key` to `value`.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(key, value, &WriteOptions::default())
    }

    /// Sets `key` to `value` with the given write options.
    pub fn put_opt(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        options: &WriteOptions,
    ) -> Result<()> {
        let (key, value) = (key.as_ref(), value.as_ref());
        check_sizes(key, value)?; // before the copy into a batch
        let mut b = WriteBatch::with_capacity(key.len() + value.len() + 11);
        b.put(key, value);
        write::write(&self.inner, Some(b), options.sync)
    }

    /// Removes `key` (not an error if absent).
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_opt(key, &WriteOptions::default())
    }

    /// Removes `key` with the given write options.
    pub fn delete_opt(&self, key: impl AsRef<[u8]>, options: &WriteOptions) -> Result<()> {
        let key = key.as_ref();
        check_sizes(key, &[])?;
        let mut b = WriteBatch::with_capacity(key.len() + 6);
        b.delete(key);
        write::write(&self.inner, Some(b), options.sync)
    }

    /// Applies a batch atomically.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, &WriteOptions::default())
    }

    /// Applies a batch atomically with the given write options.
    pub fn write_opt(&self, batch: WriteBatch, options: &WriteOptions) -> Result<()> {
        // No key or value is longer than the batch holding it: a batch within the
        // smaller limit needs no pass over its records here (the insert decodes them).
        if batch.approximate_size() > MAX_KEY_SIZE.min(MAX_VALUE_SIZE) {
            for op in batch.iter() {
                let (k, v) = match op? {
                    crate::batch::BatchOp::Put(k, v) => (k, v),
                    crate::batch::BatchOp::Delete(k) => (k, &[][..]),
                    crate::batch::BatchOp::BlobRef(..) => {
                        return Err(Error::InvalidArgument(
                            "a batch from a user holds a blob reference".into(),
                        ));
                    }
                };
                check_sizes(k, v)?;
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        write::write(&self.inner, Some(batch), options.sync)
    }

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
            |tables, f, ikey, reads| tables.get_version(f.number, f.size, ikey, reads),
        )
    }

    /// The value of `key` as a view into the block that holds it, without copying it out
    /// (the `rocksdb` crate's `get_pinned`): the view keeps its block alive, whatever the
    /// cache or the database do meanwhile. A value still in the memtable comes as a copy.
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
            |v| PinnedSlice(Pinned::Owned(v)),
            |tables, f, ikey, reads| {
                Ok(tables
                    .get_version_pinned(f.number, f.size, ikey, reads)?
                    .map(|(ty, v)| (ty, PinnedSlice(Pinned::Block(v)))))
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
                    return Ok(Some(from_memtable(inner.blobs.read(key, &r)?)));
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
            GetResult::Blob(r) => Some(from_memtable(inner.blobs.read(key, r.as_ref())?)),
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
        let inner = &self.inner;
        let st = inner.lock();
        let (seqnum, err) = match self.read_seqnum(&st, options) {
            Ok(s) => (s, None),
            Err(e) => (0, Some(e)),
        };
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
            children.push(
                match inner
                    .table_cache
                    .iter(f.number, f.size, options.block_reads())
                {
                    Ok(it) => Box::new(it),
                    Err(e) => Box::new(ErrorCursor(e)),
                },
            );
        }
        for files in version.levels.iter().skip(1).filter(|f| !f.is_empty()) {
            children.push(Box::new(LevelIter::over_level(
                files.clone(),
                Arc::clone(&inner.table_cache),
                options.block_reads(),
            )));
        }
        DbIterator::new(
            MergingIter::new(children, inner.table_cache.order().clone()),
            seqnum,
            version,
            mems,
            Arc::clone(&inner.blobs),
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

    /// Compacts the user-key range (`None` = unbounded at that end) down to the deepest
    /// level holding data in it: flushes the memtable, then compacts level by level.
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        manual::compact_range(&self.inner, begin, end)
    }

    /// Approximate bytes on disk used by each user-key range `[start, end)`.
    pub fn approximate_sizes(&self, ranges: &[(&[u8], &[u8])]) -> Vec<u64> {
        props::approximate_sizes(&self.inner, ranges)
    }

    /// Reads every table, the manifest and the live logs, checking every checksum, key
    /// order within and across tables, and that the manifest's tables exist with their
    /// sizes; lists files nothing references. The first problem is an
    /// [`Error::Corruption`] naming the file and offset.
    pub fn verify(&self) -> Result<VerifyReport> {
        verify::verify(&self.inner)
    }

    /// A property: `leveldb.stats`, `leveldb.num-files-at-level<N>`, `leveldb.sstables`,
    /// `leveldb.approximate-memory-usage`, `strata.stats`, `strata.recovery` (what opening
    /// dropped), `strata.background-error` (`none`, `paused: ERROR` or `stopped: ERROR`).
    /// `None` for unknown names.
    pub fn property(&self, name: &str) -> Option<String> {
        props::property(&self.inner, name)
    }

    /// The work counters since the database opened: flushes, compactions and their bytes,
    /// write stalls (the figures of `strata.stats`, typed).
    pub fn counters(&self) -> Counters {
        props::counters(&self.inner.lock())
    }

    /// Stops the background thread and reports any background error that drop would
    /// swallow. The database is closed when the last clone of its `Arc` is dropped.
    pub fn close(self) -> Result<()> {
        let err = self.shutdown();
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn shutdown(&self) -> Option<Error> {
        self.inner.shutting_down.store(true, Ordering::Release);
        {
            let _st = self.inner.lock();
            self.inner.bg_cv.notify_all();
        }
        let handle = self
            .background
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(h) = handle {
            let _ = h.join();
        }
        let mut st = self.inner.lock();
        if let Some(log) = st.log.as_mut()
            && let Err(e) = log.file_mut().flush()
        {
            return Some(e);
        }
        st.bg_error.clone()
    }

    /// Deletes the database in `path` and its directory (if then empty).
    pub fn destroy(path: impl AsRef<Path>, options: &Options) -> Result<()> {
        repair::destroy(path.as_ref(), options)
    }

    /// Rebuilds the manifest from whatever tables and logs are readable, as LevelDB's
    /// `RepairDB` does: every log becomes a table, every table that reads cleanly is kept
    /// and unreadable ones are moved to `lost/`; then all of them are merged, the newest
    /// version of each key first, into fresh tables at level 1 (LevelDB leaves them at
    /// level 0, where an older table could shadow newer values).
    pub fn repair(path: impl AsRef<Path>, options: Options) -> Result<()> {
        repair::repair(path.as_ref(), options)
    }

    /// Writes the memtable to a table (even if it holds little) and waits for it. The
    /// data was already durable per its write options; this empties the WAL.
    pub fn flush(&self) -> Result<()> {
        manual::flush(&self.inner)
    }

    /// Runs a paused flush or compaction now instead of at its next retry (see
    /// `Options::background_retry_interval`) and waits until background work is done or
    /// fails again. `Ok` when nothing is paused any more. A final error (a failed WAL or
    /// manifest write or sync, damaged input) cannot be resumed: it is returned, and only
    /// reopening the database recovers.
    pub fn resume(&self) -> Result<()> {
        manual::resume(&self.inner)
    }

    /// The block cache this database reads through.
    pub fn block_cache(&self) -> Arc<BlockCache> {
        Arc::clone(self.inner.table_cache.block_cache())
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// A value read by [`Db::get_pinned`]: a view into the table block that holds it (which
/// it keeps alive), or a copy when the value came from the memtable. Dereferences to
/// `[u8]`.
#[derive(Debug, Clone)]
pub struct PinnedSlice(Pinned);

#[derive(Debug, Clone)]
enum Pinned {
    Owned(Vec<u8>),
    Block(crate::sstable::BlockSlice),
}

impl PinnedSlice {
    /// The value as an owned vector: moved out when the view already owns a copy (a
    /// value from the memtable or a blob file), copied out of its block otherwise.
    pub fn into_vec(self) -> Vec<u8> {
        match self.0 {
            Pinned::Owned(v) => v,
            Pinned::Block(b) => b.to_vec(),
        }
    }

    /// True when the view owns its bytes (no block is pinned): [`PinnedSlice::into_vec`]
    /// then costs nothing.
    pub fn is_owned(&self) -> bool {
        matches!(self.0, Pinned::Owned(_))
    }
}

impl std::ops::Deref for PinnedSlice {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Pinned::Owned(v) => v,
            Pinned::Block(b) => b,
        }
    }
}

impl AsRef<[u8]> for PinnedSlice {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl PartialEq<[u8]> for PinnedSlice {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}
