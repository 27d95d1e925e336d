//! [`Checked`]: which records of one open map of a blob file passed their CRC check (X5).
//!
//! A slot per [`SPAN`] bytes of the file holds where in the span the record that starts
//! there begins (its offset within the span, plus one; zero for none). Only records of at
//! least `SPAN` bytes are marked or looked up: two of them never start in one span
//! (records do not overlap), so each has a slot of its own, and a lookup matches only the
//! exact offset that was checked. A read still checks the record's lengths against its
//! ref and its key against the one looked up.
//!
//! A slot costs one load to look up and one store to mark, where a set of offsets behind
//! a mutex cost more than the CRC of a 1 KiB record (so records under 4 KiB were checked
//! at every read). The slots take a 256th of the file's size, allocated at the first
//! mark: 16 KiB for a 4 MiB blob file.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU16, Ordering};

/// Bytes of file per slot, and the least record length marked.
pub(super) const SPAN: usize = 512;

/// The checked records of one map of `len` bytes.
#[derive(Debug)]
pub(super) struct Checked {
    len: usize,
    slots: OnceLock<Box<[AtomicU16]>>,
}

impl Checked {
    /// No record checked yet, in a map of `len` bytes.
    pub(super) fn new(len: usize) -> Self {
        Checked {
            len,
            slots: OnceLock::new(),
        }
    }

    /// Whether a record of `record_len` bytes is marked when checked.
    pub(super) fn keeps(record_len: u32) -> bool {
        record_len as usize >= SPAN
    }

    /// The slot of the record at `offset`, and what it holds once that record is marked.
    fn place(offset: u64) -> Option<(usize, u16)> {
        let offset = usize::try_from(offset).ok()?;
        Some((offset / SPAN, (offset % SPAN) as u16 + 1))
    }

    /// Whether the record of at least [`SPAN`] bytes at `offset` passed its check.
    pub(super) fn contains(&self, offset: u64) -> bool {
        let (Some(slots), Some((slot, mark))) = (self.slots.get(), Self::place(offset)) else {
            return false;
        };
        slots
            .get(slot)
            .is_some_and(|s| s.load(Ordering::Acquire) == mark)
    }

    /// Marks the record of at least [`SPAN`] bytes at `offset` as checked.
    pub(super) fn mark(&self, offset: u64) {
        let Some((slot, mark)) = Self::place(offset) else {
            return;
        };
        let n = self.len.div_ceil(SPAN);
        let slots = self
            .slots
            .get_or_init(|| (0..n).map(|_| AtomicU16::new(0)).collect());
        if let Some(s) = slots.get(slot) {
            s.store(mark, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_names_its_offset_only() {
        let at = 3 * SPAN as u64 + 100;
        let c = Checked::new(10 * SPAN + 7);
        assert!(!c.contains(at), "nothing marked");
        c.mark(at);
        assert!(c.contains(at));
        // Another offset of the same span, and the same place in the spans around it.
        assert!(!c.contains(at + 1));
        assert!(!c.contains(at - 100));
        assert!(!c.contains(at - SPAN as u64));
        assert!(!c.contains(at + SPAN as u64));
        // The first byte of a span and the last span, short of a whole one, are kept too.
        c.mark(0);
        assert!(c.contains(0));
        c.mark(10 * SPAN as u64 + 3);
        assert!(c.contains(10 * SPAN as u64 + 3));
        // Past the map: neither kept nor found.
        c.mark(64 * SPAN as u64);
        assert!(!c.contains(64 * SPAN as u64));
        assert!(!c.contains(u64::MAX));
    }

    #[test]
    fn only_records_of_a_span_or_more_are_kept() {
        assert!(!Checked::keeps(SPAN as u32 - 1));
        assert!(Checked::keeps(SPAN as u32));
    }

    #[test]
    fn marks_from_many_threads_all_stay() {
        let c = Checked::new(SPAN * 256);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let c = &c;
                s.spawn(move || {
                    for i in (t..256).step_by(4) {
                        c.mark(i * SPAN as u64 + i);
                    }
                });
            }
        });
        assert!((0..256u64).all(|i| c.contains(i * SPAN as u64 + i)));
    }
}
