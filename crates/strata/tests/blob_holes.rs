//! Holes in blob files (`Options::blob_punch_holes`, X6 in `docs/design.md`): the record
//! of an overwritten value gives its disk blocks back once no reader can reach it, and
//! never before. A pinned value, an iterator over an older version, an iterator holding a
//! memtable flushed since, and a checkpoint's hard-linked blob files all keep their bytes;
//! live values stay whole, before and after a reopen.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use common::{Rng, eventually};
use strata::{Db, DbIterator, Options};

const VALUE: usize = 24 << 10;

fn options() -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 64 << 10,
        max_file_size: 64 << 10,
        blob_threshold: 100,
        // No moving: a file with garbage stays, so its holes are what gives space back.
        blob_gc_ratio: 1.0,
        ..Default::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// A value of `VALUE` bytes that says which key and which round wrote it.
fn value(i: u64, round: u64) -> Vec<u8> {
    let mut v = format!("{i}:{round}:").into_bytes();
    v.resize(VALUE, b'a' + ((i + round) % 26) as u8);
    v
}

/// Per blob file the manifest names: (garbage refs, bytes freed by holes).
fn blob_files(db: &Db) -> BTreeMap<u64, (u64, u64)> {
    let text = db.property("strata.blob-files").unwrap();
    let mut files = BTreeMap::new();
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() == 15 && w[5] == "garbage" && w[11] == "freed" {
            let n = w[0].trim_end_matches(".blob").parse().unwrap();
            files.insert(n, (w[7].parse().unwrap(), w[14].parse().unwrap()));
        }
    }
    files
}

fn freed(db: &Db) -> u64 {
    blob_files(db).values().map(|(_, f)| f).sum()
}

/// How long a test waits for the hole thread.
const WAIT: Duration = Duration::from_secs(60);

/// Bytes the blob files of `dir` take on disk, and their lengths.
fn blob_space(dir: &Path) -> (u64, u64) {
    let (mut on_disk, mut len) = (0, 0);
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_name().to_string_lossy().ends_with(".blob") {
            let m = e.metadata().unwrap();
            on_disk += m.blocks() * 512;
            len += m.len();
        }
    }
    (on_disk, len)
}

/// Bytes of the holes inside the blob files of `dir` (within their lengths), as
/// `SEEK_DATA` and `SEEK_HOLE` find them.
fn holes_inside(dir: &Path) -> u64 {
    let mut holes = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".blob") {
            holes += holes_in(&path);
        }
    }
    holes
}

/// Bytes of the holes inside the file at `path` (0 if it is gone).
fn holes_in(path: &Path) -> u64 {
    use rustix::fs::{SeekFrom, seek};
    let Ok(file) = std::fs::File::open(path) else {
        return 0; // deleted meanwhile
    };
    let len = file.metadata().unwrap().len();
    let (mut holes, mut pos) = (0, 0);
    while pos < len {
        // No data after `pos` (ENXIO): the rest is a hole.
        let data = match seek(&file, SeekFrom::Data(pos)) {
            Ok(d) => d.min(len),
            Err(rustix::io::Errno::NXIO) => len,
            Err(e) => panic!("SEEK_DATA in {path:?}: {e}"),
        };
        holes += data - pos;
        if data >= len {
            break;
        }
        pos = match seek(&file, SeekFrom::Hole(data)) {
            Ok(h) => h.min(len),
            Err(e) => panic!("SEEK_HOLE in {path:?}: {e}"),
        };
    }
    holes
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for (k, v) in model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
        assert_eq!(db.get_pinned(k).unwrap().as_deref(), Some(v.as_slice()));
    }
    let all: Vec<_> = db.range::<&[u8]>(..).map(|r| r.unwrap()).collect();
    let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(all == want, "a scan differs from the model");
}

/// Writes round `round` of `keys` keys with a flush every `per_flush` values.
fn write_round(db: &Db, keys: &[u64], round: u64, model: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
    for (n, &i) in keys.iter().enumerate() {
        db.put(key(i), value(i, round)).unwrap();
        model.insert(key(i), value(i, round));
        if n % 3 == 2 {
            db.flush().unwrap();
        }
    }
}

/// Writes 60 keys, then overwrites a random half of them in each of `rounds` rounds, so
/// that blob files keep live values beside their garbage.
fn churn(db: &Db, rounds: u64, model: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
    let mut rng = Rng::new(7);
    let mut keys: Vec<u64> = (0..60).collect();
    write_round(db, &keys, 0, model);
    for round in 1..=rounds {
        for i in (1..keys.len()).rev() {
            keys.swap(i, rng.below(i as u64 + 1) as usize);
        }
        write_round(db, &keys[..30], round, model);
    }
}

#[test]
fn overwritten_values_give_their_blocks_back_and_live_values_stay_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let mut model = BTreeMap::new();
    churn(&db, 2, &mut model);
    eventually("holes free space", WAIT, || freed(&db) > 0);
    // The hole thread may take several passes (a pass frees what the compactions before
    // it made garbage): until then each file's last block, rounded up, can outweigh the
    // holes of the first pass.
    // Holes inside the files, found with SEEK_HOLE: the blocks a file takes on disk also
    // count what the filesystem allocated past its end for a file still open (ext4's
    // preallocation), which can outweigh the first holes.
    eventually("holes inside the blob files", WAIT, || {
        holes_inside(dir.path()) > 0
    });
    check(&db, &model);
    db.close().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    check(&db, &model);
    db.verify().unwrap();
}

#[test]
fn with_holes_off_no_block_is_freed() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        blob_punch_holes: false,
        ..options()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let mut model = BTreeMap::new();
    churn(&db, 4, &mut model);
    db.flush().unwrap();
    assert_eq!(freed(&db), 0);
    let (on_disk, len) = blob_space(dir.path());
    assert!(
        on_disk >= len,
        "blob files take {on_disk} bytes on disk for {len}"
    );
    assert_eq!(holes_inside(dir.path()), 0);
    check(&db, &model);
}

/// Flushes small values of keys 0 and 1 into a table of level 2, so that the next flush
/// of those keys stays above it (level 1) and later ones land on level 0, where a
/// compaction soon meets them.
fn anchor(db: &Db) {
    for i in 0..2 {
        db.put(key(i), b"small").unwrap();
    }
    db.flush().unwrap();
}

/// Writes key 0 (to be overwritten) beside key 1 (live throughout) and flushes them
/// into one blob file, which it returns.
fn first_file(db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>) -> u64 {
    anchor(db);
    for i in 0..2 {
        db.put(key(i), value(i, 0)).unwrap();
        model.insert(key(i), value(i, 0));
    }
    db.flush().unwrap();
    let files = blob_files(db);
    assert_eq!(files.len(), 1, "{files:?}");
    *files.keys().next().unwrap()
}

/// Garbage records waiting for their holes, and how many times the hole thread has
/// looked for holes to punch.
fn holes(db: &Db) -> (u64, u64) {
    let text = db.property("strata.blob-files").unwrap();
    let line = text.lines().find(|l| l.starts_with("holes:")).unwrap();
    let w: Vec<&str> = line.split_whitespace().collect();
    (w[1].parse().unwrap(), w[4].parse().unwrap())
}

/// Waits until the hole thread has looked for holes since now (or none wait), so that
/// any hole that may be punched has been. A pass begun before this call may end after
/// it: two more are asked for, by two background steps (writes of round `round`).
fn settle(db: &Db, round: u64, model: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
    let passes = holes(db).1;
    for extra in 0..2 {
        db.put(key(100 + extra), value(100, round)).unwrap();
        model.insert(key(100 + extra), value(100, round));
        db.flush().unwrap();
    }
    eventually("two more looks for holes, or none waiting", WAIT, || {
        let (waiting, looked) = holes(db);
        waiting == 0 || looked >= passes + 2
    });
}

/// Overwrites key 0 (with a flush each time, so that level 0 fills and compacts) until
/// the ref to its first value is dropped, counted as garbage of blob file `file`; then
/// waits until the hole thread has looked since, so that any hole that may be punched
/// has been.
fn drop_first_value(db: &Db, file: u64, model: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
    for round in 1..200 {
        if blob_files(db).get(&file).is_some_and(|(g, _)| *g > 0) {
            settle(db, round, model);
            return;
        }
        db.put(key(0), value(0, round)).unwrap();
        model.insert(key(0), value(0, round));
        db.flush().unwrap();
    }
    panic!(
        "the first value's ref was never dropped: {:?}\n{}",
        blob_files(db),
        db.property("strata.stats").unwrap()
    );
}

/// Records side by side whose garbage reaches the hole thread at different times end up
/// as one hole: the block two dead neighbours share is freed too, so a file whose
/// records all die is left with few extents for its unlink to give back.
#[test]
fn neighbours_that_die_apart_leave_no_block_between_them() {
    const DYING: u64 = 8;
    let dir = tempfile::tempdir().unwrap();
    // A write buffer that holds all of them: one WAL, so one blob file.
    let options = || Options {
        write_buffer_size: 1 << 20,
        ..options()
    };
    let db = Db::open(dir.path(), options()).unwrap();
    let mut model = BTreeMap::new();
    // As `anchor`, for keys 0..=DYING: their next flush stays on level 1, later ones
    // land on level 0 and compact into it.
    for i in 0..=DYING {
        db.put(key(i), b"small").unwrap();
    }
    db.flush().unwrap();
    // DYING records side by side in one file, then one that stays live (the file stays).
    for i in 0..=DYING {
        db.put(key(i), value(i, 0)).unwrap();
        model.insert(key(i), value(i, 0));
    }
    db.flush().unwrap();
    let files = blob_files(&db);
    assert_eq!(files.len(), 1, "{files:?}");
    let file = *files.keys().next().unwrap();
    let path = dir.path().join(format!("{file:06}.blob"));
    // One record at a time: overwritten until its ref is dropped, then its hole.
    let mut round = 1;
    for i in 0..DYING {
        while blob_files(&db)[&file].0 <= i {
            assert!(round < 1_000, "the ref of key {i} was never dropped");
            db.put(key(i), value(i, round)).unwrap();
            model.insert(key(i), value(i, round));
            db.flush().unwrap();
            round += 1;
        }
        settle(&db, round, &mut model);
    }
    // Holes inside each record alone would free 5 or 6 blocks of each 24 KiB record;
    // one hole over all of them frees every block but the run's first and last partial.
    let want = DYING * VALUE as u64 - 2 * 4096;
    eventually("one hole over the dead records", WAIT, || {
        holes_in(&path) >= want
    });
    check(&db, &model);
    db.close().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    check(&db, &model);
}

#[test]
fn a_pinned_value_keeps_its_bytes_after_its_ref_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let mut model = BTreeMap::new();
    let file = first_file(&db, &mut model);
    let pinned = db.get_pinned(key(0)).unwrap().unwrap();
    drop_first_value(&db, file, &mut model);
    assert!(
        *pinned == value(0, 0),
        "the pinned value changed under its holder"
    );
    assert_eq!(
        blob_files(&db)[&file].1,
        0,
        "a hole was punched under a view"
    );
    drop(pinned);
    // Its hole was waiting for the view only.
    db.put(key(101), value(101, 0)).unwrap();
    model.insert(key(101), value(101, 0));
    db.flush().unwrap();
    eventually("the hole after the view is gone", WAIT, || {
        blob_files(&db)[&file].1 > 0
    });
    check(&db, &model);
}

/// Every entry `it` sees, from the first.
fn read_all(mut it: DbIterator) -> BTreeMap<Vec<u8>, Vec<u8>> {
    it.seek_to_first();
    let mut seen = BTreeMap::new();
    while it.valid() {
        seen.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    seen
}

#[test]
fn an_iterator_over_an_older_version_reads_the_values_it_saw() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let mut model = BTreeMap::new();
    let file = first_file(&db, &mut model);
    let before = model.clone();
    // Not positioned yet: it holds its version and has read nothing.
    let it = db.raw_iterator();
    drop_first_value(&db, file, &mut model);
    assert_eq!(blob_files(&db)[&file].1, 0, "a hole under a live version");
    assert!(read_all(it) == before, "the iterator read other values");
    check(&db, &model);
}

#[test]
fn an_iterator_holding_a_flushed_memtable_reads_the_values_it_saw() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let mut model = BTreeMap::new();
    anchor(&db);
    for i in 0..2 {
        db.put(key(i), value(i, 0)).unwrap();
        model.insert(key(i), value(i, 0));
    }
    let before = model.clone();
    // Holds the memtable (the refs are in no table yet) and a version without them.
    let it = db.raw_iterator();
    db.flush().unwrap();
    let file = *blob_files(&db).keys().next().unwrap();
    drop_first_value(&db, file, &mut model);
    assert_eq!(blob_files(&db)[&file].1, 0, "a hole under a held memtable");
    assert!(read_all(it) == before, "the iterator read other values");
    check(&db, &model);
}

#[test]
fn a_checkpoints_linked_blob_files_are_never_punched() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, copy) = (tmp.path().join("db"), tmp.path().join("checkpoint"));
    let db = Db::open(&dir, options()).unwrap();
    let mut model = BTreeMap::new();
    let keys: Vec<u64> = (1000..1030).collect();
    write_round(&db, &keys, 0, &mut model);
    db.flush().unwrap();
    db.checkpoint(&copy).unwrap();
    let at_checkpoint = model.clone();
    let linked: Vec<u64> = blob_files(&db).keys().copied().collect();
    // Every other key of the checkpoint's overwritten: its files get garbage beside live
    // values, and the compactions of compact_range drop the old refs.
    let even: Vec<u64> = keys.iter().copied().step_by(2).collect();
    write_round(&db, &even, 1, &mut model);
    db.compact_range(None, None).unwrap();
    churn(&db, 3, &mut model);
    // A file written after the checkpoint, overwritten in turn, is punched.
    eventually("holes in files written since", WAIT, || freed(&db) > 0);
    let files = blob_files(&db);
    for n in &linked {
        if let Some((_, f)) = files.get(n) {
            assert_eq!(*f, 0, "blob file {n} is shared with the checkpoint");
        }
    }
    check(&db, &model);
    db.close().unwrap();
    let cp = Db::open(&copy, options()).unwrap();
    check(&cp, &at_checkpoint);
}
