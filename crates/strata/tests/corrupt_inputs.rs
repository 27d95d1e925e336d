//! Bad input never panics, never reads out of bounds and never allocates on the strength
//! of a corrupt length: every decoder is fed mutated copies of real files that LevelDB
//! 1.23 wrote (bit flips, bytes set to 0x00/0xff/random, truncations, insertions,
//! deletions). Where checksums are verified, whatever a decoder still returns must be
//! exactly what the undamaged file holds.
//!
//! Each property runs `STRATA_MUTATION_CASES` cases (default 100,000).

#![allow(
    unsafe_code,
    reason = "a counting global allocator, to bound allocations"
)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Cursor;
use std::sync::{Arc, OnceLock};

use proptest::prelude::*;
use proptest::sample::Index;
use strata::WriteBatch;
use strata::comparator::{BytewiseComparator, InternalOrder};
use strata::env::{DiskEnv, Env};
use strata::filter::BloomPolicy;
use strata::iter::Cursor as _;
use strata::log::{Checksums, LogReader};
use strata::sstable::{Block, BlockHandle, BlockReads, FilterBlockReader, Footer, Table, format};
use strata::version::VersionEdit;

// ---------------------------------------------------------------------------------------
// Allocation bound: the largest single allocation made by this thread.

struct MaxAlloc;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call forwards to the system allocator unchanged; the only addition is a
// const-initialised thread-local counter, which does not allocate.
unsafe impl GlobalAlloc for MaxAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = LARGEST.try_with(|l| l.set(l.get().max(layout.size())));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = LARGEST.try_with(|l| l.set(l.get().max(new_size)));
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: MaxAlloc = MaxAlloc;

/// Runs `f` and fails if it made any single allocation over `limit` bytes.
fn bounded<T>(limit: usize, f: impl FnOnce() -> T) -> T {
    LARGEST.with(|l| l.set(0));
    let out = f();
    let largest = LARGEST.with(|l| l.get());
    assert!(
        largest <= limit,
        "allocated {largest} bytes at once (limit {limit})"
    );
    out
}

#[test]
fn allocation_bound_catches_large_allocations() {
    let r = std::panic::catch_unwind(|| bounded(1000, || vec![0u8; 1_000_000]));
    assert!(r.is_err());
}

// ---------------------------------------------------------------------------------------
// Real files, written once by LevelDB.

struct Samples {
    snappy_table: Vec<u8>,
    plain_table: Vec<u8>,
    log: Vec<u8>,
    manifest: Vec<u8>,
    batches: Vec<Vec<u8>>,
    edits: Vec<Vec<u8>>,
    data_block: Vec<u8>,
    index_block: Vec<u8>,
    filter_block: Vec<u8>,
    footer: Vec<u8>,
}

fn write_db(dir: &std::path::Path, compression: bool) {
    let options = leveldb_ffi::Options {
        write_buffer_size: 64 << 10,
        compression,
        bloom_bits_per_key: Some(10),
        ..Default::default()
    };
    let db = leveldb_ffi::Db::open(dir, &options).unwrap();
    let mut rng = common::Rng::new(7);
    for i in 0..1500u64 {
        let len = 80 + rng.below(60) as usize;
        let v = rng.compressible(len);
        db.put(format!("key{i:06}").as_bytes(), &v, false).unwrap();
        if i % 7 == 0 {
            db.delete(format!("key{:06}", i / 2).as_bytes(), false)
                .unwrap();
        }
    }
    let mut batch = leveldb_ffi::WriteBatch::new();
    for i in 0..30u64 {
        batch.put(format!("batch{i}").as_bytes(), b"v");
        batch.delete(format!("key{i:06}").as_bytes());
    }
    db.write(&mut batch, false).unwrap();
    db.put(b"large", &rng.bytes(40_000), false).unwrap();
}

fn smallest_live_table(dir: &std::path::Path) -> Vec<u8> {
    let (live, _, _) = common::replay_manifest(dir);
    let mut tables: Vec<Vec<u8>> = live
        .iter()
        .map(|&(_, n, _)| std::fs::read(common::table_name(dir, n)).unwrap())
        .filter(|t| t.len() > 4096)
        .collect();
    tables.sort_by_key(Vec::len);
    tables.into_iter().next().expect("a table over 4 KiB")
}

fn samples() -> &'static Samples {
    static S: OnceLock<Samples> = OnceLock::new();
    S.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let snappy_dir = tmp.path().join("snappy");
        let plain_dir = tmp.path().join("plain");
        write_db(&snappy_dir, true);
        write_db(&plain_dir, false);
        let snappy_table = smallest_live_table(&snappy_dir);
        let plain_table = smallest_live_table(&plain_dir);
        let log_path = std::fs::read_dir(&snappy_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "log"))
            .unwrap();
        let log = std::fs::read(&log_path).unwrap();
        let current = std::fs::read_to_string(snappy_dir.join("CURRENT")).unwrap();
        let manifest_path = snappy_dir.join(current.trim_end());
        let manifest = std::fs::read(&manifest_path).unwrap();
        let batches = common::read_log_records(&log_path);
        let edits = common::read_log_records(&manifest_path);
        assert!(!batches.is_empty() && !edits.is_empty());

        let size = plain_table.len() as u64;
        let footer_bytes = plain_table[plain_table.len() - format::FOOTER_SIZE..].to_vec();
        let footer = Footer::decode(&footer_bytes).unwrap();
        let file: &dyn strata::env::RandomAccessFile = &plain_table;
        let index_block = format::read_block(file, "t", size, footer.index, true).unwrap();
        let table = Table::open(
            Arc::new(plain_table.clone()),
            "t",
            size,
            &strata::sstable::TableFormat::leveldb(),
        )
        .unwrap();
        let mut idx = table.index_iter();
        idx.seek_to_first();
        let first = BlockHandle::decode_exact(idx.value()).unwrap();
        let data_block = format::read_block(file, "t", size, first, true).unwrap();
        let meta = Arc::new(
            Block::new(format::read_block(file, "t", size, footer.metaindex, true).unwrap())
                .unwrap(),
        );
        let mut m = meta.iter(BytewiseComparator);
        m.seek_to_first();
        let filter_handle = BlockHandle::decode_exact(m.value()).unwrap();
        let filter_block = format::read_block(file, "t", size, filter_handle, true).unwrap();
        Samples {
            snappy_table,
            plain_table,
            log,
            manifest,
            batches,
            edits,
            data_block,
            index_block,
            filter_block,
            footer: footer_bytes,
        }
    })
}

// ---------------------------------------------------------------------------------------
// Mutations.

#[derive(Debug, Clone)]
enum Mutation {
    FlipBit(Index, u8),
    Set(Index, u8),
    Truncate(Index),
    Insert(Index, u8),
    Remove(Index, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<Index>(), 0u8..8).prop_map(|(i, b)| Mutation::FlipBit(i, b)),
        3 => (any::<Index>(), prop_oneof![Just(0u8), Just(0xff), any::<u8>()]).prop_map(|(i, v)| Mutation::Set(i, v)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(i, v)| Mutation::Insert(i, v)),
        1 => (any::<Index>(), 1usize..64).prop_map(|(i, n)| Mutation::Remove(i, n)),
    ]
}

fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    proptest::collection::vec(mutation(), 1..4)
}

fn apply(original: &[u8], ms: &[Mutation]) -> Vec<u8> {
    let mut v = original.to_vec();
    for m in ms {
        if v.is_empty() {
            break;
        }
        match m {
            Mutation::FlipBit(i, b) => {
                let at = i.index(v.len());
                v[at] ^= 1 << b;
            }
            Mutation::Set(i, x) => {
                let at = i.index(v.len());
                v[at] = *x;
            }
            Mutation::Truncate(i) => v.truncate(i.index(v.len())),
            Mutation::Insert(i, x) => v.insert(i.index(v.len() + 1), *x),
            Mutation::Remove(i, n) => {
                let at = i.index(v.len());
                let end = (at + n).min(v.len());
                v.drain(at..end);
            }
        }
    }
    v
}

fn config() -> ProptestConfig {
    let cases = std::env::var("STRATA_MUTATION_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    ProptestConfig {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2_000,
        ..ProptestConfig::default()
    }
}

/// Allocations a decoder may make: its input's size many times over, never more.
const ALLOC_LIMIT: usize = 4 << 20;

// ---------------------------------------------------------------------------------------
// Decoders.

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// Reads a whole table forwards and backwards; `Err` on the first error.
fn read_table(bytes: Vec<u8>, verify: bool) -> strata::Result<(Entries, Entries)> {
    let size = bytes.len() as u64;
    let table = Arc::new(Table::open(
        Arc::new(bytes),
        "t.ldb",
        size,
        &strata::sstable::TableFormat::leveldb(),
    )?);
    let mut it = table.iter(BlockReads {
        verify_checksums: verify,
        fill_cache: true,
    });
    let mut forward = Vec::new();
    it.seek_to_first();
    while it.valid() {
        forward.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status()?;
    let mut backward = Vec::new();
    it.seek_to_last();
    while it.valid() {
        backward.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status()?;
    backward.reverse();
    for (k, v) in forward.iter().step_by(97) {
        let got = table.get(
            k,
            BlockReads {
                verify_checksums: verify,
                fill_cache: true,
            },
        )?;
        // Unverified reads of damaged bytes may disagree with each other; verified ones
        // may not.
        if verify {
            assert_eq!(
                got.as_ref(),
                Some(&(k.clone(), v.clone())),
                "get after a clean scan"
            );
        }
    }
    Ok((forward, backward))
}

fn check_table(original: &[u8], ms: &[Mutation]) {
    static EXPECTED: OnceLock<std::sync::Mutex<std::collections::HashMap<usize, Entries>>> =
        OnceLock::new();
    let expected = {
        let map = EXPECTED.get_or_init(Default::default);
        let mut map = map.lock().unwrap();
        map.entry(original.as_ptr() as usize)
            .or_insert_with(|| read_table(original.to_vec(), true).unwrap().0)
            .clone()
    };
    let damaged = apply(original, ms);
    match bounded(ALLOC_LIMIT, || read_table(damaged.clone(), true)) {
        Ok((forward, backward)) => {
            assert!(
                forward == expected,
                "a damaged table returned different entries"
            );
            assert!(
                backward == expected,
                "a damaged table returned different entries backwards"
            );
        }
        Err(e) => assert!(e.is_corruption(), "{e}"),
    }
    // Without checksums nothing is promised about the entries, only that reading stops.
    let _ = bounded(ALLOC_LIMIT, || read_table(damaged, false));
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn table_with_snappy_blocks(ms in mutations()) {
        check_table(&samples().snappy_table, &ms);
    }

    #[test]
    fn table_with_plain_blocks(ms in mutations()) {
        check_table(&samples().plain_table, &ms);
    }

    #[test]
    fn log_reader(ms in mutations()) {
        let s = samples();
        let damaged = apply(&s.log, &ms);
        let records = bounded(ALLOC_LIMIT, || {
            let mut r = LogReader::new(Box::new(Cursor::new(damaged.clone())), Checksums::Verify);
            let mut out = Vec::new();
            let mut rec = Vec::new();
            while r.read_record(&mut rec).unwrap() {
                out.push(rec.clone());
            }
            out
        });
        // Every record returned is an original record, in the original order.
        let mut originals = s.batches.iter();
        for rec in &records {
            prop_assert!(originals.any(|o| o == rec), "a damaged log returned a record it never held");
        }
        let mut r = LogReader::new(Box::new(Cursor::new(damaged)), Checksums::Skip);
        let mut rec = Vec::new();
        while bounded(ALLOC_LIMIT, || r.read_record(&mut rec)).unwrap() {}
    }

    #[test]
    fn manifest_replay(ms in mutations()) {
        let damaged = apply(&samples().manifest, &ms);
        bounded(ALLOC_LIMIT, || {
            let mut r = LogReader::new(Box::new(Cursor::new(damaged)), Checksums::Verify);
            let mut rec = Vec::new();
            while r.read_record(&mut rec).unwrap() {
                let _ = VersionEdit::decode(&rec);
            }
        });
    }

    #[test]
    fn write_batch(ms in mutations(), which in any::<Index>()) {
        let s = samples();
        let original = &s.batches[which.index(s.batches.len())];
        let damaged = apply(original, &ms);
        if let Ok(b) = bounded(ALLOC_LIMIT, || WriteBatch::from_bytes(damaged)) {
            let ops: Vec<_> = b.iter().collect::<strata::Result<_>>().unwrap();
            let n = ops.len();
            prop_assert_eq!(n, b.len() as usize);
        }
    }

    #[test]
    fn version_edit(ms in mutations(), which in any::<Index>()) {
        let s = samples();
        let original = &s.edits[which.index(s.edits.len())];
        let damaged = apply(original, &ms);
        if let Ok(e) = bounded(ALLOC_LIMIT, || VersionEdit::decode(&damaged)) {
            prop_assert_eq!(VersionEdit::decode(&e.encode()).unwrap(), e);
        }
    }

    #[test]
    fn block(ms in mutations(), probes in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..24), 4), index in any::<bool>()) {
        let s = samples();
        let original = if index { &s.index_block } else { &s.data_block };
        let damaged = apply(original, &ms);
        let limit = damaged.len() + 1;
        bounded(ALLOC_LIMIT, || {
            let Ok(block) = Block::new(damaged) else { return };
            let block = Arc::new(block);
            let mut it = block.iter(InternalOrder::default());
            it.seek_to_first();
            let mut steps = 0;
            while it.valid() {
                it.next();
                steps += 1;
                assert!(steps <= limit, "forward scan does not end");
            }
            it.seek_to_last();
            steps = 0;
            while it.valid() {
                it.prev();
                steps += 1;
                assert!(steps <= limit, "backward scan does not end");
            }
            for p in &probes {
                it.seek(p);
                if it.valid() {
                    it.prev();
                }
            }
            let _ = it.status();
        });
    }

    #[test]
    fn footer(ms in mutations()) {
        let damaged = apply(&samples().footer, &ms);
        let _ = Footer::decode(&damaged);
    }

    #[test]
    fn filter_block(ms in mutations(), probes in proptest::collection::vec((any::<u64>(), proptest::collection::vec(any::<u8>(), 0..20)), 4)) {
        let damaged = apply(&samples().filter_block, &ms);
        let r = FilterBlockReader::new(damaged, strata::filter::Filter::builtin());
        for (offset, key) in &probes {
            let _ = r.key_may_match(*offset, key);
        }
        let _ = BloomPolicy::key_may_match(&probes[0].1, &samples().filter_block);
    }
}

#[test]
fn samples_are_real_and_read_cleanly() {
    let s = samples();
    let (entries, _) = read_table(s.snappy_table.clone(), true).unwrap();
    assert!(entries.len() > 100);
    assert!(read_table(s.plain_table.clone(), true).unwrap().0.len() > 100);
    assert!(s.log.len() > 32 * 1024, "the log spans blocks");
    assert!(s.batches.len() > 10);
    let env = DiskEnv::new();
    assert!(!env.exists(std::path::Path::new("/nonexistent")));
}
