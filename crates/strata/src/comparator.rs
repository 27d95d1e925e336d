//! User key order: the [`Comparator`] trait, LevelDB's `leveldb::Comparator`.
//!
//! A database orders its user keys with one comparator for its whole life: the memtable,
//! data and index blocks, table ranges in the manifest, compaction and iterators all use
//! it. Its name is recorded in the manifest when the database is created and checked at
//! every open, so a database is never read in another order than it was written in.
//!
//! Invariants a comparator must keep (the engine relies on them and cannot check them):
//! - O1 `compare` is a total order, the same on every call, for the database's lifetime.
//! - O2 keys that compare equal are equal bytes (filters and caches hash bytes; LevelDB
//!   assumes the same).
//! - O3 the shortening hooks only ever return a key `k` with `start <= k < limit`
//!   (separator) or `k >= key` (successor); leaving the key unchanged is always right.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

/// The comparator name LevelDB records for bytewise order.
pub const BYTEWISE_COMPARATOR: &str = "leveldb.BytewiseComparator";

/// An order on user keys. The default, when `Options::comparator` is `None`, is bytewise
/// (`leveldb.BytewiseComparator`), with a fast path of its own.
pub trait Comparator: Send + Sync {
    /// The name recorded in the manifest; a database created with one name opens only with
    /// a comparator of the same name. Change the name when the order changes.
    fn name(&self) -> &str;

    /// Orders two user keys.
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering;

    /// May shorten `start` to any key `k` with `start <= k < limit`; used for index
    /// separators between blocks (shorter separators make smaller index blocks). The
    /// default leaves `start` as it is.
    fn find_shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]) {
        let _ = (start, limit);
    }

    /// May change `key` to any key `k >= key`; used for the index entry of a table's last
    /// block. The default leaves it as it is.
    fn find_short_successor(&self, key: &mut Vec<u8>) {
        let _ = key;
    }
}

impl fmt::Debug for dyn Comparator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Comparator").field(&self.name()).finish()
    }
}

/// A user key order the compiler can see through: bytewise (`key::Bytewise`,
/// compared inline) or a user's comparator (a call). Hot loops (the skip list's) are
/// written once over it and the order is chosen once per operation, so bytewise order
/// pays no branch per comparison.
pub trait CompareUser {
    /// Orders two user keys.
    fn compare_user(&self, a: &[u8], b: &[u8]) -> Ordering;
}

impl CompareUser for dyn Comparator {
    #[inline]
    fn compare_user(&self, a: &[u8], b: &[u8]) -> Ordering {
        self.compare(a, b)
    }
}

/// The order in force for one database: bytewise (no indirection on the hot paths) or a
/// user's comparator.
#[derive(Clone, Default)]
pub enum UserOrder {
    /// `leveldb.BytewiseComparator`.
    #[default]
    Bytewise,
    /// A user's comparator.
    Custom(Arc<dyn Comparator>),
}

impl fmt::Debug for UserOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl UserOrder {
    /// The order `Options::comparator` asks for.
    pub fn new(comparator: Option<&Arc<dyn Comparator>>) -> Self {
        match comparator {
            Some(c) => UserOrder::Custom(Arc::clone(c)),
            None => UserOrder::Bytewise,
        }
    }

    /// The comparator's name, as the manifest records it.
    pub fn name(&self) -> &str {
        match self {
            UserOrder::Bytewise => BYTEWISE_COMPARATOR,
            UserOrder::Custom(c) => c.name(),
        }
    }

    /// True for bytewise order.
    pub fn is_bytewise(&self) -> bool {
        matches!(self, UserOrder::Bytewise)
    }

    /// Orders two user keys (bytewise inline).
    #[inline(always)]
    pub fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        match self {
            UserOrder::Bytewise => crate::coding::compare_bytes(a, b),
            UserOrder::Custom(c) => c.compare(a, b),
        }
    }

    /// Shortens `start` towards `limit` (see [`Comparator::find_shortest_separator`]).
    pub fn shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]) {
        match self {
            UserOrder::Bytewise => shortest_separator(start, limit),
            UserOrder::Custom(c) => c.find_shortest_separator(start, limit),
        }
    }

    /// Shortens `key` to a successor (see [`Comparator::find_short_successor`]).
    pub fn short_successor(&self, key: &mut Vec<u8>) {
        match self {
            UserOrder::Bytewise => short_successor(key),
            UserOrder::Custom(c) => c.find_short_successor(key),
        }
    }
}

/// Shortens `start` to a key `k` with `start <= k < limit` (bytewise), when one shorter
/// exists: LevelDB's `FindShortestSeparator` for the bytewise comparator.
pub fn shortest_separator(start: &mut Vec<u8>, limit: &[u8]) {
    let shared = crate::coding::shared_prefix_len(start, limit);
    if shared >= start.len().min(limit.len()) {
        return; // one is a prefix of the other: no shorter separator
    }
    let byte = start[shared];
    if byte < 0xff && byte + 1 < limit[shared] {
        start[shared] += 1;
        start.truncate(shared + 1);
    }
}

/// Shortens `key` to a short key `k >= key`: LevelDB's `FindShortSuccessor` for the
/// bytewise comparator (increment the first byte that is not 0xff, drop the rest).
pub fn short_successor(key: &mut Vec<u8>) {
    if let Some(i) = key.iter().position(|&b| b != 0xff) {
        key[i] += 1;
        key.truncate(i + 1);
    }
}
