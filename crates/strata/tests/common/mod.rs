//! Helpers shared by the integration tests: a seeded generator and a reader that
//! reconstructs a LevelDB directory's contents from its files with Strata's decoders.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod ops;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use strata::comparator::BYTEWISE_COMPARATOR;
use strata::env::{DiskEnv, Env};
use strata::iter::Cursor;
use strata::key::{ParsedInternalKey, SeqNum, ValueType};
use strata::log::LogReader;
use strata::sstable::Table;
use strata::version::VersionEdit;
use strata::{WriteBatch, batch::BatchOp};

/// Polls `cond` every 5 ms until it holds; the test fails, naming `what`, once `limit`
/// has passed (the background threads' pace, not a measurement).
pub fn eventually(what: &str, limit: std::time::Duration, mut cond: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A test size or seed from the environment (`STRATA_...`), or `default`.
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// xorshift64*: small, seeded, identical everywhere.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
    /// Bytes that Snappy halves, like db_bench's values.
    pub fn compressible(&mut self, n: usize) -> Vec<u8> {
        let half: Vec<u8> = (0..n.div_ceil(2))
            .map(|_| b' ' + self.below(95) as u8)
            .collect();
        half.iter().chain(half.iter()).take(n).copied().collect()
    }
}

/// One version of a key as found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub ty: ValueType,
    pub value: Vec<u8>,
}

/// Every entry found in a database directory, keyed by (user key, newest first).
#[derive(Debug, Default)]
pub struct DirContents {
    pub entries: BTreeMap<(Vec<u8>, Reverse<SeqNum>), Found>,
    pub live_tables: Vec<(usize, u64)>,
    pub from_tables: usize,
    pub from_logs: usize,
    pub log_numbers: Vec<u64>,
}

impl DirContents {
    /// The newest visible value of each key, deletions applied.
    pub fn visible(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        let mut last: Option<&[u8]> = None;
        for ((k, _), found) in &self.entries {
            if last == Some(k.as_slice()) {
                continue; // an older version
            }
            last = Some(k);
            if found.ty == ValueType::Value {
                out.push((k.clone(), found.value.clone()));
            }
        }
        out
    }
}

pub fn table_name(dir: &Path, number: u64) -> std::path::PathBuf {
    let ldb = dir.join(format!("{number:06}.ldb"));
    if ldb.exists() {
        ldb
    } else {
        dir.join(format!("{number:06}.sst"))
    }
}

/// Reads every record of a log file; panics (test failure) on any dropped byte.
pub fn read_log_records(path: &Path) -> Vec<Vec<u8>> {
    let env = DiskEnv::new();
    let mut reader = LogReader::new(
        env.new_sequential(path).unwrap(),
        strata::log::Checksums::Verify,
    );
    let mut out = Vec::new();
    let mut rec = Vec::new();
    while reader.read_record(&mut rec).unwrap() {
        out.push(rec.clone());
    }
    let dropped = reader.take_dropped();
    assert!(
        dropped.is_empty(),
        "{}: dropped {dropped:?}",
        path.display()
    );
    out
}

/// Replays the manifest named by CURRENT: the live tables and the log number.
pub fn replay_manifest(dir: &Path) -> (BTreeSet<(usize, u64, u64)>, u64, u64) {
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    let name = current
        .strip_suffix('\n')
        .expect("CURRENT ends with a newline");
    assert!(name.starts_with("MANIFEST-"), "{name}");
    let mut files = BTreeSet::new();
    let (mut log_number, mut prev_log) = (0, 0);
    let mut saw_comparator = false;
    for record in read_log_records(&dir.join(name)) {
        let edit = VersionEdit::decode(&record).unwrap();
        if let Some(c) = &edit.comparator {
            assert_eq!(c, BYTEWISE_COMPARATOR);
            saw_comparator = true;
        }
        log_number = edit.log_number.unwrap_or(log_number);
        prev_log = edit.prev_log_number.unwrap_or(prev_log);
        for &(level, number) in &edit.deleted_files {
            files.retain(|&(l, n, _)| (l, n) != (level, number));
        }
        for (level, f) in &edit.new_files {
            files.insert((*level, f.number, f.size));
        }
    }
    assert!(
        saw_comparator,
        "the first manifest record names the comparator"
    );
    (files, log_number, prev_log)
}

/// Reconstructs a LevelDB database's contents from its manifest, tables and logs.
pub fn read_leveldb_dir(dir: &Path) -> DirContents {
    let env = DiskEnv::new();
    let (files, log_number, prev_log) = replay_manifest(dir);
    let mut out = DirContents::default();
    for &(level, number, size) in &files {
        let path = table_name(dir, number);
        assert_eq!(
            env.file_size(&path).unwrap(),
            size,
            "{} size",
            path.display()
        );
        let table = Arc::new(
            Table::open(
                env.new_random_access(&path).unwrap(),
                &path.to_string_lossy(),
                size,
                &strata::sstable::TableFormat::leveldb(),
            )
            .unwrap(),
        );
        let mut it = table.iter(strata::sstable::BlockReads::CHECKED_CACHED);
        it.seek_to_first();
        while it.valid() {
            let p = ParsedInternalKey::parse(it.key()).unwrap();
            let found = Found {
                ty: p.ty,
                value: it.value().to_vec(),
            };
            let old = out
                .entries
                .insert((p.user_key.to_vec(), Reverse(p.seqnum)), found.clone());
            assert!(
                old.is_none() || old == Some(found),
                "one seqnum, two contents"
            );
            out.from_tables += 1;
            it.next();
        }
        it.status().unwrap();
        out.live_tables.push((level, number));
    }
    let mut logs: Vec<u64> = env
        .children(dir)
        .unwrap()
        .iter()
        .filter_map(|n| n.strip_suffix(".log")?.parse().ok())
        .filter(|&n| n >= log_number || n == prev_log)
        .collect();
    logs.sort_unstable();
    for &number in &logs {
        for record in read_log_records(&dir.join(format!("{number:06}.log"))) {
            let batch = WriteBatch::from_bytes(record).unwrap();
            for (i, op) in batch.iter().enumerate() {
                let seq = batch.seqnum() + i as u64;
                let (k, found) = match op.unwrap() {
                    BatchOp::Put(k, v) => (
                        k,
                        Found {
                            ty: ValueType::Value,
                            value: v.to_vec(),
                        },
                    ),
                    BatchOp::Delete(k) => (
                        k,
                        Found {
                            ty: ValueType::Deletion,
                            value: Vec::new(),
                        },
                    ),
                    BatchOp::BlobRef(k, r) => (
                        k,
                        Found {
                            ty: ValueType::BlobRef,
                            value: r.to_vec(),
                        },
                    ),
                };
                out.entries.insert((k.to_vec(), Reverse(seq)), found);
                out.from_logs += 1;
            }
        }
    }
    out.log_numbers = logs;
    out
}
