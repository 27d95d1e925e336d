//! db_stress-style concurrency (`docs/durability.md` C4, C5): threads run puts, deletes,
//! batches, gets, forward and reverse range scans, snapshot reads and compactions at once
//! on one database with a tiny memtable, and the database is reopened between phases.
//!
//! The expected-state oracle: thread `t` owns the keys `k % THREADS == t` and keeps their
//! expected values, so every read of an owned key has exactly one right answer, whatever
//! the other threads do; a scan must show every owned key in its range as expected, and
//! only keys some thread wrote; a snapshot read must show the owned keys as they were when
//! the snapshot was taken. Reopens check every thread's keys.
//!
//! `STRATA_STRESS_THREADS` (default 8), `STRATA_STRESS_OPS` (per thread, default 20,000),
//! `STRATA_STRESS_SEED`; `STRATA_STRESS_PHASE_OPS` (per thread and phase, default a quarter
//! of the ops).
//!
//! Long runs in pieces: with `STRATA_STRESS_DIR` set, the database lives in that directory
//! and outlasts the run. After each phase (the database closed) a checkpoint is kept: a
//! copy of the database with the oracle beside it (`checkpoint/`, built as
//! `checkpoint.tmp/` and renamed). A later run with the same threads and seed starts from
//! the checkpoint, so a run killed in the middle of a phase loses only that phase, and
//! checks every key against the saved oracle first. `STRATA_STRESS_SECS` stops a run
//! after the phase that crosses that many seconds; the total `STRATA_STRESS_OPS` per
//! thread is reached over as many runs as it takes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use common::{Rng, env_u64};
use strata::{Db, Options, ReadOptions, WriteBatch};

const KEYS: u64 = 4000;

fn key(n: u64) -> Vec<u8> {
    format!("key{n:06}").into_bytes()
}

fn value(n: u64, version: u64) -> Vec<u8> {
    let mut v = format!("{n}:{version}:").into_bytes();
    v.resize(20 + (version % 90) as usize, b'v');
    v
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// One thread's share of a phase; returns its model.
fn worker(db: &Db, t: u64, threads: u64, ops: u64, seed: u64, mut model: Model) -> Model {
    let mut rng = Rng::new(seed ^ (t + 1).wrapping_mul(0x9e37));
    let own = |rng: &mut Rng| {
        let n = rng.below(KEYS / threads) * threads + t;
        (n, key(n))
    };
    let mut version = seed.wrapping_mul(1000) + t * 1_000_000_000;
    for i in 0..ops {
        version += 1;
        let ctx = |what: &str| format!("thread {t} op {i} (seed {seed}): {what}");
        match rng.below(100) {
            0..=34 => {
                let (n, k) = own(&mut rng);
                let v = value(n, version);
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            35..=44 => {
                let (_, k) = own(&mut rng);
                db.delete(&k).unwrap();
                model.remove(&k);
            }
            45..=54 => {
                let mut b = WriteBatch::new();
                let mut staged = Vec::new();
                for _ in 0..1 + rng.below(10) {
                    let (n, k) = own(&mut rng);
                    if rng.below(4) == 0 {
                        b.delete(&k);
                        staged.push((k, None));
                    } else {
                        let v = value(n, version);
                        b.put(&k, &v);
                        staged.push((k, Some(v)));
                    }
                }
                db.write(b).unwrap();
                for (k, v) in staged {
                    match v {
                        Some(v) => model.insert(k, v),
                        None => model.remove(&k),
                    };
                }
            }
            55..=79 => {
                let (_, k) = own(&mut rng);
                assert_eq!(
                    db.get(&k).unwrap(),
                    model.get(&k).cloned(),
                    "{}",
                    ctx("get")
                );
            }
            80..=89 => {
                let a = rng.below(KEYS);
                let b = (a + 1 + rng.below(200)).min(KEYS);
                let (lo, hi) = (key(a), key(b));
                let reverse = rng.below(2) == 0;
                let items: Vec<(Vec<u8>, Vec<u8>)> = if reverse {
                    db.range_rev(lo.clone()..hi.clone())
                        .map(|r| r.unwrap())
                        .collect()
                } else {
                    db.range(lo.clone()..hi.clone())
                        .map(|r| r.unwrap())
                        .collect()
                };
                let mut keys: Vec<&Vec<u8>> = items.iter().map(|(k, _)| k).collect();
                if reverse {
                    keys.reverse();
                }
                assert!(
                    keys.windows(2).all(|w| w[0] < w[1]),
                    "{}",
                    ctx("scan order")
                );
                let mine: Model = items
                    .iter()
                    .filter(|(k, _)| owner(k, threads) == t)
                    .cloned()
                    .collect();
                let want: Model = model
                    .range::<Vec<u8>, _>((Bound::Included(&lo), Bound::Excluded(&hi)))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                assert_eq!(mine, want, "{}", ctx("scan of owned keys"));
                for (k, v) in &items {
                    let n: u64 = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
                    assert!(
                        v.starts_with(format!("{n}:").as_bytes()),
                        "{}",
                        ctx("foreign value")
                    );
                }
            }
            90..=97 => {
                let snap = db.snapshot();
                let frozen = model.clone();
                // Write some more, then read the owned keys as of the snapshot.
                for _ in 0..5 {
                    let (n, k) = own(&mut rng);
                    version += 1;
                    let v = value(n, version);
                    db.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
                let ro = ReadOptions {
                    snapshot: Some(snap),
                    ..ReadOptions::default()
                };
                for _ in 0..10 {
                    let (_, k) = own(&mut rng);
                    assert_eq!(
                        db.get_opt(&k, &ro).unwrap(),
                        frozen.get(&k).cloned(),
                        "{}",
                        ctx("snapshot read")
                    );
                }
            }
            _ => {
                let a = rng.below(KEYS);
                db.compact_range(Some(&key(a)), Some(&key(a + 100)))
                    .unwrap();
            }
        }
    }
    model
}

fn owner(k: &[u8], threads: u64) -> u64 {
    let n: u64 = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
    n % threads
}

/// What a run carries over to the next one: the settings it ran with, how far it got,
/// and each thread's expected keys.
struct Saved {
    threads: u64,
    seed: u64,
    phases_done: u64,
    ops_done: u64,
    models: Vec<Model>,
}

impl Saved {
    fn fresh(threads: u64, seed: u64) -> Saved {
        Saved {
            threads,
            seed,
            phases_done: 0,
            ops_done: 0,
            models: vec![Model::new(); threads as usize],
        }
    }

    /// The oracle file: a header line `threads seed phases_done ops_done`, then one line
    /// per expected key, `thread<TAB>key<TAB>value` (keys and values are printable ASCII).
    fn load(path: &Path) -> Option<Saved> {
        let text = std::fs::read_to_string(path).ok()?;
        let mut lines = text.lines();
        let head: Vec<u64> = lines
            .next()
            .unwrap()
            .split(' ')
            .map(|f| f.parse().unwrap())
            .collect();
        let mut saved = Saved::fresh(head[0], head[1]);
        saved.phases_done = head[2];
        saved.ops_done = head[3];
        for line in lines {
            let mut f = line.split('\t');
            let t: usize = f.next().unwrap().parse().unwrap();
            let k = f.next().unwrap().as_bytes().to_vec();
            let v = f.next().unwrap().as_bytes().to_vec();
            saved.models[t].insert(k, v);
        }
        Some(saved)
    }

    fn store(&self, path: &Path) {
        let mut text = format!(
            "{} {} {} {}\n",
            self.threads, self.seed, self.phases_done, self.ops_done
        );
        for (t, m) in self.models.iter().enumerate() {
            for (k, v) in m {
                let (k, v) = (
                    std::str::from_utf8(k).unwrap(),
                    std::str::from_utf8(v).unwrap(),
                );
                text.push_str(&format!("{t}\t{k}\t{v}\n"));
            }
        }
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::File::open(&tmp).unwrap().sync_all().unwrap();
        std::fs::rename(&tmp, path).unwrap();
    }
}

/// Copies the closed database in `base/db` and the oracle to `base/checkpoint/`, replacing
/// the one before. The oracle is written last, so a `checkpoint.tmp/` holding one is whole.
fn keep_checkpoint(base: &Path, saved: &Saved) {
    let tmp = base.join("checkpoint.tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    copy_dir(&base.join("db"), &tmp.join("db"));
    saved.store(&tmp.join("oracle.txt"));
    let _ = std::fs::remove_dir_all(base.join("checkpoint"));
    std::fs::rename(&tmp, base.join("checkpoint")).unwrap();
}

/// Puts the last checkpoint's database in `base/db` and returns its oracle; `None` when
/// there is no checkpoint (a fresh start: any database left in `base/db` is removed).
fn restore_checkpoint(base: &Path) -> Option<Saved> {
    let (done, tmp) = (base.join("checkpoint"), base.join("checkpoint.tmp"));
    if !done.exists() && tmp.join("oracle.txt").exists() {
        std::fs::rename(&tmp, &done).unwrap();
    }
    let _ = std::fs::remove_dir_all(&tmp);
    let _ = std::fs::remove_dir_all(base.join("db"));
    let saved = Saved::load(&done.join("oracle.txt"))?;
    copy_dir(&done.join("db"), &base.join("db"));
    Some(saved)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn checkpoints_carry_a_run_over() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    assert!(restore_checkpoint(base).is_none());
    let db_dir = base.join("db");
    std::fs::create_dir_all(&db_dir).unwrap();
    std::fs::write(db_dir.join("f"), b"one").unwrap();
    let mut saved = Saved::fresh(2, 5);
    saved.models[1].insert(key(1), value(1, 1));
    saved.ops_done = 10;
    keep_checkpoint(base, &saved);
    // A run killed in the middle of its next phase: the database moved on.
    std::fs::write(db_dir.join("f"), b"two").unwrap();
    std::fs::write(db_dir.join("g"), b"new").unwrap();
    let back = restore_checkpoint(base).unwrap();
    assert_eq!((back.ops_done, &back.models), (10, &saved.models));
    assert_eq!(std::fs::read(db_dir.join("f")).unwrap(), b"one");
    assert!(!db_dir.join("g").exists());
    // Killed while replacing the checkpoint, after the new one was whole.
    saved.ops_done = 20;
    std::fs::rename(base.join("checkpoint"), base.join("checkpoint.tmp")).unwrap();
    saved.store(&base.join("checkpoint.tmp").join("oracle.txt"));
    assert_eq!(restore_checkpoint(base).unwrap().ops_done, 20);
}

#[test]
fn oracle_file_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("oracle.txt");
    let mut saved = Saved::fresh(3, 99);
    saved.phases_done = 7;
    saved.ops_done = 1234;
    saved.models[0].insert(key(3), value(3, 5));
    saved.models[2].insert(key(2), value(2, 77));
    saved.models[2].insert(key(5), value(5, 1));
    saved.store(&path);
    let back = Saved::load(&path).unwrap();
    assert_eq!(
        (back.threads, back.seed, back.phases_done, back.ops_done),
        (3, 99, 7, 1234)
    );
    assert_eq!(back.models, saved.models);
    assert!(Saved::load(&dir.path().join("missing")).is_none());
}

#[test]
fn threads_against_an_expected_state_oracle() {
    let threads = env_u64("STRATA_STRESS_THREADS", 8);
    let ops = env_u64("STRATA_STRESS_OPS", 20_000);
    let seed = env_u64("STRATA_STRESS_SEED", 17);
    let phase_ops = env_u64("STRATA_STRESS_PHASE_OPS", ops.div_ceil(4)).max(1);
    let secs = env_u64("STRATA_STRESS_SECS", u64::MAX);
    let (tmp_dir, base) = match std::env::var_os("STRATA_STRESS_DIR") {
        Some(d) => (None, std::path::PathBuf::from(d)),
        None => {
            let t = tempfile::tempdir().unwrap();
            let p = t.path().to_path_buf();
            (Some(t), p)
        }
    };
    std::fs::create_dir_all(&base).unwrap();
    let path = base.join("db");
    let mut saved = match &tmp_dir {
        Some(_) => Saved::fresh(threads, seed),
        None => restore_checkpoint(&base).unwrap_or_else(|| Saved::fresh(threads, seed)),
    };
    assert_eq!(
        (saved.threads, saved.seed),
        (threads, seed),
        "the checkpoint in {} was made with other settings",
        base.display()
    );
    println!(
        "stress: {threads} threads x {ops} ops, seed {seed}, {phase_ops} per phase; \
         {} ops per thread done before this run",
        saved.ops_done
    );
    let options = || Options {
        create_if_missing: true,
        write_buffer_size: 16 << 10,
        max_file_size: 16 << 10,
        bloom_bits_per_key: Some(10),
        ..Options::default()
    };
    let started = std::time::Instant::now();
    while saved.ops_done < ops && started.elapsed().as_secs() < secs {
        let phase = saved.phases_done;
        let db = Arc::new(Db::open(Path::new(&path), options()).unwrap());
        // After a reopen, every thread's keys are as it left them.
        for (t, m) in saved.models.iter().enumerate() {
            let all: Model = db
                .range::<&[u8]>(..)
                .map(|r| r.unwrap())
                .filter(|(k, _)| owner(k, threads) == t as u64)
                .collect();
            assert!(
                all == *m,
                "phase {phase}: thread {t}'s keys differ after reopen"
            );
        }
        let this = phase_ops.min(ops - saved.ops_done);
        let handles: Vec<_> = saved
            .models
            .drain(..)
            .enumerate()
            .map(|(t, m)| {
                let db = Arc::clone(&db);
                let s = seed.wrapping_add(phase);
                std::thread::spawn(move || worker(&db, t as u64, threads, this, s, m))
            })
            .collect();
        saved.models = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let db = Arc::try_unwrap(db).ok().unwrap();
        db.close().unwrap();
        saved.phases_done += 1;
        saved.ops_done += this;
        if tmp_dir.is_none() {
            keep_checkpoint(&base, &saved);
        }
        println!(
            "stress: phase {phase} done, {} of {ops} ops per thread ({} in all), {} s",
            saved.ops_done,
            saved.ops_done * threads,
            started.elapsed().as_secs()
        );
    }
}
