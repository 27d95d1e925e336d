//! The key-value state machine on Strata, in a database of its own: values under `s/`,
//! the last applied id and membership under `a/`, sessions under `c/` and `e/`
//! (`keys.rs`), kept in a directory beside its snapshots (`state_dir.rs`).
//!
//! Applying an entry is one batch (its values, its sessions, its id as the last applied
//! and any membership change together), not synced: the log it comes from is durable already
//! (RS1), and after a power cut the state machine applies again what it lost, or is
//! restored from the kept snapshot when the log before it is purged (SD3). A snapshot is a
//! checkpoint of the database (RS3: `Db::checkpoint`, tables and blob files hard-linked),
//! taken between two entries, so its metadata (last applied id, membership) is the
//! checkpoint's own; it travels as an archive of its files, read from them as it is sent
//! (`archive.rs`). Installing one unpacks the archive into a new snapshot directory, makes
//! a new database from it and swaps that in (SD2). A snapshot built from an older state
//! than the one kept is handed to openraft but not kept: the kept one never goes back
//! (SD1).
//!
//! Sessions (RS5): each client's last applied write and its response live under `c/`,
//! with an age index under `e/` (by the log index of that write) and their count under
//! `a/sessions`, all written in the same batch as the writes they describe, so a crash
//! keeps a write and its session together or neither. Everything here is a function of
//! the log alone (the age is a log index, never a clock), so every replica keeps and
//! forgets the same sessions.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::path::Path;
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
use crate::snapshot_data::SnapshotArchive;
use crate::state_dir::StateDir;
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

/// openraft's state machine over a Strata database: a map from string keys to string
/// values. Cloning it shares the database and its directory.
#[derive(Debug, Clone)]
pub struct StrataStateMachine {
    dir: Arc<StateDir>,
    /// Snapshots built by this process, for their ids.
    built: Arc<AtomicU64>,
    /// Drawn at random at open, for snapshot ids.
    nonce: u64,
    /// The most sessions kept (RS5).
    session_limit: u64,
}

/// Builds a snapshot from a checkpoint of the state machine's database (RS3).
#[derive(Debug)]
pub struct StrataSnapshotBuilder {
    machine: StrataStateMachine,
}

/// A Strata error as a `StorageError` about the state machine's snapshot.
fn snapshot_error(
    meta: Option<&SnapshotMeta<u64, BasicNode>>,
    verb: ErrorVerb,
    e: &strata::Error,
) -> StorageError<u64> {
    error::storage(
        ErrorSubject::Snapshot(meta.map(SnapshotMeta::signature)),
        verb,
        e,
    )
}

impl StrataStateMachine {
    /// Opens (creating if missing) the state machine kept in the directory `dir`, its
    /// files written through `options.env`. A database behind the kept snapshot (a power
    /// cut lost writes the log no longer holds) is restored from it (SD3), and what a
    /// crash left half made is removed (SD4).
    pub fn open(dir: impl AsRef<Path>, options: strata::Options) -> strata::Result<Self> {
        // A snapshot shares the database's blob files by hard links, and a hole punched in
        // one would reach the snapshot: garbage in blob files waits for their collection.
        let options = strata::Options {
            blob_punch_holes: false,
            ..options
        };
        let state = StateDir::open(dir.as_ref(), options)?;
        if let Some(kept) = state.kept() {
            let applied = read_applied(&state.db())?;
            if applied < kept.meta.last_log_id {
                let (number, db) = state.copy_of_snapshot(kept.number)?;
                write_applied(&db, &kept.meta)?;
                // Closed here, before `tidy` removes its directory: nothing else holds it.
                drop(state.make_live(number, db)?);
            }
        }
        state.tidy();
        Ok(StrataStateMachine {
            dir: Arc::new(state),
            built: Arc::new(AtomicU64::new(0)),
            nonce: crate::random_id(),
            session_limit: MAX_SESSIONS,
        })
    }

    /// The database the state machine lives in now (installing a snapshot replaces it).
    pub fn db(&self) -> Arc<Db> {
        self.dir.db()
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
            let db = self.db();
            let oldest = db.range_opt(
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
        let db = self.db();
        for entry in db.range(keys::data(start)..to).take(limit) {
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
        let got = self.db().get_opt(&k, ro).map_err(|e| error::read_sm(&e))?;
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
        let got = self.db().get_opt(key, ro).map_err(|e| error::read_sm(&e))?;
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

/// The last applied id as `db` holds it.
fn read_applied(db: &Db) -> strata::Result<Option<LogId<u64>>> {
    db.get(keys::APPLIED)?
        .map(|v| {
            error::decode(keys::APPLIED, &v).map_err(|e| {
                strata::Error::corruption("the state machine's database", 0, e.to_string())
            })
        })
        .transpose()
}

/// Writes `meta`'s last applied id and membership into `db`, synced: a database made
/// from a snapshot says what it holds, whatever the checkpoint said.
fn write_applied(db: &Db, meta: &SnapshotMeta<u64, BasicNode>) -> strata::Result<()> {
    fn json<T: Serialize>(v: &T) -> strata::Result<Vec<u8>> {
        error::encode(v).map_err(|e| strata::Error::InvalidArgument(e.to_string()))
    }
    let mut batch = WriteBatch::new();
    match &meta.last_log_id {
        Some(id) => batch.put(keys::APPLIED, json(id)?),
        None => batch.delete(keys::APPLIED),
    }
    batch.put(keys::MEMBERSHIP, json(&meta.last_membership)?);
    db.write_opt(batch, &WriteOptions { sync: true })
}

impl RaftSnapshotBuilder<TypeConfig> for StrataSnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<u64>> {
        let m = &self.machine;
        let dir = &m.dir;
        // RS3: the checkpoint and what it covers are taken between two entries.
        let (number, applied, membership) = {
            let _between = dir.apply_lock();
            let db = dir.db();
            let (applied, membership) = m.applied_as_of(&ReadOptions::default())?;
            let number = dir
                .checkpoint(&db)
                .map_err(|e| snapshot_error(None, ErrorVerb::Write, &e))?;
            (number, applied, membership)
        };
        let n = m.built.fetch_add(1, Ordering::Relaxed) + 1;
        // Unique across nodes and restarts (64 random bits: a clash is as unlikely as a
        // checksum collision): openraft tells one transfer from another by the id alone,
        // and two checkpoints of the same state differ in their bytes.
        let nonce = m.nonce;
        let snapshot_id = match applied {
            Some(id) => format!("{}-{}-{n}-{nonce:016x}", id.leader_id.term, id.index),
            None => format!("none-{n}-{nonce:016x}"),
        };
        let meta = SnapshotMeta {
            last_log_id: applied,
            last_membership: membership,
            snapshot_id,
        };
        let failed = |e: strata::Error| snapshot_error(Some(&meta), ErrorVerb::Write, &e);
        dir.complete(number, &meta).map_err(failed)?;
        // The archive holds the directory: a build older than the kept snapshot is not
        // kept, and its directory goes once openraft drops the archive.
        let hold = dir.hold(number);
        let archive = dir.archive(&hold).map_err(failed)?;
        dir.keep(number, hold, &meta);
        Ok(Snapshot {
            meta,
            snapshot: Box::new(archive),
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
            let _applying = self.dir.apply_lock();
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
            self.db().write(batch).map_err(|e| error::write_sm(&e))?;
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
    ) -> Result<Box<SnapshotArchive>, StorageError<u64>> {
        let archive = self
            .dir
            .incoming()
            .map_err(|e| snapshot_error(None, ErrorVerb::Write, &e))?;
        Ok(Box::new(archive))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<u64, BasicNode>,
        mut snapshot: Box<SnapshotArchive>,
    ) -> Result<(), StorageError<u64>> {
        let dir = &self.dir;
        let failed = |e: strata::Error| snapshot_error(Some(meta), ErrorVerb::Write, &e);
        // A damaged archive stops here, before anything of the live state changes.
        let number = dir
            .unpack(&mut snapshot)
            .map_err(|e| snapshot_error(Some(meta), ErrorVerb::Read, &e))?;
        drop(snapshot);
        // The snapshot is complete (SD1) only once a database made from it opened and
        // says what it holds: one that cannot open is never kept to fail every restart.
        let (live, db) = dir.copy_of_snapshot(number).map_err(|e| {
            dir.discard(Some(number), None);
            failed(e)
        })?;
        if let Err(e) = write_applied(&db, meta).and_then(|()| dir.complete(number, meta)) {
            drop(db);
            dir.discard(Some(number), Some(live));
            return Err(failed(e));
        }
        {
            let _between = dir.apply_lock();
            dir.make_live(live, db).map_err(failed)?.in_background();
        }
        dir.keep(number, dir.hold(number), meta);
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<u64>> {
        let current = self
            .dir
            .current()
            .map_err(|e| snapshot_error(None, ErrorVerb::Read, &e))?;
        Ok(current.map(|(meta, archive)| Snapshot {
            meta,
            snapshot: Box::new(archive),
        }))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::SeekFrom;

    use openraft::{CommittedLeaderId, Entry};
    use strata::env::Env;
    use strata::testing::{CrashEnv, Damage};
    use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

    use super::*;
    use crate::{Request, Write};

    fn options(env: &Arc<CrashEnv>) -> strata::Options {
        strata::Options {
            env: Arc::clone(env) as Arc<dyn Env>,
            ..Default::default()
        }
    }

    fn entry(index: u64, key: &str, value: &str) -> Entry<TypeConfig> {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 0), index),
            payload: EntryPayload::Normal(Proposal {
                writes: vec![Write {
                    session: None,
                    request: Request::Set {
                        key: key.into(),
                        value: value.into(),
                    },
                }],
            }),
        }
    }

    async fn build(sm: &mut StrataStateMachine) -> Snapshot<TypeConfig> {
        sm.get_snapshot_builder()
            .await
            .build_snapshot()
            .await
            .unwrap()
    }

    async fn fill(sm: &mut StrataStateMachine, from: u64, to: u64, value: &str) {
        let entries: Vec<_> = (from..=to)
            .map(|i| entry(i, &format!("k{i:04}"), value))
            .collect();
        sm.apply(entries).await.unwrap();
    }

    /// Streams `from` into `to` in chunks of `chunk` bytes, as openraft does, sending
    /// every third chunk twice (an answer lost).
    async fn stream(from: &mut SnapshotArchive, to: &mut SnapshotArchive, chunk: usize) {
        let end = from.seek(SeekFrom::End(0)).await.unwrap();
        let mut offset = 0;
        let mut sent = 0;
        while offset < end {
            from.seek(SeekFrom::Start(offset)).await.unwrap();
            let mut buf = vec![0u8; chunk.min((end - offset) as usize)];
            from.read_exact(&mut buf).await.unwrap();
            for _ in 0..if sent % 3 == 2 { 2 } else { 1 } {
                to.seek(SeekFrom::Start(offset)).await.unwrap();
                to.write_all(&buf).await.unwrap();
            }
            sent += 1;
            offset += buf.len() as u64;
        }
    }

    #[tokio::test]
    async fn a_snapshot_moves_the_state_in_chunks_and_an_older_one_is_never_kept() {
        let env = Arc::new(CrashEnv::new());
        let mut a = StrataStateMachine::open("/a", options(&env)).unwrap();
        let mut b = StrataStateMachine::open("/b", options(&env)).unwrap();
        fill(&mut a, 1, 300, "old").await;
        let mut early = build(&mut a).await;
        // A copy of it as received by a node that has not installed it yet.
        let mut early_copy = SnapshotArchive::from_bytes(Vec::new());
        stream(&mut early.snapshot, &mut early_copy, 1 << 20).await;
        fill(&mut a, 301, 500, "new").await;
        let mut snap = build(&mut a).await;
        assert_eq!(snap.meta.last_log_id.unwrap().index, 500);
        // The newer one is kept; the older one's directory stays while a stream of it is
        // in flight (a transfer always finishes), and goes when the stream does.
        let early_dirs = || {
            let mut n = env.children(Path::new("/a")).unwrap();
            n.retain(|n| n.starts_with("snapshot-"));
            n.len()
        };
        assert_eq!(early_dirs(), 2);
        early.snapshot.seek(SeekFrom::Start(0)).await.unwrap();
        let mut again = Vec::new();
        early.snapshot.read_to_end(&mut again).await.unwrap();
        let mut copied = Vec::new();
        early_copy.seek(SeekFrom::Start(0)).await.unwrap();
        early_copy.read_to_end(&mut copied).await.unwrap();
        assert_eq!(again, copied);
        let early_meta = early.meta.clone();
        drop(early);
        assert_eq!(early_dirs(), 1);
        fill(&mut b, 1, 10, "b's own").await;

        let mut incoming = b.begin_receiving_snapshot().await.unwrap();
        stream(&mut snap.snapshot, &mut incoming, 4096).await;
        b.install_snapshot(&snap.meta, incoming).await.unwrap();
        assert_eq!(b.applied_state().await.unwrap().0, snap.meta.last_log_id);
        assert_eq!(b.get("k0007").unwrap().as_deref(), Some("old"));
        assert_eq!(b.get("k0450").unwrap().as_deref(), Some("new"));
        assert_eq!(b.scan("", None, 10_000, usize::MAX).unwrap().len(), 500);
        let kept = b.get_current_snapshot().await.unwrap().unwrap().meta;
        assert_eq!(kept, snap.meta);

        // The earlier snapshot, installed late, replaces the state (openraft asked for
        // it) but never the kept snapshot (SD1); a later build is kept again.
        let mut late = b.begin_receiving_snapshot().await.unwrap();
        stream(&mut early_copy, &mut late, 1 << 20).await;
        b.install_snapshot(&early_meta, late).await.unwrap();
        assert_eq!(b.get("k0007").unwrap().as_deref(), Some("old"));
        let kept = b.get_current_snapshot().await.unwrap().unwrap().meta;
        assert_eq!(kept.snapshot_id, snap.meta.snapshot_id);
        fill(&mut b, 301, 600, "newest").await;
        let newest = build(&mut b).await;
        let kept = b.get_current_snapshot().await.unwrap().unwrap().meta;
        assert_eq!(kept, newest.meta);
        // One database and one snapshot directory are left once no archive holds the
        // others (the replaced databases are removed on threads of their own).
        drop((snap, newest));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let mut names = env.children(Path::new("/b")).unwrap();
            names.sort();
            if names.len() == 3 {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{names:?}");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn a_power_cut_that_loses_applied_entries_restores_the_kept_snapshot() {
        for damage in Damage::ALL {
            let env = Arc::new(CrashEnv::new());
            let mut sm = StrataStateMachine::open("/sm", options(&env)).unwrap();
            fill(&mut sm, 1, 200, "v").await;
            let snap = build(&mut sm).await;
            fill(&mut sm, 201, 260, "w").await;
            let crashed = Arc::new(env.crash(damage, 7));
            drop(sm);
            let mut sm = StrataStateMachine::open("/sm", options(&crashed)).unwrap();
            // SD3: never behind the snapshot the log was purged to.
            let applied = sm.applied_state().await.unwrap().0;
            assert!(applied >= snap.meta.last_log_id, "{damage:?}: {applied:?}");
            assert_eq!(sm.get("k0150").unwrap().as_deref(), Some("v"), "{damage:?}");
            if damage.keeps_unsynced() {
                assert_eq!(applied.unwrap().index, 260);
            }
            let kept = sm.get_current_snapshot().await.unwrap().unwrap();
            assert_eq!(kept.meta, snap.meta, "{damage:?}");
        }
    }
}
