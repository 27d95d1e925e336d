//! Memtable flushes: the immutable memtable becomes a table (of level 0, or deeper where
//! nothing overlaps it), and the WAL it came from is dropped. Recovery and repair build
//! their tables with the same functions.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::time::Instant;

use super::failure::{Failure, Step, record_error, record_failure};
use super::obsolete::delete_obsolete_files;
use super::{DbInner, State};
use crate::env::Env;
use crate::error::Result;
use crate::iter::Cursor;
use crate::key;
use crate::memtable::MemTable;
use crate::sstable::{TableBuilder, TableOptions};
use crate::version::{FileMetaData, VersionEdit};

/// Flushes the immutable memtable to a table and drops the WAL it came from. During a
/// compaction (`level0_only`) the table goes to level 0: the compaction's outputs are not
/// in the version yet, and a deeper placement could land beside them.
pub(super) fn compact_memtable<'a>(
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
    drop(st);
    let started = Instant::now();
    let built = write_table_from(db, &imm, number)
        .map_err(Failure::of_table_write)
        .and_then(|meta| {
            if meta.is_some() {
                sync_new_table(db, number).map_err(Failure::Stop)?;
            }
            // X1: once the WAL is gone, the table's refs are all that lead to these
            // records: they must be on disk before the edit names the table.
            for &(n, ..) in &blob_files {
                match writers.iter().find(|(number, _)| *number == n) {
                    // Through its writer: a file whose write or sync failed is not
                    // synced again (the error comes back instead).
                    Some((_, w)) => super::write::sync_blob(db, &mut super::write::lock_blob(w)),
                    // No writer in this run (none today: every named file's writer stays
                    // until its log is obsolete); a fresh handle's sync is the safe answer.
                    None => sync_blob_file(db, n),
                }
                .map_err(Failure::Stop)?;
            }
            Ok(meta)
        });
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
                && db.options.blob_threshold > 0
            {
                st.retired_mems.push((log, Arc::downgrade(&m)));
            }
            db.has_imm.store(!st.imm.is_empty(), Ordering::Release);
            st.flushes += 1;
            st.bg_pause_streak = 0;
            delete_obsolete_files(db, &mut st);
        }
        Err(e) => record_error(&mut st, e),
    }
    db.bg_cv.notify_all();
    st
}

/// Writes the entries `keep` accepts from `it` (positioned at the first) into table
/// `number` at `path`, until the cursor ends or the table reaches `max_bytes`, and syncs
/// it. `None`, and no file left, if nothing was kept; on an error the file is removed.
pub(super) fn build_table(
    env: &dyn Env,
    path: &Path,
    options: TableOptions,
    number: u64,
    it: &mut dyn Cursor,
    keep: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    max_bytes: u64,
) -> Result<Option<FileMetaData>> {
    let result = (|| {
        let mut builder = TableBuilder::new(env.new_writable(path)?, options);
        let (mut smallest, mut largest) = (Vec::new(), Vec::new());
        let mut blob_bytes = 0;
        while it.valid() && builder.file_size() < max_bytes {
            if keep(it.key(), it.value()) {
                blob_bytes += referenced_blob_bytes(it.key(), it.value());
                if smallest.is_empty() {
                    smallest = it.key().to_vec();
                }
                largest.clear();
                largest.extend_from_slice(it.key());
                builder.add(it.key(), it.value())?;
            }
            it.next();
        }
        it.status()?;
        let (mut file, size) = builder.finish()?;
        file.sync()?;
        Ok((!smallest.is_empty()).then_some(FileMetaData {
            number,
            size,
            smallest,
            largest,
            blob_bytes,
        }))
    })();
    if !matches!(result, Ok(Some(_))) {
        let _ = env.remove_file(path);
    }
    result
}

/// Syncs blob file `number` through a handle of its own (its writer may be gone, or
/// still held for a synced write to sync): what was written to the file by any handle,
/// map included, is then on disk.
pub(super) fn sync_blob_file(db: &DbInner, number: u64) -> Result<()> {
    let path = crate::filename::blob(&db.dir, number);
    if !db.env.exists(&path) {
        return Ok(()); // made by no write: its WAL held no large value
    }
    db.env.new_appendable(&path)?.sync()
}

/// Bytes of the blob record an entry refers to (0 for anything but a blob ref).
pub(super) fn referenced_blob_bytes(ikey: &[u8], value: &[u8]) -> u64 {
    if key::value_type(ikey) != Some(crate::key::ValueType::BlobRef) {
        return 0;
    }
    crate::blob::BlobRef::decode(value).map_or(0, |r| u64::from(r.record_len))
}

/// Writes every entry of `mem` to table `number`, synced, and checks it opens. `None` if
/// the memtable was empty (no file is left). On an error the file is removed. The caller
/// makes its directory entry durable ([`sync_new_table`]).
pub(super) fn write_table_from(
    db: &DbInner,
    mem: &Arc<MemTable>,
    number: u64,
) -> Result<Option<FileMetaData>> {
    let mut it = mem.iter();
    it.seek_to_first();
    if !it.valid() {
        return Ok(None); // an empty memtable makes no file
    }
    let path = db.table_path(number);
    let options = db.options.table_options();
    let Some(meta) = build_table(
        db.env.as_ref(),
        &path,
        options,
        number,
        &mut it,
        &mut |_, _| true,
        u64::MAX,
    )?
    else {
        return Ok(None);
    };
    if let Err(e) = db.table_cache.find(number, meta.size) {
        discard_table(db, number);
        return Err(e);
    }
    Ok(Some(meta))
}

/// Syncs the directory after table `number` was written; on failure the table is removed
/// (a failed directory sync is never retried, so the caller must stop).
pub(super) fn sync_new_table(db: &DbInner, number: u64) -> Result<()> {
    db.env
        .sync_dir(&db.dir)
        .inspect_err(|_| discard_table(db, number))
}

/// Forgets table `number` in the table cache and deletes its file (best effort: a file
/// left behind is unreferenced, and the next deletion of obsolete files removes it).
pub(super) fn discard_table(db: &DbInner, number: u64) {
    db.table_cache.evict(number);
    let _ = db.env.remove_file(&db.table_path(number));
}
