//! The recovery modes (`docs/durability.md` C8) on a write-ahead log damaged in the
//! middle: point in time stops there, absolute consistency refuses, salvage skips the
//! damaged record and keeps the rest; damage followed by a later log with records stops
//! there too in the default mode (the later log's records are dropped and reported).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::env::{Env, MemEnv};
use strata::{Db, Error, Options, RecoveryMode};

fn options(env: &MemEnv, mode: RecoveryMode) -> Options {
    Options {
        create_if_missing: true,
        recovery_mode: mode,
        env: Arc::new(env.clone()),
        ..Options::default()
    }
}

/// A database whose only data is 300 keys in its log; returns the log's path.
fn with_log(env: &MemEnv) -> PathBuf {
    let dir = Path::new("/db");
    let db = Db::open(dir, options(env, RecoveryMode::PointInTime)).unwrap();
    for i in 0..300 {
        db.put(format!("key{i:04}"), format!("value{i:04}").repeat(10))
            .unwrap();
    }
    drop(db);
    let log = env
        .children(dir)
        .unwrap()
        .into_iter()
        .find(|n| n.ends_with(".log"))
        .unwrap();
    dir.join(log)
}

/// Flips a byte in the middle of the log (inside a record, well before its end).
fn damage(env: &MemEnv, log: &Path) {
    let mut bytes = env.contents(log).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    env.set_contents(log, bytes);
}

fn present(db: &Db) -> usize {
    (0..300)
        .filter(|i| db.get(format!("key{i:04}")).unwrap().is_some())
        .count()
}

#[test]
fn point_in_time_stops_at_the_damage() {
    let env = MemEnv::new();
    let log = with_log(&env);
    damage(&env, &log);
    let db = Db::open("/db", options(&env, RecoveryMode::PointInTime)).unwrap();
    let n = present(&db);
    assert!(n > 50 && n < 300, "{n}");
    // A prefix: every key before the damage, none after.
    for i in 0..300 {
        let got = db.get(format!("key{i:04}")).unwrap();
        assert_eq!(got.is_some(), i < n, "key {i}");
    }
    let note = db.property("strata.recovery").unwrap();
    assert!(note.contains("point in time"), "{note}");
}

#[test]
fn absolute_consistency_refuses_any_damage() {
    let env = MemEnv::new();
    let log = with_log(&env);
    damage(&env, &log);
    let err = Db::open("/db", options(&env, RecoveryMode::AbsoluteConsistency)).unwrap_err();
    assert!(matches!(err, Error::Corruption(_)), "{err}");
    // Even a torn tail.
    let env = MemEnv::new();
    let log = with_log(&env);
    let mut bytes = env.contents(&log).unwrap();
    bytes.truncate(bytes.len() - 3);
    env.set_contents(&log, bytes);
    let err = Db::open("/db", options(&env, RecoveryMode::AbsoluteConsistency)).unwrap_err();
    assert!(matches!(err, Error::Corruption(_)), "{err}");
    // The default mode takes the torn tail.
    let db = Db::open("/db", options(&env, RecoveryMode::PointInTime)).unwrap();
    assert_eq!(present(&db), 299);
}

#[test]
fn salvage_keeps_what_follows_the_damage() {
    let env = MemEnv::new();
    let log = with_log(&env);
    damage(&env, &log);
    let db = Db::open("/db", options(&env, RecoveryMode::Salvage)).unwrap();
    let n = present(&db);
    // The rest of the damaged record's 32 KiB block is skipped; the records of the
    // next block are kept (so the last key is back, unlike point in time).
    assert!(n > 100 && n < 300, "{n}");
    assert!(db.get("key0299").unwrap().is_some());
    let note = db.property("strata.recovery").unwrap();
    assert!(note.contains("salvage"), "{note}");
}

/// A later log holding records after a damaged one: the damaged log was left unsynced
/// at a memtable switch (W4) and no synced write followed, so point in time stops at the
/// damage and drops the later log's records, saying so; absolute consistency refuses.
#[test]
fn damage_followed_by_a_later_log_with_records_drops_the_later_log() {
    // The later log holds a copy of the damaged one's records, all of them, so replaying
    // it would bring back every key.
    let damaged_with_a_later_log = || {
        let env = MemEnv::new();
        let log = with_log(&env);
        let later = log.with_file_name("000999.log");
        env.set_contents(&later, env.contents(&log).unwrap());
        damage(&env, &log);
        env
    };

    let env = damaged_with_a_later_log();
    let db = Db::open("/db", options(&env, RecoveryMode::PointInTime)).unwrap();
    let n = present(&db);
    assert!(n > 0 && n < 300, "{n}");
    assert!(db.get("key0299").unwrap().is_none());
    let note = db.property("strata.recovery").unwrap();
    assert!(note.contains("skipped log 999"), "{note}");
    assert!(note.contains("never synced"), "{note}");
    drop(db);

    let env = damaged_with_a_later_log();
    let err = Db::open("/db", options(&env, RecoveryMode::AbsoluteConsistency)).unwrap_err();
    assert!(matches!(err, Error::Corruption(_)), "{err}");
}

/// Regression (found by `crash_sim`, seed 24301, cycle 122): a crash during recovery leaves
/// the new, empty log beside the damaged one; the next open must take the damaged tail as
/// a point in time again, not call it damage to synced data.
#[test]
fn an_empty_later_log_does_not_make_a_torn_tail_corruption() {
    let env = MemEnv::new();
    let log = with_log(&env);
    env.set_contents(&log.with_file_name("000999.log"), Vec::new());
    damage(&env, &log);
    let db = Db::open("/db", options(&env, RecoveryMode::PointInTime)).unwrap();
    let n = present(&db);
    assert!(n > 50 && n < 300, "{n}");
}

/// Regression (found by the crash-point soak, "WAL switch", TornPrefix): an older log left
/// unsynced at a switch (W4) and cut by a power cut exactly at a record boundary reads as
/// complete; the later log's records then follow a gap in sequence numbers. Point in time
/// stops at the gap instead of replaying them into a hole; absolute consistency refuses.
#[test]
fn a_gap_in_sequence_numbers_between_logs_stops_the_replay() {
    let log_with = |env: &MemEnv, n: usize| {
        let db = Db::open("/db", options(env, RecoveryMode::PointInTime)).unwrap();
        for i in 0..n {
            db.put(format!("key{i:04}"), format!("value{i:04}"))
                .unwrap();
        }
        drop(db);
        let name = env
            .children(Path::new("/db"))
            .unwrap()
            .into_iter()
            .find(|n| n.ends_with(".log"))
            .unwrap();
        Path::new("/db").join(name)
    };
    let cut_with_a_later_log = || {
        // The older log ends cleanly after 150 records (seqnums 1-150); the later one
        // holds seqnums 1-300, so its first record is not the 151 that must come next.
        let env = MemEnv::new();
        let older = log_with(&env, 150);
        let other = MemEnv::new();
        let later = log_with(&other, 300);
        env.set_contents(
            &older.with_file_name("000999.log"),
            other.contents(&later).unwrap(),
        );
        env
    };

    let env = cut_with_a_later_log();
    let db = Db::open("/db", options(&env, RecoveryMode::PointInTime)).unwrap();
    assert_eq!(present(&db), 150);
    assert!(db.get("key0299").unwrap().is_none());
    let note = db.property("strata.recovery").unwrap();
    assert!(note.contains("gap in sequence numbers"), "{note}");
    drop(db);

    let env = cut_with_a_later_log();
    let err = Db::open("/db", options(&env, RecoveryMode::AbsoluteConsistency)).unwrap_err();
    assert!(matches!(err, Error::Corruption(_)), "{err}");
}
