//! Versions: the set of live tables at a point in time, and the manifest that records how
//! it changes. This module holds the manifest's record, [`VersionEdit`]; the version set
//! itself comes with the database.

mod edit;

pub use edit::{FileMetaData, NUM_LEVELS, VersionEdit};
