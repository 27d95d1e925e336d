//! Sorted tables (`NNNNNN.ldb`), LevelDB's format. Format: `docs/format/table.md`.
//!
//! ```text
//! [data block]* [filter block]? [metaindex block] [index block] [footer (48 bytes)]
//! ```
//!
//! - [`BlockBuilder`] / [`Block`]: prefix-compressed entries with restart points.
//! - [`FilterBlockBuilder`] / [`FilterBlockReader`]: one Bloom filter per 2 KiB of
//!   data-block offsets.
//! - [`TableBuilder`] / [`Table`]: the whole file.
//! - [`format`]: block handles, the footer, and reading a block with its trailer.
//!
//! Invariants:
//! - T1 keys within a table are strictly increasing in internal-key order.
//! - T2 every block is followed by a trailer: compression type and the masked CRC-32C of
//!   the stored bytes and the type byte.
//! - T3 an index entry's key is at or after the last key of its data block and before the
//!   first key of the next one.

mod block;
mod block_builder;
mod fences;
mod filter_block;
pub mod format;
mod key_buf;
mod table;
mod table_builder;
mod verified;

#[cfg(feature = "internals")]
pub use block::BlockIter;
pub use block::{Block, BlockSlice};
#[cfg(feature = "internals")]
pub use fences::Found;

/// The block cache: decoded data blocks of open tables, shared by tables and databases.
pub type BlockCache = crate::cache::Cache<Block>;
#[cfg(feature = "internals")]
pub use block_builder::BlockBuilder;
#[cfg(feature = "internals")]
pub use filter_block::{FilterBlockBuilder, FilterBlockReader};
pub use format::Compression;
#[cfg(feature = "internals")]
pub use format::{BlockHandle, Footer};
pub use table::{BlockReads, Table, TableFormat, TableIter};
pub use table_builder::{KeptBlock, TableBuilder, TableOptions};
