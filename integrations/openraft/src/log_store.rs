//! The Raft log on Strata: entries under `l/` and their index, vote, committed and purged
//! ids under `m/` (`keys.rs`). Purge and truncate are range deletes (RS2).
//!
//! An append is written unsynced (readable at once, as openraft requires when `append`
//! returns) and handed to the store's flusher thread, which calls `Db::flush_wal(true)`
//! once for every append waiting and then tells openraft, in order, that they are
//! durable (RS1): appends arriving during one sync share the next, and no async task
//! waits on an `fdatasync`. Votes, truncations and purges are synced writes.

use std::fmt::Debug;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use openraft::storage::{LogFlushed, LogState, RaftLogReader, RaftLogStorage};
use openraft::{
    ErrorSubject, ErrorVerb, LogId, OptionalSend, RaftLogId, RaftTypeConfig, StorageError, Vote,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use strata::{Db, WriteBatch, WriteOptions};

use crate::error::{self, BadRecord};
use crate::keys;
use crate::metrics::NodeMetrics;

const SYNC: WriteOptions = WriteOptions { sync: true };

/// openraft's log storage over a Strata database (shared with the state machine, or
/// not). Cloning it shares the database.
pub struct StrataLogStore<C: RaftTypeConfig> {
    db: Arc<Db>,
    /// Appends written and waiting for their sync, in order.
    flusher: std::sync::mpsc::Sender<LogFlushed<C>>,
    /// Its syncs and the committed index, for `/metrics`.
    metrics: Arc<NodeMetrics>,
    _config: PhantomData<C>,
}

impl<C: RaftTypeConfig> Clone for StrataLogStore<C> {
    fn clone(&self) -> Self {
        StrataLogStore {
            db: Arc::clone(&self.db),
            flusher: self.flusher.clone(),
            metrics: Arc::clone(&self.metrics),
            _config: PhantomData,
        }
    }
}

/// The flusher: for each group of appends waiting, one `flush_wal(true)`, then each
/// append's callback in order (RS1). Ends when every store sharing it is dropped.
fn flush_appends<C: RaftTypeConfig>(
    db: Arc<Db>,
    waiting: std::sync::mpsc::Receiver<LogFlushed<C>>,
    metrics: Arc<NodeMetrics>,
) {
    while let Ok(first) = waiting.recv() {
        let mut group = vec![first];
        group.extend(waiting.try_iter());
        let synced = db.flush_wal(true);
        metrics.count_fsync();
        for callback in group {
            tell(callback, &synced);
        }
    }
}

/// Tells openraft how the write or sync behind `callback` ended.
fn tell<C: RaftTypeConfig>(callback: LogFlushed<C>, outcome: &strata::Result<()>) {
    callback.log_io_completed(
        outcome
            .as_ref()
            .map(|_| ())
            .map_err(|e| std::io::Error::other(e.to_string())),
    );
}

impl<C: RaftTypeConfig> Debug for StrataLogStore<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StrataLogStore").finish_non_exhaustive()
    }
}

impl<C> StrataLogStore<C>
where
    C: RaftTypeConfig<NodeId = u64>,
    C::Entry: Serialize + DeserializeOwned,
{
    /// A log store over `db`, with its flusher thread.
    pub fn new(db: Arc<Db>) -> Self {
        let (flusher, waiting) = std::sync::mpsc::channel();
        let flushed_db = Arc::clone(&db);
        let metrics = Arc::new(NodeMetrics::default());
        let counted = Arc::clone(&metrics);
        // If the thread cannot start, the receiver goes with it and `append` syncs in place.
        let _ = std::thread::Builder::new()
            .name("strata-raft-flush".into())
            .spawn(move || flush_appends::<C>(flushed_db, waiting, counted));
        let store = StrataLogStore {
            db,
            flusher,
            metrics,
            _config: PhantomData,
        };
        // The committed index a restart starts from (openraft saves it again only when it
        // moves); unreadable, the metric waits for the next commit.
        if let Ok(Some(Some(c))) =
            store.read_meta::<Option<LogId<u64>>>(keys::COMMITTED, ErrorSubject::Store)
        {
            store.metrics.set_committed(Some(c.index));
        }
        store
    }

    /// The node's counters this store adds to (its syncs, the committed index): hand them
    /// to the service (`service::start_with_metrics`) so that `/metrics` shows them.
    pub fn metrics(&self) -> Arc<NodeMetrics> {
        Arc::clone(&self.metrics)
    }

    /// The record under `key`, decoded, if there is one.
    fn read_meta<T: DeserializeOwned>(
        &self,
        key: &[u8],
        subject: ErrorSubject<u64>,
    ) -> Result<Option<T>, StorageError<u64>> {
        let got = self
            .db
            .get(key)
            .map_err(|e| error::storage(subject.clone(), ErrorVerb::Read, &e))?;
        got.map(|v| error::decode(key, &v))
            .transpose()
            .map_err(|e| error::storage(subject, ErrorVerb::Read, &e))
    }

    /// Writes `value` under `key`, synced when `sync` (RS1).
    fn write_meta<T: Serialize>(
        &self,
        key: &[u8],
        value: &T,
        subject: ErrorSubject<u64>,
        sync: bool,
    ) -> Result<(), StorageError<u64>> {
        let bytes = error::encode(value)
            .map_err(|e| error::storage(subject.clone(), ErrorVerb::Write, &e))?;
        if sync {
            self.metrics.count_fsync();
        }
        self.db
            .put_opt(key, bytes, &WriteOptions { sync })
            .map_err(|e| error::storage(subject, ErrorVerb::Write, &e))
    }

    /// The entry stored under `key`, checked against the index its key names (RS4).
    fn decode_entry(key: &[u8], value: &[u8]) -> Result<C::Entry, StorageError<u64>> {
        let index = keys::log_index(key)
            .ok_or_else(|| BadRecord(format!("{} is not a log key", key.escape_ascii())))
            .map_err(|e| error::read_logs(&e))?;
        let entry: C::Entry = error::decode(key, value).map_err(|e| {
            error::storage(ErrorSubject::Log(log_id_at(index)), ErrorVerb::Read, &e)
        })?;
        if entry.get_log_id().index != index {
            let e = BadRecord(format!(
                "the log entry under index {index} says it is entry {}",
                entry.get_log_id().index
            ));
            return Err(error::read_logs(&e));
        }
        Ok(entry)
    }

    /// The last entry's log id, if the log holds any.
    fn last_log_id(&self) -> Result<Option<LogId<u64>>, StorageError<u64>> {
        let mut last = self
            .db
            .range_rev(keys::log(0).to_vec()..keys::LOG_END.to_vec());
        match last.next() {
            None => Ok(None),
            Some(Err(e)) => Err(error::read_logs(&e)),
            Some(Ok((k, v))) => Ok(Some(*Self::decode_entry(&k, &v)?.get_log_id())),
        }
    }
}

/// A log id naming only an index (for error reports about a record whose term is not
/// known).
fn log_id_at(index: u64) -> LogId<u64> {
    LogId::new(openraft::CommittedLeaderId::new(0, 0), index)
}

/// The keys `[start, end)` of the log indexes in `range`.
fn key_bounds<RB: RangeBounds<u64>>(range: &RB) -> Option<(Vec<u8>, Bound<Vec<u8>>)> {
    let start = match range.start_bound() {
        Bound::Included(&i) => i,
        Bound::Excluded(&i) => i.checked_add(1)?,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&i) => match i.checked_add(1) {
            Some(j) => Bound::Excluded(keys::log(j).to_vec()),
            None => Bound::Excluded(keys::LOG_END.to_vec()),
        },
        Bound::Excluded(&i) => Bound::Excluded(keys::log(i).to_vec()),
        Bound::Unbounded => Bound::Excluded(keys::LOG_END.to_vec()),
    };
    Some((keys::log(start).to_vec(), end))
}

impl<C> RaftLogReader<C> for StrataLogStore<C>
where
    C: RaftTypeConfig<NodeId = u64>,
    C::Entry: Serialize + DeserializeOwned,
{
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<C::Entry>, StorageError<u64>> {
        let Some((start, end)) = key_bounds(&range) else {
            return Ok(Vec::new());
        };
        let mut entries = Vec::new();
        for kv in self.db.range((Bound::Included(start), end)) {
            let (k, v) = kv.map_err(|e| error::read_logs(&e))?;
            entries.push(Self::decode_entry(&k, &v)?);
        }
        Ok(entries)
    }
}

impl<C> RaftLogStorage<C> for StrataLogStore<C>
where
    C: RaftTypeConfig<NodeId = u64>,
    C::Entry: Serialize + DeserializeOwned,
{
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<C>, StorageError<u64>> {
        let last_purged_log_id: Option<LogId<u64>> =
            self.read_meta(keys::PURGED, ErrorSubject::Logs)?;
        let last_log_id = self.last_log_id()?.or(last_purged_log_id);
        Ok(LogState {
            last_purged_log_id,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<u64>) -> Result<(), StorageError<u64>> {
        self.write_meta(keys::VOTE, vote, ErrorSubject::Vote, true)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<u64>>, StorageError<u64>> {
        self.read_meta(keys::VOTE, ErrorSubject::Vote)
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogId<u64>>,
    ) -> Result<(), StorageError<u64>> {
        // Not synced: openraft needs the committed id only as a hint after a restart (it
        // re-learns it from the leader); a lost one costs a replay, never a wrong answer.
        self.metrics.set_committed(committed.map(|c| c.index));
        self.write_meta(keys::COMMITTED, &committed, ErrorSubject::Store, false)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<u64>>, StorageError<u64>> {
        Ok(self
            .read_meta::<Option<LogId<u64>>>(keys::COMMITTED, ErrorSubject::Store)?
            .flatten())
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<C>,
    ) -> Result<(), StorageError<u64>>
    where
        I: IntoIterator<Item = C::Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut batch = WriteBatch::new();
        for entry in entries {
            let id = *entry.get_log_id();
            let bytes = error::encode(&entry)
                .map_err(|e| error::storage(ErrorSubject::Log(id), ErrorVerb::Write, &e))?;
            batch.put(keys::log(id.index), bytes);
        }
        // Readable at once; openraft hears it is durable only from the flusher (RS1).
        let written = self.db.write(batch);
        if let Err(e) = &written {
            tell(callback, &written);
            return Err(error::write_logs(e));
        }
        if let Err(std::sync::mpsc::SendError(callback)) = self.flusher.send(callback) {
            // No flusher (its thread could not start): sync here.
            let synced = self.db.flush_wal(true);
            self.metrics.count_fsync();
            tell(callback, &synced);
            synced.map_err(|e| error::write_logs(&e))?;
        }
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        self.metrics.count_fsync();
        self.db
            .delete_range_opt(keys::log(log_id.index), keys::LOG_END, &SYNC)
            .map_err(|e| error::write_logs(&e))
    }

    async fn purge(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        let mut batch = WriteBatch::new();
        let bytes = error::encode(&log_id).map_err(|e| error::write_logs(&e))?;
        batch.put(keys::PURGED, bytes);
        let end = match log_id.index.checked_add(1) {
            Some(next) => keys::log(next).to_vec(),
            None => keys::LOG_END.to_vec(),
        };
        // From the entry after the last purge: a range delete reads its range, and the
        // earlier entries are gone already (their tombstones wait for a compaction).
        let previous: Option<LogId<u64>> = self.read_meta(keys::PURGED, ErrorSubject::Logs)?;
        let start = previous.map_or(0, |p| p.index.saturating_add(1));
        batch.delete_range(keys::log(start), end);
        self.metrics.count_fsync();
        self.db
            .write_opt(batch, &SYNC)
            .map_err(|e| error::write_logs(&e))
    }
}
