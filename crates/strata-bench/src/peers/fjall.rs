//! fjall 2 (the leading Rust LSM engine): its defaults, with the benchmark's cache and
//! memtable sizes. Synced writes persist the journal with `PersistMode::SyncAll`.

use std::path::Path;

use anyhow::Result;
use fjall::{Config, Keyspace, PartitionCreateOptions, PartitionHandle, PersistMode};

use crate::engine::{BatchOp, Engine, EngineKind, Settings, found};

/// Opens fjall keyspaces with one partition.
#[derive(Debug)]
pub struct FjallKind;

struct FjallEngine {
    keyspace: Keyspace,
    items: PartitionHandle,
}

impl EngineKind for FjallKind {
    fn name(&self) -> &'static str {
        "fjall"
    }
    fn version(&self) -> String {
        "2".to_string()
    }
    fn open(&self, dir: &Path, s: &Settings) -> Result<Box<dyn Engine>> {
        let keyspace = Config::new(dir).cache_size(s.cache_size as u64).open()?;
        let options = PartitionCreateOptions::default()
            .max_memtable_size(u32::try_from(s.write_buffer_size).unwrap_or(u32::MAX));
        let items = keyspace.open_partition("kv", options)?;
        Ok(Box::new(FjallEngine { keyspace, items }))
    }
}

impl FjallEngine {
    fn persist(&self, sync: bool) -> Result<()> {
        if sync {
            self.keyspace.persist(PersistMode::SyncAll)?;
        }
        Ok(())
    }
}

impl Engine for FjallEngine {
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        self.items.insert(key, value)?;
        self.persist(sync)
    }
    fn get(&self, key: &[u8], visit: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(found(visit, self.items.get(key)?))
    }
    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        self.items.remove(key)?;
        self.persist(sync)
    }
    fn write_batch(&self, ops: &[BatchOp], sync: bool) -> Result<()> {
        let mut batch = self.keyspace.batch();
        for (k, v) in ops {
            match v {
                Some(v) => batch.insert(&self.items, *k, *v),
                None => batch.remove(&self.items, *k),
            }
        }
        batch.commit()?;
        self.persist(sync)
    }
    fn scan(
        &self,
        reverse: bool,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let mut n = 0;
        let mut each = |item: fjall::Result<(fjall::Slice, fjall::Slice)>| -> Result<()> {
            let (k, v) = item?;
            visit(&k, &v);
            n += 1;
            Ok(())
        };
        if reverse {
            for item in self.items.iter().rev().take(limit) {
                each(item)?;
            }
        } else {
            for item in self.items.iter().take(limit) {
                each(item)?;
            }
        }
        Ok(n)
    }
    fn seek(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.items.range(key.to_vec()..).next() {
            Some(item) => Ok(Some(item?.0.to_vec())),
            None => Ok(None),
        }
    }
    fn compact(&self) -> Result<()> {
        self.items.major_compact()?;
        Ok(())
    }
    fn stats(&self) -> Option<String> {
        None
    }
    fn sstables(&self) -> Option<String> {
        Some(format!("{} tables", self.items.segment_count()))
    }
}
