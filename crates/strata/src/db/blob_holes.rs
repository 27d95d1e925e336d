//! Holes in blob files: the disk space of a garbage blob record given back where it lies
//! (`Options::blob_punch_holes`), so that overwritten large values stop taking space
//! without a compaction moving their file's live values (`blob_gc.rs`).
//!
//! A compaction lists where the records of the refs it dropped or rewrote lie; once its
//! edit is installed the list waits here (`State::holes`), tied to the versions live
//! before the install. After each background step the database's hole thread (`run`)
//! takes the lists no reader can reach any more and punches their holes
//! (`Env::punch_holes`) with the state lock released: only the whole filesystem blocks
//! inside a run of garbage records side by side, joined with the garbage of the same file
//! given to holes before (`State::blob_dead`), so a hole never touches a record something
//! may still read, and the block two dead neighbours share is freed too however far apart
//! they died (a file whose records all died then leaves its unlink few extents to free).
//! The hole thread is not the background thread because a hole is dear (about 130 µs
//! for a 100 KB record on this machine's ext4, more than writing the value): on the
//! background thread, holes held up the flushes writers wait for, and overwrites took
//! twice as long as fills.
//!
//! Invariant:
//! - X6 A blob record's bytes are punched only when nothing can read them: its ref was
//!   dropped or rewritten by a compaction whose edit is installed (no table the manifest
//!   names holds it), no version live before that install is still held (no iterator,
//!   lookup or snapshot reaches the ref through one: not only the compaction's inputs
//!   hold it, but every table a kept ref was copied from since it was written), no
//!   flushed memtable of the file's WAL is still held by a reader (a lookup may have
//!   found the ref there before it reached a table), and no view, read or scan holds the
//!   file's map (`BlobStore::in_use`: a `BlobView` handed out before the ref was dropped
//!   keeps its bytes; an iterator keeps the maps it read from, `blob/scan.rs`). A record
//!   that met these once stays unreadable (its ref never comes back; a view taken later
//!   cannot reach it), so a hole may span records that met them in earlier passes. A file with other hard links (a checkpoint's) is never punched
//!   (`Env::punch_holes`). Holes are recorded nowhere: after a crash a punched record may
//!   read whole or as zeros, and nothing reads it either way. What holes free or will is
//!   counted in memory from zero at each open (`State::blob_holed`, for garbage
//!   collection's choice; `State::blob_freed`, what was freed, for `strata.blob-files`);
//!   records still waiting when the database closes are left whole (their space comes
//!   back when their file is collected or dies).

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard, Weak};

use super::state::{DbInner, PendingHoles, State};
use crate::filename;
use crate::version::Version;

/// The filesystem block a hole frees whole (ext4's and XFS's usual size; a hole in a
/// larger block zeros the range without freeing it, still inside the record).
const BLOCK: u64 = 4096;

/// Whether a garbage record of `len` bytes is listed for a hole: one under a block
/// would seldom free anything (only beside other garbage records) and costs lock time
/// and a system call; its garbage waits for its file to be collected, as before holes
/// (1 KB values: overwrites 9 % slower when every record was listed).
pub(super) fn worth_a_hole(len: u32) -> bool {
    u64::from(len) >= BLOCK
}

/// At most this many records wait (16 bytes each); a compaction whose records would pass
/// it leaves them whole, their space back when their file is collected or dies.
const MAX_WAITING: usize = 1 << 20;

/// Queues the garbage records `ranges` of a compaction just installed; `versions` are the
/// versions live before its install.
pub(super) fn queue_holes(
    st: &mut State,
    versions: Vec<Weak<Version>>,
    ranges: BTreeMap<u64, Vec<(u64, u64)>>,
) {
    let mut p = PendingHoles { versions, ranges };
    if p.records() > 0 && waiting(st) + p.records() <= MAX_WAITING {
        for (file, ranges) in &mut p.ranges {
            // What the holes will free: records under a block free nothing.
            let freeable: u64 = holes(ranges).iter().map(|h| h.1).sum();
            *st.blob_holed.entry(*file).or_default() += freeable;
        }
        st.holes.push(p);
    }
}

/// Garbage records waiting for their holes.
pub(super) fn waiting(st: &State) -> usize {
    st.holes.iter().map(PendingHoles::records).sum()
}

/// The hole thread's loop: it waits until a background step says holes may be ready (or
/// the database closes), then punches those no reader can reach any more.
pub(super) fn run(db: &Arc<DbInner>) {
    let mut st = db.lock();
    loop {
        while !st.holes_due && !db.shutting_down.load(Ordering::Acquire) {
            st = db.wait(&db.holes_cv, st);
        }
        if db.shutting_down.load(Ordering::Acquire) {
            break;
        }
        st.holes_due = false;
        st = punch_ready_holes(db, st);
        st.hole_passes += 1;
    }
}

/// Tells the hole thread that holes may be ready (after a background step: a compaction
/// queued some, or a reader let go of what held others back).
pub(super) fn wake_hole_thread(db: &DbInner, st: &mut State) {
    if !st.holes.is_empty() {
        st.holes_due = true;
        db.holes_cv.notify_one();
    }
}

/// The whole `BLOCK`s inside the record at `offset` of `len` bytes, as (offset, length).
fn inner_blocks(offset: u64, len: u64) -> Option<(u64, u64)> {
    let start = offset.checked_next_multiple_of(BLOCK)?;
    let end = (offset.checked_add(len)? / BLOCK) * BLOCK;
    (end > start).then(|| (start, end - start))
}

/// The garbage records of one blob file that no reader can reach any more.
struct Ready {
    file: u64,
    /// Their holes: whole blocks, as (offset, length).
    holes: Vec<(u64, u64)>,
    /// Bytes of those blocks that earlier holes did not already free.
    fresh: u64,
    /// What `queue_holes` counted in `State::blob_holed` for these records (their own
    /// holes), taken back if the filesystem makes none.
    credited: u64,
}

/// Takes from `st.holes` the records no reader can reach any more (X6), per blob file;
/// what a reader may still reach stays queued.
fn take_ready(db: &DbInner, st: &mut State) -> Vec<Ready> {
    if st.holes.is_empty() {
        return Vec::new();
    }
    let named = st.versions.current();
    st.retired_mems.retain(|(_, m)| m.strong_count() > 0);
    let held: HashSet<u64> = st.retired_mems.iter().map(|(n, _)| *n).collect();
    let mut ready: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    let mut waiting = Vec::new();
    for p in std::mem::take(&mut st.holes) {
        if p.versions.iter().any(|v| v.strong_count() > 0) {
            waiting.push(p);
            continue;
        }
        let mut later = PendingHoles::default();
        for (file, ranges) in p.ranges {
            if !named.blob_files.contains_key(&file) {
                continue; // dead: deleted whole
            }
            if held.contains(&file) || db.blobs.in_use(file) {
                later.ranges.insert(file, ranges);
                continue;
            }
            ready.entry(file).or_default().extend(ranges);
        }
        if !later.ranges.is_empty() {
            waiting.push(later);
        }
    }
    st.holes = waiting;
    ready
        .into_iter()
        .map(|(file, mut records)| {
            let credited = holes(&mut records).iter().map(|h| h.1).sum();
            let dead = st.blob_dead.entry(file).or_default();
            let (holes, fresh) = join_dead(dead, &mut records);
            Ready {
                file,
                holes,
                fresh,
                credited,
            }
        })
        .collect()
}

/// Adds the garbage `records` (offset, length) of one file, which it sorts, to `dead`,
/// the file's garbage given to holes before (runs of records side by side, start -> end,
/// joined as they grow), and returns the holes to punch: the whole blocks inside each run
/// a record joined, and how many of those bytes earlier holes had not freed. A run's hole
/// covers the blocks its records share with each other, which no hole inside one record
/// could free: a file whose records all died then leaves few extents to its unlink. A
/// record already in `dead` is skipped.
fn join_dead(dead: &mut BTreeMap<u64, u64>, records: &mut [(u64, u64)]) -> (Vec<(u64, u64)>, u64) {
    records.sort_unstable();
    let (Some(&(lo, _)), Some(&(last, last_len))) = (records.first(), records.last()) else {
        return (Vec::new(), 0);
    };
    let hi = last.saturating_add(last_len);
    // The runs the new records may touch, as they were: what their holes freed already.
    let before: Vec<(u64, u64)> = dead
        .range(..lo)
        .next_back()
        .into_iter()
        .chain(dead.range(lo..=hi))
        .map(|(&s, &e)| (s, e))
        .collect();
    let mut joined = Vec::new();
    for &(offset, len) in records.iter() {
        let end = offset.saturating_add(len);
        let (mut start, mut stop) = (offset, end);
        if let Some((&s, &e)) = dead.range(..=offset).next_back() {
            if e > offset {
                continue; // already dead
            }
            if e == offset {
                start = s;
                dead.remove(&s);
            }
        }
        if let Some(e) = dead.remove(&end) {
            stop = e;
        }
        dead.insert(start, stop);
        joined.push(offset);
    }
    // Each run a record joined, once, with the blocks the runs inside it freed before.
    let mut runs: Vec<(u64, u64)> = joined
        .iter()
        .filter_map(|&o| dead.range(..=o).next_back().map(|(&s, &e)| (s, e)))
        .collect();
    runs.dedup();
    let mut holes = Vec::with_capacity(runs.len());
    let mut fresh = 0;
    for (s, e) in runs {
        let Some(hole) = inner_blocks(s, e - s) else {
            continue;
        };
        let freed_before: u64 = before
            .iter()
            .filter(|&&(bs, be)| bs >= s && be <= e)
            .filter_map(|&(bs, be)| inner_blocks(bs, be - bs))
            .map(|h| h.1)
            .sum();
        fresh += hole.1.saturating_sub(freed_before);
        holes.push(hole);
    }
    (holes, fresh)
}

/// The holes for garbage `records` (offset, length) of one file, which it sorts: records
/// side by side joined, then the whole blocks inside each run.
fn holes(records: &mut [(u64, u64)]) -> Vec<(u64, u64)> {
    records.sort_unstable();
    let mut runs: Vec<(u64, u64)> = Vec::with_capacity(records.len());
    for &(offset, len) in records.iter() {
        match runs.last_mut() {
            Some((o, l)) if *o + *l == offset => *l += len,
            _ => runs.push((offset, len)),
        }
    }
    runs.into_iter()
        .filter_map(|(o, l)| inner_blocks(o, l))
        .collect()
}

/// Punches the holes of the records no reader can reach any more (X6), with the state
/// lock released while the filesystem works, and counts what they freed. A failure
/// leaves the records whole: space only, never data.
pub(super) fn punch_ready_holes<'a>(
    db: &'a DbInner,
    mut st: MutexGuard<'a, State>,
) -> MutexGuard<'a, State> {
    let ready = take_ready(db, &mut st);
    if ready.is_empty() {
        return st;
    }
    drop(st);
    let freed: Vec<u64> = ready
        .iter()
        .map(|r| match r.holes.is_empty() {
            true => 0,
            false => {
                let path = filename::blob(&db.dir, r.file);
                db.env.punch_holes(&path, &r.holes).unwrap_or(0)
            }
        })
        .collect();
    st = db.lock();
    for (r, freed) in ready.iter().zip(freed) {
        if freed > 0 {
            // A run's hole covers its earlier holes again: count only the new blocks.
            *st.blob_freed.entry(r.file).or_default() += freed.min(r.fresh);
        } else if let Some(h) = st.blob_holed.get_mut(&r.file) {
            // No hole (the filesystem cannot, the file is shared): garbage collection
            // counts these records again.
            *h = h.saturating_sub(r.credited);
        }
    }
    st
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_side_by_side_make_one_hole() {
        let h = holes(&mut [(10_000, 5_000), (0, 10_000), (20_000, 9_000)]);
        assert_eq!(h, vec![(0, 12_288), (20_480, 8_192)]);
        assert!(holes(&mut [(1, 100)]).is_empty());
    }

    #[test]
    fn a_hole_beside_earlier_garbage_covers_the_blocks_they_share() {
        let mut dead = BTreeMap::new();
        // Three records side by side from offset 100; the middle one dies first.
        let (a, b, c) = ((100, 10_000), (10_100, 10_000), (20_100, 10_000));
        assert_eq!(
            join_dead(&mut dead, &mut [b]),
            (vec![(12_288, 4_096)], 4_096)
        );
        // Its left neighbour: the run's hole is blocks 4096..16384, the block the two
        // share (8192..12288) included; 12288..16384 was freed before.
        assert_eq!(
            join_dead(&mut dead, &mut [a]),
            (vec![(4_096, 12_288)], 8_192)
        );
        // The last: the run covers all three, blocks 4096..28672; 16384..28672 are new,
        // the block b and c share (16384..20480) among them.
        assert_eq!(
            join_dead(&mut dead, &mut [c]),
            (vec![(4_096, 24_576)], 12_288)
        );
        assert_eq!(dead, BTreeMap::from([(100, 30_100)]));
        // A record already dead is not punched again.
        assert_eq!(join_dead(&mut dead, &mut [b]), (Vec::new(), 0));
    }

    #[test]
    fn garbage_apart_stays_apart() {
        let mut dead = BTreeMap::new();
        // A live record (10_100..20_100) lies between them: neither hole may reach it.
        let (holes, _) = join_dead(&mut dead, &mut [(20_100, 10_000), (100, 10_000)]);
        assert_eq!(holes, vec![(4_096, 4_096), (20_480, 8_192)]);
        assert!(holes.iter().all(|&(o, l)| o + l <= 10_100 || o >= 20_100));
        assert_eq!(dead.len(), 2);
    }

    #[test]
    fn a_hole_covers_only_whole_blocks_inside_its_record() {
        assert_eq!(inner_blocks(0, 4096), Some((0, 4096)));
        assert_eq!(inner_blocks(1, 8192), Some((4096, 4096)));
        assert_eq!(inner_blocks(100, 102_500), Some((4096, 98_304)));
        assert_eq!(inner_blocks(4095, 4097), Some((4096, 4096)));
        assert_eq!(inner_blocks(4095, 4096), None);
        assert_eq!(inner_blocks(10, 100), None);
        assert_eq!(inner_blocks(u64::MAX - 10, 100), None);
        for (o, l) in [(7u64, 50_000u64), (4096, 4096), (123_456, 9_999)] {
            if let Some((s, n)) = inner_blocks(o, l) {
                assert!(s >= o && s + n <= o + l && s % BLOCK == 0 && n % BLOCK == 0);
            }
        }
    }
}
