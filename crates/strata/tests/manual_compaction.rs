//! `Db::compact_range` moves a table down a level whole when merging it would write the
//! same entries (a plain table with nothing below it, `FileMeta::plain`), and merges every
//! table that holds a deletion or a second version of a key, so that what LevelDB's
//! `CompactRange` drops is still dropped. (A merge's output that keeps a deletion, or two
//! versions of a key for a snapshot, is not plain either; no level lies below such an
//! output in this test to show it.)
//!
//! The database is a sorted load just over level 2's 100 MiB target, so that its first
//! tables sit in level 3 and the rest in level 2 with nothing below them: the shape a
//! sorted bulk load leaves (flushes that overlap nothing go straight to level 2).
//!
//! The last test moves tables beside what a move must not disturb (snapshots reading
//! older versions below, values in blob files, deletions, a reopen) and checks every key
//! against a model after each step. A move over an overlapping table of the level below
//! (the check `Compaction::is_plain_move` makes) fails it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use std::io::ErrorKind;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::Rng;
use strata::env::{Env, MemEnv};
use strata::testing::{Call, Fault, FaultEnv};
use strata::{Compression, Db, Options};

const VALUE: usize = 4000;
/// Keys of the sorted load: about 110 MB of values, just over level 2's target.
const LOADED: u32 = 27_500;

fn key(i: u32) -> String {
    format!("key{i:08}")
}

/// A value that does not compress, and differs per key and version.
fn value(i: u32, version: u32) -> Vec<u8> {
    Rng::new(u64::from(i) << 8 | u64::from(version)).bytes(VALUE)
}

fn files_at(db: &Db, level: usize) -> usize {
    db.property(&format!("leveldb.num-files-at-level{level}"))
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn compact_range_moves_plain_tables_and_merges_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            create_if_missing: true,
            write_buffer_size: 1 << 20,
            max_file_size: 256 << 10,
            compression: Compression::None,
            ..Options::default()
        },
    )
    .unwrap();
    for i in 0..LOADED {
        db.put(key(i), value(i, 0)).unwrap();
    }
    db.flush().unwrap();
    assert!(
        files_at(&db, 2) > 0,
        "{}",
        db.property("leveldb.sstables").unwrap()
    );

    // 1. The sorted load: every table plain, nothing below level 2's: moved, none merged.
    db.compact_range(None, None).unwrap();
    let c = db.counters();
    assert_eq!(c.compactions, 0, "{c:?}");
    assert!(c.table_moves > 0, "{c:?}");
    assert_eq!(files_at(&db, 2), 0);
    let report = db.verify().unwrap();
    assert_eq!(report.entries, u64::from(LOADED));

    // 2. A table holding two versions of each key (one memtable), past the loaded keys
    //    so that nothing lies below it: merged, and the older versions dropped.
    for round in 1..=2 {
        for i in LOADED..LOADED + 100 {
            db.put(key(i), value(i, round)).unwrap();
        }
    }
    db.compact_range(None, None).unwrap();
    let c = db.counters();
    assert!(c.compactions > 0, "{c:?}");
    assert_eq!(db.verify().unwrap().entries, u64::from(LOADED + 100));

    // 3. A table holding a deletion of a key no table has, with nothing below it: merged,
    //    and the deletion dropped.
    let before = db.counters().compactions;
    db.delete(key(LOADED + 1000)).unwrap();
    db.compact_range(None, None).unwrap();
    assert!(db.counters().compactions > before);
    assert_eq!(db.verify().unwrap().entries, u64::from(LOADED + 100));

    for i in (0..LOADED + 100).step_by(997) {
        let want = value(i, if i >= LOADED { 2 } else { 0 });
        assert_eq!(db.get(key(i)).unwrap(), Some(want), "{}", key(i));
    }
    db.close().unwrap();
}

/// Waits until the background thread has moved nothing for a while (after a sorted load
/// it moves tables from level 2 to level 3 until level 2 is under its target).
fn wait_for_quiet(db: &Db) {
    let mut last = db.counters();
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = db.counters();
        if now.table_moves == last.table_moves && now.compactions == last.compactions {
            return;
        }
        last = now;
    }
}

/// A move whose manifest edit cannot be written fails `compact_range` (the request carries
/// the error, as a merge's does), and the database reopens with every key.
#[test]
fn a_move_that_cannot_be_recorded_fails_compact_range() {
    let mem = MemEnv::new();
    let faulty = FaultEnv::new(Arc::new(mem.clone()));
    let dir = Path::new("/db");
    let options = |env: Arc<dyn Env>| Options {
        create_if_missing: true,
        write_buffer_size: 1 << 20,
        // Level 2's tables are then taken in one round (25 tables' worth), so the failed
        // move is the request's last: nothing after it would report the error.
        max_file_size: 4 << 20,
        compression: Compression::None,
        background_retry_interval: Duration::ZERO,
        env,
        ..Options::default()
    };
    let db = Db::open(dir, options(Arc::new(faulty.clone()))).unwrap();
    for i in 0..LOADED {
        db.put(key(i), value(i, 0)).unwrap();
    }
    db.flush().unwrap();
    wait_for_quiet(&db);
    assert!(files_at(&db, 2) > 0 && files_at(&db, 3) > 0);
    // `compact_range` starts with a flush, which records a new log in the manifest even
    // with nothing to flush: the fault lets that many appends pass (counted on a flush
    // of the empty memtable), and lands on the move's.
    let manifest_appends = || {
        faulty
            .calls()
            .iter()
            .filter(|(c, path, _)| {
                matches!(c, Call::Append) && path.to_string_lossy().contains("MANIFEST")
            })
            .count() as u64
    };
    let before = manifest_appends();
    db.flush().unwrap();
    let flush_appends = manifest_appends() - before;
    faulty.arm(Fault {
        call: Call::Append,
        path_contains: "MANIFEST".into(),
        skip: flush_appends,
        sticky: false,
        kind: ErrorKind::Other,
    });
    let result = db.compact_range(None, None);
    assert!(result.is_err(), "the failed move was reported as done");
    assert_eq!(faulty.failures(), 1);
    assert!(files_at(&db, 2) > 0, "the tables stayed where they were");
    drop(db);
    faulty.disarm();
    let db = Db::open(dir, options(Arc::new(mem))).unwrap();
    assert_eq!(db.verify().unwrap().entries, u64::from(LOADED));
    for i in (0..LOADED).step_by(997) {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i, 0)), "{}", key(i));
    }
}

/// Plain moves end to end, beside what they must not disturb: the sorted load's tables
/// (every tenth value in a blob file) moved down while a snapshot is open, then
/// overwrites, deletions and new keys past the end (moved again) under a second
/// snapshot, merged where they overlap; then the snapshots let go, a reopen. After each
/// `compact_range` every key reads as a model says, for the current state and for each
/// snapshot, by `get` and by an iterator both ways; each step checks that moves did
/// happen (or it would test merges only).
#[test]
fn plain_moves_keep_snapshots_blob_values_and_deletions() {
    use std::collections::BTreeMap;
    use strata::ReadOptions;

    /// Key index to the version of its value (absent: deleted or never written).
    type Model = BTreeMap<u32, u32>;
    const BLOB_VALUE: usize = 5000;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let options = || Options {
        create_if_missing: true,
        write_buffer_size: 1 << 20,
        max_file_size: 256 << 10,
        compression: Compression::None,
        blob_threshold: 4096,
        ..Options::default()
    };
    // Every tenth key's value goes to a blob file; the others stay in the tables, which
    // makes level 2 overflow into level 3 as in the test above.
    let val = |i: u32, version: u32| -> Vec<u8> {
        let mut v = value(i, version);
        if i.is_multiple_of(10) {
            v.resize(BLOB_VALUE, b'b');
        }
        v
    };
    let check = |db: &Db, model: &Model, at: &ReadOptions, what: &str| {
        for i in 0..LOADED + 600 {
            let got = db.get_opt(key(i), at).unwrap();
            assert!(
                got == model.get(&i).map(|&ver| val(i, ver)),
                "{what}: get {}",
                key(i)
            );
        }
        let mut it = db.raw_iterator_opt(at);
        for backward in [false, true] {
            let mut want: Box<dyn Iterator<Item = (&u32, &u32)>> = if backward {
                it.seek_to_last();
                Box::new(model.iter().rev())
            } else {
                it.seek_to_first();
                Box::new(model.iter())
            };
            while it.valid() {
                let (&i, &ver) = want.next().unwrap_or_else(|| panic!("{what}: extra key"));
                assert!(it.key() == key(i).as_bytes(), "{what}: key {}", key(i));
                assert!(it.value() == val(i, ver), "{what}: value of {}", key(i));
                if backward {
                    it.prev();
                } else {
                    it.next();
                }
            }
            it.status().unwrap();
            assert!(
                want.next().is_none(),
                "{what}: keys missing (backward: {backward})"
            );
        }
    };
    let now = ReadOptions::default();
    // The current state, then each snapshot still held, against its model.
    let check_all = |db: &Db, model: &Model, held: &[(&str, &Model, &ReadOptions)], what: &str| {
        check(db, model, &now, what);
        for (name, m, at) in held {
            check(db, m, at, &format!("{name} {what}"));
        }
    };
    let moves_and_merges = |db: &Db| {
        let c = db.counters();
        (c.table_moves, c.compactions)
    };

    let db = Db::open(&dir, options()).unwrap();
    let mut model = Model::new();
    for i in 0..LOADED {
        db.put(key(i), val(i, 0)).unwrap();
        model.insert(i, 0);
    }
    db.flush().unwrap();
    wait_for_quiet(&db);
    assert!(files_at(&db, 2) > 0 && files_at(&db, 3) > 0);
    // The load's tables are moved down under a snapshot (which pins nothing they hold).
    let (s0, m0) = (db.snapshot(), model.clone());
    let s0_at = ReadOptions {
        snapshot: Some(s0),
        ..Default::default()
    };
    let (moved, merged) = moves_and_merges(&db);
    db.compact_range(None, None).unwrap();
    let (moved_now, merged_now) = moves_and_merges(&db);
    assert!(moved_now > moved, "no move");
    // While blob files exist, `compact_range` ends by compacting the deepest level into
    // itself (`db/manual.rs`): that one merge, no other.
    assert_eq!(merged_now, merged + 1, "a plain load was merged");
    check_all(&db, &model, &[("s0", &m0, &s0_at)], "after the moves");

    // Under a second snapshot: sorted overwrites over the moved tables (plain tables, but
    // over older versions in the level below: merged, the older versions kept for the
    // snapshots), and new keys past the end (plain, nothing below them: moved).
    let (s1, m1) = (db.snapshot(), model.clone());
    let s1_at = ReadOptions {
        snapshot: Some(s1),
        ..Default::default()
    };
    let held = [("s0", &m0, &s0_at), ("s1", &m1, &s1_at)];
    for i in (0..LOADED).step_by(97) {
        db.put(key(i), val(i, 1)).unwrap();
        model.insert(i, 1);
    }
    db.flush().unwrap();
    for i in LOADED..LOADED + 600 {
        db.put(key(i), val(i, 1)).unwrap();
        model.insert(i, 1);
    }
    // First the range from the load's last key: the new keys' tables overlap nothing of
    // the level below them and move (a range without the load's last key would have its
    // deepest level there, and blob files get it compacted in place instead); then the
    // whole range, which merges the overwrites.
    let (moved, merged) = moves_and_merges(&db);
    let last = key(LOADED - 1);
    db.compact_range(Some(last.as_bytes()), None).unwrap();
    let (moved_now, _) = moves_and_merges(&db);
    assert!(
        moved_now > moved,
        "no move: {}",
        db.property("leveldb.sstables").unwrap()
    );
    check_all(&db, &model, &held, "after the new keys' moves");
    db.compact_range(None, None).unwrap();
    let (_, merged_now) = moves_and_merges(&db);
    assert!(merged_now > merged, "no merge");
    check_all(&db, &model, &held, "after the overwrites");

    // Deletions (never plain), under both snapshots still.
    for i in (5..LOADED + 600).step_by(101) {
        db.delete(key(i)).unwrap();
        model.remove(&i);
    }
    db.compact_range(None, None).unwrap();
    check_all(&db, &model, &held, "after the deletions");

    // The snapshots let go: a last compaction drops what only they read.
    drop((s0_at, s1_at));
    db.compact_range(None, None).unwrap();
    check(&db, &model, &now, "after the snapshots");
    let report = db.verify().unwrap();
    assert_eq!(report.entries, model.len() as u64, "{report:?}");
    assert!(report.blob_values > 0, "{report:?}");
    assert!(report.unreferenced.is_empty(), "{report:?}");
    db.close().unwrap();
    let db = Db::open(&dir, options()).unwrap();
    check(&db, &model, &now, "after a reopen");
    db.close().unwrap();
}
