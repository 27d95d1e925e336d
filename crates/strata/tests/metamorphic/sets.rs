//! The option sets one log runs under. Each must show exactly what the model shows; the
//! sets differ in everything that should not matter: memtable, block and table sizes,
//! restart interval, compression, Bloom filters, cache size, open-file limit, checksum
//! verification on reads, paranoid checks, compaction shards (1 to 4), memtables of one run or many, one to three
//! full memtables waiting for their flush, level-0 triggers (LevelDB's and 4/5), the log written
//! through a memory map or with `write(2)`, value separation (blob files) on and off, a
//! user's comparator and filter policy (bytewise order and Bloom filters, through the
//! engine's paths for user-supplied ones) against the built-in ones, and the real
//! filesystem against `MemEnv`.

use std::cmp::Ordering;
use std::sync::Arc;
use std::time::Duration;

use strata::BlockCache;
use strata::sstable::Compression;
use strata::{BloomPolicy, Comparator, Options};

/// Bytewise order as a user's comparator: the same answers as the built-in one, reached
/// through `Comparator` calls and its shortening hooks.
#[derive(Debug)]
struct UserBytewise;

impl Comparator for UserBytewise {
    fn name(&self) -> &str {
        "strata-test.UserBytewise"
    }

    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        a.cmp(b)
    }

    fn find_shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]) {
        strata::comparator::shortest_separator(start, limit);
    }

    fn find_short_successor(&self, key: &mut Vec<u8>) {
        strata::comparator::short_successor(key);
    }
}

#[derive(Debug, Clone)]
pub struct OptionSet {
    pub name: &'static str,
    /// A temporary directory on the real filesystem rather than a fresh `MemEnv`.
    pub on_disk: bool,
    /// Everything but `env` and `create_if_missing`, which the runner sets.
    pub options: Options,
    pub verify_checksums: bool,
    pub fill_cache: bool,
}

fn set(name: &'static str, on_disk: bool, options: Options) -> OptionSet {
    OptionSet {
        name,
        on_disk,
        options,
        verify_checksums: true,
        fill_cache: true,
    }
}

/// Every set, in the order they run.
pub fn all() -> Vec<OptionSet> {
    let tiny = Options {
        write_buffer_size: 4 << 10,
        block_size: 256,
        block_restart_interval: 1,
        max_file_size: 4 << 10,
        block_cache: Some(BlockCache::new(4 << 10)),
        max_open_files: 20,
        filter_policy: Some(Arc::new(BloomPolicy::new(10))),
        comparator: Some(Arc::new(UserBytewise)),
        compression: Compression::None,
        max_subcompactions: 4,
        memtable_run_size: 1 << 10,
        max_write_buffer_number: 4,
        ..Options::default()
    };
    let small_snappy = Options {
        write_buffer_size: 64 << 10,
        block_size: 1024,
        block_restart_interval: 2,
        max_file_size: 32 << 10,
        block_cache: Some(BlockCache::new(64 << 10)),
        compression: Compression::Snappy,
        max_subcompactions: 3,
        mmap_wal: false,
        ..Options::default()
    };
    let large_plain = Options {
        write_buffer_size: 64 << 20,
        block_size: 64 << 10,
        block_restart_interval: 32,
        max_file_size: 64 << 20,
        compression: Compression::None,
        bloom_bits_per_key: None,
        memtable_run_size: 16 << 10,
        ..Options::default()
    };
    // One bit per key: a filter that lets many absent keys through to the table.
    let paranoid = Options {
        paranoid_checks: true,
        write_buffer_size: 16 << 10,
        block_size: 512,
        block_restart_interval: 3,
        max_file_size: 8 << 10,
        bloom_bits_per_key: Some(1),
        background_retry_interval: Duration::from_millis(10),
        max_subcompactions: 1,
        // Writes wait for level 0 early and often.
        level0_slowdown_writes_trigger: 4,
        level0_stop_writes_trigger: 5,
        ..Options::default()
    };
    // Value separation: nearly every value in a blob file, in memory; and a mix on disk,
    // blob files switched often.
    let blobs_all = Options {
        write_buffer_size: 16 << 10,
        block_size: 512,
        max_file_size: 8 << 10,
        blob_threshold: 1,
        // Three values in four compress: both kinds of ref, side by side.
        blob_compression: true,
        max_subcompactions: 2,
        ..Options::default()
    };
    let blobs_mixed = Options {
        write_buffer_size: 32 << 10,
        max_file_size: 16 << 10,
        blob_threshold: 24,
        bloom_bits_per_key: Some(10),
        max_write_buffer_number: 3,
        ..Options::default()
    };
    vec![
        set("default", true, Options::default()),
        set("blobs-all", false, blobs_all),
        set("blobs-mixed", true, blobs_mixed),
        set("tiny", false, tiny),
        set("small-snappy", true, small_snappy),
        OptionSet {
            verify_checksums: false,
            fill_cache: false,
            ..set("large-plain", true, large_plain)
        },
        OptionSet {
            fill_cache: false,
            ..set("paranoid", false, paranoid)
        },
    ]
}

/// The sets named in `STRATA_META_SETS` (comma-separated), or all of them.
pub fn selected() -> Vec<OptionSet> {
    let Ok(filter) = std::env::var("STRATA_META_SETS") else {
        return all();
    };
    let names: Vec<&str> = filter.split(',').map(str::trim).collect();
    let chosen: Vec<OptionSet> = all()
        .into_iter()
        .filter(|s| names.contains(&s.name))
        .collect();
    assert!(
        !chosen.is_empty(),
        "STRATA_META_SETS={filter:?} names no set; the sets are {:?}",
        all().iter().map(|s| s.name).collect::<Vec<_>>()
    );
    chosen
}
