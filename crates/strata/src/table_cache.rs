//! [`TableCache`]: open tables, at most `max_open_files` of them, least recently used
//! closed first.
//!
//! Opening a table reads its footer, index and filter; the cache keeps that work (and the
//! file handle) for the next lookup. Tables are handed out as `Arc`s, so closing one only
//! drops the cache's reference: readers holding it keep reading.
//!
//! Invariant:
//! - J3 when a table's file is deleted ([`TableCache::evict`]), its data blocks leave the
//!   block cache at once, so their room goes to live tables' blocks (a block a reader
//!   holds stays alive for it, BC3).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::comparator::InternalOrder;
use crate::env::Env;
use crate::error::Result;
use crate::filename;
use crate::iter::Cursor;
use crate::key::ValueType;
use crate::open_files::OpenFiles;
use crate::sstable::BlockCache;
use crate::sstable::{BlockReads, Table, TableFormat, TableIter};

/// The open tables of one database.
#[derive(Debug)]
pub struct TableCache {
    dir: PathBuf,
    env: Arc<dyn Env>,
    block_cache: Arc<BlockCache>,
    /// Open tables with [`Env::new_table_reader`] (which may map them), not
    /// [`Env::new_random_access`].
    mapped: bool,
    /// The database's key order and filter policy.
    format: TableFormat,
    tables: Mutex<OpenFiles<Arc<Table>>>,
    /// The block cache's [`BlockCache::probes`] when [`TableCache::read_since_asked`]
    /// was last asked.
    probes_seen: AtomicU64,
}

impl TableCache {
    /// A cache for the tables of `dir`, keeping at most `capacity` open.
    pub fn new(
        dir: &Path,
        env: Arc<dyn Env>,
        block_cache: Arc<BlockCache>,
        capacity: usize,
        mapped: bool,
        format: TableFormat,
    ) -> Self {
        TableCache {
            dir: dir.to_path_buf(),
            env,
            block_cache,
            mapped,
            format,
            probes_seen: AtomicU64::new(0),
            tables: Mutex::new(OpenFiles::new(capacity)),
        }
    }

    /// The order of the tables' keys.
    pub fn order(&self) -> &InternalOrder {
        &self.format.order
    }

    fn lock(&self) -> MutexGuard<'_, OpenFiles<Arc<Table>>> {
        // Each operation leaves the map whole; a panic cannot leave it half updated.
        self.tables.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The open table `number` (of `size` bytes), opening it if needed.
    pub fn find(&self, number: u64, size: u64) -> Result<Arc<Table>> {
        if let Some(t) = self.lock().get(number) {
            return Ok(t);
        }
        // Open outside the lock: other lookups go on meanwhile.
        let table = self
            .open(number, size)?
            .with_cache(Arc::clone(&self.block_cache));
        let table = Arc::new(table);
        self.lock().insert(number, Arc::clone(&table));
        Ok(table)
    }

    /// True if readers looked up blocks in the block cache since the last time this was
    /// asked (J2: a flush caches its table only then).
    pub fn read_since_asked(&self) -> bool {
        let now = self.block_cache.probes();
        self.probes_seen.swap(now, Ordering::Relaxed) != now
    }

    /// Table `number` if the cache holds it open, without opening it or marking it used.
    pub fn peek(&self, number: u64) -> Option<Arc<Table>> {
        self.lock().peek(number).cloned()
    }

    fn open(&self, number: u64, size: u64) -> Result<Table> {
        let mut path = filename::table(&self.dir, number);
        if !self.env.exists(&path) {
            let legacy = filename::sst_table(&self.dir, number);
            if self.env.exists(&legacy) {
                path = legacy;
            }
        }
        let file = if self.mapped {
            self.env.new_table_reader(&path)?
        } else {
            self.env.new_random_access(&path)?
        };
        Table::open(file, &path.to_string_lossy(), size, &self.format)
    }

    /// A cursor for one pass over table `number` (a compaction's input); its blocks are
    /// checked and not cached ([`BlockReads::SCAN_ONCE`]). A mapped table is opened
    /// afresh, not kept, and closed when the cursor is dropped: the pages the pass read
    /// then leave the process's resident set with it, instead of staying mapped until the
    /// cache closes the table (a compaction's inputs can be tens of MiB). On the real
    /// filesystem such a map holds no file descriptor (the file is closed once mapped),
    /// so it does not count against `max_open_files`. An unmapped table is read through
    /// the cache as any other, so that open descriptors stay within the bound.
    pub fn scan_once(&self, number: u64, size: u64) -> Result<TableIter> {
        if !self.mapped {
            return self.iter(number, size, BlockReads::SCAN_ONCE);
        }
        Ok(Arc::new(self.open(number, size)?).scan_iter(BlockReads::SCAN_ONCE))
    }

    /// The user key of each index entry of table `number` (one per data block, at or
    /// just above the block's last key), to cut a compaction into shards. A table the
    /// cache holds is read from there; any other is opened for this and closed again
    /// (not kept: compaction inputs are read once and deleted).
    pub fn index_keys(&self, number: u64, size: u64) -> Result<Vec<Vec<u8>>> {
        let cached = self.lock().get(number);
        let table = match cached {
            Some(t) => t,
            None => Arc::new(self.open(number, size)?),
        };
        let mut index = table.index_iter();
        let mut keys = Vec::new();
        index.seek_to_first();
        while index.valid() {
            keys.push(crate::key::user_key(index.key()).to_vec());
            index.next();
        }
        index.status()?;
        Ok(keys)
    }

    /// The newest version of `ikey`'s user key at or below its seqnum in table `number`:
    /// its type and value ([`Table::get_version`]).
    pub fn get_version(
        &self,
        number: u64,
        size: u64,
        ikey: &[u8],
        reads: BlockReads,
    ) -> Result<Option<(ValueType, Vec<u8>)>> {
        self.find(number, size)?.get_version(ikey, reads)
    }

    /// [`TableCache::get_version`] with the value as a view into its block.
    pub fn get_version_pinned(
        &self,
        number: u64,
        size: u64,
        ikey: &[u8],
        reads: BlockReads,
    ) -> Result<Option<(ValueType, crate::sstable::BlockSlice)>> {
        self.find(number, size)?.get_version_pinned(ikey, reads)
    }

    /// A cursor over table `number`.
    pub fn iter(&self, number: u64, size: u64, reads: BlockReads) -> Result<TableIter> {
        Ok(self.find(number, size)?.iter(reads))
    }

    /// Forgets table `number` (its file is being deleted), and drops its blocks from the
    /// block cache (J3).
    pub fn evict(&self, number: u64) {
        let table = self.lock().remove(number);
        if let Some(t) = table {
            t.drop_cached_blocks();
        }
    }

    /// The block cache the tables share.
    pub fn block_cache(&self) -> &Arc<BlockCache> {
        &self.block_cache
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::MemEnv;
    use crate::key::make_internal_key;
    use crate::sstable::{TableBuilder, TableOptions};

    /// A table of `n` entries written as file `number` of `dir` in `env`; its size.
    fn write_table(env: &MemEnv, dir: &Path, number: u64, n: usize) -> u64 {
        let file = env.new_writable(&filename::table(dir, number)).unwrap();
        let mut b = TableBuilder::new(file, TableOptions::default());
        for i in 0..n {
            let k = make_internal_key(format!("k{i:05}").as_bytes(), 1, ValueType::Value);
            b.add(&k, b"v").unwrap();
        }
        let (mut file, size) = b.finish().unwrap();
        file.sync().unwrap();
        size
    }

    /// Scans table 7 once through a cache over `mapped` tables; entries seen, tables the
    /// cache then holds open, bytes it cached.
    fn scan(mapped: bool) -> (usize, usize, usize) {
        let env = MemEnv::new();
        let dir = Path::new("/db");
        env.create_dir_all(dir).unwrap();
        let size = write_table(&env, dir, 7, 500);
        let cache = TableCache::new(
            dir,
            Arc::new(env),
            BlockCache::new(1 << 20),
            10,
            mapped,
            TableFormat::leveldb(),
        );
        let n = crate::iter::conformance::count_forward(&mut cache.scan_once(7, size).unwrap());
        let open = cache.lock().len();
        (n, open, cache.block_cache().usage())
    }

    #[test]
    fn a_one_pass_scan_reads_every_entry_and_keeps_a_mapped_table_closed() {
        assert_eq!(
            scan(true),
            (500, 0, 0),
            "mapped: own handle, nothing cached"
        );
        assert_eq!(
            scan(false),
            (500, 1, 0),
            "unmapped: through the cache's handles"
        );
    }
}
