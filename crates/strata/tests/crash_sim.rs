//! Simulated power cuts (`docs/durability.md` C1-C4, C8): random workloads on a
//! [`CrashEnv`] (puts, deletes, batches, range deletes, `flush_wal`, compactions) with
//! tiny memtables and tables, so WAL switches, flushes, compactions and
//! manifest writes happen all the time; a crash at a random filesystem call (or between
//! operations) in a random [`Damage`] mode; reopen; check against an oracle; repeat on
//! what survived.
//!
//! The oracle: the operations issued in a cycle, and which were acknowledged when the
//! crash image was taken (the marker). The recovered database must equal the state after
//! some prefix of the operations (no holes, batches whole, no wrong value) that contains
//! every acknowledged synced write, and every acknowledged write when the crash was a
//! process crash. It must always open. A crash during the reopen itself must lead to the
//! same state as the reopen without it.
//!
//! `STRATA_SIM_CRASHES` (default 2,000) sets the number of crashes, `STRATA_SIM_SEED` the
//! seed (printed; a failure names the cycle and seed to rerun).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use common::ops::{Model, Op, check_prefix};
use common::{Rng, env_u64};
use strata::testing::{CrashEnv, Damage};
use strata::{Db, Options};

fn options(env: &CrashEnv, rng: &mut Rng) -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: [4 << 10, 8 << 10, 32 << 10][rng.below(3) as usize],
        max_file_size: [4 << 10, 16 << 10][rng.below(2) as usize],
        block_size: [128, 1024][rng.below(2) as usize],
        bloom_bits_per_key: if rng.below(2) == 0 { Some(10) } else { None },
        // Value separation off, or on for values of 64 bytes and more (about two in
        // three); it may change from one open to the next, as a user may change it.
        blob_threshold: [0, 64][rng.below(2) as usize],
        // Blob values stored compressed or raw, also changing between opens: refs say
        // which, so both kinds must read after any crash.
        blob_compression: rng.below(2) == 0,
        // One to three full memtables may wait for their flush.
        max_write_buffer_number: 2 + rng.below(3) as usize,
        env: Arc::new(env.clone()),
        ..Options::default()
    }
}

fn random_op(rng: &mut Rng) -> Op {
    let key = |rng: &mut Rng| format!("k{:04}", rng.below(300)).into_bytes();
    let value = |rng: &mut Rng| {
        let n = rng.below(200) as usize;
        rng.compressible(n)
    };
    let sync = rng.below(4) == 0;
    match rng.below(23) {
        0..=11 => Op::Put(key(rng), value(rng), sync),
        12..=15 => Op::Delete(key(rng), sync),
        16..=18 => {
            let n = 1 + rng.below(8);
            let ops = (0..n)
                .map(|_| {
                    let k = key(rng);
                    let v = (rng.below(4) != 0).then(|| value(rng));
                    (k, v)
                })
                .collect();
            Op::Batch(ops, sync)
        }
        19..=20 => {
            let start = rng.below(300);
            let end = start + rng.below(40);
            let k = |i: u64| format!("k{i:04}").into_bytes();
            Op::DeleteRange(k(start), k(end), sync)
        }
        21 => Op::FlushWal(rng.below(2) == 0),
        _ => Op::Compact,
    }
}

fn contents(db: &Db) -> Model {
    db.range::<&[u8]>(..)
        .map(|r| r.expect("a read after recovery failed"))
        .collect()
}

fn describe(base: &Model, ops: &[Op], got: &Model, lo: usize) -> String {
    let mut want = base.clone();
    for op in &ops[..lo] {
        op.apply_to(&mut want);
    }
    let missing: Vec<_> = want
        .iter()
        .filter(|(k, v)| got.get(*k) != Some(*v))
        .take(5)
        .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
        .collect();
    let extra: Vec<_> = got
        .keys()
        .filter(|k| !want.contains_key(*k))
        .take(5)
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    format!(
        "{} keys recovered, {} expected at the lower bound; differing keys {missing:?}, extra {extra:?}",
        got.len(),
        want.len()
    )
}

/// Opens `env`, and separately opens a copy of it with a crash armed at a random call of
/// the recovery; both must give the same state.
fn reopen(env: &CrashEnv, rng: &mut Rng, ctx: &str) -> (Db, Model) {
    if rng.below(5) == 0 {
        let copy = env.crash(Damage::DropAll, 0); // everything in a crash image is durable
        let damage = Damage::ALL[rng.below(Damage::ALL.len() as u64) as usize];
        copy.crash_after(1 + rng.below(40), damage, rng.next_u64());
        let first = Db::open("/db", options(&copy, rng));
        let first_ok = first.is_ok();
        drop(first);
        if let Some((crashed, _)) = copy.take_crashed() {
            let db = Db::open("/db", options(&crashed, rng)).unwrap_or_else(|e| {
                panic!("{ctx}: reopening after a crash during recovery ({damage:?}) failed: {e}")
            });
            let during = contents(&db);
            drop(db);
            let db = Db::open("/db", options(env, rng)).unwrap();
            let clean = contents(&db);
            assert_eq!(
                during.len(),
                clean.len(),
                "{ctx}: a crash during recovery ({damage:?}) changed the recovered state"
            );
            assert!(
                during == clean,
                "{ctx}: a crash during recovery changed values"
            );
            return (db, clean);
        }
        assert!(first_ok, "{ctx}: recovery failed");
    }
    let db = Db::open("/db", options(env, rng))
        .unwrap_or_else(|e| panic!("{ctx}: the database did not open after a crash: {e}"));
    let m = contents(&db);
    (db, m)
}

#[test]
fn simulated_power_cuts_lose_nothing_acknowledged() {
    let crashes = env_u64("STRATA_SIM_CRASHES", 2000);
    let seed = env_u64("STRATA_SIM_SEED", 0x5eed);
    println!("simulated crashes: {crashes}, seed {seed} (STRATA_SIM_SEED to rerun)");
    let mut rng = Rng::new(seed);
    let mut env = CrashEnv::new();
    let mut base = Model::new();
    let mut db = Db::open(Path::new("/db"), options(&env, &mut rng)).unwrap();
    let mut counts = BTreeMap::new();
    let mut kept_in_flight = 0u64;
    for cycle in 0..crashes {
        let n = 1 + rng.below(60) as usize;
        let ops: Vec<Op> = (0..n).map(|_| random_op(&mut rng)).collect();
        let damage = Damage::ALL[rng.below(Damage::ALL.len() as u64) as usize];
        let crash_seed = rng.next_u64();
        // Crash at a random call while the cycle runs, or (if the cycle makes fewer
        // calls) after its last operation.
        env.crash_after(1 + rng.below(n as u64 * 4), damage, crash_seed);
        for (i, op) in ops.iter().enumerate() {
            env.set_marker(i.to_string());
            op.run(&db)
                .unwrap_or_else(|e| panic!("cycle {cycle}: op {i} {op:?} failed: {e}"));
        }
        env.set_marker(n.to_string());
        let (crashed, marker) = match env.take_crashed() {
            Some(c) => c,
            None => (env.crash(damage, crash_seed), n.to_string()),
        };
        drop(db);
        // No marker yet: background work of the reopen crashed before the first operation.
        let acked: usize = if marker.is_empty() {
            0
        } else {
            marker.parse().unwrap()
        };
        // The lower bound: every acknowledged write for a process crash, else up to the
        // last acknowledged synced one (a sync makes all before it durable too).
        let lo = if damage.keeps_unsynced() {
            acked
        } else {
            ops[..acked].iter().rposition(Op::sync).map_or(0, |i| i + 1)
        };
        let hi = (acked + 1).min(n);
        let ctx = format!("cycle {cycle} (seed {seed}, {damage:?}, {acked} of {n} acknowledged)");
        env = crashed;
        let (reopened, got) = reopen(&env, &mut rng, &ctx);
        db = reopened;
        match check_prefix(&base, &ops, lo, hi, &got) {
            Some(p) => {
                if p > acked {
                    kept_in_flight += 1;
                }
            }
            None => panic!(
                "{ctx}: the recovered state is not a prefix of the writes between {lo} and {hi} \
                 operations: {}",
                describe(&base, &ops, &got, lo)
            ),
        }
        *counts.entry(format!("{damage:?}")).or_insert(0u64) += 1;
        base = got;
    }
    drop(db);
    println!("crashes by damage mode: {counts:?}; in-flight writes kept: {kept_in_flight}");
}
