//! The log: the container format of the write-ahead log (`NNNNNN.log`) and of the
//! manifest (`MANIFEST-NNNNNN`). Format: `docs/format/log.md`.
//!
//! A file is a sequence of 32 KiB blocks. Each logical record is cut into physical
//! records (fragments) that never cross a block boundary:
//!
//! ```text
//! +-----------------+--------------+---------+-----------------+
//! | masked crc (4)  | length (2)   | type(1) | payload(length) |
//! +-----------------+--------------+---------+-----------------+
//! ```
//!
//! Invariants:
//! - L1 a physical record never starts in the last 6 bytes of a block; those bytes are zero.
//! - L2 the crc covers the type byte and the payload.
//! - L3 a logical record is FULL, or FIRST MIDDLE* LAST, in consecutive physical records.
//! - L4 zeros from a record boundary to the end of the file are the end of the log, not
//!   damage: a log written through a memory map is preallocated, and keeps that zero tail
//!   if its writer dies. Zeros followed by anything else are damage
//!   ([`DropReason::ZeroFill`]).
//!
//! The [`LogReader`] never fails on bad bytes: it drops what it cannot use, says how many
//! bytes and why ([`Dropped`]), and resynchronises at the next block. A record cut short by
//! the end of the file is a torn tail ([`DropReason::TornTail`]), the mark of a writer that
//! died mid-write, which callers treat differently from corruption in the middle of a file.

mod reader;
mod writer;

pub use reader::{Checksums, LogReader};
#[cfg(feature = "internals")]
pub use reader::{DropReason, Dropped};
pub use writer::LogWriter;

/// Size of a log block.
pub const BLOCK_SIZE: usize = 32 * 1024;
/// Size of a physical record's header: crc (4), length (2), type (1).
pub const HEADER_SIZE: usize = 7;

/// The type byte of a physical record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum RecordType {
    /// Preallocated space; never written by Strata.
    Zero = 0,
    Full = 1,
    First = 2,
    Middle = 3,
    Last = 4,
}

impl RecordType {
    fn from_byte(b: u8) -> Option<Self> {
        Some(match b {
            0 => RecordType::Zero,
            1 => RecordType::Full,
            2 => RecordType::First,
            3 => RecordType::Middle,
            4 => RecordType::Last,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests;
