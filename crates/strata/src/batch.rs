//! Write batches: a group of puts and deletes applied atomically. Format:
//! `docs/format/batch.md`.
//!
//! ```text
//! seqnum fixed64 | count fixed32 | record*
//! record := 0x01 key:length-prefixed value:length-prefixed    (put)
//!         | 0x00 key:length-prefixed                          (delete)
//!         | 0x02 key:length-prefixed ref:length-prefixed      (put, value in a blob file)
//! ```
//!
//! Tag 2 is written by the engine only, in place of a large value's put when value
//! separation is on (`crate::blob`); LevelDB does not know it.
//!
//! The encoded batch is the payload of one WAL record. Its first record gets `seqnum`, the
//! next `seqnum + 1`, and so on.
//!
//! A range delete ([`WriteBatch::delete_range`]) has no record: LevelDB's format has no
//! range tombstone. The batch keeps it beside its records, at its place among them, and
//! the write path expands it into one delete per key in the range when the batch is
//! written (`db/range_delete.rs`), so what reaches the log is plain deletes that LevelDB
//! reads.
//!
//! Invariants:
//! - B1 `count` equals the number of records; a decoded batch whose records do
//!   not match its count, or that has bytes after its last record, is corrupt.
//! - B2 a batch's pending range deletes never reach the log: the write path expands
//!   them first (a batch decoded from disk has none).

use crate::coding::{Decoder, decode_fixed32, decode_fixed64, put_length_prefixed};
use crate::error::{Error, Result};
use crate::key::{SeqNum, ValueType};

/// Size of the batch header: seqnum (8) and count (4).
pub const HEADER_SIZE: usize = 12;

/// One operation of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// Set `key` to `value`.
    Put(&'a [u8], &'a [u8]),
    /// Remove `key`.
    Delete(&'a [u8]),
    /// Set `key` to the value an encoded `blob::BlobRef` points to: seen only in
    /// batches read back from a write-ahead log written with value separation on (a
    /// batch a user builds never holds one).
    BlobRef(&'a [u8], &'a [u8]),
}

impl<'a> BatchOp<'a> {
    /// The key the operation writes.
    pub(crate) fn key(&self) -> &'a [u8] {
        match *self {
            BatchOp::Put(k, _) | BatchOp::Delete(k) | BatchOp::BlobRef(k, _) => k,
        }
    }
}

/// An atomic group of writes, kept in its encoded form.
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    /// Range deletes not yet expanded (B2), in the order they were added.
    ranges: Vec<PendingRange>,
}

/// A range delete waiting for the write path: `[start, end)`, after the first `at`
/// records of the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PendingRange {
    pub(crate) at: u32,
    pub(crate) start: Vec<u8>,
    pub(crate) end: Vec<u8>,
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch")
            .field("seqnum", &self.seqnum())
            .field("count", &self.len())
            .field("bytes", &self.rep.len())
            .field("range_deletes", &self.ranges.len())
            .finish()
    }
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        WriteBatch {
            rep: vec![0; HEADER_SIZE],
            ranges: Vec::new(),
        }
    }

    /// An empty batch with room for `bytes` of encoded operations.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(HEADER_SIZE + bytes);
        rep.resize(HEADER_SIZE, 0);
        WriteBatch {
            rep,
            ranges: Vec::new(),
        }
    }

    /// Adds a put.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.set_count(self.len() + 1);
        self.rep.push(ValueType::Value as u8);
        put_length_prefixed(&mut self.rep, key.as_ref());
        put_length_prefixed(&mut self.rep, value.as_ref());
    }

    /// Adds a put whose value is in a blob file (the engine's write path only).
    pub(crate) fn put_blob_ref(&mut self, key: &[u8], encoded_ref: &[u8]) {
        self.set_count(self.len() + 1);
        self.rep.push(ValueType::BlobRef as u8);
        put_length_prefixed(&mut self.rep, key);
        put_length_prefixed(&mut self.rep, encoded_ref);
    }

    /// Adds a delete.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) {
        self.set_count(self.len() + 1);
        self.rep.push(ValueType::Deletion as u8);
        put_length_prefixed(&mut self.rep, key.as_ref());
    }

    /// Adds a range delete: every key `k` with `start <= k < end` in the database's
    /// comparator, as the batch finds the database when it is written, is deleted, after
    /// the operations added before it and before those added after it. Readers, snapshots
    /// and iterators see exactly what one delete per key would give, atomically with the
    /// rest of the batch. An empty range (`start >= end`) deletes nothing.
    ///
    /// It costs what those deletes cost: the write path reads the keys in the range and
    /// logs a delete for each (LevelDB's format has no range tombstone, so a database
    /// written this way still opens in LevelDB). A batch holding a range delete is
    /// written alone, not in a group with other writers' batches.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let options = strata::Options { create_if_missing: true, ..Default::default() };
    /// let db = strata::Db::open(dir.path(), options)?;
    /// for k in ["a", "b", "c", "d"] {
    ///     db.put(k, "v")?;
    /// }
    /// let mut batch = strata::WriteBatch::new();
    /// batch.put("bb", "new");
    /// batch.delete_range("b", "d"); // deletes b, bb and c; keeps a and d
    /// db.write(batch)?;
    /// let keys: Vec<_> = db.range::<&[u8]>(..).map(|e| e.map(|(k, _)| k)).collect::<Result<_, _>>()?;
    /// assert_eq!(keys, [b"a".to_vec(), b"d".to_vec()]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_range(&mut self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) {
        self.ranges.push(PendingRange {
            at: self.len(),
            start: start.as_ref().to_vec(),
            end: end.as_ref().to_vec(),
        });
    }

    /// Removes every operation.
    pub fn clear(&mut self) {
        self.rep.clear();
        self.rep.resize(HEADER_SIZE, 0);
        self.ranges.clear();
    }

    /// Number of records (puts and deletes; pending range deletes not counted).
    pub fn len(&self) -> u32 {
        decode_fixed32(&self.rep[8..]).unwrap_or(0)
    }

    /// True when the batch holds no operation (no record and no range delete).
    pub fn is_empty(&self) -> bool {
        self.len() == 0 && self.ranges.is_empty()
    }

    /// True when the batch holds range deletes not yet expanded.
    pub(crate) fn has_ranges(&self) -> bool {
        !self.ranges.is_empty()
    }

    /// The pending range deletes, leaving none (the write path expands them, B2).
    pub(crate) fn take_ranges(&mut self) -> Vec<PendingRange> {
        std::mem::take(&mut self.ranges)
    }

    /// Size of the encoded batch in bytes.
    pub fn approximate_size(&self) -> usize {
        self.rep.len()
    }

    /// The seqnum of the first operation.
    pub fn seqnum(&self) -> SeqNum {
        decode_fixed64(&self.rep).unwrap_or(0)
    }

    /// Sets the seqnum of the first operation.
    pub(crate) fn set_seqnum(&mut self, seqnum: SeqNum) {
        self.rep[..8].copy_from_slice(&seqnum.to_le_bytes());
    }

    fn set_count(&mut self, count: u32) {
        self.rep[8..12].copy_from_slice(&count.to_le_bytes());
    }

    /// Appends the operations of `other` (its seqnum is ignored).
    pub fn append(&mut self, other: &WriteBatch) {
        let before = self.len();
        self.ranges
            .extend(other.ranges.iter().map(|r| PendingRange {
                at: before + r.at,
                ..r.clone()
            }));
        self.set_count(self.len() + other.len());
        self.rep.extend_from_slice(&other.rep[HEADER_SIZE..]);
    }

    /// The encoded batch: a WAL record's payload (pending range deletes are not in it,
    /// B2).
    pub fn as_bytes(&self) -> &[u8] {
        &self.rep
    }

    /// Takes an encoded batch read from disk, checking its header and records (B1).
    pub fn from_bytes(rep: Vec<u8>) -> Result<Self> {
        if rep.len() < HEADER_SIZE {
            return Err(Error::corruption(
                "",
                0,
                format!(
                    "write batch too small: {} bytes, header is {HEADER_SIZE}",
                    rep.len()
                ),
            ));
        }
        let batch = WriteBatch {
            rep,
            ranges: Vec::new(),
        };
        let mut n = 0u32;
        for op in batch.iter() {
            op?;
            n += 1;
        }
        if n != batch.len() {
            return Err(Error::corruption(
                "",
                8,
                format!(
                    "write batch count says {} but it holds {n} records",
                    batch.len()
                ),
            ));
        }
        Ok(batch)
    }

    /// The operations in order. Each item is an error if the record is malformed; after
    /// an error the iterator ends.
    pub fn iter(&self) -> BatchIter<'_> {
        BatchIter {
            decoder: Decoder::new(self.rep.get(HEADER_SIZE..).unwrap_or_default()),
            failed: false,
        }
    }
}

/// Iterator over a batch's operations.
#[derive(Debug)]
pub struct BatchIter<'a> {
    decoder: Decoder<'a>,
    failed: bool,
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Result<BatchOp<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.decoder.is_empty() {
            return None;
        }
        let op = self.decode_one();
        if op.is_err() {
            self.failed = true;
        }
        Some(op.map_err(|e| e.located("", HEADER_SIZE as u64)))
    }
}

impl<'a> BatchIter<'a> {
    fn decode_one(&mut self) -> Result<BatchOp<'a>> {
        let at = self.decoder.position();
        let tag = self.decoder.u8("batch record tag")?;
        match ValueType::from_byte(tag) {
            Some(ValueType::Value) => {
                let key = self.decoder.length_prefixed("put key")?;
                let value = self.decoder.length_prefixed("put value")?;
                Ok(BatchOp::Put(key, value))
            }
            Some(ValueType::Deletion) => {
                Ok(BatchOp::Delete(self.decoder.length_prefixed("delete key")?))
            }
            Some(ValueType::BlobRef) => {
                let key = self.decoder.length_prefixed("blob put key")?;
                let r = self.decoder.length_prefixed("blob put ref")?;
                Ok(BatchOp::BlobRef(key, r))
            }
            None => Err(Error::corruption(
                "",
                at as u64,
                format!("unknown batch record tag {tag}"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn encoding_matches_the_format() {
        let mut b = WriteBatch::new();
        b.put(b"k", b"vv");
        b.delete(b"d");
        b.set_seqnum(0x0102);
        assert_eq!(
            b.as_bytes(),
            b"\x02\x01\0\0\0\0\0\0\x02\0\0\0\x01\x01k\x02vv\x00\x01d"
        );
        let ops: Vec<_> = b.iter().map(Result::unwrap).collect();
        assert_eq!(ops, vec![BatchOp::Put(b"k", b"vv"), BatchOp::Delete(b"d")]);
        assert_eq!(b.len(), 2);
        assert_eq!(b.seqnum(), 0x0102);
    }

    #[test]
    fn clear_and_append() {
        let mut a = WriteBatch::new();
        a.put("a", "1");
        let mut b = WriteBatch::new();
        b.delete("b");
        b.put("c", "3");
        a.append(&b);
        assert_eq!(a.len(), 3);
        let ops: Vec<_> = a.iter().map(Result::unwrap).collect();
        assert_eq!(ops[2], BatchOp::Put(b"c", b"3"));
        a.clear();
        assert!(a.is_empty());
        assert_eq!(a.approximate_size(), HEADER_SIZE);
    }

    #[test]
    fn corrupt_batches_are_rejected() {
        assert!(WriteBatch::from_bytes(vec![0; 11]).is_err());
        let mut b = WriteBatch::new();
        b.put("key", "value");
        let good = b.as_bytes().to_vec();
        // Wrong count.
        let mut bad = good.clone();
        bad[8] = 2;
        let err = WriteBatch::from_bytes(bad).unwrap_err();
        assert!(err.to_string().contains("count"), "{err}");
        // Unknown tag, with its offset.
        let mut bad = good.clone();
        bad[12] = 9;
        let err = WriteBatch::from_bytes(bad).unwrap_err();
        assert_eq!(err.as_corruption().unwrap().offset, 12);
        // Truncated value.
        let err = WriteBatch::from_bytes(good[..good.len() - 1].to_vec()).unwrap_err();
        assert!(err.is_corruption());
        assert!(WriteBatch::from_bytes(good).is_ok());
    }

    proptest! {
        #[test]
        fn round_trip(ops in proptest::collection::vec((any::<bool>(), proptest::collection::vec(any::<u8>(), 0..20), proptest::collection::vec(any::<u8>(), 0..200)), 0..50), seq in 0u64..(1 << 56)) {
            let mut b = WriteBatch::new();
            for (is_put, k, v) in &ops {
                if *is_put { b.put(k, v) } else { b.delete(k) }
            }
            b.set_seqnum(seq);
            let decoded = WriteBatch::from_bytes(b.as_bytes().to_vec()).unwrap();
            prop_assert_eq!(decoded.seqnum(), seq);
            prop_assert_eq!(decoded.len() as usize, ops.len());
            for (op, (is_put, k, v)) in decoded.iter().zip(&ops) {
                let expected = if *is_put { BatchOp::Put(k, v) } else { BatchOp::Delete(k) };
                prop_assert_eq!(op.unwrap(), expected);
            }
        }
    }
}
