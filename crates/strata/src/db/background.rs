//! The background thread's scheduler: it waits for work, then runs one step at a time, a
//! memtable flush first (`flush.rs`), else a compaction (`compaction_job.rs`) or a trivial
//! move, deletes what the step made obsolete (`obsolete.rs`), then wakes the hole thread
//! (`blob_holes.rs`). One thread per database;
//! it holds the state lock only to decide and to install results, never during table I/O.
//!
//! A failed step is either final or paused (`failure.rs`): a paused step runs again at its
//! retry time or at `Db::resume`.

use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::time::Instant;

use super::blob_holes::wake_hole_thread;
use super::compaction_job::run_compaction;
use super::failure::{Step, record_error};
use super::flush::flush_memtable;
use super::obsolete::delete_obsolete_files;
use super::state::{DbInner, State};
use crate::compaction::{in_place_compaction, pick_compaction, range_compaction};
use crate::key;

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
            wake_hole_thread(db, &mut st);
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
    if db.read_only
        || st.bg_scheduled
        || st.bg_error.is_some()
        || db.shutting_down.load(Ordering::Acquire)
    {
        return;
    }
    if let Some(p) = &st.bg_paused {
        // A paused compaction does not hold back a flush: a memtable may fit where a
        // compaction's outputs did not. Nothing else runs before the retry.
        if p.step == Step::Compaction && !st.imm.is_empty() {
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
    if !st.imm.is_empty() || manual_due || v.compaction_score >= 1.0 || seek_due {
        st.bg_scheduled = true;
        db.bg_cv.notify_all();
    }
}

fn background_work<'a>(db: &'a DbInner, mut st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
    if !st.imm.is_empty() {
        return flush_memtable(db, st, false);
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
        .map(|m| (m.level, m.begin.clone(), m.end.clone(), m.in_place));
    let compaction = match &manual {
        Some((level, begin, end, true)) => in_place_compaction(
            &version,
            *level,
            begin.as_deref(),
            end.as_deref(),
            max_file_size,
        ),
        Some((level, begin, end, false)) => range_compaction(
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
    let cut = manual.as_ref().is_some_and(|m| !m.3)
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

    let moves = match &manual {
        None => c.is_trivial_move(),
        Some(_) => c.is_plain_move(),
    };
    let failed = if moves {
        for f in &c.inputs[0] {
            c.edit.deleted_files.insert((c.level, f.number));
            c.edit.new_files.push((c.level + 1, f.to_meta_data()));
        }
        let applied;
        (st, applied) = db.apply_edit(st, &mut c.edit);
        match applied {
            Ok(()) => {
                st.table_moves += c.inputs[0].len() as u64;
                None
            }
            Err(e) => {
                record_error(&mut st, e.clone());
                Some(e)
            }
        }
    } else {
        let failed;
        (st, failed) = run_compaction(db, st, c);
        st = delete_obsolete_files(db, st);
        failed
    };
    if let Some(e) = failed {
        // A manual compaction reports its own failure: a pause may have cleared by the
        // time its caller looks.
        if manual.is_some()
            && let Some(m) = st.manual.as_mut()
        {
            m.done = true;
            m.error = Some(e);
        }
        return st;
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

/// Clears a pause and schedules the paused work again.
pub(super) fn retry_paused(db: &DbInner, st: &mut State) {
    if st.bg_paused.take().is_some() {
        st.bg_retries += 1;
    }
    maybe_schedule(db, st);
}
