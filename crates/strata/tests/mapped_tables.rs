//! Tables read through memory maps (`Options::mmap_reads`, on by default with the real
//! filesystem): the same answers as `pread`, and a table damaged or cut short while the
//! database was closed gives an error, never a crash or a wrong value. Each test runs with
//! Snappy blocks (read from the map and uncompressed) and with uncompressed blocks (read
//! in place, not cached).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use strata::{Compression, Db, Options};

const KEYS: usize = 3000;

fn key(i: usize) -> String {
    format!("key{i:06}")
}

fn value(i: usize) -> Vec<u8> {
    format!("value{i:06}-").repeat(8).into_bytes()
}

const COMPRESSIONS: [Compression; 2] = [Compression::Snappy, Compression::None];

fn options(mmap_reads: bool, compression: Compression) -> Options {
    Options {
        create_if_missing: true,
        mmap_reads,
        compression,
        write_buffer_size: 64 << 10,
        ..Options::default()
    }
}

/// A closed database whose keys all sit in tables; returns its tables, largest first.
fn with_tables(dir: &Path, compression: Compression) -> Vec<PathBuf> {
    let db = Db::open(dir, options(true, compression)).unwrap();
    for i in 0..KEYS {
        db.put(key(i), value(i)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    drop(db);
    let mut tables: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ldb"))
        .collect();
    tables.sort_by_key(|p| std::cmp::Reverse(std::fs::metadata(p).unwrap().len()));
    assert!(!tables.is_empty());
    tables
}

#[test]
fn mapped_and_read_tables_answer_alike() {
    for compression in COMPRESSIONS {
        mapped_and_read_tables_answer_alike_with(compression);
    }
}

fn mapped_and_read_tables_answer_alike_with(compression: Compression) {
    let dir = tempfile::tempdir().unwrap();
    with_tables(dir.path(), compression);
    let scan = |mmap: bool| {
        let db = Db::open(dir.path(), options(mmap, compression)).unwrap();
        for i in (0..KEYS).step_by(7) {
            assert_eq!(db.get(key(i)).unwrap(), Some(value(i)), "mmap {mmap}");
        }
        assert_eq!(db.get("absent").unwrap(), None);
        let mut it = db.raw_iterator();
        it.seek_to_last();
        let mut backwards = Vec::new();
        while it.valid() {
            backwards.push((it.key().to_vec(), it.value().to_vec()));
            it.prev();
        }
        it.status().unwrap();
        backwards
    };
    let mapped = scan(true);
    assert_eq!(mapped.len(), KEYS);
    assert_eq!(mapped, scan(false));
}

#[test]
fn a_table_damaged_or_cut_while_closed_is_an_error_never_a_crash() {
    type Damage = fn(&Path);
    let damages: [(&str, Damage); 4] = [
        ("cut to half", |p| cut(p, |n| n / 2)),
        ("cut to nothing", |p| cut(p, |_| 0)),
        ("one byte short", |p| cut(p, |n| n - 1)),
        ("bytes flipped in the middle", |p| {
            let mut b = std::fs::read(p).unwrap();
            let mid = b.len() / 3;
            for x in &mut b[mid..mid + 16] {
                *x ^= 0x5a;
            }
            std::fs::write(p, b).unwrap();
        }),
    ];
    for (compression, (what, damage)) in COMPRESSIONS
        .into_iter()
        .flat_map(|c| damages.iter().map(move |d| (c, d)))
    {
        let what = format!("{what} ({compression:?})");
        let dir = tempfile::tempdir().unwrap();
        let tables = with_tables(dir.path(), compression);
        damage(&tables[0]);
        let db = match Db::open(dir.path(), options(true, compression)) {
            Ok(db) => db,
            Err(_) => continue, // refusing to open is an error, as wanted
        };
        let mut errors = 0;
        for i in 0..KEYS {
            match db.get(key(i)) {
                Ok(v) => assert_eq!(v, Some(value(i)), "{what}: a wrong answer for {}", key(i)),
                Err(_) => errors += 1,
            }
        }
        assert!(errors > 0, "{what}: no read saw the damage");
        assert!(db.verify().is_err(), "{what}: verify found nothing");
    }
}

/// A value read in place from an uncompressed block stays readable after compaction has
/// deleted its table and the table cache has closed it: it keeps the map.
#[test]
fn values_read_in_place_outlive_their_table() {
    let dir = tempfile::tempdir().unwrap();
    let tables = with_tables(dir.path(), Compression::None);
    let db = Db::open(dir.path(), options(true, Compression::None)).unwrap();
    let pinned: Vec<_> = (0..KEYS)
        .step_by(97)
        .map(|i| (i, db.get_pinned(key(i)).unwrap().unwrap()))
        .collect();
    for i in 0..KEYS {
        db.put(key(i), b"new").unwrap();
    }
    db.compact_range(None, None).unwrap();
    for t in &tables {
        assert!(!t.exists(), "{} still there", t.display());
    }
    for (i, v) in &pinned {
        assert_eq!(&v[..], &value(*i)[..]);
    }
    assert_eq!(db.get(key(10)).unwrap().as_deref(), Some(&b"new"[..]));
}

fn cut(path: &Path, to: fn(u64) -> u64) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    let n = f.metadata().unwrap().len();
    f.set_len(to(n)).unwrap();
}

/// J2 and J3: a compaction whose inputs' blocks the cache holds puts its outputs' blocks
/// there (so reads after it find them), and the inputs' blocks leave the cache with their
/// files; a compaction of tables never read caches nothing. The values read afterwards
/// are the right ones.
#[test]
fn a_compaction_caches_its_outputs_when_readers_used_its_inputs() {
    const N: usize = 20_000;
    for read_first in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), options(true, Compression::Snappy)).unwrap();
        for i in 0..N {
            db.put(key(i), value(i)).unwrap();
        }
        db.compact_range(None, None).unwrap();
        if read_first {
            for i in 0..N {
                assert_eq!(db.get(key(i)).unwrap(), Some(value(i)));
            }
        }
        let read = db.block_cache().usage();
        assert_eq!(read > 0, read_first, "{read} bytes cached by the reads");
        // Every tenth key rewritten: the merge below rewrites every table.
        for i in (0..N).step_by(10) {
            db.put(key(i), b"again").unwrap();
        }
        db.compact_range(None, None).unwrap();
        let compacted = db.block_cache().usage();
        if read_first {
            // The outputs' blocks (about as many bytes as the inputs'), a few spare
            // buffers, and none of the inputs' (J3: twice as many bytes if they stayed).
            assert!(
                compacted > read / 2 && compacted < read * 3 / 2,
                "{compacted} bytes cached after the compaction; the reads had cached {read}"
            );
        } else {
            assert_eq!(
                compacted, 0,
                "a compaction of tables never read cached blocks"
            );
        }
        for i in 0..N {
            let want = if i % 10 == 0 {
                b"again".to_vec()
            } else {
                value(i)
            };
            assert_eq!(db.get(key(i)).unwrap(), Some(want), "key {i}");
        }
        if read_first {
            // Every block was there already (J2); without it, these reads cache them all.
            let grown = db.block_cache().usage().saturating_sub(compacted);
            assert!(
                grown < read / 10,
                "reads after the compaction cached {grown} more bytes ({read} before it)"
            );
        }
    }
}
