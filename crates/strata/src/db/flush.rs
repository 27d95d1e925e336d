//! Memtable flushes ([`flush_memtable`], LevelDB's `CompactMemTable`): the immutable
//! memtable becomes a table (of level 0, or deeper where nothing overlaps it), and the WAL
//! it came from is dropped. The table is written by `table_file.rs`, as recovery's and
//! repair's are.

use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::time::Instant;

use super::blob_sync::{lock_blob, sync_blob, sync_blob_file};
use super::failure::{Failure, Step, record_error, record_failure};
use super::obsolete::delete_obsolete_files;
use super::state::{DbInner, State};
use super::table_file::{sync_new_table, write_table_from};
use crate::key;
use crate::version::VersionEdit;

/// Flushes the immutable memtable to a table and drops the WAL it came from. During a
/// compaction (`level0_only`) the table goes to level 0: the compaction's outputs are not
/// in the version yet, and a deeper placement could land beside them.
pub(super) fn flush_memtable<'a>(
    db: &'a DbInner,
    mut st: MutexGuard<'a, State>,
    level0_only: bool,
) -> MutexGuard<'a, State> {
    if st.bg_error.is_some() {
        return st;
    }
    let Some((_, imm)) = st.imm.first().cloned() else {
        return st;
    };
    // The oldest WAL still needed once this memtable is a table: the next full
    // memtable's, or the live one's. Switches during the flush only add later ones.
    let needed_log = st.imm.get(1).map_or(st.log_file_number, |(n, _)| *n);
    let base = st.versions.current();
    let number = st.versions.new_file_number();
    st.pending_outputs.insert(number);
    // X3: the blob files of the WALs this flush retires (older than `needed_log`) are
    // named by its edit.
    let blob_files: Vec<(u64, u64, u64)> = st
        .blob_counts
        .range(..needed_log)
        .map(|(&n, &(refs, bytes))| (n, refs, bytes))
        .collect();
    let writers = st.older_blobs.clone();
    let warm = super::warm_outputs::flush_warms(db);
    drop(st);
    let started = Instant::now();
    let built = build_flushed_table(db, &imm, number, &blob_files, &writers, warm);
    st = db.lock();
    st.pending_outputs.remove(&number);
    let meta = match built {
        Ok(m) => m,
        Err(f) => {
            record_failure(db, &mut st, f, Step::Flush);
            db.bg_cv.notify_all();
            return st;
        }
    };
    let mut edit = VersionEdit::default();
    let mut level = 0;
    if let Some(m) = &meta
        && !level0_only
    {
        level = base.pick_level_for_memtable_output(
            key::user_key(&m.smallest),
            key::user_key(&m.largest),
            db.options.max_file_size as u64,
        );
        let s = &mut st.level_stats[level];
        s.micros += started.elapsed().as_micros() as u64;
        s.bytes_written += m.size;
    }
    if let Some(m) = meta {
        edit.new_files.push((level, m));
    }
    // The flushed memtable's WAL is no longer needed; the next one is.
    edit.log_number = Some(needed_log);
    edit.prev_log_number = Some(0);
    edit.new_blob_files = blob_files;
    let applied;
    (st, applied) = db.apply_edit(st, &mut edit);
    match applied {
        Ok(()) => {
            for (n, ..) in &edit.new_blob_files {
                st.blob_counts.remove(n);
            }
            let flushed = (!st.imm.is_empty()).then(|| Arc::make_mut(&mut st.imm).remove(0));
            if let Some((log, m)) = flushed
                && db.options.separates_values()
            {
                st.retired_mems.push((log, Arc::downgrade(&m)));
            }
            db.has_imm.store(!st.imm.is_empty(), Ordering::Release);
            st.flushes += 1;
            st.bg_pause_streak = 0;
            st = delete_obsolete_files(db, st);
        }
        Err(e) => record_error(&mut st, e),
    }
    db.bg_cv.notify_all();
    st
}

/// Writes `imm` as table `number` and makes it durable (its directory entry too, and with
/// it those of the WALs made before it, W5) with the blob files its edit will name (X1:
/// once the WAL is gone, the table's refs are all that lead to those records, so they must
/// be on disk before the edit names the table).
fn build_flushed_table(
    db: &DbInner,
    imm: &Arc<crate::memtable::MemTable>,
    number: u64,
    blob_files: &[(u64, u64, u64)],
    writers: &[(u64, super::state::SharedBlobWriter)],
    warm: bool,
) -> Result<Option<crate::version::FileMetaData>, Failure> {
    let meta = write_table_from(db, imm, number, warm).map_err(Failure::of_table_write)?;
    if meta.is_some() {
        sync_new_table(db, number).map_err(Failure::Stop)?;
    } else {
        // No table, so no directory sync for one; the edit still names the next WAL, whose
        // entry a switch left unsynced (W5): a manifest must not name a log that a power
        // cut can take away after the edit is durable.
        db.env.sync_dir(&db.dir).map_err(Failure::Stop)?;
    }
    for &(n, ..) in blob_files {
        match writers.iter().find(|(w, _)| *w == n) {
            // Through its writer: a file whose write or sync failed is not synced again
            // (the error comes back instead).
            Some((_, w)) => sync_blob(db, &mut lock_blob(w)),
            // No writer in this run (none today: every named file's writer stays until its
            // log is obsolete); a fresh handle's sync is the safe answer.
            None => sync_blob_file(db, n),
        }
        .map_err(Failure::Stop)?;
    }
    Ok(meta)
}
