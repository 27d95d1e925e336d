//! Blob refs in replayed WAL records (value separation, X1): read-write, each value a
//! ref points to is copied into a blob file of recovery's own and the record rewritten to
//! refer to the copy; read-only, each ref is checked. A ref whose record is not intact
//! (the WAL record reached the disk, its blob record did not) is damage, handled as the
//! recovery mode says (`replay.rs`).

use super::state::DbInner;
use crate::batch::{BatchOp, WriteBatch};
use crate::error::Result;

/// The blob file recovery copies replayed values into, made on first use.
#[derive(Default)]
pub(super) struct RecoveredBlobs {
    pub(super) writer: Option<crate::blob::BlobWriter>,
    pub(super) refs: u64,
    pub(super) bytes: u64,
}

/// The values a replayed `batch` keeps in blob files, copied into a blob file of
/// recovery's own, the batch rewritten to refer to the copies. Recovery copies them as
/// LevelDB copies a WAL's values into a new table: the old blob file may have had a write
/// or sync fail in the run that wrote it, so it is never synced or named again (C6); it
/// goes with its WAL. `Err(what)` if a ref does not lead to its intact record (X1 after a
/// crash: the WAL record reached the disk, its blob record did not).
pub(super) fn copy_blob_values(
    db: &DbInner,
    batch: WriteBatch,
    out: &mut RecoveredBlobs,
) -> Result<std::result::Result<WriteBatch, String>> {
    let has_refs = batch
        .iter()
        .any(|op| matches!(op, Ok(BatchOp::BlobRef(..))));
    if !has_refs {
        return Ok(Ok(batch));
    }
    let mut copy = WriteBatch::with_capacity(batch.approximate_size());
    let mut value = Vec::new();
    let mut encoded = Vec::new();
    for op in batch.iter() {
        match op? {
            BatchOp::Put(k, v) => copy.put(k, v),
            BatchOp::Delete(k) => copy.delete(k),
            BatchOp::BlobRef(k, r) => {
                if let Err(what) = read_ref(db, k, r, &mut value) {
                    return Ok(Err(what));
                }
                let writer = match &mut out.writer {
                    Some(w) => w,
                    None => {
                        let number = db.lock().versions.new_file_number();
                        out.writer.insert(db.new_blob_writer(number)?)
                    }
                };
                let moved = writer.add(k, &value)?;
                out.refs += 1;
                out.bytes += u64::from(moved.record_len);
                encoded.clear();
                moved.encode_to(&mut encoded);
                copy.put_blob_ref(k, &encoded);
            }
        }
    }
    if let Some(w) = &mut out.writer {
        w.flush()?; // X1: readers (the flushes below) find the copies
    }
    copy.set_seqnum(batch.seqnum());
    Ok(Ok(copy))
}

/// Reads the value blob ref `r` of key `k` points to into `value`; `Err(what)` if its
/// record is not intact.
fn read_ref(
    db: &DbInner,
    k: &[u8],
    r: &[u8],
    value: &mut Vec<u8>,
) -> std::result::Result<(), String> {
    db.blobs
        .read_into(k, r, value)
        .map_err(|e| format!("refers to a blob record that is not intact ({e})"))
}

/// Opened read-only, the blob refs of a replayed `batch` stay as they are: `Err(what)` if
/// one does not lead to its intact record (as [`copy_blob_values`] would find).
pub(super) fn check_blob_values(
    db: &DbInner,
    batch: WriteBatch,
) -> Result<std::result::Result<WriteBatch, String>> {
    let mut value = Vec::new();
    for op in batch.iter() {
        if let BatchOp::BlobRef(k, r) = op?
            && let Err(what) = read_ref(db, k, r, &mut value)
        {
            return Ok(Err(what));
        }
    }
    Ok(Ok(batch))
}
