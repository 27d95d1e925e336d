//! Strata as the storage of an [openraft](https://docs.rs/openraft/0.9.25) node: a Raft
//! log store ([`StrataLogStore`]) and a key-value state machine ([`StrataStateMachine`]),
//! each on a `strata::Db` of its own, for openraft 0.9.25 with its `storage-v2` API.
//!
//! A node's directory holds two: `log/`, the log's database, and `state/`, the state
//! machine's directory (its database and its kept snapshot, `state_dir.rs`). Records live
//! under key prefixes ([`keys`]): the log (`l/` and the index) and its metadata (`m/`:
//! vote, committed id, last purged id) in the one; the state machine's data (`s/` and the
//! user key), its metadata (`a/`: last applied id, membership) and its sessions (`c/`,
//! `e/`) in the other. Values are JSON (`serde_json`).
//!
//! What it promises (`docs/distributed.md` says more):
//! - RS1 an append, a vote, a truncation and a purge are acknowledged to openraft only once
//!   durable (a synced write: `docs/durability.md` C1); state-machine writes are not
//!   synced, as the log they come from is: after a power cut the state machine holds a
//!   prefix of what it applied (C3), applies the rest again from the log, and is restored
//!   from the kept snapshot first when it is behind it (SD3).
//! - RS2 a purge records the last purged id and deletes the entries up to it in one batch
//!   (`WriteBatch::delete_range`); a truncation deletes the entries from an index on in
//!   one range delete.
//! - RS3 a snapshot is a checkpoint of the state machine's database (`Db::checkpoint`:
//!   tables and blob files hard-linked, synced), taken between two entries; it is sent as
//!   an archive read from its files and installed by unpacking into new files and
//!   swapping the database (`archive.rs`, `state_dir.rs`), so neither side holds it in
//!   memory. The kept snapshot never goes back to an older one.
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

mod archive;
mod error;
pub mod http;
pub mod keys;
mod log_store;
pub mod metrics;
pub mod service;
mod snapshot_data;
mod state_dir;
mod state_machine;

use serde::{Deserialize, Serialize};

pub use log_store::StrataLogStore;
pub use snapshot_data::SnapshotArchive;
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
        SnapshotData = SnapshotArchive,
);

/// Opens (creating if missing) the node directory `path`: a log store over its log's
/// database and the state machine in its state directory.
pub fn open(
    path: impl AsRef<std::path::Path>,
) -> strata::Result<(StrataLogStore<TypeConfig>, StrataStateMachine)> {
    open_with(path, strata::Options::default())
}

/// The same with `options` (its filesystem, say: the power-cut test gives each node a
/// `strata::env::CrashEnv`); `create_if_missing` is set. A directory that is itself a
/// database (the layout before the state machine had a database of its own) is refused.
pub fn open_with(
    path: impl AsRef<std::path::Path>,
    options: strata::Options,
) -> strata::Result<(StrataLogStore<TypeConfig>, StrataStateMachine)> {
    let path = path.as_ref();
    if options.env.exists(&path.join("CURRENT")) {
        return Err(strata::Error::InvalidArgument(format!(
            "{}: a node directory from before the state machine had a database of its own \
             (log and state in one database); start this node with an empty directory and \
             let the cluster send it a snapshot",
            path.display()
        )));
    }
    let db = std::sync::Arc::new(strata::Db::open(
        path.join("log"),
        strata::Options {
            create_if_missing: true,
            ..options.clone()
        },
    )?);
    let sm = StrataStateMachine::open(
        path.join("state"),
        strata::Options {
            create_if_missing: true,
            ..options
        },
    )?;
    Ok((StrataLogStore::new(db), sm))
}

/// A random 64-bit id (the standard library's per-process random hash keys, mixed with
/// the clock and a counter).
pub(crate) fn random_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    h.write_u64(now);
    h.write_u32(std::process::id());
    h.finish()
}
