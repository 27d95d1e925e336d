//! The compaction job: merges a compaction's inputs into new tables of the next level,
//! dropping what no snapshot can see (P2), and installs them. A waiting memtable flush
//! runs first, between two entries, so writers stalled on it do not wait for the merge.
//!
//! A large compaction is cut into shards (`compaction/shard.rs`, H2) merged at once: the
//! first by the background thread, each other by a helper thread of its own
//! (`Options::max_subcompactions`). Only the background thread flushes memtables or
//! touches the version set (V4); helpers only read the inputs and write their outputs,
//! whose numbers sit in `pending_outputs` until the edit names them. The outputs of all
//! shards, in shard order, form one edit: the compaction is installed whole or not at all.
//!
//! Invariant:
//! - J1 each shard hands its finished tables to a syncer thread of its own and goes on
//!   merging while the disk writes them (an output's fdatasync took about 2 ms here, per
//!   2 MB table); the shard ends only when all its tables are synced, so the edit names
//!   synced tables only, as before.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, MutexGuard, mpsc};
use std::time::Instant;

use super::blob_gc::{BlobRewriter, discard_blob_files, separation_change};
use super::blob_holes::queue_holes;
use super::failure::{Failure, Step, record_error, record_failure};
use super::flush::flush_memtable;
use super::level_iter::LevelIter;
use super::state::{DbInner, State};
use super::table_file::{discard_table, referenced_blob_bytes};
use super::warm_outputs;
use crate::compaction::{Anchor, Compaction, Shard, shards, table_end_anchors};
use crate::env::WritableFile;
use crate::error::{Error, Result};
use crate::iter::{BoxCursor, Cursor, MergingIter};
use crate::key::{MAX_SEQNUM, ParsedInternalKey, ValueType, make_internal_key, user_key};
use crate::sstable::TableBuilder;
use crate::version::FileMetaData;
use crate::version::Separation;

/// One table being written by a compaction.
struct Output {
    number: u64,
    builder: TableBuilder<dyn crate::env::WritableFile>,
    smallest: Vec<u8>,
    largest: Vec<u8>,
    /// Bytes of the blob records its refs point to.
    blob_bytes: u64,
    /// No deletion and no second entry of a user key kept so far (`FileMeta::plain`).
    plain: bool,
}

fn open_output(db: &DbInner, first_key: &[u8], warm: bool) -> Result<Output> {
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
    let mut builder = TableBuilder::new(file, db.options.table_options());
    if warm {
        builder.keep_compressed_blocks(); // J2
    }
    Ok(Output {
        number,
        builder,
        smallest: first_key.to_vec(),
        largest: Vec::new(),
        blob_bytes: 0,
        plain: true,
    })
}

/// Where finished output tables go to be synced: the shard's syncer thread, or (if it
/// could not start) right here.
type SyncQueue = mpsc::Sender<Box<dyn WritableFile>>;

/// Finishes `out` and queues it to be synced (J1: the merge goes on while the disk
/// works; every sync is done before the compaction's edit can name the table), and
/// caches the blocks of it that readers were using in the inputs (J2).
fn finish_output(db: &DbInner, out: Output, to_sync: &SyncQueue) -> Result<FileMetaData> {
    let (file, size, kept) = out.builder.finish_keeping()?;
    if let Err(mpsc::SendError(mut file)) = to_sync.send(file) {
        file.sync()?; // no syncer thread: sync here
    }
    // The new table must be readable before the manifest names it.
    let table = db.table_cache.find(out.number, size)?;
    warm_outputs::warm(&table, kept);
    Ok(FileMetaData {
        number: out.number,
        size,
        smallest: out.smallest,
        largest: out.largest,
        blob_bytes: out.blob_bytes,
        plain: out.plain,
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
    let holed = st.blob_holed.clone();
    drop(st);
    let started = Instant::now();
    let (
        ShardResult {
            result,
            outputs,
            numbers,
            garbage,
            holes,
            blobs_written,
            blob_numbers,
        },
        shard_count,
    ) = merge_shards(db, &c, smallest_snapshot, &holed);
    st = db.lock();
    st.helper_shards += shard_count as u64 - 1;
    for n in numbers.iter().chain(&blob_numbers) {
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
        discard_blob_files(db, &blob_numbers);
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
    c.edit.blob_garbage = garbage
        .into_iter()
        .map(|(n, (refs, bytes))| (n, refs, bytes))
        .collect();
    c.edit.new_blob_files = blobs_written;
    for o in outputs {
        c.edit.new_files.push((c.level + 1, o));
    }
    // The outputs' directory entries are made durable before the manifest names them;
    // neither needs the state mutex (only this thread edits).
    drop(st);
    let synced = db.env.sync_dir(&db.dir);
    st = db.lock();
    // Every version that may hold the refs this edit drops (X6).
    let older = st.versions.live_version_handles();
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
            queue_holes(&mut st, older, holes);
            end_separation_if_done(db, st)
        }
        Err(e) => {
            record_error(&mut st, e.clone());
            (st, Some(e))
        }
    }
}

/// With value separation off, once no blob file is left (every ref inlined, dead or
/// dropped), the manifest stops saying that values may be in blob files: the database is
/// LevelDB's format again and LevelDB opens it.
fn end_separation_if_done<'a>(
    db: &'a DbInner,
    mut st: MutexGuard<'a, State>,
) -> (MutexGuard<'a, State>, Option<Error>) {
    let change = separation_change(db, &st.versions.current(), !st.blob_counts.is_empty());
    if change != Some(Separation::Off) {
        return (st, None);
    }
    let mut edit = crate::version::VersionEdit {
        separation: Some(Separation::Off),
        ..Default::default()
    };
    let applied;
    (st, applied) = db.apply_edit(st, &mut edit);
    match applied {
        Ok(()) => (st, None),
        Err(e) => {
            record_error(&mut st, e.clone());
            (st, Some(e))
        }
    }
}

/// What merging one shard gave: the outcome, the tables finished, and the numbers of all
/// tables begun (finished or not), which are in `pending_outputs`.
struct ShardResult {
    result: std::result::Result<(), Failure>,
    outputs: Vec<FileMetaData>,
    numbers: Vec<u64>,
    /// Refs to blob files dropped or rewritten, per file: (refs, record bytes).
    garbage: BTreeMap<u64, (u64, u64)>,
    /// Where their records lie, per file: (offset, length).
    holes: BTreeMap<u64, Vec<(u64, u64)>>,
    /// Blob files written (values moved), synced: (number, refs, bytes).
    blobs_written: Vec<(u64, u64, u64)>,
    /// Numbers of every blob file begun, which are in `pending_outputs`.
    blob_numbers: Vec<u64>,
}

impl ShardResult {
    /// A shard that ended with `result` before finishing or beginning any table.
    fn of(result: std::result::Result<(), Failure>) -> Self {
        ShardResult {
            result,
            outputs: Vec::new(),
            numbers: Vec::new(),
            garbage: BTreeMap::new(),
            holes: BTreeMap::new(),
            blobs_written: Vec::new(),
            blob_numbers: Vec::new(),
        }
    }
}

/// Merges every shard of `c`, the first on this thread and each other on a helper thread,
/// and gathers their outputs in shard order (H2), with how many shards there were. The
/// first failure is the result; a failure stops the other shards at their next entry.
fn merge_shards(
    db: &DbInner,
    c: &Compaction,
    smallest_snapshot: u64,
    holed: &HashMap<u64, u64>,
) -> (ShardResult, usize) {
    let min_bytes = 4 * c.max_output_file_size;
    let max = db.options.max_subcompactions;
    // J2: decided once, as the compaction begins, for all its shards.
    let warm = warm_outputs::compaction_warms(db, c);
    let mut all = shards(c, max, min_bytes, || index_anchors(db, c)).into_iter();
    // `shards` returns at least one; the whole range in the database's order otherwise.
    let first = all
        .next()
        .unwrap_or_else(|| Shard::between(None, None, &c.version.order));
    let rest: Vec<Shard> = all.collect();
    let abort = AtomicBool::new(false);
    let run = |shard: Shard, flushes: bool| {
        let mut r = ShardResult::of(Ok(()));
        let (to_sync, queue) = mpsc::channel();
        r.result = std::thread::scope(|scope| {
            let syncer = std::thread::Builder::new()
                .name("strata-sync".into())
                .spawn_scoped(scope, move || sync_tables(queue));
            let merged = merge_inputs(
                db,
                c,
                shard,
                smallest_snapshot,
                holed,
                warm,
                flushes,
                &abort,
                &to_sync,
                &mut r,
            );
            drop(to_sync);
            let synced = match syncer {
                Ok(h) => h.join().unwrap_or_else(|_| {
                    Err(Error::InvalidArgument(
                        "a table sync thread panicked".into(),
                    ))
                }),
                Err(_) => Ok(()), // never started: every table was synced inline
            };
            merged.and(synced.map_err(Failure::of_table_write))
        });
        if r.result.is_err() {
            abort.store(true, Ordering::Release);
        }
        r
    };
    let results: Vec<ShardResult> = std::thread::scope(|scope| {
        let helpers: Vec<_> = rest
            .into_iter()
            .map(|shard| {
                let run = &run;
                std::thread::Builder::new()
                    .name("strata-sub".into())
                    .spawn_scoped(scope, move || run(shard, false))
            })
            .collect();
        let mut results = vec![run(first, true)];
        for h in helpers {
            results.push(match h {
                Ok(handle) => handle.join().unwrap_or_else(|_| {
                    ShardResult::of(Err(Failure::Stop(Error::InvalidArgument(
                        "a compaction helper thread panicked".into(),
                    ))))
                }),
                Err(e) => ShardResult::of(Err(Failure::Stop(Error::io(
                    "spawn compaction helper thread",
                    e,
                )))),
            });
        }
        results
    });
    let count = results.len();
    let mut all = ShardResult::of(Ok(()));
    for r in results {
        // A shard stopped by another's failure reports "aborted": keep the real cause.
        let replaceable = match &all.result {
            Ok(()) => true,
            Err(Failure::Stop(Error::InvalidArgument(m))) => m == ABORTED,
            Err(_) => false,
        };
        if replaceable && let Err(f) = r.result {
            all.result = Err(f);
        }
        all.outputs.extend(r.outputs);
        all.numbers.extend(r.numbers);
        all.blobs_written.extend(r.blobs_written);
        all.blob_numbers.extend(r.blob_numbers);
        for (n, (refs, bytes)) in r.garbage {
            let g = all.garbage.entry(n).or_default();
            g.0 += refs;
            g.1 += bytes;
        }
        for (n, ranges) in r.holes {
            all.holes.entry(n).or_default().extend(ranges);
        }
    }
    (all, count)
}

/// The anchors to cut `c` at: every data block's end in every input table, from the
/// tables' index blocks (H3), each weighing its table's share. If an index cannot be
/// read, the ends of the sorted levels' tables (the merge reports the error).
fn index_anchors(db: &DbInner, c: &Compaction) -> Vec<Anchor> {
    let mut anchors = Vec::new();
    for f in c.inputs.iter().flatten() {
        match db.table_cache.index_keys(f.number, f.size) {
            Ok(keys) => {
                let each = f.size / keys.len().max(1) as u64;
                anchors.extend(keys.into_iter().map(|key| Anchor { key, bytes: each }));
            }
            Err(_) => return table_end_anchors(c),
        }
    }
    anchors
}

/// Syncs the tables of `queue` in order until the merge drops its end; after a failure the
/// rest are not synced (the compaction fails and removes them all).
fn sync_tables(queue: mpsc::Receiver<Box<dyn WritableFile>>) -> Result<()> {
    let mut result = Ok(());
    for mut file in queue {
        if result.is_ok() {
            result = file.sync();
        }
    }
    result
}

/// Why a shard stopped when another one failed.
const ABORTED: &str = "another shard of the compaction failed";

fn input_cursor(db: &DbInner, c: &Compaction) -> Result<MergingIter> {
    let mut children: Vec<BoxCursor> = Vec::new();
    for (which, files) in c.inputs.iter().enumerate() {
        if c.level + which == 0 {
            for f in files {
                children.push(Box::new(db.table_cache.scan_once(f.number, f.size)?));
            }
        } else if !files.is_empty() {
            children.push(Box::new(LevelIter::once_over_level(
                files.clone(),
                Arc::clone(&db.table_cache),
            )));
        }
    }
    Ok(MergingIter::new(children, db.table_cache.order().clone()))
}

/// Places `input` on the first entry of `shard` (H2: its user keys above `lo`).
fn seek_shard_start(input: &mut MergingIter, shard: &Shard) {
    match shard.lo.as_deref() {
        None => input.seek_to_first(),
        Some(lo) => {
            // The last internal key of `lo` sorts at (lo, seqnum 0, the lowest type);
            // what is left of `lo` after it is skipped below.
            input.seek(&make_internal_key(lo, 0, ValueType::Deletion));
            while input.valid() && shard.is_before_start(user_key(input.key())) {
                input.next();
            }
        }
    }
}

/// The merge of one shard. Errors reading the inputs are final (damaged or unreadable
/// data is not retried); errors writing the outputs may pass ([`Failure::of_table_write`]).
/// Only the shard run with `flushes` (on the background thread) flushes a waiting memtable.
/// With `warm`, the outputs' blocks go into the block cache (J2, decided once for the
/// whole compaction).
#[expect(
    clippy::too_many_arguments,
    reason = "the merge's inputs, its sync queue and its outputs"
)]
fn merge_inputs(
    db: &DbInner,
    c: &Compaction,
    mut shard: Shard,
    smallest_snapshot: u64,
    holed: &HashMap<u64, u64>,
    warm: bool,
    flushes: bool,
    abort: &AtomicBool,
    to_sync: &SyncQueue,
    out: &mut ShardResult,
) -> std::result::Result<(), Failure> {
    let mut blobs = BlobRewriter::new(db, &c.version.blob_files, holed);
    let merged = merge_entries(
        db,
        c,
        &mut shard,
        smallest_snapshot,
        warm,
        flushes,
        abort,
        to_sync,
        &mut out.outputs,
        &mut out.numbers,
        &mut blobs,
    )
    .and_then(|()| blobs.finish().map_err(Failure::of_table_write));
    out.garbage = std::mem::take(&mut blobs.garbage);
    out.holes = std::mem::take(&mut blobs.holes);
    out.blobs_written = std::mem::take(&mut blobs.written);
    out.blob_numbers = std::mem::take(&mut blobs.numbers);
    merged
}

/// What is checked between two entries of a merge: the database closing, another
/// shard's failure, and a full memtable waiting for its flush (it goes first: writers may
/// be stalled on it).
#[inline]
fn between_entries(
    db: &DbInner,
    abort: &AtomicBool,
    flushes: bool,
) -> std::result::Result<(), Failure> {
    if db.shutting_down.load(Ordering::Acquire) {
        return Err(Failure::Stop(Error::InvalidArgument(
            "database is closing".into(),
        )));
    }
    if abort.load(Ordering::Relaxed) {
        return Err(Failure::Stop(Error::InvalidArgument(ABORTED.into())));
    }
    if flushes && db.has_imm.load(Ordering::Acquire) {
        let st = flush_memtable(db, db.lock(), true);
        if let Some(e) = &st.bg_error {
            return Err(Failure::Stop(e.clone()));
        }
        if let Some(p) = &st.bg_paused {
            return Err(Failure::Retry(p.error.clone()));
        }
    }
    Ok(())
}

/// Adds a kept entry to `out` (X4: a kept ref may be inlined or its value moved); true
/// when the output has reached its size and is to be finished.
#[inline]
fn add_entry(
    out: &mut Output,
    ikey: &[u8],
    value: &[u8],
    ty: ValueType,
    blobs: &mut BlobRewriter<'_>,
    c: &Compaction,
) -> std::result::Result<bool, Failure> {
    let rewritten = if ty == ValueType::BlobRef {
        blobs
            .rewrite(ikey, value)
            .map_err(Failure::of_table_write)?
    } else {
        None
    };
    let (ikey, value) = rewritten.unwrap_or((ikey, value));
    out.blob_bytes += referenced_blob_bytes(ikey, value);
    out.builder
        .add(ikey, value)
        .map_err(Failure::of_table_write)?;
    out.largest.clear();
    out.largest.extend_from_slice(ikey);
    Ok(out.builder.file_size() >= c.max_output_file_size)
}

/// The loop of [`merge_inputs`].
#[expect(
    clippy::too_many_arguments,
    reason = "the merge's inputs, its sync queue and its outputs"
)]
fn merge_entries(
    db: &DbInner,
    c: &Compaction,
    shard: &mut Shard,
    smallest_snapshot: u64,
    warm: bool,
    flushes: bool,
    abort: &AtomicBool,
    to_sync: &SyncQueue,
    outputs: &mut Vec<FileMetaData>,
    numbers: &mut Vec<u64>,
    blobs: &mut BlobRewriter<'_>,
) -> std::result::Result<(), Failure> {
    let out_err = Failure::of_table_write;
    let mut input = input_cursor(db, c).map_err(Failure::Stop)?;
    seek_shard_start(&mut input, shard);
    let mut current: Option<Output> = None;
    // The user key of the previous entry (`has_current_user_key`: there was one); the
    // buffer is reused, not allocated per entry.
    let mut current_user_key: Vec<u8> = Vec::new();
    let mut has_current_user_key = false;
    let mut last_seq_for_key = MAX_SEQNUM;
    // An entry of the current user key is kept (in this output or the one before).
    let mut kept_for_key = false;
    while input.valid() {
        between_entries(db, abort, flushes)?;
        let ikey = input.key();
        if shard.is_past_end(user_key(ikey)) {
            break;
        }
        // Always asked: it tracks grandparent overlap as keys go by.
        if shard.should_stop_before(c, ikey)
            && let Some(out) = current.take()
        {
            outputs.push(finish_output(db, out, to_sync).map_err(out_err)?);
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
            kept_for_key = false;
        }
        // P2: what no snapshot can see goes.
        let drop_entry = if last_seq_for_key <= smallest_snapshot {
            true // shadowed by a newer entry every reader sees
        } else {
            parsed.ty == ValueType::Deletion
                && parsed.seqnum <= smallest_snapshot
                && shard.is_base_level_for_key(c, parsed.user_key)
        };
        last_seq_for_key = parsed.seqnum;
        if drop_entry && parsed.ty == ValueType::BlobRef {
            blobs.dropped(input.value());
        }
        if !drop_entry {
            if current.is_none() {
                let out = open_output(db, ikey, warm).map_err(out_err)?;
                numbers.push(out.number);
                current = Some(out);
            }
            if let Some(out) = current.as_mut() {
                out.plain &= parsed.ty != ValueType::Deletion && !kept_for_key;
                kept_for_key = true;
                let full = add_entry(out, ikey, input.value(), parsed.ty, blobs, c)?;
                if full && let Some(out) = current.take() {
                    outputs.push(finish_output(db, out, to_sync).map_err(out_err)?);
                }
            }
        }
        input.next();
    }
    input.status().map_err(Failure::Stop)?;
    if let Some(out) = current.take() {
        outputs.push(finish_output(db, out, to_sync).map_err(out_err)?);
    }
    Ok(())
}
