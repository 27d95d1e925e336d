//! Filters: small summaries of a table's keys that answer "definitely not here" without
//! reading a data block. The built-in policy is LevelDB's Bloom filter, so that tables
//! stay readable both ways; users may bring their own [`FilterPolicy`]. Format:
//! `docs/format/filter.md`.
//!
//! Invariants:
//! - F1 a table's filter block is stored under `filter.<policy name>` in its metaindex,
//!   and read only by a policy of that name: a filter made by another policy is ignored
//!   (every key may match), never asked.
//! - F2 a policy's `key_may_match` returns true for every key its `create_filter` was
//!   given (no false negatives); the engine cannot check it.

use std::fmt;
use std::sync::Arc;

mod bloom;

pub use bloom::{BLOOM_POLICY_NAME, BloomPolicy, leveldb_hash};

/// A filter policy, LevelDB's `leveldb::FilterPolicy`: builds a filter from a set of user
/// keys and answers whether a key may be among them.
pub trait FilterPolicy: Send + Sync {
    /// The name tables record (`filter.<name>` in the metaindex). Change it whenever the
    /// encoding changes: tables with another name's filters are read without filters.
    fn name(&self) -> &str;

    /// Appends to `dst` a filter summarising `keys` (which may hold duplicates).
    fn create_filter(&self, keys: &[&[u8]], dst: &mut Vec<u8>);

    /// False only if `key` is certainly not among the keys `filter` was made from (F2).
    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool;
}

impl fmt::Debug for dyn FilterPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FilterPolicy").field(&self.name()).finish()
    }
}

impl FilterPolicy for BloomPolicy {
    fn name(&self) -> &str {
        BLOOM_POLICY_NAME
    }

    fn create_filter(&self, keys: &[&[u8]], dst: &mut Vec<u8>) {
        BloomPolicy::create_filter(self, keys.iter().copied(), dst);
    }

    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        BloomPolicy::key_may_match(key, filter)
    }
}

/// The filter policy a database uses: the built-in Bloom filter (called directly on the
/// read path) or a user's policy.
#[derive(Clone)]
pub enum Filter {
    /// `leveldb.BuiltinBloomFilter2` with its bits per key.
    Bloom(BloomPolicy),
    /// A user's policy.
    Custom(Arc<dyn FilterPolicy>),
}

impl fmt::Debug for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Filter {
    /// LevelDB's Bloom filter, for reading (the bits per key are in each filter).
    pub fn builtin() -> Self {
        Filter::Bloom(BloomPolicy::new(10))
    }

    /// The name in the metaindex key (`filter.` + this).
    pub fn name(&self) -> &str {
        match self {
            Filter::Bloom(_) => BLOOM_POLICY_NAME,
            Filter::Custom(p) => p.name(),
        }
    }

    /// The metaindex key of this policy's filter block (F1).
    pub fn meta_key(&self) -> String {
        format!("filter.{}", self.name())
    }

    /// Appends the filter for `keys` to `dst`.
    pub fn create_filter(&self, keys: &[&[u8]], dst: &mut Vec<u8>) {
        match self {
            Filter::Bloom(b) => b.create_filter(keys.iter().copied(), dst),
            Filter::Custom(p) => p.create_filter(keys, dst),
        }
    }

    /// False only if `key` is certainly not among the filter's keys.
    #[inline]
    pub fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        match self {
            Filter::Bloom(_) => BloomPolicy::key_may_match(key, filter),
            Filter::Custom(p) => p.key_may_match(key, filter),
        }
    }
}
