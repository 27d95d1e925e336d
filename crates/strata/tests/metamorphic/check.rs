//! Runs a log on a database under one option set ([`crate::runner::Runner`]) in step
//! with the model, and stops at the first operation whose outcome differs. The run has its
//! own thread; the caller watches its progress and calls it a hang when one operation
//! takes longer than the hang timeout, then stops the run through its filesystem
//! (`stop.rs`). A panic in the engine is an outcome like any other, and a mismatch.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use strata::env::{DiskEnv, Env, MemEnv};

use crate::model::Model;
use crate::op::Op;
use crate::outcome::{Outcome, difference};
use crate::runner::Runner;
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
    /// Flushes and compactions the engine ran (from `strata.stats` before each close).
    pub flushes: u64,
    pub compactions: u64,
    /// Transactions run, and how many of them failed with a conflict.
    pub transactions: u64,
    pub conflicts: u64,
}

impl Tally {
    fn count(&mut self, o: &Outcome) {
        match o {
            Outcome::Value(Some(_)) => self.found += 1,
            Outcome::Value(None) => self.not_found += 1,
            Outcome::At(Some(_)) => self.positions += 1,
            Outcome::Entries(es) => self.entries += es.len() as u64,
            Outcome::Steps(steps) => {
                self.transactions += 1;
                if matches!(steps.last(), Some(Outcome::Failed { kind, .. }) if kind == "Conflict")
                {
                    self.conflicts += 1;
                }
                steps.iter().for_each(|o| self.count(o));
            }
            _ => {}
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
    tally.flushes = runner.flushes;
    tally.compactions = runner.compactions;
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
