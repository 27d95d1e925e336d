//! LevelDB both ways: a database written by Debian's LevelDB 1.23 opens in Strata with
//! every key, in the same order both ways; a database written by Strata (Snappy, Bloom
//! filters, several levels) opens in LevelDB, which reads it, iterates it, writes more,
//! and Strata then reopens that. A database copied while Strata had it open (its
//! write-ahead log written through a memory map, so ending in preallocated zeros) opens in
//! LevelDB and in Strata with every write and no damage reported.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::Rng;
use leveldb_ffi::KeyValue;
use strata::{Db, Options, WriteBatch};

fn key(i: u64) -> Vec<u8> {
    format!("{:016}", i.wrapping_mul(0x9e37_79b9) % 1_000_000_007).into_bytes()
}

fn strata_all(db: &Db) -> Vec<KeyValue> {
    db.range::<&[u8]>(..).map(|r| r.unwrap()).collect()
}

fn strata_all_rev(db: &Db) -> Vec<KeyValue> {
    db.range_rev::<&[u8]>(..).map(|r| r.unwrap()).collect()
}

fn leveldb_rev(db: &leveldb_ffi::Db) -> Vec<KeyValue> {
    let mut it = db.iter();
    it.seek_to_last();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    out
}

#[test]
fn strata_opens_what_leveldb_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let n = 200_000u64;
    let (forward, reverse) = {
        let db = leveldb_ffi::Db::open(
            &dir,
            &leveldb_ffi::Options {
                write_buffer_size: 1 << 20,
                bloom_bits_per_key: Some(10),
                ..Default::default()
            },
        )
        .unwrap();
        let mut rng = Rng::new(11);
        for i in 0..n {
            let len = 50 + rng.below(100) as usize;
            db.put(&key(i), &rng.compressible(len), false).unwrap();
        }
        db.compact_range(None, None);
        for _ in 0..n / 4 {
            let len = rng.below(200) as usize;
            db.put(&key(rng.below(n)), &rng.compressible(len), false)
                .unwrap();
        }
        for _ in 0..n / 8 {
            db.delete(&key(rng.below(n)), false).unwrap();
        }
        let mut b = leveldb_ffi::WriteBatch::new();
        for i in 0..500 {
            b.put(&key(n + i), b"from a batch");
            b.delete(&key(i));
        }
        db.write(&mut b, true).unwrap();
        (db.collect_all().unwrap(), leveldb_rev(&db))
    };
    assert!(forward.len() > 150_000);
    let db = Db::open(&dir, Options::default()).unwrap();
    let ours = strata_all(&db);
    assert_eq!(ours.len(), forward.len());
    assert!(ours == forward, "forward iteration differs from LevelDB's");
    assert!(
        strata_all_rev(&db) == reverse,
        "reverse iteration differs from LevelDB's"
    );
    for (k, v) in forward.iter().step_by(101) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
    assert_eq!(db.get(key(3)).unwrap(), None, "deleted in the last batch");
}

#[test]
fn leveldb_opens_what_strata_wrote_and_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let options = || Options {
        create_if_missing: true,
        write_buffer_size: 256 << 10,
        max_file_size: 256 << 10,
        bloom_bits_per_key: Some(10),
        ..Options::default()
    };
    let n = 100_000u64;
    {
        let db = Db::open(&dir, options()).unwrap();
        let mut rng = Rng::new(12);
        for i in 0..n {
            let len = 50 + rng.below(100) as usize;
            db.put(key(i), rng.compressible(len)).unwrap();
        }
        db.compact_range(None, None).unwrap();
        for _ in 0..n / 5 {
            let len = rng.below(200) as usize;
            db.put(key(rng.below(n)), rng.compressible(len)).unwrap();
        }
        for _ in 0..n / 10 {
            db.delete(key(rng.below(n))).unwrap();
        }
        let mut b = WriteBatch::new();
        for i in 0..300 {
            b.put(key(n + i), "batch");
        }
        db.write(b).unwrap();
        let levels: Vec<usize> = (0..7)
            .map(|l| {
                db.property(&format!("leveldb.num-files-at-level{l}"))
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect();
        assert!(
            levels.iter().filter(|&&c| c > 0).count() >= 2,
            "data on several levels: {levels:?}"
        );
        db.close().unwrap();
    }
    let expected = {
        let db = Db::open(&dir, options()).unwrap();
        strata_all(&db)
    };
    // LevelDB reads it all, in the same order, and writes more.
    {
        let db = leveldb_ffi::Db::open(&dir, &leveldb_ffi::Options::default()).unwrap();
        let theirs = db.collect_all().unwrap();
        assert_eq!(theirs.len(), expected.len());
        assert!(
            theirs == expected,
            "LevelDB reads Strata's database differently"
        );
        let mut rev = expected.clone();
        rev.reverse();
        assert!(leveldb_rev(&db) == rev);
        for (k, v) in expected.iter().step_by(97) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
        }
        for i in 0..5000u64 {
            db.put(
                format!("leveldb-{i:06}").as_bytes(),
                b"written by LevelDB",
                false,
            )
            .unwrap();
        }
        db.delete(&expected[0].0, false).unwrap();
        db.compact_range(None, None);
    }
    // And Strata reads what LevelDB added.
    let db = Db::open(&dir, options()).unwrap();
    let all = strata_all(&db);
    assert_eq!(all.len(), expected.len() - 1 + 5000);
    assert_eq!(
        db.get("leveldb-004999").unwrap(),
        Some(b"written by LevelDB".to_vec())
    );
    assert_eq!(db.get(&expected[0].0).unwrap(), None);
    assert_eq!(
        db.get(&expected[1].0).unwrap().as_ref(),
        Some(&expected[1].1)
    );
}

/// A copy of the directory taken while the database is open: what a crash of the writer
/// leaves (the log ends in zeros written ahead of the writer).
fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn a_live_log_with_its_zero_tail_opens_in_leveldb_and_strata() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let options = Options {
        create_if_missing: true,
        write_buffer_size: 1 << 20,
        ..Options::default()
    };
    let db = Db::open(&dir, options.clone()).unwrap();
    let n = 3000u64;
    for i in 0..n {
        db.put(key(i), format!("value {i}")).unwrap();
    }
    let mut b = WriteBatch::new();
    b.delete(key(0));
    b.put("last", "batch");
    db.write(b).unwrap();
    let copies = [
        tmp.path().join("for-leveldb"),
        tmp.path().join("for-strata"),
    ];
    for c in &copies {
        copy_dir(&dir, c);
    }
    drop(db);
    let logs: Vec<Vec<u8>> = std::fs::read_dir(&copies[0])
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert!(
        logs.iter()
            .any(|l| l.last() == Some(&0) && l.len() % 4096 == 0),
        "the copied log ends in preallocated zeros"
    );
    let check = |get: &dyn Fn(&[u8]) -> Option<Vec<u8>>| {
        assert_eq!(get(&key(0)), None);
        for i in 1..n {
            assert_eq!(
                get(&key(i)),
                Some(format!("value {i}").into_bytes()),
                "key {i}"
            );
        }
        assert_eq!(get(b"last"), Some(b"batch".to_vec()));
    };
    let ldb = leveldb_ffi::Db::open(
        &copies[0],
        &leveldb_ffi::Options {
            paranoid_checks: true,
            ..leveldb_ffi::Options::default()
        },
    )
    .unwrap();
    check(&|k| ldb.get(k).unwrap());
    drop(ldb);
    let sdb = Db::open(
        &copies[1],
        Options {
            paranoid_checks: true,
            ..options
        },
    )
    .unwrap();
    check(&|k| sdb.get(k).unwrap());
    assert_eq!(
        sdb.property("strata.recovery").as_deref(),
        Some("nothing dropped\n")
    );
}
