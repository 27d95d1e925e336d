//! [`LogWriter`]: appends logical records to a log file.

use super::{BLOCK_SIZE, HEADER_SIZE, RecordType};
use crate::checksum;
use crate::env::WritableFile;
use crate::error::Result;

/// Appends records to a log file. Not thread-safe: one writer per file, as the database's
/// write path guarantees (only the write-group leader appends).
pub struct LogWriter<W: WritableFile + ?Sized> {
    file: Box<W>,
    /// Offset inside the current block where the next header goes.
    block_offset: usize,
    /// CRC of each type byte, so a record's CRC only extends over its payload.
    type_crc: [u32; 5],
}

impl<W: WritableFile + ?Sized> std::fmt::Debug for LogWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogWriter")
            .field("block_offset", &self.block_offset)
            .finish_non_exhaustive()
    }
}

impl<W: WritableFile + ?Sized> LogWriter<W> {
    /// A writer for an empty file.
    pub fn new(file: Box<W>) -> Self {
        Self::with_length(file, 0)
    }

    /// A writer that continues a file already `length` bytes long.
    pub fn with_length(file: Box<W>, length: u64) -> Self {
        let type_crc = [0u8, 1, 2, 3, 4].map(|t| checksum::crc32c(&[t]));
        LogWriter {
            file,
            block_offset: (length % BLOCK_SIZE as u64) as usize,
            type_crc,
        }
    }

    /// Appends one logical record and flushes it to the operating system. Durable only
    /// after [`LogWriter::sync`].
    pub fn add_record(&mut self, mut data: &[u8]) -> Result<()> {
        let mut begin = true;
        loop {
            let leftover = BLOCK_SIZE - self.block_offset;
            if leftover < HEADER_SIZE {
                // L1: pad the block's tail with zeros and move on.
                if leftover > 0 {
                    const ZEROS: [u8; HEADER_SIZE] = [0; HEADER_SIZE];
                    self.file.append(&ZEROS[..leftover])?;
                }
                self.block_offset = 0;
            }
            let avail = BLOCK_SIZE - self.block_offset - HEADER_SIZE;
            let fragment_len = data.len().min(avail);
            let end = fragment_len == data.len();
            let ty = match (begin, end) {
                (true, true) => RecordType::Full,
                (true, false) => RecordType::First,
                (false, true) => RecordType::Last,
                (false, false) => RecordType::Middle,
            };
            let (fragment, rest) = data.split_at(fragment_len);
            self.emit(ty, fragment)?;
            data = rest;
            begin = false;
            if end {
                break;
            }
        }
        self.file.flush()
    }

    fn emit(&mut self, ty: RecordType, payload: &[u8]) -> Result<()> {
        debug_assert!(payload.len() <= 0xffff);
        let crc = checksum::extend(self.type_crc[ty as usize], payload);
        let mut header = [0u8; HEADER_SIZE];
        header[..4].copy_from_slice(&checksum::mask(crc).to_le_bytes());
        header[4..6].copy_from_slice(&(payload.len() as u16).to_le_bytes());
        header[6] = ty as u8;
        self.file.append_parts(&[&header, payload])?;
        self.block_offset += HEADER_SIZE + payload.len();
        Ok(())
    }

    /// Makes every record added so far durable.
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync()
    }

    /// The underlying file.
    pub fn file_mut(&mut self) -> &mut W {
        &mut self.file
    }

    /// Gives the file back.
    #[cfg(any(test, feature = "internals"))]
    pub fn into_inner(self) -> Box<W> {
        self.file
    }
}
