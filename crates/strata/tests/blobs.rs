//! Value separation (`Options::blob_threshold`): values at or above the threshold live in
//! blob files. Reads, iterators both ways, snapshots, overwrites, deletes, flushes,
//! compactions, reopening and repair give the same answers as a model; a database with
//! blob files is refused by Debian's LevelDB; a WAL record whose blob record never
//! reached the disk ends the replay (point in time); damage is an error, never a wrong
//! value; the blob files of overwritten values are deleted once every ref is gone.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::Rng;
use strata::{Db, Options, ReadOptions, WriteBatch};

const THRESHOLD: usize = 100;

fn options() -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 64 << 10,
        max_file_size: 64 << 10,
        blob_threshold: THRESHOLD,
        ..Default::default()
    }
}

fn blob_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".blob"))
        .collect();
    v.sort();
    v
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// A value of a size class: small (inline), at the threshold, or large.
fn value(rng: &mut Rng, i: u64) -> Vec<u8> {
    let len = match rng.below(4) {
        0 => rng.below(THRESHOLD as u64) as usize,
        1 => THRESHOLD,
        2 => THRESHOLD + rng.below(1000) as usize,
        _ => 20_000 + rng.below(50_000) as usize,
    };
    let mut v = format!("{i}:").into_bytes();
    v.resize(len.max(v.len()), b'a' + (i % 26) as u8);
    v
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for (k, v) in model {
        assert_eq!(
            db.get(k).unwrap().as_ref(),
            Some(v),
            "get {:?}",
            k.escape_ascii().to_string()
        );
        assert_eq!(db.get_pinned(k).unwrap().as_deref(), Some(v.as_slice()));
    }
    let forward: Vec<_> = db.range::<&[u8]>(..).map(|r| r.unwrap()).collect();
    let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(forward.len(), want.len());
    assert!(forward == want, "forward scan differs");
    let mut backward: Vec<_> = db.range_rev::<&[u8]>(..).map(|r| r.unwrap()).collect();
    backward.reverse();
    assert!(backward == want, "backward scan differs");
}

#[test]
fn reads_iterators_snapshots_and_reopen_match_a_model() {
    reads_iterators_snapshots_and_reopen_with(options());
}

#[test]
fn compressed_blob_values_match_a_model_too() {
    reads_iterators_snapshots_and_reopen_with(Options {
        blob_compression: true,
        ..options()
    });
}

fn reads_iterators_snapshots_and_reopen_with(options: Options) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mut model = BTreeMap::new();
    let mut rng = Rng::new(7);
    let compressed = options.blob_compression;
    let options = || Options {
        blob_compression: compressed,
        ..options.clone()
    };
    let db = Db::open(&dir, options()).unwrap();
    let mut frozen = None;
    for round in 0..6u64 {
        for _ in 0..400 {
            let i = rng.below(300);
            match rng.below(10) {
                0 => {
                    db.delete(key(i)).unwrap();
                    model.remove(&key(i));
                }
                1 => {
                    let mut b = WriteBatch::new();
                    for j in 0..5 {
                        let v = value(&mut rng, i + j);
                        b.put(key(i + j), &v);
                        model.insert(key(i + j), v);
                    }
                    db.write(b).unwrap();
                }
                _ => {
                    let v = value(&mut rng, i);
                    db.put(key(i), &v).unwrap();
                    model.insert(key(i), v);
                }
            }
        }
        if round == 2 {
            frozen = Some((db.snapshot(), model.clone()));
        }
        check(&db, &model);
        if round % 2 == 1 {
            db.compact_range(None, None).unwrap();
            check(&db, &model);
        }
    }
    let (snap, old) = frozen.unwrap();
    let at = ReadOptions {
        snapshot: Some(snap),
        ..Default::default()
    };
    for (k, v) in &old {
        assert_eq!(db.get_opt(k, &at).unwrap().as_ref(), Some(v));
    }
    let mut it = db.raw_iterator_opt(&at);
    it.seek_to_last();
    let mut seen = 0;
    while it.valid() {
        assert_eq!(old.get(it.key()).map(Vec::as_slice), Some(it.value()));
        seen += 1;
        it.prev();
    }
    it.status().unwrap();
    assert_eq!(seen, old.len());
    drop(it);
    drop(at);
    assert!(!blob_files(&dir).is_empty());
    db.close().unwrap();
    // Reopen: the WAL's refs replay; then again after a flush.
    let db = Db::open(&dir, options()).unwrap();
    check(&db, &model);
    db.flush().unwrap();
    drop(db);
    let db = Db::open(&dir, options()).unwrap();
    check(&db, &model);
    let report = db.verify().unwrap();
    assert!(report.entries > 0, "{report:?}");
    assert!(report.blob_values > 0, "{report:?}");
    assert!(report.unreferenced.is_empty(), "{report:?}");
    // Compression switched: refs say how their values are stored, so both kinds read,
    // and a compaction moves both (a ratio of 0 collects every file, clean ones too).
    drop(db);
    let db = Db::open(
        &dir,
        Options {
            blob_compression: !compressed,
            blob_gc_ratio: 0.0,
            ..options()
        },
    )
    .unwrap();
    for i in 0..50 {
        let v = value(&mut rng, i);
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    check(&db, &model);
    db.compact_range(None, None).unwrap();
    check(&db, &model);
    // The option off: the refs written still read; new values are inline.
    drop(db);
    let db = Db::open(
        &dir,
        Options {
            blob_threshold: 0,
            ..options()
        },
    )
    .unwrap();
    check(&db, &model);
    db.put(key(1), vec![7u8; 10_000]).unwrap();
    model.insert(key(1), vec![7u8; 10_000]);
    check(&db, &model);
}

#[test]
fn leveldb_refuses_a_database_with_value_separation() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    // Refs only in the WAL so far: the manifest already says so.
    let db = Db::open(&dir, options()).unwrap();
    db.put(b"k", vec![1u8; 1000]).unwrap();
    db.close().unwrap();
    let refused = leveldb_ffi::Db::open(&dir, &leveldb_ffi::Options::default());
    let Err(e) = refused else {
        panic!("LevelDB must refuse it")
    };
    assert!(e.contains("tag") || e.contains("orruption"), "{e}");
    // Still refused once tables hold refs.
    let db = Db::open(&dir, options()).unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(vec![1u8; 1000]));
    db.close().unwrap();
    assert!(leveldb_ffi::Db::open(&dir, &leveldb_ffi::Options::default()).is_err());
}

#[test]
fn a_wal_record_whose_blob_record_is_lost_ends_the_replay() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, options()).unwrap();
    for i in 0..10u64 {
        db.put(key(i), vec![i as u8; 1000]).unwrap();
    }
    db.close().unwrap();
    // As if the power went before the blob file's last pages reached the disk while the
    // WAL's did (neither was synced).
    let blobs = blob_files(&dir);
    assert_eq!(blobs.len(), 1, "{blobs:?}");
    let path = dir.join(&blobs[0]);
    let len = std::fs::metadata(&path).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len - 1500).unwrap(); // the last record and part of the one before
    drop(f);
    let db = Db::open(&dir, options()).unwrap();
    for i in 0..8u64 {
        assert_eq!(
            db.get(key(i)).unwrap(),
            Some(vec![i as u8; 1000]),
            "key {i}"
        );
    }
    for i in 8..10u64 {
        assert_eq!(db.get(key(i)).unwrap(), None, "key {i}");
    }
    let notes = db.property("strata.recovery").unwrap_or_default();
    assert!(notes.contains("blob record"), "{notes}");
    // Writes go on, and survive.
    db.put(key(9), vec![9u8; 2000]).unwrap();
    drop(db);
    let db = Db::open(&dir, options()).unwrap();
    assert_eq!(db.get(key(9)).unwrap(), Some(vec![9u8; 2000]));
}

/// Compression is real (the files shrink), and the manifest says refs to compressed values
/// may exist (tag 20 = 2), so a Strata older than them refuses the database.
#[test]
fn compression_shrinks_blob_files_and_the_manifest_says_so() {
    let sizes = [false, true].map(|compress| {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("db");
        let db = Db::open(
            &dir,
            Options {
                blob_compression: compress,
                ..options()
            },
        )
        .unwrap();
        for i in 0..50u64 {
            db.put(key(i), format!("{i}:").repeat(2000)).unwrap();
        }
        let flag = db.property("strata.blob-files").unwrap();
        let want = if compress {
            "value separation: on, values may be compressed"
        } else {
            "value separation: on"
        };
        assert_eq!(flag.lines().next(), Some(want));
        db.close().unwrap();
        let bytes = dir_bytes(&dir, ".blob");
        // Compression switched off again: the flag stays (compressed refs remain).
        let db = Db::open(&dir, options()).unwrap();
        let flag = db.property("strata.blob-files").unwrap();
        assert_eq!(flag.lines().next(), Some(want));
        db.close().unwrap();
        bytes
    });
    assert!(sizes[1] * 4 < sizes[0], "{sizes:?}");
}

#[test]
fn a_damaged_blob_is_an_error_never_a_wrong_value() {
    a_damaged_blob_is_an_error_with(options());
}

#[test]
fn a_damaged_compressed_blob_is_an_error_never_a_wrong_value() {
    a_damaged_blob_is_an_error_with(Options {
        blob_compression: true,
        ..options()
    });
}

fn a_damaged_blob_is_an_error_with(options: Options) {
    let options = || options.clone();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, options()).unwrap();
    for i in 0..20u64 {
        db.put(key(i), vec![b'v'; 500]).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let blobs = blob_files(&dir);
    let path = dir.join(&blobs[0]);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() - 10; // inside the last value (compressed, it is short)
    bytes[at] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let db = Db::open(&dir, options()).unwrap();
    for i in 0..19u64 {
        assert_eq!(db.get(key(i)).unwrap(), Some(vec![b'v'; 500]));
    }
    let e = db.get(key(19)).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    assert!(db.verify().unwrap_err().is_corruption());
    assert!(e.to_string().contains(".blob"), "{e}");
    let mut it = db.raw_iterator();
    it.seek(&key(19));
    assert!(!it.valid());
    assert!(it.status().unwrap_err().is_corruption());
    // A scan reads the file it keeps after its first value, asking ahead for each next
    // one: the damaged value is still found, at its turn.
    let mut it = db.raw_iterator();
    it.seek_to_first();
    let mut shown = 0;
    while it.valid() {
        assert_eq!(it.value(), &[b'v'; 500][..]);
        shown += 1;
        it.next();
    }
    assert_eq!(shown, 19);
    assert!(it.status().unwrap_err().is_corruption());
}

#[test]
fn blob_files_whose_values_are_all_overwritten_are_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, options()).unwrap();
    for i in 0..50u64 {
        db.put(key(i), vec![1u8; 1000]).unwrap();
    }
    db.flush().unwrap();
    // 50 KB of values: one blob file (the write buffer is 64 KB, values included).
    let first = blob_files(&dir);
    assert_eq!(first.len(), 1, "{first:?}");
    for i in 0..50u64 {
        db.put(key(i), vec![2u8; 1000]).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let now = blob_files(&dir);
    assert!(!now.contains(&first[0]), "{now:?}");
    for i in 0..50u64 {
        assert_eq!(db.get(key(i)).unwrap(), Some(vec![2u8; 1000]));
    }
    // Deleted keys' values go too.
    for i in 0..50u64 {
        db.delete(key(i)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let db = Db::open(&dir, options()).unwrap();
    db.flush().unwrap();
    drop(db);
    assert!(blob_files(&dir).len() <= 1, "{:?}", blob_files(&dir));
}

#[test]
fn repair_keeps_the_values_in_blob_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, options()).unwrap();
    let mut model = BTreeMap::new();
    let mut rng = Rng::new(3);
    for i in 0..200u64 {
        let v = value(&mut rng, i);
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
        if i == 120 {
            db.flush().unwrap();
        }
    }
    db.close().unwrap();
    std::fs::remove_file(dir.join("CURRENT")).unwrap();
    Db::repair(&dir, options()).unwrap();
    let db = Db::open(&dir, options()).unwrap();
    check(&db, &model);
}

fn dir_bytes(dir: &Path, suffix: &str) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(suffix))
        // A file deleted since the listing (the background thread removes dead ones)
        // takes no space.
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

#[test]
fn sustained_overwrites_keep_blob_space_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let options = options();
    let db = Db::open(&dir, options.clone()).unwrap();
    let (keys, size) = (200u64, 2000usize);
    let live = keys * size as u64;
    let mut peak = 0f64;
    for round in 0..30u64 {
        for i in 0..keys {
            db.put(key(i), vec![round as u8; size]).unwrap();
        }
        let amp = dir_bytes(&dir, ".blob") as f64 / live as f64;
        peak = peak.max(amp);
        if round >= 10 {
            assert!(
                amp < 4.0,
                "round {round}: blob files hold {amp:.2}x the live values"
            );
        }
    }
    for i in 0..keys {
        assert_eq!(db.get(key(i)).unwrap(), Some(vec![29u8; size]));
    }
    db.compact_range(None, None).unwrap();
    let amp = dir_bytes(&dir, ".blob") as f64 / live as f64;
    eprintln!("blob space: peak {peak:.2}x live, {amp:.2}x after a full compaction");
    assert!(amp < 2.0, "after a full compaction: {amp:.2}x");
    for i in 0..keys {
        assert_eq!(db.get(key(i)).unwrap(), Some(vec![29u8; size]));
    }
}

#[test]
fn threshold_off_and_a_full_compaction_give_back_a_leveldb_database() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mut model = BTreeMap::new();
    let mut rng = Rng::new(5);
    let db = Db::open(&dir, options()).unwrap();
    for i in 0..400u64 {
        let v = value(&mut rng, i);
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
        if i % 100 == 99 {
            db.compact_range(None, None).unwrap();
        }
    }
    db.close().unwrap();
    assert!(leveldb_ffi::Db::open(&dir, &leveldb_ffi::Options::default()).is_err());
    let plain = Options {
        blob_threshold: 0,
        ..options()
    };
    let db = Db::open(&dir, plain.clone()).unwrap();
    check(&db, &model);
    db.compact_range(None, None).unwrap();
    check(&db, &model);
    let blobs = db.property("strata.blob-files").unwrap();
    let tables = db.property("leveldb.sstables").unwrap();
    db.close().unwrap();
    assert!(
        blob_files(&dir).is_empty(),
        "{:?}\n{blobs}\n{tables}",
        blob_files(&dir)
    );
    let ldb = leveldb_ffi::Db::open(&dir, &leveldb_ffi::Options::default()).unwrap();
    let all = ldb.collect_all().unwrap();
    let want: Vec<_> = model.into_iter().collect();
    assert!(all == want, "LevelDB reads other values");
}

#[test]
fn more_blob_files_than_open_file_slots_all_read() {
    // max_open_files 20: 10 kept aside, 4 slots for blob files; values spread over many
    // more blob files (no garbage collection, so none is rewritten away).
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        max_open_files: 20,
        write_buffer_size: 16 << 10,
        blob_gc_ratio: 1.0,
        ..options()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..200u64 {
        let v = vec![b'a' + (i % 26) as u8; 3_000];
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    db.flush().unwrap();
    assert!(
        blob_files(dir.path()).len() > 8,
        "the test needs more blob files than slots: {:?}",
        blob_files(dir.path())
    );
    for _ in 0..2 {
        check(&db, &model);
    }
}

/// `compact_range` moves no value out of a blob file whose garbage is below the ratio:
/// the files stay as they are, and every value reads the same (the compaction passed
/// every ref through, reopening finds them all).
#[test]
fn compact_range_leaves_values_of_clean_blob_files_where_they_are() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, options()).unwrap();
    for batch in 0..2u64 {
        for i in batch * 40..(batch + 1) * 40 {
            db.put(key(i), vec![i as u8; 1000]).unwrap();
        }
        db.flush().unwrap();
    }
    let before = blob_files(&dir);
    assert_eq!(before.len(), 2, "{before:?}");
    db.compact_range(None, None).unwrap();
    assert_eq!(blob_files(&dir), before, "compact_range moved clean values");
    db.close().unwrap();
    let db = Db::open(&dir, options()).unwrap();
    for i in 0..80u64 {
        assert_eq!(db.get(key(i)).unwrap(), Some(vec![i as u8; 1000]));
    }
    db.verify().unwrap();
}

/// Garbage collection cuts the blob files it writes at `blob_file_size`, a setting of its
/// own (the write buffer sizes memtables only).
#[test]
fn garbage_collection_cuts_its_blob_files_at_blob_file_size() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let options = Options {
        blob_file_size: 8 << 10,
        blob_gc_ratio: 0.0, // every blob file's live values move at a compaction
        ..options()
    };
    let db = Db::open(&dir, options).unwrap();
    let (keys, size) = (100u64, 2000usize);
    for round in 0..2u8 {
        for i in 0..keys {
            db.put(key(i), vec![round; size]).unwrap();
        }
    }
    db.compact_range(None, None).unwrap();
    let sizes: Vec<u64> = blob_files(&dir)
        .iter()
        .map(|n| std::fs::metadata(dir.join(n)).unwrap().len())
        .collect();
    // About 200 KB of live values in files of at most 8 KiB and one record more.
    let over: Vec<&u64> = sizes
        .iter()
        .filter(|s| **s > (8 << 10) + 2 * size as u64)
        .collect();
    assert!(over.is_empty(), "blob files over the size: {sizes:?}");
    assert!(sizes.len() >= 20, "{sizes:?}");
    for i in 0..keys {
        assert_eq!(db.get(key(i)).unwrap(), Some(vec![1u8; size]));
    }
}
