//! A user's key order and filter policy (`Options::comparator`, `Options::filter_policy`):
//! the whole database against a `BTreeMap` model kept in the same (reversed) order, through
//! flushes, compactions, reopens, snapshots and iterators both ways; a database opened with
//! another comparator is refused with both names; a filter policy's filters are written,
//! consulted by lookups, and ignored by a policy of another name.
//!
//! `STRATA_CMP_OPS` (default 20,000) operations; `STRATA_CMP_SEED` picks the seed (printed).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use std::cmp::{Ordering, Reverse};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as AtomicOrdering};

use common::{Rng, env_u64};
use strata::env::MemEnv;
use strata::{Comparator, Db, Error, FilterPolicy, Options, ReadOptions, WriteBatch};

/// Keys in reverse byte order, with shortening hooks that are right for that order (so the
/// engine's use of them is exercised, not just the defaults).
#[derive(Debug)]
struct ReverseBytes;

impl Comparator for ReverseBytes {
    fn name(&self) -> &str {
        "strata-test.ReverseBytes"
    }

    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        b.cmp(a)
    }

    /// The shortest prefix of `start` still above `limit` bytewise: a prefix is at most
    /// `start` bytewise, so at or after it in this order, and before `limit`.
    fn find_shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]) {
        if let Some(n) = (1..start.len()).find(|&n| &start[..n] > limit) {
            start.truncate(n);
        }
    }

    /// Any prefix of `key` is at or after it in this order.
    fn find_short_successor(&self, key: &mut Vec<u8>) {
        key.truncate(1);
    }
}

type Model = BTreeMap<Reverse<Vec<u8>>, Vec<u8>>;

fn options(env: &MemEnv) -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 32 << 10,
        max_file_size: 16 << 10,
        comparator: Some(Arc::new(ReverseBytes)),
        bloom_bits_per_key: Some(10),
        env: Arc::new(env.clone()),
        ..Options::default()
    }
}

fn key(rng: &mut Rng) -> Vec<u8> {
    // Short and long keys sharing prefixes, so separators have something to shorten.
    let n = rng.below(400);
    let mut k = format!("k{n:03}").into_bytes();
    if n.is_multiple_of(3) {
        k.extend_from_slice(b"-long-suffix");
    }
    k
}

fn check_all(db: &Db, model: &Model, seed: u64, step: usize) {
    let ctx = format!("seed {seed} step {step}");
    let forward: Vec<(Vec<u8>, Vec<u8>)> = db.range::<&[u8]>(..).map(|r| r.unwrap()).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model
        .iter()
        .map(|(k, v)| (k.0.clone(), v.clone()))
        .collect();
    assert_eq!(forward, want, "forward scan, {ctx}");
    let backward: Vec<(Vec<u8>, Vec<u8>)> = db.range_rev::<&[u8]>(..).map(|r| r.unwrap()).collect();
    let want_rev: Vec<(Vec<u8>, Vec<u8>)> = want.iter().rev().cloned().collect();
    assert_eq!(backward, want_rev, "backward scan, {ctx}");
}

fn check_seeks(db: &Db, model: &Model, rng: &mut Rng, seed: u64, step: usize) {
    let mut it = db.raw_iterator();
    for _ in 0..20 {
        let target = key(rng);
        it.seek(&target);
        let want = model.range(Reverse(target.clone())..).next();
        match want {
            Some((k, v)) => {
                assert!(it.valid(), "seek {target:?}: seed {seed} step {step}");
                assert_eq!((it.key(), it.value()), (k.0.as_slice(), v.as_slice()));
                it.prev();
                let before = model.range(..Reverse(k.0.clone())).next_back();
                assert_eq!(
                    it.valid().then(|| it.key().to_vec()),
                    before.map(|(k, _)| k.0.clone()),
                    "prev after seek {target:?}: seed {seed} step {step}"
                );
            }
            None => assert!(!it.valid(), "seek {target:?} past the end: seed {seed}"),
        }
        // Bounds follow the comparator's order too.
        let (a, b) = (key(rng), key(rng));
        let (lo, hi) = if ReverseBytes.compare(&a, &b).is_le() {
            (a, b)
        } else {
            (b, a)
        };
        let got: Vec<Vec<u8>> = db
            .range::<&[u8]>((Bound::Included(&lo[..]), Bound::Excluded(&hi[..])))
            .map(|r| r.unwrap().0)
            .collect();
        let want: Vec<Vec<u8>> = model
            .range(Reverse(lo.clone())..Reverse(hi.clone()))
            .map(|(k, _)| k.0.clone())
            .collect();
        assert_eq!(got, want, "range {lo:?}..{hi:?}: seed {seed} step {step}");
    }
}

#[test]
fn a_reversed_order_matches_the_model_through_flushes_compactions_and_reopens() {
    let seed = env_u64("STRATA_CMP_SEED", 0x5eed_c0de);
    let ops = env_u64("STRATA_CMP_OPS", 20_000) as usize;
    println!("STRATA_CMP_SEED={seed}");
    let mut rng = Rng::new(seed);
    let env = MemEnv::new();
    let dir = Path::new("/cmp");
    let mut db = Db::open(dir, options(&env)).unwrap();
    let mut model = Model::new();
    for step in 0..ops {
        match rng.below(100) {
            0..=59 => {
                let k = key(&mut rng);
                let n = rng.below(300) as usize;
                let v = rng.bytes(n);
                db.put(&k, &v).unwrap();
                model.insert(Reverse(k), v);
            }
            60..=74 => {
                let k = key(&mut rng);
                db.delete(&k).unwrap();
                model.remove(&Reverse(k));
            }
            75..=84 => {
                let mut batch = WriteBatch::new();
                for _ in 0..rng.below(10) {
                    let k = key(&mut rng);
                    if rng.below(4) == 0 {
                        batch.delete(&k);
                        model.remove(&Reverse(k));
                    } else {
                        let v = rng.bytes(20);
                        batch.put(&k, &v);
                        model.insert(Reverse(k), v);
                    }
                }
                db.write(batch).unwrap();
            }
            _ => {
                let k = key(&mut rng);
                assert_eq!(
                    db.get(&k).unwrap().as_ref(),
                    model.get(&Reverse(k.clone())),
                    "get {k:?}: seed {seed} step {step}"
                );
            }
        }
        if step % 2_000 == 1_999 {
            check_all(&db, &model, seed, step);
            check_seeks(&db, &model, &mut rng, seed, step);
            match rng.below(3) {
                0 => db.compact_range(None, None).unwrap(),
                1 => {
                    db.close().unwrap();
                    db = Db::open(dir, options(&env)).unwrap();
                }
                _ => {}
            }
        }
    }
    // A snapshot keeps the reversed view it was taken at.
    let snap = db.snapshot();
    let frozen = model.clone();
    db.put(b"zzz-after", b"x").unwrap();
    let read = ReadOptions {
        snapshot: Some(snap),
        ..ReadOptions::default()
    };
    let seen: Vec<Vec<u8>> = db
        .range_opt::<&[u8]>(.., false, &read)
        .map(|r| r.unwrap().0)
        .collect();
    let want: Vec<Vec<u8>> = frozen.keys().map(|k| k.0.clone()).collect();
    assert_eq!(seen, want, "snapshot scan: seed {seed}");
    drop(read);
    db.compact_range(None, None).unwrap();
    model.insert(Reverse(b"zzz-after".to_vec()), b"x".to_vec());
    check_all(&db, &model, seed, ops);
    let report = db.verify().unwrap();
    assert_eq!(report.entries as usize, model.len(), "verify: seed {seed}");
    assert!(
        db.property("leveldb.num-files-at-level0").as_deref() == Some("0"),
        "a full compaction empties level 0"
    );
}

#[test]
fn opening_with_another_comparator_names_both() {
    let env = MemEnv::new();
    let dir = Path::new("/cmp-mismatch");
    let db = Db::open(dir, options(&env)).unwrap();
    db.put(b"a", b"1").unwrap();
    db.close().unwrap();
    let bytewise = Options {
        comparator: None,
        ..options(&env)
    };
    match Db::open(dir, bytewise).unwrap_err() {
        Error::ComparatorMismatch(names) => {
            assert_eq!(names.database, "strata-test.ReverseBytes");
            assert_eq!(names.options, "leveldb.BytewiseComparator");
        }
        other => panic!("{other}"),
    }
    // And the other way round: a bytewise database refuses the reversed order.
    let dir = Path::new("/bytewise");
    let db = Db::open(
        dir,
        Options {
            comparator: None,
            ..options(&env)
        },
    )
    .unwrap();
    db.close().unwrap();
    let err = Db::open(dir, options(&env)).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("leveldb.BytewiseComparator") && text.contains("strata-test.ReverseBytes"),
        "{text}"
    );
}

/// A policy whose filter is one byte and whose answer is a switch: it shows when filters
/// are written and when lookups ask them.
#[derive(Debug, Default)]
struct Switch {
    answer: AtomicBool,
    created: AtomicUsize,
    asked: AtomicUsize,
}

impl FilterPolicy for Switch {
    fn name(&self) -> &str {
        "strata-test.Switch"
    }

    fn create_filter(&self, keys: &[&[u8]], dst: &mut Vec<u8>) {
        assert!(keys.iter().all(|k| k.starts_with(b"f")), "user keys only");
        self.created.fetch_add(1, AtomicOrdering::Relaxed);
        dst.push(0x5a);
    }

    fn key_may_match(&self, _key: &[u8], filter: &[u8]) -> bool {
        assert_eq!(filter, [0x5a], "the filter bytes this policy made");
        self.asked.fetch_add(1, AtomicOrdering::Relaxed);
        self.answer.load(AtomicOrdering::Relaxed)
    }
}

#[test]
fn a_filter_policy_is_written_asked_and_ignored_by_another_name() {
    let env = MemEnv::new();
    let dir = Path::new("/filters");
    let policy = Arc::new(Switch::default());
    policy.answer.store(true, AtomicOrdering::Relaxed);
    let opts = Options {
        create_if_missing: true,
        filter_policy: Some(policy.clone()),
        env: Arc::new(env.clone()),
        ..Options::default()
    };
    let db = Db::open(dir, opts.clone()).unwrap();
    for i in 0..500 {
        db.put(format!("f{i:04}"), b"v").unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert!(
        policy.created.load(AtomicOrdering::Relaxed) > 0,
        "filters written"
    );
    assert_eq!(db.get(b"f0007").unwrap().as_deref(), Some(&b"v"[..]));
    assert!(
        policy.asked.load(AtomicOrdering::Relaxed) > 0,
        "filters asked"
    );
    policy.answer.store(false, AtomicOrdering::Relaxed);
    assert_eq!(
        db.get(b"f0007").unwrap(),
        None,
        "the filter ruled the key out"
    );
    // Scans do not ask filters.
    assert_eq!(db.range::<&[u8]>(..).count(), 500);
    db.close().unwrap();
    // Another policy (LevelDB's Bloom filter) finds no filter of its name: every table
    // is read, nothing is hidden.
    let bloom = Options {
        filter_policy: None,
        bloom_bits_per_key: Some(10),
        ..opts.clone()
    };
    let db = Db::open(dir, bloom).unwrap();
    assert_eq!(db.get(b"f0007").unwrap().as_deref(), Some(&b"v"[..]));
    db.close().unwrap();
    // Setting both a policy and Bloom bits is refused.
    let both = Options {
        bloom_bits_per_key: Some(10),
        ..opts
    };
    assert!(matches!(
        Db::open(dir, both).unwrap_err(),
        Error::InvalidArgument(_)
    ));
}
