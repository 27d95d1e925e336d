//! Holes in blob files: the disk space of a garbage blob record given back where it lies
//! (`Options::blob_punch_holes`), so that overwritten large values stop taking space
//! without a compaction moving their file's live values (`blob_gc.rs`).
//!
//! A compaction lists where the records of the refs it dropped or rewrote lie; once its
//! edit is installed the list waits here (`State::holes`), tied to the compaction's input
//! tables. After each background step the lists no reader can reach any more are taken
//! and their holes punched (`Env::punch_holes`) with the state lock released: only the
//! whole filesystem blocks inside each record, so a hole never touches a neighbour.
//!
//! Invariant:
//! - X6 A blob record's bytes are punched only when nothing can read them: its ref was
//!   dropped or rewritten by a compaction whose edit is installed (no table the manifest
//!   names holds it), none of that compaction's input tables is in a live version (no
//!   iterator, lookup or snapshot reaches the ref through them), no flushed memtable of
//!   the file's WAL is still held by a reader (a lookup may have found the ref there
//!   before it reached a table), and no view or read holds the file's map
//!   (`BlobStore::in_use`: a `BlobView` handed out before the ref was dropped keeps its
//!   bytes). A file with other hard links (a checkpoint's) is never punched
//!   (`Env::punch_holes`). Holes are recorded nowhere: after a crash a punched record may
//!   read whole or as zeros, and nothing reads it either way. The bytes freed are counted
//!   in memory (`State::blob_freed`), for garbage collection's choice, from zero at each
//!   open.

use std::collections::{BTreeMap, HashSet};
use std::sync::MutexGuard;

use super::state::{DbInner, State};
use crate::filename;

/// The filesystem block a hole frees whole (ext4's and XFS's usual size; a hole in a
/// larger block zeros the range without freeing it, still inside the record).
const BLOCK: u64 = 4096;

/// Records waiting for their holes.
#[derive(Debug, Default)]
pub(super) struct PendingHoles {
    /// The input tables of the compaction that dropped their refs (X6: none may be in a
    /// live version); empty once that no longer matters.
    inputs: Vec<u64>,
    /// Per blob file, its garbage records as (offset, length).
    ranges: BTreeMap<u64, Vec<(u64, u64)>>,
}

impl PendingHoles {
    fn records(&self) -> usize {
        self.ranges.values().map(Vec::len).sum()
    }
}

/// At most this many records wait (16 bytes each); a compaction whose records would pass
/// it leaves them whole, their space back when their file is collected or dies.
const MAX_WAITING: usize = 1 << 20;

/// Queues the garbage records `ranges` of a compaction with input tables `inputs`, just
/// installed.
pub(super) fn queue_holes(
    st: &mut State,
    inputs: Vec<u64>,
    ranges: BTreeMap<u64, Vec<(u64, u64)>>,
) {
    let p = PendingHoles { inputs, ranges };
    let waiting: usize = st.holes.iter().map(PendingHoles::records).sum();
    if p.records() > 0 && waiting + p.records() <= MAX_WAITING {
        st.holes.push(p);
    }
}

/// The whole `BLOCK`s inside the record at `offset` of `len` bytes, as (offset, length).
fn inner_blocks(offset: u64, len: u64) -> Option<(u64, u64)> {
    let start = offset.checked_next_multiple_of(BLOCK)?;
    let end = (offset.checked_add(len)? / BLOCK) * BLOCK;
    (end > start).then(|| (start, end - start))
}

/// Takes from `st.holes` the records no reader can reach any more (X6), per blob file,
/// as whole blocks; what a reader may still reach stays queued.
fn take_ready(db: &DbInner, st: &mut State) -> Vec<(u64, Vec<(u64, u64)>)> {
    if st.holes.is_empty() {
        return Vec::new();
    }
    let live_tables = st.versions.live_files();
    let named = st.versions.current();
    st.retired_mems.retain(|(_, m)| m.strong_count() > 0);
    let held: HashSet<u64> = st.retired_mems.iter().map(|(n, _)| *n).collect();
    let mut ready: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    let mut waiting = Vec::new();
    for p in std::mem::take(&mut st.holes) {
        if p.inputs.iter().any(|n| live_tables.contains(n)) {
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
            let blocks = ranges.iter().filter_map(|&(o, l)| inner_blocks(o, l));
            ready.entry(file).or_default().extend(blocks);
        }
        if !later.ranges.is_empty() {
            waiting.push(later);
        }
    }
    st.holes = waiting;
    ready.into_iter().filter(|(_, r)| !r.is_empty()).collect()
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
    let freed: Vec<(u64, u64)> = ready
        .iter()
        .map(|(file, ranges)| {
            let path = filename::blob(&db.dir, *file);
            (*file, db.env.punch_holes(&path, ranges).unwrap_or(0))
        })
        .collect();
    st = db.lock();
    for (file, bytes) in freed {
        if bytes > 0 {
            *st.blob_freed.entry(file).or_default() += bytes;
        }
    }
    st
}

#[cfg(test)]
mod tests {
    use super::*;

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
