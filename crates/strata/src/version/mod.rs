//! Versions: which tables are live, at which level, and the manifest that records how
//! that changes.
//!
//! - [`VersionEdit`] (`edit.rs`): one manifest record.
//! - [`Version`] (`version.rs`): an immutable snapshot of the live tables per level, and
//!   lookups through it.
//! - [`VersionSet`] (`set.rs`): the current version, the counters (file numbers, last
//!   seqnum, log number) and the manifest writer; recovery from the manifest.
//!
//! Invariants:
//! - V1 in levels 1 and up, tables are sorted by key and do not overlap.
//! - V2 level 0 tables may overlap; a newer table (higher number) holds newer entries for
//!   any key they share.
//! - V3 a table's file exists from before the manifest names it until after no version
//!   that names it is alive.
//! - V4 one edit at a time: between `VersionSet::prepare_edit` and `finish_edit` (the
//!   manifest write, done without the database's lock) nothing else edits or installs a
//!   version. While the database is open only its background thread edits.

mod builder;
#[cfg(test)]
pub(crate) mod cases;
mod edit;
mod set;
#[allow(clippy::module_inception)]
mod version;

pub use builder::Builder;
pub use edit::{BlobFileMeta, FileMetaData, NUM_LEVELS, Separation, VersionEdit};
#[cfg(feature = "internals")]
pub use set::{PendingEdit, current_manifest};
pub use set::{VersionSet, set_current_file};
pub use version::{FileMeta, GetResult, Version};

/// Level-0 table count that triggers a compaction.
pub const L0_COMPACTION_TRIGGER: usize = 4;
/// Level-0 table count at which each write is delayed by 1 ms (LevelDB's; the default of
/// `Options::level0_slowdown_writes_trigger`).
pub const L0_SLOWDOWN_TRIGGER: usize = 8;
/// Level-0 table count at which writes wait for compaction (LevelDB's; the default of
/// `Options::level0_stop_writes_trigger`).
pub const L0_STOP_TRIGGER: usize = 12;
/// Deepest level a flushed memtable may be placed at when it overlaps nothing.
pub const MAX_MEM_COMPACT_LEVEL: usize = 2;

/// Target total size of a level (level 1: 10 MiB, each deeper level 10x).
pub fn max_bytes_for_level(level: usize) -> f64 {
    let mut result = 10.0 * 1_048_576.0;
    for _ in 1..level {
        result *= 10.0;
    }
    result
}
