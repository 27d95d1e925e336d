//! Compaction: which tables to merge next ([`picker`], pure logic) and the rules a merge
//! follows ([`Compaction`]), cut into key ranges that threads merge at once ([`shard`]).
//! The database's background thread runs the merge itself.
//!
//! Invariants:
//! - P1 a compaction of level `L` takes tables from `L` and every table of `L+1` they
//!   overlap, so its output can replace them in `L+1` without breaking V1.
//! - P2 an entry is dropped only if no snapshot can see it: it is shadowed by a newer entry
//!   of the same key at or below the oldest snapshot, or it is a tombstone at or below the
//!   oldest snapshot with no older data for its key in deeper levels.
//! - P3 the inputs of a level never end inside a user key: when a key's versions straddle
//!   two adjacent tables, both are taken, so the newer version never moves below the
//!   older one.

pub mod picker;
pub mod shard;

pub use picker::{Compaction, in_place_compaction, pick_compaction, range_compaction};
pub use shard::{Anchor, Shard, shards, table_end_anchors};
