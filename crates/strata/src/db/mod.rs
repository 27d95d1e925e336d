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
//! - `lock.rs`: the directory's `LOCK`. `recover.rs`: opening: the manifest, then a
//!   fresh log and manifest edit. `replay.rs`: WAL replay at open (the damage policy);
//!   `replay_blobs.rs`: the blob refs of replayed records.
//! - `repair.rs`: repair and destroy. `checkpoint.rs`: `Db::checkpoint`. `info_log.rs`:
//!   the `LOG` file.
//! - `read.rs`: point lookups, snapshots, iterators and ranges, and the merged view they
//!   read through; `iter.rs`, `level_iter.rs`: the cursors. `range_delete.rs`: expanding
//!   a range delete (RD1).
//! - `props.rs`: properties and statistics. `verify.rs`: `Db::verify`.
//! - `transaction.rs`: transactions (`Db::transaction`, `Db::transact`,
//!   `Db::compare_and_swap`); `conflicts.rs`: the recent writes their commits are checked
//!   against (TX1-TX3), kept in `State`.
//!
//! Imports run one way: `info_log` < `failure` < `blob_sync`, `table_file`, `obsolete` <
//! `flush` < `compaction_job` < `background` < `read` < `range_delete` < `conflicts` <
//! `write` < `transaction`, `manual`; `recover` uses `lock`, `replay` (which uses `replay_blobs`, `table_file`)
//! and `obsolete`; `repair` uses `lock` and `table_file`. Each imports what it uses from
//! the file that defines it, never through this one.
//!
//! `state.rs` holds what the state mutex guards and the invariants over it (D1-D5), and
//! builds it (`DbInner::new`); `pinned.rs` the values `get_pinned` returns.

mod background;
mod blob_gc;
mod blob_holes;
mod blob_sync;
mod checkpoint;
mod compaction_job;
mod conflicts;
mod failure;
mod flush;
mod info_log;
mod iter;
pub(crate) mod level_iter;
mod lock;
mod manual;
mod obsolete;
mod pinned;
mod props;
mod range_delete;
mod read;
mod recover;
mod repair;
mod replay;
mod replay_blobs;
mod state;
mod table_file;
mod transaction;
mod verify;
mod warm_outputs;
mod write;

pub use pinned::PinnedSlice;
pub use props::{Counters, LiveFile};
pub use transaction::{Transaction, TransactionRange};
pub use verify::VerifyReport;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

pub use iter::{DbIterator, KeyValue, Range};
use state::DbInner;

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::options::{Options, WriteOptions};
use crate::sstable::BlockCache;

/// An open database. Share it between threads with `Arc`; dropping it waits for the
/// background thread and releases the lock.
pub struct Db {
    inner: Arc<DbInner>,
    /// The background thread and the hole thread.
    background: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("dir", &self.inner.dir)
            .finish_non_exhaustive()
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
        let inner = Arc::new(recover::open(
            path.as_ref(),
            options,
            recover::Mode::ReadWrite,
        )?);
        let db = Db {
            inner,
            background: Mutex::new(Vec::new()),
        };
        let bg = Arc::clone(&db.inner);
        db.start_thread("strata-bg", move || background::run(&bg))?;
        if db.inner.options.blob_punch_holes {
            let holes = Arc::clone(&db.inner);
            db.start_thread("strata-holes", move || blob_holes::run(&holes))?;
        }
        {
            let mut st = db.inner.lock();
            background::maybe_schedule(&db.inner, &mut st);
        }
        Ok(db)
    }

    /// Starts one of the database's threads, joined at close (a failure to start closes
    /// what started).
    fn start_thread(&self, name: &str, run: impl FnOnce() + Send + 'static) -> Result<()> {
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(run)
            .map_err(|e| Error::io(format!("spawn thread {name}"), e))?;
        self.background
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(handle);
        Ok(())
    }

    /// Opens the database in `path` for reading only, as RocksDB's `OpenForReadOnly`:
    /// nothing in its directory is created, renamed, written or deleted (no new manifest
    /// or log, no `LOG` rotation, no flush, no compaction). The logs a writer left are
    /// replayed into memory, so reads see every write that reached them. The database's
    /// lock is taken for as long as the `Db` lives, so a running writer makes this fail
    /// with `Error::Locked` (a writer that opened later would change files under the
    /// reader). Writes, `flush`, `compact_range` and `resume` fail with
    /// `Error::NotSupported`. `create_if_missing` and `error_if_exists` are ignored.
    ///
    /// ```
    /// # fn main() -> Result<(), strata::Error> {
    /// # let tmp = tempfile::tempdir().map_err(|e| strata::Error::io("tempdir", e))?;
    /// # let db = strata::Db::open(tmp.path().join("db"), strata::Options { create_if_missing: true, ..Default::default() })?;
    /// db.put(b"k", b"v")?;
    /// drop(db); // the writer lets go of the lock
    /// let reader = strata::Db::open_read_only(tmp.path().join("db"), strata::Options::default())?;
    /// assert_eq!(reader.get(b"k")?.as_deref(), Some(&b"v"[..]));
    /// assert!(reader.put(b"k", b"w").is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn open_read_only(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let inner = Arc::new(recover::open(
            path.as_ref(),
            options,
            recover::Mode::ReadOnly,
        )?);
        Ok(Db {
            inner,
            background: Mutex::new(Vec::new()),
        })
    }

    /// Makes `dest` (a directory that does not exist yet) a consistent, openable copy of
    /// this database as of one sequence number, which it returns, while other threads go
    /// on writing (RocksDB's `Checkpoint`): its tables are hard links to this database's
    /// (copies across filesystems), and what the memtables hold up to that sequence number
    /// becomes one new table. `CURRENT` is written last, once everything else is synced,
    /// so a crash leaves `dest` complete or without `CURRENT` (an open refuses it). With
    /// value separation the blob files the manifest names are linked too, and separated
    /// values still in the memtables are written into the new table inline.
    ///
    /// ```
    /// # fn main() -> Result<(), strata::Error> {
    /// # let tmp = tempfile::tempdir().map_err(|e| strata::Error::io("tempdir", e))?;
    /// # let db = strata::Db::open(tmp.path().join("db"), strata::Options { create_if_missing: true, ..Default::default() })?;
    /// db.put(b"k", b"v")?;
    /// let seq = db.checkpoint(tmp.path().join("backup"))?;
    /// let copy = strata::Db::open(tmp.path().join("backup"), strata::Options::default())?;
    /// assert_eq!(copy.get(b"k")?.as_deref(), Some(&b"v"[..]));
    /// assert!(seq >= 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn checkpoint(&self, dest: impl AsRef<Path>) -> Result<u64> {
        checkpoint::checkpoint(&self.inner, dest.as_ref())
    }

    /// The tables the database is made of now, level by level (RocksDB's
    /// `GetLiveFilesMetaData`): what `strata lsm` draws.
    pub fn live_files(&self) -> Vec<LiveFile> {
        props::live_files(&self.inner)
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

    /// Removes every key `k` with `start <= k < end` (in the database's comparator), as
    /// one atomic write: readers, iterators and snapshots see the range as it was or
    /// without those keys, never part of it. See [`WriteBatch::delete_range`] for what it
    /// costs (one delete per key in the range; LevelDB still opens the database).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let options = strata::Options { create_if_missing: true, ..Default::default() };
    /// let db = strata::Db::open(dir.path(), options)?;
    /// for i in 0..100u32 {
    ///     db.put(format!("log/{i:08}"), "entry")?;
    /// }
    /// db.delete_range("log/00000000", "log/00000090")?; // purge the first 90
    /// assert_eq!(db.range::<&[u8]>(..).count(), 10);
    /// assert!(db.get("log/00000089")?.is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_range(&self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        self.delete_range_opt(start, end, &WriteOptions::default())
    }

    /// [`Db::delete_range`] with the given write options.
    pub fn delete_range_opt(
        &self,
        start: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
        options: &WriteOptions,
    ) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range(start, end);
        self.write_opt(b, options)
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

    /// Makes every write acknowledged so far durable (RocksDB's `FlushWAL(true)`, LevelDB's
    /// empty synced write): with `sync`, the write-ahead log, and any older log a switch
    /// left unsynced, are synced before it returns, so a caller can write with
    /// `sync: false` and sync once for many writes (C1). Without `sync` there is nothing
    /// to do: an acknowledged write has already reached the operating system (C2).
    /// `Error::NotSupported` on a database opened read-only.
    ///
    /// ```
    /// # fn main() -> Result<(), strata::Error> {
    /// # let tmp = tempfile::tempdir().map_err(|e| strata::Error::io("tempdir", e))?;
    /// # let db = strata::Db::open(tmp.path().join("db"), strata::Options { create_if_missing: true, ..Default::default() })?;
    /// for i in 0..100 {
    /// db.put(format!("key{i}"), b"unsynced")?; // fast: no fsync each
    /// }
    /// db.flush_wal(true)?; // one fsync: all 100 are durable now
    /// # Ok(())
    /// # }
    /// ```
    pub fn flush_wal(&self, sync: bool) -> Result<()> {
        if self.inner.read_only {
            return Err(write::read_only_error(&self.inner.dir));
        }
        if !sync {
            return Ok(());
        }
        // An empty batch, synced: it queues behind every write acknowledged before this
        // call, and its sync covers them (and older logs, W4).
        write::write(&self.inner, Some(WriteBatch::new()), true)
    }

    /// Compacts the user-key range (`None` = unbounded at that end) down to the deepest
    /// level holding data in it: flushes the memtable, then compacts level by level,
    /// dropping deletions and overwritten versions no snapshot sees. A table this open
    /// wrote with one version of each key and no deletion, with nothing below it, is
    /// moved down whole instead of rewritten (tables found at open are rewritten).
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

    /// Every name [`Db::property`] answers (`leveldb.*` and `strata.*`), in a stable order.
    pub fn property_names() -> Vec<String> {
        props::names()
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
            self.inner.holes_cv.notify_all();
        }
        let handles =
            std::mem::take(&mut *self.background.lock().unwrap_or_else(|p| p.into_inner()));
        for h in handles {
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
