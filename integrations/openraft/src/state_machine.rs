//! The key-value state machine on Strata: values under `s/`, the last applied id and
//! membership and the current snapshot under `a/` (`keys.rs`).
//!
//! Applying an entry is one batch (its values, its sessions, its id as the last applied
//! and any membership change together), not synced: the log it comes from is durable already
//! (RS1). A snapshot is read from a Strata snapshot (RS3) and kept, whole, under
//! `a/snapshot`, so `get_current_snapshot` answers after a restart too. A snapshot built
//! from an older state than the one kept (a build that read its state before a newer
//! snapshot was installed) is handed to openraft but not kept: the kept one never goes
//! back (`store_snapshot`).
//!
//! Sessions (RS5): each client's last applied write and its response live under `c/`,
//! with an age index under `e/` (by the log index of that write) and their count under
//! `a/sessions`, all written in the same batch as the writes they describe, so a crash
//! keeps a write and its session together or neither. Everything here is a function of
//! the log alone (the age is a log index, never a clock), so every replica keeps and
//! forgets the same sessions.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
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
use crate::{Proposal, Request, Response, TypeConfig, keys};

/// The most client sessions a state machine remembers (RS5); past it, the session idle
/// longest is forgotten.
pub const MAX_SESSIONS: u64 = 100_000;

/// A session as `c/<client>` keeps it: the client's last applied write and its answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SessionRecord {
    seq: u64,
    /// The log index of the entry that carried the write (its key in the age index).
    index: u64,
    response: Response,
}

/// A session an entry read or wrote.
#[derive(Debug)]
struct Touched {
    /// The log index its stored record has (`None`: a new session).
    stored_at: Option<u64>,
    record: Option<SessionRecord>,
    changed: bool,
}

/// The last applied log id and membership.
type Applied = (Option<LogId<u64>>, StoredMembership<u64, BasicNode>);

/// A snapshot as `a/snapshot` keeps it.
#[derive(Debug, Serialize, Deserialize)]
struct StoredSnapshot {
    meta: SnapshotMeta<u64, BasicNode>,
    data: Vec<u8>,
}

/// A snapshot's data: every key and value of the state machine, in key order, and the
/// sessions (RS5).
#[derive(Debug, Serialize, Deserialize)]
struct SnapshotData {
    kv: Vec<(String, String)>,
    #[serde(default)]
    sessions: Vec<(u64, SessionRecord)>,
}

/// openraft's state machine over a Strata database: a map from string keys to string
/// values. Cloning it shares the database.
#[derive(Debug, Clone)]
pub struct StrataStateMachine {
    db: Arc<Db>,
    /// Snapshots built by this process, for their ids.
    built: Arc<AtomicU64>,
    /// The most sessions kept (RS5).
    session_limit: u64,
    /// Held while the kept snapshot is compared and replaced.
    snapshot_lock: Arc<std::sync::Mutex<()>>,
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
            session_limit: MAX_SESSIONS,
            snapshot_lock: Arc::default(),
        }
    }

    /// The log id the kept snapshot covers up to (`None` inside: a snapshot of an empty
    /// state; `None` outside: no snapshot kept).
    fn kept_snapshot_id(&self) -> Result<Option<Option<LogId<u64>>>, StorageError<u64>> {
        let ro = ReadOptions::default();
        if let Some(meta) =
            self.read_meta::<SnapshotMeta<u64, BasicNode>>(keys::SNAPSHOT_META, &ro)?
        {
            return Ok(Some(meta.last_log_id));
        }
        // Kept before the metadata had a key of its own.
        Ok(self
            .read_meta::<StoredSnapshot>(keys::SNAPSHOT, &ro)?
            .map(|s| s.meta.last_log_id))
    }

    /// Keeps `stored` as the current snapshot, synced, unless the kept one covers more of
    /// the log. True if it was kept.
    fn store_snapshot(&self, stored: &StoredSnapshot) -> Result<bool, StorageError<u64>> {
        let subject = || ErrorSubject::Snapshot(Some(stored.meta.signature()));
        let _kept = self.snapshot_lock.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(kept) = self.kept_snapshot_id()?
            && kept > stored.meta.last_log_id
        {
            return Ok(false);
        }
        let mut batch = WriteBatch::new();
        Self::put_snapshot(&mut batch, stored)?;
        self.db
            .write_opt(batch, &WriteOptions { sync: true })
            .map_err(|e| error::storage(subject(), ErrorVerb::Write, &e))?;
        Ok(true)
    }

    /// Puts `stored` as the kept snapshot, with its metadata under a key of its own.
    fn put_snapshot(
        batch: &mut WriteBatch,
        stored: &StoredSnapshot,
    ) -> Result<(), StorageError<u64>> {
        Self::put_meta(batch, keys::SNAPSHOT, stored)?;
        Self::put_meta(batch, keys::SNAPSHOT_META, &stored.meta)
    }

    /// The same, remembering at most `limit` sessions instead of [`MAX_SESSIONS`]. Every
    /// replica of a cluster must use the same limit (RS5: they must forget alike).
    pub fn with_session_limit(mut self, limit: u64) -> Self {
        self.session_limit = limit.max(1);
        self
    }

    /// The session of `client` as the state machine holds it now.
    fn read_session(&self, client: u64) -> Result<Option<SessionRecord>, StorageError<u64>> {
        self.read_meta(&keys::session(client), &ReadOptions::default())
    }

    /// Applies `request` into `batch`; `written` holds what this entry wrote so far (the
    /// previous value a later write must see).
    fn apply_request(
        &self,
        batch: &mut WriteBatch,
        written: &mut HashMap<String, Option<String>>,
        request: Request,
    ) -> Result<Response, StorageError<u64>> {
        let previous = match written.get(request.key()) {
            Some(v) => v.clone(),
            None => self.get(request.key())?,
        };
        match request {
            Request::Set { key, value } => {
                batch.put(keys::data(&key), value.as_bytes());
                written.insert(key, Some(value));
            }
            Request::Delete { key } => {
                batch.delete(keys::data(&key));
                written.insert(key, None);
            }
        }
        Ok(Response {
            previous,
            duplicate: false,
        })
    }

    /// Applies the proposal of entry `index` into `batch`, each session's write at most
    /// once, and records the sessions it changed (RS5).
    fn apply_proposal(
        &self,
        index: u64,
        proposal: Proposal,
        batch: &mut WriteBatch,
    ) -> Result<Vec<Response>, StorageError<u64>> {
        // What this entry wrote so far: the previous value a later write of it must see;
        // the sessions it read or changed.
        let mut written = HashMap::new();
        let mut touched = HashMap::new();
        let mut answers = Vec::with_capacity(proposal.writes.len());
        for write in proposal.writes {
            let Some(session) = write.session else {
                answers.push(self.apply_request(batch, &mut written, write.request)?);
                continue;
            };
            let t = match touched.entry(session.client) {
                Entry::Occupied(o) => o.into_mut(),
                Entry::Vacant(v) => {
                    let record = self.read_session(session.client)?;
                    v.insert(Touched {
                        stored_at: record.as_ref().map(|r| r.index),
                        record,
                        changed: false,
                    })
                }
            };
            if let Some(r) = &t.record
                && session.seq <= r.seq
            {
                // A resend: its first application's answer, or, for a write older than
                // the last one, only that it was applied.
                answers.push(Response {
                    previous: if session.seq == r.seq {
                        r.response.previous.clone()
                    } else {
                        None
                    },
                    duplicate: true,
                });
                continue;
            }
            let response = self.apply_request(batch, &mut written, write.request)?;
            t.record = Some(SessionRecord {
                seq: session.seq,
                index,
                response: response.clone(),
            });
            t.changed = true;
            answers.push(response);
        }
        self.record_sessions(touched, batch)?;
        Ok(answers)
    }

    /// Writes the sessions an entry changed into `batch`, and forgets the ones idle
    /// longest past the limit (RS5).
    fn record_sessions(
        &self,
        touched: HashMap<u64, Touched>,
        batch: &mut WriteBatch,
    ) -> Result<(), StorageError<u64>> {
        if !touched.values().any(|t| t.changed) {
            return Ok(());
        }
        let ro = ReadOptions::default();
        let mut count = self
            .read_meta::<u64>(keys::SESSION_COUNT, &ro)?
            .unwrap_or(0);
        // Age keys this batch deletes: the scan below reads the database before it.
        let mut moved = HashSet::new();
        for (client, t) in touched {
            let Some(record) = t.record.filter(|_| t.changed) else {
                continue;
            };
            match t.stored_at {
                Some(at) => {
                    batch.delete(keys::session_age(at, client));
                    moved.insert(keys::session_age(at, client));
                }
                None => count += 1,
            }
            batch.put(keys::session_age(record.index, client), b"");
            Self::put_meta(batch, &keys::session(client), &record)?;
        }
        if count > self.session_limit {
            let oldest = self.db.range_opt(
                keys::SESSION_AGE.to_vec()..keys::SESSION_AGE_END.to_vec(),
                false,
                &ro,
            );
            for entry in oldest {
                if count <= self.session_limit {
                    break;
                }
                let (k, _) = entry.map_err(|e| error::read_sm(&e))?;
                if moved.contains(k.as_slice()) {
                    continue;
                }
                let client = keys::session_age_client(&k).ok_or_else(|| {
                    error::read_sm(&BadRecord(format!(
                        "{} is not a session age key",
                        k.escape_ascii()
                    )))
                })?;
                batch.delete(&k);
                batch.delete(keys::session(client));
                count -= 1;
            }
        }
        Self::put_meta(batch, keys::SESSION_COUNT, &count)
    }

    /// The value of `key` as the state machine holds it now (a local read: it may lag the
    /// leader; a linearizable read goes through `Raft::ensure_linearizable` first).
    pub fn get(&self, key: &str) -> Result<Option<String>, StorageError<u64>> {
        self.read_value(key, &ReadOptions::default())
    }

    /// The keys from `start` (included) to `end` (excluded; `None`: to the last), at most
    /// `limit` of them, in key order, with their values as the state machine holds them
    /// now (a local read, as [`Self::get`]); the page ends early with the entry that brings
    /// its keys and values to `max_bytes`.
    pub fn scan(
        &self,
        start: &str,
        end: Option<&str>,
        limit: usize,
        max_bytes: usize,
    ) -> Result<Vec<(String, String)>, StorageError<u64>> {
        let to = end.map_or_else(|| keys::DATA_END.to_vec(), keys::data);
        let text = |b: &[u8]| {
            String::from_utf8(b.to_vec()).map_err(|_| {
                error::read_sm(&BadRecord("a state-machine record is not UTF-8".into()))
            })
        };
        let (mut found, mut bytes) = (Vec::new(), 0);
        for entry in self.db.range(keys::data(start)..to).take(limit) {
            let (k, v) = entry.map_err(|e| error::read_sm(&e))?;
            let (k, v) = (text(&k[keys::DATA.len()..])?, text(&v)?);
            bytes += k.len() + v.len();
            found.push((k, v));
            if bytes >= max_bytes {
                break;
            }
        }
        Ok(found)
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
        let mut sessions = Vec::new();
        for entry in m.db.range_opt(
            keys::SESSION.to_vec()..keys::SESSION_END.to_vec(),
            false,
            &ro,
        ) {
            let (k, v) = entry.map_err(|e| error::read_sm(&e))?;
            let client = keys::session_client(&k).ok_or_else(|| {
                error::read_sm(&BadRecord(format!(
                    "{} is not a session key",
                    k.escape_ascii()
                )))
            })?;
            let record: SessionRecord = error::decode(&k, &v).map_err(|e| error::read_sm(&e))?;
            sessions.push((client, record));
        }
        let data = error::encode(&SnapshotData { kv, sessions }).map_err(|e| error::read_sm(&e))?;
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
        m.store_snapshot(&stored)?;
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

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Vec<Response>>, StorageError<u64>>
    where
        I: IntoIterator<Item = openraft::Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        // One batch per entry, with its applied id: the state after each entry is the
        // same however openraft groups entries into calls (on the leader, on a follower,
        // in a replay after a restart), sessions forgotten included (RS5).
        let mut responses = Vec::new();
        for entry in entries {
            let id = *entry.get_log_id();
            let mut batch = WriteBatch::new();
            match entry.payload {
                EntryPayload::Blank => responses.push(Vec::new()),
                EntryPayload::Normal(proposal) => {
                    responses.push(self.apply_proposal(id.index, proposal, &mut batch)?);
                }
                EntryPayload::Membership(m) => {
                    Self::put_meta(
                        &mut batch,
                        keys::MEMBERSHIP,
                        &StoredMembership::new(Some(id), m),
                    )?;
                    responses.push(Vec::new());
                }
            }
            Self::put_meta(&mut batch, keys::APPLIED, &id)?;
            // RS1: not synced; the log these entries come from is.
            self.db.write(batch).map_err(|e| error::write_sm(&e))?;
        }
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
        batch.delete_range(keys::SESSION, keys::SESSION_END);
        batch.delete_range(keys::SESSION_AGE, keys::SESSION_AGE_END);
        for (client, record) in &decoded.sessions {
            batch.put(keys::session_age(record.index, *client), b"");
            Self::put_meta(&mut batch, &keys::session(*client), record)?;
        }
        Self::put_meta(
            &mut batch,
            keys::SESSION_COUNT,
            &(decoded.sessions.len() as u64),
        )?;
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
        Self::put_snapshot(&mut batch, &stored)?;
        // Ordered with a build's comparison and write (`store_snapshot`).
        let _kept = self.snapshot_lock.lock().unwrap_or_else(|p| p.into_inner());
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use openraft::CommittedLeaderId;

    use super::*;

    fn snapshot(index: u64, value: &str) -> StoredSnapshot {
        StoredSnapshot {
            meta: SnapshotMeta {
                last_log_id: Some(LogId::new(CommittedLeaderId::new(1, 0), index)),
                last_membership: StoredMembership::default(),
                snapshot_id: format!("test-{index}"),
            },
            data: error::encode(&SnapshotData {
                kv: vec![("k".into(), value.into())],
                sessions: Vec::new(),
            })
            .unwrap(),
        }
    }

    #[tokio::test]
    async fn an_older_snapshot_never_replaces_a_newer_one() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(
            Db::open(
                dir.path(),
                strata::Options {
                    create_if_missing: true,
                    ..Default::default()
                },
            )
            .unwrap(),
        );
        let mut sm = StrataStateMachine::new(db);
        let newer = snapshot(10, "new");
        sm.install_snapshot(&newer.meta, Box::new(Cursor::new(newer.data.clone())))
            .await
            .unwrap();
        // A build that read its state before the install finishes after it.
        assert!(!sm.store_snapshot(&snapshot(5, "old")).unwrap());
        let kept = sm.get_current_snapshot().await.unwrap().unwrap();
        assert_eq!(kept.meta.snapshot_id, "test-10");
        assert!(sm.store_snapshot(&snapshot(12, "newest")).unwrap());
        let kept = sm.get_current_snapshot().await.unwrap().unwrap();
        assert_eq!(kept.meta.snapshot_id, "test-12");
    }
}
