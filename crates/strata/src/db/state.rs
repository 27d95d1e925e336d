//! The database's shared state: [`DbInner`] (what every thread of one database shares)
//! and [`State`] (what its one mutex guards), with the records queued in it: waiting
//! writers, a manual compaction, per-level statistics, a paused background step.
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

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use super::conflicts::{Conflicts, ReadSet};
use crate::batch::WriteBatch;
use crate::blob::{BlobStore, BlobWriter};
use crate::env::{Env, FileLock, WritableFile};
use crate::error::{Error, Result};
use crate::filename;
use crate::log::LogWriter;
use crate::memtable::MemTable;
use crate::options::{DEFAULT_BLOCK_CACHE, Options};
use crate::snapshot::SnapshotList;
use crate::sstable::BlockCache;
use crate::table_cache::TableCache;
use crate::version::{NUM_LEVELS, VersionEdit, VersionSet};

/// A waiting write: one batch (or a request to switch memtables) and its outcome.
#[derive(Debug)]
pub(super) struct Writer {
    /// Taken by the writer itself when it leads; read by a leader that groups it.
    pub(super) batch: Mutex<Option<WriteBatch>>,
    /// A request to switch memtables rather than a write.
    pub(super) is_switch: bool,
    /// A transaction's commit: what it read, checked before its batch is written (TX2).
    pub(super) check: Option<ReadSet>,
    pub(super) sync: bool,
    pub(super) outcome: Mutex<Option<Result<()>>>,
    /// Signalled when this writer has its outcome or has reached the front of the queue.
    pub(super) cv: Condvar,
    /// True while the writer sleeps on `cv`; read and written only under the state mutex,
    /// so a leader signals a writer only when it waits (a wake costs a system call).
    pub(super) waiting: AtomicBool,
    /// Set (under the state mutex) when this writer is handed its outcome or reaches the
    /// front of the queue; read without the mutex by the writer while it spins before
    /// sleeping (`write.rs`).
    pub(super) signalled: AtomicBool,
}

/// Garbage blob records waiting for their holes (`blob_holes.rs`, X6).
#[derive(Debug, Default)]
pub(super) struct PendingHoles {
    /// Every version live when the compaction that dropped their refs was installed
    /// (none may still be held: each may hold the refs, in the compaction's inputs or in
    /// the tables those were made from); empty once that no longer matters.
    pub(super) versions: Vec<std::sync::Weak<crate::version::Version>>,
    /// Per blob file, its garbage records as (offset, length).
    pub(super) ranges: BTreeMap<u64, Vec<(u64, u64)>>,
}

impl PendingHoles {
    /// How many records wait.
    pub(super) fn records(&self) -> usize {
        self.ranges.values().map(Vec::len).sum()
    }
}

/// A `compact_range` request for one level, run by the background thread.
#[derive(Debug)]
pub(super) struct ManualCompaction {
    pub(super) level: usize,
    /// Compact `level` into itself (`compaction::in_place_compaction`) rather than into
    /// the next level.
    pub(super) in_place: bool,
    pub(super) begin: Option<Vec<u8>>,
    pub(super) end: Option<Vec<u8>>,
    pub(super) done: bool,
    /// Why it stopped early, if it failed.
    pub(super) error: Option<Error>,
}

/// Per-level compaction figures, for `leveldb.stats`.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct LevelStats {
    pub(super) micros: u64,
    pub(super) bytes_read: u64,
    pub(super) bytes_written: u64,
    pub(super) count: u64,
}

/// What the state mutex guards.
pub(super) struct State {
    pub(super) mem: Arc<MemTable>,
    /// Full memtables waiting for their flush, oldest first, each with the number of its
    /// WAL (and blob file); at most `Options::max_write_buffer_number - 1`. Flushed in
    /// order, so the oldest's WAL is the oldest one needed. Copied on write: a lookup
    /// takes the list with one reference count, and a switch or flush that finds it held
    /// copies the few entries.
    pub(super) imm: Arc<Vec<(u64, Arc<MemTable>)>>,
    /// The WAL; taken out by the write leader while it writes (D1).
    pub(super) log: Option<LogWriter<dyn WritableFile>>,
    pub(super) log_file_number: u64,
    /// Whether the current WAL's directory entry is known durable. A switch leaves it
    /// unsynced; the first synced write to the WAL syncs the directory before it is
    /// acknowledged (W5).
    pub(super) log_dir_synced: bool,
    /// Older WALs (with their numbers) left unsynced at a memtable switch, still open so
    /// that the first synced write after the switch can sync them before it is
    /// acknowledged (W4). Dropped unsynced once a flush makes them obsolete.
    pub(super) unsynced_logs: Vec<(u64, LogWriter<dyn WritableFile>)>,
    /// The current WAL's blob file (value separation), made by the first large value
    /// written to that WAL; taken out by the write leader with the log (D1).
    pub(super) blob: Option<BlobWriter>,
    /// Blob files of older WALs, from their switch until their WAL is obsolete: a synced
    /// write syncs them first (W4, as `unsynced_logs`) and the flush that names them
    /// syncs them (X1), each through the writer's lock, so a file whose sync failed is
    /// never synced again (its writer remembers the failure).
    pub(super) older_blobs: Vec<(u64, SharedBlobWriter)>,
    /// Refs written per blob file the manifest does not name yet, as (refs, record
    /// bytes); the flush that retires their WAL names them (X3).
    pub(super) blob_counts: BTreeMap<u64, (u64, u64)>,
    /// Flushed memtables readers may still hold (an iterator, a lookup in flight), with
    /// their WAL numbers: such a memtable can still lead a reader to its WAL's blob file,
    /// which is kept while it lives even if every table's ref to it is gone (X3).
    pub(super) retired_mems: Vec<(u64, std::sync::Weak<MemTable>)>,
    /// Garbage blob records waiting for their holes (`blob_holes.rs`, X6).
    pub(super) holes: Vec<PendingHoles>,
    /// Bytes holes have freed per blob file since open (`blob_holes.rs`).
    pub(super) blob_freed: HashMap<u64, u64>,
    /// Bytes per blob file that holes free or will (the whole blocks inside garbage
    /// records given to holes since open): garbage collection does not count them
    /// against `blob_gc_ratio`.
    pub(super) blob_holed: HashMap<u64, u64>,
    /// Per blob file, the garbage records given to the hole thread since open, joined
    /// where side by side (start -> end): nothing reads their bytes any more (X6), so a
    /// later hole beside them may cover the blocks they share (`blob_holes.rs`).
    pub(super) blob_dead: HashMap<u64, BTreeMap<u64, u64>>,
    /// A background step ended with holes waiting: the hole thread looks.
    pub(super) holes_due: bool,
    /// Times the hole thread has looked for holes to punch.
    pub(super) hole_passes: u64,
    pub(super) versions: VersionSet,
    pub(super) writers: VecDeque<Arc<Writer>>,
    /// True while a leader commits groups (`write.rs`): the writer at the front of
    /// `writers` then waits for its outcome instead of leading.
    pub(super) leading: bool,
    pub(super) bg_error: Option<Error>,
    /// A flush or compaction that failed in a way that can pass, waiting to run again
    /// (see `background.rs`).
    pub(super) bg_paused: Option<Paused>,
    /// How many times paused background work was tried again.
    pub(super) bg_retries: u64,
    /// Background steps paused in a row since one last succeeded (for `LOG`).
    pub(super) bg_pause_streak: u64,
    pub(super) bg_scheduled: bool,
    pub(super) manual: Option<ManualCompaction>,
    pub(super) pending_outputs: HashSet<u64>,
    pub(super) level_stats: [LevelStats; NUM_LEVELS],
    pub(super) stall_micros: u64,
    /// Compaction shards merged by helper threads.
    pub(super) helper_shards: u64,
    pub(super) slowdowns: u64,
    pub(super) stops: u64,
    pub(super) flushes: u64,
    /// Tables moved down a level whole (`Counters::table_moves`).
    pub(super) table_moves: u64,
    /// What recovery dropped or skipped when this database opened (`strata.recovery`).
    pub(super) recovery_notes: Vec<String>,
    /// Recent writes, recorded while transactions are live (TX1).
    pub(super) conflicts: Conflicts,
}

/// A blob writer that a synced write and a flush may both sync.
pub(super) type SharedBlobWriter = Arc<Mutex<BlobWriter>>;

pub(crate) struct DbInner {
    pub(super) dir: PathBuf,
    pub(super) options: Options,
    pub(super) env: Arc<dyn Env>,
    pub(super) table_cache: Arc<TableCache>,
    /// The open blob files (value separation, `crate::blob`).
    pub(super) blobs: Arc<BlobStore>,
    pub(super) snapshots: Arc<SnapshotList>,
    pub(super) state: Mutex<State>,
    /// Signalled when background work is requested or finishes.
    pub(super) bg_cv: Condvar,
    /// Signalled when holes may be ready, and at shutdown (`blob_holes.rs`).
    pub(super) holes_cv: Condvar,
    pub(super) shutting_down: AtomicBool,
    /// True while a full memtable waits for its flush (read without the lock by
    /// a running compaction, which then flushes first).
    pub(super) has_imm: AtomicBool,
    /// The last compaction cached its outputs' blocks (J2, `warm_outputs.rs`).
    pub(super) warm_outputs: AtomicBool,
    /// Opened with `Db::open_read_only`: writes and background work are refused, and
    /// nothing in the directory is ever written.
    pub(super) read_only: bool,
    pub(super) _lock: Box<dyn FileLock>,
}

/// An empty memtable for `options`: its write buffer, cut into runs as they ask.
pub(super) fn memtable_for(options: &Options) -> MemTable {
    MemTable::for_write_buffer(
        options.write_buffer_size,
        options.memtable_run_size,
        options.internal_order(),
    )
}

impl DbInner {
    /// The state every thread of the database shares: the table and blob caches (open
    /// files shared out between them), an empty memtable, no log yet.
    pub(super) fn new(
        dir: &Path,
        options: Options,
        versions: VersionSet,
        lock: Box<dyn FileLock>,
        read_only: bool,
    ) -> DbInner {
        let env = Arc::clone(&options.env);
        let block_cache = options
            .block_cache
            .clone()
            .unwrap_or_else(|| BlockCache::new(DEFAULT_BLOCK_CACHE));
        // Open files: 10 kept aside (as LevelDB), a quarter of the rest for blob files when
        // values may be in them (and as many times `MAPS_PER_SLOT` mapped blob files, which
        // hold no descriptor), the remainder for tables.
        let spare = options.max_open_files.saturating_sub(10).max(10);
        let (table_files, blob_files) = if options.separates_values() {
            let blobs = (spare / 4).max(4);
            (spare.saturating_sub(blobs).max(10), blobs)
        } else {
            (spare, 4)
        };
        let table_cache = Arc::new(TableCache::new(
            dir,
            Arc::clone(&env),
            block_cache,
            table_files,
            options.mmap_reads,
            options.table_format(),
        ));
        DbInner {
            dir: dir.to_path_buf(),
            env: Arc::clone(&env),
            table_cache,
            blobs: Arc::new(crate::blob::BlobStore::new(
                Arc::clone(&env),
                dir.to_path_buf(),
                options.mmap_reads,
                blob_files,
            )),
            snapshots: Arc::new(SnapshotList::default()),
            state: Mutex::new(State {
                mem: Arc::new(memtable_for(&options)),
                imm: Arc::new(Vec::new()),
                log: None,
                log_file_number: 0,
                log_dir_synced: true,
                unsynced_logs: Vec::new(),
                blob: None,
                older_blobs: Vec::new(),
                blob_counts: Default::default(),
                retired_mems: Vec::new(),
                holes: Vec::new(),
                blob_freed: HashMap::new(),
                blob_holed: HashMap::new(),
                blob_dead: HashMap::new(),
                holes_due: false,
                hole_passes: 0,
                versions,
                writers: VecDeque::new(),
                leading: false,
                bg_error: None,
                bg_paused: None,
                bg_retries: 0,
                bg_pause_streak: 0,
                bg_scheduled: false,
                manual: None,
                pending_outputs: HashSet::new(),
                level_stats: [LevelStats::default(); NUM_LEVELS],
                stall_micros: 0,
                helper_shards: 0,
                conflicts: Conflicts::default(),
                slowdowns: 0,
                stops: 0,
                flushes: 0,
                table_moves: 0,
                recovery_notes: Vec::new(),
            }),
            bg_cv: Condvar::new(),
            holes_cv: Condvar::new(),
            shutting_down: AtomicBool::new(false),
            has_imm: AtomicBool::new(false),
            warm_outputs: AtomicBool::new(false),
            read_only,
            _lock: lock,
            options,
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // Code under this lock does not panic on data (errors are values); if a bug ever
        // panics while holding it, later callers still see a consistent-enough state to
        // report errors, so poisoning is not propagated.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn wait<'a>(
        &self,
        cv: &Condvar,
        guard: MutexGuard<'a, State>,
    ) -> MutexGuard<'a, State> {
        cv.wait(guard).unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn wait_timeout<'a>(
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
    pub(super) fn new_memtable(&self) -> MemTable {
        memtable_for(&self.options)
    }

    /// Creates write-ahead log `number` (mapped unless `Options::mmap_wal` is off).
    pub(super) fn new_log_file(&self, number: u64) -> Result<Box<dyn WritableFile>> {
        self.new_appended_file(&filename::log(&self.dir, number))
    }

    /// A writer for the new blob file `number`, its readers told it grows (read with
    /// `pread` until sealed). The file is written, as the WAL is, through a memory map
    /// when `Options::mmap_wal` is on: an append is a copy into the page cache, where
    /// readers' `pread` finds it at once (X1) without a `write(2)` per group.
    pub(super) fn new_blob_writer(&self, number: u64) -> Result<BlobWriter> {
        self.blobs.begin_writing(number);
        let file = self.new_appended_file(&filename::blob(&self.dir, number))?;
        // Compressed values only with a threshold: the manifest's flag says compressed
        // refs may exist exactly when both are on (`blob_gc::separation_change`).
        let compress = self.options.blob_compression && self.options.separates_values();
        Ok(BlobWriter::new(file, number)?.with_compression(compress))
    }

    pub(super) fn new_appended_file(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        if self.options.mmap_wal {
            self.env.new_log(path)
        } else {
            self.env.new_writable(path)
        }
    }

    pub(super) fn table_path(&self, number: u64) -> PathBuf {
        filename::table(&self.dir, number)
    }

    /// `log_and_apply` with the state mutex released while the manifest is appended and
    /// synced: readers and writers go on meanwhile. Sound because only the background
    /// thread edits the version set while the database is open (V4), so nothing installs a
    /// version between the edit's preparation and its installation.
    pub(super) fn apply_edit<'a>(
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

/// Which background step is paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// The immutable memtable's flush: writes that need its room fail meanwhile.
    Flush,
    /// A compaction: flushes go on; writes fail only once level 0 is at its stop trigger.
    Compaction,
}

/// The state a paused background step leaves (see the module docs).
#[derive(Debug)]
pub(super) struct Paused {
    /// What failed; writes that must wait for the step get it.
    pub(super) error: Error,
    /// What failed.
    pub(super) step: Step,
    /// When the background thread tries again by itself (`None`: only `Db::resume`).
    pub(super) retry_at: Option<Instant>,
}
