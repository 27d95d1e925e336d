//! [`TwoLevel`]: one cursor over a sequence of parts, each a cursor of its own, named in
//! order by the entries of an outer cursor. A table is one (its index block names the data
//! blocks, `sstable/table.rs`) and so is a level (its file list names the tables,
//! `db/level_iter.rs`); both are this type with their own [`Parts`].
//!
//! Invariants:
//! - I1 `inner`, when present, is the part named by the outer entry `inner_value`, and
//!   the outer cursor stands on that entry.
//! - I2 errors are sticky: after one (from the outer cursor, a part, or opening a part)
//!   the cursor is invalid and `status` reports it.

use super::Cursor;
use crate::error::{Error, Result};

/// How a [`TwoLevel`] cursor opens the part an outer entry names.
pub trait Parts {
    /// A part's cursor.
    type Part: Cursor;
    /// Opens the part that the outer entry's `value` names.
    fn open(&self, value: &[u8]) -> Result<Self::Part>;
    /// Places an error met inside the part named by `value` (file, offset).
    fn locate_part_error(&self, e: Error, _value: &[u8]) -> Error {
        e
    }
    /// Places an error met by the outer cursor.
    fn locate_outer_error(&self, e: Error) -> Error {
        e
    }
}

/// A cursor over the concatenated parts named by `outer` (I1, I2).
pub struct TwoLevel<O: Cursor, P: Parts> {
    outer: O,
    parts: P,
    inner: Option<P::Part>,
    inner_value: Vec<u8>,
    err: Option<Error>,
}

impl<O: Cursor, P: Parts> std::fmt::Debug for TwoLevel<O, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwoLevel")
            .field("outer_valid", &self.outer.valid())
            .field("inner", &self.inner.is_some())
            .field("err", &self.err)
            .finish()
    }
}

impl<O: Cursor, P: Parts> TwoLevel<O, P> {
    /// A cursor over the parts `outer` names, opened with `parts`; unpositioned.
    pub fn new(outer: O, parts: P) -> Self {
        TwoLevel {
            outer,
            parts,
            inner: None,
            inner_value: Vec::new(),
            err: None,
        }
    }

    fn fail(&mut self, e: Error) {
        if self.err.is_none() {
            self.err = Some(e);
        }
        self.inner = None;
    }

    /// Opens the part the outer cursor names (keeping the open one if it is the same).
    fn init_inner(&mut self) {
        if self.err.is_some() || !self.outer.valid() {
            self.inner = None;
            return;
        }
        if self.inner.is_some() && self.outer.value() == &self.inner_value[..] {
            return;
        }
        match self.parts.open(self.outer.value()) {
            Ok(part) => {
                self.inner_value.clear();
                self.inner_value.extend_from_slice(self.outer.value());
                self.inner = Some(part);
            }
            Err(e) => self.fail(e),
        }
    }

    /// Moves an error of the part or of the outer cursor into `err`; false if there is
    /// one.
    fn check(&mut self) -> bool {
        if self.err.is_some() {
            return false;
        }
        if let Some(Err(e)) = self.inner.as_ref().map(|p| p.status()) {
            let e = self.parts.locate_part_error(e, &self.inner_value);
            self.fail(e);
            return false;
        }
        if let Err(e) = self.outer.status() {
            let e = self.parts.locate_outer_error(e);
            self.fail(e);
            return false;
        }
        true
    }

    /// Moves past parts with nothing left in the direction of travel: to the next part's
    /// first entry (`forward`) or the previous part's last.
    fn skip_empty_parts(&mut self, forward: bool) {
        while self.check() && !self.inner.as_ref().is_some_and(|p| p.valid()) {
            if !self.outer.valid() {
                self.inner = None;
                return;
            }
            if forward {
                self.outer.next();
            } else {
                self.outer.prev();
            }
            self.init_inner();
            if let Some(p) = self.inner.as_mut() {
                if forward {
                    p.seek_to_first();
                } else {
                    p.seek_to_last();
                }
            }
        }
    }
}

impl<O: Cursor, P: Parts> Cursor for TwoLevel<O, P> {
    fn valid(&self) -> bool {
        self.err.is_none() && self.inner.as_ref().is_some_and(|p| p.valid())
    }

    fn seek_to_first(&mut self) {
        self.outer.seek_to_first();
        self.init_inner();
        if let Some(p) = self.inner.as_mut() {
            p.seek_to_first();
        }
        self.skip_empty_parts(true);
    }

    fn seek_to_last(&mut self) {
        self.outer.seek_to_last();
        self.init_inner();
        if let Some(p) = self.inner.as_mut() {
            p.seek_to_last();
        }
        self.skip_empty_parts(false);
    }

    fn seek(&mut self, target: &[u8]) {
        self.outer.seek(target);
        self.init_inner();
        if let Some(p) = self.inner.as_mut() {
            p.seek(target);
        }
        self.skip_empty_parts(true);
    }

    fn next(&mut self) {
        if let Some(p) = self.inner.as_mut().filter(|p| p.valid()) {
            p.next();
            self.skip_empty_parts(true);
        }
    }

    fn prev(&mut self) {
        if let Some(p) = self.inner.as_mut().filter(|p| p.valid()) {
            p.prev();
            self.skip_empty_parts(false);
        }
    }

    fn key(&self) -> &[u8] {
        match &self.inner {
            Some(p) if self.err.is_none() => p.key(),
            _ => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match &self.inner {
            Some(p) if self.err.is_none() => p.value(),
            _ => &[],
        }
    }

    fn status(&self) -> Result<()> {
        super::status_of(&self.err)
    }

    /// The part's own hint: none at a part's last entry.
    fn next_hint(&self) -> Option<super::Hint<'_>> {
        self.inner.as_ref().and_then(|p| p.next_hint())
    }
}
