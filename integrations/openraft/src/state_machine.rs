//! The key-value state machine on Strata: values under `s/`, the last applied id and
//! membership and the current snapshot under `a/` (`keys.rs`).
//!
//! Applying a group of entries is one batch (its values, the last applied id and any
//! membership change together), not synced: the log it comes from is durable already
//! (RS1). A snapshot is read from a Strata snapshot (RS3) and kept, whole, under
//! `a/snapshot`, so `get_current_snapshot` answers after a restart too.

use std::collections::HashMap;
use std::io::Cursor;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use openraft::storage::{RaftSnapshotBuilder, RaftStateMachine, Snapshot};
use openraft::{
    BasicNode, EntryPayload, ErrorSubject, ErrorVerb, LogId, OptionalSend, RaftLogId, SnapshotMeta,
    StorageError, StoredMembership,
};
use serde::{Deserialize, Serialize};
use strata::{Db, ReadOptions, WriteBatch, WriteOptions};

use crate::error::{self, BadRecord};
use crate::{Request, Response, TypeConfig, keys};

/// The last applied log id and membership.
type Applied = (Option<LogId<u64>>, StoredMembership<u64, BasicNode>);

/// A snapshot as `a/snapshot` keeps it.
#[derive(Debug, Serialize, Deserialize)]
struct StoredSnapshot {
    meta: SnapshotMeta<u64, BasicNode>,
    data: Vec<u8>,
}

/// A snapshot's data: every key and value of the state machine, in key order.
#[derive(Debug, Serialize, Deserialize)]
struct SnapshotData {
    kv: Vec<(String, String)>,
}

/// openraft's state machine over a Strata database: a map from string keys to string
/// values. Cloning it shares the database.
#[derive(Debug, Clone)]
pub struct StrataStateMachine {
    db: Arc<Db>,
    /// Snapshots built by this process, for their ids.
    built: Arc<AtomicU64>,
}

/// Builds a snapshot from a Strata snapshot of the state machine (RS3).
#[derive(Debug)]
pub struct StrataSnapshotBuilder {
    machine: StrataStateMachine,
}

impl StrataStateMachine {
    /// A state machine over `db`.
    pub fn new(db: Arc<Db>) -> Self {
        StrataStateMachine {
            db,
            built: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The value of `key` as the state machine holds it now (a local read: it may lag the
    /// leader; a linearizable read goes through `Raft::ensure_linearizable` first).
    pub fn get(&self, key: &str) -> Result<Option<String>, StorageError<u64>> {
        self.read_value(key, &ReadOptions::default())
    }

    fn read_value(&self, key: &str, ro: &ReadOptions) -> Result<Option<String>, StorageError<u64>> {
        let k = keys::data(key);
        let got = self.db.get_opt(&k, ro).map_err(|e| error::read_sm(&e))?;
        got.map(|v| {
            String::from_utf8(v).map_err(|_| {
                error::read_sm(&BadRecord(format!("the value of {key:?} is not UTF-8")))
            })
        })
        .transpose()
    }

    /// The record under `key` as of `ro`, decoded.
    fn read_meta<T: serde::de::DeserializeOwned>(
        &self,
        key: &[u8],
        ro: &ReadOptions,
    ) -> Result<Option<T>, StorageError<u64>> {
        let got = self.db.get_opt(key, ro).map_err(|e| error::read_sm(&e))?;
        got.map(|v| error::decode(key, &v))
            .transpose()
            .map_err(|e| error::read_sm(&e))
    }

    /// Last applied id and membership as of `ro`.
    fn applied_as_of(&self, ro: &ReadOptions) -> Result<Applied, StorageError<u64>> {
        let applied = self.read_meta::<LogId<u64>>(keys::APPLIED, ro)?;
        let membership = self
            .read_meta::<StoredMembership<u64, BasicNode>>(keys::MEMBERSHIP, ro)?
            .unwrap_or_default();
        Ok((applied, membership))
    }

    fn put_meta<T: Serialize>(
        batch: &mut WriteBatch,
        key: &[u8],
        value: &T,
    ) -> Result<(), StorageError<u64>> {
        let bytes = error::encode(value).map_err(|e| error::write_sm(&e))?;
        batch.put(key, bytes);
        Ok(())
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StrataSnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<u64>> {
        let m = &self.machine;
        // RS3: one frozen view; writes go on meanwhile.
        let ro = ReadOptions {
            snapshot: Some(m.db.snapshot()),
            fill_cache: false,
            ..ReadOptions::default()
        };
        let (applied, membership) = m.applied_as_of(&ro)?;
        let mut kv = Vec::new();
        for entry in
            m.db.range_opt(keys::DATA.to_vec()..keys::DATA_END.to_vec(), false, &ro)
        {
            let (k, v) = entry.map_err(|e| error::read_sm(&e))?;
            let text = |b: Vec<u8>| {
                String::from_utf8(b).map_err(|_| {
                    error::read_sm(&BadRecord("a state-machine record is not UTF-8".into()))
                })
            };
            let key = text(k[keys::DATA.len()..].to_vec())?;
            kv.push((key, text(v)?));
        }
        let data = error::encode(&SnapshotData { kv }).map_err(|e| error::read_sm(&e))?;
        let n = m.built.fetch_add(1, Ordering::Relaxed) + 1;
        let snapshot_id = match applied {
            Some(id) => format!("{}-{}-{n}", id.leader_id.term, id.index),
            None => format!("none-{n}"),
        };
        let meta = SnapshotMeta {
            last_log_id: applied,
            last_membership: membership,
            snapshot_id,
        };
        let stored = StoredSnapshot {
            meta: meta.clone(),
            data,
        };
        let bytes = error::encode(&stored).map_err(|e| {
            error::storage(
                ErrorSubject::Snapshot(Some(meta.signature())),
                ErrorVerb::Write,
                &e,
            )
        })?;
        m.db.put_opt(keys::SNAPSHOT, bytes, &WriteOptions { sync: true })
            .map_err(|e| {
                error::storage(
                    ErrorSubject::Snapshot(Some(meta.signature())),
                    ErrorVerb::Write,
                    &e,
                )
            })?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(stored.data)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StrataStateMachine {
    type SnapshotBuilder = StrataSnapshotBuilder;

    async fn applied_state(&mut self) -> Result<Applied, StorageError<u64>> {
        self.applied_as_of(&ReadOptions::default())
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Response>, StorageError<u64>>
    where
        I: IntoIterator<Item = openraft::Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut batch = WriteBatch::new();
        let mut responses = Vec::new();
        // What this group wrote so far: the previous value a later entry must see.
        let mut written: HashMap<String, Option<String>> = HashMap::new();
        let mut last = None;
        for entry in entries {
            let id = *entry.get_log_id();
            last = Some(id);
            match entry.payload {
                EntryPayload::Blank => responses.push(Response::default()),
                EntryPayload::Normal(request) => {
                    let key = match &request {
                        Request::Set { key, .. } | Request::Delete { key } => key.clone(),
                    };
                    let previous = match written.get(&key) {
                        Some(v) => v.clone(),
                        None => self.get(&key)?,
                    };
                    match request {
                        Request::Set { value, .. } => {
                            batch.put(keys::data(&key), value.as_bytes());
                            written.insert(key, Some(value));
                        }
                        Request::Delete { .. } => {
                            batch.delete(keys::data(&key));
                            written.insert(key, None);
                        }
                    }
                    responses.push(Response { previous });
                }
                EntryPayload::Membership(m) => {
                    Self::put_meta(
                        &mut batch,
                        keys::MEMBERSHIP,
                        &StoredMembership::new(Some(id), m),
                    )?;
                    responses.push(Response::default());
                }
            }
        }
        if let Some(id) = last {
            Self::put_meta(&mut batch, keys::APPLIED, &id)?;
        }
        // RS1: not synced; the log these entries come from is.
        self.db.write(batch).map_err(|e| error::write_sm(&e))?;
        Ok(responses)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        StrataSnapshotBuilder {
            machine: self.clone(),
        }
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, StorageError<u64>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<u64, BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<u64>> {
        let subject = || ErrorSubject::Snapshot(Some(meta.signature()));
        let data = snapshot.into_inner();
        let decoded: SnapshotData = error::decode(keys::SNAPSHOT, &data)
            .map_err(|e| error::storage(subject(), ErrorVerb::Read, &e))?;
        // One synced batch: the old data goes, the snapshot's comes, with its ids.
        let mut batch = WriteBatch::new();
        batch.delete_range(keys::DATA, keys::DATA_END);
        for (k, v) in &decoded.kv {
            batch.put(keys::data(k), v.as_bytes());
        }
        if let Some(id) = &meta.last_log_id {
            Self::put_meta(&mut batch, keys::APPLIED, id)?;
        } else {
            batch.delete(keys::APPLIED);
        }
        Self::put_meta(&mut batch, keys::MEMBERSHIP, &meta.last_membership)?;
        let stored = StoredSnapshot {
            meta: meta.clone(),
            data,
        };
        Self::put_meta(&mut batch, keys::SNAPSHOT, &stored)?;
        self.db
            .write_opt(batch, &WriteOptions { sync: true })
            .map_err(|e| error::storage(subject(), ErrorVerb::Write, &e))
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<u64>> {
        let stored: Option<StoredSnapshot> =
            self.read_meta(keys::SNAPSHOT, &ReadOptions::default())?;
        Ok(stored.map(|s| Snapshot {
            meta: s.meta,
            snapshot: Box::new(Cursor::new(s.data)),
        }))
    }
}
