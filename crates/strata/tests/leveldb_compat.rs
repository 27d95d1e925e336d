//! Proof against the real thing: Debian's LevelDB 1.23 (through its C API) writes
//! databases, and Strata's decoders must read every file exactly; tables and Bloom
//! filters that Strata builds from the same entries must be LevelDB's bytes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{Rng, read_leveldb_dir, read_log_records, table_name};
use leveldb_ffi::{Db, KeyValue, Options, WriteBatch};
use strata::comparator::{self, BytewiseComparator, InternalOrder};
use strata::env::{DiskEnv, Env};
use strata::filter::BloomPolicy;
use strata::iter::Cursor;
use strata::key;
use strata::sstable::{
    Block, BlockHandle, BlockReads, Compression, FilterBlockBuilder, Table, TableBuilder,
    TableOptions, format,
};

fn key_of(i: u64) -> Vec<u8> {
    // Mixed lengths exercise prefix compression and separator shortening.
    match i % 3 {
        0 => format!("{i:016}").into_bytes(),
        1 => format!("k{i}").into_bytes(),
        _ => format!("user/{:08}/item", i % 100_000).into_bytes(),
    }
}

/// Writes a database with LevelDB: puts, overwrites, deletions and batches over at least
/// `n` keys, with several memtable flushes. Returns what LevelDB then reports.
fn write_with_leveldb(dir: &Path, n: u64, compression: bool, seed: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    let options = Options {
        write_buffer_size: 512 << 10,
        compression,
        bloom_bits_per_key: Some(10),
        ..Options::default()
    };
    let db = Db::open(dir, &options).unwrap();
    let mut rng = Rng::new(seed);
    for i in 0..n {
        let len = 20 + rng.below(180) as usize;
        db.put(&key_of(i), &rng.compressible(len), false).unwrap();
    }
    for _ in 0..n / 5 {
        let i = rng.below(n);
        let len = rng.below(300) as usize;
        db.put(&key_of(i), &rng.compressible(len), false).unwrap();
    }
    for _ in 0..n / 10 {
        db.delete(&key_of(rng.below(n)), false).unwrap();
    }
    let mut batch = WriteBatch::new();
    for round in 0..20 {
        batch.clear();
        for _ in 0..50 {
            let i = rng.below(n + 1000);
            if rng.below(4) == 0 {
                batch.delete(&key_of(i));
            } else {
                batch.put(&key_of(i), format!("batch-{round}").as_bytes());
            }
        }
        db.write(&mut batch, round % 5 == 0).unwrap();
    }
    // A large value spans log blocks.
    db.put(b"big", &rng.bytes(100_000), false).unwrap();
    let expected = db.collect_all().unwrap();
    drop(db);
    expected
}

fn files_with_suffix(dir: &Path, suffix: &str) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

#[test]
fn strata_reads_every_file_leveldb_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let expected = write_with_leveldb(&dir, 120_000, true, 1);
    assert!(expected.len() > 90_000, "{} keys", expected.len());

    let contents = read_leveldb_dir(&dir);
    assert!(
        contents.from_tables > 100_000,
        "tables held {}",
        contents.from_tables
    );
    assert!(
        contents.from_logs > 0,
        "the last writes are still in the log"
    );
    assert!(contents.live_tables.len() > 1);
    let visible = contents.visible();
    assert_eq!(visible.len(), expected.len());
    assert!(
        visible == expected,
        "Strata's reconstruction differs from LevelDB's view"
    );

    // Every live table decodes with its keys in order. A table that the manifest does not
    // name can be the unfinished output of a compaction that close() interrupted (LevelDB
    // deletes it at the next open): it must give a clean error or read, never a panic.
    let env = DiskEnv::new();
    let live: std::collections::BTreeSet<u64> =
        contents.live_tables.iter().map(|&(_, n)| n).collect();
    for path in files_with_suffix(&dir, ".ldb") {
        let number: u64 = path.file_stem().unwrap().to_string_lossy().parse().unwrap();
        let size = env.file_size(&path).unwrap();
        let opened = Table::open(
            env.new_random_access(&path).unwrap(),
            &path.to_string_lossy(),
            size,
            &strata::sstable::TableFormat::leveldb(),
        );
        let t = match opened {
            Ok(t) => Arc::new(t),
            Err(e) => {
                assert!(!live.contains(&number), "live table fails: {e}");
                assert!(e.is_corruption(), "{e}");
                continue;
            }
        };
        let mut it = t.iter(BlockReads::CHECKED_CACHED);
        it.seek_to_first();
        let mut prev: Option<Vec<u8>> = None;
        while it.valid() {
            if let Some(p) = &prev {
                assert!(
                    comparator::compare_internal_keys(p, it.key()).is_lt(),
                    "T1 in {}",
                    path.display()
                );
            }
            prev = Some(it.key().to_vec());
            it.next();
        }
        it.status().unwrap();
    }
    for path in files_with_suffix(&dir, ".log") {
        for record in read_log_records(&path) {
            strata::WriteBatch::from_bytes(record).unwrap();
        }
    }
    let manifests: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("MANIFEST-")
        })
        .collect();
    assert!(!manifests.is_empty());
    for path in manifests {
        for record in read_log_records(&path) {
            let edit = strata::version::VersionEdit::decode(&record).unwrap();
            // Re-encoding gives LevelDB's bytes back.
            assert_eq!(edit.encode(), record, "{}", path.display());
        }
    }
}

/// Every (internal key, value) of a table, in order.
fn table_entries(path: &Path) -> (Arc<Table>, Vec<KeyValue>) {
    let env = DiskEnv::new();
    let size = env.file_size(path).unwrap();
    let t = Arc::new(
        Table::open(
            env.new_random_access(path).unwrap(),
            &path.to_string_lossy(),
            size,
            &strata::sstable::TableFormat::leveldb(),
        )
        .unwrap(),
    );
    let mut it = t.iter(BlockReads::CHECKED_CACHED);
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    (t, out)
}

fn rebuild(entries: &[(Vec<u8>, Vec<u8>)], compression: Compression) -> Vec<u8> {
    let options = TableOptions {
        block_size: 4096,
        restart_interval: 16,
        compression,
        filter: Some(strata::filter::Filter::Bloom(BloomPolicy::new(10))),
        order: Default::default(),
    };
    let mut b = TableBuilder::new(Box::new(Vec::new()), options);
    for (k, v) in entries {
        b.add(k, v).unwrap();
    }
    *b.finish().unwrap().0
}

#[test]
fn tables_strata_builds_are_leveldbs_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    write_with_leveldb(&dir, 100_000, false, 2);
    let (live, _, _) = common::replay_manifest(&dir);
    assert!(live.len() >= 2);
    let mut compared = 0;
    for &(_, number, _) in &live {
        let path = table_name(&dir, number);
        let (_, entries) = table_entries(&path);
        let original = std::fs::read(&path).unwrap();
        let ours = rebuild(&entries, Compression::None);
        assert_eq!(ours.len(), original.len(), "{} size", path.display());
        assert!(
            ours == original,
            "{}: Strata's table differs from LevelDB's",
            path.display()
        );
        compared += entries.len();
    }
    assert!(compared >= 100_000, "compared {compared} entries");
}

/// Index entries (separator key, handle) and each data block's uncompressed bytes.
fn layout(table: &Table) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    let mut idx = table.index_iter();
    idx.seek_to_first();
    while idx.valid() {
        let h = BlockHandle::decode_exact(idx.value()).unwrap();
        let block = table.read_block(h, BlockReads::CHECKED_CACHED).unwrap();
        out.push((idx.key().to_vec(), block.contents().to_vec()));
        idx.next();
    }
    idx.status().unwrap();
    out
}

#[test]
fn snappy_tables_have_leveldbs_layout() {
    // Snappy's compressed bytes are not specified: the snap crate and the C++ library
    // may pick different matches, so Snappy tables are compared block by block after
    // decompression (same index keys, same block contents) rather than byte for byte.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    write_with_leveldb(&dir, 30_000, true, 3);
    let (live, _, _) = common::replay_manifest(&dir);
    for &(_, number, _) in &live {
        let path = table_name(&dir, number);
        let (theirs, entries) = table_entries(&path);
        let ours_bytes = rebuild(&entries, Compression::Snappy);
        let size = ours_bytes.len() as u64;
        let ours = Table::open(
            Arc::new(ours_bytes),
            "ours",
            size,
            &strata::sstable::TableFormat::leveldb(),
        )
        .unwrap();
        assert_eq!(layout(&ours), layout(&theirs), "{}", path.display());
    }
}

#[test]
fn filter_blocks_match_leveldbs_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    write_with_leveldb(&dir, 50_000, true, 4);
    let (live, _, _) = common::replay_manifest(&dir);
    let env = DiskEnv::new();
    for &(_, number, size) in &live {
        let path = table_name(&dir, number);
        let file = env.new_random_access(&path).unwrap();
        let name = path.to_string_lossy().into_owned();
        let mut footer = [0u8; format::FOOTER_SIZE];
        file.read_at(size - format::FOOTER_SIZE as u64, &mut footer)
            .unwrap();
        let footer = format::Footer::decode(&footer).unwrap();
        // LevelDB's filter block, found through its metaindex.
        let meta = Arc::new(
            Block::new(
                format::read_block(file.as_ref(), &name, size, footer.metaindex, true).unwrap(),
            )
            .unwrap(),
        );
        let mut m = meta.iter(BytewiseComparator);
        m.seek(b"filter.leveldb.BuiltinBloomFilter2");
        assert!(m.valid());
        let filter_handle = BlockHandle::decode_exact(m.value()).unwrap();
        let theirs = format::read_block(file.as_ref(), &name, size, filter_handle, true).unwrap();
        // Ours, from the same user keys and data-block offsets.
        let index = Arc::new(
            Block::new(format::read_block(file.as_ref(), &name, size, footer.index, true).unwrap())
                .unwrap(),
        );
        let mut builder =
            FilterBlockBuilder::new(strata::filter::Filter::Bloom(BloomPolicy::new(10)));
        let table = Table::open(Arc::clone(&file), &name, size, &Default::default()).unwrap();
        let mut idx = index.iter(InternalOrder::default());
        idx.seek_to_first();
        let mut end_of_blocks = 0;
        while idx.valid() {
            let h = BlockHandle::decode_exact(idx.value()).unwrap();
            builder.start_block(h.offset);
            end_of_blocks = h.offset + h.size + format::BLOCK_TRAILER_SIZE as u64;
            let block = table.read_block(h, BlockReads::CHECKED_CACHED).unwrap();
            let mut d = block.iter(InternalOrder::default());
            d.seek_to_first();
            while d.valid() {
                builder.add_key(key::user_key(d.key()));
                d.next();
            }
            idx.next();
        }
        // As the table builder does after its last data block: windows up to the end of
        // the data get their (possibly empty) filters.
        builder.start_block(end_of_blocks);
        assert!(
            builder.finish() == theirs.as_slice(),
            "{}: filter bytes differ",
            path.display()
        );
    }
}

/// Run as a child process by `lock_excludes_leveldb_and_back`: opens the database named
/// by `STRATA_LOCK_CHILD` with LevelDB, says so, and holds it until stdin closes.
#[test]
fn lock_child() {
    let Ok(dir) = std::env::var("STRATA_LOCK_CHILD") else {
        return;
    };
    let db = Db::open(Path::new(&dir), &Options::default());
    println!("CHILD-OPEN {}", db.is_ok());
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
}

#[test]
fn lock_excludes_leveldb_and_back() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use strata::env::{DiskEnv, Env};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    drop(Db::open(&dir, &Options::default()).unwrap());
    // LevelDB in another process holds the database: Strata's lock fails, then succeeds
    // once that process has let go.
    let spawn = || {
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "lock_child", "--nocapture", "--test-threads=1"])
            .env("STRATA_LOCK_CHILD", &dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // The child's harness complains on stderr once we stop reading its stdout.
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let wait_open = |child: &mut std::process::Child| -> bool {
        let out = child.stdout.take().unwrap();
        for line in BufReader::new(out).lines() {
            let line = line.unwrap();
            // libtest prints "test lock_child ... " on the same line first.
            if let Some((_, rest)) = line.split_once("CHILD-OPEN ") {
                return rest.trim() == "true";
            }
        }
        panic!("child ended without opening");
    };
    let mut child = spawn();
    assert!(wait_open(&mut child));
    let err = DiskEnv::new().lock_file(&dir.join("LOCK")).unwrap_err();
    assert!(err.to_string().contains("already held"), "{err}");
    drop(child.stdin.take());
    child.wait().unwrap();
    // Strata holds it: LevelDB in another process cannot open it.
    let lock = DiskEnv::new().lock_file(&dir.join("LOCK")).unwrap();
    let mut child = spawn();
    assert!(
        !wait_open(&mut child),
        "LevelDB opened a database Strata holds"
    );
    drop(child.stdin.take());
    child.wait().unwrap();
    drop(lock);
    let mut child = spawn();
    assert!(wait_open(&mut child));
    drop(child.stdin.take());
    child.wait().unwrap();
}
