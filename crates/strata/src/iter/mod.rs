//! The one cursor trait every sorted layer implements: blocks, tables, memtables, merging
//! and database iterators.
//!
//! A cursor is either positioned at an entry (`valid()`) or not. Positioning calls never
//! return errors; a cursor that meets an error becomes invalid and keeps the first error
//! for [`Cursor::status`]. So a loop is `while c.valid() { ...; c.next() }` followed by
//! `c.status()?`: an error can never pass for the end of the data.

use crate::error::Result;

/// A position in a sorted sequence of `(key, value)` entries.
pub trait Cursor {
    /// True when positioned at an entry.
    fn valid(&self) -> bool;
    /// Moves to the first entry.
    fn seek_to_first(&mut self);
    /// Moves to the last entry.
    fn seek_to_last(&mut self);
    /// Moves to the first entry whose key is at or after `target`.
    fn seek(&mut self, target: &[u8]);
    /// Moves to the next entry. Requires: `valid()` (otherwise does nothing).
    fn next(&mut self);
    /// Moves to the previous entry. Requires: `valid()` (otherwise does nothing).
    fn prev(&mut self);
    /// The current key; empty when not valid.
    fn key(&self) -> &[u8];
    /// The current value; empty when not valid.
    fn value(&self) -> &[u8];
    /// The first error met, if any.
    fn status(&self) -> Result<()>;
    /// A look at the entry after the current one, when it is cheap to see without moving:
    /// the last bytes of its key (at least its last 8, or the whole key) and its value.
    /// Only a hint, for asking the CPU early for what the next steps will read: it may be
    /// `None` anywhere, and a merge of several children may name an entry that comes a
    /// few steps later than the next one. Nothing may depend on it but timing.
    fn next_hint(&self) -> Option<Hint<'_>> {
        None
    }
}

/// What [`Cursor::next_hint`] shows of the next entry.
#[derive(Debug, Clone, Copy)]
pub struct Hint<'a> {
    /// The key's last bytes: at least 8 (an internal key's tag), or the whole key.
    pub key_tail: &'a [u8],
    /// The value.
    pub value: &'a [u8],
}

#[cfg(test)]
pub(crate) mod conformance;
mod merging;
mod two_level;

pub use merging::MergingIter;
pub use two_level::{Parts, TwoLevel};

/// The `status` of a cursor that keeps its first error in `err`.
pub(crate) fn status_of(err: &Option<crate::error::Error>) -> Result<()> {
    match err {
        Some(e) => Err(e.clone()),
        None => Ok(()),
    }
}

/// A boxed cursor, the currency of iterator trees.
pub type BoxCursor = Box<dyn Cursor + Send>;

impl<C: Cursor + ?Sized> Cursor for Box<C> {
    fn valid(&self) -> bool {
        (**self).valid()
    }
    fn seek_to_first(&mut self) {
        (**self).seek_to_first()
    }
    fn seek_to_last(&mut self) {
        (**self).seek_to_last()
    }
    fn seek(&mut self, target: &[u8]) {
        (**self).seek(target)
    }
    fn next(&mut self) {
        (**self).next()
    }
    fn prev(&mut self) {
        (**self).prev()
    }
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    fn value(&self) -> &[u8] {
        (**self).value()
    }
    fn status(&self) -> Result<()> {
        (**self).status()
    }
    fn next_hint(&self) -> Option<Hint<'_>> {
        (**self).next_hint()
    }
}

/// A cursor with nothing in it but an error: stands in for a child that could not be
/// opened, so that the error reaches the reader instead of the data silently missing.
#[derive(Debug)]
pub struct ErrorCursor(pub crate::error::Error);

impl Cursor for ErrorCursor {
    fn valid(&self) -> bool {
        false
    }
    fn seek_to_first(&mut self) {}
    fn seek_to_last(&mut self) {}
    fn seek(&mut self, _target: &[u8]) {}
    fn next(&mut self) {}
    fn prev(&mut self) {}
    fn key(&self) -> &[u8] {
        &[]
    }
    fn value(&self) -> &[u8] {
        &[]
    }
    fn status(&self) -> Result<()> {
        Err(self.0.clone())
    }
}
