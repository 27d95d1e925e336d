//! Making blob files durable (value separation): a blob file's records and its directory
//! entry are synced when a synced write needs them, when an older log's records must be
//! (W4), or when a flush names the file; the write path and flushes share these.

use super::state::{DbInner, SharedBlobWriter};
use crate::blob::BlobWriter;
use crate::error::Result;

/// The writer behind a shared blob writer's lock (a panic elsewhere does not poison it
/// for good: its state is its own fields, each call leaves them whole).
pub(super) fn lock_blob(b: &SharedBlobWriter) -> std::sync::MutexGuard<'_, BlobWriter> {
    b.lock().unwrap_or_else(|p| p.into_inner())
}

/// Makes a blob file's records durable, and its directory entry the first time: a blob
/// file's entry is synced only when a synced write needs it (or by the flush that names
/// it, whose table's directory sync comes after the file was made), not at creation.
pub(super) fn sync_blob(db: &DbInner, b: &mut BlobWriter) -> Result<()> {
    if !b.dir_synced {
        db.env.sync_dir(&db.dir)?;
        b.dir_synced = true;
    }
    b.sync()
}

/// Syncs blob file `number` through a handle of its own (its writer may be gone, or
/// still held for a synced write to sync): what was written to the file by any handle,
/// map included, is then on disk.
pub(super) fn sync_blob_file(db: &DbInner, number: u64) -> Result<()> {
    let path = crate::filename::blob(&db.dir, number);
    if !db.env.exists(&path) {
        return Ok(()); // made by no write: its WAL held no large value
    }
    db.env.new_appendable(&path)?.sync()
}
