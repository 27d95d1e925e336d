//! Replaying the write-ahead logs at open (`recover.rs` runs it): every log the manifest
//! still needs, record by record, into memtables flushed to level-0 tables as they fill
//! (opened read-only: kept in memory). Blob refs in replayed records: `replay_blobs.rs`.
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

use std::sync::Arc;

use super::info_log::info_log;
use super::replay_blobs::{RecoveredBlobs, check_blob_values, copy_blob_values};
use super::state::DbInner;
use super::table_file::{sync_new_table, write_table_from};
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::filename::{self, Kind};
use crate::log::{Checksums, LogReader};
use crate::memtable::MemTable;
use crate::options::RecoveryMode;
use crate::version::VersionEdit;

/// Replays the WALs the manifest still needs, flushing to level-0 tables (recorded in
/// `edit`) as memtables fill and at the end: list the logs, replay each (or, once replay
/// has stopped, note why the rest is skipped), then flush what is left.
pub(super) fn replay_logs(db: &DbInner, edit: &mut VersionEdit) -> Result<()> {
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

/// Writes what recovery dropped to `LOG` (not when read-only) and keeps it for the
/// `strata.recovery` property.
pub(super) fn record_notes(db: &DbInner, notes: Vec<String>) {
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
    if let Some(meta) = write_table_from(db, mem, number, false)? {
        sync_new_table(db, number)?;
        // Recovered tables go to level 0: they may overlap each other.
        edit.new_files.push((0, meta));
    }
    Ok(())
}
