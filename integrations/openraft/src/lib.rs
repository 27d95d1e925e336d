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
//! - RS5 a write with a [`Session`] applies at most once: the state machine keeps each
//!   client's last applied sequence number and its response (under `c/`, in the same
//!   batch as the write, and in snapshots), answers a resend with that response and
//!   changes nothing. It remembers at most [`MAX_SESSIONS`] clients,
//!   forgetting the one idle longest (by the log index of its last write), decided after
//!   each entry (one batch per entry), so every replica forgets the same ones however
//!   its entries are grouped; a client forgotten and then resending its last write
//!   would apply it again.
//! - RS6 client writes are batched: a leader proposes everything waiting as one entry (a
//!   [`Proposal`]) whenever fewer than [`service::MAX_IN_FLIGHT`] proposals are in flight;
//!   an entry's writes apply atomically and in order (`service`).
//!
//! The storage calls block their task for the length of a Strata call (an `fdatasync`
//! for the durable ones), as openraft's own RocksDB store does.

#![allow(
    clippy::result_large_err,
    reason = "openraft's storage traits return its StorageError by value; the helpers return what they hand to them"
)]

mod error;
pub mod http;
pub mod keys;
mod log_store;
pub mod metrics;
pub mod service;
mod state_machine;

use std::io::Cursor;

use serde::{Deserialize, Serialize};

pub use log_store::StrataLogStore;
pub use state_machine::{MAX_SESSIONS, StrataSnapshotBuilder, StrataStateMachine};

/// One change to the key-value state machine.
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

impl Request {
    /// The key it changes.
    pub fn key(&self) -> &str {
        match self {
            Request::Set { key, .. } | Request::Delete { key } => key,
        }
    }
}

/// Who sent a write, and which of its writes it is: the state machine applies a write
/// of a session at most once (RS5), so a client may resend a write whose answer it did
/// not get.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Session {
    /// The client's id, chosen at random by the client (64 bits: two clients drawing
    /// the same id is as unlikely as a checksum collision).
    pub client: u64,
    /// The write's number in the client's order, from 1; a client numbers its writes
    /// one after another and has at most one in flight.
    pub seq: u64,
}

/// A client's write: the change, and the session that makes a resend harmless.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Write {
    /// `None`: applied every time it is proposed (tools, tests).
    pub session: Option<Session>,
    /// The change.
    pub request: Request,
}

/// What one Raft entry carries: client writes gathered while an earlier entry was in
/// flight, applied atomically and in order (one batch in the state machine).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    /// The writes, in the order they apply.
    pub writes: Vec<Write>,
}

/// What applying a [`Write`] answers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    /// The key's previous value, if there was one (for a resend: what the first
    /// application saw).
    pub previous: Option<String>,
    /// This write had been applied already (a resend): it changed nothing now.
    #[serde(default)]
    pub duplicate: bool,
}

openraft::declare_raft_types!(
    /// The type configuration of a Strata-backed key-value node.
    pub TypeConfig:
        D = Proposal,
        R = Vec<Response>,
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
    open_with(path, strata::Options::default())
}

/// The same with `options` (its filesystem, say: the power-cut test gives each node a
/// `strata::env::CrashEnv`); `create_if_missing` is set.
pub fn open_with(
    path: impl AsRef<std::path::Path>,
    options: strata::Options,
) -> strata::Result<(StrataLogStore<TypeConfig>, StrataStateMachine)> {
    let db = std::sync::Arc::new(strata::Db::open(
        path.as_ref(),
        strata::Options {
            create_if_missing: true,
            ..options
        },
    )?);
    Ok((
        StrataLogStore::new(std::sync::Arc::clone(&db)),
        StrataStateMachine::new(db),
    ))
}
