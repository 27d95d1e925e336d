//! Key-value separation: values at or above [`crate::Options::blob_threshold`] are
//! written once, at write time, to a *blob file*, and everything else (the WAL, the
//! memtable, tables, compactions) carries a small [`BlobRef`] in their place. Formats:
//! `docs/format/blob.md`; the design and its measurements: `docs/design.md`.
//!
//! A blob file is the companion of a WAL: the writer of log `N` puts the large values of
//! its batches in `N.blob`. It is append-only and never rewritten; a record, once
//! referenced, stays where it is until its whole file is dead, or until no reader can
//! reach it any more, when its blocks may be given back as a hole (X6,
//! `db/blob_holes.rs`).
//!
//! Invariants:
//! - X1 A ref is published (in the WAL, then the memtable) only after its record was
//!   handed to the file (`flush`), so any reader that finds the ref can read the record;
//!   a synced write syncs the blob file before its WAL record (so the ref never outlives
//!   the record on disk for an acknowledged synced write).
//! - X2 Every record carries its key and a CRC-32C of key and value; a read checks the
//!   CRC, the value's length against the ref and the key against the one looked up, so
//!   a damaged blob or a ref to the wrong place is an error, never a wrong value.
//! - X3 A blob file is live while the manifest names it or its log is still needed
//!   (number at or above the version's log number); the manifest names it from the flush
//!   that turns its log's memtable into a table.
//! - X5 A record's CRC is skipped only at a read for a caller (a get or a scan) through
//!   the same open map of a sealed file where a check of the record at the same offset
//!   passed (records of 512 bytes or more, each with a slot of its own per 512 bytes of
//!   the file, `checked.rs`); lengths and key are checked at every read, and reads that
//!   verify or copy values into new files check every CRC (`store.rs`).

mod checked;
mod file;
mod scan;
mod store;

#[cfg(test)]
pub use file::BLOB_MAGIC;
pub use file::{BlobWriter, decode_record, decode_split, record_header_len};
pub use scan::ScanFiles;
pub use store::{BlobStore, BlobView};

use crate::coding::{Decoder, put_varint32, put_varint64};
use crate::error::{Error, Result};

/// Where a value lives: the value stored, in place of the value, under an entry of type
/// [`crate::key::ValueType::BlobRef`].
///
/// ```text
/// file varint64 | offset varint64 | record_len varint32 | value_len varint32
///     [ kind varint32 (1: Snappy) | raw_len varint32 ]
/// ```
///
/// The last two fields are present only for a value stored compressed: `value_len` is
/// then the length stored in the record, `raw_len` the value's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobRef {
    /// The blob file's number (that of its WAL).
    pub file: u64,
    /// The offset of the record in the file.
    pub offset: u64,
    /// The record's size in bytes, header included.
    pub record_len: u32,
    /// The size in bytes of the value as the record stores it.
    pub value_len: u32,
    /// For a value stored Snappy-compressed, its length once decompressed.
    pub raw_len: Option<u32>,
}

/// The `kind` of a ref to a Snappy-compressed value.
const KIND_SNAPPY: u32 = 1;

impl BlobRef {
    /// Largest encoded size.
    pub const MAX_ENCODED_LEN: usize = 10 + 10 + 5 + 5 + 5 + 5;

    /// The value's own length (after decompression, if stored compressed).
    pub fn raw_len(&self) -> u32 {
        self.raw_len.unwrap_or(self.value_len)
    }

    /// Appends the encoding to `dst`.
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.file);
        put_varint64(dst, self.offset);
        put_varint32(dst, self.record_len);
        put_varint32(dst, self.value_len);
        if let Some(raw) = self.raw_len {
            put_varint32(dst, KIND_SNAPPY);
            put_varint32(dst, raw);
        }
    }

    #[cfg(test)]
    /// The encoding.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::MAX_ENCODED_LEN);
        self.encode_to(&mut v);
        v
    }

    /// Decodes a ref; anything but exactly one ref is corruption.
    pub fn decode(src: &[u8]) -> Result<Self> {
        let mut d = Decoder::new(src);
        let mut r = BlobRef {
            file: d.varint64("blob ref file")?,
            offset: d.varint64("blob ref offset")?,
            record_len: d.varint32("blob ref record length")?,
            value_len: d.varint32("blob ref value length")?,
            raw_len: None,
        };
        if !d.is_empty() {
            let kind = d.varint32("blob ref kind")?;
            if kind != KIND_SNAPPY {
                return Err(Error::corruption(
                    "",
                    d.position() as u64,
                    format!("blob ref of unknown kind {kind}"),
                ));
            }
            r.raw_len = Some(d.varint32("blob ref raw length")?);
        }
        if !d.is_empty() {
            return Err(Error::corruption(
                "",
                d.position() as u64,
                format!(
                    "blob ref has {} bytes after its fields",
                    d.remaining().len()
                ),
            ));
        }
        if u64::from(r.value_len) >= u64::from(r.record_len) {
            return Err(Error::corruption(
                "",
                0,
                format!(
                    "blob ref value length {} not below its record length {}",
                    r.value_len, r.record_len
                ),
            ));
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests;
