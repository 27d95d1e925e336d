//! LevelDB 1.23 (Debian's `libleveldb`), through its C API.

use std::path::Path;

use anyhow::{Result, anyhow};
use leveldb_ffi::{Db, Options, WriteBatch};

use crate::engine::{BatchOp, Engine, EngineCounters, EngineKind, Settings, Walk, walk};

/// Opens LevelDB databases: Snappy as configured, the cache and write buffer of the
/// settings.
#[derive(Debug)]
pub struct LevelDbKind;

struct LevelDbEngine {
    db: Db,
}

impl EngineKind for LevelDbKind {
    fn name(&self) -> &'static str {
        "leveldb"
    }
    fn version(&self) -> String {
        let (major, minor) = leveldb_ffi::version();
        format!("{major}.{minor}")
    }
    fn open(&self, dir: &Path, s: &Settings) -> Result<Box<dyn Engine>> {
        let options = Options {
            create_if_missing: true,
            write_buffer_size: s.write_buffer_size,
            max_open_files: s.open_files as i32,
            cache_size: Some(s.cache_size),
            block_size: s.block_size,
            max_file_size: s.max_file_size,
            compression: s.compression,
            bloom_bits_per_key: s.bloom_bits.map(|b| b as i32),
            ..Options::default()
        };
        let db = Db::open(dir, &options)
            .map_err(|e| anyhow!("open LevelDB at {}: {e}", dir.display()))?;
        Ok(Box::new(LevelDbEngine { db }))
    }
}

fn err(e: String) -> anyhow::Error {
    anyhow!("LevelDB: {e}")
}

impl Walk for leveldb_ffi::Iter<'_> {
    fn valid(&self) -> bool {
        leveldb_ffi::Iter::valid(self)
    }
    fn entry(&self) -> (&[u8], &[u8]) {
        (self.key(), self.value())
    }
    fn step(&mut self, reverse: bool) {
        if reverse { self.prev() } else { self.next() }
    }
}

impl Engine for LevelDbEngine {
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        self.db.put(key, value, sync).map_err(err)
    }
    fn get(&self, key: &[u8], visit: &mut dyn FnMut(&[u8])) -> Result<bool> {
        self.db.get_with(key, visit).map_err(err)
    }
    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        self.db.delete(key, sync).map_err(err)
    }
    fn write_batch(&self, ops: &[BatchOp], sync: bool) -> Result<()> {
        let mut b = WriteBatch::new();
        for (k, v) in ops {
            match v {
                Some(v) => b.put(k, v),
                None => b.delete(k),
            }
        }
        self.db.write(&mut b, sync).map_err(err)
    }
    fn scan(
        &self,
        reverse: bool,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let mut it = self.db.iter();
        if reverse {
            it.seek_to_last();
        } else {
            it.seek_to_first();
        }
        let n = walk(&mut it, reverse, limit, visit);
        it.status().map_err(err)?;
        Ok(n)
    }
    fn seek(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut it = self.db.iter();
        it.seek(key);
        it.status().map_err(err)?;
        Ok(it.valid().then(|| it.key().to_vec()))
    }
    fn compact(&self) -> Result<()> {
        self.db.compact_range(None, None);
        Ok(())
    }
    fn stats(&self) -> Option<String> {
        self.db.property("leveldb.stats")
    }
    fn sstables(&self) -> Option<String> {
        self.db.property("leveldb.sstables")
    }
    fn counters(&self) -> Option<EngineCounters> {
        Some(leveldb_counters(&self.db.property("leveldb.stats")?))
    }
}

/// Compaction time and bytes from LevelDB's `leveldb.stats` table (whole megabytes, as
/// LevelDB prints them; flushes count as level-0 writes). LevelDB counts no stalls.
pub fn leveldb_counters(stats: &str) -> EngineCounters {
    let (mut secs, mut read_mb, mut write_mb) = (0.0, 0.0, 0.0);
    for line in stats.lines() {
        let f: Vec<f64> = line
            .split_whitespace()
            .map_while(|w| w.parse().ok())
            .collect();
        // Level Files Size(MB) Time(sec) Read(MB) Write(MB)
        if let [_, _, _, t, r, w] = f[..] {
            secs += t;
            read_mb += r;
            write_mb += w;
        }
    }
    let mb = |x: f64| (x * 1_048_576.0) as u64;
    EngineCounters {
        compaction_seconds: Some(secs),
        compaction_bytes_read: Some(mb(read_mb)),
        compaction_bytes_written: Some(mb(write_mb)),
        ..EngineCounters::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_compaction_table() {
        let stats = "                               Compactions\n\
            Level  Files Size(MB) Time(sec) Read(MB) Write(MB)\n\
            --------------------------------------------------\n  \
            0        2        4         1        0         8\n  \
            1        5        9         2       12        11\n";
        let c = leveldb_counters(stats);
        assert_eq!(c.compaction_seconds, Some(3.0));
        assert_eq!(c.compaction_bytes_read, Some(12 << 20));
        assert_eq!(c.compaction_bytes_written, Some(19 << 20));
        assert_eq!(c.stops, None);
    }
}
