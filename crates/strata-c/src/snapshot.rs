//! `leveldb_snapshot_t`: a snapshot handed to C. `leveldb_create_snapshot` and
//! `leveldb_release_snapshot` (in `db.rs`) make and free it; read options refer to it.

use strata::Snapshot;

/// `leveldb_snapshot_t`.
#[derive(Debug)]
pub struct leveldb_snapshot_t {
    pub(crate) snapshot: Snapshot,
}
