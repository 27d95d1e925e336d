//! Strata: an embedded LSM-tree key-value store that reads and writes LevelDB 1.23's
//! on-disk format.
//!
//! The module map (see `docs/architecture.md`):
//! - [`coding`], [`checksum`]: bytes to integers, CRC-32C with LevelDB's mask.
//! - [`env`]: the filesystem seam; nothing else touches `std::fs`.
//! - [`log`]: the block-structured log that holds the WAL and the manifest.
//! - [`key`], [`batch`]: internal keys and their order, write batches.
//! - [`filter`]: the Bloom filter policy.
//! - [`sstable`]: blocks, filter blocks and sorted tables; [`cache`]: the block cache.
//! - [`version`]: versions, version edits (manifest records), the version set.
//! - [`memtable`], [`table_cache`], [`compaction`], [`snapshot`]: the engine's parts.
//! - [`blob`]: value separation (large values in blob files, off by default).
//! - [`Db`]: the database.

#![deny(unsafe_code)]

pub mod batch;
pub mod blob;
pub mod cache;
pub mod checksum;
pub mod coding;
pub mod compaction;
pub mod comparator;
mod db;
pub mod env;
mod error;
pub mod filename;
pub mod filter;
pub mod iter;
pub mod key;
pub mod log;
pub mod memtable;
pub mod options;
pub mod snapshot;
pub mod sstable;
pub mod table_cache;
pub mod version;

pub use batch::WriteBatch;
pub use comparator::Comparator;
pub use db::{
    Counters, Db, DbIterator, KeyValue, LevelIter, MAX_KEY_SIZE, MAX_VALUE_SIZE, PinnedSlice,
    Range, VerifyReport,
};
pub use error::{Corruption, Error, Result};
pub use filter::{BloomPolicy, FilterPolicy};
pub use options::{Options, ReadOptions, RecoveryMode, WriteOptions};
pub use snapshot::Snapshot;
pub use sstable::Compression;
