//! The write path: writers queue up; the one at the front (the leader) takes a group of
//! queued batches, appends them to the WAL as one record (one fsync if any asked for
//! sync), inserts them into the memtable, publishes their seqnums, and wakes the others.
//!
//! Each writer sleeps on its own condition variable, and only when it must: a queued
//! writer first waits awake a little (at most [`SPIN`], and only while no more writers
//! are queued than there are cores) for the leader's signal, and a leader signals the
//! members of its group and the next leader, waking only those that are asleep. So a
//! writer alone never makes a wake-up system call, and two or three writers hand off
//! without one. A leader done with its own group goes on to lead the groups queued
//! behind it (at most [`EXTRA_GROUPS`], while their writers are unsynced), so under a
//! steady stream of writes the queue moves without waiting for a next leader to wake.
//!
//! Invariants:
//! - W4 a synced write is acknowledged only after every older log still open is synced
//!   (a switch leaves the old log unsynced; the first synced write after it pays).
//! - W5 a synced write is acknowledged only after its log's directory entry is durable
//!   (a switch creates the new log without syncing the directory, which would put a
//!   directory fsync in the writer's way at every switch; the first synced write to the
//!   log pays, as for a blob file). An unsynced write may be lost with its log's entry
//!   in a power cut, as it may anyway; replay stops at the gap it leaves (C3).
//! - W6 one leader at a time (D1): the writer at the front of the queue leads only while
//!   `State::leading` is clear; a leader sets it on taking the lead, may commit further
//!   groups for the writers queued behind its own (handing each its outcome), and clears
//!   it and wakes the writer then at the front in one critical section.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::blob_sync::{lock_blob, sync_blob};
use super::conflicts::ReadSet;
use super::state::{DbInner, State, Writer};
use super::{background, failure, range_delete};
use crate::batch::{BatchOp, WriteBatch};
use crate::blob::BlobWriter;
use crate::error::Result;
use crate::filename;
use crate::log::LogWriter;

/// The write-ahead log as the state holds it.
type Log = LogWriter<dyn crate::env::WritableFile>;

/// Largest group the leader builds, in encoded bytes.
const MAX_GROUP_BYTES: usize = 1 << 20;

fn outcome(w: &Writer) -> Option<Result<()>> {
    w.outcome.lock().unwrap_or_else(|p| p.into_inner()).take()
}

fn finish(w: &Writer, r: Result<()>) {
    *w.outcome.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
}

/// Signals `w` (it has its outcome or leads now), and wakes it if it sleeps. Requires: the
/// state mutex is held (it guards `waiting`). A writer that spins sees `signalled`
/// without a system call on either side.
fn wake(w: &Writer) {
    w.signalled.store(true, Ordering::Release);
    if w.waiting.load(Ordering::Relaxed) {
        w.cv.notify_one();
    }
}

/// How long a queued writer waits for its signal awake before it sleeps: about what a
/// leader takes to commit a group of small writes. Spinning saves the sleep and the
/// wake-up (two system calls and a context switch) whenever the leader is that quick.
const SPIN: Duration = Duration::from_micros(50);

/// The CPUs this process may run on (1 if unknown), read once.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Waits awake, at most [`SPIN`], for `w.signalled`: a few pause instructions, then
/// yielding the CPU (with more writers than cores, the leader may need this one).
fn spin_for_signal(w: &Writer) {
    let started = Instant::now();
    for i in 0u32.. {
        if w.signalled.load(Ordering::Acquire) {
            return;
        }
        if i < 64 {
            std::hint::spin_loop();
        } else if started.elapsed() >= SPIN {
            return;
        } else {
            std::thread::yield_now();
        }
    }
}

/// Writes `batch` (or, with `None`, forces a memtable switch) and returns when it is in
/// the memtable (and, with `sync`, durable): queue up, and either get the outcome a
/// leader gave or become the leader, make room, commit the group, hand out its outcome.
pub(super) fn write(db: &DbInner, batch: Option<WriteBatch>, sync: bool) -> Result<()> {
    write_checked(db, batch, sync, None)
}

/// [`write`] of a transaction's batch: written only if `check` passes (TX2), in commit
/// order, when the batch's turn comes; `Error::Conflict` otherwise, with nothing written.
/// Either way the transaction's registration (at `check.snapshot`) ends here.
pub(super) fn write_checked(
    db: &DbInner,
    batch: Option<WriteBatch>,
    sync: bool,
    check: Option<ReadSet>,
) -> Result<()> {
    if db.read_only {
        if let Some(check) = &check {
            db.lock().conflicts.end(check.snapshot);
        }
        return Err(read_only_error(&db.dir));
    }
    let force = batch.is_none();
    let me = Arc::new(Writer {
        batch: Mutex::new(batch),
        is_switch: force,
        check,
        sync,
        outcome: Mutex::new(None),
        cv: Condvar::new(),
        waiting: AtomicBool::new(false),
        signalled: AtomicBool::new(false),
    });
    let mut st = match wait_to_lead(db, &me) {
        Ok(st) => st,
        Err(outcome) => return outcome,
    };
    st.leading = true;
    // The leader's own batch: nobody else reads it once it leads (`build_group` reads the
    // writers behind the leader only).
    let own = me.batch.lock().unwrap_or_else(|p| p.into_inner()).take();
    let (mut st, result, group_size) = lead(db, st, &me, own);
    hand_out(&mut st, Some(&me), group_size, &result);
    // W6: lead the queue's next groups too, rather than wake a next leader and wait for it
    // to run (a wake-up and a context switch in which nothing commits).
    for _ in 0..EXTRA_GROUPS {
        let Some(head) = st
            .writers
            .front()
            .filter(|w| !w.sync && !w.is_switch)
            .cloned()
        else {
            break;
        };
        let own = head.batch.lock().unwrap_or_else(|p| p.into_inner()).take();
        let (guard, r, n) = lead(db, st, &head, own);
        st = guard;
        hand_out(&mut st, None, n, &r);
    }
    st.leading = false;
    if let Some(next) = st.writers.front() {
        wake(next);
    }
    result
}

/// Most groups a leader commits for the queue after its own (W6): each adds to its own
/// caller's wait (a group of small writes takes a few microseconds).
const EXTRA_GROUPS: usize = 16;

/// Commits the group `head` heads (the front of the queue, its batch `own` taken out):
/// range deletes expanded, room made, the group written. Returns the guard, the group's
/// outcome and how many writers it covers.
#[inline]
fn lead<'a>(
    db: &'a DbInner,
    st: MutexGuard<'a, State>,
    head: &Writer,
    own: Option<WriteBatch>,
) -> (MutexGuard<'a, State>, Result<()>, usize) {
    let force = head.is_switch;
    let (st, own) = match expand_ranges(db, st, own) {
        (st, Ok(own)) => (st, own),
        (st, Err(e)) => return (st, Err(e), 1),
    };
    let (st, room) = make_room_for_write(db, st, force);
    if room.is_ok() && !force {
        commit_group(db, st, head, own.unwrap_or_default())
    } else {
        (st, room, 1)
    }
}

/// Expands the leader's range deletes into per-key deletes (`range_delete.rs`), with the
/// state mutex released, while the leader leads (RD1).
fn expand_ranges<'a>(
    db: &'a DbInner,
    st: MutexGuard<'a, State>,
    own: Option<WriteBatch>,
) -> (MutexGuard<'a, State>, Result<Option<WriteBatch>>) {
    let batch = match own {
        Some(b) if b.has_ranges() => b,
        other => return (st, Ok(other)),
    };
    drop(st);
    let result = range_delete::expand(db, batch).map(Some);
    (db.lock(), result)
}

/// Queues `me` and waits until it leads (the state guard) or a leader has written its
/// batch (`Err` with that outcome).
#[inline]
fn wait_to_lead<'a>(
    db: &'a DbInner,
    me: &Arc<Writer>,
) -> std::result::Result<MutexGuard<'a, State>, Result<()>> {
    let mut st = db.lock();
    st.writers.push_back(Arc::clone(me));
    // With more writers queued than cores, spinning takes CPU the leader needs: sleep.
    let mut spun = st.writers.len() > cores();
    loop {
        // A writer at the front has no outcome yet: a leader hands one out only to the
        // writers it takes off the queue.
        if !st.leading && st.writers.front().is_some_and(|f| Arc::ptr_eq(f, me)) {
            return Ok(st);
        }
        if let Some(r) = outcome(me) {
            return Err(r);
        }
        if !spun {
            // Awake first, without the mutex: the leader's signal needs no wake-up.
            spun = true;
            drop(st);
            spin_for_signal(me);
            st = db.lock();
            continue;
        }
        me.waiting.store(true, Ordering::Relaxed);
        st = db.wait(&me.cv, st);
        me.waiting.store(false, Ordering::Relaxed);
    }
}

/// The leader's work: groups the queued batches after its own, appends them to the WAL
/// as one record (synced if the leader asked; older logs and blob files first, W4) with
/// the state mutex released, inserts them into the memtable and publishes their
/// seqnums (D2). Returns the guard, the group's outcome and how many writers it covers.
#[inline]
fn commit_group<'a>(
    db: &'a DbInner,
    mut st: MutexGuard<'a, State>,
    me: &Writer,
    own: WriteBatch,
) -> (MutexGuard<'a, State>, Result<()>, usize) {
    // TX2: a transaction that leads is checked first; if it fails, it alone is answered.
    if let Some(check) = &me.check
        && let Err(e) = st.conflicts.check(check, &[], db.table_cache.order())
    {
        return (st, Err(e), 1);
    }
    let (mut group, members) = build_group(db, &st, own);
    let group_sync = me.sync;
    let first = st.versions.last_seqnum + 1;
    group.set_seqnum(first);
    let last = first + u64::from(group.len()) - 1;
    let mut log = st.log.take();
    let mut blob = st.blob.take();
    let blob_number = st.log_file_number;
    // W4: a synced write is acknowledged only once every older log is synced too.
    let (older, older_blobs) = if group_sync {
        (
            std::mem::take(&mut st.unsynced_logs),
            st.older_blobs.clone(),
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let mem = Arc::clone(&st.mem);
    // W5: the log's directory entry, once, before the first synced write is acknowledged.
    let sync_dir = group_sync && !st.log_dir_synced;
    drop(st);

    // D1: nobody else touches the WAL (or its blob file) or inserts into the memtable
    // meanwhile. X1: blob records are handed to their file (and synced, for a synced
    // group) before the WAL record that refers to them.
    let mut separated = (0, 0);
    let logged = sync_older_blobs(db, older_blobs)
        .and_then(|()| sync_older_logs(older))
        .and_then(|()| {
            if sync_dir {
                db.env.sync_dir(&db.dir)
            } else {
                Ok(())
            }
        })
        .and_then(|()| {
            separated = separate_values(db, &mut group, &mut blob, blob_number)?;
            match blob.as_mut() {
                Some(b) if group_sync => sync_blob(db, b),
                _ => Ok(()),
            }
        })
        .and_then(|()| match log.as_mut() {
            Some(l) => l
                .add_record(group.as_bytes())
                .and_then(|()| if group_sync { l.sync() } else { Ok(()) }),
            None => Err(crate::Error::InvalidArgument(
                "no write-ahead log is open".into(),
            )),
        });
    let result = if logged.is_ok() {
        mem.insert_batch(&group)
    } else {
        logged.clone()
    };

    let mut st = db.lock();
    st.log = log;
    st.blob = blob;
    if sync_dir && logged.is_ok() {
        st.log_dir_synced = true;
    }
    if separated.0 > 0 && logged.is_ok() {
        let c = st.blob_counts.entry(blob_number).or_default();
        c.0 += separated.0;
        c.1 += separated.1;
    }
    match logged {
        // D3: the WAL may now hold a partial record; no later write may follow it.
        Err(e) => {
            if st.bg_error.is_none() {
                st.bg_error = Some(e);
            }
        }
        Ok(()) if result.is_ok() => {
            st.versions.last_seqnum = last; // D2
            // TX1: the group's own transactions end in this critical section
            // (`hand_out`, under the same guard): only others need its records.
            let ending = st
                .writers
                .iter()
                .take(members)
                .filter(|w| w.check.is_some())
                .count();
            if st.conflicts.tracking_beyond(ending) {
                record_writes(&mut st, &group, first);
            }
        }
        // Logged but not in the memtable: seqnums would be reused. Stop writing.
        Ok(()) => {
            if st.bg_error.is_none() {
                st.bg_error = result.clone().err();
            }
        }
    }
    (st, result, members)
}

/// Hands `result` to every member of the group at the queue's front (`group_size`
/// writers), and signals and wakes each but `me` (the leader's own writer, which returns
/// the outcome itself).
#[inline]
fn hand_out(st: &mut State, me: Option<&Arc<Writer>>, group_size: usize, result: &Result<()>) {
    for _ in 0..group_size {
        let Some(w) = st.writers.pop_front() else {
            break;
        };
        // A transaction's registration ends with its commit (TX3: after its check), here,
        // under the mutex the hand-out holds anyway.
        if let Some(check) = &w.check {
            st.conflicts.end(check.snapshot);
        }
        if !me.is_some_and(|me| Arc::ptr_eq(&w, me)) {
            finish(&w, result.clone());
            wake(&w);
        }
    }
}

/// Records the writes of a published group (TX1): its ops hold seqnums `first` on.
fn record_writes(st: &mut State, group: &WriteBatch, first: u64) {
    // The group was decoded whole before it was written (B1): no op is an error here.
    for (i, op) in group.iter().enumerate() {
        if let Ok(op) = op {
            st.conflicts.record(op.key(), first + i as u64);
        }
    }
}

/// The keys `group` writes, for checking a transaction behind them in it (TX2).
fn written_keys(group: &WriteBatch) -> Vec<&[u8]> {
    group
        .iter()
        .filter_map(|op| op.ok().map(|op| op.key()))
        .collect()
}

/// Adds to the leader's batch as many queued batches after it as fit: no more than
/// `MAX_GROUP_BYTES`, no sync batch joining a non-sync leader, no memtable-switch request,
/// no transaction whose check fails against what is recorded and what the group writes
/// ahead of it (it leads later and fails alone, TX2). Returns the group and how many
/// writers it covers.
fn build_group(db: &DbInner, st: &State, mut group: WriteBatch) -> (WriteBatch, usize) {
    let mut writers = st.writers.iter();
    let Some(leader) = writers.next() else {
        return (group, 0);
    };
    let first_size = group.approximate_size();
    // A small first write is not held back by a large group.
    let max = if first_size <= 128 << 10 {
        first_size + (128 << 10)
    } else {
        MAX_GROUP_BYTES
    };
    let mut members = 1;
    for w in writers {
        if w.is_switch || (w.sync && !leader.sync) {
            break;
        }
        let b = w.batch.lock().unwrap_or_else(|p| p.into_inner());
        // A batch with range deletes is expanded when it leads, and written alone.
        let Some(b) = b.as_ref().filter(|b| !b.has_ranges()) else {
            break;
        };
        if group.approximate_size() + b.approximate_size() > max {
            break;
        }
        if let Some(check) = &w.check
            && st
                .conflicts
                .check(check, &written_keys(&group), db.table_cache.order())
                .is_err()
        {
            break;
        }
        group.append(b);
        members += 1;
    }
    (group, members)
}

/// Makes sure the memtable has room: delays writes while level 0 is filling, waits while
/// a flush or level 0 is behind, and switches to a new memtable and WAL when full.
pub(super) fn make_room_for_write<'a>(
    db: &'a DbInner,
    mut st: MutexGuard<'a, State>,
    mut force: bool,
) -> (MutexGuard<'a, State>, Result<()>) {
    let mut allow_delay = !force;
    let mut stopped = false;
    loop {
        if let Some(e) = &st.bg_error {
            let e = e.clone();
            return (st, Err(e));
        }
        let level0 = st.versions.level_len(0);
        if allow_delay && level0 >= db.options.level0_slowdown_writes_trigger {
            // Level 0 is filling: give the compaction some CPU, once per write.
            let started = Instant::now();
            drop(st);
            std::thread::sleep(Duration::from_millis(1));
            st = db.lock();
            st.slowdowns += 1;
            st.stall_micros += started.elapsed().as_micros() as u64;
            allow_delay = false;
        } else if !force
            && (st.mem.approximate_memory_usage()
                + st.blob.as_ref().map_or(0, |b| b.size() as usize)
                <= db.options.write_buffer_size
                || st.mem.is_empty())
        {
            // Room left (an empty memtable always has room: switching it would free none).
            return (st, Ok(()));
        } else if st.imm.len() + 1 >= db.options.max_write_buffer_number
            || level0 >= db.options.level0_stop_writes_trigger
        {
            // As many full memtables wait for their flush as the options allow, or level
            // 0 is full.
            // D5: if the work this write waits for is paused, do not wait for it.
            if let Some(p) = failure::pause_blocking_writes(&st) {
                let e = p.error.clone();
                return (st, Err(e));
            }
            let started = Instant::now();
            if !stopped {
                st.stops += 1; // one stall, however many wake-ups it takes
                stopped = true;
            }
            background::maybe_schedule(db, &mut st);
            st = db.wait(&db.bg_cv, st);
            st.stall_micros += started.elapsed().as_micros() as u64;
        } else {
            let (guard, switched) = switch_memtable(db, st);
            st = guard;
            if let Err(e) = switched {
                return (st, Err(e));
            }
            force = false;
        }
    }
}

/// Freezes the full memtable (queued for its flush) and starts a new one with a new WAL.
/// Only the leader touches the WAL (D1), so the file work runs without the state mutex:
/// readers and the background thread go on meanwhile. A failed switch is final (latched
/// in `bg_error`).
fn switch_memtable<'a>(
    db: &'a DbInner,
    mut st: MutexGuard<'a, State>,
) -> (MutexGuard<'a, State>, Result<()>) {
    let number = st.versions.new_file_number();
    let old = st.log.take();
    let old_number = st.log_file_number;
    // Older logs whose memtables are flushed hold nothing anyone needs: closed here
    // without a sync, outside the mutex.
    let needed = st.versions.log_number;
    let (obsolete, kept) = std::mem::take(&mut st.unsynced_logs)
        .into_iter()
        .partition(|(n, _)| *n < needed);
    st.unsynced_logs = kept;
    let (obsolete_blobs, kept_blobs) = std::mem::take(&mut st.older_blobs)
        .into_iter()
        .partition(|(n, _)| *n < needed);
    st.older_blobs = kept_blobs;
    let sealed = st.blob.take().map(|b| {
        let number = b.number();
        db.blobs.seal(number);
        // Flushed after its last group (X1).
        let shared = Arc::new(Mutex::new(b));
        st.older_blobs.push((number, Arc::clone(&shared)));
        shared
    });
    drop(st);
    if let Some(b) = sealed {
        lock_blob(&b).seal();
    }
    drop::<Vec<(u64, Log)>>(obsolete);
    drop::<Vec<(u64, super::state::SharedBlobWriter)>>(obsolete_blobs);
    let switched = switch_log(db, old, number);
    let mut st = db.lock();
    match switched {
        Ok((new, old)) => {
            if let Some(old) = old {
                st.unsynced_logs.push((old_number, old));
            }
            st.log = Some(new);
            st.log_file_number = number;
            st.log_dir_synced = false; // W5
            let full = std::mem::replace(&mut st.mem, Arc::new(db.new_memtable()));
            Arc::make_mut(&mut st.imm).push((old_number, full));
            db.has_imm.store(true, Ordering::Release);
            background::maybe_schedule(db, &mut st);
            (st, Ok(()))
        }
        Err((e, old)) => {
            // A failed write is final (never retried): latch it.
            st.log = old;
            st.bg_error = Some(e.clone());
            (st, Err(e))
        }
    }
}

/// Creates WAL `number` and hands back the new log and the old one. Neither the old WAL
/// nor the directory is synced here (LevelDB syncs neither): the first synced write after
/// the switch syncs both before it is acknowledged (W4, W5), and a flush usually makes
/// the old WAL obsolete before that. Its bytes are pushed to the kernel, so an
/// acknowledged write survives the process dying (C2). On failure the old WAL is handed
/// back and the new file removed.
fn switch_log(
    db: &DbInner,
    old: Option<Log>,
    number: u64,
) -> Result<(Log, Option<Log>), (crate::Error, Option<Log>)> {
    let mut old = old;
    if let Some(l) = old.as_mut() {
        if let Err(e) = l.file_mut().flush() {
            return Err((e, old));
        }
        l.file_mut().seal();
    }
    match db.new_log_file(number) {
        Ok(file) => Ok((LogWriter::new(file), old)),
        Err(e) => {
            let _ = db.env.remove_file(&filename::log(&db.dir, number));
            Err((e, old))
        }
    }
}

/// Value separation: moves the values of `group` at or above the blob threshold into the
/// WAL's blob file (made on first use), the group keeping refs in their place, and hands
/// the records to the file (X1). Returns the refs written and their record bytes.
fn separate_values(
    db: &DbInner,
    group: &mut WriteBatch,
    blob: &mut Option<BlobWriter>,
    blob_number: u64,
) -> Result<(u64, u64)> {
    let threshold = db.options.blob_threshold;
    if threshold == 0
        || !group
            .iter()
            .any(|op| matches!(op, Ok(BatchOp::Put(_, v)) if v.len() >= threshold))
    {
        return Ok((0, 0));
    }
    let writer = match blob {
        Some(w) => w,
        None => blob.insert(db.new_blob_writer(blob_number)?),
    };
    let mut out = WriteBatch::with_capacity(group.approximate_size().min(64 << 10));
    let (mut refs, mut bytes) = (0, 0);
    let mut encoded = Vec::with_capacity(crate::blob::BlobRef::MAX_ENCODED_LEN);
    for op in group.iter() {
        match op? {
            BatchOp::Put(k, v) if v.len() >= threshold => {
                let r = writer.add(k, v)?;
                refs += 1;
                bytes += u64::from(r.record_len);
                encoded.clear();
                r.encode_to(&mut encoded);
                out.put_blob_ref(k, &encoded);
            }
            BatchOp::Put(k, v) => out.put(k, v),
            BatchOp::Delete(k) => out.delete(k),
            BatchOp::BlobRef(k, r) => out.put_blob_ref(k, r),
        }
    }
    writer.flush()?;
    out.set_seqnum(group.seqnum());
    *group = out;
    Ok((refs, bytes))
}

/// Syncs the blob files of older logs (W4); their writers stay until a flush has named
/// the files and their logs are obsolete.
fn sync_older_blobs(db: &DbInner, older: Vec<(u64, super::state::SharedBlobWriter)>) -> Result<()> {
    for (_, b) in older {
        sync_blob(db, &mut lock_blob(&b))?;
    }
    Ok(())
}

/// The error of a write (or a flush, compaction or resume) asked of a database opened
/// read-only.
pub(super) fn read_only_error(dir: &std::path::Path) -> crate::error::Error {
    crate::error::Error::NotSupported(format!(
        "{}: opened read-only (Db::open_read_only); writes, flushes and compactions are refused",
        dir.display()
    ))
}

/// Syncs older logs that a switch left unsynced (W4), then closes them.
fn sync_older_logs(older: Vec<(u64, Log)>) -> Result<()> {
    for (_, mut l) in older {
        l.sync()?;
    }
    Ok(())
}
