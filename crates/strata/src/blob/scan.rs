//! [`ScanFiles`]: the blob files one scan has read values from, kept by the scan so that
//! its next values are read without the store's lock and asked for ahead.
//!
//! A scan meets separated values in key order, which after random writes is no order in
//! their blob files: each value begins with a miss on a line nobody asked for, and the
//! hardware follows the rest of the record only once the stream has begun. The scan's
//! cursor can see the next entry's ref without moving
//! ([`crate::iter::Cursor::next_hint`]), so the first lines of its record can be on
//! their way while the current value is checked and read ([`ScanFiles::ask`]).
//!
//! Kept files are mapped ones only (a map holds no descriptor), at most [`SLOTS`] of them
//! (the slot of file `n` is `n % SLOTS`). A kept file stays in use (X6: holes in it wait)
//! until the scan's iterator is dropped, as its version keeps its tables. Each kept entry
//! is the store's own `Open` of the time, so X5 holds as it does in the store: a CRC is
//! skipped only at a read through the same map where a check of the record passed.

use std::sync::Arc;

use super::store::{Open, view_or_read_in};
use super::{BlobRef, BlobStore, BlobView};
use crate::error::Result;

/// Files one scan keeps.
const SLOTS: usize = 64;

/// At most this much of a record is asked for ahead: the first lines, after which the
/// hardware's stream prefetch has begun. (Asking for a whole 1 KiB record, 17 lines,
/// filled the CPU's line-fill buffers and cost more than it saved.)
const AHEAD: usize = 256;

/// The mapped blob files a scan has read values from.
#[derive(Default)]
pub struct ScanFiles {
    slots: Vec<Option<(u64, Arc<Open>)>>,
}

impl std::fmt::Debug for ScanFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.slots.iter().flatten().count();
        f.debug_struct("ScanFiles").field("kept", &kept).finish()
    }
}

impl ScanFiles {
    /// [`BlobStore::view_or_read_into`] for a scan: a value in a file kept here is read
    /// without the store's lock; a mapped file the store opens for it is kept.
    pub fn read_into(
        &mut self,
        store: &BlobStore,
        user_key: &[u8],
        encoded_ref: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Option<BlobView>> {
        let r = BlobRef::decode(encoded_ref)?;
        let mut fresh = None;
        if !self.has(r.file) {
            let open = store.open(r.file).map_err(store.located(r.file))?;
            fresh = self.keep(r.file, open);
        }
        match fresh.as_deref().or_else(|| self.get(r.file)) {
            Some(open) => view_or_read_in(user_key, &r, open, out),
            None => return store.view_or_read_into(user_key, encoded_ref, out),
        }
        .map_err(store.located(r.file))
    }

    /// How many files are kept.
    #[cfg(test)]
    pub(super) fn kept(&self) -> usize {
        self.slots.iter().flatten().count()
    }

    /// Whether blob file `file` is kept.
    fn has(&self, file: u64) -> bool {
        self.get(file).is_some()
    }

    /// Blob file `file`'s entry, if kept.
    fn get(&self, file: u64) -> Option<&Open> {
        match self.slots.get(file as usize % SLOTS) {
            Some(Some((f, open))) if *f == file => Some(open),
            _ => None,
        }
    }

    /// Keeps `open`, blob file `file`'s entry, if the file is mapped (in its slot, in
    /// place of the file there); gives it back if not.
    fn keep(&mut self, file: u64, open: Arc<Open>) -> Option<Arc<Open>> {
        if open.mapped().is_none() {
            return Some(open);
        }
        if self.slots.is_empty() {
            self.slots.resize_with(SLOTS, || None);
        }
        self.slots[file as usize % SLOTS] = Some((file, open));
        None
    }

    /// Asks the CPU for the first lines of the record `encoded_ref` points to, if its file
    /// is kept. Anything else (a ref that does not decode, a file not kept, a record past
    /// the map's end): nothing.
    pub fn ask(&self, encoded_ref: &[u8]) {
        let Ok(r) = BlobRef::decode(encoded_ref) else {
            return;
        };
        let record = self
            .get(r.file)
            .and_then(|open| open.mapped())
            .and_then(|m| {
                let start = usize::try_from(r.offset).ok()?;
                m.get(start..start.checked_add((r.record_len as usize).min(AHEAD))?)
            });
        if let Some(bytes) = record {
            crate::prefetch::lines(bytes);
        }
    }
}
