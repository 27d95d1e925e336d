//! `Db::delete_range` and `WriteBatch::delete_range`: what they delete (in the batch's
//! order and the database's comparator), atomicity against readers, durability across a
//! power cut, and LevelDB reading what they leave. The metamorphic test draws range
//! deletes in its batches too.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::cmp::Ordering;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use strata::testing::{CrashEnv, Damage};
use strata::{Comparator, Db, Options, WriteBatch, WriteOptions};

fn open(dir: &std::path::Path) -> Db {
    Db::open(
        dir,
        Options {
            create_if_missing: true,
            write_buffer_size: 64 << 10,
            ..Options::default()
        },
    )
    .unwrap()
}

fn keys(db: &Db) -> Vec<String> {
    db.range::<&[u8]>(..)
        .map(|e| String::from_utf8(e.unwrap().0).unwrap())
        .collect()
}

#[test]
fn deletes_exactly_the_half_open_range_in_memtable_and_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    for i in 0..3000 {
        db.put(format!("k{i:05}"), format!("v{i}")).unwrap();
    }
    db.compact_range(None, None).unwrap();
    // Some keys only in the memtable, some overwritten there, some deleted already.
    for i in (0..3000).step_by(7) {
        db.put(format!("k{i:05}"), "new").unwrap();
    }
    db.delete("k01500").unwrap();
    db.put("k01000x", "between").unwrap();

    db.delete_range("k01000", "k02000").unwrap();

    let left = keys(&db);
    assert_eq!(left.len(), 2000);
    assert!(
        left.iter()
            .all(|k| k.as_str() < "k01000" || k.as_str() >= "k02000")
    );
    assert_eq!(db.get("k00999").unwrap().as_deref(), Some(&b"v999"[..]));
    assert_eq!(db.get("k02000").unwrap().as_deref(), Some(&b"v2000"[..]));
    assert!(db.get("k01000").unwrap().is_none());
    assert!(db.get("k01000x").unwrap().is_none());
    // Empty and reversed ranges delete nothing.
    db.delete_range("k0", "k0").unwrap();
    db.delete_range("k2", "k0").unwrap();
    assert_eq!(keys(&db).len(), 2000);
    // It survives a reopen and a full compaction.
    drop(db);
    let db = open(dir.path());
    db.compact_range(None, None).unwrap();
    assert_eq!(keys(&db), left);
}

#[test]
fn a_batch_applies_its_range_deletes_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    for k in ["a", "b", "c", "d", "e"] {
        db.put(k, "old").unwrap();
    }
    let mut batch = WriteBatch::new();
    batch.put("bb", "put before the range: deleted");
    batch.delete_range("b", "d");
    batch.put("c", "put after the range: kept");
    batch.delete("e");
    batch.delete_range("a", "b");
    db.write(batch).unwrap();
    assert_eq!(keys(&db), ["c", "d"]);
    assert_eq!(
        db.get("c").unwrap().as_deref(),
        Some(&b"put after the range: kept"[..])
    );

    // Appending batches keeps each range at its place.
    let mut first = WriteBatch::new();
    first.put("x1", "1");
    first.delete_range("x", "y");
    let mut second = WriteBatch::new();
    second.put("x2", "2");
    second.delete_range("c", "c\0");
    first.append(&second);
    db.write(first).unwrap();
    assert_eq!(keys(&db), ["d", "x2"]);
}

#[test]
fn snapshots_and_readers_see_all_or_none_of_a_range() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(open(dir.path()));
    for i in 0..20_000 {
        db.put(format!("r{i:06}"), "v").unwrap();
    }
    let before = db.snapshot();
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (db, done) = (Arc::clone(&db), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            while !done.load(AtomicOrdering::Relaxed) {
                let snap = db.snapshot();
                let opts = strata::ReadOptions {
                    snapshot: Some(snap),
                    ..Default::default()
                };
                seen.push(db.range_opt::<&[u8]>(.., false, &opts).count());
            }
            seen
        })
    };
    db.delete_range("r", "s").unwrap();
    done.store(true, AtomicOrdering::Relaxed);
    let seen = reader.join().unwrap();
    assert!(
        seen.iter().all(|&n| n == 0 || n == 20_000),
        "a reader saw part of the range: {:?}",
        seen.iter()
            .filter(|&&n| n != 0 && n != 20_000)
            .collect::<Vec<_>>()
    );
    let opts = strata::ReadOptions {
        snapshot: Some(before),
        ..Default::default()
    };
    assert_eq!(db.range_opt::<&[u8]>(.., false, &opts).count(), 20_000);
    assert_eq!(db.range::<&[u8]>(..).count(), 0);
}

#[test]
fn writers_racing_a_range_delete_land_before_or_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(open(dir.path()));
    for i in 0..5000 {
        db.put(format!("w{i:05}"), "old").unwrap();
    }
    let writer = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            for i in 0..5000 {
                db.put(format!("w{i:05}"), "new").unwrap();
            }
        })
    };
    db.delete_range("w", "x").unwrap();
    writer.join().unwrap();
    // Every surviving key holds a write made after the range delete: "new".
    for e in db.range::<&[u8]>(..) {
        let (k, v) = e.unwrap();
        assert_eq!(
            v,
            b"new",
            "{} kept an old value",
            String::from_utf8_lossy(&k)
        );
    }
}

/// Reverse bytewise order: the range is `[start, end)` in the comparator's order.
struct Reverse;

impl Comparator for Reverse {
    fn name(&self) -> &str {
        "strata-test.Reverse"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        b.cmp(a)
    }
}

#[test]
fn ranges_follow_the_comparator() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            create_if_missing: true,
            comparator: Some(Arc::new(Reverse)),
            ..Options::default()
        },
    )
    .unwrap();
    for k in ["a", "b", "c", "d", "e"] {
        db.put(k, "v").unwrap();
    }
    db.delete_range("d", "b").unwrap(); // d and c, in reverse order
    assert_eq!(keys(&db), ["e", "b", "a"]);
    db.delete_range("b", "d").unwrap(); // empty in reverse order
    assert_eq!(keys(&db), ["e", "b", "a"]);
}

#[test]
fn a_synced_range_delete_survives_a_power_cut() {
    let env = CrashEnv::new();
    let opts = || Options {
        create_if_missing: true,
        env: Arc::new(env.clone()),
        ..Options::default()
    };
    let db = Db::open("/db", opts()).unwrap();
    for i in 0..1000 {
        db.put(format!("p{i:04}"), "v").unwrap();
    }
    db.flush_wal(true).unwrap();
    db.delete_range_opt("p0100", "p0900", &WriteOptions { sync: true })
        .unwrap();
    let after = env.crash(Damage::DropAll, 1);
    drop(db);
    let db = Db::open(
        "/db",
        Options {
            env: Arc::new(after),
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(db.range::<&[u8]>(..).count(), 200);
}

#[test]
fn leveldb_reads_what_a_range_delete_leaves() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        for i in 0..2000 {
            db.put(format!("l{i:04}"), "v").unwrap();
        }
        db.compact_range(None, None).unwrap();
        db.delete_range("l0500", "l1500").unwrap();
    }
    let ldb = leveldb_ffi::Db::open(dir.path(), &leveldb_ffi::Options::default()).unwrap();
    assert!(ldb.get(b"l0499").unwrap().is_some());
    assert!(ldb.get(b"l0500").unwrap().is_none());
    assert!(ldb.get(b"l1499").unwrap().is_none());
    assert!(ldb.get(b"l1500").unwrap().is_some());
}
