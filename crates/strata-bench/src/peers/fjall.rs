//! fjall 2 (the leading Rust LSM engine): its defaults, with the benchmark's cache and
//! memtable sizes. Synced writes persist the journal with `PersistMode::SyncAll`.
//!
//! `fjall-tx` opens the same keyspace as fjall's transactional keyspace with its default
//! transactions (`single_writer_tx`: serializable, one write transaction at a time, so
//! none ever conflicts, as LMDB's): the peer of Strata's transactions, chosen by name only.
//! Its plain writes are transactions of one operation each (they take the writer's turn);
//! its reads and scans go to the partition underneath.
//!
//! fjall builds one transaction mode at a time. Built with the `fjall-ssi` feature instead
//! of `fjall` (`make bench-transactions-fjall-ssi`), the transactional column is
//! `fjall-ssi`: fjall's optimistic serializable transactions (`ssi_tx`), many writers at
//! once, a commit refused when a key it read was written by a transaction that committed
//! after it began.

use std::path::Path;

use anyhow::Result;
use fjall::{
    Config, Keyspace, PartitionCreateOptions, PartitionHandle, PersistMode, TxKeyspace,
    TxPartitionHandle,
};

use crate::engine::{BatchOp, Engine, EngineKind, Settings, Update, found};

/// Opens fjall keyspaces with one partition; with `transactional`, as `fjall-tx`.
#[derive(Debug)]
pub struct FjallKind {
    pub transactional: bool,
}

struct FjallEngine {
    keyspace: Keyspace,
    items: PartitionHandle,
    /// The transactional keyspace `keyspace` lies under, and its partition (`fjall-tx`).
    tx: Option<(TxKeyspace, TxPartitionHandle)>,
}

impl EngineKind for FjallKind {
    fn name(&self) -> &'static str {
        if self.transactional {
            if cfg!(feature = "fjall-ssi") {
                "fjall-ssi"
            } else {
                "fjall-tx"
            }
        } else {
            "fjall"
        }
    }
    fn version(&self) -> String {
        "2".to_string()
    }
    fn has_transactions(&self) -> bool {
        self.transactional
    }
    fn open(&self, dir: &Path, s: &Settings) -> Result<Box<dyn Engine>> {
        let config = Config::new(dir).cache_size(s.cache_size as u64);
        let options = PartitionCreateOptions::default()
            .max_memtable_size(u32::try_from(s.write_buffer_size).unwrap_or(u32::MAX));
        if self.transactional {
            let tx_keyspace = config.open_transactional()?;
            let tx_items = tx_keyspace.open_partition("kv", options)?;
            return Ok(Box::new(FjallEngine {
                keyspace: tx_keyspace.inner().clone(),
                items: tx_items.inner().clone(),
                tx: Some((tx_keyspace, tx_items)),
            }));
        }
        let keyspace = config.open()?;
        let items = keyspace.open_partition("kv", options)?;
        Ok(Box::new(FjallEngine {
            keyspace,
            items,
            tx: None,
        }))
    }
}

/// A write transaction of `keyspace` (fjall's single writer waits for its turn here).
#[cfg(not(feature = "fjall-ssi"))]
fn begin(keyspace: &TxKeyspace) -> Result<fjall::WriteTransaction<'_>> {
    Ok(keyspace.write_tx())
}

/// Commits `txn`: true if it committed (a single writer never conflicts).
#[cfg(not(feature = "fjall-ssi"))]
fn commit(txn: fjall::WriteTransaction<'_>) -> Result<bool> {
    txn.commit()?;
    Ok(true)
}

/// A write transaction of `keyspace` (optimistic: it begins at once).
#[cfg(feature = "fjall-ssi")]
fn begin(keyspace: &TxKeyspace) -> Result<fjall::WriteTransaction> {
    Ok(keyspace.write_tx()?)
}

/// Commits `txn`: false if fjall refused it for a conflict.
#[cfg(feature = "fjall-ssi")]
fn commit(txn: fjall::WriteTransaction) -> Result<bool> {
    Ok(txn.commit()?.is_ok())
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
        match &self.tx {
            Some((_, items)) => items.insert(key, value)?,
            None => self.items.insert(key, value)?,
        }
        self.persist(sync)
    }
    fn transact(&self, keys: &[&[u8]], update: &mut Update<'_>, sync: bool) -> Result<bool> {
        let Some((keyspace, items)) = &self.tx else {
            return Err(crate::engine::Cannot("no transactions".into()).into());
        };
        let mut txn = begin(keyspace)?;
        if sync {
            txn = txn.durability(Some(PersistMode::SyncAll));
        }
        let mut read = Vec::with_capacity(keys.len());
        for k in keys {
            read.push(txn.get(items, k)?.map(|v| v.to_vec()));
        }
        for (k, v) in keys.iter().zip(update(&read)) {
            txn.insert(items, *k, v);
        }
        commit(txn)
    }
    fn get(&self, key: &[u8], visit: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(found(visit, self.items.get(key)?))
    }
    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        match &self.tx {
            Some((_, items)) => items.remove(key)?,
            None => self.items.remove(key)?,
        }
        self.persist(sync)
    }
    fn write_batch(&self, ops: &[BatchOp], sync: bool) -> Result<()> {
        if let Some((keyspace, items)) = &self.tx {
            let mut txn = begin(keyspace)?;
            for (k, v) in ops {
                match v {
                    Some(v) => txn.insert(items, *k, *v),
                    None => txn.remove(items, *k),
                }
            }
            // Blind writes read nothing, so even optimistic transactions never conflict.
            if !commit(txn)? {
                return Err(
                    crate::engine::Cannot("a batch of blind writes conflicted".into()).into(),
                );
            }
            return self.persist(sync);
        }
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
