//! The properties Strata's fuzz targets check, one function per target. Each takes any
//! bytes and panics if the property fails; a panic is the finding.
//!
//! The cargo-fuzz targets in `fuzz/` (nightly, sanitizers) call these, and so does this
//! crate's test `tests/replay.rs`, which runs every input of the minimized corpus in
//! `fuzz/replay/<target>/` and the seeds in `fuzz/seeds/<target>/` on stable Rust in
//! `make test`: what the fuzzers found interesting once stays checked. `TARGETS` names
//! them all.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "these functions exist to panic when a property fails"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata::coding::{Decoder, decode_varint32, decode_varint64, put_varint32, put_varint64};
use strata::comparator::InternalOrder;
use strata::env::{Env, MemEnv};
use strata::iter::Cursor;
use strata::log::{Checksums, LogReader};
use strata::sstable::{Block, BlockReads, FilterBlockReader, Table};
use strata::version::VersionEdit;
use strata::{Db, Options, WriteBatch};

/// A target's check: panics if the property fails on these bytes.
pub type Check = fn(&[u8]);

/// Every target: its name (as in `fuzz/Cargo.toml`) and its check.
pub const TARGETS: &[(&str, Check)] = &[
    ("block", block),
    ("table", table),
    ("log_reader", log_reader),
    ("write_batch", write_batch),
    ("version_edit", version_edit),
    ("coding", coding),
    ("filter_block", filter_block),
    ("open_db", open_db),
    ("db_ops", db_ops),
];

/// Any bytes as a block: decoding, scanning both ways and seeking do not panic, and scans
/// end.
pub fn block(data: &[u8]) {
    let limit = data.len() + 1;
    let Ok(block) = Block::new(data.to_vec()) else {
        return;
    };
    let block = Arc::new(block);
    let mut it = block.iter(InternalOrder::default());
    it.seek_to_first();
    let mut steps = 0;
    while it.valid() {
        it.next();
        steps += 1;
        assert!(steps <= limit);
    }
    it.seek_to_last();
    steps = 0;
    while it.valid() {
        it.prev();
        steps += 1;
        assert!(steps <= limit);
    }
    for target in [
        &data[..data.len().min(12)],
        b"",
        b"\xff\xff\xff\xff\xff\xff\xff\xff\xff",
    ] {
        it.seek(target);
    }
    let _ = it.status();
}

/// Any bytes as a table file: the footer, index, metaindex and filter are decoded at
/// open; a full scan and point lookups do not panic.
pub fn table(data: &[u8]) {
    let size = data.len() as u64;
    let Ok(table) = Table::open(
        Arc::new(data.to_vec()),
        "fuzz.ldb",
        size,
        &strata::sstable::TableFormat::leveldb(),
    ) else {
        return;
    };
    let table = Arc::new(table);
    for verify_checksums in [true, false] {
        let reads = BlockReads {
            verify_checksums,
            fill_cache: true,
        };
        let mut it = table.iter(reads);
        it.seek_to_first();
        let mut keys = Vec::new();
        while it.valid() && keys.len() < 100_000 {
            keys.push(it.key().to_vec());
            it.next();
        }
        let _ = it.status();
        for k in keys.iter().take(16) {
            let _ = table.get(k, reads);
        }
    }
}

/// Any bytes as a log file: reading every record, with and without checksums, does not
/// panic, and ends.
pub fn log_reader(data: &[u8]) {
    for checksums in [Checksums::Verify, Checksums::Skip] {
        let mut r = LogReader::new(Box::new(std::io::Cursor::new(data.to_vec())), checksums);
        let mut rec = Vec::new();
        let mut n = 0;
        while let Ok(true) = r.read_record(&mut rec) {
            n += 1;
            assert!(n <= data.len());
        }
        let _ = r.take_dropped();
    }
}

/// Any bytes as a write batch: a batch that decodes iterates to exactly its count.
pub fn write_batch(data: &[u8]) {
    if let Ok(batch) = WriteBatch::from_bytes(data.to_vec()) {
        let ops: Vec<_> = batch
            .iter()
            .collect::<Result<_, _>>()
            .expect("a validated batch iterates");
        assert_eq!(ops.len(), batch.len() as usize);
    }
}

/// Any bytes as a manifest record: an edit that decodes survives encode and decode.
pub fn version_edit(data: &[u8]) {
    if let Ok(edit) = VersionEdit::decode(data) {
        let again = VersionEdit::decode(&edit.encode()).expect("re-encoded edit decodes");
        assert_eq!(again, edit);
    }
}

/// Any bytes through the varint and fixed-width decoders: whatever decodes re-encodes to
/// the same value, and no decoder reads past its input.
pub fn coding(data: &[u8]) {
    if let Some((v, n)) = decode_varint64(data) {
        assert!(n <= data.len() && n <= 10);
        let mut out = Vec::new();
        put_varint64(&mut out, v);
        assert_eq!(decode_varint64(&out), Some((v, out.len())));
    }
    if let Some((v, n)) = decode_varint32(data) {
        assert!(n <= data.len() && n <= 5);
        let mut out = Vec::new();
        put_varint32(&mut out, v);
        assert_eq!(decode_varint32(&out), Some((v, out.len())));
    }
    // A decoder walking the input by the input's own instructions never panics.
    let mut d = Decoder::new(data);
    while !d.is_empty() {
        let step = match d.u8("op") {
            Ok(b) => b % 5,
            Err(_) => break,
        };
        let ok = match step {
            0 => d.varint32("v32").is_ok(),
            1 => d.varint64("v64").is_ok(),
            2 => d.fixed32("f32").is_ok(),
            3 => d.fixed64("f64").is_ok(),
            _ => d.length_prefixed("slice").is_ok(),
        };
        if !ok {
            break;
        }
    }
}

/// Any bytes as a filter block: probing it never panics, whatever the offsets and keys.
pub fn filter_block(data: &[u8]) {
    let split = data.first().map_or(0, |b| *b as usize).min(data.len());
    let (probe, block) = data.split_at(split);
    let reader = FilterBlockReader::new(block.to_vec(), strata::filter::Filter::builtin());
    for (i, chunk) in probe.chunks(4).enumerate() {
        let offset = (i as u64) << (chunk.first().copied().unwrap_or(0) % 40);
        let _ = reader.key_may_match(offset, chunk);
    }
}

/// Any bytes as a database directory (CURRENT, a manifest, a log): opening it and reading
/// everything returns data or an error, never a panic. CURRENT parsing, manifest replay
/// and WAL recovery together. Layout: `[len][CURRENT][len: 2 bytes][manifest][log...]`.
pub fn open_db(data: &[u8]) {
    let mut rest = data;
    let take = |n: usize, rest: &mut &[u8]| {
        let n = n.min(rest.len());
        let (a, b) = rest.split_at(n);
        *rest = b;
        a.to_vec()
    };
    let n = take(1, &mut rest).first().copied().unwrap_or(0) as usize;
    let current = take(n, &mut rest);
    let len = take(2, &mut rest);
    let m = len.iter().fold(0usize, |a, b| a << 8 | *b as usize);
    let manifest = take(m, &mut rest);
    let log = rest.to_vec();
    let env = MemEnv::new();
    let dir = Path::new("/db");
    env.create_dir_all(dir).unwrap();
    env.set_contents(&dir.join("CURRENT"), current);
    env.set_contents(&dir.join("MANIFEST-000002"), manifest);
    env.set_contents(&dir.join("000003.log"), log);
    let options = Options {
        env: Arc::new(env.clone()),
        ..Options::default()
    };
    if let Ok(db) = Db::open(dir, options) {
        for item in db.range::<&[u8]>(..) {
            if item.is_err() {
                break;
            }
        }
        let _ = db.verify();
    }
}

fn db_ops_options(env: &MemEnv) -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 4 << 10,
        max_file_size: 4 << 10,
        block_size: 128,
        env: Arc::new(env.clone()),
        ..Options::default()
    }
}

/// Any bytes as a sequence of database operations on a 4 KiB memtable, three bytes each:
/// puts, deletes, batches, gets, scans both ways, compactions and reopens. Every read
/// equals a `BTreeMap` model.
pub fn db_ops(data: &[u8]) {
    let env = MemEnv::new();
    let dir = Path::new("/db");
    let mut db = Db::open(dir, db_ops_options(&env)).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let key = |b: u8| vec![b'k', b % 64];
    let mut i = 0;
    while i + 2 < data.len() {
        let (op, a, b) = (data[i], data[i + 1], data[i + 2]);
        i += 3;
        match op % 8 {
            0 | 1 => {
                let v = vec![b; (a as usize) % 300];
                db.put(key(a), &v).unwrap();
                model.insert(key(a), v);
            }
            2 => {
                db.delete(key(a)).unwrap();
                model.remove(&key(a));
            }
            3 => {
                let mut batch = WriteBatch::new();
                for j in 0..(b % 8) {
                    let k = key(a.wrapping_add(j));
                    if j % 3 == 0 {
                        batch.delete(&k);
                        model.remove(&k);
                    } else {
                        batch.put(&k, [j; 20]);
                        model.insert(k, vec![j; 20]);
                    }
                }
                db.write(batch).unwrap();
            }
            4 => assert_eq!(db.get(key(a)).unwrap(), model.get(&key(a)).cloned()),
            5 => {
                let (x, y) = (a % 64, b % 64);
                let (lo, hi) = (key(x.min(y)), key(x.max(y)));
                let got: Vec<_> = if a % 2 == 0 {
                    db.range(lo.clone()..hi.clone())
                        .map(|r| r.unwrap())
                        .collect()
                } else {
                    let mut v: Vec<_> = db
                        .range_rev(lo.clone()..hi.clone())
                        .map(|r| r.unwrap())
                        .collect();
                    v.reverse();
                    v
                };
                let want: Vec<_> = model
                    .range(lo..hi)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                assert_eq!(got, want);
            }
            6 => db.compact_range(None, None).unwrap(),
            _ => {
                drop(db);
                db = Db::open(dir, db_ops_options(&env)).unwrap();
            }
        }
    }
    let all: BTreeMap<_, _> = db.range::<&[u8]>(..).map(|r| r.unwrap()).collect();
    assert_eq!(all, model);
}
