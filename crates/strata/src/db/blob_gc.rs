//! What a compaction does with the blob refs it keeps (value separation, `crate::blob`):
//! leaves them, moves their values into a blob file of its own (garbage collection), or
//! puts their values back inline.
//!
//! - A ref whose value is below the threshold (or with value separation off: the way back
//!   to LevelDB's format) is *inlined*: the entry becomes a plain value.
//! - A ref into a blob file whose garbage (the bytes of refs compactions dropped) has
//!   reached `Options::blob_gc_ratio` of its bytes is *moved*: its value is copied into a
//!   blob file the compaction writes, in key order, and the output holds the new ref.
//! - The in-place compaction of the deepest level that `Db::compact_range` ends with
//!   follows the same two rules: every ref in the range passes through it, values stay in
//!   files whose garbage is below the ratio (their garbage's space comes back through
//!   holes). Moving every value, as it once did, made `compact_range` 4-8x slower and
//!   the next random reads slower (each moved value is read and checked afresh), for no
//!   space (`docs/results/2026-12-02-compact-range-blobs/`).
//! - Either way the old ref counts as garbage of its file; once all of a file's refs are
//!   garbage the file is dead and deleted (X3). Before that, its record's space is given
//!   back by a hole (`blob_holes.rs`, `Options::blob_punch_holes`): the rewriter lists
//!   where every garbage record lies, and a file's garbage counts against the ratio only
//!   as far as holes do not free it (waiting or punched: a hole that waits for a reader
//!   will come, and moving live values to beat it would be wasted writes; a record under
//!   a block frees nothing and counts whole).
//! - A file at least `CONSOLIDATE` garbage is moved whatever its holes freed: its few
//!   live values go to a new file, so that files do not multiply.
//!
//! Invariant:
//! - X4 every ref a compaction reads is accounted exactly once, as kept (nothing
//!   to record), dropped or rewritten (garbage of its file), and every ref it writes into
//!   a new blob file is counted in that file's refs; the blob files it writes are synced
//!   before its edit names them, and removed if it fails.

use std::collections::BTreeMap;

use super::blob_holes::worth_a_hole;
use super::state::DbInner;
use crate::blob::{BlobRef, BlobWriter};
use crate::error::Result;
use crate::filename;
use crate::key::{TAG_SIZE, ValueType};
use crate::version::{BlobFileMeta, Separation};

/// Blob ref bookkeeping for one compaction shard.
pub(super) struct BlobRewriter<'a> {
    db: &'a DbInner,
    /// The blob files of the compaction's version, with their garbage so far.
    files: &'a BTreeMap<u64, BlobFileMeta>,
    writer: Option<BlobWriter>,
    /// Refs and record bytes written to the current writer.
    counts: (u64, u64),
    /// Blob files finished and synced: (number, refs, bytes).
    pub written: Vec<(u64, u64, u64)>,
    /// Numbers of every blob file begun (in `pending_outputs`).
    pub numbers: Vec<u64>,
    /// Refs dropped or rewritten, per file: (refs, record bytes).
    pub garbage: BTreeMap<u64, (u64, u64)>,
    /// Where those garbage records lie, per file: (offset, length), for their holes
    /// (empty unless `Options::blob_punch_holes`).
    pub holes: BTreeMap<u64, Vec<(u64, u64)>>,
    /// Garbage bytes given to holes so far, per file (`State::blob_holed`, when the
    /// compaction began).
    holed: &'a std::collections::HashMap<u64, u64>,
    ikey: Vec<u8>,
    value: Vec<u8>,
}

/// What to do with one kept ref.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Keep,
    Inline,
    Move,
}

impl<'a> BlobRewriter<'a> {
    pub(super) fn new(
        db: &'a DbInner,
        files: &'a BTreeMap<u64, BlobFileMeta>,
        holed: &'a std::collections::HashMap<u64, u64>,
    ) -> Self {
        BlobRewriter {
            db,
            files,
            writer: None,
            counts: (0, 0),
            written: Vec::new(),
            numbers: Vec::new(),
            garbage: BTreeMap::new(),
            holes: BTreeMap::new(),
            holed,
            ikey: Vec::new(),
            value: Vec::new(),
        }
    }

    /// Counts a dropped ref as garbage of its file.
    pub(super) fn dropped(&mut self, encoded_ref: &[u8]) {
        if let Ok(r) = BlobRef::decode(encoded_ref) {
            self.add_garbage(&r);
        }
    }

    fn add_garbage(&mut self, r: &BlobRef) {
        let g = self.garbage.entry(r.file).or_default();
        g.0 += 1;
        g.1 += u64::from(r.record_len);
        if self.db.options.blob_punch_holes && worth_a_hole(r.record_len) {
            self.holes
                .entry(r.file)
                .or_default()
                .push((r.offset, u64::from(r.record_len)));
        }
    }

    fn action(&self, r: &BlobRef) -> Action {
        let threshold = self.db.options.blob_threshold;
        if threshold == 0 || (r.raw_len() as usize) < threshold {
            return Action::Inline;
        }
        let ratio = self.db.options.blob_gc_ratio;
        match self.files.get(&r.file) {
            Some(f) if ratio < 1.0 && f.bytes > 0 => {
                let holed = self.holed.get(&r.file).copied().unwrap_or(0);
                if collects(f, holed, ratio) {
                    Action::Move
                } else {
                    Action::Keep
                }
            }
            _ => Action::Keep, // not named yet (its WAL is live), or collection is off
        }
    }

    /// The entry to write for a kept entry `ikey` of type blob ref with value
    /// `encoded_ref`: `None` to write it as it is, or the new (internal key, value).
    pub(super) fn rewrite(
        &mut self,
        ikey: &[u8],
        encoded_ref: &[u8],
    ) -> Result<Option<(&[u8], &[u8])>> {
        let r = BlobRef::decode(encoded_ref)?;
        let action = self.action(&r);
        if action == Action::Keep {
            return Ok(None);
        }
        let user_key = crate::key::user_key(ikey);
        // A compressed value moves as it is stored: no decompressing and compressing again.
        let as_stored = action == Action::Move && r.raw_len.is_some();
        if as_stored {
            self.db
                .blobs
                .read_stored_into(user_key, encoded_ref, &mut self.value)?;
        } else {
            self.db
                .blobs
                .read_into(user_key, encoded_ref, &mut self.value)?;
        }
        self.add_garbage(&r);
        self.ikey.clear();
        self.ikey.extend_from_slice(ikey);
        if action == Action::Inline {
            let at = self.ikey.len() - TAG_SIZE;
            self.ikey[at] = ValueType::Value as u8;
            return Ok(Some((&self.ikey, &self.value)));
        }
        if self
            .writer
            .as_ref()
            .is_some_and(|w| w.size() >= self.db.options.blob_file_size as u64)
        {
            self.finish()?;
        }
        let writer = match &mut self.writer {
            Some(w) => w,
            None => {
                let number = {
                    let mut st = self.db.lock();
                    let n = st.versions.new_file_number();
                    st.pending_outputs.insert(n);
                    n
                };
                self.numbers.push(number);
                self.writer.insert(self.db.new_blob_writer(number)?)
            }
        };
        let moved = if as_stored {
            writer.add_stored(user_key, &self.value, r.raw_len)?
        } else {
            writer.add(user_key, &self.value)?
        };
        self.counts.0 += 1;
        self.counts.1 += u64::from(moved.record_len);
        self.value.clear();
        moved.encode_to(&mut self.value);
        Ok(Some((&self.ikey, &self.value)))
    }

    /// Syncs the blob file being written and records it.
    pub(super) fn finish(&mut self) -> Result<()> {
        if let Some(mut w) = self.writer.take() {
            w.sync()?;
            self.db.blobs.seal(w.number());
            self.written
                .push((w.number(), self.counts.0, self.counts.1));
            self.counts = (0, 0);
        }
        Ok(())
    }
}

/// The garbage fraction at which a blob file's live values move whatever its holes
/// freed: a file of few live values costs an open file and scattered reads.
const CONSOLIDATE: f64 = 0.75;

/// Whether a compaction moves the live values of blob file `f`, `holed` bytes of whose
/// garbage holes free (or will): when the garbage left is at least `ratio` of what the
/// file takes on disk once its holes are punched, or when `CONSOLIDATE` of its bytes are
/// garbage.
fn collects(f: &BlobFileMeta, holed: u64, ratio: f64) -> bool {
    let holed = holed.min(f.garbage_bytes);
    let whole = (f.garbage_bytes - holed) as f64;
    let held = (f.bytes - holed) as f64;
    whole >= ratio * held || f.garbage_bytes as f64 >= CONSOLIDATE * f.bytes as f64
}

/// How the manifest's value-separation flag (tag 20) should change, if at all: on once a
/// database is opened with a threshold, before any ref is written (LevelDB refuses it
/// from then on), and "compressed" once it is opened with `blob_compression`, before any
/// compressed value is written (a Strata older than compressed values refuses it from
/// then on); off once the threshold is 0 and no blob file is named by `current` or waits
/// to be (`unnamed`): the database is LevelDB's format again.
pub(super) fn separation_change(
    db: &DbInner,
    current: &crate::version::Version,
    unnamed: bool,
) -> Option<Separation> {
    let want = match (db.options.separates_values(), db.options.blob_compression) {
        (false, _) if current.blob_files.is_empty() && !unnamed => Separation::Off,
        (false, _) => return None, // refs remain: the flag stays until they are gone
        (true, true) => Separation::Compressed,
        // Compressed refs, once possible, may remain whatever the option says now.
        (true, false) => current.separation.max(Separation::On),
    };
    (want != current.separation).then_some(want)
}

/// Removes the blob files a failed compaction began.
pub(super) fn discard_blob_files(db: &DbInner, numbers: &[u64]) {
    for &n in numbers {
        db.blobs.evict(n);
        let _ = db.env.remove_file(&filename::blob(&db.dir, n));
    }
}
