//! Command-line flags, spelled as db_bench spells them (`--value_size=100`).

use std::path::PathBuf;

use clap::Parser;

/// db_bench's default benchmark list.
pub const DEFAULT_BENCHMARKS: &str = "fillseq,fillsync,fillrandom,overwrite,readrandom,readrandom,readseq,readreverse,compact,readrandom,readseq,readreverse,fill100K,crc32c,snappycomp,snappyuncomp";

fn parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        other => Err(format!("expected 0/1/true/false, got {other:?}")),
    }
}

/// strata-bench: LevelDB's db_bench workloads on Strata (and, with peers built in, on
/// other engines), with latency histograms, resource accounting and JSON results.
#[derive(Debug, Clone, Parser)]
#[command(name = "strata-bench", version, about, long_about = None)]
pub struct Flags {
    /// Comma-separated benchmarks, run in order.
    #[arg(long, default_value = DEFAULT_BENCHMARKS)]
    pub benchmarks: String,
    /// Number of entries.
    #[arg(long, default_value_t = 1_000_000)]
    pub num: u64,
    /// Number of reads (negative: --num).
    #[arg(long, default_value_t = -1, allow_hyphen_values = true)]
    pub reads: i64,
    /// Concurrent threads (for readwhilewriting: readers, plus one writer).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Value size in bytes.
    #[arg(long = "value_size", default_value_t = 100)]
    pub value_size: usize,
    /// How much values compress: 0.5 means to about half.
    #[arg(long = "compression_ratio", default_value_t = 0.5)]
    pub compression_ratio: f64,
    /// `randomtransaction`: how many sets of keys each transaction touches, one key each
    /// (RocksDB db_bench's flag).
    #[arg(long = "transaction_sets", default_value_t = 2)]
    pub transaction_sets: u64,
    /// Entries per write batch of fillseq, fillrandom and overwrite (RocksDB db_bench's
    /// flag); 0: each benchmark's own (1, or 1,000 for the batch benchmarks).
    #[arg(long = "batch_size", default_value_t = 0)]
    pub batch_size: usize,
    /// Print latency percentiles.
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub histogram: bool,
    /// Reuse the database in --db instead of starting fresh.
    #[arg(long = "use_existing_db", default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub use_existing_db: bool,
    /// Database directory (default: a fresh directory in the system temp dir, removed at
    /// the end unless --use_existing_db).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Write buffer (memtable) size in bytes.
    #[arg(long = "write_buffer_size", default_value_t = 4 << 20)]
    pub write_buffer_size: usize,
    /// Target table file size in bytes.
    #[arg(long = "max_file_size", default_value_t = 2 << 20)]
    pub max_file_size: usize,
    /// Data block size in bytes.
    #[arg(long = "block_size", default_value_t = 4096)]
    pub block_size: usize,
    /// Block cache size in bytes.
    #[arg(long = "cache_size", default_value_t = 8 << 20)]
    pub cache_size: usize,
    /// Bloom filter bits per key (negative: no filter).
    #[arg(long = "bloom_bits", default_value_t = -1, allow_hyphen_values = true)]
    pub bloom_bits: i64,
    /// Table files kept open.
    #[arg(long = "open_files", default_value_t = 1000)]
    pub open_files: usize,
    /// Strata: read tables through memory maps (RocksDB db_bench's flag; other engines
    /// ignore it).
    #[arg(long = "mmap_read", default_value = "true", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub mmap_read: bool,
    /// Strata: write the log through a memory map (RocksDB db_bench's flag; other engines
    /// ignore it).
    #[arg(long = "mmap_write", default_value = "true", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub mmap_write: bool,
    /// Strata: threads that merge one compaction at once (RocksDB db_bench's flag; other
    /// engines ignore it).
    #[arg(long = "subcompactions", default_value_t = 2)]
    pub subcompactions: usize,
    /// Strata: memtables held at once, the one taking writes included (RocksDB db_bench's
    /// flag; LevelDB's is fixed at 2). Other engines ignore it.
    #[arg(long = "max_write_buffer_number", default_value_t = 2)]
    pub max_write_buffer_number: usize,
    /// Strata: level-0 tables at which each write is delayed 1 ms (RocksDB db_bench's
    /// flag; LevelDB's is fixed at 8). Other engines ignore it.
    #[arg(long = "level0_slowdown_writes_trigger", default_value_t = 8)]
    pub level0_slowdown_writes_trigger: usize,
    /// Strata: level-0 tables at which writes wait (RocksDB db_bench's flag; LevelDB's is
    /// fixed at 12). Other engines ignore it.
    #[arg(long = "level0_stop_writes_trigger", default_value_t = 12)]
    pub level0_stop_writes_trigger: usize,
    /// Strata: a write buffer larger than this is cut into runs of at least this many
    /// bytes (0: one run). Other engines ignore it.
    #[arg(long = "memtable_run_size", default_value_t = strata::memtable::MIN_RUN_BYTES)]
    pub memtable_run_size: usize,
    /// The `strata-blob` and `rocksdb-blob` engines: values of at least this many bytes go
    /// to blob files (value separation). Other engines ignore it.
    #[arg(long = "blob_threshold", default_value_t = 512)]
    pub blob_threshold: usize,
    /// The `strata-blob` engine: a compaction moves values out of blob files with at least
    /// this fraction of garbage (1.0: never).
    #[arg(long = "blob_gc_ratio", default_value_t = 0.25)]
    pub blob_gc_ratio: f64,
    /// The `strata-blob` and `rocksdb-blob` engines: target size in bytes of a blob file
    /// (db_bench's flag): Strata's `Options::blob_file_size` (the files a garbage
    /// collection writes; a WAL's blob file is cut with its write buffer), RocksDB's
    /// `blob_file_size`. Unset: each engine's own default.
    #[arg(long = "blob_file_size")]
    pub blob_file_size: Option<usize>,
    /// The `strata-blob` engine: store blob values Snappy-compressed when that saves an
    /// eighth or more (`Options::blob_compression`; off by default, as in the engine:
    /// raw values are read in place and were faster to write once and to read, Snappy
    /// faster to overwrite and compact, `docs/results/2026-12-02-blob-compression`);
    /// `rocksdb-blob`: its `blob_compression_type` Snappy when set, none otherwise.
    #[arg(long = "blob_compression", default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub blob_compression: bool,
    /// Block compression (Snappy).
    #[arg(long, default_value = "true", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub compression: bool,
    /// Read every value a read or scan gets, in place (one 8-byte load per 64 bytes,
    /// folded into a sum), on every engine alike. Off: db_bench's rule (a read copies the
    /// value into a reused buffer; a scan counts lengths and never reads a value). The
    /// value-sizes suite turns it on.
    #[arg(long = "touch_values", default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub touch_values: bool,
    /// Seconds between throughput reports (0: none). The series goes into --json.
    #[arg(long = "stats_interval", default_value_t = 0.0)]
    pub stats_interval: f64,
    /// Writer rate limit for writes and readwhilewriting (0: unlimited).
    #[arg(long = "writes_per_second", default_value_t = 0)]
    pub writes_per_second: u64,
    /// Run each benchmark for this many seconds instead of --num operations (0: off).
    #[arg(long, default_value_t = 0.0)]
    pub duration: f64,
    /// Stop random-read benchmarks (readrandom, readmissing, readhot, seekrandom) after
    /// this many seconds even if --reads are not all done (0: off). A prefix of a uniform
    /// random key sequence is itself uniform, so the µs/op stays comparable; the result
    /// line says how many reads ran. Lets the slowest engines fit a time-boxed suite.
    #[arg(long = "read_budget", default_value_t = 0.0)]
    pub read_budget: f64,
    /// Stop a write benchmark (fillseq, fillrandom, overwrite, their batched and synced
    /// forms, fill100K) after this many seconds even if --num writes are not all done (0:
    /// off); the result line says how many ran. The database then holds fewer entries,
    /// and the rows after it say how many of their reads found one. Lets the slowest
    /// engines fit `make bench`; the engines it stops are measured over the first, cheaper
    /// part of their load, which can flatter them.
    #[arg(long = "write_budget", default_value_t = 0.0)]
    pub write_budget: f64,
    /// Seed of the random key orders (identical for every engine).
    #[arg(long, default_value_t = 301)]
    pub seed: u64,
    /// Write every figure, the settings and the machine to this JSON file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Go on with an interrupted run: the units (one engine, group and round) its journal
    /// (`JSON.partial`, written as each finishes) holds are not run again. Needs the same
    /// command line, with --json.
    #[arg(long, requires = "json")]
    pub resume: bool,
    /// Run a preset suite instead of --benchmarks: baseline, readwhilewriting,
    /// value-sizes, scale, group-commit (docs/bench.md).
    #[arg(long)]
    pub suite: Option<String>,
    /// Engines to run, comma-separated (`all` for every engine built in).
    #[arg(long, default_value = "strata")]
    pub engines: String,
    /// Rounds of the whole run, the engines interleaved in each; the summary reports
    /// medians.
    #[arg(long, default_value_t = 1)]
    pub repeats: usize,
    /// Run each group of an engine this harness drives in a process of its own, as
    /// LevelDB's db_bench runs, so what one group leaves in memory is not charged to the
    /// next one's peak RSS (0: every group in this process).
    #[arg(long = "process_per_group", default_value = "true", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub process_per_group: bool,
    /// Seconds a group of one engine may take before the harness ends its process and
    /// records the group as timed out (0: no limit). Applies to the groups run in a
    /// process of their own and to the peers' own benchmark programs.
    #[arg(long = "group_timeout", default_value_t = 0)]
    pub group_timeout: u64,
    /// For the harness's own tests: make ENGINE's process abort (a signal), hang or fail
    /// when it reaches BENCHMARK, as `ENGINE:BENCHMARK:abort|hang|error`.
    #[arg(long = "fault", hide = true)]
    pub fault: Option<String>,
    /// Set by the harness for its child process: the one group (by index) to run.
    #[arg(long = "child_group", hide = true, requires_all = ["child_engine", "child_dir", "child_out"])]
    pub child_group: Option<usize>,
    /// The child's engine.
    #[arg(long = "child_engine", hide = true)]
    pub child_engine: Option<String>,
    /// The child's database directory.
    #[arg(long = "child_dir", hide = true)]
    pub child_dir: Option<PathBuf>,
    /// Where the child writes what its group gave (JSON).
    #[arg(long = "child_out", hide = true)]
    pub child_out: Option<PathBuf>,
}

/// The message for a command line that does not parse: clap's error, then the usage.
pub fn parse_error_message(e: &clap::Error) -> String {
    use clap::CommandFactory;
    format!("{}\n{}\n", e.render(), Flags::command().render_usage())
}

impl Flags {
    /// The number of reads.
    pub fn reads(&self) -> u64 {
        if self.reads < 0 {
            self.num
        } else {
            self.reads as u64
        }
    }

    /// `--group_timeout` as a limit (`None` for 0: no limit).
    pub fn group_timeout(&self) -> Option<std::time::Duration> {
        (self.group_timeout > 0).then(|| std::time::Duration::from_secs(self.group_timeout))
    }

    /// Bloom bits per key, if any.
    pub fn bloom(&self) -> Option<usize> {
        (self.bloom_bits >= 0).then_some(self.bloom_bits as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn db_bench_spellings_parse() {
        let f = Flags::try_parse_from([
            "strata-bench",
            "--benchmarks=fillseq,readrandom",
            "--num=1000",
            "--value_size=200",
            "--histogram=1",
            "--bloom_bits=10",
            "--compression=0",
            "--reads=50",
        ])
        .unwrap();
        assert_eq!(f.benchmarks, "fillseq,readrandom");
        assert_eq!((f.num, f.value_size, f.reads()), (1000, 200, 50));
        assert!(f.histogram && !f.compression);
        assert_eq!(f.bloom(), Some(10));
        let d = Flags::try_parse_from(["strata-bench", "--histogram"]).unwrap();
        assert!(d.histogram);
        assert_eq!(d.reads(), d.num);
        assert_eq!(d.bloom(), None);
    }

    #[test]
    fn bad_flags_give_usage() {
        for bad in [
            vec!["strata-bench", "--num=lots"],
            vec!["strata-bench", "--no_such_flag=1"],
            vec!["strata-bench", "--histogram=maybe"],
        ] {
            let err = Flags::try_parse_from(bad).unwrap_err();
            let text = parse_error_message(&err);
            assert!(text.contains("error"), "{text}");
            assert!(text.contains("Usage: strata-bench"), "{text}");
        }
    }
}
