//! The blob file: a magic number, then records, appended and never rewritten.
//!
//! ```text
//! file   := magic(8) record*
//! record := crc fixed32 | key_len varint32 | value_len varint32 | key | value
//! ```
//!
//! `crc` is LevelDB's masked CRC-32C of everything after it in the record.

use super::BlobRef;
use crate::checksum;
use crate::coding::{decode_fixed32, decode_varint32, put_fixed32, put_varint32};
use crate::env::WritableFile;
use crate::error::{Error, Result};

/// The first eight bytes of every blob file.
pub const BLOB_MAGIC: &[u8; 8] = b"strblob\x01";

/// Size of a record's header for a key and value of these sizes.
pub fn record_header_len(key_len: usize, value_len: usize) -> usize {
    4 + crate::coding::varint_length(key_len as u64)
        + crate::coding::varint_length(value_len as u64)
}

use crate::env::WRITEBACK_EVERY;

/// Appends records to blob file `number`. Not thread-safe: the write leader owns it.
pub struct BlobWriter {
    file: Box<dyn WritableFile>,
    number: u64,
    offset: u64,
    header: Vec<u8>,
    /// Records written.
    records: u64,
    /// Bytes known durable.
    synced: u64,
    /// Where the last early writeback was started ([`WRITEBACK_EVERY`]).
    writeback_at: u64,
    /// The file's directory entry is known durable (synced by the caller).
    pub dir_synced: bool,
    /// The first failed append or sync: the file is never written or synced again (a
    /// sync after a failed one proves nothing), every later call returns it.
    failed: Option<Error>,
    /// Values are stored Snappy-compressed when that saves at least an eighth
    /// ([`BlobWriter::with_compression`]).
    /// Boxed: Snappy's encoder holds a 2 KiB table inline, and the write path moves the
    /// state's `Option<BlobWriter>` out and back for every group it commits, blob files
    /// on or off (three copies of it, about 650 instructions a write in callgrind).
    encoder: Option<Box<snap::raw::Encoder>>,
    /// The compressed form of the value being added (grown, never shrunk).
    packed: Vec<u8>,
}

impl std::fmt::Debug for BlobWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobWriter")
            .field("number", &self.number)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

impl BlobWriter {
    /// A writer for the new, empty `file` numbered `number`; writes the magic.
    pub fn new(mut file: Box<dyn WritableFile>, number: u64) -> Result<Self> {
        file.append(BLOB_MAGIC)?;
        Ok(BlobWriter {
            file,
            number,
            offset: BLOB_MAGIC.len() as u64,
            header: Vec::with_capacity(16),
            records: 0,
            synced: 0,
            writeback_at: 0,
            dir_synced: false,
            failed: None,
            encoder: None,
            packed: Vec::new(),
        })
    }

    /// Stores values Snappy-compressed from now on, each one whose compressed form is at
    /// least an eighth smaller (LevelDB's rule for table blocks); others stay raw.
    pub fn with_compression(mut self, on: bool) -> Self {
        self.encoder = on.then(|| Box::new(snap::raw::Encoder::new()));
        self
    }

    /// The file's number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Bytes written so far, magic included.
    pub fn size(&self) -> u64 {
        self.offset
    }

    #[cfg(test)]
    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Appends a record and returns its ref. The record reaches the file's buffer only:
    /// [`BlobWriter::flush`] before anyone may read it (X1).
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<BlobRef> {
        let mut packed = std::mem::take(&mut self.packed);
        let added = match self.compress(value, &mut packed) {
            Some((raw_len, n)) => self.add_stored(key, &packed[..n], Some(raw_len)),
            None => self.add_stored(key, value, None),
        };
        self.packed = packed;
        added
    }

    /// Compresses `value` into `packed` if the writer compresses and that pays: the
    /// value's raw length and the compressed length, for `packed[..n]` to be stored.
    fn compress(&mut self, value: &[u8], packed: &mut Vec<u8>) -> Option<(u32, usize)> {
        let encoder = self.encoder.as_mut()?;
        let raw_len = u32::try_from(value.len()).ok()?;
        // Grown, never shrunk: no bytes are cleared again for the next value.
        let room = snap::raw::max_compress_len(value.len());
        if packed.len() < room {
            packed.resize(room, 0);
        }
        let n = encoder.compress(value, packed).ok()?;
        (n < value.len() - value.len() / 8).then_some((raw_len, n))
    }

    /// Appends a record holding `value` as given (`raw_len`: it is compressed, and this
    /// long once decompressed), as a garbage collection moving a compressed value does.
    pub fn add_stored(
        &mut self,
        key: &[u8],
        value: &[u8],
        raw_len: Option<u32>,
    ) -> Result<BlobRef> {
        let (Ok(key_len), Ok(value_len)) = (u32::try_from(key.len()), u32::try_from(value.len()))
        else {
            return Err(Error::InvalidArgument(format!(
                "blob record too large: key {} bytes, value {} bytes",
                key.len(),
                value.len()
            )));
        };
        self.header.clear();
        put_fixed32(&mut self.header, 0);
        put_varint32(&mut self.header, key_len);
        put_varint32(&mut self.header, value_len);
        let crc = checksum::extend(
            checksum::extend(checksum::crc32c(&self.header[4..]), key),
            value,
        );
        self.header[..4].copy_from_slice(&checksum::mask(crc).to_le_bytes());
        let record_len = self.header.len() + key.len() + value.len();
        let Ok(record_len32) = u32::try_from(record_len) else {
            return Err(Error::InvalidArgument(format!(
                "blob record too large: {record_len} bytes"
            )));
        };
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let appended = self.file.append_parts(&[&self.header, key, value]);
        if let Err(e) = appended {
            self.failed = Some(e.clone());
            return Err(e);
        }
        let r = BlobRef {
            file: self.number,
            offset: self.offset,
            record_len: record_len32,
            value_len,
            raw_len,
        };
        self.offset += record_len as u64;
        self.records += 1;
        if self.offset - self.writeback_at >= WRITEBACK_EVERY {
            // Values go to the device while the memtable fills, not all at the flush's
            // fdatasync (which the writer may be waiting for).
            self.writeback_at = self.offset;
            if let Err(e) = self.file.start_writeback() {
                self.failed = Some(e.clone());
                return Err(e);
            }
        }
        Ok(r)
    }

    /// Hands buffered records to the operating system (readers of the file see them).
    pub fn flush(&mut self) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.file
            .flush()
            .inspect_err(|e| self.failed = Some(e.clone()))
    }

    /// A hint that no record follows (the file's log was switched): the file lets go of
    /// its map, so the flush's sync writes its pages back without write-protecting them.
    pub fn seal(&mut self) {
        self.file.seal();
    }

    /// Makes every record written durable (no call when nothing was added since the
    /// last sync).
    pub fn sync(&mut self) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.synced == self.offset {
            return Ok(());
        }
        self.file
            .sync()
            .inspect_err(|e| self.failed = Some(e.clone()))?;
        self.synced = self.offset;
        Ok(())
    }
}

/// Checks a whole record read for `r` and returns its key and value (X2). Errors carry
/// the record's offset and no file name (the caller adds it, `Error::located`).
pub fn decode_record<'a>(r: &BlobRef, record: &'a [u8]) -> Result<(&'a [u8], &'a [u8])> {
    decode_record_checking(r, record, true)
}

/// [`decode_record`], with the CRC pass skipped when `check_crc` is false: for a record
/// whose CRC passed at an earlier read of the same bytes (`store.rs`, X5). Every length
/// and the key are checked either way.
pub fn decode_record_checking<'a>(
    r: &BlobRef,
    record: &'a [u8],
    check_crc: bool,
) -> Result<(&'a [u8], &'a [u8])> {
    if record.len() != r.record_len as usize {
        return Err(Error::corruption(
            "",
            r.offset,
            format!(
                "blob record truncated: {} of {} bytes",
                record.len(),
                r.record_len
            ),
        ));
    }
    // The head ends where the value, of the length the ref gives, begins.
    let head_len = record.len().saturating_sub(r.value_len as usize);
    let (head, value) = record.split_at(head_len);
    Ok((decode_split_with(r, head, value, check_crc)?, value))
}

/// [`decode_record`] for a record read in two parts: `head` (crc, lengths and key) and
/// `value`. Checks the CRC over both and every length; returns the key.
pub fn decode_split<'a>(r: &BlobRef, head: &'a [u8], value: &[u8]) -> Result<&'a [u8]> {
    decode_split_with(r, head, value, true)
}

fn decode_split_with<'a>(
    r: &BlobRef,
    head: &'a [u8],
    value: &[u8],
    check_crc: bool,
) -> Result<&'a [u8]> {
    let bad = |what: String| Error::corruption("", r.offset, what);
    let stored = decode_fixed32(head).ok_or_else(|| bad("blob record too short".into()))?;
    let body = &head[4..];
    if check_crc && checksum::unmask(stored) != checksum::extend(checksum::crc32c(body), value) {
        return Err(bad("blob record checksum mismatch".into()));
    }
    let (key_len, n1) =
        decode_varint32(body).ok_or_else(|| bad("blob record key length".into()))?;
    let (value_len, n2) =
        decode_varint32(&body[n1..]).ok_or_else(|| bad("blob record value length".into()))?;
    let key = &body[n1 + n2..];
    if value_len != r.value_len
        || value_len as usize != value.len()
        || key.len() != key_len as usize
    {
        return Err(bad(format!(
            "blob record holds a {key_len}-byte key and a {value_len}-byte value; the ref \
             expects a {}-byte value in {} bytes",
            r.value_len, r.record_len
        )));
    }
    Ok(key)
}
