//! A database under one option set, driven by the operations of a log: [`Runner`] applies
//! each one and returns its outcome. It opens the database when an operation needs it
//! (after a `close`), on a `MemEnv` or in a temporary directory, and keeps the log's
//! snapshots and cursors by id.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use strata::env::Env;
use strata::{Db, DbIterator, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};

use crate::op::{Op, Scan, Step, TxnStep, Write};
use crate::outcome::{Outcome, Val};
use crate::sets::OptionSet;
use crate::stop::StopEnv;

/// A database under one option set, with the snapshots and cursors the log made.
pub struct Runner {
    pub set: OptionSet,
    env: Arc<dyn Env>,
    path: PathBuf,
    // Field order is drop order: cursors and snapshots end before the database.
    iters: HashMap<u32, DbIterator>,
    snaps: HashMap<u32, Snapshot>,
    db: Option<Db>,
    _dir: Option<tempfile::TempDir>,
    /// Flushes and compactions the engine ran (from `strata.stats` before each close).
    pub flushes: u64,
    pub compactions: u64,
}

fn step(it: &mut DbIterator, step: &Step) -> Outcome {
    match step {
        Step::First => it.seek_to_first(),
        Step::Last => it.seek_to_last(),
        Step::Seek(k) => it.seek(k),
        Step::Next => it.next(),
        Step::Prev => it.prev(),
    }
    if it.valid() {
        Outcome::At(Some((it.key().to_vec(), Val::of(it.value()))))
    } else if let Err(e) = it.status() {
        Outcome::failed(&e)
    } else {
        Outcome::At(None)
    }
}

impl Runner {
    pub fn new(set: OptionSet, env: StopEnv, dir: Option<tempfile::TempDir>) -> Runner {
        let path = dir
            .as_ref()
            .map_or_else(|| PathBuf::from("/meta/db"), |d| d.path().join("db"));
        Runner {
            set,
            env: Arc::new(env),
            path,
            iters: HashMap::new(),
            snaps: HashMap::new(),
            db: None,
            _dir: dir,
            flushes: 0,
            compactions: 0,
        }
    }

    fn open(&mut self) -> Outcome {
        let options = Options {
            create_if_missing: true,
            env: Arc::clone(&self.env),
            ..self.set.options.clone()
        };
        match Db::open(&self.path, options) {
            Ok(db) => {
                self.db = Some(db);
                Outcome::Done
            }
            Err(e) => Outcome::failed(&e),
        }
    }

    /// Ends the snapshots and cursors and hands over the database, its counts taken.
    pub fn end(&mut self) -> Option<Db> {
        self.iters.clear();
        self.snaps.clear();
        let db = self.db.take()?;
        self.count_engine(&db);
        Some(db)
    }

    /// Adds the engine's own counts from its `strata.stats` property.
    fn count_engine(&mut self, db: &Db) {
        let stats = db.property("strata.stats").unwrap_or_default();
        for line in stats.lines() {
            let count = |prefix: &str| {
                line.strip_prefix(prefix)
                    .and_then(|n| n.trim().parse::<u64>().ok())
            };
            if let Some(n) = count("flushes:") {
                self.flushes += n;
            }
            if let Some(n) = count("compactions:") {
                self.compactions += n;
            }
        }
    }

    /// Read options at snapshot `snap`; `None` if there is no such snapshot.
    fn read_options(&self, snap: Option<u32>) -> Option<ReadOptions> {
        let snapshot = match snap {
            Some(s) => Some(self.snaps.get(&s)?.clone()),
            None => None,
        };
        Some(ReadOptions {
            verify_checksums: self.set.verify_checksums,
            fill_cache: self.set.fill_cache,
            snapshot,
        })
    }

    /// Applies `op`, returning what the engine showed.
    pub fn apply(&mut self, op: &Op) -> Outcome {
        match op {
            Op::Close => self
                .end()
                .map_or(Outcome::Done, |db| Outcome::of(db.close())),
            Op::Reopen => {
                drop(self.end());
                self.open()
            }
            Op::Step { id, step: s } => self
                .iters
                .get_mut(id)
                .map_or(Outcome::Missing, |it| step(it, s)),
            Op::DropIter(id) => self
                .iters
                .remove(id)
                .map_or(Outcome::Missing, |_| Outcome::Done),
            Op::Release(s) => self
                .snaps
                .remove(s)
                .map_or(Outcome::Missing, |_| Outcome::Done),
            _ => {
                if self.db.is_none() {
                    let opened = self.open();
                    if opened != Outcome::Done {
                        return opened;
                    }
                }
                self.apply_open(op)
            }
        }
    }

    /// `op` on the open database.
    fn apply_open(&mut self, op: &Op) -> Outcome {
        let Some(db) = &self.db else {
            return Outcome::Missing;
        };
        let wo = |sync: bool| WriteOptions { sync };
        match op {
            Op::Put { key, value, sync } => Outcome::of(db.put_opt(key, value.bytes(), &wo(*sync))),
            Op::Delete { key, sync } => Outcome::of(db.delete_opt(key, &wo(*sync))),
            Op::Batch { writes, sync } => {
                let mut b = WriteBatch::new();
                writes.iter().for_each(|w| add_write(&mut b, w));
                Outcome::of(db.write_opt(b, &wo(*sync)))
            }
            Op::Get { key, snap } => match self.read_options(*snap) {
                None => Outcome::Missing,
                Some(ro) => match db.get_opt(key, &ro) {
                    Ok(v) => Outcome::Value(v.as_deref().map(Val::of)),
                    Err(e) => Outcome::failed(&e),
                },
            },
            Op::Snapshot(s) => {
                let snap = db.snapshot();
                self.snaps.insert(*s, snap);
                Outcome::Done
            }
            Op::NewIter { id, snap } => match self.read_options(*snap) {
                None => Outcome::Missing,
                Some(ro) => {
                    let it = db.raw_iterator_opt(&ro);
                    self.iters.insert(*id, it);
                    Outcome::Done
                }
            },
            Op::Scan(scan) => self.scan(db, scan),
            Op::Flush => Outcome::of(db.flush()),
            Op::FlushWal { sync } => Outcome::of(db.flush_wal(*sync)),
            Op::Compact { begin, end } => {
                Outcome::of(db.compact_range(begin.as_deref(), end.as_deref()))
            }
            Op::Txn { steps, sync } => {
                let mut txn = db.transaction();
                let mut outs = Vec::new();
                for step in steps {
                    match step {
                        TxnStep::Get(k) => outs.push(match txn.get(k) {
                            Ok(v) => Outcome::Value(v.as_deref().map(Val::of)),
                            Err(e) => Outcome::failed(&e),
                        }),
                        TxnStep::Scan(scan) => {
                            let limit = scan.limit.map_or(usize::MAX, |n| n as usize);
                            let range = (scan.lower.clone(), scan.upper.clone());
                            let entries = if scan.reverse {
                                txn.range_rev(range)
                            } else {
                                txn.range(range)
                            };
                            outs.push(entries_outcome(entries.take(limit)));
                        }
                        TxnStep::Write(Write::Put(k, v)) => txn.put(k, v.bytes()),
                        TxnStep::Write(Write::Delete(k)) => txn.delete(k),
                        TxnStep::Write(Write::DeleteRange(a, b)) => txn.delete_range(a, b),
                        TxnStep::Meanwhile(w) => {
                            let mut b = WriteBatch::new();
                            add_write(&mut b, w);
                            outs.push(Outcome::of(db.write(b)));
                        }
                        TxnStep::MeanwhileFlush => outs.push(Outcome::of(db.flush())),
                        TxnStep::MeanwhileCompact => {
                            outs.push(Outcome::of(db.compact_range(None, None)));
                        }
                    }
                }
                outs.push(Outcome::of(txn.commit_opt(&wo(*sync))));
                Outcome::Steps(outs)
            }
            Op::Close | Op::Reopen | Op::Step { .. } | Op::DropIter(_) | Op::Release(_) => {
                unreachable!("handled without the database: {op}")
            }
        }
    }

    fn scan(&self, db: &Db, scan: &Scan) -> Outcome {
        let Some(ro) = self.read_options(scan.snap) else {
            return Outcome::Missing;
        };
        let limit = scan.limit.map_or(usize::MAX, |n| n as usize);
        let range = (scan.lower.clone(), scan.upper.clone());
        entries_outcome(db.range_opt(range, scan.reverse, &ro).take(limit))
    }
}

/// Adds `w` to `b`.
fn add_write(b: &mut WriteBatch, w: &Write) {
    match w {
        Write::Put(k, v) => b.put(k, v.bytes()),
        Write::Delete(k) => b.delete(k),
        Write::DeleteRange(a, c) => b.delete_range(a, c),
    }
}

/// A scan's entries, or the error that ended it.
fn entries_outcome(scan: impl Iterator<Item = strata::Result<(Vec<u8>, Vec<u8>)>>) -> Outcome {
    let mut entries = Vec::new();
    for r in scan {
        match r {
            Ok((k, v)) => entries.push((k, Val::of(&v))),
            Err(e) => {
                let mut o = Outcome::failed(&e);
                if let Outcome::Failed { message, .. } = &mut o {
                    message.push_str(&format!(" (after {} entries)", entries.len()));
                }
                return o;
            }
        }
    }
    Outcome::Entries(entries)
}
