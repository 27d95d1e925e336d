//! The database's API, one behaviour per test, on the real filesystem.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use strata::{Db, Error, Options, ReadOptions, WriteBatch, WriteOptions};

fn options() -> Options {
    Options {
        create_if_missing: true,
        ..Options::default()
    }
}

fn small() -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 64 << 10,
        max_file_size: 64 << 10,
        ..Options::default()
    }
}

#[test]
fn put_get_delete_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    db.put(b"a", b"1").unwrap();
    db.put(b"b", b"2").unwrap();
    db.delete(b"a").unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"b").unwrap(), Some(b"2".to_vec()));
    db.close().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"b").unwrap(), Some(b"2".to_vec()));
    db.put_opt(b"c", b"3", &WriteOptions { sync: true })
        .unwrap();
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(db.get(b"c").unwrap(), Some(b"3".to_vec()));
}

#[test]
fn batches_apply_together() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let mut b = WriteBatch::new();
    b.put("x", "1");
    b.put("y", "2");
    b.delete("x");
    assert_eq!(b.len(), 3);
    db.write(b).unwrap();
    assert_eq!(db.get("x").unwrap(), None);
    assert_eq!(db.get("y").unwrap(), Some(b"2".to_vec()));
}

#[test]
fn flushes_compactions_and_reads_across_levels() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    let n = 20_000u32;
    for i in 0..n {
        db.put(format!("key{i:08}"), format!("value{i}").repeat(3))
            .unwrap();
    }
    for i in (0..n).step_by(3) {
        db.delete(format!("key{i:08}")).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let files: usize = (0..7)
        .map(|l| {
            db.property(&format!("leveldb.num-files-at-level{l}"))
                .unwrap()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    assert!(files > 1, "{}", db.property("leveldb.sstables").unwrap());
    for i in (0..n).step_by(97) {
        let got = db.get(format!("key{i:08}")).unwrap();
        if i % 3 == 0 {
            assert_eq!(got, None, "{i}");
        } else {
            assert_eq!(got, Some(format!("value{i}").repeat(3).into_bytes()), "{i}");
        }
    }
    let count = db.range::<&[u8]>(..).count();
    assert_eq!(count, (n - n.div_ceil(3)) as usize);
    assert!(db.property("leveldb.stats").unwrap().contains("Level"));
    assert!(db.property("strata.stats").unwrap().contains("compactions"));
    let sizes = db.approximate_sizes(&[(b"key00000000", b"key99999999"), (b"a", b"b")]);
    assert!(sizes[0] > 10_000, "{sizes:?}");
    assert_eq!(sizes[1], 0);
    drop(db);
    let db = Db::open(dir.path(), small()).unwrap();
    assert_eq!(
        db.get(format!("key{:08}", 1)).unwrap(),
        Some(b"value1value1value1".to_vec())
    );
}

#[test]
fn iterators_both_ways_and_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    for i in 0..2000u32 {
        db.put(format!("{i:05}"), i.to_string()).unwrap();
    }
    db.delete("00005").unwrap();
    let mut it = db.raw_iterator();
    it.seek_to_first();
    assert_eq!(it.key(), b"00000");
    it.next();
    it.next();
    it.next();
    it.next();
    assert_eq!(it.key(), b"00004");
    it.next();
    assert_eq!(it.key(), b"00006", "deleted key hidden");
    it.prev();
    assert_eq!(it.key(), b"00004");
    it.seek_to_last();
    assert_eq!(it.key(), b"01999");
    it.seek(b"00005");
    assert_eq!(it.key(), b"00006");
    it.status().unwrap();
    let fwd: Vec<Vec<u8>> = db
        .range(b"00010".as_slice()..b"00015".as_slice())
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(fwd, [b"00010", b"00011", b"00012", b"00013", b"00014"]);
    let rev: Vec<Vec<u8>> = db
        .range_rev(b"00003".as_slice()..=b"00007".as_slice())
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(rev, [b"00007", b"00006", b"00004", b"00003"]);
    assert_eq!(db.range_rev::<&[u8]>(..).count(), 1999);
}

#[test]
fn snapshots_see_the_past() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    db.put("k", "old").unwrap();
    let snap = db.snapshot();
    db.put("k", "new").unwrap();
    db.delete("gone").unwrap();
    for i in 0..5000 {
        db.put(format!("filler{i}"), "x".repeat(50)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let ro = ReadOptions {
        snapshot: Some(snap.clone()),
        ..ReadOptions::default()
    };
    assert_eq!(db.get_opt("k", &ro).unwrap(), Some(b"old".to_vec()));
    assert_eq!(db.get("k").unwrap(), Some(b"new".to_vec()));
    let seen: Vec<_> = db
        .range_opt::<&[u8]>(.., false, &ro)
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(seen, [b"k".to_vec()]);
    drop(ro);
    drop(snap);
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get("k").unwrap(), Some(b"new".to_vec()));
}

#[test]
fn open_errors_are_distinct() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let err = Db::open(&missing, Options::default()).unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err}");
    assert!(!missing.exists(), "a failed open leaves nothing behind");

    let path = dir.path().join("db");
    let db = Db::open(&path, options()).unwrap();
    let err = Db::open(&path, options()).unwrap_err();
    assert!(matches!(err, Error::Locked(_)), "{err}");
    drop(db);
    let err = Db::open(
        &path,
        Options {
            error_if_exists: true,
            ..options()
        },
    )
    .unwrap_err();
    assert!(matches!(err, Error::AlreadyExists(_)), "{err}");
    let err = Db::open(
        &path,
        Options {
            write_buffer_size: 1,
            ..options()
        },
    )
    .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}

#[test]
fn snapshot_of_another_database_is_refused() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let da = Db::open(a.path(), options()).unwrap();
    let db_b = Db::open(b.path(), options()).unwrap();
    let ro = ReadOptions {
        snapshot: Some(da.snapshot()),
        ..ReadOptions::default()
    };
    assert!(matches!(
        db_b.get_opt("k", &ro),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn destroy_and_repair() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::open(&path, small()).unwrap();
    for i in 0..3000 {
        db.put(format!("k{i:05}"), "v".repeat(40)).unwrap();
    }
    drop(db);
    // Lose the manifest: repair rebuilds it from the tables and logs.
    for e in std::fs::read_dir(&path).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("MANIFEST-") || name == "CURRENT" {
            std::fs::remove_file(p).unwrap();
        }
    }
    let err = Db::open(&path, small()).unwrap_err();
    assert!(
        err.is_corruption() && err.to_string().contains("repair"),
        "{err}"
    );
    Db::repair(&path, small()).unwrap();
    let db = Db::open(&path, small()).unwrap();
    assert_eq!(db.range::<&[u8]>(..).count(), 3000);
    assert_eq!(db.get("k01234").unwrap(), Some("v".repeat(40).into_bytes()));
    drop(db);
    Db::destroy(&path, &Options::default()).unwrap();
    // What repair set aside in lost/ is the user's to inspect; everything else is gone.
    let left: Vec<_> = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["lost"]);
    let fresh = dir.path().join("fresh");
    drop(Db::open(&fresh, small()).unwrap());
    Db::destroy(&fresh, &Options::default()).unwrap();
    assert!(!fresh.exists());
}

/// Large keys and values through every layer: a WAL record spanning hundreds of log
/// blocks, replay, a flush into a table whose one entry dwarfs its block and file size, a
/// compaction, iterators both ways, and reopening, with and without compression.
#[test]
fn large_keys_and_values_pass_through_every_layer() {
    use strata::sstable::Compression;
    let pattern = |len: usize, seed: u8| -> Vec<u8> {
        // Half compressible: runs of one byte alternating with a counter.
        (0..len)
            .map(|i| {
                if (i / 512) % 2 == 0 {
                    seed
                } else {
                    (i % 251) as u8
                }
            })
            .collect()
    };
    for compression in [Compression::Snappy, Compression::None] {
        let dir = tempfile::tempdir().unwrap();
        let o = Options {
            compression,
            ..small()
        };
        let entries: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (pattern(1 << 20, b'a'), pattern(16 << 20, b'x')), // 1 MiB key, 16 MiB value
            (b"small".to_vec(), pattern(3 << 20, b'y')),
            (pattern(300 << 10, b'b'), b"v".to_vec()),
            (pattern(64 << 10, b'c'), Vec::new()),
        ];
        let check = |db: &Db, stage: &str| {
            for (k, v) in &entries {
                let got = db.get(k).unwrap();
                assert!(got.as_ref() == Some(v), "{stage}: {} B key", k.len());
            }
            let forward: Vec<_> = db.range::<&[u8]>(..).map(|r| r.unwrap()).collect();
            let mut want = entries.clone();
            want.sort();
            assert!(forward == want, "{stage}: forward scan");
            let backward: Vec<_> = db.range_rev::<&[u8]>(..).map(|r| r.unwrap()).collect();
            want.reverse();
            assert!(backward == want, "{stage}: backward scan");
        };
        {
            let db = Db::open(dir.path(), o.clone()).unwrap();
            for (k, v) in &entries {
                db.put_opt(k, v, &WriteOptions { sync: true }).unwrap();
            }
            check(&db, "memtable");
        }
        let db = Db::open(dir.path(), o.clone()).unwrap();
        check(&db, "after log replay");
        db.flush().unwrap();
        check(&db, "after a flush");
        db.compact_range(None, None).unwrap();
        check(&db, "after a compaction");
        db.verify().unwrap();
        drop(db);
        let db = Db::open(dir.path(), o).unwrap();
        check(&db, "after reopening");
    }
}

/// The smallest write buffer (4 KiB) switches memtables only when one is full: a fresh
/// memtable must not count as full (once, arena blocks larger than the buffer made every
/// write switch to another "full" memtable, forever).
#[test]
fn smallest_write_buffer_fills_each_memtable() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        create_if_missing: true,
        write_buffer_size: 4 << 10,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let n = 2_000;
    for i in 0..n {
        db.put(format!("key{i:06}"), [b'v'; 40]).unwrap();
    }
    let stats = db.property("strata.stats").unwrap();
    let flushes: u64 = stats
        .lines()
        .find_map(|l| l.strip_prefix("flushes: "))
        .unwrap()
        .parse()
        .unwrap();
    // About 70 bytes a node: some 58 entries per 4 KiB memtable, 34 flushes for 2,000.
    assert!((20..=60).contains(&flushes), "{flushes} flushes\n{stats}");
    for i in (0..n).step_by(97) {
        assert_eq!(db.get(format!("key{i:06}")).unwrap().unwrap(), [b'v'; 40]);
    }
}

/// `get_pinned` answers as `get` does, from the memtable, from tables, for deletions,
/// absent keys and snapshots; a view stays right after its block leaves the cache and
/// after the database is closed.
#[test]
fn get_pinned_answers_as_get_and_its_view_outlives_the_cache_and_the_db() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        block_cache: Some(strata::BlockCache::new(8 << 10)), // a few blocks
        ..small()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let value = |i: usize| format!("value-{i:05}-").repeat(5).into_bytes();
    for i in 0..2000 {
        db.put(format!("k{i:05}"), value(i)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.delete("k00007").unwrap();
    db.put("k00008", "in the memtable").unwrap();
    let snap = db.snapshot();
    db.put("k00009", "after the snapshot").unwrap();

    for i in 0..2000 {
        let k = format!("k{i:05}");
        let pinned = db.get_pinned(&k).unwrap().map(|p| p.to_vec());
        assert_eq!(pinned, db.get(&k).unwrap(), "{k}");
    }
    assert!(db.get_pinned("k00007").unwrap().is_none());
    assert!(db.get_pinned("absent").unwrap().is_none());
    assert_eq!(
        &*db.get_pinned("k00008").unwrap().unwrap(),
        b"in the memtable"
    );
    let at_snap = ReadOptions {
        snapshot: Some(snap),
        ..ReadOptions::default()
    };
    assert_eq!(
        db.get_pinned_opt("k00009", &at_snap)
            .unwrap()
            .unwrap()
            .to_vec(),
        value(9)
    );

    // A view from a table, then many other reads through the tiny cache, then close.
    let view = db.get_pinned("k01234").unwrap().unwrap();
    for i in (0..2000).step_by(3) {
        db.get(format!("k{i:05}")).unwrap();
    }
    drop(db);
    assert_eq!(view.to_vec(), value(1234));
}

#[test]
fn every_listed_property_answers_and_no_other_name_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            create_if_missing: true,
            ..Options::default()
        },
    )
    .unwrap();
    let names = Db::property_names();
    assert_eq!(names.len(), 14);
    for name in &names {
        assert!(db.property(name).is_some(), "{name}");
    }
    assert!(db.property("leveldb.num-files-at-level7").is_none());
    assert!(db.property("strata.nothing").is_none());
}
