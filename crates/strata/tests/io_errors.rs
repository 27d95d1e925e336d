//! I/O errors at every call (`docs/durability.md` C5, C6, C7): a standard workload runs
//! with EIO or ENOSPC injected at its k-th mutating filesystem call, once or sticky, for
//! every k. Rules: the operation that meets the error returns `Err` when the error hit its
//! own WAL write; a synced write is never `Ok` if its append or fsync failed; once a write
//! fails no later write succeeds (the error is latched; a paused flush or compaction, C7,
//! is not retried by itself here, so it holds writes back until the reopen just as a final
//! error does; `disk_full.rs` tests the retries); no failed fsync is retried and no
//! file is written after one of its writes or fsyncs failed; reads give the right value or
//! an error; reopening with the fault gone recovers every acknowledged write and nothing
//! that is not a prefix of the writes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use strata::env::Env;
use strata::testing::{Call, CrashEnv, Damage, Fault, FaultEnv};
use strata::{Db, Options, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone)]
enum Op {
    Put(u32, bool),
    Delete(u32, bool),
    Batch(Vec<u32>, bool),
    Compact,
    Reopen,
}

fn key(n: u32) -> Vec<u8> {
    format!("key{n:05}").into_bytes()
}

fn value(n: u32) -> Vec<u8> {
    let mut v = format!("value{n}-").into_bytes();
    v.resize(90, b'a' + (n % 26) as u8);
    v
}

fn workload() -> Vec<Op> {
    use Op::*;
    let mut ops = Vec::new();
    for i in 0..60 {
        ops.push(Put(i, i % 5 == 0));
    }
    ops.push(Batch(vec![100, 101, 3, 6], true));
    ops.push(Compact);
    for i in 0..40 {
        ops.push(if i % 4 == 0 {
            Delete(i, i % 8 == 0)
        } else {
            Put(200 + i, false)
        });
    }
    ops.push(Reopen);
    for i in 0..30 {
        ops.push(Put(300 + i, i % 3 == 0));
    }
    ops.push(Compact);
    ops
}

fn apply(op: &Op, m: &mut Model) {
    match op {
        Op::Put(k, _) => {
            m.insert(key(*k), value(*k));
        }
        Op::Delete(k, _) => {
            m.remove(&key(*k));
        }
        Op::Batch(ks, _) => {
            for k in ks {
                if k % 3 == 0 {
                    m.remove(&key(*k));
                } else {
                    m.insert(key(*k), value(*k));
                }
            }
        }
        Op::Compact | Op::Reopen => {}
    }
}

thread_local! {
    /// Value separation for this thread's runs (0: off; 64: the workload's 90-byte values
    /// go to blob files). Every test runs with it off and on.
    static BLOB_THRESHOLD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Blob values stored compressed (the single-fault sweeps; every other blob run of
    /// the multi-fault runs stores them raw).
    static BLOB_COMPRESS: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// `retry`: `Options::background_retry_interval` (zero: a paused step waits for a reopen).
fn options(env: Arc<dyn Env>, retry: Duration) -> Options {
    Options {
        blob_threshold: BLOB_THRESHOLD.get(),
        // Blob values (compressible here) stored Snappy-compressed, or raw.
        blob_compression: BLOB_COMPRESS.get(),
        // With value separation on, two full memtables may wait for their flush.
        max_write_buffer_number: if BLOB_THRESHOLD.get() > 0 { 3 } else { 2 },
        create_if_missing: true,
        write_buffer_size: 4 << 10,
        max_file_size: 4 << 10,
        block_size: 256,
        background_retry_interval: retry,
        env,
        ..Options::default()
    }
}

struct Outcome {
    /// Writes executed, in order: (index into the workload, acknowledged). A write that
    /// failed first in its session may or may not be in the recovered state; one that
    /// failed after it (latched) is not.
    writes: Vec<(usize, Outcome1)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome1 {
    Acked,
    Maybe,
    Failed,
}

/// A random fault: any call kind, soon, once or sticky, EIO or ENOSPC.
fn random_fault(rng: &mut common::Rng) -> Fault {
    let calls = [
        Call::Append,
        Call::Sync,
        Call::Create,
        Call::Rename,
        Call::SyncDir,
        Call::Remove,
        Call::Any,
    ];
    let paths = ["", ".log", ".ldb", "MANIFEST", "CURRENT", ".dbtmp", ".blob"];
    Fault {
        call: calls[rng.below(calls.len() as u64) as usize],
        path_contains: paths[rng.below(paths.len() as u64) as usize].to_string(),
        skip: rng.below(30),
        sticky: rng.below(4) == 0,
        kind: if rng.below(2) == 0 {
            ErrorKind::Other
        } else {
            ErrorKind::StorageFull
        },
    }
}

fn run(fenv: &FaultEnv, ops: &[Op], ctx: &str) -> Outcome {
    run_with(fenv, ops, ctx, None, Duration::ZERO)
}

/// Runs the workload; with `rearm`, arms a new random fault before some operations, so a
/// run meets several faults. With a non-zero `retry`, paused background work runs again
/// by itself, so a write that failed on a paused step may be followed by writes that
/// succeed: only a final error (the database says `stopped`) is latched, and a write that
/// failed without its own WAL append or fsync failing was never logged.
fn run_with(
    fenv: &FaultEnv,
    ops: &[Op],
    ctx: &str,
    mut rearm: Option<&mut common::Rng>,
    retry: Duration,
) -> Outcome {
    let dir = Path::new("/db");
    let env: Arc<dyn Env> = Arc::new(fenv.clone());
    let options = |env: &Arc<dyn Env>| options(Arc::clone(env), retry);
    let mut db = Db::open(dir, options(&env)).ok();
    let mut model = Model::new();
    let mut out = Outcome { writes: Vec::new() };
    // The first failed write of the current session.
    let mut first_failed: Option<usize> = None;
    for (i, op) in ops.iter().enumerate() {
        if let Some(rng) = rearm.as_deref_mut()
            && rng.below(12) == 0
        {
            fenv.arm(random_fault(rng));
        }
        let Some(d) = db.as_ref() else {
            // The open failed: later writes cannot be acknowledged.
            if matches!(op, Op::Reopen) {
                db = Db::open(dir, options(&env)).ok();
            }
            continue;
        };
        let wo = |sync| WriteOptions { sync };
        let failures_before = fenv.calls().len();
        let result = match op {
            Op::Put(k, s) => d.put_opt(key(*k), value(*k), &wo(*s)),
            Op::Delete(k, s) => d.delete_opt(key(*k), &wo(*s)),
            Op::Batch(ks, s) => {
                let mut b = WriteBatch::new();
                for k in ks {
                    if k % 3 == 0 {
                        b.delete(key(*k));
                    } else {
                        b.put(key(*k), value(*k));
                    }
                }
                d.write_opt(b, &wo(*s))
            }
            Op::Compact => {
                let _ = d.compact_range(None, None);
                continue;
            }
            Op::Reopen => {
                drop(db.take());
                db = Db::open(dir, options(&env)).ok();
                first_failed = None;
                continue;
            }
        };
        // Did this write's own WAL append or fsync fail?
        let own_wal_failed = fenv.calls()[failures_before..]
            .iter()
            .any(|(c, p, failed)| {
                *failed
                    && matches!(c, Call::Append | Call::Sync)
                    && p.to_string_lossy().ends_with(".log")
            });
        match result {
            Ok(()) => {
                assert!(
                    !own_wal_failed,
                    "{ctx}: op {i} {op:?} returned Ok although its WAL write or fsync failed"
                );
                assert!(
                    first_failed.is_none(),
                    "{ctx}: op {i} {op:?} succeeded after op {first_failed:?} failed: the error \
                     must be latched"
                );
                out.writes.push((i, Outcome1::Acked));
                apply(op, &mut model);
            }
            Err(_) if !retry.is_zero() => {
                let stopped = d
                    .property("strata.background-error")
                    .is_some_and(|s| s.starts_with("stopped"));
                if own_wal_failed {
                    // Its record may have reached the log; the error is final.
                    assert!(stopped, "{ctx}: op {i}: a WAL failure must be final");
                    out.writes.push((i, Outcome1::Maybe));
                } else {
                    out.writes.push((i, Outcome1::Failed));
                }
                if stopped && first_failed.is_none() {
                    first_failed = Some(i);
                }
            }
            Err(_) => {
                if first_failed.is_none() {
                    first_failed = Some(i);
                    out.writes.push((i, Outcome1::Maybe));
                } else {
                    out.writes.push((i, Outcome1::Failed));
                }
            }
        }
        // Reads: every acknowledged key reads right, or the read fails. (After a reopen
        // that followed a failed write, that write may have come back from the log, so
        // the model no longer knows.)
        let uncertain = out.writes.iter().any(|w| w.1 == Outcome1::Maybe)
            && ops[..i].iter().enumerate().any(|(j, o)| {
                matches!(o, Op::Reopen)
                    && out.writes.iter().any(|w| w.1 == Outcome1::Maybe && w.0 < j)
            });
        if i % 10 == 0 && !uncertain {
            for (k, v) in model.iter().take(20) {
                if let Ok(got) = d.get(k) {
                    assert_eq!(
                        got.as_deref(),
                        Some(v.as_slice()),
                        "{ctx}: wrong value after op {i}"
                    );
                }
            }
        }
    }
    drop(db);
    out
}

/// After a write or fsync of a file failed, that file is never written or synced again.
fn audit(calls: &[(Call, PathBuf, bool)], ctx: &str) {
    let mut poisoned: Vec<&PathBuf> = Vec::new();
    for (call, path, failed) in calls {
        if *call == Call::Create && !*failed {
            // A new file under the same name (a database created again).
            poisoned.retain(|p| *p != path);
        }
        if matches!(call, Call::Append | Call::Sync) {
            if poisoned.contains(&path) {
                // The calls on this file and every failed call, in order.
                let trace: Vec<String> = calls
                    .iter()
                    .filter(|c| &c.1 == path || c.2)
                    .map(|c| format!("{:?} {:?} {}", c.0, c.1, c.2))
                    .collect();
                panic!(
                    "{ctx}: {call:?} on {path:?} after a write or fsync of it failed\n{}",
                    trace.join("\n")
                );
            }
            if *failed {
                poisoned.push(path);
            }
        }
    }
}

fn check_recovery(base: &CrashEnv, ops: &[Op], out: &Outcome, ctx: &str) {
    let env: Arc<dyn Env> = Arc::new(base.clone());
    let db = Db::open(Path::new("/db"), options(env, Duration::ZERO))
        .unwrap_or_else(|e| panic!("{ctx}: reopening with the fault gone failed: {e}"));
    let got: Model = db.range::<&[u8]>(..).map(|r| r.unwrap()).collect();
    drop(db);
    // Every acknowledged write is in, in order; the first failed write of a session may
    // or may not be (its record may have reached the log before the fsync failed).
    let maybes: Vec<usize> = (0..out.writes.len())
        .filter(|&j| out.writes[j].1 == Outcome1::Maybe)
        .collect();
    for combo in 0u32..(1 << maybes.len()) {
        let mut m = Model::new();
        for (j, (i, o)) in out.writes.iter().enumerate() {
            let take = match o {
                Outcome1::Acked => true,
                Outcome1::Failed => false,
                Outcome1::Maybe => {
                    combo & (1 << maybes.iter().position(|&x| x == j).unwrap_or(0)) != 0
                }
            };
            if take {
                apply(&ops[*i], &mut m);
            }
        }
        if m == got {
            return;
        }
    }
    panic!(
        "{ctx}: recovered {} keys: not every acknowledged write, or more than the writes issued",
        got.len()
    );
}

#[test]
fn errors_at_every_call_are_reported_latched_and_recovered() {
    errors_at_every_call(0);
}

/// The same with values separated into blob files (a test of its own, so the two run
/// side by side).
#[test]
fn errors_at_every_call_with_blobs_are_reported_latched_and_recovered() {
    errors_at_every_call(64);
}

fn errors_at_every_call(threshold: usize) {
    BLOB_THRESHOLD.set(threshold);
    let ops = workload();
    // How many mutating calls the workload makes without faults.
    let probe = FaultEnv::new(Arc::new(CrashEnv::new()));
    run(&probe, &ops, "probe");
    let n = probe.calls().len() as u64;
    assert!(n > 50, "{n}");
    let mut runs = 0;
    for k in 0..n + 5 {
        for sticky in [false, true] {
            for kind in [ErrorKind::Other, ErrorKind::StorageFull] {
                let base = CrashEnv::new();
                let fenv = FaultEnv::new(Arc::new(base.clone()));
                fenv.arm(Fault {
                    call: Call::Any,
                    path_contains: String::new(),
                    skip: k,
                    sticky,
                    kind,
                });
                let ctx = format!(
                    "fault at call {} ({kind:?}, sticky {sticky}, blob threshold {threshold})",
                    k + 1
                );
                let out = run(&fenv, &ops, &ctx);
                audit(&fenv.calls(), &ctx);
                // A process crash keeps whatever reached the OS.
                check_recovery(&base.crash(Damage::ProcessCrash, 0), &ops, &out, &ctx);
                runs += 1;
            }
        }
    }
    println!("{runs} runs, faults at each of {n} calls");
}

/// Several random faults per run: any call kind and path, once or sticky, EIO or ENOSPC,
/// armed at random moments. `STRATA_MULTIFAULT_RUNS` (default 300) and
/// `STRATA_MULTIFAULT_SEED` size and seed it.
#[test]
fn random_multi_fault_runs() {
    let runs = common::env_u64("STRATA_MULTIFAULT_RUNS", 300);
    let seed = common::env_u64("STRATA_MULTIFAULT_SEED", 41);
    println!("multi-fault runs: {runs}, seed {seed}");
    let ops = workload();
    let mut rng = common::Rng::new(seed);
    let mut failures = 0;
    for run_no in 0..runs {
        BLOB_THRESHOLD.set(if run_no % 2 == 1 { 64 } else { 0 });
        BLOB_COMPRESS.set(run_no % 4 == 1);
        let ctx = format!("multi-fault run {run_no} (seed {seed})");
        failures += multi_fault_run(&mut rng, &ops, &ctx, Duration::ZERO).1;
    }
    println!("{failures} injected failures in {runs} runs");
}

/// One run of `random_multi_fault_runs`: a random first fault, more armed as it goes,
/// then the audit and a recovery check. Returns the outcome and how many calls failed.
fn multi_fault_run(
    rng: &mut common::Rng,
    ops: &[Op],
    ctx: &str,
    retry: Duration,
) -> (Outcome, usize) {
    let base = CrashEnv::new();
    let fenv = FaultEnv::new(Arc::new(base.clone()));
    fenv.arm(random_fault(rng));
    let out = run_with(&fenv, ops, ctx, Some(rng), retry);
    let calls = fenv.calls();
    audit(&calls, ctx);
    check_recovery(&base.crash(Damage::ProcessCrash, 0), ops, &out, ctx);
    (out, calls.iter().filter(|c| c.2).count())
}

/// The same with paused background work retried by itself every millisecond (C7): a
/// retry may meet the next fault, succeed, or race the next write. Writes succeed again
/// after a paused step heals; a final error is still latched; no failed file is touched
/// again; nothing acknowledged is lost. `STRATA_RETRY_RUNS` (default 300) and
/// `STRATA_MULTIFAULT_SEED` size and seed it.
#[test]
fn random_multi_fault_runs_with_retries() {
    let runs = common::env_u64("STRATA_RETRY_RUNS", 300);
    let seed = common::env_u64("STRATA_MULTIFAULT_SEED", 41);
    println!("multi-fault runs with retries: {runs}, seed {seed}");
    let ops = workload();
    let mut rng = common::Rng::new(seed);
    let (mut failures, mut healed) = (0, 0);
    for run_no in 0..runs {
        BLOB_THRESHOLD.set(if run_no % 2 == 1 { 64 } else { 0 });
        BLOB_COMPRESS.set(run_no % 4 == 1);
        let ctx = format!("multi-fault run with retries {run_no} (seed {seed})");
        let (out, failed) = multi_fault_run(&mut rng, &ops, &ctx, Duration::from_millis(1));
        failures += failed;
        // Runs where a write failed and a later one succeeded with no reopen between.
        let w = &out.writes;
        let healed_here = w.iter().any(|&(i, a)| {
            a == Outcome1::Failed
                && w.iter().any(|&(k, b)| {
                    k > i
                        && b == Outcome1::Acked
                        && !ops[i..k].iter().any(|o| matches!(o, Op::Reopen))
                })
        });
        healed += u32::from(healed_here);
    }
    println!(
        "{failures} injected failures in {runs} runs; {healed} runs wrote again after a failed write"
    );
}
