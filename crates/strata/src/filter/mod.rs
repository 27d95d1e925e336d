//! Filters: small summaries of a table's keys that answer "definitely not here" without
//! reading a data block. Strata has one policy, LevelDB's built-in Bloom filter, so that
//! tables stay readable both ways. Format: `docs/format/filter.md`.

mod bloom;

pub use bloom::{BLOOM_POLICY_NAME, BloomPolicy, leveldb_hash};
