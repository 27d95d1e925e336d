//! The engine seam: the thinnest layer that lets every engine run the same workloads.

use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

/// An engine's own work counters: since it opened (from [`Engine::counters`])
/// or over one benchmark ([`EngineCounters::since`]). `None` where the engine does not
/// report the figure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineCounters {
    /// Seconds writers were delayed or stopped by the engine.
    pub stall_seconds: Option<f64>,
    /// Writes delayed because level 0 was filling.
    pub slowdowns: Option<u64>,
    /// Writes stopped until a flush or level 0 caught up.
    pub stops: Option<u64>,
    /// Memtables flushed.
    pub flushes: Option<u64>,
    /// Compactions run.
    pub compactions: Option<u64>,
    /// Seconds spent in flushes and compactions.
    pub compaction_seconds: Option<f64>,
    /// Bytes compactions read.
    pub compaction_bytes_read: Option<u64>,
    /// Bytes flushes and compactions wrote.
    pub compaction_bytes_written: Option<u64>,
}

impl EngineCounters {
    /// What changed from `before` to `self`.
    pub fn since(&self, before: &EngineCounters) -> EngineCounters {
        fn d<T: std::ops::Sub<Output = T> + PartialOrd + Copy>(
            a: Option<T>,
            b: Option<T>,
        ) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) if a >= b => Some(a - b),
                (Some(a), None) => Some(a),
                _ => None,
            }
        }
        EngineCounters {
            stall_seconds: d(self.stall_seconds, before.stall_seconds),
            slowdowns: d(self.slowdowns, before.slowdowns),
            stops: d(self.stops, before.stops),
            flushes: d(self.flushes, before.flushes),
            compactions: d(self.compactions, before.compactions),
            compaction_seconds: d(self.compaction_seconds, before.compaction_seconds),
            compaction_bytes_read: d(self.compaction_bytes_read, before.compaction_bytes_read),
            compaction_bytes_written: d(
                self.compaction_bytes_written,
                before.compaction_bytes_written,
            ),
        }
    }
}

/// How an engine is opened: memory budget, file layout, durability. A field that a JSON file
/// of an older version lacks reads as its default (zero, off), so old runs still draw.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Block or page cache in bytes.
    pub cache_size: usize,
    /// Write buffer (memtable) in bytes.
    pub write_buffer_size: usize,
    /// Target table file size.
    pub max_file_size: usize,
    /// Data block size.
    pub block_size: usize,
    /// Bloom filter bits per key (`None`: no filter).
    pub bloom_bits: Option<usize>,
    /// Files kept open.
    pub open_files: usize,
    /// Block compression on.
    pub compression: bool,
    /// Strata writes its log through a memory map (`Options::mmap_wal`); other engines
    /// ignore it.
    pub mmap_write: bool,
    /// Strata reads its tables through memory maps (`Options::mmap_reads`); other engines
    /// ignore it.
    pub mmap_read: bool,
    /// Threads that merge one compaction at once (Strata's `max_subcompactions`); other
    /// engines ignore it.
    pub subcompactions: usize,
    /// Strata's `max_write_buffer_number`; other engines ignore it.
    pub max_write_buffer_number: usize,
    /// Strata's level-0 slowdown and stop triggers; other engines ignore them.
    pub level0_triggers: (usize, usize),
    /// Strata's `memtable_run_size` (0: one run); other engines ignore it.
    pub memtable_run_size: usize,
    /// The `strata-blob` engine's `blob_threshold`: values of at least this many bytes go
    /// to blob files. Other engines (plain `strata` included) ignore it.
    pub blob_threshold: usize,
    /// The `strata-blob` engine's `blob_gc_ratio`.
    pub blob_gc_ratio: f64,
    /// The `strata-blob` and `rocksdb-blob` engines' blob file size (`None`: each
    /// engine's default).
    #[serde(default)]
    pub blob_file_size: Option<usize>,
    /// The `strata-blob` engine's `blob_compression`.
    pub blob_compression: bool,
}

/// One write of a batch: a put (`Some(value)`) or a delete. Borrowed from buffers the
/// runner reuses, so building a batch allocates nothing in the harness.
pub type BatchOp<'a> = (&'a [u8], Option<&'a [u8]>);

/// A transaction's update: given the values read (`None`: absent), one new value per key.
pub type Update<'a> = dyn FnMut(&[Option<Vec<u8>>]) -> Vec<Vec<u8>> + 'a;

/// An engine's answer that it cannot do a workload with these settings (not a bug): the
/// runner reports the row as "n/a" with this reason instead of a failure.
#[derive(Debug)]
pub struct Cannot(pub String);

impl std::fmt::Display for Cannot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Cannot {}

/// An open database, shared by the benchmark's threads.
pub trait Engine: Send + Sync {
    /// Sets `key` to `value`.
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()>;
    /// Hands `key`'s value to `visit`, in place wherever the engine can give a view
    /// without copying (valid during the call); false if absent.
    fn get(&self, key: &[u8], visit: &mut dyn FnMut(&[u8])) -> Result<bool>;
    /// Removes `key`.
    fn delete(&self, key: &[u8], sync: bool) -> Result<()>;
    /// Applies `ops` atomically (engines without batches return an error).
    fn write_batch(&self, ops: &[BatchOp], sync: bool) -> Result<()>;
    /// Visits up to `limit` entries in key order (or reverse); returns how many.
    fn scan(
        &self,
        reverse: bool,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize>;
    /// The first key at or after `key`, if any.
    fn seek(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Compacts everything.
    fn compact(&self) -> Result<()>;
    /// The engine's own statistics, if it has any.
    fn stats(&self) -> Option<String>;
    /// The engine's table listing, if it has one.
    fn sstables(&self) -> Option<String>;
    /// The engine's own work counters since it opened (what it reports; `None`: nothing).
    fn counters(&self) -> Option<EngineCounters> {
        None
    }
    /// Reads `keys`, hands their values to `update` and writes the values it returns to
    /// the same keys, as one serializable transaction (what `randomtransaction` and
    /// `readmodifywrite` run): `Ok(true)` if it committed, `Ok(false)` if the engine
    /// refused it for a conflict (the caller runs it again). Engines without
    /// transactions say so.
    fn transact(&self, keys: &[&[u8]], update: &mut Update<'_>, sync: bool) -> Result<bool> {
        let _ = (keys, update, sync);
        Err(Cannot("no transactions".into()).into())
    }
}

/// A positioned cursor of some engine, as `scan` walks it.
pub trait Walk {
    /// True when positioned at an entry.
    fn valid(&self) -> bool;
    /// The current key and value.
    fn entry(&self) -> (&[u8], &[u8]);
    /// Moves to the next entry, or the previous one when `reverse`.
    fn step(&mut self, reverse: bool);
}

/// Visits up to `limit` entries from where `cursor` stands, stepping in the scan's
/// direction; returns how many.
pub fn walk(
    cursor: &mut impl Walk,
    reverse: bool,
    limit: usize,
    visit: &mut dyn FnMut(&[u8], &[u8]),
) -> usize {
    let mut n = 0;
    while n < limit && cursor.valid() {
        let (k, v) = cursor.entry();
        visit(k, v);
        n += 1;
        cursor.step(reverse);
    }
    n
}

/// Hands a looked-up value to `visit`; true if there was one. Every engine's `get` ends
/// with this.
pub fn found(visit: &mut dyn FnMut(&[u8]), value: Option<impl AsRef<[u8]>>) -> bool {
    match value {
        Some(v) => {
            visit(v.as_ref());
            true
        }
        None => false,
    }
}

/// Opens engines of one kind.
pub trait EngineKind: Sync {
    /// The name used on the command line and in reports.
    fn name(&self) -> &'static str;
    /// The engine's version, for the report.
    fn version(&self) -> String;
    /// Opens (creating it if needed) the database in `dir`.
    fn open(&self, dir: &Path, settings: &Settings) -> Result<Box<dyn Engine>>;
    /// True if the engine can apply batches atomically.
    fn has_batches(&self) -> bool {
        true
    }
    /// True if the engine has a compaction to ask for.
    fn has_compaction(&self) -> bool {
        true
    }
    /// True if the engine runs [`Engine::transact`].
    fn has_transactions(&self) -> bool {
        false
    }
}

/// Strata itself.
pub mod strata_engine {
    use std::path::Path;

    use anyhow::{Context, Result};
    use strata::sstable::Compression;
    use strata::{Db, Options, WriteBatch, WriteOptions};

    use super::{BatchOp, Engine, EngineCounters, EngineKind, Settings, Update};

    /// Opens Strata databases: plain (LevelDB's format), or with value separation on
    /// (`strata-blob`, `Options::blob_threshold` from the settings).
    #[derive(Debug)]
    pub struct StrataKind {
        /// Value separation on.
        pub blob: bool,
    }

    struct StrataEngine {
        db: Db,
    }

    impl EngineKind for StrataKind {
        fn name(&self) -> &'static str {
            if self.blob { "strata-blob" } else { "strata" }
        }
        fn version(&self) -> String {
            env!("CARGO_PKG_VERSION").to_string()
        }
        fn has_transactions(&self) -> bool {
            true
        }
        fn open(&self, dir: &Path, s: &Settings) -> Result<Box<dyn Engine>> {
            let options = Options {
                create_if_missing: true,
                write_buffer_size: s.write_buffer_size,
                max_file_size: s.max_file_size,
                block_size: s.block_size,
                max_open_files: s.open_files,
                bloom_bits_per_key: s.bloom_bits,
                compression: if s.compression {
                    Compression::Snappy
                } else {
                    Compression::None
                },
                block_cache: Some(strata::BlockCache::new(s.cache_size)),
                mmap_wal: s.mmap_write,
                mmap_reads: s.mmap_read,
                max_subcompactions: s.subcompactions,
                memtable_run_size: s.memtable_run_size,
                max_write_buffer_number: s.max_write_buffer_number,
                level0_slowdown_writes_trigger: s.level0_triggers.0,
                level0_stop_writes_trigger: s.level0_triggers.1,
                blob_threshold: if self.blob { s.blob_threshold } else { 0 },
                blob_gc_ratio: s.blob_gc_ratio,
                blob_file_size: s
                    .blob_file_size
                    .unwrap_or(Options::default().blob_file_size),
                blob_compression: self.blob && s.blob_compression,
                ..Options::default()
            };
            let db = Db::open(dir, options)
                .with_context(|| format!("open Strata at {}", dir.display()))?;
            Ok(Box::new(StrataEngine { db }))
        }
    }

    fn wo(sync: bool) -> WriteOptions {
        WriteOptions { sync }
    }

    impl super::Walk for strata::DbIterator {
        fn valid(&self) -> bool {
            strata::DbIterator::valid(self)
        }
        fn entry(&self) -> (&[u8], &[u8]) {
            (self.key(), self.value())
        }
        fn step(&mut self, reverse: bool) {
            if reverse { self.prev() } else { self.next() }
        }
    }

    impl Engine for StrataEngine {
        fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
            Ok(self.db.put_opt(key, value, &wo(sync))?)
        }
        fn transact(&self, keys: &[&[u8]], update: &mut Update<'_>, sync: bool) -> Result<bool> {
            // Optimistic: reads from a snapshot, checked at the commit (`Db::transaction`).
            let mut txn = self.db.transaction();
            let mut read = Vec::with_capacity(keys.len());
            for k in keys {
                read.push(txn.get(k)?);
            }
            for (k, v) in keys.iter().zip(update(&read)) {
                txn.put(k, v);
            }
            match txn.commit_opt(&wo(sync)) {
                Ok(()) => Ok(true),
                Err(e) if e.is_conflict() => Ok(false),
                Err(e) => Err(e.into()),
            }
        }
        fn get(&self, key: &[u8], visit: &mut dyn FnMut(&[u8])) -> Result<bool> {
            // A view into a cached block or a mapped file where the value lies there.
            Ok(super::found(visit, self.db.get_pinned(key)?))
        }
        fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
            Ok(self.db.delete_opt(key, &wo(sync))?)
        }
        fn write_batch(&self, ops: &[BatchOp], sync: bool) -> Result<()> {
            let bytes: usize = ops
                .iter()
                .map(|(k, v)| k.len() + v.map_or(0, <[u8]>::len) + 11)
                .sum();
            let mut b = WriteBatch::with_capacity(bytes);
            for (k, v) in ops {
                match v {
                    Some(v) => b.put(k, v),
                    None => b.delete(k),
                }
            }
            Ok(self.db.write_opt(b, &wo(sync))?)
        }
        fn scan(
            &self,
            reverse: bool,
            limit: usize,
            visit: &mut dyn FnMut(&[u8], &[u8]),
        ) -> Result<usize> {
            let mut it = self.db.raw_iterator();
            if reverse {
                it.seek_to_last();
            } else {
                it.seek_to_first();
            }
            let n = super::walk(&mut it, reverse, limit, visit);
            it.status()?;
            Ok(n)
        }
        fn seek(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
            let mut it = self.db.raw_iterator();
            it.seek(key);
            it.status()?;
            Ok(it.valid().then(|| it.key().to_vec()))
        }
        fn compact(&self) -> Result<()> {
            Ok(self.db.compact_range(None, None)?)
        }
        fn stats(&self) -> Option<String> {
            let mut s = self.db.property("leveldb.stats")?;
            s.push_str(&self.db.property("strata.stats")?);
            Some(s)
        }
        fn sstables(&self) -> Option<String> {
            self.db.property("leveldb.sstables")
        }
        fn counters(&self) -> Option<EngineCounters> {
            let c = self.db.counters();
            Some(EngineCounters {
                stall_seconds: Some(c.stall_seconds),
                slowdowns: Some(c.stall_slowdowns),
                stops: Some(c.stall_stops),
                flushes: Some(c.flushes),
                compactions: Some(c.compactions),
                compaction_seconds: Some(c.compaction_seconds),
                compaction_bytes_read: Some(c.compaction_bytes_read),
                compaction_bytes_written: Some(c.compaction_bytes_written),
            })
        }
    }
}
