//! The compaction job: merges a compaction's inputs into new tables of the next level,
//! dropping what no snapshot can see (P2), and installs them. A waiting memtable flush
//! runs first, between two entries, so writers stalled on it do not wait for the merge.

use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::time::Instant;

use super::LevelIter;
use super::failure::{Failure, Step, record_error, record_failure};
use super::flush::{compact_memtable, discard_table};
use super::{DbInner, State};
use crate::compaction::Compaction;
use crate::error::{Error, Result};
use crate::iter::{BoxCursor, Cursor, MergingIter};
use crate::key::{MAX_SEQNUM, ParsedInternalKey, ValueType};
use crate::sstable::{BlockReads, TableBuilder};
use crate::version::FileMetaData;

/// One table being written by a compaction.
struct Output {
    number: u64,
    builder: TableBuilder<dyn crate::env::WritableFile>,
    smallest: Vec<u8>,
    largest: Vec<u8>,
}

fn open_output(db: &DbInner, first_key: &[u8]) -> Result<Output> {
    let number = {
        let mut st = db.lock();
        let n = st.versions.new_file_number();
        st.pending_outputs.insert(n);
        n
    };
    let file = match db.env.new_writable(&db.table_path(number)) {
        Ok(f) => f,
        Err(e) => {
            db.lock().pending_outputs.remove(&number);
            return Err(e);
        }
    };
    Ok(Output {
        number,
        builder: TableBuilder::new(file, db.options.table_options()),
        smallest: first_key.to_vec(),
        largest: Vec::new(),
    })
}

fn finish_output(db: &DbInner, out: Output) -> Result<FileMetaData> {
    let (mut file, size) = out.builder.finish()?;
    file.sync()?;
    drop(file);
    // The new table must be readable before the manifest names it.
    db.table_cache.find(out.number, size)?;
    Ok(FileMetaData {
        number: out.number,
        size,
        smallest: out.smallest,
        largest: out.largest,
    })
}

/// Merges a compaction's inputs into new tables of `level + 1` and installs them. Returns
/// the error if it failed (already recorded as paused or final).
pub(super) fn run_compaction<'a>(
    db: &'a DbInner,
    mut st: MutexGuard<'a, State>,
    mut c: Compaction,
) -> (MutexGuard<'a, State>, Option<Error>) {
    let smallest_snapshot = db.snapshots.oldest().unwrap_or(st.versions.last_seqnum);
    drop(st);
    let started = Instant::now();
    let mut outputs: Vec<FileMetaData> = Vec::new();
    let mut numbers: Vec<u64> = Vec::new();
    let result = merge_inputs(db, &mut c, smallest_snapshot, &mut outputs, &mut numbers);
    st = db.lock();
    for n in &numbers {
        st.pending_outputs.remove(n);
    }
    let s = &mut st.level_stats[c.level + 1];
    s.micros += started.elapsed().as_micros() as u64;
    s.bytes_read += c.input_bytes();
    s.bytes_written += outputs.iter().map(|o| o.size).sum::<u64>();
    s.count += 1;
    if let Err(f) = result {
        // No output is named by the manifest yet: remove them all, which also gives back
        // the space a full disk needs.
        for n in &numbers {
            discard_table(db, *n);
        }
        let e = match &f {
            Failure::Retry(e) | Failure::Stop(e) => e.clone(),
        };
        if !db.shutting_down.load(Ordering::Acquire) {
            record_failure(db, &mut st, f, Step::Compaction);
        }
        db.bg_cv.notify_all();
        return (st, Some(e));
    }
    c.add_input_deletions();
    for o in outputs {
        c.edit.new_files.push((c.level + 1, o));
    }
    // The outputs' directory entries are made durable before the manifest names them;
    // neither needs the state mutex (only this thread edits).
    drop(st);
    let synced = db.env.sync_dir(&db.dir);
    st = db.lock();
    let installed = match synced {
        Ok(()) => {
            let applied;
            (st, applied) = db.apply_edit(st, &mut c.edit);
            applied
        }
        Err(e) => Err(e),
    };
    match installed {
        Ok(()) => {
            st.bg_pause_streak = 0;
            (st, None)
        }
        Err(e) => {
            record_error(&mut st, e.clone());
            (st, Some(e))
        }
    }
}

fn input_cursor(db: &DbInner, c: &Compaction) -> Result<MergingIter> {
    let mut children: Vec<BoxCursor> = Vec::new();
    for (which, files) in c.inputs.iter().enumerate() {
        if c.level + which == 0 {
            for f in files {
                children.push(Box::new(db.table_cache.iter(
                    f.number,
                    f.size,
                    BlockReads::SCAN_ONCE,
                )?));
            }
        } else if !files.is_empty() {
            children.push(Box::new(LevelIter::new(
                files.clone(),
                Arc::clone(&db.table_cache),
                BlockReads::SCAN_ONCE,
            )));
        }
    }
    Ok(MergingIter::new(children))
}

/// The merge itself. Errors reading the inputs are final (damaged or unreadable data is
/// not retried); errors writing the outputs may pass ([`Failure::of_table_write`]).
fn merge_inputs(
    db: &DbInner,
    c: &mut Compaction,
    smallest_snapshot: u64,
    outputs: &mut Vec<FileMetaData>,
    numbers: &mut Vec<u64>,
) -> std::result::Result<(), Failure> {
    let out_err = Failure::of_table_write;
    let mut input = input_cursor(db, c).map_err(Failure::Stop)?;
    input.seek_to_first();
    let mut current: Option<Output> = None;
    // The user key of the previous entry (`has_current_user_key`: there was one); the
    // buffer is reused, not allocated per entry.
    let mut current_user_key: Vec<u8> = Vec::new();
    let mut has_current_user_key = false;
    let mut last_seq_for_key = MAX_SEQNUM;
    while input.valid() {
        if db.shutting_down.load(Ordering::Acquire) {
            return Err(Failure::Stop(Error::InvalidArgument(
                "database is closing".into(),
            )));
        }
        // A waiting memtable flush goes first: writers may be stalled on it.
        if db.has_imm.load(Ordering::Acquire) {
            let st = compact_memtable(db, db.lock(), true);
            if let Some(e) = &st.bg_error {
                return Err(Failure::Stop(e.clone()));
            }
            if let Some(p) = &st.bg_paused {
                return Err(Failure::Retry(p.error.clone()));
            }
        }
        let ikey = input.key();
        // Always asked: it tracks grandparent overlap as keys go by.
        if c.should_stop_before(ikey)
            && let Some(out) = current.take()
        {
            outputs.push(finish_output(db, out).map_err(out_err)?);
        }
        let parsed = ParsedInternalKey::parse(ikey).ok_or_else(|| {
            Failure::Stop(Error::corruption(
                "",
                0,
                format!(
                    "compaction input has a bad internal key ({} bytes)",
                    ikey.len()
                ),
            ))
        })?;
        if !has_current_user_key || current_user_key != parsed.user_key {
            current_user_key.clear();
            current_user_key.extend_from_slice(parsed.user_key);
            has_current_user_key = true;
            last_seq_for_key = MAX_SEQNUM;
        }
        // P2: what no snapshot can see goes.
        let drop_entry = if last_seq_for_key <= smallest_snapshot {
            true // shadowed by a newer entry every reader sees
        } else {
            parsed.ty == ValueType::Deletion
                && parsed.seqnum <= smallest_snapshot
                && c.is_base_level_for_key(parsed.user_key)
        };
        last_seq_for_key = parsed.seqnum;
        if !drop_entry {
            if current.is_none() {
                let out = open_output(db, ikey).map_err(out_err)?;
                numbers.push(out.number);
                current = Some(out);
            }
            if let Some(out) = current.as_mut() {
                out.builder.add(ikey, input.value()).map_err(out_err)?;
                out.largest.clear();
                out.largest.extend_from_slice(ikey);
                if out.builder.file_size() >= c.max_output_file_size
                    && let Some(out) = current.take()
                {
                    outputs.push(finish_output(db, out).map_err(out_err)?);
                }
            }
        }
        input.next();
    }
    input.status().map_err(Failure::Stop)?;
    if let Some(out) = current.take() {
        outputs.push(finish_output(db, out).map_err(out_err)?);
    }
    Ok(())
}
