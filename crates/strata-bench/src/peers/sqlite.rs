//! SQLite 3 (the system library) as a key-value store: one `(key BLOB PRIMARY KEY, value
//! BLOB) WITHOUT ROWID` table, exclusive locking, in two variants: the default rollback
//! journal and write-ahead logging. `synchronous=OFF` for asynchronous writes, `FULL` for
//! synced ones (switched per write as the benchmark asks). The page cache is the budget.

use std::path::Path;
use std::sync::Mutex;

use anyhow::{Context, Result};
use rusqlite::{Connection, OptionalExtension, params};

use crate::engine::{BatchOp, Engine, EngineKind, Settings, Update};

/// Opens SQLite databases; `wal` picks the variant.
#[derive(Debug)]
pub struct SqliteKind {
    /// Write-ahead logging instead of the rollback journal.
    pub wal: bool,
}

struct SqliteEngine {
    conn: Mutex<Conn>,
}

struct Conn {
    conn: Connection,
    synced: bool,
}

impl EngineKind for SqliteKind {
    fn name(&self) -> &'static str {
        if self.wal { "sqlite3-wal" } else { "sqlite3" }
    }
    fn version(&self) -> String {
        rusqlite::version().to_string()
    }
    fn has_transactions(&self) -> bool {
        true
    }
    fn open(&self, dir: &Path, s: &Settings) -> Result<Box<dyn Engine>> {
        let conn = Connection::open(dir.join("sqlite.db")).context("open SQLite")?;
        conn.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
        conn.pragma_update(
            None,
            "journal_mode",
            if self.wal { "WAL" } else { "DELETE" },
        )?;
        conn.pragma_update(None, "synchronous", "OFF")?;
        // Negative: the size in KiB.
        conn.pragma_update(None, "cache_size", -((s.cache_size / 1024) as i64))?;
        conn.execute(
            "CREATE TABLE IF NOT EXISTS kv (key BLOB PRIMARY KEY, value BLOB) WITHOUT ROWID",
            [],
        )?;
        Ok(Box::new(SqliteEngine {
            conn: Mutex::new(Conn {
                conn,
                synced: false,
            }),
        }))
    }
}

impl SqliteEngine {
    fn lock(&self, sync: bool) -> Result<std::sync::MutexGuard<'_, Conn>> {
        let mut c = self
            .conn
            .lock()
            .map_err(|_| anyhow::anyhow!("SQLite connection poisoned"))?;
        if c.synced != sync {
            c.conn
                .pragma_update(None, "synchronous", if sync { "FULL" } else { "OFF" })?;
            c.synced = sync;
        }
        Ok(c)
    }
}

impl Engine for SqliteEngine {
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        let c = self.lock(sync)?;
        c.conn
            .prepare_cached("INSERT OR REPLACE INTO kv (key, value) VALUES (?1, ?2)")?
            .execute(params![key, value])?;
        Ok(())
    }
    fn get(&self, key: &[u8], visit: &mut dyn FnMut(&[u8])) -> Result<bool> {
        let c = self.lock(false)?;
        // The value as SQLite holds it in the statement's row, no copy.
        let v: Option<()> = c
            .conn
            .prepare_cached("SELECT value FROM kv WHERE key = ?1")?
            .query_row(params![key], |r| {
                visit(r.get_ref(0)?.as_blob()?);
                Ok(())
            })
            .optional()?;
        Ok(v.is_some())
    }
    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        let c = self.lock(sync)?;
        c.conn
            .prepare_cached("DELETE FROM kv WHERE key = ?1")?
            .execute(params![key])?;
        Ok(())
    }
    fn transact(&self, keys: &[&[u8]], update: &mut Update<'_>, sync: bool) -> Result<bool> {
        // One connection behind a mutex: one transaction at a time, never a conflict.
        let mut c = self.lock(sync)?;
        let tx = c.conn.transaction()?;
        let mut read = Vec::with_capacity(keys.len());
        {
            let mut get = tx.prepare_cached("SELECT value FROM kv WHERE key = ?1")?;
            for k in keys {
                read.push(
                    get.query_row(params![k], |r| r.get::<_, Vec<u8>>(0))
                        .optional()?,
                );
            }
            let mut put =
                tx.prepare_cached("INSERT OR REPLACE INTO kv (key, value) VALUES (?1, ?2)")?;
            for (k, v) in keys.iter().zip(update(&read)) {
                put.execute(params![k, v])?;
            }
        }
        tx.commit()?;
        Ok(true)
    }
    fn write_batch(&self, ops: &[BatchOp], sync: bool) -> Result<()> {
        let mut c = self.lock(sync)?;
        let tx = c.conn.transaction()?;
        {
            let mut put =
                tx.prepare_cached("INSERT OR REPLACE INTO kv (key, value) VALUES (?1, ?2)")?;
            let mut del = tx.prepare_cached("DELETE FROM kv WHERE key = ?1")?;
            for (k, v) in ops {
                match v {
                    Some(v) => put.execute(params![k, v])?,
                    None => del.execute(params![k])?,
                };
            }
        }
        tx.commit()?;
        Ok(())
    }
    fn scan(
        &self,
        reverse: bool,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let c = self.lock(false)?;
        let sql = if reverse {
            "SELECT key, value FROM kv ORDER BY key DESC LIMIT ?1"
        } else {
            "SELECT key, value FROM kv ORDER BY key LIMIT ?1"
        };
        let mut stmt = c.conn.prepare_cached(sql)?;
        let mut rows = stmt.query(params![limit.min(i64::MAX as usize) as i64])?;
        let mut n = 0;
        while let Some(row) = rows.next()? {
            let k = row.get_ref(0)?.as_blob()?;
            let v = row.get_ref(1)?.as_blob()?;
            visit(k, v);
            n += 1;
        }
        Ok(n)
    }
    fn seek(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let c = self.lock(false)?;
        Ok(c.conn
            .prepare_cached("SELECT key FROM kv WHERE key >= ?1 ORDER BY key LIMIT 1")?
            .query_row(params![key], |r| r.get(0))
            .optional()?)
    }
    fn compact(&self) -> Result<()> {
        // SQLite's nearest equivalent: rewrite the file compactly.
        let c = self.lock(false)?;
        c.conn.execute_batch("VACUUM")?;
        Ok(())
    }
    fn stats(&self) -> Option<String> {
        None
    }
    fn sstables(&self) -> Option<String> {
        None
    }
}
