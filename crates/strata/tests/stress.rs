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
//! `STRATA_STRESS_SEED`.

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

#[test]
fn threads_against_an_expected_state_oracle() {
    let threads = env_u64("STRATA_STRESS_THREADS", 8);
    let ops = env_u64("STRATA_STRESS_OPS", 20_000);
    let seed = env_u64("STRATA_STRESS_SEED", 17);
    println!("stress: {threads} threads x {ops} ops, seed {seed}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let options = || Options {
        create_if_missing: true,
        write_buffer_size: 16 << 10,
        max_file_size: 16 << 10,
        bloom_bits_per_key: Some(10),
        ..Options::default()
    };
    let phases = 4;
    let mut models: Vec<Model> = vec![Model::new(); threads as usize];
    for phase in 0..phases {
        let db = Arc::new(Db::open(Path::new(&path), options()).unwrap());
        // After a reopen, every thread's keys are as it left them.
        for (t, m) in models.iter().enumerate() {
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
        let handles: Vec<_> = models
            .drain(..)
            .enumerate()
            .map(|(t, m)| {
                let db = Arc::clone(&db);
                let s = seed.wrapping_add(phase);
                std::thread::spawn(move || worker(&db, t as u64, threads, ops / phases, s, m))
            })
            .collect();
        models = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let db = Arc::try_unwrap(db).ok().unwrap();
        db.close().unwrap();
    }
}
