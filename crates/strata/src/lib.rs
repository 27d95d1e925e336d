//! Strata: an embedded LSM-tree key-value store that reads and writes LevelDB 1.23's
//! on-disk format, so a LevelDB database opens in Strata and a Strata database opens in
//! LevelDB.
//!
//! ```
//! use strata::{Db, Options, ReadOptions, WriteBatch, WriteOptions};
//!
//! # fn main() -> Result<(), strata::Error> {
//! # let dir = tempfile::tempdir().map_err(|e| strata::Error::io("tempdir", e))?;
//! # let path = dir.path().join("db");
//! let db = Db::open(&path, Options { create_if_missing: true, ..Options::default() })?;
//! db.put(b"apple", b"red")?;
//! db.put_opt(b"kiwi", b"green", &WriteOptions { sync: true })?; // durable once it returns
//!
//! let mut batch = WriteBatch::new(); // applied atomically
//! batch.put(b"banana", b"yellow");
//! batch.delete(b"apple");
//! db.write(batch)?;
//!
//! let snapshot = db.snapshot();
//! db.put(b"banana", b"brown")?;
//! let then = ReadOptions { snapshot: Some(snapshot), ..ReadOptions::default() };
//! assert_eq!(db.get_opt(b"banana", &then)?.as_deref(), Some(&b"yellow"[..]));
//! assert_eq!(db.get(b"banana")?.as_deref(), Some(&b"brown"[..]));
//!
//! let keys: Vec<Vec<u8>> = db.range(b"b".as_slice()..).map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
//! assert_eq!(keys, [b"banana".to_vec(), b"kiwi".to_vec()]);
//! db.close()?;
//! # Ok(())
//! # }
//! ```
//!
//! What a user sets is in [`Options`] (with [`Compression`], [`BlockCache`],
//! [`Comparator`], [`FilterPolicy`] / [`BloomPolicy`] and [`env`](mod@env)), [`ReadOptions`] and
//! [`WriteOptions`]; reads come back as owned values ([`Db::get`]), views into the block
//! cache ([`Db::get_pinned`]), cursors ([`DbIterator`]) or Rust iterators ([`Range`]).
//! What Strata promises about your data is in `docs/durability.md`.
//!
//! The engine's parts are private; their map is `docs/architecture.md`: `coding`,
//! `checksum` (bytes to integers, CRC-32C), `log` (WAL and manifest records), `key`,
//! `batch` (internal keys, write batches), `filter`, `sstable`, `cache`, `version`,
//! `memtable`, `table_cache`, `compaction`, `snapshot`, `blob` (value separation), and
//! the database itself. The unstable `internals` feature makes the format-level ones
//! public (hidden from these docs) for the project's own tools and tests: the `strata`
//! command's dump commands, the fuzz checks, the benchmark tool.

#![deny(unsafe_code)]
// The parts only the project's tools and tests use (a log reader that skips checksums,
// builders' counters, re-exports of format types) are compiled only with the `internals`
// feature (or for tests): the build users get has no dead code, and clippy checks it
// as they build it (`make test`).
#![warn(missing_docs)]

#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod batch;
#[cfg(not(feature = "internals"))]
mod batch;
mod blob;
mod cache;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod checksum;
#[cfg(not(feature = "internals"))]
mod checksum;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod coding;
#[cfg(not(feature = "internals"))]
mod coding;
mod compaction;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod comparator;
#[cfg(not(feature = "internals"))]
mod comparator;
mod db;
pub mod env;
mod error;
mod filename;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod filter;
#[cfg(not(feature = "internals"))]
mod filter;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod iter;
#[cfg(not(feature = "internals"))]
mod iter;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod key;
#[cfg(not(feature = "internals"))]
mod key;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod log;
#[cfg(not(feature = "internals"))]
mod log;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod memtable;
#[cfg(not(feature = "internals"))]
mod memtable;
mod open_files;
mod options;
mod prefetch;
mod snapshot;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod sstable;
#[cfg(not(feature = "internals"))]
mod sstable;
mod table_cache;
#[cfg(feature = "testing")]
pub mod testing;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod version;
#[cfg(not(feature = "internals"))]
mod version;

pub use batch::{BatchOp, WriteBatch};
pub use comparator::{BytewiseComparator, Comparator};
pub use db::{
    Counters, Db, DbIterator, KeyValue, LiveFile, MAX_KEY_SIZE, MAX_VALUE_SIZE, PinnedSlice, Range,
    Transaction, TransactionRange, VerifyReport,
};
pub use error::{ComparatorNames, Corruption, Error, Result};
pub use filter::{BloomPolicy, FilterPolicy};
pub use options::{Options, ReadOptions, RecoveryMode, WriteOptions};
pub use snapshot::Snapshot;
pub use sstable::BlockCache;
pub use sstable::Compression;

/// The README's example, compiled and run as a doctest (`make test`).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// The user's guide's examples (`docs/guide.md`), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/guide.md")]
pub struct GuideDoctests;
