//! What a run produces: one line per benchmark in db_bench's format, and the same
//! figures (and more) as JSON.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::accounting::Machine;
use crate::engine::{EngineCounters, Settings};

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
}

/// One interval of a `--stats_interval` series.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Interval {
    /// Seconds since the benchmark started, at the end of the interval.
    pub at: f64,
    /// Reads per second during the interval.
    pub reads_per_sec: f64,
    /// Writes per second during the interval.
    pub writes_per_sec: f64,
}

/// Every figure of one benchmark.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BenchResult {
    /// The benchmark's name (`fillseq`, ...).
    pub name: String,
    /// A label for the suite row (empty outside suites).
    pub row: String,
    /// Operations done (all threads).
    pub ops: u64,
    /// Bytes of user data handled.
    pub bytes: u64,
    /// Wall-clock seconds of the timed part.
    pub seconds: f64,
    /// db_bench's figure: thread-seconds per operation, in microseconds.
    pub micros_per_op: f64,
    /// Operations per second (wall clock, all threads together).
    pub ops_per_sec: f64,
    /// Threads that ran it (0 in files of older versions: one).
    #[serde(default)]
    pub threads: usize,
    /// User megabytes per second (wall clock), if the benchmark moves data.
    pub mb_per_sec: Option<f64>,
    /// Extra words db_bench prints, such as `(632 of 1000 found)`.
    pub message: String,
    /// Latency percentiles, with `--histogram`.
    pub latency_us: Option<Percentiles>,
    /// Peak resident memory during the benchmark.
    pub peak_rss_bytes: u64,
    /// Bytes in the database directory at the end.
    pub disk_bytes: u64,
    /// Bytes the process wrote (WAL, tables, manifests) during the benchmark.
    pub written_bytes: u64,
    /// `written_bytes / bytes` for write benchmarks.
    pub write_amplification: Option<f64>,
    /// CPU seconds (user + system) used.
    pub cpu_seconds: f64,
    /// Throughput per interval, with `--stats_interval`.
    pub series: Vec<Interval>,
    /// Writes done by the background writer (readwhilewriting).
    pub writer_ops_per_sec: Option<f64>,
    /// The benchmark's position in its group (set by the runner's caller).
    pub position: Option<usize>,
    /// The engine's own counters over the benchmark (stalls, flushes, compactions), if
    /// it reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<EngineCounters>,
}

impl BenchResult {
    /// The db_bench result line.
    pub fn line(&self) -> String {
        let mut extra = String::new();
        if let Some(mb) = self.mb_per_sec {
            extra.push_str(&format!("{mb:6.1} MB/s"));
        }
        if !self.message.is_empty() {
            if !extra.is_empty() {
                extra.push(' ');
            }
            extra.push_str(&self.message);
        }
        format!(
            "{:<12} : {:>11.3} micros/op;{}{}",
            self.name,
            self.micros_per_op,
            if extra.is_empty() { "" } else { " " },
            extra
        )
    }
}

/// One engine's run of a list of benchmarks.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineRun {
    /// The engine's name.
    pub engine: String,
    /// The group (a section of the page) this run belongs to.
    pub group: String,
    /// The group's position in the suite.
    pub group_index: usize,
    /// Which repeat this is (0-based).
    pub round: usize,
    /// The engine's version.
    pub engine_version: String,
    /// Its settings.
    pub settings: Settings,
    /// True if every value read or scanned was read in place (`--touch_values`,
    /// `access.rs`); false for db_bench's rule.
    #[serde(default)]
    pub values_touched: bool,
    /// The results, in order.
    pub results: Vec<BenchResult>,
    /// The benchmarks this engine cannot run, with the reason ("n/a" rows).
    #[serde(default)]
    pub not_available: Vec<NotAvailable>,
    /// Where the group sits on its suite's swept axis, in suites that sweep one.
    #[serde(default)]
    pub sweep: Option<Sweep>,
    /// Why the group did not finish, if it did not: the benchmarks it had not finished
    /// are in `not_available`, marked `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<GroupFailure>,
}

/// Why one engine's group did not finish: its process died by a signal, ran past
/// `--group_timeout` or exited with an error, or a benchmark failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupFailure {
    /// The benchmark it was running, when known.
    pub benchmark: Option<String>,
    /// What happened, in one line ("killed by signal 11 (SIGSEGV)", "timed out after
    /// 600 s", or the benchmark's error).
    pub what: String,
    /// The last lines the engine's process printed, standard output and error
    /// interleaved as they came (empty when the failure was a benchmark's error).
    #[serde(default)]
    pub tail: Vec<String>,
}

/// A group's place on the one setting its suite varies from group to group (value size,
/// threads, entries): the report draws each benchmark against it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// What varies, as the chart's axis names it ("value size (bytes)").
    pub axis: String,
    /// Its value in this group.
    pub value: f64,
}

/// A benchmark an engine cannot run (TreeDB has no batches, LMDB no compaction).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NotAvailable {
    /// The benchmark's position in its group.
    pub position: usize,
    /// The benchmark.
    pub name: String,
    /// The suite row label.
    pub row: String,
    /// Why, such as "no atomic batches".
    pub reason: String,
    /// The engine failed here, or did not get here because it failed earlier in the
    /// group: not a benchmark it lacks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
}

/// Everything a run of the tool produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Document {
    /// `strata-bench`.
    pub tool: String,
    /// The tool's version.
    pub version: String,
    /// When the run started (seconds since the Unix epoch).
    pub started_unix: u64,
    /// The suite, if one was run.
    pub suite: Option<String>,
    /// The command line.
    pub args: Vec<String>,
    /// `git describe --always --dirty` of the working directory, if it is a checkout.
    #[serde(default)]
    pub commit: Option<String>,
    /// The machine.
    pub machine: Machine,
    /// Whether the OS page cache was dropped between benchmarks (it is not: say so).
    pub page_cache: String,
    /// The machine's state before each round (`probe.rs`); empty in files written before
    /// the tool took readings.
    #[serde(default)]
    pub probes: Vec<crate::probe::Probe>,
    /// One entry per engine, group and repeat.
    pub runs: Vec<EngineRun>,
    /// Medians over the repeats, per benchmark and engine.
    pub summary: Vec<SummaryRow>,
}

/// Runs made up for tests: `engine` in `round` of group 0, one result per `(benchmark,
/// µs/op)`, in order.
/// One benchmark of one group, across engines.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SummaryRow {
    /// The group (a section of the page).
    pub group: String,
    /// The suite row label (`1C`, `2B`, ...), empty outside suites.
    pub row: String,
    /// The benchmark.
    pub benchmark: String,
    /// Position of the benchmark within its group (benchmarks may repeat in a group).
    pub index: usize,
    /// Engine to median µs/op over the repeats.
    pub median_micros: BTreeMap<String, f64>,
    /// Engine to how many repeats it ran.
    pub repeats: BTreeMap<String, usize>,
    /// Engine to why it could not run this benchmark.
    #[serde(default)]
    pub not_available: BTreeMap<String, String>,
    /// Engine to why it failed at this benchmark (or before it in its group), in a round
    /// of the run; an engine that ran it in other rounds still has its median.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failed: BTreeMap<String, String>,
    /// Engine (other than Strata) to its paired ratios to Strata over the rounds in which
    /// both ran.
    #[serde(default)]
    pub paired: BTreeMap<String, Paired>,
}

/// The ratios of one engine's time per operation to Strata's, one per round in which both
/// ran (above 1: the engine is slower than Strata).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// Their median.
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
    /// How many rounds paired.
    pub pairs: usize,
}

#[cfg(test)]
pub(crate) fn sample_run(engine: &str, round: usize, results: &[(&str, f64)]) -> EngineRun {
    EngineRun {
        engine: engine.into(),
        group: "g".into(),
        group_index: 0,
        round,
        engine_version: String::new(),
        settings: Settings {
            cache_size: 0,
            write_buffer_size: 0,
            max_file_size: 0,
            block_size: 0,
            bloom_bits: None,
            open_files: 0,
            compression: true,
            mmap_write: true,
            mmap_read: true,
            subcompactions: 1,
            max_write_buffer_number: 2,
            level0_triggers: (8, 12),
            memtable_run_size: 0,
            blob_threshold: 0,
            blob_gc_ratio: 0.25,
            blob_file_size: None,
            blob_compression: false,
        },
        values_touched: false,
        results: results
            .iter()
            .enumerate()
            .map(|(i, (name, micros))| BenchResult {
                name: (*name).into(),
                ops: 1,
                seconds: 1.0,
                micros_per_op: *micros,
                ops_per_sec: 1e6 / micros,
                position: Some(i),
                ..BenchResult::default()
            })
            .collect(),
        not_available: Vec::new(),
        sweep: None,
        failure: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(name: &str, micros: f64, mb: Option<f64>, message: &str) -> BenchResult {
        BenchResult {
            name: name.into(),
            ops: 1,
            micros_per_op: micros,
            mb_per_sec: mb,
            message: message.into(),
            ..BenchResult::default()
        }
    }

    #[test]
    fn lines_match_db_bench() {
        assert_eq!(
            result("fillseq", 2.134, Some(51.8), "").line(),
            "fillseq      :       2.134 micros/op;   51.8 MB/s"
        );
        assert_eq!(
            result("readrandom", 6.0, None, "(632 of 1000 found)").line(),
            "readrandom   :       6.000 micros/op; (632 of 1000 found)"
        );
        assert_eq!(
            result("compact", 1500.0, None, "").line(),
            "compact      :    1500.000 micros/op;"
        );
    }
}
