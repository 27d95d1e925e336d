//! `Db::checkpoint`: taken while four threads write, each checkpoint is exactly the
//! database at the sequence number it reports; a power cut at any step leaves the source
//! as it was and the destination complete or absent. Each with values inline and with
//! value separation (most values in blob files, some still in the memtables' WAL blob
//! files when the checkpoint is taken).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use strata::env::Env;
use strata::testing::{CrashEnv, Damage};
use strata::{Db, Options};

const THREADS: usize = 4;

fn key(t: usize, i: usize) -> String {
    format!("t{t}-{i:07}")
}

/// Values of 8 bytes and more go to blob files ("value-10" on; "value-9" stays inline).
const BLOB_THRESHOLD: usize = 8;

#[test]
fn checkpoints_taken_while_four_threads_write_are_each_one_moment() {
    checkpoints_while_writing(0);
}

#[test]
fn checkpoints_with_value_separation_taken_while_four_threads_write_are_each_one_moment() {
    checkpoints_while_writing(BLOB_THRESHOLD);
}

fn checkpoints_while_writing(blob_threshold: usize) {
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        create_if_missing: true,
        write_buffer_size: 64 << 10, // flushes and compactions during the run
        blob_threshold,
        ..Options::default()
    };
    let db = Arc::new(Db::open(dir.path().join("db"), options).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    // One batch, one sequence number per entry: a key and the counter.
                    let mut b = strata::WriteBatch::new();
                    b.put(key(t, i), format!("value-{i}"));
                    b.put(format!("counter{t}"), i.to_string());
                    db.write(b).unwrap();
                    i += 1;
                }
                i
            })
        })
        .collect();
    let mut taken = Vec::new();
    for c in 0..6 {
        std::thread::sleep(std::time::Duration::from_millis(40));
        let dest = dir.path().join(format!("checkpoint-{c}"));
        let seq = db.checkpoint(&dest).unwrap();
        taken.push((dest, seq));
    }
    stop.store(true, Ordering::Relaxed);
    let written: usize = writers.into_iter().map(|w| w.join().unwrap()).sum();
    assert!(written > 1000, "the writers ran ({written} writes)");
    for (dest, seq) in &taken {
        // Each batch is two entries, two sequence numbers: count writes as entries.
        check_consistent_batches(dest, *seq);
        if blob_threshold > 0 {
            let blobs = std::fs::read_dir(dest)
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .path()
                        .extension()
                        .is_some_and(|x| x == "blob")
                })
                .count();
            assert!(blobs > 0 || *seq < 100, "{}: no blob file", dest.display());
        }
    }
    assert!(taken.windows(2).all(|w| w[0].1 <= w[1].1));
    // A second checkpoint into an existing directory is refused.
    assert!(db.checkpoint(&taken[0].0).is_err());
}

/// As [`check_consistent`], for writers that put a key and their counter in one batch.
fn check_consistent_batches(dest: &Path, seq: u64) {
    let db = Db::open(dest, Options::default()).unwrap();
    let all: BTreeMap<Vec<u8>, Vec<u8>> = db.range::<&[u8]>(..).map(|kv| kv.unwrap()).collect();
    let mut entries = 0u64;
    for t in 0..THREADS {
        let n = (0..)
            .take_while(|&i| all.contains_key(key(t, i).as_bytes()))
            .count();
        let keys = all
            .keys()
            .filter(|k| k.starts_with(format!("t{t}-").as_bytes()))
            .count();
        assert_eq!(
            keys, n,
            "thread {t}: its keys are not a prefix of its writes"
        );
        let counter = all.get(format!("counter{t}").as_bytes());
        match n {
            0 => assert!(counter.is_none()),
            n => assert_eq!(
                counter.unwrap(),
                (n - 1).to_string().as_bytes(),
                "thread {t}"
            ),
        }
        entries += 2 * n as u64;
    }
    assert_eq!(
        entries, seq,
        "every entry up to the checkpoint's sequence number, no other"
    );
    db.verify().unwrap();
}

/// A source database in a crash-simulating filesystem: 3,000 keys written synced, some
/// in tables, some only in the log.
fn crash_source(blob_threshold: usize) -> (CrashEnv, BTreeMap<Vec<u8>, Vec<u8>>) {
    let env = CrashEnv::new();
    let options = Options {
        create_if_missing: true,
        write_buffer_size: 32 << 10,
        blob_threshold,
        env: Arc::new(env.clone()),
        ..Options::default()
    };
    let db = Db::open("/db", options).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..3000 {
        // Every other value long enough to be separated, when separation is on.
        let (k, v) = (
            format!("k{i:05}"),
            format!("v{i}{}", "-".repeat(i % 2 * 12)),
        );
        db.put_opt(&k, &v, &strata::WriteOptions { sync: true })
            .unwrap();
        model.insert(k.into_bytes(), v.into_bytes());
    }
    drop(db);
    (env, model)
}

#[test]
fn a_power_cut_during_a_checkpoint_leaves_it_complete_or_refused() {
    power_cut_during_a_checkpoint(0);
}

#[test]
fn a_power_cut_during_a_checkpoint_with_value_separation_leaves_it_complete_or_refused() {
    power_cut_during_a_checkpoint(BLOB_THRESHOLD);
}

fn power_cut_during_a_checkpoint(blob_threshold: usize) {
    let (env, model) = crash_source(blob_threshold);
    let open = |env: &CrashEnv, path: &str| {
        Db::open(
            path,
            Options {
                env: Arc::new(env.clone()),
                ..Options::default()
            },
        )
    };
    let contents = |db: &Db| -> BTreeMap<Vec<u8>, Vec<u8>> {
        db.range::<&[u8]>(..).map(|kv| kv.unwrap()).collect()
    };
    // How many mutating calls a checkpoint makes.
    let calls = {
        let run = env.crash(Damage::ProcessCrash, 0);
        let db = open(&run, "/db").unwrap();
        run.crash_after(u64::MAX, Damage::DropAll, 0);
        db.checkpoint("/cp").unwrap();
        run.calls()
    };
    assert!(calls > 5, "{calls} calls");
    let (mut complete, mut absent) = (0, 0);
    for k in 1..=calls {
        for damage in [Damage::DropAll, Damage::Garbage] {
            let run = env.crash(Damage::ProcessCrash, 0);
            let db = open(&run, "/db").unwrap();
            run.crash_after(k, damage, k);
            let _ = db.checkpoint("/cp");
            drop(db);
            let (after, _) = run.take_crashed().expect("the armed crash happened");
            let source = open(&after, "/db").unwrap();
            assert_eq!(contents(&source), model, "call {k}: the source changed");
            drop(source);
            match open(&after, "/cp") {
                Ok(cp) => {
                    assert_eq!(contents(&cp), model, "call {k} ({damage:?}): incomplete");
                    complete += 1;
                }
                Err(e) => {
                    assert!(!after.exists(Path::new("/cp/CURRENT")), "call {k}: {e}");
                    absent += 1;
                }
            }
        }
    }
    assert!(
        complete > 0 && absent > 0,
        "{complete} complete, {absent} absent"
    );
}
