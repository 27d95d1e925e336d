//! Compactions cut into shards merged by several threads (`Options::max_subcompactions`,
//! H2): the database holds exactly what a `BTreeMap` model holds, at the latest state and
//! at a snapshot taken midway (P2 across shard boundaries), `Db::verify` finds every level
//! sorted with no overlap, and helper threads did merge shards. The same log under one
//! thread gives the same contents.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use std::collections::BTreeMap;

use common::{Rng, env_u64};
use strata::{Db, Options, ReadOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(i: u64) -> Vec<u8> {
    format!("{i:012}").into_bytes()
}

/// Random puts and deletes over `keys` keys; returns the model at the end and at the
/// snapshot taken halfway, with the database's contents at both.
fn run(subcompactions: usize, seed: u64, ops: u64) -> (Model, Model, Model, Model, u64) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            create_if_missing: true,
            write_buffer_size: 64 << 10,
            max_file_size: 16 << 10,
            max_subcompactions: subcompactions,
            ..Options::default()
        },
    )
    .unwrap();
    let keys = ops / 3;
    let mut rng = Rng::new(seed);
    let mut model = Model::new();
    let mut at_snapshot = None;
    for i in 0..ops {
        let k = key(rng.below(keys));
        if rng.below(5) == 0 {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let v = format!("{i}-")
                .repeat(1 + rng.below(20) as usize)
                .into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        if i == ops / 2 {
            at_snapshot = Some((db.snapshot(), model.clone()));
        }
    }
    db.compact_range(None, None).unwrap();
    let report = db.verify().unwrap();
    assert!(report.entries > 0);
    let (snapshot, snap_model) = at_snapshot.unwrap();
    let latest: Model = db.range::<&[u8]>(..).map(|r| r.unwrap()).collect();
    let read = ReadOptions {
        snapshot: Some(snapshot),
        ..ReadOptions::default()
    };
    let mut snap_db = Model::new();
    for k in (0..keys).map(key) {
        if let Some(v) = db.get_opt(&k, &read).unwrap() {
            snap_db.insert(k, v);
        }
    }
    let shards = db.counters().compaction_helper_shards;
    (model, latest, snap_model, snap_db, shards)
}

#[test]
fn sharded_compactions_keep_every_key_and_snapshot() {
    let seed = env_u64("STRATA_SHARDS_SEED", 5);
    let ops = env_u64("STRATA_SHARDS_OPS", 60_000);
    println!("compaction shards: seed {seed} (STRATA_SHARDS_SEED), {ops} ops");
    let (model, latest, snap_model, snap_db, shards) = run(4, seed, ops);
    assert!(
        latest == model,
        "latest state differs from the model (seed {seed})"
    );
    assert!(
        snap_db == snap_model,
        "snapshot state differs (seed {seed})"
    );
    assert!(shards > 0, "no helper thread merged a shard");
    let (_, one_thread, _, one_snap, none) = run(1, seed, ops);
    assert_eq!(none, 0);
    assert!(one_thread == latest && one_snap == snap_db);
    println!("compaction shards: {shards} merged by helpers, same contents as one thread");
}

/// Tables that each span the whole key range (flushes of random keys: one lands in level
/// 2, one in level 1, two in level 0) offer no cut at their ends; the compaction of level
/// 0 with its one level-1 table is cut at the ends of their data blocks (H3), so shards
/// start and end inside tables, and every key keeps its newest version.
#[test]
fn shards_cut_inside_tables_keep_every_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            create_if_missing: true,
            write_buffer_size: 8 << 20,
            max_file_size: 16 << 10,
            max_subcompactions: 2,
            ..Options::default()
        },
    )
    .unwrap();
    let mut rng = Rng::new(11);
    let mut model = Model::new();
    for round in 0..4 {
        for _ in 0..4_000 {
            let k = key(rng.below(10_000));
            let v = format!("{round}-{}", rng.below(1 << 30))
                .repeat(4)
                .into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        db.flush().unwrap();
    }
    let at = |l: usize| {
        db.property(&format!("leveldb.num-files-at-level{l}"))
            .unwrap()
    };
    assert_eq!([at(0), at(1), at(2)], ["2", "1", "1"]);
    assert_eq!(db.counters().compaction_helper_shards, 0);
    db.compact_range(None, None).unwrap();
    assert!(
        db.counters().compaction_helper_shards > 0,
        "no compaction was shared"
    );
    db.verify().unwrap();
    let latest: Model = db.range::<&[u8]>(..).map(|r| r.unwrap()).collect();
    assert!(latest == model, "contents differ from the model");
}
