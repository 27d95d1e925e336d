//! Opening a database (recovery). Destroying and repairing one: `repair.rs`.
//!
//! Open: take the lock; create or check the database; rebuild the version from the
//! manifest; replay the WALs the manifest still needs into memtables and flush them to
//! level 0; start a fresh WAL and a fresh manifest; delete what is obsolete.
//!
//! WAL damage policy ([`RecoveryMode`], `docs/durability.md` C8):
//! - point in time (default): the first damaged record of any log, or the first record
//!   whose seqnum does not follow the one before it (a gap: an older log cut at a record
//!   boundary reads as complete), ends the replay there
//!   and every later record and log is dropped, so the recovered state is a prefix of the
//!   write history. An older log is not synced when the writer moves to the next one
//!   (W4), so a power cut can tear it while the next one keeps unsynced records; none of
//!   those records was acknowledged as synced, since a synced write first syncs every
//!   older log. (LevelDB skips damage and replays what follows, which can leave holes.)
//! - absolute consistency (or `paranoid_checks`): any dropped byte refuses to open.
//! - salvage: damaged records are skipped wherever they are; the rest is replayed.
//!
//! Every drop is written to `LOG` and kept for the `strata.recovery` property.

use std::collections::{HashSet, VecDeque};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex};

use super::info_log::info_log;
use super::obsolete::delete_obsolete_files;
use super::table_file::{sync_new_table, write_table_from};
use super::{DEFAULT_BLOCK_CACHE, DbInner, LevelStats, State};
use crate::batch::{BatchOp, WriteBatch};
use crate::env::Env;
use crate::error::{Error, Result};
use crate::filename::{self, Kind};
use crate::log::{Checksums, LogReader, LogWriter};
use crate::memtable::MemTable;
use crate::options::{Options, RecoveryMode};
use crate::snapshot::SnapshotList;
use crate::sstable::BlockCache;
use crate::table_cache::TableCache;
use crate::version::{NUM_LEVELS, VersionEdit, VersionSet};

pub(super) fn take_lock(env: &dyn Env, dir: &Path) -> Result<Box<dyn crate::env::FileLock>> {
    env.lock_file(&filename::lock(dir)).map_err(|e| match e {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::WouldBlock => {
            Error::Locked(format!("{}: {source}", dir.display()))
        }
        other => other,
    })
}

/// How a database is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// For reading and writing: recovery flushes the logs it replays, writes a new manifest
    /// and log, and deletes obsolete files.
    ReadWrite,
    /// For reading only: the logs are replayed into memtables held in memory and nothing
    /// in the directory is created, renamed, written or deleted (`Db::open_read_only`).
    ReadOnly,
}

/// Opens (or, read-write, creates) the database in `dir`, in these steps: find or
/// create it and take its lock, read its manifest, build the shared state, replay its
/// logs and, read-write, start a new log and manifest edit.
pub(super) fn open(dir: &Path, options: Options, mode: Mode) -> Result<DbInner> {
    let read_only = mode == Mode::ReadOnly;
    let lock = find_or_create(dir, &options, read_only)?;
    let versions = read_manifest(dir, &options)?;
    if !read_only {
        // The previous run's LOG becomes LOG.old, as in LevelDB (only now: an open
        // refused above leaves the directory as it found it).
        let log = dir.join("LOG");
        if options.env.exists(&log) {
            let _ = options.env.rename(&log, &dir.join("LOG.old"));
        }
    }
    let db = shared_state(dir, options, versions, lock, read_only);
    let mut edit = VersionEdit::default();
    let manifest_notes = std::mem::take(&mut db.lock().versions.recovery_notes);
    record_notes(&db, manifest_notes);
    replay_logs(&db, &mut edit)?;
    if !read_only {
        start_new_log(&db, edit)?;
    }
    Ok(db)
}

/// Checks the options, finds the database (creating it read-write when asked) and takes
/// its lock.
fn find_or_create(
    dir: &Path,
    options: &Options,
    read_only: bool,
) -> Result<Box<dyn crate::env::FileLock>> {
    options.validate()?;
    let env = Arc::clone(&options.env);
    if !env.exists(dir) {
        if read_only || !options.create_if_missing {
            return Err(Error::NotFound(format!(
                "{}: database does not exist (create_if_missing is false)",
                dir.display()
            )));
        }
        env.create_dir_all(dir)?;
    }
    if read_only && !env.exists(&filename::current(dir)) {
        // Checked before the lock, whose file a read-only open must not create.
        return Err(Error::NotFound(format!(
            "{}: no database here (no CURRENT file)",
            dir.display()
        )));
    }
    let lock = take_lock(env.as_ref(), dir)?;
    if !env.exists(&filename::current(dir)) {
        // Without CURRENT, tables and logs with data here belong to a database whose
        // manifest is lost: creating a new one would delete them as obsolete. A manifest
        // alone is a creation that crashed before CURRENT was written: nothing to lose.
        let orphans = env
            .children(dir)?
            .into_iter()
            .filter(|n| match filename::parse(n) {
                Some(Kind::Table(_)) => true,
                Some(Kind::Log(_)) => env.file_size(&dir.join(n)).map_or(true, |s| s > 0),
                _ => false,
            })
            .count();
        if orphans > 0 {
            return Err(Error::corruption(
                filename::current(dir).to_string_lossy(),
                0,
                format!(
                    "CURRENT is missing but {orphans} database file(s) are present; Db::repair can rebuild it"
                ),
            ));
        }
        if read_only || !options.create_if_missing {
            return Err(Error::NotFound(format!(
                "{}: database does not exist (create_if_missing is false)",
                dir.display()
            )));
        }
        VersionSet::create_new_db(dir, env.as_ref(), options.internal_order().user_name())?;
    } else if options.error_if_exists {
        return Err(Error::AlreadyExists(format!(
            "{} (error_if_exists is true)",
            dir.display()
        )));
    }
    Ok(lock)
}

/// Reads the manifest `CURRENT` names into a version set, checking that every table it
/// names exists and that a dropped edit is not damage to synced data.
fn read_manifest(dir: &Path, options: &Options) -> Result<VersionSet> {
    let env = Arc::clone(&options.env);
    let mut versions = VersionSet::new(dir, Arc::clone(&env)).with_order(options.internal_order());
    versions.recover()?;
    check_tables_exist(env.as_ref(), dir, &versions)?;
    if !versions.recovery_notes.is_empty()
        && versions.log_number != 0
        && !env.exists(&filename::log(dir, versions.log_number))
    {
        // The dropped manifest tail was an edit whose obsolete files are already gone:
        // those are deleted only after the edit is synced, so the edit was complete and
        // its damage is damage to synced data, not a crash's unfinished write.
        return Err(Error::corruption(
            filename::log(dir, versions.log_number).to_string_lossy(),
            0,
            format!(
                "the manifest's last edit is damaged ({}) and the log it replaced is gone: \
                 the edit was complete, so this is damage to synced data",
                versions.recovery_notes.join("; ")
            ),
        ));
    }
    Ok(versions)
}

/// The state every thread of the database shares, empty memtable, no log yet.
fn shared_state(
    dir: &Path,
    options: Options,
    versions: VersionSet,
    lock: Box<dyn crate::env::FileLock>,
    read_only: bool,
) -> DbInner {
    let env = Arc::clone(&options.env);
    let block_cache = options
        .block_cache
        .clone()
        .unwrap_or_else(|| BlockCache::new(DEFAULT_BLOCK_CACHE));
    // Open files: 10 kept aside (as LevelDB), a quarter of the rest for blob files when
    // values may be in them, the remainder for tables.
    let spare = options.max_open_files.saturating_sub(10).max(10);
    let (table_files, blob_files) = if options.blob_threshold > 0 {
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
            mem: Arc::new(super::memtable_for(&options)),
            imm: Arc::new(Vec::new()),
            log: None,
            log_file_number: 0,
            log_dir_synced: true,
            unsynced_logs: Vec::new(),
            blob: None,
            older_blobs: Vec::new(),
            blob_counts: Default::default(),
            retired_mems: Vec::new(),
            versions,
            writers: VecDeque::new(),
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
            slowdowns: 0,
            stops: 0,
            flushes: 0,
            table_moves: 0,
            recovery_notes: Vec::new(),
        }),
        bg_cv: Condvar::new(),
        shutting_down: AtomicBool::new(false),
        has_imm: AtomicBool::new(false),
        read_only,
        _lock: lock,
        options,
    }
}

/// Read-write only: a new log for the writes to come, and the edit that names it (with the
/// tables and blob files replay made), applied; then obsolete files go.
fn start_new_log(db: &DbInner, mut edit: VersionEdit) -> Result<()> {
    let (env, dir) = (&db.env, &db.dir);
    let mut st = db.lock();
    let number = st.versions.new_file_number();
    let file = db.new_log_file(number)?;
    env.sync_dir(dir)?;
    st.log = Some(LogWriter::new(file));
    st.log_file_number = number;
    st.log_dir_synced = true;
    edit.log_number = Some(number);
    edit.prev_log_number = Some(0);
    // X3: the replayed WALs are retired, so their blob files are named; and a database
    // opened with value separation says so before any ref is written, so that LevelDB
    // refuses it from now on.
    edit.new_blob_files = std::mem::take(&mut st.blob_counts)
        .into_iter()
        .map(|(n, (refs, bytes))| (n, refs, bytes))
        .collect();
    edit.separation = super::blob_gc::separation_change(
        db,
        &st.versions.current(),
        !edit.new_blob_files.is_empty(),
    );
    st.versions.log_and_apply(&mut edit)?;
    delete_obsolete_files(db, &mut st);
    drop(st);
    Ok(())
}

/// Every table the manifest names must exist.
fn check_tables_exist(env: &dyn Env, dir: &Path, versions: &VersionSet) -> Result<()> {
    let present: HashSet<u64> = env
        .children(dir)?
        .iter()
        .filter_map(|n| match filename::parse(n) {
            Some(Kind::Table(n)) => Some(n),
            _ => None,
        })
        .collect();
    let v = versions.current();
    let missing: Vec<u64> = v
        .levels
        .iter()
        .flatten()
        .map(|f| f.number)
        .filter(|n| !present.contains(n))
        .collect();
    if let Some(first) = missing.first() {
        return Err(Error::corruption(
            filename::table(dir, *first).to_string_lossy(),
            0,
            format!(
                "{} table(s) named by the manifest are missing",
                missing.len()
            ),
        ));
    }
    Ok(())
}

/// Replays the WALs the manifest still needs, flushing to level-0 tables (recorded in
/// `edit`) as memtables fill and at the end: list the logs, replay each (or, once replay
/// has stopped, note why the rest is skipped), then flush what is left.
fn replay_logs(db: &DbInner, edit: &mut VersionEdit) -> Result<()> {
    let logs = logs_to_replay(db)?;
    let mut r = Replay {
        db,
        mode: db.options.effective_recovery_mode(),
        mem: Arc::new(db.new_memtable()),
        max_seq: 0,
        notes: Vec::new(),
        stop: None,
        next_seq: None,
        blobs: RecoveredBlobs::default(),
    };
    for number in logs {
        if r.stop.is_some() {
            r.note_skipped(number)?;
        } else {
            r.replay_log(number, edit)?;
        }
    }
    r.finish(edit)
}

/// The logs the manifest still needs, in order. Their numbers are marked used before any
/// file is made: a log's blob file shares its number, and the blob file recovery copies
/// values into must not be one of them.
fn logs_to_replay(db: &DbInner) -> Result<Vec<u64>> {
    let (min_log, prev_log) = {
        let st = db.lock();
        (st.versions.log_number, st.versions.prev_log_number)
    };
    let mut logs: Vec<u64> = db
        .env
        .children(&db.dir)?
        .iter()
        .filter_map(|n| match filename::parse(n) {
            Some(Kind::Log(n)) if n >= min_log || n == prev_log => Some(n),
            _ => None,
        })
        .collect();
    logs.sort_unstable();
    let mut st = db.lock();
    for &number in &logs {
        st.versions.mark_file_number_used(number);
    }
    Ok(logs)
}

/// One replay's progress across the logs.
struct Replay<'a> {
    db: &'a DbInner,
    mode: RecoveryMode,
    mem: Arc<MemTable>,
    max_seq: u64,
    notes: Vec<String>,
    /// Where point-in-time replay stopped: (file, offset, what).
    stop: Option<(String, u64, String)>,
    /// The seqnum the next record must start at: records are numbered without gaps
    /// across logs, so a jump means records between them were lost (an older log left
    /// unsynced at a switch and cut by a crash at a record boundary looks complete on its
    /// own).
    next_seq: Option<u64>,
    blobs: RecoveredBlobs,
}

/// What to do with a record whose blob refs were looked at.
enum Refs {
    /// Apply it (its values copied, or checked when read-only).
    Apply(WriteBatch),
    /// Salvage: leave it out and go on.
    Skip,
    /// Point in time: replay stops here.
    Stop,
}

impl Replay<'_> {
    /// A log after the point where replay stopped: noted, not replayed.
    fn note_skipped(&mut self, number: u64) -> Result<()> {
        let Some((file, offset, what)) = &self.stop else {
            return Ok(());
        };
        // The damaged log was not synced before this one was written (W4), and no synced
        // write followed it (such a write would have synced it first): what this log
        // holds was never acknowledged as durable.
        let held = if log_has_a_record(self.db, number)? {
            "holds records that were never synced"
        } else {
            "holds no record"
        };
        self.notes.push(format!(
            "skipped log {number}: it follows the point where replay stopped ({what} at \
             offset {offset} of {file}) and {held}"
        ));
        Ok(())
    }

    /// Replays one log's records into the memtable, flushing it when full.
    fn replay_log(&mut self, number: u64, edit: &mut VersionEdit) -> Result<()> {
        let db = self.db;
        let path = filename::log(&db.dir, number);
        let name = path.to_string_lossy().into_owned();
        let mut reader = LogReader::new(db.env.new_sequential(&path)?, Checksums::Verify);
        let mut record = Vec::new();
        loop {
            let more = reader.read_record(&mut record)?;
            if self.dropped(&mut reader, &name)? || !more {
                return Ok(());
            }
            let batch = WriteBatch::from_bytes(std::mem::take(&mut record))
                .map_err(|e| e.located(&name, reader.last_record_offset()))?;
            if !self.in_sequence(&batch, reader.last_record_offset(), &name)? {
                return Ok(());
            }
            let batch = match self.refs(batch, reader.last_record_offset(), &name)? {
                Refs::Apply(b) => b,
                Refs::Skip => continue,
                Refs::Stop => return Ok(()),
            };
            self.next_seq = Some(batch.seqnum().saturating_add(u64::from(batch.len())));
            self.mem.insert_batch(&batch)?;
            if !batch.is_empty() {
                self.max_seq = self
                    .max_seq
                    .max(batch.seqnum() + u64::from(batch.len()) - 1);
            }
            if self.mem.approximate_memory_usage() > db.options.write_buffer_size {
                flush_recovered(db, &self.mem, edit)?;
                self.mem = Arc::new(db.new_memtable());
            }
        }
    }

    /// Handles what the reader dropped as the mode says: true if replay stops here.
    fn dropped(&mut self, reader: &mut LogReader, name: &str) -> Result<bool> {
        let mut stopped = false;
        for d in reader.take_dropped() {
            let what = format!(
                "{} bytes at offset {} of {name} ({:?})",
                d.bytes, d.offset, d.reason
            );
            match self.mode {
                RecoveryMode::AbsoluteConsistency => {
                    return Err(Error::corruption(
                        name,
                        d.offset,
                        format!(
                            "write-ahead log damaged or torn ({:?}, {} bytes; absolute \
                             consistency recovery refuses any drop)",
                            d.reason, d.bytes
                        ),
                    ));
                }
                RecoveryMode::Salvage => self.notes.push(format!("salvage: skipped {what}")),
                RecoveryMode::PointInTime => {
                    self.notes.push(format!(
                        "point in time: replay stopped at {what}; the rest was never synced"
                    ));
                    self.stop = Some((
                        name.to_string(),
                        d.offset,
                        format!("{:?}, {} bytes", d.reason, d.bytes),
                    ));
                    stopped = true;
                }
            }
        }
        Ok(stopped)
    }

    /// False (replay stops) if `batch` does not start where the last one ended: records
    /// before it were lost. Salvage takes it anyway.
    fn in_sequence(&mut self, batch: &WriteBatch, offset: u64, name: &str) -> Result<bool> {
        let Some(want) = self.next_seq else {
            return Ok(true);
        };
        if batch.seqnum() == want || self.mode == RecoveryMode::Salvage {
            return Ok(true);
        }
        let what = format!(
            "a gap in sequence numbers: the record at offset {offset} of {name} starts at {} \
             where {want} was next, so records before it were lost",
            batch.seqnum()
        );
        if self.mode == RecoveryMode::AbsoluteConsistency {
            return Err(Error::corruption(name, offset, what));
        }
        self.notes.push(format!(
            "point in time: replay stopped at {what}; they were never synced"
        ));
        self.stop = Some((name.to_string(), offset, what));
        Ok(false)
    }

    /// The record's blob values copied into recovery's blob file (checked in place when
    /// read-only); a ref that does not lead to its intact record is handled as the mode
    /// says.
    fn refs(&mut self, batch: WriteBatch, offset: u64, name: &str) -> Result<Refs> {
        let checked = if self.db.read_only {
            check_blob_values(self.db, batch)?
        } else {
            copy_blob_values(self.db, batch, &mut self.blobs)?
        };
        let what = match checked {
            Ok(b) => return Ok(Refs::Apply(b)),
            Err(what) => format!("the record at offset {offset} of {name} {what}"),
        };
        match self.mode {
            RecoveryMode::AbsoluteConsistency => Err(Error::corruption(name, offset, what)),
            RecoveryMode::Salvage => {
                self.notes.push(format!("salvage: skipped {what}"));
                Ok(Refs::Skip)
            }
            RecoveryMode::PointInTime => {
                self.notes.push(format!(
                    "point in time: replay stopped at {what}; it was never synced"
                ));
                self.stop = Some((name.to_string(), offset, what));
                Ok(Refs::Stop)
            }
        }
    }

    /// Flushes the last memtable, makes recovery's blob file durable and names it, and
    /// records the last sequence number replayed.
    fn finish(self, edit: &mut VersionEdit) -> Result<()> {
        let db = self.db;
        record_notes(db, self.notes);
        flush_recovered(db, &self.mem, edit)?;
        // X1: the copies are on disk before the edit names the tables that refer to them.
        if let Some(mut w) = self.blobs.writer {
            w.sync()?;
            db.blobs.seal(w.number());
            let mut st = db.lock();
            st.blob_counts
                .insert(w.number(), (self.blobs.refs, self.blobs.bytes));
        }
        let mut st = db.lock();
        if self.max_seq > st.versions.last_seqnum {
            st.versions.last_seqnum = self.max_seq;
        }
        Ok(())
    }
}

/// The blob file recovery copies replayed values into, made on first use.
#[derive(Default)]
struct RecoveredBlobs {
    writer: Option<crate::blob::BlobWriter>,
    refs: u64,
    bytes: u64,
}

/// The values a replayed `batch` keeps in blob files, copied into a blob file of
/// recovery's own, the batch rewritten to refer to the copies. Recovery copies them as
/// LevelDB copies a WAL's values into a new table: the old blob file may have had a write
/// or sync fail in the run that wrote it, so it is never synced or named again (C6); it
/// goes with its WAL. `Err(what)` if a ref does not lead to its intact record (X1 after a
/// crash: the WAL record reached the disk, its blob record did not).
fn copy_blob_values(
    db: &DbInner,
    batch: WriteBatch,
    out: &mut RecoveredBlobs,
) -> Result<std::result::Result<WriteBatch, String>> {
    let has_refs = batch
        .iter()
        .any(|op| matches!(op, Ok(BatchOp::BlobRef(..))));
    if !has_refs {
        return Ok(Ok(batch));
    }
    let mut copy = WriteBatch::with_capacity(batch.approximate_size());
    let mut value = Vec::new();
    let mut encoded = Vec::new();
    for op in batch.iter() {
        match op? {
            BatchOp::Put(k, v) => copy.put(k, v),
            BatchOp::Delete(k) => copy.delete(k),
            BatchOp::BlobRef(k, r) => {
                if let Err(what) = read_ref(db, k, r, &mut value) {
                    return Ok(Err(what));
                }
                let writer = match &mut out.writer {
                    Some(w) => w,
                    None => {
                        let number = db.lock().versions.new_file_number();
                        out.writer.insert(db.new_blob_writer(number)?)
                    }
                };
                let moved = writer.add(k, &value)?;
                out.refs += 1;
                out.bytes += u64::from(moved.record_len);
                encoded.clear();
                moved.encode_to(&mut encoded);
                copy.put_blob_ref(k, &encoded);
            }
        }
    }
    if let Some(w) = &mut out.writer {
        w.flush()?; // X1: readers (the flushes below) find the copies
    }
    copy.set_seqnum(batch.seqnum());
    Ok(Ok(copy))
}

/// Reads the value blob ref `r` of key `k` points to into `value`; `Err(what)` if its
/// record is not intact.
fn read_ref(
    db: &DbInner,
    k: &[u8],
    r: &[u8],
    value: &mut Vec<u8>,
) -> std::result::Result<(), String> {
    db.blobs
        .read_into(k, r, value)
        .map_err(|e| format!("refers to a blob record that is not intact ({e})"))
}

/// Opened read-only, the blob refs of a replayed `batch` stay as they are: `Err(what)` if
/// one does not lead to its intact record (as [`copy_blob_values`] would find).
fn check_blob_values(
    db: &DbInner,
    batch: WriteBatch,
) -> Result<std::result::Result<WriteBatch, String>> {
    let mut value = Vec::new();
    for op in batch.iter() {
        if let BatchOp::BlobRef(k, r) = op?
            && let Err(what) = read_ref(db, k, r, &mut value)
        {
            return Ok(Err(what));
        }
    }
    Ok(Ok(batch))
}

/// Writes what recovery dropped to `LOG` (not when read-only) and keeps it for the
/// `strata.recovery` property.
fn record_notes(db: &DbInner, notes: Vec<String>) {
    for note in notes.iter().filter(|_| !db.read_only) {
        info_log(db.env.as_ref(), &db.dir, &format!("recovery: {note}"));
    }
    db.lock().recovery_notes.extend(notes);
}

/// True if the log at `number` holds at least one intact record.
fn log_has_a_record(db: &DbInner, number: u64) -> Result<bool> {
    let path = filename::log(&db.dir, number);
    let mut reader = LogReader::new(db.env.new_sequential(&path)?, Checksums::Verify);
    let mut record = Vec::new();
    reader.read_record(&mut record)
}

/// Makes a replayed memtable a level-0 table (recorded in `edit`); opened read-only, keeps
/// it in memory among the immutable memtables instead, newest last.
fn flush_recovered(db: &DbInner, mem: &Arc<MemTable>, edit: &mut VersionEdit) -> Result<()> {
    if mem.is_empty() {
        return Ok(());
    }
    if db.read_only {
        let mut st = db.lock();
        let mut imm = st.imm.as_ref().clone();
        imm.push((0, Arc::clone(mem)));
        st.imm = Arc::new(imm);
        return Ok(());
    }
    let number = db.lock().versions.new_file_number();
    if let Some(meta) = write_table_from(db, mem, number)? {
        sync_new_table(db, number)?;
        // Recovered tables go to level 0: they may overlap each other.
        edit.new_files.push((0, meta));
    }
    Ok(())
}
