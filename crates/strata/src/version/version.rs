//! [`Version`]: the live tables at one moment, per level, and lookups through them.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicI64, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};

use super::{
    L0_COMPACTION_TRIGGER, MAX_MEM_COMPACT_LEVEL, NUM_LEVELS, Separation, max_bytes_for_level,
};
use crate::comparator::InternalOrder;
use crate::error::Result;
use crate::key::{self, MAX_SEQNUM, ValueType, make_internal_key};

/// A live table as the version set knows it.
#[derive(Debug)]
pub struct FileMeta {
    /// File number.
    pub number: u64,
    /// Size in bytes.
    pub size: u64,
    /// First internal key.
    pub smallest: Vec<u8>,
    /// Last internal key.
    pub largest: Vec<u8>,
    /// Bytes of the blob records its refs point to (`FileMetaData::blob_bytes`).
    pub blob_bytes: u64,
    /// This open wrote the table (with its options) holding one entry per user key, no
    /// deletion, and not starting with a user key its table before ended with: merging
    /// it alone into a level where nothing overlaps it would write the same entries, so a
    /// manual compaction may move it down whole instead (`Compaction::is_plain_move`).
    /// Kept in memory only (LevelDB's manifest has no field for it): false for every
    /// table a reopen finds, which are then merged as LevelDB would.
    pub plain: bool,
    /// Lookups that may still pass through this table without finding their key before
    /// it is scheduled for a seek-triggered compaction.
    pub allowed_seeks: AtomicI64,
}

impl FileMeta {
    /// A table's record; allowed seeks follow LevelDB's rule (one per 16 KiB, at least 100).
    pub fn new(number: u64, size: u64, smallest: Vec<u8>, largest: Vec<u8>) -> Self {
        FileMeta {
            number,
            size,
            smallest,
            largest,
            blob_bytes: 0,
            plain: false,
            allowed_seeks: AtomicI64::new(((size / 16384) as i64).max(100)),
        }
    }

    /// The same record with `blob_bytes` set.
    pub fn with_blob_bytes(mut self, blob_bytes: u64) -> Self {
        self.blob_bytes = blob_bytes;
        self
    }

    /// The same record with `plain` set.
    pub fn with_plain(mut self, plain: bool) -> Self {
        self.plain = plain;
        self
    }

    /// The user key range.
    pub fn user_range(&self) -> (&[u8], &[u8]) {
        (key::user_key(&self.smallest), key::user_key(&self.largest))
    }

    /// The table as a manifest edit names it.
    pub fn to_meta_data(&self) -> super::FileMetaData {
        super::FileMetaData {
            number: self.number,
            size: self.size,
            smallest: self.smallest.clone(),
            largest: self.largest.clone(),
            blob_bytes: self.blob_bytes,
            plain: self.plain,
        }
    }
}

/// What a version knows of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GetResult<V = Vec<u8>> {
    /// The newest visible version is this value.
    Value(V),
    /// The newest visible version is a deletion.
    Deleted,
    /// The newest visible version is a value in a blob file: this is its encoded ref.
    Blob(V),
    /// No table holds the key.
    Absent,
}

/// The live tables, per level. Immutable once built (V1, V2).
#[derive(Debug, Default)]
pub struct Version {
    /// Tables per level, each level sorted by smallest key (ties by number).
    pub levels: [Vec<Arc<FileMeta>>; NUM_LEVELS],
    /// The best size-triggered compaction: score >= 1 means one is due.
    pub compaction_score: f64,
    /// The level that score belongs to.
    pub compaction_level: usize,
    /// A table whose allowed seeks ran out, with its level.
    pub file_to_compact: Mutex<Option<(usize, Arc<FileMeta>)>>,
    /// The blob files the manifest names, not yet dead (X3).
    pub blob_files: std::collections::BTreeMap<u64, super::BlobFileMeta>,
    /// What the manifest says of value separation (tag 20): unless `Off`, values may be
    /// in blob files and LevelDB must refuse the database.
    pub separation: Separation,
    /// The order of keys (the database's comparator).
    pub order: InternalOrder,
}

/// Index of the first table in a sorted level whose largest key is at or after `ikey`.
pub fn find_file(order: &InternalOrder, files: &[Arc<FileMeta>], ikey: &[u8]) -> usize {
    files.partition_point(|f| order.compare(&f.largest, ikey) == Ordering::Less)
}

fn after_file(order: &InternalOrder, user_key: Option<&[u8]>, f: &FileMeta) -> bool {
    user_key.is_some_and(|k| order.compare_user(k, f.user_range().1).is_gt())
}

fn before_file(order: &InternalOrder, user_key: Option<&[u8]>, f: &FileMeta) -> bool {
    user_key.is_some_and(|k| order.compare_user(k, f.user_range().0).is_lt())
}

impl Version {
    /// Records in `edit` what this version says of value separation: the flag (unless
    /// `Off`) and every blob file it names, with its refs and garbage. A manifest's first
    /// record and a checkpoint's manifest both begin with it.
    pub fn describe_blob_files(&self, edit: &mut super::VersionEdit) {
        if self.separation != Separation::Off {
            edit.separation = Some(self.separation);
        }
        for (&number, f) in &self.blob_files {
            edit.new_blob_files.push((number, f.refs, f.bytes));
            if f.garbage_refs > 0 {
                edit.blob_garbage
                    .push((number, f.garbage_refs, f.garbage_bytes));
            }
        }
    }

    /// Computes the compaction score (LevelDB's rule: level 0 by table count, deeper
    /// levels by bytes against their target).
    pub fn finalize(&mut self) {
        let targets = self.level_targets();
        let mut best = (0usize, -1.0f64);
        for (level, target) in targets.iter().enumerate().take(NUM_LEVELS - 1) {
            let score = if level == 0 {
                self.levels[0].len() as f64 / L0_COMPACTION_TRIGGER as f64
            } else {
                self.level_weight(level) as f64 / target
            };
            if score > best.1 {
                best = (level, score);
            }
        }
        self.compaction_level = best.0;
        self.compaction_score = best.1;
    }

    /// The size each level may reach before it is compacted into the next: LevelDB's
    /// (10 MB for level 1, ten times more per level down). While values live in blob
    /// files, sized from the deepest level holding data instead (each level a tenth of the one
    /// below, none below LevelDB's level-1 size), as RocksDB's dynamic level sizing does:
    /// refs are cheap to compact, and a level that is large beside the one below holds
    /// refs to overwritten values whose garbage stays unfound until they meet (measured
    /// 2026-11-24: 2.1x the live values on disk under sustained 100 KB overwrites with
    /// LevelDB's sizes).
    fn level_targets(&self) -> [f64; NUM_LEVELS] {
        let mut targets: [f64; NUM_LEVELS] = std::array::from_fn(max_bytes_for_level);
        if self.blob_files.is_empty() {
            return targets; // no value lives in a blob file: LevelDB's sizes
        }
        let Some(last) = (1..NUM_LEVELS).rev().find(|&l| !self.levels[l].is_empty()) else {
            return targets;
        };
        let floor = max_bytes_for_level(1);
        let mut target = (self.level_weight(last) as f64).max(floor);
        for level in (1..last).rev() {
            target = (target / 10.0).max(floor);
            targets[level] = target;
        }
        targets
    }

    /// What `level` weighs for compaction: its tables' bytes and the blob bytes they
    /// refer to (as if the values were in the tables).
    pub fn level_weight(&self, level: usize) -> u64 {
        self.levels[level]
            .iter()
            .map(|f| f.size + f.blob_bytes)
            .sum()
    }

    /// Total bytes of the tables in `level`.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.levels[level].iter().map(|f| f.size).sum()
    }

    /// True if some table in `level` overlaps the user-key range (`None` = unbounded).
    pub fn overlaps(&self, level: usize, smallest: Option<&[u8]>, largest: Option<&[u8]>) -> bool {
        let files = &self.levels[level];
        let user = &self.order;
        if level == 0 {
            return files
                .iter()
                .any(|f| !after_file(user, smallest, f) && !before_file(user, largest, f));
        }
        let index = match smallest {
            Some(s) => find_file(
                &self.order,
                files,
                &make_internal_key(s, MAX_SEQNUM, ValueType::Value),
            ),
            None => 0,
        };
        files
            .get(index)
            .is_some_and(|f| !before_file(user, largest, f))
    }

    /// The tables of `level` overlapping the user-key range. In level 0 the range grows to
    /// cover every table that overlaps a chosen one, since their ranges may overlap.
    pub fn overlapping_inputs(
        &self,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Vec<Arc<FileMeta>> {
        let mut begin = begin.map(<[u8]>::to_vec);
        let mut end = end.map(<[u8]>::to_vec);
        let mut out = Vec::new();
        let files = &self.levels[level];
        let user = &self.order;
        let mut i = 0;
        while i < files.len() {
            let f = &files[i];
            i += 1;
            let (lo, hi) = f.user_range();
            if begin
                .as_deref()
                .is_some_and(|b| user.compare_user(hi, b).is_lt())
                || end
                    .as_deref()
                    .is_some_and(|e| user.compare_user(lo, e).is_gt())
            {
                continue;
            }
            out.push(Arc::clone(f));
            if level == 0 {
                if begin
                    .as_deref()
                    .is_some_and(|b| user.compare_user(lo, b).is_lt())
                {
                    begin = Some(lo.to_vec());
                    out.clear();
                    i = 0;
                } else if end
                    .as_deref()
                    .is_some_and(|e| user.compare_user(hi, e).is_gt())
                {
                    end = Some(hi.to_vec());
                    out.clear();
                    i = 0;
                }
            }
        }
        out
    }

    /// Where a flushed memtable covering the user-key range goes: level 0, or deeper (up
    /// to level 2) while it overlaps nothing there and not too much in the level below.
    pub fn pick_level_for_memtable_output(
        &self,
        smallest: &[u8],
        largest: &[u8],
        max_file_size: u64,
    ) -> usize {
        let mut level = 0;
        if self.overlaps(0, Some(smallest), Some(largest)) {
            return 0;
        }
        while level < MAX_MEM_COMPACT_LEVEL {
            if self.overlaps(level + 1, Some(smallest), Some(largest)) {
                break;
            }
            if level + 2 < NUM_LEVELS {
                let grandparents =
                    self.overlapping_inputs(level + 2, Some(smallest), Some(largest));
                let bytes: u64 = grandparents.iter().map(|f| f.size).sum();
                if bytes > 10 * max_file_size {
                    break;
                }
            }
            level += 1;
        }
        level
    }

    /// Looks `user_key` up as of `seqnum`: level 0 newest table first, then one table per
    /// deeper level. `lookup` reads a table: it returns the first entry at or after the
    /// lookup key in the table's data. A table consulted without finding the key, when
    /// another table is consulted after it, is charged a seek; the table whose seeks run
    /// out is returned for compaction.
    #[allow(clippy::type_complexity)]
    pub fn get<V>(
        &self,
        user_key: &[u8],
        seqnum: u64,
        mut lookup: impl FnMut(&FileMeta, &[u8]) -> Result<Option<(ValueType, V)>>,
    ) -> Result<(GetResult<V>, Option<(usize, Arc<FileMeta>)>)> {
        key::with_internal_key(user_key, seqnum, ValueType::FOR_SEEK, |ikey| {
            self.get_at(user_key, ikey, &mut lookup)
        })
    }

    #[allow(clippy::type_complexity)]
    fn get_at<V>(
        &self,
        user_key: &[u8],
        ikey: &[u8],
        lookup: &mut impl FnMut(&FileMeta, &[u8]) -> Result<Option<(ValueType, V)>>,
    ) -> Result<(GetResult<V>, Option<(usize, Arc<FileMeta>)>)> {
        let user = &self.order;
        // The first file consulted, charged a seek when a second one is (as LevelDB's
        // `GetStats`); borrowed, so a lookup that reads one file takes no reference.
        let mut first_miss: Option<(usize, &Arc<FileMeta>)> = None;
        let mut consulted = 0usize;
        let mut charge = None;
        let mut level0: Vec<&Arc<FileMeta>>;
        let mut one: [&Arc<FileMeta>; 1];
        for level in 0..NUM_LEVELS {
            let files = &self.levels[level];
            let candidates: &[&Arc<FileMeta>] = if level == 0 {
                level0 = files
                    .iter()
                    .filter(|f| {
                        let (lo, hi) = f.user_range();
                        user.compare_user(lo, user_key).is_le()
                            && user.compare_user(user_key, hi).is_le()
                    })
                    .collect();
                level0.sort_by_key(|f| std::cmp::Reverse(f.number)); // V2: newest first
                &level0
            } else {
                let i = find_file(&self.order, files, ikey);
                match files
                    .get(i)
                    .filter(|f| user.compare_user(f.user_range().0, user_key).is_le())
                {
                    Some(f) => {
                        one = [f];
                        &one
                    }
                    None => &[],
                }
            };
            for f in candidates {
                consulted += 1;
                if consulted == 2 {
                    charge = first_miss.take();
                }
                if first_miss.is_none() && consulted == 1 {
                    first_miss = Some((level, *f));
                }
                if let Some((ty, value)) = lookup(f, ikey)? {
                    let result = match ty {
                        ValueType::Value => GetResult::Value(value),
                        ValueType::Deletion => GetResult::Deleted,
                        ValueType::BlobRef => GetResult::Blob(value),
                    };
                    return Ok((result, self.charge_seek(charge)));
                }
            }
        }
        Ok((GetResult::Absent, self.charge_seek(charge)))
    }

    fn charge_seek(
        &self,
        charge: Option<(usize, &Arc<FileMeta>)>,
    ) -> Option<(usize, Arc<FileMeta>)> {
        let (level, f) = charge?;
        if f.allowed_seeks.fetch_sub(1, AtomicOrdering::Relaxed) <= 1 {
            let mut slot = self
                .file_to_compact
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                *slot = Some((level, Arc::clone(f)));
                return Some((level, Arc::clone(f)));
            }
        }
        None
    }

    /// Approximate byte offset of `ikey` across the whole database.
    pub fn approximate_offset_of(
        &self,
        ikey: &[u8],
        mut table_offset: impl FnMut(&FileMeta, &[u8]) -> u64,
    ) -> u64 {
        let mut result = 0;
        for (level, files) in self.levels.iter().enumerate() {
            for f in files {
                if self.order.compare(&f.largest, ikey) != Ordering::Greater {
                    result += f.size;
                } else if self.order.compare(&f.smallest, ikey) == Ordering::Greater {
                    if level > 0 {
                        break; // sorted: no later table can hold ikey
                    }
                } else {
                    result += table_offset(f, ikey);
                }
            }
        }
        result
    }

    /// Number of tables per level.
    pub fn files_per_level(&self) -> [usize; NUM_LEVELS] {
        std::array::from_fn(|l| self.levels[l].len())
    }
}
