//! Table files the database writes whole: [`build_table`] (the entries of a cursor, synced),
//! [`write_table_from`] (a memtable), [`sync_new_table`] (the directory entry) and
//! [`discard_table`]. Flushes, recovery and repair build their tables with them;
//! compactions write theirs shard by shard (`compaction_job.rs`) and discard through here.

use std::path::Path;
use std::sync::Arc;

use super::state::DbInner;
use crate::env::Env;
use crate::error::Result;
use crate::iter::Cursor;
use crate::key;
use crate::memtable::MemTable;
use crate::sstable::{KeptBlock, TableBuilder, TableOptions};
use crate::version::FileMetaData;

/// Writes the entries `keep` accepts from `it` (positioned at the first) into table
/// `number` at `path`, until the cursor ends or the table reaches `max_bytes`, and syncs
/// it. `None`, and no file left, if nothing was kept; on an error the file is removed.
/// With `keep_blocks`, the data blocks it stores compressed are kept and returned beside
/// its metadata ([`TableBuilder::keep_compressed_blocks`]; J2).
#[expect(
    clippy::too_many_arguments,
    reason = "the table's place, its entries, and the blocks to keep"
)]
pub(super) fn build_table(
    env: &dyn Env,
    path: &Path,
    options: TableOptions,
    number: u64,
    it: &mut dyn Cursor,
    keep: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    max_bytes: u64,
    keep_blocks: bool,
) -> Result<Option<(FileMetaData, Vec<KeptBlock>)>> {
    let result = (|| {
        let mut builder = TableBuilder::new(env.new_writable(path)?, options);
        if keep_blocks {
            builder.keep_compressed_blocks();
        }
        let (mut smallest, mut largest) = (Vec::new(), Vec::new());
        let mut blob_bytes = 0;
        let mut plain = true;
        while it.valid() && builder.file_size() < max_bytes {
            if keep(it.key(), it.value()) {
                blob_bytes += referenced_blob_bytes(it.key(), it.value());
                plain = plain
                    && is_plain_entry(it.key(), (!smallest.is_empty()).then_some(&largest[..]));
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
        let (mut file, size, kept) = builder.finish_keeping()?;
        file.sync()?;
        Ok((!smallest.is_empty()).then_some((
            FileMetaData {
                number,
                size,
                smallest,
                largest,
                blob_bytes,
                plain,
            },
            kept,
        )))
    })();
    if !matches!(result, Ok(Some(_))) {
        let _ = env.remove_file(path);
    }
    result
}

/// True if an entry keeps its table plain (`FileMeta::plain`): it is no deletion, and its
/// user key is not that of the entry the table holds before it (`previous`, an internal key).
pub(super) fn is_plain_entry(ikey: &[u8], previous: Option<&[u8]>) -> bool {
    key::value_type(ikey).is_some_and(|t| t != key::ValueType::Deletion)
        && previous.is_none_or(|p| key::user_key(p) != key::user_key(ikey))
}

/// Bytes of the blob record an entry refers to (0 for anything but a blob ref).
pub(super) fn referenced_blob_bytes(ikey: &[u8], value: &[u8]) -> u64 {
    if key::value_type(ikey) != Some(crate::key::ValueType::BlobRef) {
        return 0;
    }
    crate::blob::BlobRef::decode(value).map_or(0, |r| u64::from(r.record_len))
}

/// Writes every entry of `mem` to table `number`, synced, and checks it opens. `None` if
/// the memtable was empty (no file is left). On an error the file is removed. The caller
/// makes its directory entry durable ([`sync_new_table`]).
pub(super) fn write_table_from(
    db: &DbInner,
    mem: &Arc<MemTable>,
    number: u64,
    warm: bool,
) -> Result<Option<FileMetaData>> {
    let mut it = mem.iter();
    it.seek_to_first();
    if !it.valid() {
        return Ok(None); // an empty memtable makes no file
    }
    let path = db.table_path(number);
    let options = db.options.table_options();
    let Some((meta, kept)) = build_table(
        db.env.as_ref(),
        &path,
        options,
        number,
        &mut it,
        &mut |_, _| true,
        u64::MAX,
        warm,
    )?
    else {
        return Ok(None);
    };
    match db.table_cache.find(number, meta.size) {
        Ok(table) => super::warm_outputs::warm(&table, kept),
        Err(e) => {
            discard_table(db, number);
            return Err(e);
        }
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
pub(super) fn discard_table(db: &DbInner, number: u64) {
    db.table_cache.evict(number);
    let _ = db.env.remove_file(&db.table_path(number));
}
