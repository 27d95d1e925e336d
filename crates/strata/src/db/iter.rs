//! The database's iterators: [`DbIterator`], a cursor over user keys as of a seqnum, and
//! [`Range`], a Rust iterator over a key range on top of it.
//!
//! [`DbIterator`] reads the merge of every memtable and table (internal keys) and shows,
//! for each user key, only its newest version at or before the read seqnum, hiding
//! deletions. Going forward, the merge sits on the entry shown; going backward, it sits
//! before all entries of the shown key, whose value is kept in `saved_value`.
//!
//! Invariant:
//! - I3 while the cursor is valid, `saved_key` holds the user key shown, in either
//!   direction. Going forward it is also the key whose older versions the next step
//!   skips, so a step copies each key once and `key()` reads no child.

use std::ops::Bound;
use std::sync::Arc;

use crate::blob::{BlobStore, ScanFiles};
use crate::comparator::InternalOrder;
use crate::error::{Error, Result};
use crate::iter::{Cursor, MergingIter};
use crate::key::{self, ParsedInternalKey, SeqNum, ValueType, make_internal_key};
use crate::memtable::MemTable;
use crate::version::Version;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// A cursor over the database's user keys and values as of one seqnum. Not `Send`: use
/// it on the thread that made it.
pub struct DbIterator {
    inner: MergingIter,
    seqnum: SeqNum,
    direction: Direction,
    valid: bool,
    saved_key: Vec<u8>,
    saved_value: Vec<u8>,
    /// Going forward, the value of the entry shown when it is in a blob file
    /// (`blob_shown`); otherwise a buffer kept for the next such value.
    blob_value: Vec<u8>,
    blob_shown: bool,
    /// The shown entry's value in place, when it lies raw in a mapped blob file (read
    /// before `blob_value` and `saved_value`).
    blob_view: Option<crate::blob::BlobView>,
    blobs: Arc<BlobStore>,
    /// The blob files this cursor has read from: read again without the store's lock,
    /// and, going forward, the next value's record asked for while this one is read.
    files: ScanFiles,
    err: Option<Error>,
    /// Keeps the tables the merge reads from being deleted (V3).
    version: Arc<Version>,
    /// Keeps the blob files the memtables' refs lead to (X3).
    _mems: Vec<Arc<MemTable>>,
}

impl std::fmt::Debug for DbIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbIterator")
            .field("seqnum", &self.seqnum)
            .field("valid", &self.valid)
            .finish_non_exhaustive()
    }
}

impl DbIterator {
    pub(crate) fn new(
        inner: MergingIter,
        seqnum: SeqNum,
        version: Arc<Version>,
        mems: Vec<Arc<MemTable>>,
        blobs: Arc<BlobStore>,
    ) -> Self {
        DbIterator {
            _mems: mems,
            blob_value: Vec::new(),
            blob_shown: false,
            blob_view: None,
            blobs,
            files: ScanFiles::default(),
            inner,
            seqnum,
            direction: Direction::Forward,
            valid: false,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            err: None,
            version,
        }
    }

    /// The current entry, parsed if it is visible at our seqnum. A key that does not
    /// parse is corruption: the cursor stops there with the error.
    fn visible(&mut self) -> Option<Option<(ValueType, usize)>> {
        match ParsedInternalKey::parse(self.inner.key()) {
            Some(p) => Some((p.seqnum <= self.seqnum).then_some((p.ty, p.user_key.len()))),
            None => {
                self.corrupt_key();
                None
            }
        }
    }

    fn corrupt_key(&mut self) {
        self.err = Some(Error::corruption(
            "",
            0,
            "bad internal key in a table or memtable",
        ));
        self.valid = false;
    }

    /// The database's order (user keys are compared with `compare_user`).
    fn order(&self) -> &InternalOrder {
        &self.version.order
    }

    /// Moves forward to the first visible entry that is not deleted (and, when
    /// `skipping`, whose user key is after `saved_key`). Landing on one, `saved_key`
    /// becomes its user key (I3).
    fn find_next_user_entry(&mut self, mut skipping: bool) {
        self.blob_view = None;
        while self.inner.valid() {
            // The key is read once per entry: each read walks the iterator tree.
            let Some(p) = ParsedInternalKey::parse(self.inner.key()) else {
                return self.corrupt_key();
            };
            if p.seqnum <= self.seqnum {
                match p.ty {
                    ValueType::Deletion => {
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(p.user_key);
                        skipping = true;
                    }
                    ValueType::Value | ValueType::BlobRef => {
                        let hidden = skipping
                            && self
                                .order()
                                .compare_user(p.user_key, &self.saved_key)
                                .is_le();
                        if !hidden {
                            self.valid = true;
                            self.saved_key.clear();
                            self.saved_key.extend_from_slice(p.user_key);
                            self.blob_shown = false;
                            if p.ty == ValueType::BlobRef {
                                self.ask_ahead();
                                match self.files.read_into(
                                    &self.blobs,
                                    p.user_key,
                                    self.inner.value(),
                                    &mut self.blob_value,
                                ) {
                                    Ok(view) => {
                                        self.blob_view = view;
                                        self.blob_shown = true;
                                    }
                                    Err(e) => {
                                        self.err = Some(e);
                                        self.valid = false;
                                    }
                                }
                            }
                            return;
                        }
                    }
                }
            }
            self.inner.next();
        }
        self.saved_key.clear();
        self.valid = false;
    }

    /// Asks for the record of the next entry's value, when the merge shows it is a ref
    /// (a hint: it may be an older version, or a later entry).
    fn ask_ahead(&self) {
        let Some(hint) = self.inner.next_hint() else {
            return;
        };
        // The tail ends with the key's tag, which is all `parse` reads of it here.
        if ParsedInternalKey::parse(hint.key_tail).is_some_and(|p| p.ty == ValueType::BlobRef) {
            self.files.ask(hint.value);
        }
    }

    fn find_prev_user_entry(&mut self) {
        self.blob_view = None;
        let mut value_type = ValueType::Deletion;
        while self.inner.valid() {
            let Some(entry) = self.visible() else { return };
            if let Some((ty, _)) = entry {
                let user = key::user_key(self.inner.key());
                if value_type != ValueType::Deletion
                    && self.order().compare_user(user, &self.saved_key).is_lt()
                {
                    break; // the previous key's newest visible entry is found
                }
                value_type = ty;
                if ty == ValueType::Deletion {
                    self.saved_key.clear();
                    self.saved_value.clear();
                } else {
                    self.saved_key.clear();
                    self.saved_key.extend_from_slice(user);
                    self.saved_value.clear();
                    self.saved_value.extend_from_slice(self.inner.value());
                }
            }
            self.inner.prev();
        }
        if value_type == ValueType::Deletion {
            self.valid = false;
            self.saved_key.clear();
            self.saved_value.clear();
            self.direction = Direction::Forward;
        } else if value_type == ValueType::BlobRef {
            // Only the newest visible version's ref is followed.
            match self.files.read_into(
                &self.blobs,
                &self.saved_key,
                &self.saved_value,
                &mut self.blob_value,
            ) {
                Ok(view) => {
                    if view.is_none() {
                        std::mem::swap(&mut self.saved_value, &mut self.blob_value);
                    }
                    self.blob_view = view;
                    self.valid = true;
                }
                Err(e) => {
                    self.err = Some(e);
                    self.valid = false;
                }
            }
        } else {
            self.valid = true;
        }
    }

    /// True when positioned at an entry.
    pub fn valid(&self) -> bool {
        self.valid && self.err.is_none()
    }

    /// Moves to the first key.
    pub fn seek_to_first(&mut self) {
        self.direction = Direction::Forward;
        self.saved_value.clear();
        self.inner.seek_to_first();
        if self.inner.valid() {
            self.find_next_user_entry(false);
        } else {
            self.valid = false;
        }
    }

    /// Moves to the last key.
    pub fn seek_to_last(&mut self) {
        self.direction = Direction::Reverse;
        self.saved_value.clear();
        self.inner.seek_to_last();
        self.find_prev_user_entry();
    }

    /// Moves to the first key at or after `target`.
    pub fn seek(&mut self, target: &[u8]) {
        self.direction = Direction::Forward;
        self.saved_key.clear();
        self.saved_value.clear();
        self.inner
            .seek(&make_internal_key(target, self.seqnum, ValueType::FOR_SEEK));
        if self.inner.valid() {
            self.find_next_user_entry(false);
        } else {
            self.valid = false;
        }
    }

    /// Moves to the next key. Requires: `valid()`.
    pub fn next(&mut self) {
        if !self.valid() {
            return;
        }
        if self.direction == Direction::Reverse {
            // The merge is before every entry of saved_key: step into them, then skip.
            self.direction = Direction::Forward;
            if self.inner.valid() {
                self.inner.next();
            } else {
                self.inner.seek_to_first();
            }
        } else {
            // `saved_key` is the shown key already (I3): the entries of it that follow
            // are skipped.
            self.inner.next();
        }
        if !self.inner.valid() {
            self.valid = false;
            self.saved_key.clear();
            return;
        }
        self.find_next_user_entry(true);
    }

    /// Moves to the previous key. Requires: `valid()`.
    pub fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        if self.direction == Direction::Forward {
            // Back up before every entry of the current key.
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(key::user_key(self.inner.key()));
            loop {
                self.inner.prev();
                if !self.inner.valid() {
                    self.valid = false;
                    self.saved_key.clear();
                    self.saved_value.clear();
                    return;
                }
                if self
                    .order()
                    .compare_user(key::user_key(self.inner.key()), &self.saved_key)
                    .is_lt()
                {
                    break;
                }
            }
            self.direction = Direction::Reverse;
        }
        self.find_prev_user_entry();
    }

    /// The current key; empty when not valid.
    pub fn key(&self) -> &[u8] {
        if !self.valid() {
            return &[];
        }
        // Either way the shown key is in `saved_key` (I3).
        &self.saved_key
    }

    /// The current value; empty when not valid.
    pub fn value(&self) -> &[u8] {
        if !self.valid() {
            return &[];
        }
        if let Some(view) = &self.blob_view {
            return view;
        }
        match (self.direction, self.blob_shown) {
            (Direction::Forward, true) => &self.blob_value,
            (Direction::Forward, false) => self.inner.value(),
            (Direction::Reverse, _) => &self.saved_value,
        }
    }

    /// The first error met, if any. Check it when `valid()` turns false: an error ends
    /// the iteration just as the end of the data does.
    pub fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => self.inner.status(),
        }
    }
}

/// A key and its value.
pub type KeyValue = (Vec<u8>, Vec<u8>);

/// A Rust iterator over a key range, forward or reverse. Yields `Err` once, then ends,
/// if reading fails.
#[derive(Debug)]
pub struct Range {
    cursor: DbIterator,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    reverse: bool,
    started: bool,
    done: bool,
}

impl Range {
    pub(crate) fn new(
        cursor: DbIterator,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
        reverse: bool,
    ) -> Self {
        Range {
            cursor,
            lower,
            upper,
            reverse,
            started: false,
            done: false,
        }
    }

    fn start(&mut self) {
        let c = &mut self.cursor;
        if self.reverse {
            match &self.upper {
                Bound::Unbounded => c.seek_to_last(),
                Bound::Included(k) | Bound::Excluded(k) => {
                    c.seek(k);
                    let inclusive = matches!(self.upper, Bound::Included(_));
                    if !c.valid() {
                        if c.status().is_ok() {
                            c.seek_to_last();
                        }
                    } else if !(inclusive && c.key() == k.as_slice()) {
                        c.prev();
                    }
                }
            }
        } else {
            match &self.lower {
                Bound::Unbounded => c.seek_to_first(),
                Bound::Included(k) => c.seek(k),
                Bound::Excluded(k) => {
                    c.seek(k);
                    if c.valid() && c.key() == k.as_slice() {
                        c.next();
                    }
                }
            }
        }
    }

    fn in_range(&self, k: &[u8]) -> bool {
        in_bounds(
            self.cursor.order(),
            k,
            self.lower.as_ref().map(Vec::as_slice),
            self.upper.as_ref().map(Vec::as_slice),
        )
    }
}

/// True if user key `k` lies between `lower` and `upper` in the database's order.
#[inline]
pub(super) fn in_bounds(
    order: &InternalOrder,
    k: &[u8],
    lower: Bound<&[u8]>,
    upper: Bound<&[u8]>,
) -> bool {
    let above_lower = match lower {
        Bound::Unbounded => true,
        Bound::Included(l) => order.compare_user(k, l).is_ge(),
        Bound::Excluded(l) => order.compare_user(k, l).is_gt(),
    };
    let below_upper = match upper {
        Bound::Unbounded => true,
        Bound::Included(u) => order.compare_user(k, u).is_le(),
        Bound::Excluded(u) => order.compare_user(k, u).is_lt(),
    };
    above_lower && below_upper
}

impl Iterator for Range {
    type Item = Result<KeyValue>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.started {
            if self.reverse {
                self.cursor.prev();
            } else {
                self.cursor.next();
            }
        } else {
            self.started = true;
            self.start();
        }
        if !self.cursor.valid() {
            self.done = true;
            return self.cursor.status().err().map(Err);
        }
        let k = self.cursor.key();
        if !self.in_range(k) {
            self.done = true;
            return None;
        }
        Some(Ok((k.to_vec(), self.cursor.value().to_vec())))
    }
}
