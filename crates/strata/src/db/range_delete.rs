//! Range deletes: a batch's pending ranges expanded into one delete per key (B2 in
//! `batch.rs`), by the writer that leads, before its batch is logged.
//!
//! LevelDB's format has no range tombstone, so a range delete is written as the deletes
//! it stands for: LevelDB reads the log and the tables that follow, and readers,
//! snapshots and iterators see exactly what per-key deletes give.
//!
//! Invariant:
//! - RD1 a range is expanded against the database as every earlier write left it and
//!   against the batch's own earlier records: the expanding writer leads the write queue
//!   (nothing else commits until it hands out, D1), its batch is written alone, and the
//!   records it added before the range are counted as the database would see them.

use std::collections::BTreeMap;

use super::read::merged_view;
use super::state::DbInner;
use crate::batch::{BatchOp, WriteBatch};
use crate::comparator::InternalOrder;
use crate::error::Result;
use crate::iter::Cursor;
use crate::key::{ParsedInternalKey, ValueType};
use crate::options::ReadOptions;

/// `batch` with each pending range replaced by one delete per key the range holds at that
/// point. Requires: the caller leads the write queue (RD1).
pub(super) fn expand(db: &DbInner, mut batch: WriteBatch) -> Result<WriteBatch> {
    let ranges = batch.take_ranges();
    if ranges.is_empty() {
        return Ok(batch);
    }
    let order = db.table_cache.order().clone();
    let in_range = |k: &[u8], start: &[u8], end: &[u8]| {
        order.compare_user(k, start).is_ge() && order.compare_user(k, end).is_lt()
    };
    let mut out = WriteBatch::with_capacity(batch.approximate_size());
    // What the batch's own records so far did to a key: put (true) or deleted (false).
    let mut own: BTreeMap<Vec<u8>, bool> = BTreeMap::new();
    let mut ops = batch.iter();
    let mut copied = 0u32;
    let count = ranges.len();
    for (i, range) in ranges.into_iter().enumerate() {
        while copied < range.at {
            let Some(op) = ops.next() else { break };
            copy(op?, &mut out, &mut own);
            copied += 1;
        }
        if order.compare_user(&range.start, &range.end).is_ge() {
            continue;
        }
        // Only a later range needs to know which keys this one deleted.
        let later = i + 1 < count;
        for_live_keys(db, &order, &range.start, &range.end, |key| {
            if !own.contains_key(key) {
                out.delete(key);
                if later {
                    own.insert(key.to_vec(), false);
                }
            }
        })?;
        for (key, put) in own.iter_mut() {
            if *put && in_range(key, &range.start, &range.end) {
                out.delete(key);
                *put = false;
            }
        }
    }
    for op in ops {
        copy(op?, &mut out, &mut own);
    }
    Ok(out)
}

/// Adds `op` to `out` and notes what it did to its key.
fn copy(op: BatchOp<'_>, out: &mut WriteBatch, own: &mut BTreeMap<Vec<u8>, bool>) {
    match op {
        BatchOp::Put(k, v) => {
            out.put(k, v);
            own.insert(k.to_vec(), true);
        }
        BatchOp::Delete(k) => {
            out.delete(k);
            own.insert(k.to_vec(), false);
        }
        // A batch a user builds holds no blob ref; one read back from a log is never
        // expanded. Kept as it is all the same.
        BatchOp::BlobRef(k, r) => {
            out.put_blob_ref(k, r);
            own.insert(k.to_vec(), true);
        }
    }
}

/// Calls `f` with each user key in `[start, end)` whose newest entry is a value, in key
/// order. Every entry is visible: the caller leads the write queue, so nothing newer than
/// the last published seqnum exists (RD1). Values are not read (a blob value stays in its
/// file).
fn for_live_keys(
    db: &DbInner,
    order: &InternalOrder,
    start: &[u8],
    end: &[u8],
    mut f: impl FnMut(&[u8]),
) -> Result<()> {
    // A bulk read: its blocks do not push the readers' blocks out of the cache.
    let reads = ReadOptions {
        fill_cache: false,
        ..ReadOptions::default()
    }
    .block_reads();
    // The view keeps its version (and with it the tables the scan reads, V3) until the
    // scan ends.
    let mut view = merged_view(db, db.lock(), reads, None);
    let cursor = &mut view.cursor;
    let mut last: Vec<u8> = Vec::new();
    let mut first = true;
    crate::key::with_internal_key(start, crate::key::MAX_SEQNUM, ValueType::FOR_SEEK, |k| {
        cursor.seek(k)
    });
    while cursor.valid() {
        let Some(entry) = ParsedInternalKey::parse(cursor.key()) else {
            return Err(crate::Error::corruption(
                "",
                0,
                "bad internal key in a table or memtable",
            ));
        };
        if order.compare_user(entry.user_key, end).is_ge() {
            break;
        }
        // K2: the first entry of a user key is its newest.
        if first || last != entry.user_key {
            first = false;
            last.clear();
            last.extend_from_slice(entry.user_key);
            if entry.ty.has_value() {
                f(entry.user_key);
            }
        }
        cursor.next();
    }
    cursor.status()
}
