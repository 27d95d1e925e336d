//! What a user asks of the background work and waits for: `Db::flush`,
//! `Db::compact_range` and `Db::resume`.

use std::sync::atomic::Ordering;

use super::background::{maybe_schedule, retry_paused};
use super::failure::{background_failure, pause_blocking_writes};
use super::state::{DbInner, ManualCompaction};
use super::write;
use crate::error::{Error, Result};
use crate::version::NUM_LEVELS;

/// `Db::flush`: switches to a new memtable and waits until the old one is a table.
pub(super) fn flush(db: &DbInner) -> Result<()> {
    write::write(db, None, false)?;
    let mut st = db.lock();
    while !st.imm.is_empty() && st.bg_error.is_none() && pause_blocking_writes(&st).is_none() {
        maybe_schedule(db, &mut st);
        st = db.wait(&db.bg_cv, st);
    }
    // A compaction that failed after the flush is not this call's failure.
    match (!st.imm.is_empty())
        .then(|| background_failure(&st))
        .flatten()
    {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `Db::compact_range`: flush, then compact each level holding data in the range. While
/// blob files exist, the deepest level holding data is then compacted into itself, so
/// that every ref in the range passes through a compaction: one that inlines values (the
/// threshold off or raised) or moves them out of collectable blob files (`blob_gc.rs`);
/// other values stay where they are.
pub(super) fn compact_range(db: &DbInner, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
    flush(db)?;
    let (max_level, blobs) = {
        let st = db.lock();
        let v = st.versions.current();
        let deepest = (1..NUM_LEVELS)
            .filter(|&l| v.overlaps(l, begin, end))
            .max()
            .unwrap_or(1);
        (deepest, !v.blob_files.is_empty())
    };
    let steps = (0..max_level)
        .map(|l| (l, false))
        .chain(blobs.then_some((max_level, true)));
    for (level, in_place) in steps {
        let mut st = db.lock();
        while st.manual.is_some() {
            st = db.wait(&db.bg_cv, st);
        }
        st.manual = Some(ManualCompaction {
            level,
            in_place,
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

/// `Db::resume`: runs paused background work now and waits until the background thread
/// is idle or fails again. Work already running when it is called (a timed retry, say)
/// started before the caller fixed the cause, so it is waited for first: its failure is
/// not this call's, and what it paused is retried.
pub(super) fn resume(db: &DbInner) -> Result<()> {
    if db.read_only {
        return Err(write::read_only_error(&db.dir));
    }
    let mut st = db.lock();
    while st.bg_scheduled && st.bg_error.is_none() && !db.shutting_down.load(Ordering::Acquire) {
        st = db.wait(&db.bg_cv, st);
    }
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
