//! The background thread: flushes the immutable memtable, runs compactions, deletes
//! obsolete files. One thread per database; it holds the state lock only to decide and to
//! install results, never during table I/O.
//!
//! A failed step is either final or paused ([`Failure`]). A flush or compaction that fails
//! while writing its new tables (a full disk, most often) has changed nothing the manifest
//! names: its outputs are removed, the database keeps serving reads and the writes that fit
//! in the memtable, and the step runs again after `Options::background_retry_interval` or at
//! `Db::resume` (C7). A failed manifest write or directory sync, or damaged input, is final
//! (`bg_error`, D3): the state on disk is in doubt and only a reopen recovers.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use super::{DbInner, ManualCompaction, State, write};
use crate::compaction::{Compaction, pick_compaction, range_compaction};
use crate::env::Env;
use crate::error::{Error, Result};
use crate::filename::{self, Kind};
use crate::iter::{BoxCursor, Cursor, MergingIter};
use crate::key::{self, MAX_SEQNUM, ParsedInternalKey, ValueType};
use crate::memtable::MemTable;
use crate::sstable::{TableBuilder, TableOptions};
use crate::version::{FileMetaData, NUM_LEVELS, VersionEdit};

use super::LevelIter;

/// The background thread's loop.
pub(super) fn run(db: &Arc<DbInner>) {
    let mut st = db.lock();
    loop {
        while !st.bg_scheduled && !db.shutting_down.load(Ordering::Acquire) {
            match st.bg_paused.as_ref().and_then(|p| p.retry_at) {
                Some(at) if Instant::now() >= at => retry_paused(db, &mut st),
                Some(at) => {
                    let left = at.saturating_duration_since(Instant::now());
                    st = db.wait_timeout(&db.bg_cv, st, left);
                }
                None => st = db.wait(&db.bg_cv, st),
            }
        }
        if db.shutting_down.load(Ordering::Acquire) {
            break;
        }
        if st.bg_error.is_none() {
            st = background_work(db, st);
        }
        st.bg_scheduled = false;
        maybe_schedule(db, &mut st);
        db.bg_cv.notify_all();
    }
    st.bg_scheduled = false;
    db.bg_cv.notify_all();
}

/// Asks the background thread to run if there is work for it.
pub(super) fn maybe_schedule(db: &DbInner, st: &mut State) {
    if st.bg_scheduled || st.bg_error.is_some() || db.shutting_down.load(Ordering::Acquire) {
        return;
    }
    if let Some(p) = &st.bg_paused {
        // A paused compaction does not hold back a flush: a memtable may fit where a
        // compaction's outputs did not. Nothing else runs before the retry.
        if p.step == Step::Compaction && st.imm.is_some() {
            st.bg_scheduled = true;
            db.bg_cv.notify_all();
        }
        return;
    }
    let v = st.versions.current();
    let seek_due = v
        .file_to_compact
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .is_some();
    let manual_due = st.manual.as_ref().is_some_and(|m| !m.done);
    if st.imm.is_some() || manual_due || v.compaction_score >= 1.0 || seek_due {
        st.bg_scheduled = true;
        db.bg_cv.notify_all();
    }
}

fn background_work<'a>(db: &'a DbInner, mut st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
    if st.imm.is_some() {
        return compact_memtable(db, st, false);
    }
    if st.bg_paused.is_some() {
        return st; // only the flush above runs while a compaction is paused
    }
    let max_file_size = db.options.max_file_size as u64;
    let version = st.versions.current();
    let manual = st
        .manual
        .as_ref()
        .filter(|m| !m.done)
        .map(|m| (m.level, m.begin.clone(), m.end.clone()));
    let compaction = match &manual {
        Some((level, begin, end)) => range_compaction(
            &version,
            *level,
            begin.as_deref(),
            end.as_deref(),
            max_file_size,
        ),
        None => pick_compaction(&version, &st.versions.compact_pointers, max_file_size),
    };
    let Some(mut c) = compaction else {
        if let Some(m) = st.manual.as_mut() {
            m.done = true;
        }
        return st;
    };
    // What a manual compaction has covered, to resume after it if the range was cut.
    let covered_to = c.inputs[0]
        .last()
        .map(|f| key::user_key(&f.largest).to_vec());
    let cut = manual.is_some()
        && version
            .overlapping_inputs(
                c.level,
                manual.as_ref().and_then(|m| m.1.as_deref()),
                manual.as_ref().and_then(|m| m.2.as_deref()),
            )
            .len()
            > c.inputs[0].len();
    // The compaction holds the version it needs; this handle would keep its inputs
    // "live" past the compaction, so the deletion below could not remove them.
    drop(version);

    if manual.is_none() && c.is_trivial_move() {
        let f = Arc::clone(&c.inputs[0][0]);
        c.edit.deleted_files.insert((c.level, f.number));
        c.edit.new_files.push((
            c.level + 1,
            FileMetaData {
                number: f.number,
                size: f.size,
                smallest: f.smallest.clone(),
                largest: f.largest.clone(),
            },
        ));
        let applied;
        (st, applied) = apply_edit(db, st, &mut c.edit);
        if let Err(e) = applied {
            record_error(&mut st, e);
        }
    } else {
        let failed;
        (st, failed) = run_compaction(db, st, c);
        delete_obsolete_files(db, &mut st);
        if let Some(e) = failed {
            // A manual compaction reports its own failure: a pause may have cleared by
            // the time its caller looks.
            if manual.is_some()
                && let Some(m) = st.manual.as_mut()
            {
                m.done = true;
                m.error = Some(e);
            }
            return st;
        }
    }
    if manual.is_some()
        && let Some(m) = st.manual.as_mut()
    {
        match (cut, covered_to) {
            (true, Some(k)) => m.begin = Some(k),
            _ => m.done = true,
        }
    }
    st
}

/// `log_and_apply` with the state mutex released while the manifest is appended and
/// synced: readers and writers go on meanwhile. Sound because only the background thread
/// edits the version set while the database is open (V4), so nothing installs a version
/// between the edit's preparation and its installation.
fn apply_edit<'a>(
    db: &'a DbInner,
    mut st: MutexGuard<'a, State>,
    edit: &mut VersionEdit,
) -> (MutexGuard<'a, State>, Result<()>) {
    let mut pending = match st.versions.prepare_edit(edit) {
        Ok(p) => p,
        Err(e) => return (st, Err(e)),
    };
    drop(st);
    let written = pending.write();
    st = db.lock();
    let applied = st.versions.finish_edit(pending, written);
    (st, applied)
}

fn record_error(st: &mut State, e: Error) {
    if st.bg_error.is_none() {
        st.bg_error = Some(e);
    }
}

/// A failed background step, and whether running it again can succeed (C7).
enum Failure {
    /// Nothing the manifest names changed and the step's outputs are gone: it can run
    /// again once the cause (most often a full disk) is gone.
    Retry(Error),
    /// The state on disk is in doubt (a manifest write or directory sync failed) or the
    /// input is damaged: final until the database is reopened.
    Stop(Error),
}

impl Failure {
    /// Sorts an error from writing new tables: I/O errors can pass, the rest cannot.
    fn of_table_write(e: Error) -> Failure {
        match e {
            Error::Io { .. } => Failure::Retry(e),
            other => Failure::Stop(other),
        }
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

fn record_failure(db: &DbInner, st: &mut State, f: Failure, step: Step) {
    match f {
        Failure::Stop(e) => record_error(st, e),
        Failure::Retry(e) => {
            if st.bg_error.is_some() || st.bg_paused.as_ref().is_some_and(|p| p.step == Step::Flush)
            {
                return; // a paused flush is what holds writers back: keep it
            }
            let interval = db.options.background_retry_interval;
            // Zero, or too long to represent: only `Db::resume` retries.
            let retry_at = if interval > Duration::ZERO {
                Instant::now().checked_add(interval)
            } else {
                None
            };
            // A disk that stays bad would otherwise add a line to `LOG` at every retry.
            st.bg_pause_streak += 1;
            if st.bg_pause_streak.is_power_of_two() {
                super::recover::info_log(
                    db.env.as_ref(),
                    &db.dir,
                    &format!(
                        "background {step:?} paused ({} in a row), retry in {interval:?}: {e}",
                        st.bg_pause_streak
                    ),
                );
            }
            st.bg_paused = Some(Paused {
                error: e,
                step,
                retry_at,
            });
        }
    }
}

/// Flushes the immutable memtable to a table and drops the WAL it came from. During a
/// compaction (`level0_only`) the table goes to level 0: the compaction's outputs are not
/// in the version yet, and a deeper placement could land beside them.
fn compact_memtable<'a>(
    db: &'a DbInner,
    mut st: MutexGuard<'a, State>,
    level0_only: bool,
) -> MutexGuard<'a, State> {
    if st.bg_error.is_some() {
        return st;
    }
    let Some(imm) = st.imm.clone() else { return st };
    let base = st.versions.current();
    let number = st.versions.new_file_number();
    st.pending_outputs.insert(number);
    drop(st);
    let started = Instant::now();
    let built = write_table_from(db, &imm, number)
        .map_err(Failure::of_table_write)
        .and_then(|meta| {
            if meta.is_some() {
                sync_new_table(db, number).map_err(Failure::Stop)?;
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
    // The flushed memtable's WAL is no longer needed: the live one is.
    edit.log_number = Some(st.log_file_number);
    edit.prev_log_number = Some(0);
    let applied;
    (st, applied) = apply_edit(db, st, &mut edit);
    match applied {
        Ok(()) => {
            st.imm = None;
            db.has_imm.store(false, Ordering::Release);
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
    keep: &mut dyn FnMut(&[u8]) -> bool,
    max_bytes: u64,
) -> Result<Option<FileMetaData>> {
    let result = (|| {
        let mut builder = TableBuilder::new(env.new_writable(path)?, options);
        let (mut smallest, mut largest) = (Vec::new(), Vec::new());
        while it.valid() && builder.file_size() < max_bytes {
            if keep(it.key()) {
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
        }))
    })();
    if !matches!(result, Ok(Some(_))) {
        let _ = env.remove_file(path);
    }
    result
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
        &mut |_| true,
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
fn discard_table(db: &DbInner, number: u64) {
    db.table_cache.evict(number);
    let _ = db.env.remove_file(&db.table_path(number));
}

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
fn run_compaction<'a>(
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
            (st, applied) = apply_edit(db, st, &mut c.edit);
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
                children.push(Box::new(
                    db.table_cache.iter(f.number, f.size, true, false)?,
                ));
            }
        } else if !files.is_empty() {
            children.push(Box::new(LevelIter::new(
                files.clone(),
                Arc::clone(&db.table_cache),
                true,
                false,
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
    let mut current_user_key: Option<Vec<u8>> = None;
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
        if current_user_key.as_deref() != Some(parsed.user_key) {
            current_user_key = Some(parsed.user_key.to_vec());
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

/// Deletes files no live version, pending output or needed log names (D4).
pub(super) fn delete_obsolete_files(db: &DbInner, st: &mut State) {
    if st.bg_error.is_some() {
        return; // the state on disk is in doubt: keep everything
    }
    let live = st.versions.live_files();
    let Ok(names) = db.env.children(&db.dir) else {
        return;
    };
    for name in names {
        let keep = match filename::parse(&name) {
            Some(Kind::Log(n)) => {
                n >= st.versions.log_number
                    || n == st.versions.prev_log_number
                    || n == st.log_file_number
            }
            Some(Kind::Manifest(n)) => n >= st.versions.manifest_number,
            Some(Kind::Table(n)) => live.contains(&n) || st.pending_outputs.contains(&n),
            Some(Kind::Temp(n)) => st.pending_outputs.contains(&n),
            Some(Kind::Current | Kind::Lock | Kind::InfoLog) | None => true,
        };
        if !keep {
            if let Some(Kind::Table(n)) = filename::parse(&name) {
                db.table_cache.evict(n);
            }
            let _ = db.env.remove_file(&db.dir.join(&name));
        }
    }
}

/// `Db::flush`: switches to a new memtable and waits until the old one is a table.
pub(super) fn flush(db: &DbInner) -> Result<()> {
    write::write(db, None, false)?;
    let mut st = db.lock();
    while st.imm.is_some() && st.bg_error.is_none() && pause_blocking_writes(&st).is_none() {
        maybe_schedule(db, &mut st);
        st = db.wait(&db.bg_cv, st);
    }
    // A compaction that failed after the flush is not this call's failure.
    match st.imm.as_ref().and_then(|_| background_failure(&st)) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `Db::compact_range`: flush, then compact each level holding data in the range.
pub(super) fn compact_range(db: &DbInner, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
    flush(db)?;
    let max_level = {
        let st = db.lock();
        let v = st.versions.current();
        (1..NUM_LEVELS)
            .filter(|&l| v.overlaps(l, begin, end))
            .max()
            .unwrap_or(1)
    };
    for level in 0..max_level {
        let mut st = db.lock();
        while st.manual.is_some() {
            st = db.wait(&db.bg_cv, st);
        }
        st.manual = Some(ManualCompaction {
            level,
            begin: begin.map(<[u8]>::to_vec),
            end: end.map(<[u8]>::to_vec),
            done: false,
            error: None,
        });
        // Wait until it is done, or nothing will run it: the background thread is idle
        // and stopped, paused or closing. (Leaving while it runs could let the next
        // request take this one's result.)
        loop {
            if st.manual.as_ref().is_none_or(|m| m.done) {
                break;
            }
            if !st.bg_scheduled {
                if st.bg_error.is_some()
                    || st.bg_paused.is_some()
                    || db.shutting_down.load(Ordering::Acquire)
                {
                    break;
                }
                maybe_schedule(db, &mut st);
            }
            st = db.wait(&db.bg_cv, st);
        }
        let request = st.manual.take();
        db.bg_cv.notify_all();
        match request {
            Some(ManualCompaction { error: Some(e), .. }) => return Err(e),
            Some(ManualCompaction { done: true, .. }) => {}
            _ => {
                return Err(background_failure(&st)
                    .unwrap_or_else(|| Error::InvalidArgument("database is closing".into())));
            }
        }
    }
    Ok(())
}

/// The pause a write that waits for room would wait on forever (D5): with a memtable
/// waiting for its flush, only a paused flush (a paused compaction lets flushes run);
/// otherwise (level 0 at its stop trigger) any pause.
pub(super) fn pause_blocking_writes(st: &State) -> Option<&Paused> {
    st.bg_paused
        .as_ref()
        .filter(|p| st.imm.is_none() || p.step == Step::Flush)
}

/// Clears a pause and schedules the paused work again.
fn retry_paused(db: &DbInner, st: &mut State) {
    if st.bg_paused.take().is_some() {
        st.bg_retries += 1;
    }
    maybe_schedule(db, st);
}

/// The final error, or else the error of the paused step, if any.
fn background_failure(st: &State) -> Option<Error> {
    st.bg_error
        .clone()
        .or_else(|| st.bg_paused.as_ref().map(|p| p.error.clone()))
}

/// `Db::resume`: runs paused background work now and waits until the background thread
/// is idle or fails again.
pub(super) fn resume(db: &DbInner) -> Result<()> {
    let mut st = db.lock();
    if let Some(e) = &st.bg_error {
        return Err(e.clone());
    }
    retry_paused(db, &mut st);
    while st.bg_scheduled
        && st.bg_error.is_none()
        && st.bg_paused.is_none()
        && !db.shutting_down.load(Ordering::Acquire)
    {
        st = db.wait(&db.bg_cv, st);
    }
    match background_failure(&st) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
