//! Strata as the storage of an [openraft](https://docs.rs/openraft/0.9.25) node: a Raft
//! log store ([`StrataLogStore`]) and a key-value state machine ([`StrataStateMachine`])
//! over one `strata::Db`, for openraft 0.9.25 with its `storage-v2` API.
//!
//! One database holds both, under key prefixes ([`keys`]): the log (`l/` and the index),
//! the log's metadata (`m/`: vote, committed id, last purged id), the state machine's data
//! (`s/` and the user key) and its metadata (`a/`: last applied id, membership, the
//! current snapshot). Values are JSON (`serde_json`).
//!
//! What it promises (`docs/distributed.md` says more):
//! - RS1 an append, a vote, a truncation and a purge are acknowledged to openraft only once
//!   durable (a synced write: `docs/durability.md` C1); state-machine writes are not
//!   synced, as the log they come from is, and Strata's log is one ordered prefix (C3), so
//!   a later synced write makes them durable too.
//! - RS2 a purge records the last purged id and deletes the entries up to it in one batch
//!   (`WriteBatch::delete_range`); a truncation deletes the entries from an index on in
//!   one range delete.
//! - RS3 a snapshot is built from a Strata snapshot (`Db::snapshot`): building one reads a
//!   frozen view while writes go on.
//! - RS4 every record read back is decoded and checked (its key's index against the
//!   entry's); anything that does not decode is a `StorageError` (openraft stops the
//!   node), never a wrong value or a panic.
//!
//! The storage calls block their task for the length of a Strata call (an `fdatasync`
//! for the durable ones), as openraft's own RocksDB store does.

#![allow(
    clippy::result_large_err,
    reason = "openraft's storage traits return its StorageError by value; the helpers return what they hand to them"
)]

mod error;
pub mod keys;
mod log_store;
pub mod service;
mod state_machine;

use std::io::Cursor;

use serde::{Deserialize, Serialize};

pub use log_store::StrataLogStore;
pub use state_machine::{StrataSnapshotBuilder, StrataStateMachine};

/// A write to the key-value state machine: what a client proposes through
/// `Raft::client_write`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// Set `key` to `value`.
    Set {
        /// The key.
        key: String,
        /// Its new value.
        value: String,
    },
    /// Remove `key`.
    Delete {
        /// The key.
        key: String,
    },
}

/// What applying a [`Request`] answers: the key's value before it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    /// The previous value, if there was one.
    pub previous: Option<String>,
}

openraft::declare_raft_types!(
    /// The type configuration of a Strata-backed key-value node.
    pub TypeConfig:
        D = Request,
        R = Response,
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
);

/// Opens (creating if missing) the database at `path` and returns a log store and a state
/// machine over it.
pub fn open(
    path: impl AsRef<std::path::Path>,
) -> strata::Result<(StrataLogStore<TypeConfig>, StrataStateMachine)> {
    let db = std::sync::Arc::new(strata::Db::open(
        path.as_ref(),
        strata::Options {
            create_if_missing: true,
            ..strata::Options::default()
        },
    )?);
    Ok((
        StrataLogStore::new(std::sync::Arc::clone(&db)),
        StrataStateMachine::new(db),
    ))
}
