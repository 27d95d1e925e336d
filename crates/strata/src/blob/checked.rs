//! [`Checked`]: which records of one open map of a blob file passed their CRC check (X5).
//!
//! A bit per [`SPAN`] bytes of the file, set for the record that starts in that span.
//! Only records of at least `SPAN` bytes are marked or looked up: two of them never start
//! in one span (records do not overlap), so a bit names one record. A read still checks
//! the record's lengths against its ref and its key against the one looked up, so a ref
//! to the same offset with other lengths never passes for the checked record.
//!
//! The bits cost one load to look up and one atomic OR to set, where a set of offsets
//! behind a mutex cost more than the CRC of a 1 KiB record (so records under 4 KiB were
//! checked at every read). They take a 4096th of the file's size, allocated at the first
//! mark: 1 KiB for a 4 MiB blob file.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes of file per bit, and the least record length marked.
pub(super) const SPAN: usize = 512;

/// The checked records of one map of `len` bytes.
#[derive(Debug)]
pub(super) struct Checked {
    len: usize,
    bits: OnceLock<Box<[AtomicU64]>>,
}

impl Checked {
    /// No record checked yet, in a map of `len` bytes.
    pub(super) fn new(len: usize) -> Self {
        Checked {
            len,
            bits: OnceLock::new(),
        }
    }

    /// Whether a record of `record_len` bytes is marked when checked.
    pub(super) fn keeps(record_len: u32) -> bool {
        record_len as usize >= SPAN
    }

    /// The word and bit of the record at `offset`, if inside the map.
    fn place(offset: u64) -> Option<(usize, u64)> {
        let span = usize::try_from(offset).ok()? / SPAN;
        Some((span / 64, 1 << (span % 64)))
    }

    /// Whether the record of at least [`SPAN`] bytes at `offset` passed its check.
    pub(super) fn contains(&self, offset: u64) -> bool {
        let (Some(bits), Some((word, bit))) = (self.bits.get(), Self::place(offset)) else {
            return false;
        };
        bits.get(word)
            .is_some_and(|w| w.load(Ordering::Acquire) & bit != 0)
    }

    /// Marks the record of at least [`SPAN`] bytes at `offset` as checked.
    pub(super) fn mark(&self, offset: u64) {
        let Some((word, bit)) = Self::place(offset) else {
            return;
        };
        let words = self.len.div_ceil(SPAN).div_ceil(64);
        let bits = self
            .bits
            .get_or_init(|| (0..words).map(|_| AtomicU64::new(0)).collect());
        if let Some(w) = bits.get(word) {
            w.fetch_or(bit, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_names_the_span_its_record_starts_in() {
        let c = Checked::new(10 * SPAN + 7);
        assert!(!c.contains(0), "nothing marked");
        c.mark(3 * SPAN as u64 + 100);
        assert!(c.contains(3 * SPAN as u64 + 100));
        assert!(!c.contains(2 * SPAN as u64 + 100), "the span before");
        assert!(!c.contains(4 * SPAN as u64 + 100), "the span after");
        // The last span, short of a whole one, is kept too.
        c.mark(10 * SPAN as u64 + 3);
        assert!(c.contains(10 * SPAN as u64 + 3));
        // Past the map: neither kept nor found.
        c.mark(64 * SPAN as u64 * 5);
        assert!(!c.contains(64 * SPAN as u64 * 5));
        assert!(!c.contains(u64::MAX));
    }

    #[test]
    fn only_records_of_a_span_or_more_are_kept() {
        assert!(!Checked::keeps(SPAN as u32 - 1));
        assert!(Checked::keeps(SPAN as u32));
    }

    #[test]
    fn marks_from_many_threads_all_stay() {
        let c = std::sync::Arc::new(Checked::new(64 * SPAN * 4));
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let c = &c;
                s.spawn(move || {
                    for i in (t..256).step_by(4) {
                        c.mark(i * SPAN as u64);
                    }
                });
            }
        });
        assert!((0..256u64).all(|i| c.contains(i * SPAN as u64)));
    }
}
