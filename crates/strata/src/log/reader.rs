//! [`LogReader`]: reads logical records back, dropping and reporting what is damaged.

use super::{BLOCK_SIZE, HEADER_SIZE, RecordType};
use crate::checksum;
use crate::coding::decode_fixed32;
use crate::env::SequentialFile;
use crate::error::Result;

/// Why bytes were dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// A physical record's checksum did not match; the rest of its block was dropped.
    BadChecksum,
    /// A header announced more payload than its block holds; the rest of the block was
    /// dropped.
    BadLength,
    /// A record type this format does not define.
    UnknownType,
    /// A zero-filled region (preallocated or never written); the rest of the block was
    /// skipped.
    ZeroFill,
    /// A FIRST or MIDDLE fragment was followed by something other than MIDDLE or LAST.
    PartialRecord,
    /// A MIDDLE or LAST fragment came without its FIRST.
    MissingStart,
    /// The file ended inside a record: the last write of a writer that stopped mid-way.
    TornTail,
}

impl DropReason {
    /// True for damage that a crash of the writer explains: a torn tail at the end of the
    /// file. Everything else is corruption.
    pub fn is_torn_tail(self) -> bool {
        self == DropReason::TornTail
    }
}

/// Bytes the reader skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dropped {
    /// File offset where the dropped bytes start.
    pub offset: u64,
    /// How many bytes were dropped.
    pub bytes: u64,
    /// Why.
    pub reason: DropReason,
}

enum Physical {
    /// A fragment; its payload is `block[start..end]`, its header at file offset `offset`.
    Record {
        ty: RecordType,
        start: usize,
        end: usize,
        offset: u64,
    },
    /// Nothing usable here; damage (if any) is already reported.
    Skip,
    Eof,
}

/// Whether a [`LogReader`] checks each fragment's CRC-32C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checksums {
    /// Check every fragment; a mismatch is damage (the default everywhere in the engine).
    Verify,
    /// Do not compute checksums (faster, and damage shows up later, if at all): for the
    /// project's tools (`strata dump-wal`), never the engine.
    #[cfg(any(test, feature = "internals"))]
    Skip,
}

/// Reads logical records from a log file. Not thread-safe; one reader per file.
pub struct LogReader {
    file: Box<dyn SequentialFile>,
    verify_checksums: bool,
    block: Vec<u8>,
    /// Bytes of `block` that hold file data.
    block_len: usize,
    /// Next unread byte of `block`.
    pos: usize,
    /// File offset of `block[0]`.
    block_start: u64,
    /// True once a read returned less than a whole block.
    eof: bool,
    dropped: Vec<Dropped>,
    /// File offset of the last record returned.
    last_record_offset: u64,
    /// Where a run of zero-filled blocks began, while it lasts: the end of the log if it
    /// reaches the end of the file (a preallocated tail), damage if a record follows it.
    zero_run: Option<u64>,
}

impl std::fmt::Debug for LogReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogReader")
            .field("offset", &(self.block_start + self.pos as u64))
            .field("eof", &self.eof)
            .finish_non_exhaustive()
    }
}

impl LogReader {
    /// A reader from the start of `file`.
    pub fn new(file: Box<dyn SequentialFile>, checksums: Checksums) -> Self {
        LogReader {
            file,
            verify_checksums: checksums == Checksums::Verify,
            block: vec![0; BLOCK_SIZE],
            block_len: 0,
            pos: 0,
            block_start: 0,
            eof: false,
            dropped: Vec::new(),
            last_record_offset: 0,
            zero_run: None,
        }
    }

    /// Reads the next logical record into `out` (cleared first). `Ok(false)` at the end of
    /// the file. Damaged bytes never cause an error: they are skipped and recorded (see
    /// [`LogReader::take_dropped`]). Errors are I/O errors only.
    pub fn read_record(&mut self, out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let mut in_fragment = false;
        let mut fragment_offset = 0u64;
        loop {
            match self.read_physical()? {
                Physical::Record {
                    ty,
                    start,
                    end,
                    offset,
                } => {
                    match ty {
                        RecordType::Full | RecordType::First => {
                            if in_fragment {
                                self.report(fragment_offset, out.len(), DropReason::PartialRecord);
                            }
                            out.clear();
                            out.extend_from_slice(&self.block[start..end]);
                            if ty == RecordType::Full {
                                self.last_record_offset = offset;
                                return Ok(true);
                            }
                            in_fragment = true;
                            fragment_offset = offset;
                        }
                        RecordType::Middle | RecordType::Last => {
                            if !in_fragment {
                                let n = end - start + HEADER_SIZE;
                                self.report(offset, n, DropReason::MissingStart);
                                continue;
                            }
                            out.extend_from_slice(&self.block[start..end]);
                            if ty == RecordType::Last {
                                self.last_record_offset = fragment_offset;
                                return Ok(true);
                            }
                        }
                        // read_physical reports zero-type records and never returns them.
                        RecordType::Zero => {}
                    }
                }
                Physical::Skip => {
                    if in_fragment {
                        self.report(fragment_offset, out.len(), DropReason::PartialRecord);
                        in_fragment = false;
                        out.clear();
                    }
                }
                Physical::Eof => {
                    if in_fragment {
                        // The writer died between the fragments of one record.
                        self.report(fragment_offset, out.len(), DropReason::TornTail);
                        out.clear();
                    }
                    return Ok(false);
                }
            }
        }
    }

    /// What was dropped since the last call, oldest first.
    pub fn take_dropped(&mut self) -> Vec<Dropped> {
        std::mem::take(&mut self.dropped)
    }

    /// File offset of the start of the last record returned.
    pub fn last_record_offset(&self) -> u64 {
        self.last_record_offset
    }

    /// File offset just past the bytes consumed so far.
    pub fn position(&self) -> u64 {
        self.block_start + self.pos as u64
    }

    fn report(&mut self, offset: u64, bytes: usize, reason: DropReason) {
        self.dropped.push(Dropped {
            offset,
            bytes: bytes as u64,
            reason,
        });
    }

    /// Drops the rest of the current block.
    fn drop_rest_of_block(&mut self, reason: DropReason) {
        let offset = self.position();
        let n = self.block_len - self.pos;
        self.pos = self.block_len;
        self.report(offset, n, reason);
    }

    fn fill_block(&mut self) -> Result<()> {
        self.block_start += self.block_len as u64;
        self.pos = 0;
        self.block_len = 0;
        while self.block_len < BLOCK_SIZE {
            let n = self.file.read(&mut self.block[self.block_len..])?;
            if n == 0 {
                self.eof = true;
                break;
            }
            self.block_len += n;
        }
        Ok(())
    }

    fn read_physical(&mut self) -> Result<Physical> {
        loop {
            let left = self.block_len - self.pos;
            if left < HEADER_SIZE {
                if !self.eof {
                    // L1: the tail of a block is padding; the next block starts fresh.
                    self.fill_block()?;
                    continue;
                }
                if left > 0 {
                    // A header cut by the end of the file.
                    if let Some(start) = self.zero_run.take() {
                        self.report(
                            start,
                            (self.position() - start) as usize,
                            DropReason::ZeroFill,
                        );
                    }
                    self.drop_rest_of_block(DropReason::TornTail);
                }
                return Ok(Physical::Eof);
            }
            let offset = self.position();
            let header = &self.block[self.pos..self.pos + HEADER_SIZE];
            let stored_crc = decode_fixed32(header).unwrap_or_default();
            let length = usize::from(u16::from_le_bytes([header[4], header[5]]));
            let type_byte = header[6];
            let zero_header = type_byte == RecordType::Zero as u8 && length == 0;
            if !zero_header && let Some(start) = self.zero_run.take() {
                // Zeros, then something: the zeros hid written bytes (a lost page).
                self.report(start, (offset - start) as usize, DropReason::ZeroFill);
                return Ok(Physical::Skip);
            }
            if HEADER_SIZE + length > left {
                if self.eof {
                    self.drop_rest_of_block(DropReason::TornTail);
                    return Ok(Physical::Eof);
                }
                self.drop_rest_of_block(DropReason::BadLength);
                return Ok(Physical::Skip);
            }
            if zero_header {
                if self.block[self.pos..self.block_len].iter().all(|&b| b == 0) {
                    // L4: zeros to the end of the block; if they last to the end of the
                    // file, this is the log's preallocated tail, not damage.
                    self.zero_run.get_or_insert(offset);
                    self.pos = self.block_len;
                    continue;
                }
                self.drop_rest_of_block(DropReason::ZeroFill);
                return Ok(Physical::Skip);
            }
            let start = self.pos + HEADER_SIZE;
            let end = start + length;
            if self.verify_checksums {
                let actual = checksum::crc32c(&self.block[self.pos + 6..end]);
                if actual != checksum::unmask(stored_crc) {
                    // The length field itself may be what is damaged: trust nothing
                    // else in this block.
                    self.drop_rest_of_block(DropReason::BadChecksum);
                    return Ok(Physical::Skip);
                }
            }
            self.pos = end;
            match RecordType::from_byte(type_byte) {
                Some(RecordType::Zero) | None => {
                    self.report(offset, HEADER_SIZE + length, DropReason::UnknownType);
                    return Ok(Physical::Skip);
                }
                Some(ty) => {
                    return Ok(Physical::Record {
                        ty,
                        start,
                        end,
                        offset,
                    });
                }
            }
        }
    }
}
