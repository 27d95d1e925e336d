//! The whole database against a `BTreeMap` model: random puts, deletes, batches (with
//! range deletes among their writes), `flush_wal`, gets,
//! forward and reverse range scans, snapshots held across writes, manual compactions,
//! transactions held open across other writes (their reads, scans and commits, a
//! conflict predicted from what was written since they began), and reopens, with a
//! 64 KiB write buffer so flushes and compactions run all the time.
//!
//! `STRATA_MODEL_OPS` (default 200,000) operations in `STRATA_MODEL_ROUNDS` (default 20)
//! rounds with a reopen between rounds; `STRATA_MODEL_SEED` picks the seed (printed).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use common::{Rng, env_u64};
use strata::env::MemEnv;
use strata::{Db, Options, ReadOptions, Snapshot, Transaction, WriteBatch};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// An open transaction and what the model says of it.
struct TxnModel<'db> {
    txn: Transaction<'db>,
    /// The database when it began.
    snapshot: Model,
    /// Its own writes: `None` a delete.
    own: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// Keys it read from its snapshot, and ranges it scanned.
    read_keys: Vec<Vec<u8>>,
    read_ranges: Vec<(Vec<u8>, Vec<u8>)>,
    /// Keys written by others since it began.
    written: BTreeSet<Vec<u8>>,
}

impl TxnModel<'_> {
    /// What its reads should see of `k`.
    fn sees(&self, k: &[u8]) -> Option<Vec<u8>> {
        match self.own.get(k) {
            Some(v) => v.clone(),
            None => self.snapshot.get(k).cloned(),
        }
    }

    /// True if its commit must fail: it wrote something, and something it read was
    /// written since it began.
    fn conflicts(&self) -> bool {
        !self.own.is_empty()
            && (self.read_keys.iter().any(|k| self.written.contains(k))
                || self
                    .read_ranges
                    .iter()
                    .any(|(lo, hi)| self.written.range(lo.clone()..hi.clone()).next().is_some()))
    }
}

/// One step of the open transaction (starting one if none is open): a get, a put, a
/// delete, a scan either way, or the commit, each checked against the model. A commit
/// returns whether it failed with a conflict.
fn transaction_step<'db>(
    db: &'db Db,
    slot: &mut Option<TxnModel<'db>>,
    model: &mut Model,
    rng: &mut Rng,
    ctx: &str,
) -> Option<bool> {
    let Some(t) = slot.as_mut() else {
        *slot = Some(TxnModel {
            txn: db.transaction(),
            snapshot: model.clone(),
            own: BTreeMap::new(),
            read_keys: Vec::new(),
            read_ranges: Vec::new(),
            written: BTreeSet::new(),
        });
        return None;
    };
    match rng.below(8) {
        0 | 1 => {
            let k = key(rng);
            assert_eq!(
                t.txn.get(&k).unwrap(),
                t.sees(&k),
                "{ctx}: transaction get {k:?}"
            );
            if !t.own.contains_key(&k) {
                t.read_keys.push(k);
            }
        }
        2 | 3 => {
            let (k, v) = (key(rng), value(rng));
            t.txn.put(&k, &v);
            t.own.insert(k, Some(v));
        }
        4 => {
            let k = key(rng);
            t.txn.delete(&k);
            t.own.insert(k, None);
        }
        5 => {
            let (lo, hi) = key_range(rng);
            let mut keys: BTreeSet<Vec<u8>> = t
                .snapshot
                .range(lo.clone()..hi.clone())
                .map(|(k, _)| k.clone())
                .collect();
            keys.extend(t.own.range(lo.clone()..hi.clone()).map(|(k, _)| k.clone()));
            let mut expected: Vec<(Vec<u8>, Vec<u8>)> = keys
                .into_iter()
                .filter_map(|k| t.sees(&k).map(|v| (k, v)))
                .collect();
            let reverse = rng.below(2) == 0;
            let got: Vec<_> = if reverse {
                expected.reverse();
                t.txn
                    .range_rev(lo.clone()..hi.clone())
                    .map(|r| r.unwrap())
                    .collect()
            } else {
                t.txn
                    .range(lo.clone()..hi.clone())
                    .map(|r| r.unwrap())
                    .collect()
            };
            assert!(
                got == expected,
                "{ctx}: transaction scan {lo:?}..{hi:?} reverse={reverse}"
            );
            t.read_ranges.push((lo, hi));
        }
        _ => {
            let t = slot.take()?;
            let conflict = t.conflicts();
            let own = t.own;
            match t.txn.commit() {
                Ok(()) => {
                    assert!(
                        !conflict,
                        "{ctx}: a commit the model says conflicts went through"
                    );
                    for (k, v) in own {
                        match v {
                            Some(v) => model.insert(k, v),
                            None => model.remove(&k),
                        };
                    }
                }
                Err(e) => {
                    assert!(e.is_conflict(), "{ctx}: commit failed: {e}");
                    assert!(
                        conflict,
                        "{ctx}: a commit the model lets through failed: {e}"
                    );
                }
            }
            return Some(conflict);
        }
    }
    None
}

/// Notes `k` as written for the open transaction, if any.
fn note_write(slot: &mut Option<TxnModel<'_>>, k: &[u8]) {
    if let Some(t) = slot.as_mut() {
        t.written.insert(k.to_vec());
    }
}

fn options(env: &MemEnv, rng: &mut Rng) -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 64 << 10,
        max_file_size: 32 << 10,
        block_size: [256, 1024, 4096][rng.below(3) as usize],
        bloom_bits_per_key: if rng.below(2) == 0 { Some(10) } else { None },
        env: Arc::new(env.clone()),
        ..Options::default()
    }
}

fn key(rng: &mut Rng) -> Vec<u8> {
    // A skewed key space: some keys are hot, most are not.
    let n = if rng.below(4) == 0 {
        rng.below(50)
    } else {
        rng.below(4000)
    };
    format!("key{n:06}").into_bytes()
}

/// A range of up to 40 keys of the key space, `[start, end)`; now and then empty.
fn key_range(rng: &mut Rng) -> (Vec<u8>, Vec<u8>) {
    let start = rng.below(4000);
    let end = start + rng.below(40);
    (
        format!("key{start:06}").into_bytes(),
        format!("key{end:06}").into_bytes(),
    )
}

fn value(rng: &mut Rng) -> Vec<u8> {
    let len = rng.below(120) as usize;
    rng.compressible(len)
}

fn bound(rng: &mut Rng) -> Bound<Vec<u8>> {
    match rng.below(3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(key(rng)),
        _ => Bound::Excluded(key(rng)),
    }
}

fn check_scan(db: &Db, model: &Model, rng: &mut Rng, ro: &ReadOptions, ctx: &str) {
    let lo = bound(rng);
    let hi = bound(rng);
    if let (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) =
        (&lo, &hi)
        && (a > b
            || (a == b && (matches!(lo, Bound::Excluded(_)) || matches!(hi, Bound::Excluded(_)))))
    {
        return; // BTreeMap::range panics on inverted or empty-excluded ranges
    }
    let reverse = rng.below(2) == 0;
    let limit = rng.below(200) as usize + 1;
    let expected: Vec<(Vec<u8>, Vec<u8>)> = if reverse {
        model
            .range((lo.clone(), hi.clone()))
            .rev()
            .take(limit)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    } else {
        model
            .range((lo.clone(), hi.clone()))
            .take(limit)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let got: Vec<(Vec<u8>, Vec<u8>)> = db
        .range_opt((lo.clone(), hi.clone()), reverse, ro)
        .take(limit)
        .map(|r| r.unwrap())
        .collect();
    assert!(
        got == expected,
        "{ctx}: scan {lo:?}..{hi:?} reverse={reverse}: got {} entries, expected {}",
        got.len(),
        expected.len()
    );
}

#[test]
fn database_matches_a_btreemap() {
    let seed = env_u64("STRATA_MODEL_SEED", 0x5eed);
    let ops = env_u64("STRATA_MODEL_OPS", 200_000);
    let rounds = env_u64("STRATA_MODEL_ROUNDS", 20).max(1);
    println!(
        "model test: seed {seed}, {ops} operations, {rounds} rounds (STRATA_MODEL_SEED to rerun)"
    );
    let mut rng = Rng::new(seed);
    let env = MemEnv::new();
    let path = Path::new("/model-db");
    let mut model = Model::new();
    let mut snapshots: Vec<(Snapshot, Model)> = Vec::new();
    let mut done = 0u64;
    // Transactions committed, and failed with the conflict the model predicted.
    let mut commits = (0u64, 0u64);
    for round in 0..rounds {
        let db = Db::open(path, options(&env, &mut rng)).unwrap();
        // Everything survived the reopen.
        let all: Vec<_> = db.range::<&[u8]>(..).map(|r| r.unwrap()).collect();
        let expected: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert!(
            all == expected,
            "seed {seed} round {round}: state after reopen differs"
        );
        let per_round = ops / rounds;
        let mut txn: Option<TxnModel<'_>> = None;
        for i in 0..per_round {
            let ctx = format!("seed {seed} round {round} op {i}");
            if rng.below(100) < 8 {
                match transaction_step(&db, &mut txn, &mut model, &mut rng, &ctx) {
                    Some(true) => commits.1 += 1,
                    Some(false) => commits.0 += 1,
                    None => {}
                }
                done += 1;
                continue;
            }
            match rng.below(100) {
                0..=34 => {
                    let (k, v) = (key(&mut rng), value(&mut rng));
                    db.put(&k, &v).unwrap();
                    note_write(&mut txn, &k);
                    model.insert(k, v);
                }
                35..=44 => {
                    let k = key(&mut rng);
                    db.delete(&k).unwrap();
                    note_write(&mut txn, &k);
                    model.remove(&k);
                }
                45..=54 => {
                    let mut b = WriteBatch::new();
                    for _ in 0..rng.below(10) + 1 {
                        let k = key(&mut rng);
                        if rng.below(15) == 0 {
                            let (start, end) = key_range(&mut rng);
                            b.delete_range(&start, &end);
                            // The keys there when it is written: deleted, so written.
                            for k in model.range(start.clone()..end.clone()).map(|(k, _)| k) {
                                note_write(&mut txn, k);
                            }
                            model.retain(|k, _| !(&start <= k && k < &end));
                        } else if rng.below(3) == 0 {
                            b.delete(&k);
                            note_write(&mut txn, &k);
                            model.remove(&k);
                        } else {
                            let v = value(&mut rng);
                            b.put(&k, &v);
                            note_write(&mut txn, &k);
                            model.insert(k, v);
                        }
                    }
                    db.write(b).unwrap();
                }
                55..=84 => {
                    let k = key(&mut rng);
                    let got = db.get(&k).unwrap();
                    assert_eq!(got, model.get(&k).cloned(), "{ctx}: get {k:?}");
                }
                85..=91 => check_scan(&db, &model, &mut rng, &ReadOptions::default(), &ctx),
                92..=93 => {
                    if snapshots.len() < 4 {
                        snapshots.push((db.snapshot(), model.clone()));
                    } else {
                        snapshots.remove(rng.below(4) as usize);
                    }
                }
                94..=98 => {
                    if !snapshots.is_empty() {
                        let which = rng.below(snapshots.len() as u64) as usize;
                        let (snap, old) = &snapshots[which];
                        let ro = ReadOptions {
                            snapshot: Some(snap.clone()),
                            ..ReadOptions::default()
                        };
                        let k = key(&mut rng);
                        assert_eq!(
                            db.get_opt(&k, &ro).unwrap(),
                            old.get(&k).cloned(),
                            "{ctx}: snapshot get {k:?}"
                        );
                        check_scan(&db, old, &mut rng, &ro, &format!("{ctx} (snapshot)"));
                    }
                }
                _ => {
                    if rng.below(20) == 1 {
                        db.flush_wal(rng.below(2) == 0).unwrap();
                    }
                    if rng.below(20) == 0 {
                        let (a, b) = (key(&mut rng), key(&mut rng));
                        let (a, b) = if a <= b { (a, b) } else { (b, a) };
                        db.compact_range(Some(&a), Some(&b)).unwrap();
                    }
                }
            }
            done += 1;
        }
        // Snapshots and transactions belong to the open database: they end with it.
        snapshots.clear();
        drop(txn);
        db.close().unwrap();
    }
    println!(
        "model test: {done} operations checked; transactions: {} committed, {} conflicts",
        commits.0, commits.1
    );
    assert!(commits.0 > 0 && (ops < 10_000 || commits.1 > 0));
}
