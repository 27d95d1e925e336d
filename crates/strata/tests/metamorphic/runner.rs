//! Runs a log on a database under one option set, in step with the model, and stops at
//! the first operation whose outcome differs. The run has its own thread; the caller
//! watches its progress and calls it a hang when one operation takes longer than the
//! hang timeout, then stops the run through its filesystem (`stop.rs`). A panic in the
//! engine is an outcome like any other, and a mismatch.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use strata::env::{DiskEnv, Env, MemEnv};
use strata::{Db, DbIterator, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};

use crate::model::Model;
use crate::op::{Op, Scan, Step, Write};
use crate::outcome::{Outcome, Val, difference};
use crate::sets::OptionSet;
use crate::stop::StopEnv;

/// The first operation whose outcome differs from the model's, in words.
#[derive(Debug, Clone)]
pub struct Mismatch {
    pub index: usize,
    pub detail: String,
}

/// What was seen, for the summary line: how much the run actually checked.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    pub found: u64,
    pub not_found: u64,
    pub positions: u64,
    pub entries: u64,
    pub missing: u64,
    /// Flushes and compactions the engine ran (from `strata.stats` before each close).
    pub flushes: u64,
    pub compactions: u64,
}

impl Tally {
    fn count(&mut self, o: &Outcome) {
        match o {
            Outcome::Value(Some(_)) => self.found += 1,
            Outcome::Value(None) => self.not_found += 1,
            Outcome::At(Some(_)) => self.positions += 1,
            Outcome::Entries(es) => self.entries += es.len() as u64,
            Outcome::Missing => self.missing += 1,
            _ => {}
        }
    }

    /// Adds the engine's own counts from its `strata.stats` property.
    fn engine(&mut self, db: &Db) {
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
}

#[derive(Debug, Clone)]
pub struct Verdict {
    /// Operations run (up to and including a mismatch).
    pub ran: usize,
    pub mismatch: Option<Mismatch>,
    pub tally: Tally,
    /// A hang that stopping the filesystem did not end: its thread is still running.
    pub stuck: bool,
}

/// A database under one option set, with the snapshots and cursors the log made.
struct Runner {
    set: OptionSet,
    env: Arc<dyn Env>,
    path: PathBuf,
    // Field order is drop order: cursors and snapshots end before the database.
    iters: HashMap<u32, DbIterator>,
    snaps: HashMap<u32, Snapshot>,
    db: Option<Db>,
    _dir: Option<tempfile::TempDir>,
    engine: Tally,
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
    fn new(set: OptionSet, env: StopEnv, dir: Option<tempfile::TempDir>) -> Runner {
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
            engine: Tally::default(),
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
    fn end(&mut self) -> Option<Db> {
        self.iters.clear();
        self.snaps.clear();
        let db = self.db.take()?;
        self.engine.engine(&db);
        Some(db)
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

    fn apply(&mut self, op: &Op) -> Outcome {
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
                for w in writes {
                    match w {
                        Write::Put(k, v) => b.put(k, v.bytes()),
                        Write::Delete(k) => b.delete(k),
                    }
                }
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
            Op::Compact { begin, end } => {
                Outcome::of(db.compact_range(begin.as_deref(), end.as_deref()))
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
        let mut entries = Vec::new();
        for r in db.range_opt(range, scan.reverse, &ro).take(limit) {
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
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string())
}

/// What a run thread shares with its watcher.
struct Watch {
    progress: AtomicUsize,
    stopped: Arc<AtomicBool>,
    trace: bool,
}

/// Runs `ops` on the model and on `runner` side by side, stopping at the first difference.
fn lockstep(ops: &[Op], mut runner: Runner, watch: &Watch) -> Verdict {
    let name = runner.set.name;
    let trace = watch.trace;
    let mut model = Model::default();
    let mut tally = Tally::default();
    for (i, op) in ops.iter().enumerate() {
        if watch.stopped.load(Ordering::Relaxed) {
            break;
        }
        watch.progress.store(i, Ordering::Relaxed);
        if trace {
            println!("{name} {i}: {op}");
        }
        let expected = model.apply(op);
        let got = catch_unwind(AssertUnwindSafe(|| runner.apply(op)))
            .unwrap_or_else(|p| Outcome::Panicked(panic_message(p)));
        tally.count(&expected);
        if trace {
            println!("    => {got}");
        }
        if expected != got {
            let mismatch = Some(Mismatch {
                index: i,
                detail: difference(&expected, &got),
            });
            // The engine may be in any state after a panic: do not wait for its drop.
            if matches!(got, Outcome::Panicked(_)) {
                std::mem::forget(runner);
            }
            return Verdict {
                ran: i + 1,
                mismatch,
                tally,
                stuck: false,
            };
        }
    }
    watch.progress.store(ops.len(), Ordering::Relaxed);
    drop(runner.end());
    tally.flushes = runner.engine.flushes;
    tally.compactions = runner.engine.compactions;
    Verdict {
        ran: ops.len(),
        mismatch: None,
        tally,
        stuck: false,
    }
}

/// Runs `ops` under `set` against the model on a thread of its own; a hang is an
/// operation that makes no progress for `hang`. `trace` prints every operation and what
/// the engine showed.
pub fn check(ops: &Arc<Vec<Op>>, set: &OptionSet, hang: Duration, trace: bool) -> Verdict {
    let (inner, dir): (Arc<dyn Env>, _) = if set.on_disk {
        let dir = tempfile::tempdir().expect("a temporary directory");
        (Arc::new(DiskEnv::new()), Some(dir))
    } else {
        (Arc::new(MemEnv::new()), None)
    };
    let env = StopEnv::new(inner);
    let watch = Arc::new(Watch {
        progress: AtomicUsize::new(0),
        stopped: env.switch(),
        trace,
    });
    let (tx, rx) = mpsc::channel();
    let (ops2, watch2, set2) = (Arc::clone(ops), Arc::clone(&watch), set.clone());
    std::thread::Builder::new()
        .name(format!("meta-{}", set.name))
        .spawn(move || {
            // Cursors are not `Send`: the runner is made on the thread that uses it.
            let runner = Runner::new(set2, env, dir);
            let _ = tx.send(lockstep(&ops2, runner, &watch2));
        })
        .expect("spawn a runner thread");
    let mut last = (0, Instant::now());
    loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(v) => return v,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let at = watch.progress.load(Ordering::Relaxed);
                if at != last.0 {
                    last = (at, Instant::now());
                } else if last.1.elapsed() >= hang {
                    return stop(&watch, &rx, at, hang);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let at = watch.progress.load(Ordering::Relaxed);
                return stopped(at, "the runner thread died".to_string(), false);
            }
        }
    }
}

/// Stops a run that hangs at op `at` and waits a while for its thread to end.
fn stop(watch: &Watch, rx: &mpsc::Receiver<Verdict>, at: usize, hang: Duration) -> Verdict {
    watch.stopped.store(true, Ordering::Relaxed);
    let ended = rx.recv_timeout(Duration::from_secs(30)).is_ok();
    let how = if ended {
        "stopped through its filesystem"
    } else {
        "could not be stopped: its thread is left running"
    };
    let detail = format!("hung: no progress in {} s ({how})", hang.as_secs());
    stopped(at, detail, !ended)
}

fn stopped(at: usize, detail: String, stuck: bool) -> Verdict {
    Verdict {
        ran: at + 1,
        mismatch: Some(Mismatch { index: at, detail }),
        tally: Tally::default(),
        stuck,
    }
}
