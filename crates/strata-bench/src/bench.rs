//! The benchmarks, with db_bench's semantics, and the runner that times them.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use hdrhistogram::Histogram;

use crate::access::ValueAccess;
use crate::accounting;
use crate::engine::{BatchOp, Engine, EngineKind, Settings};
use crate::flags::Flags;
use crate::results::{BenchResult, Interval, Percentiles};
use crate::workload::{RateLimiter, Rng, ValueGenerator, key};

/// Bytes of a key.
pub const KEY_SIZE: usize = 16;

/// What a benchmark does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Writes keys in order.
    WriteSeq,
    /// Writes keys in random order.
    WriteRandom,
    /// Scans forward.
    ReadSeq,
    /// Scans backward.
    ReadReverse,
    /// Point reads of random keys.
    ReadRandom,
    /// Point reads of keys that do not exist.
    ReadMissing,
    /// Point reads within the first 1% of keys.
    ReadHot,
    /// Seeks to random keys.
    SeekRandom,
    /// Deletes keys in order.
    DeleteSeq,
    /// Deletes keys in random order.
    DeleteRandom,
    /// Random reads while one writer writes.
    ReadWhileWriting,
    /// RocksDB db_bench's `randomtransaction`: each transaction adds one increment to a
    /// random key of every set; every set's sum must be equal at the end.
    RandomTransaction,
    /// YCSB-F's shape: half point reads, half read-modify-write transactions of one key.
    ReadModifyWrite,
    /// Compacts the whole database.
    Compact,
    /// The machine's own ceiling for synced writes: append 100 bytes to a file in the
    /// database's directory and `fdatasync` it, `num` times, no engine involved.
    FsyncCeiling,
    /// CRC-32C of 4 KiB blocks.
    Crc32c,
    /// Snappy compression of a 4 KiB block.
    SnappyComp,
    /// Snappy decompression of a 4 KiB block.
    SnappyUncomp,
    /// Prints the engine's statistics.
    Stats,
    /// Prints the engine's tables.
    Sstables,
}

impl Kind {
    /// True for the benchmarks that write (puts or deletes): their bytes written over user
    /// bytes is a write amplification.
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Kind::WriteSeq | Kind::WriteRandom | Kind::DeleteSeq | Kind::DeleteRandom
        )
    }
}

/// One benchmark, fully specified.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The name printed.
    pub name: String,
    /// The suite row it belongs to (empty outside suites).
    pub row: String,
    /// What it does.
    pub kind: Kind,
    /// Start from an empty database.
    pub fresh_db: bool,
    /// Operations per thread (writes), or key space (reads).
    pub num: u64,
    /// Reads per thread.
    pub reads: u64,
    /// Value size.
    pub value_size: usize,
    /// Entries per write batch (1: no batches).
    pub batch: usize,
    /// Sync every write.
    pub sync: bool,
    /// Threads.
    pub threads: usize,
}

/// The benchmark called `name`, with db_bench's meaning and the flags' sizes.
pub fn spec(name: &str, flags: &Flags) -> Result<Spec> {
    let mut s = Spec {
        name: name.to_string(),
        row: String::new(),
        kind: Kind::Stats,
        fresh_db: false,
        num: flags.num,
        reads: flags.reads(),
        value_size: flags.value_size,
        batch: 1,
        sync: false,
        threads: flags.threads.max(1),
    };
    match name {
        "fillseq" => (s.kind, s.fresh_db) = (Kind::WriteSeq, true),
        "fillrandom" => (s.kind, s.fresh_db) = (Kind::WriteRandom, true),
        "overwrite" => s.kind = Kind::WriteRandom,
        "fillsync" => {
            (s.kind, s.fresh_db, s.sync) = (Kind::WriteRandom, true, true);
            s.num = (flags.num / 1000).max(1);
        }
        "fillbatch" | "fillseqbatch" => {
            (s.kind, s.fresh_db, s.batch) = (Kind::WriteSeq, true, 1000)
        }
        "fillrandbatch" => (s.kind, s.fresh_db, s.batch) = (Kind::WriteRandom, true, 1000),
        "fill100K" => {
            (s.kind, s.fresh_db, s.value_size) = (Kind::WriteRandom, true, 100_000);
            s.num = (flags.num / 1000).max(1);
        }
        "readseq" => s.kind = Kind::ReadSeq,
        "readreverse" => s.kind = Kind::ReadReverse,
        "readrandom" => s.kind = Kind::ReadRandom,
        "readmissing" => s.kind = Kind::ReadMissing,
        "readhot" => s.kind = Kind::ReadHot,
        "seekrandom" => s.kind = Kind::SeekRandom,
        "deleteseq" => s.kind = Kind::DeleteSeq,
        "deleterandom" => s.kind = Kind::DeleteRandom,
        "readwhilewriting" => s.kind = Kind::ReadWhileWriting,
        "compact" => s.kind = Kind::Compact,
        "randomtransaction" => (s.kind, s.fresh_db) = (Kind::RandomTransaction, true),
        "readmodifywrite" => s.kind = Kind::ReadModifyWrite,
        "fsyncceiling" => {
            s.kind = Kind::FsyncCeiling;
            s.num = (flags.num / 1000).max(1);
        }
        "crc32c" => s.kind = Kind::Crc32c,
        "snappycomp" => s.kind = Kind::SnappyComp,
        "snappyuncomp" => s.kind = Kind::SnappyUncomp,
        "stats" => s.kind = Kind::Stats,
        "sstables" => s.kind = Kind::Sstables,
        other => bail!("unknown benchmark {other:?}"),
    }
    if flags.batch_size > 0 && matches!(name, "fillseq" | "fillrandom" | "overwrite") {
        s.batch = flags.batch_size;
    }
    Ok(s)
}

/// What one thread did.
struct ThreadStats {
    ops: u64,
    bytes: u64,
    found: u64,
    /// Transactions refused for a conflict (and run again).
    aborts: u64,
    seconds: f64,
    hist: Option<Histogram<u64>>,
}

/// Counters the interval monitor reads while threads run.
#[derive(Default)]
struct Live {
    reads: AtomicU64,
    writes: AtomicU64,
    stop: AtomicBool,
}

/// Runs benchmarks on one engine, keeping its database open between them.
pub struct Runner<'a> {
    flags: &'a Flags,
    kind: &'a dyn EngineKind,
    dir: PathBuf,
    /// The settings every open uses.
    pub settings: Settings,
    engine: Option<Box<dyn Engine>>,
    sink: u32,
}

impl<'a> Runner<'a> {
    /// A runner for `kind` with its database in `dir`.
    pub fn new(
        flags: &'a Flags,
        kind: &'a dyn EngineKind,
        dir: PathBuf,
        settings: Settings,
    ) -> Self {
        Runner {
            flags,
            kind,
            dir,
            settings,
            engine: None,
            sink: 0,
        }
    }

    fn open(&mut self, fresh: bool) -> Result<()> {
        if fresh {
            self.engine = None;
            if self.dir.exists() && !self.flags.use_existing_db {
                std::fs::remove_dir_all(&self.dir)
                    .with_context(|| format!("remove {}", self.dir.display()))?;
            }
        }
        if self.engine.is_none() {
            std::fs::create_dir_all(&self.dir)?;
            self.engine = Some(self.kind.open(&self.dir, &self.settings)?);
        }
        Ok(())
    }

    /// Closes the database.
    pub fn close(&mut self) {
        self.engine = None;
    }

    /// Runs one benchmark. `None` for the ones that only print (stats, sstables).
    /// Why this engine cannot run `spec` (an "n/a" row), if it cannot.
    pub fn lacks(&self, spec: &Spec) -> Option<&'static str> {
        if spec.batch > 1 && !self.kind.has_batches() {
            Some("no atomic batches")
        } else if spec.kind == Kind::Compact && !self.kind.has_compaction() {
            Some("no compaction")
        } else if matches!(spec.kind, Kind::RandomTransaction | Kind::ReadModifyWrite)
            && !self.kind.has_transactions()
        {
            Some("no transactions")
        } else {
            None
        }
    }

    /// Runs one benchmark; `None` for the ones that print no result line (n/a, stats).
    pub fn run(&mut self, spec: &Spec) -> Result<Option<BenchResult>> {
        // What an engine cannot do is reported as n/a before anything else happens: it
        // must not reset the database the next benchmark reads.
        if let Some(why) = self.lacks(spec) {
            println!("{:<12} : n/a ({} has {why})", spec.name, self.kind.name());
            return Ok(None);
        }
        let fresh = spec.fresh_db && !self.flags.use_existing_db;
        match spec.kind {
            Kind::Crc32c | Kind::SnappyComp | Kind::SnappyUncomp | Kind::FsyncCeiling => {}
            _ => self.open(fresh)?,
        }
        if matches!(spec.kind, Kind::Stats | Kind::Sstables) {
            let e = self.engine.as_deref().context("no database open")?;
            let text = if spec.kind == Kind::Stats {
                e.stats()
            } else {
                e.sstables()
            };
            println!("{}", text.unwrap_or_else(|| "(no statistics)".into()));
            return Ok(None);
        }
        accounting::reset_peak_rss();
        let counters_before = self.engine.as_deref().and_then(|e| e.counters());
        let written_before = accounting::bytes_written();
        let cpu_before = accounting::cpu_seconds();
        let live = Live::default();
        let started = Instant::now();
        let (stats, series, writer) = std::thread::scope(|scope| -> Result<_> {
            let monitor = (self.flags.stats_interval > 0.0).then(|| {
                let live = &live;
                let every = Duration::from_secs_f64(self.flags.stats_interval);
                let name = spec.name.clone();
                scope.spawn(move || monitor(live, every, &name))
            });
            let result = self.run_threads(spec, &live);
            live.stop.store(true, Ordering::Release);
            let series = monitor.and_then(|m| m.join().ok()).unwrap_or_default();
            result.map(|(s, w)| (s, series, w))
        })?;
        let wall = started.elapsed().as_secs_f64();
        let counters = self
            .engine
            .as_deref()
            .and_then(|e| e.counters())
            .map(|after| after.since(&counters_before.unwrap_or_default()));
        self.finish(
            spec,
            stats,
            series,
            writer,
            wall,
            written_before,
            cpu_before,
        )
        .map(|mut r| {
            r.counters = counters;
            Some(r)
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        spec: &Spec,
        stats: Vec<ThreadStats>,
        series: Vec<Interval>,
        writer: Option<f64>,
        wall: f64,
        written_before: u64,
        cpu_before: f64,
    ) -> Result<BenchResult> {
        let ops: u64 = stats.iter().map(|s| s.ops).sum::<u64>().max(1);
        let bytes: u64 = stats.iter().map(|s| s.bytes).sum();
        let found: u64 = stats.iter().map(|s| s.found).sum();
        let aborts: u64 = stats.iter().map(|s| s.aborts).sum();
        let thread_seconds: f64 = stats.iter().map(|s| s.seconds).sum();
        let mut hist: Option<Histogram<u64>> = None;
        for s in stats {
            if let Some(h) = s.hist {
                match hist.as_mut() {
                    Some(all) => all.add(&h).context("merge histograms")?,
                    None => hist = Some(h),
                }
            }
        }
        let message = match spec.kind {
            Kind::ReadRandom
            | Kind::ReadHot
            | Kind::ReadMissing
            | Kind::SeekRandom
            | Kind::ReadWhileWriting => {
                let mut m = format!("({found} of {ops} found)");
                let asked = spec.reads * spec.threads as u64;
                if spec.kind != Kind::ReadWhileWriting && self.flags.duration <= 0.0 && ops < asked
                {
                    m.push_str(&format!(" (read budget: {ops} of {asked} reads ran)"));
                }
                if let Some(w) = writer {
                    m.push_str(&format!(" (writer: {w:.0} writes/s)"));
                }
                m
            }
            Kind::WriteSeq | Kind::WriteRandom => {
                let asked = spec.num * spec.threads as u64;
                if self.flags.duration <= 0.0 && ops < asked {
                    format!("(write budget: {ops} of {asked} writes ran)")
                } else {
                    String::new()
                }
            }
            Kind::RandomTransaction | Kind::ReadModifyWrite => {
                let committed = if spec.kind == Kind::ReadModifyWrite {
                    ops - found
                } else {
                    ops
                };
                let mut m = format!(
                    "({committed} committed, {aborts} aborted and run again, {:.0} aborts/s)",
                    aborts as f64 / wall.max(1e-9)
                );
                if spec.kind == Kind::RandomTransaction {
                    let sums = self.transaction_sums(flags_sets(self.flags))?;
                    if sums.windows(2).any(|w| w[0] != w[1]) {
                        bail!("randomtransaction: the sets' sums differ: {sums:?}");
                    }
                    m.push_str(&format!(" (sets' sums equal: {})", sums[0]));
                }
                m
            }
            _ => String::new(),
        };
        let written = accounting::bytes_written().saturating_sub(written_before);
        let is_write = spec.kind.is_write();
        Ok(BenchResult {
            name: spec.name.clone(),
            row: spec.row.clone(),
            ops,
            bytes,
            seconds: wall,
            micros_per_op: thread_seconds * 1e6 / ops as f64,
            ops_per_sec: ops as f64 / wall.max(1e-9),
            threads: spec.threads,
            mb_per_sec: mb_per_sec(bytes, thread_seconds, spec.threads.max(1)),
            message,
            latency_us: hist.as_ref().and_then(percentiles),
            peak_rss_bytes: accounting::peak_rss(),
            disk_bytes: accounting::disk_usage(&self.dir),
            written_bytes: written,
            write_amplification: (is_write && bytes > 0).then(|| written as f64 / bytes as f64),
            cpu_seconds: accounting::cpu_seconds() - cpu_before,
            series,
            writer_ops_per_sec: writer,
            position: None,
            counters: None,
        })
    }

    fn run_threads(&mut self, spec: &Spec, live: &Live) -> Result<(Vec<ThreadStats>, Option<f64>)> {
        let flags = self.flags;
        match spec.kind {
            Kind::Compact => {
                let e = self.engine.as_deref().context("no database open")?;
                let t = Instant::now();
                e.compact()?;
                let seconds = t.elapsed().as_secs_f64();
                return Ok((
                    vec![ThreadStats {
                        ops: 1,
                        bytes: 0,
                        found: 0,
                        aborts: 0,
                        seconds,
                        hist: None,
                    }],
                    None,
                ));
            }
            Kind::Crc32c | Kind::SnappyComp | Kind::SnappyUncomp => {
                let s = codec_bench(spec.kind, flags, &mut self.sink)?;
                return Ok((vec![s], None));
            }
            Kind::FsyncCeiling => return Ok((vec![fsync_ceiling(&self.dir, spec, flags)?], None)),
            _ => {}
        }
        let engine = self.engine.as_deref().context("no database open")?;
        let readers_done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let writer = (spec.kind == Kind::ReadWhileWriting).then(|| {
                let readers_done = &readers_done;
                scope.spawn(move || background_writer(engine, spec, flags, live, readers_done))
            });
            let handles: Vec<_> = (0..spec.threads)
                .map(|t| scope.spawn(move || thread_body(engine, spec, flags, t, live)))
                .collect();
            let mut stats = Vec::new();
            let mut first_err = None;
            for h in handles {
                match h.join() {
                    Ok(Ok(s)) => stats.push(s),
                    Ok(Err(e)) => {
                        first_err.get_or_insert(e);
                    }
                    Err(_) => {
                        first_err.get_or_insert(anyhow::anyhow!("a benchmark thread panicked"));
                    }
                }
            }
            readers_done.store(true, Ordering::Release);
            let writer_rate = match writer.map(|w| w.join()) {
                Some(Ok(Ok(rate))) => Some(rate),
                Some(Ok(Err(e))) => {
                    first_err.get_or_insert(e);
                    None
                }
                Some(Err(_)) => {
                    first_err.get_or_insert(anyhow::anyhow!("the writer thread panicked"));
                    None
                }
                None => None,
            };
            match first_err {
                Some(e) => Err(e),
                None => Ok((stats, writer_rate)),
            }
        })
    }

    /// The value a benchmark's reads fold into, so no read can be optimised away.
    pub fn sink(&self) -> u32 {
        self.sink
    }
}

/// p50, p99, p99.9 and max of a histogram of nanoseconds, in microseconds; `None` if
/// it is empty.
pub fn percentiles(h: &Histogram<u64>) -> Option<Percentiles> {
    (!h.is_empty()).then(|| Percentiles {
        p50: h.value_at_quantile(0.5) as f64 / 1000.0,
        p99: h.value_at_quantile(0.99) as f64 / 1000.0,
        p999: h.value_at_quantile(0.999) as f64 / 1000.0,
        max: h.max() as f64 / 1000.0,
    })
}

/// MB/s from the same bytes and time as µs/op (`thread_seconds / ops`): the bytes over
/// the mean time of the `workers` threads that moved them, so the two figures always agree
/// (MB/s × µs/op = bytes per op × workers). The wall time around a benchmark (spawning
/// threads, opening a cursor) is in neither.
fn mb_per_sec(bytes: u64, thread_seconds: f64, workers: usize) -> Option<f64> {
    (bytes > 0).then(|| bytes as f64 / 1_048_576.0 / (thread_seconds / workers as f64).max(1e-9))
}

fn new_hist(flags: &Flags) -> Result<Option<Histogram<u64>>> {
    if !flags.histogram {
        return Ok(None);
    }
    Ok(Some(
        Histogram::new_with_bounds(1, 3_600_000_000_000, 3).context("histogram")?,
    ))
}

/// Loops `body` for `count` operations, or for `--duration` seconds, timing each.
///
/// `budget` (seconds, 0: none) ends a counted loop early once it has run that long. The
/// clock is read about every 10 ms of work (the interval follows the operations' pace), so
/// a budget costs nothing measurable whether an operation takes 1 µs or a batch 300 ms.
fn timed_loop(
    flags: &Flags,
    count: u64,
    budget: f64,
    hist: &mut Option<Histogram<u64>>,
    mut body: impl FnMut(u64) -> Result<()>,
) -> Result<(u64, f64)> {
    let started = Instant::now();
    let deadline =
        (flags.duration > 0.0).then(|| started + Duration::from_secs_f64(flags.duration));
    let cutoff = (budget > 0.0).then(|| started + Duration::from_secs_f64(budget));
    let mut i = 0u64;
    // The operation count at which the budget's clock is read next.
    let mut next_check = 1u64;
    loop {
        if let Some(d) = deadline {
            if i.is_multiple_of(64) && Instant::now() >= d {
                break;
            }
        } else if i >= count {
            break;
        } else if let Some(c) = cutoff
            && i >= next_check
        {
            let now = Instant::now();
            if now >= c {
                break;
            }
            let per_10ms = i as f64 / (now - started).as_secs_f64().max(1e-9) / 100.0;
            next_check = i + (per_10ms as u64).max(1);
        }
        match hist.as_mut() {
            Some(h) => {
                let t = Instant::now();
                body(i)?;
                let _ = h.record(t.elapsed().as_nanos().max(1) as u64);
            }
            None => body(i)?,
        }
        i += 1;
    }
    Ok((i, started.elapsed().as_secs_f64()))
}

fn thread_body(
    engine: &dyn Engine,
    spec: &Spec,
    flags: &Flags,
    t: usize,
    live: &Live,
) -> Result<ThreadStats> {
    let mut w = Worker {
        rng: Rng::new(flags.seed.wrapping_add(1000 + t as u64)),
        values: ValueGenerator::new(flags.compression_ratio, 301),
        hist: new_hist(flags)?,
        k: Vec::with_capacity(KEY_SIZE + 1),
        bytes: 0,
        found: 0,
        aborts: 0,
    };
    let (ops, seconds) = match spec.kind {
        Kind::RandomTransaction | Kind::ReadModifyWrite => {
            w.transactions(engine, spec, flags, live)?
        }
        Kind::WriteSeq | Kind::WriteRandom => w.writes(engine, spec, flags, live)?,
        Kind::DeleteSeq | Kind::DeleteRandom => w.deletes(engine, spec, flags, live)?,
        Kind::ReadSeq | Kind::ReadReverse => w.scan(engine, spec, flags, live)?,
        Kind::ReadRandom | Kind::ReadMissing | Kind::ReadHot | Kind::ReadWhileWriting => {
            w.reads(engine, spec, flags, live)?
        }
        Kind::SeekRandom => w.seeks(engine, spec, flags, live)?,
        _ => bail!("{} is not a per-thread benchmark", spec.name),
    };
    Ok(ThreadStats {
        ops,
        bytes: w.bytes,
        found: w.found,
        aborts: w.aborts,
        seconds,
        hist: w.hist,
    })
}

/// One benchmark thread's generators, buffers and tallies.
struct Worker {
    rng: Rng,
    values: ValueGenerator,
    hist: Option<Histogram<u64>>,
    /// The key buffer, reused.
    k: Vec<u8>,
    bytes: u64,
    found: u64,
    aborts: u64,
}

/// The key of `n` in transaction set `set`: a 4-digit set prefix, then the 16-digit key
/// (`randomtransaction`'s layout, as RocksDB's db_bench has it).
fn set_key(set: u64, n: u64, out: &mut Vec<u8>) {
    key(n, out);
    let prefix = format!("{:04}", set % 10_000);
    out.splice(0..0, prefix.bytes());
}

/// `--transaction_sets`, at least one.
fn flags_sets(flags: &Flags) -> u64 {
    flags.transaction_sets.max(1)
}

impl Runner<'_> {
    /// The sum of every set's values (`randomtransaction`'s check), from one scan.
    fn transaction_sums(&self, sets: u64) -> Result<Vec<u64>> {
        let e = self.engine.as_deref().context("no database open")?;
        let mut sums = vec![0u64; sets as usize];
        let mut bad = None;
        e.scan(false, usize::MAX, &mut |k, v| {
            let set = std::str::from_utf8(k.get(..4).unwrap_or_default())
                .ok()
                .and_then(|s| s.parse::<usize>().ok());
            let value = std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.parse::<u64>().ok());
            match (set, value) {
                (Some(s), Some(v)) if s < sums.len() => sums[s] += v,
                _ => bad = Some(String::from_utf8_lossy(k).into_owned()),
            }
        })?;
        if let Some(k) = bad {
            bail!("randomtransaction: an entry that is not a set's counter: {k:?}");
        }
        Ok(sums)
    }
}

impl Worker {
    /// randomtransaction and readmodifywrite: (ops, seconds). An aborted transaction is
    /// run again (with the same keys) until it commits, and counted in `aborts`.
    fn transactions(
        &mut self,
        engine: &dyn Engine,
        spec: &Spec,
        flags: &Flags,
        live: &Live,
    ) -> Result<(u64, f64)> {
        let Worker {
            rng,
            values,
            hist,
            k,
            bytes,
            found,
            aborts,
        } = self;
        let sets = flags_sets(flags);
        let mut keys: Vec<Vec<u8>> = Vec::new();
        timed_loop(flags, spec.num, 0.0, hist, |_| {
            keys.clear();
            // What the transaction writes: each set's value plus an increment
            // (randomtransaction), or one new value (readmodifywrite).
            let (increment, value) = if spec.kind == Kind::RandomTransaction {
                for set in 0..sets {
                    set_key(set, rng.uniform(spec.num), k);
                    keys.push(k.clone());
                }
                (1 + rng.uniform(100), None)
            } else {
                key(rng.uniform(spec.num), k);
                if rng.uniform(2) == 0 {
                    // The read half: a plain point read.
                    engine.get(k, &mut |v| *bytes += (k.len() + v.len()) as u64)?;
                    *found += 1;
                    live.reads.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                keys.push(k.clone());
                (0, Some(values.generate(spec.value_size).to_vec()))
            };
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            let mut update = |read: &[Option<Vec<u8>>]| -> Vec<Vec<u8>> {
                match &value {
                    Some(v) => read.iter().map(|_| v.clone()).collect(),
                    None => read
                        .iter()
                        .map(|v| {
                            let now = v
                                .as_deref()
                                .and_then(|v| std::str::from_utf8(v).ok()?.parse::<u64>().ok())
                                .unwrap_or(0);
                            (now + increment).to_string().into_bytes()
                        })
                        .collect(),
                }
            };
            while !engine.transact(&refs, &mut update, spec.sync)? {
                *aborts += 1;
            }
            *bytes += refs.iter().map(|k| k.len() as u64).sum::<u64>();
            live.writes.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
    }

    /// fillseq, fillrandom and their batched and synced forms: (ops, seconds).
    fn writes(
        &mut self,
        engine: &dyn Engine,
        spec: &Spec,
        flags: &Flags,
        live: &Live,
    ) -> Result<(u64, f64)> {
        let Worker {
            rng,
            values,
            hist,
            k,
            bytes,
            ..
        } = self;
        let (mut batch_keys, mut batch_values) = (Vec::new(), Vec::new());
        let mut limiter =
            (flags.writes_per_second > 0).then(|| RateLimiter::new(flags.writes_per_second));
        let batches = spec.num.div_ceil(spec.batch as u64);
        let (n, s) = timed_loop(flags, batches, flags.write_budget, hist, |b| {
            let first = b * spec.batch as u64;
            let keyno = |j: u64, rng: &mut Rng| {
                if spec.kind == Kind::WriteSeq {
                    first + j
                } else {
                    rng.uniform(spec.num)
                }
            };
            if spec.batch == 1 {
                if let Some(l) = limiter.as_mut() {
                    l.acquire();
                }
                key(keyno(0, rng), k);
                let v = values.generate(spec.value_size);
                engine.put(k, v, spec.sync)?;
            } else {
                // Keys and values go into two reused buffers; the batch borrows them.
                batch_keys.clear();
                batch_values.clear();
                for j in 0..spec.batch as u64 {
                    key(keyno(j, rng), k);
                    batch_keys.extend_from_slice(k);
                    batch_values.extend_from_slice(values.generate(spec.value_size));
                }
                let (kl, vl) = (k.len(), spec.value_size);
                let ops: Vec<BatchOp> = (0..spec.batch)
                    .map(|j| {
                        let v = &batch_values[j * vl..(j + 1) * vl];
                        (&batch_keys[j * kl..(j + 1) * kl], Some(v))
                    })
                    .collect();
                engine.write_batch(&ops, spec.sync)?;
            }
            *bytes += ((spec.value_size + KEY_SIZE) * spec.batch) as u64;
            live.writes.fetch_add(spec.batch as u64, Ordering::Relaxed);
            Ok(())
        })?;
        Ok((n * spec.batch as u64, s))
    }

    /// deleteseq and deleterandom.
    fn deletes(
        &mut self,
        engine: &dyn Engine,
        spec: &Spec,
        flags: &Flags,
        live: &Live,
    ) -> Result<(u64, f64)> {
        let Worker { rng, hist, k, .. } = self;
        timed_loop(flags, spec.num, 0.0, hist, |i| {
            let n = if spec.kind == Kind::DeleteSeq {
                i
            } else {
                rng.uniform(spec.num)
            };
            key(n, k);
            engine.delete(k, spec.sync)?;
            live.writes.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
    }

    /// readseq and readreverse: db_bench's ReadSequential, which counts the key's and the
    /// value's lengths and never reads the value's bytes, or with --touch_values every
    /// value read (`access.rs`).
    fn scan(
        &mut self,
        engine: &dyn Engine,
        spec: &Spec,
        flags: &Flags,
        live: &Live,
    ) -> Result<(u64, f64)> {
        let bytes = &mut self.bytes;
        let access = ValueAccess::of(flags.touch_values);
        let started = Instant::now();
        let n = engine.scan(
            spec.kind == Kind::ReadReverse,
            spec.reads as usize,
            &mut |kk, v| {
                *bytes += (kk.len() + v.len()) as u64;
                access.scanned(v);
            },
        )? as u64;
        live.reads.fetch_add(n, Ordering::Relaxed);
        Ok((n, started.elapsed().as_secs_f64()))
    }

    /// readrandom, readmissing, readhot and readwhilewriting's readers: db_bench's
    /// ReadRandom, whose value lands in a reused buffer (its std::string), only its length
    /// looked at, or with --touch_values read in place (`access.rs`).
    fn reads(
        &mut self,
        engine: &dyn Engine,
        spec: &Spec,
        flags: &Flags,
        live: &Live,
    ) -> Result<(u64, f64)> {
        let Worker {
            rng,
            hist,
            k,
            bytes,
            found,
            ..
        } = self;
        let mut out = Vec::new();
        let access = ValueAccess::of(flags.touch_values);
        let range = if spec.kind == Kind::ReadHot {
            spec.num.div_ceil(100)
        } else {
            spec.num
        };
        let budget = if spec.kind == Kind::ReadWhileWriting {
            0.0
        } else {
            flags.read_budget
        };
        timed_loop(flags, spec.reads, budget, hist, |_| {
            key(rng.uniform(range), k);
            if spec.kind == Kind::ReadMissing {
                k.push(b'.');
            }
            let mut len = 0;
            if engine.get(k, &mut |v| {
                len = v.len();
                access.read(v, &mut out);
            })? {
                *found += 1;
                *bytes += (k.len() + len) as u64;
            }
            live.reads.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
    }

    /// seekrandom.
    fn seeks(
        &mut self,
        engine: &dyn Engine,
        spec: &Spec,
        flags: &Flags,
        live: &Live,
    ) -> Result<(u64, f64)> {
        let Worker {
            rng,
            hist,
            k,
            found,
            ..
        } = self;
        timed_loop(flags, spec.reads, flags.read_budget, hist, |_| {
            key(rng.uniform(spec.num), k);
            if engine.seek(k)?.is_some_and(|got| got == *k) {
                *found += 1;
            }
            live.reads.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
    }
}

/// The one writer of readwhilewriting: random puts until the readers are done.
fn background_writer(
    engine: &dyn Engine,
    spec: &Spec,
    flags: &Flags,
    live: &Live,
    readers_done: &AtomicBool,
) -> Result<f64> {
    let mut rng = Rng::new(flags.seed.wrapping_add(999));
    let mut values = ValueGenerator::new(flags.compression_ratio, 302);
    let mut limiter =
        (flags.writes_per_second > 0).then(|| RateLimiter::new(flags.writes_per_second));
    let mut k = Vec::with_capacity(KEY_SIZE);
    let started = Instant::now();
    let mut n = 0u64;
    while !readers_done.load(Ordering::Acquire) {
        if let Some(l) = limiter.as_mut() {
            l.acquire();
        }
        key(rng.uniform(spec.num), &mut k);
        engine.put(&k, values.generate(spec.value_size), false)?;
        live.writes.fetch_add(1, Ordering::Relaxed);
        n += 1;
    }
    Ok(n as f64 / started.elapsed().as_secs_f64().max(1e-9))
}

/// Prints and keeps throughput per interval until told to stop.
fn monitor(live: &Live, every: Duration, name: &str) -> Vec<Interval> {
    let started = Instant::now();
    let mut series = Vec::new();
    let (mut last_r, mut last_w, mut last_t) = (0u64, 0u64, 0.0f64);
    while !live.stop.load(Ordering::Acquire) {
        let step = Duration::from_millis(20).min(every);
        std::thread::sleep(step);
        let t = started.elapsed().as_secs_f64();
        if t - last_t + 1e-9 < every.as_secs_f64() {
            continue;
        }
        let (r, w) = (
            live.reads.load(Ordering::Relaxed),
            live.writes.load(Ordering::Relaxed),
        );
        let dt = t - last_t;
        let i = Interval {
            at: t,
            reads_per_sec: (r - last_r) as f64 / dt,
            writes_per_sec: (w - last_w) as f64 / dt,
        };
        eprintln!(
            "{name} ... {:>7.1} s: {:>10.0} reads/s {:>10.0} writes/s",
            t, i.reads_per_sec, i.writes_per_sec
        );
        series.push(i);
        (last_r, last_w, last_t) = (r, w, t);
    }
    series
}

/// fsyncceiling: what `fillsync` could reach on this disk if the engine cost nothing. A
/// file in the database's directory (created there, removed after) gets 100 bytes
/// appended and `fdatasync`ed per operation, as a synced WAL write does.
fn fsync_ceiling(dir: &std::path::Path, spec: &Spec, flags: &Flags) -> Result<ThreadStats> {
    use std::io::Write as _;
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let path = dir.join("fsyncceiling.tmp");
    let mut file =
        std::fs::File::create(&path).with_context(|| format!("create {}", path.display()))?;
    let record = [b'r'; 100];
    let mut hist = new_hist(flags)?;
    let result = timed_loop(flags, spec.num, 0.0, &mut hist, |_| {
        file.write_all(&record)?;
        file.sync_data()?;
        Ok(())
    });
    drop(file);
    let _ = std::fs::remove_file(&path);
    let (ops, seconds) =
        result.with_context(|| format!("append and fdatasync {}", path.display()))?;
    Ok(ThreadStats {
        ops,
        bytes: ops * record.len() as u64,
        found: 0,
        aborts: 0,
        seconds,
        hist,
    })
}

/// crc32c, snappycomp and snappyuncomp: 4 KiB blocks until a fixed volume is done.
fn codec_bench(kind: Kind, flags: &Flags, sink: &mut u32) -> Result<ThreadStats> {
    let mut values = ValueGenerator::new(flags.compression_ratio, 301);
    let block = values.generate(4096).to_vec();
    let compressed = snap::raw::Encoder::new().compress_vec(&block)?;
    let volume: u64 = match kind {
        Kind::Crc32c => 500 << 20,
        _ => 1 << 30,
    };
    let mut encoder = snap::raw::Encoder::new();
    let mut decoder = snap::raw::Decoder::new();
    let mut out = vec![0u8; snap::raw::max_compress_len(block.len()).max(block.len())];
    let started = Instant::now();
    let (mut bytes, mut ops) = (0u64, 0u64);
    while bytes < volume {
        match kind {
            Kind::Crc32c => *sink = sink.wrapping_add(strata::checksum::crc32c(&block)),
            Kind::SnappyComp => {
                *sink = sink.wrapping_add(encoder.compress(&block, &mut out)? as u32)
            }
            _ => *sink = sink.wrapping_add(decoder.decompress(&compressed, &mut out)? as u32),
        }
        bytes += block.len() as u64;
        ops += 1;
    }
    Ok(ThreadStats {
        ops,
        bytes,
        found: 0,
        aborts: 0,
        seconds: started.elapsed().as_secs_f64(),
        hist: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let flags = Flags::try_parse_from(["strata-bench", "--histogram"]).unwrap();
        let mut h = new_hist(&flags).unwrap().unwrap();
        assert!(percentiles(&h).is_none());
        // 1..=1000 microseconds, once each.
        for us in 1..=1000u64 {
            h.record(us * 1000).unwrap();
        }
        let p = percentiles(&h).unwrap();
        let close = |got: f64, want: f64| (got - want).abs() <= want * 0.002 + 0.01;
        assert!(close(p.p50, 500.0), "{p:?}");
        assert!(close(p.p99, 990.0), "{p:?}");
        assert!(close(p.p999, 999.0), "{p:?}");
        assert!(close(p.max, 1000.0), "{p:?}");
    }

    #[test]
    fn benchmark_names_follow_db_bench() {
        let flags = Flags::try_parse_from(["strata-bench", "--num=5000"]).unwrap();
        assert_eq!(spec("fillsync", &flags).unwrap().num, 5);
        let f = spec("fill100K", &flags).unwrap();
        assert_eq!((f.num, f.value_size, f.fresh_db), (5, 100_000, true));
        assert_eq!(spec("fillbatch", &flags).unwrap().batch, 1000);
        assert!(!spec("overwrite", &flags).unwrap().fresh_db);
        assert!(spec("nosuchbench", &flags).is_err());
    }

    #[test]
    fn fsync_ceiling_appends_and_syncs_in_the_directory_then_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let db_dir = dir.path().join("db");
        let flags = Flags::try_parse_from(["strata-bench", "--num=7000", "--histogram"]).unwrap();
        let s = spec("fsyncceiling", &flags).unwrap();
        assert_eq!(s.num, 7);
        let t = fsync_ceiling(&db_dir, &s, &flags).unwrap();
        assert_eq!((t.ops, t.bytes), (7, 700));
        assert_eq!(t.hist.as_ref().map(|h| h.len()), Some(7));
        assert!(t.seconds > 0.0);
        assert_eq!(
            std::fs::read_dir(&db_dir).unwrap().count(),
            0,
            "file removed"
        );
    }

    #[test]
    fn a_small_run_on_every_engine_prints_every_line() {
        for kind in crate::peers::all()
            .into_iter()
            .chain(crate::peers::by_name_only())
        {
            small_run(kind, false);
        }
    }

    /// Four threads on 100 keys a set: transactions meet often, and an engine that loses
    /// an update (a read not from the transaction's snapshot, a conflict missed) ends
    /// with the sets' sums apart, which the run itself reports as a failure.
    #[test]
    fn transactions_under_four_threads_keep_every_engines_sums_equal() {
        for kind in crate::peers::all()
            .into_iter()
            .chain(crate::peers::by_name_only())
            .filter(|k| k.has_transactions())
        {
            let dir = tempfile::tempdir().unwrap();
            let flags = Flags::try_parse_from([
                "strata-bench",
                "--num=100",
                "--threads=4",
                "--duration=0.3",
            ])
            .unwrap();
            let settings = crate::settings(&flags);
            let mut runner = Runner::new(&flags, kind, dir.path().join("db"), settings);
            let r = runner
                .run(&spec("randomtransaction", &flags).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", kind.name()))
                .unwrap();
            assert!(
                r.message.contains("sums equal"),
                "{}: {}",
                kind.name(),
                r.message
            );
        }
    }

    #[test]
    fn a_small_run_touching_every_value_on_every_engine() {
        for kind in crate::peers::all() {
            small_run(kind, true);
        }
    }

    /// MB/s and µs/op tell the same story: from one figure and the bytes per operation,
    /// the other follows (the text line's rounding aside).
    fn assert_rates_agree(r: &BenchResult, engine: &str) {
        let Some(mb) = r.mb_per_sec else { return };
        let per_op_mb = r.bytes as f64 / r.ops as f64 / 1_048_576.0;
        let implied = per_op_mb * r.threads.max(1) as f64 / (r.micros_per_op / 1e6);
        assert!(
            (mb - implied).abs() <= implied * 1e-6,
            "{engine} {}: {mb} MB/s, but {} micros/op of {} bytes each imply {implied}",
            r.name,
            r.micros_per_op,
            r.bytes / r.ops
        );
        // The printed line too.
        let line = r.line();
        let printed: f64 = line
            .split(';')
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("no MB/s in {line:?}"));
        assert!(
            (printed - mb).abs() <= 0.05 + mb * 1e-9,
            "{engine}: {line:?} prints {printed}, the result holds {mb}"
        );
    }

    fn small_run(kind: &dyn EngineKind, touch: bool) {
        let dir = tempfile::tempdir().unwrap();
        let flags = Flags::try_parse_from([
            "strata-bench",
            "--num=2000",
            "--histogram",
            "--stats_interval=0.01",
            &format!("--touch_values={touch}"),
        ])
        .unwrap();
        let settings = Settings {
            cache_size: 1 << 20,
            write_buffer_size: 64 << 10,
            max_file_size: 64 << 10,
            block_size: 4096,
            bloom_bits: Some(10),
            open_files: 100,
            compression: true,
            mmap_write: true,
            mmap_read: true,
            subcompactions: 2,
            memtable_run_size: strata::memtable::MIN_RUN_BYTES,
            max_write_buffer_number: 2,
            level0_triggers: (8, 12),
            blob_threshold: 512,
            blob_gc_ratio: 0.25,
            blob_file_size: None,
            blob_compression: true,
        };
        let mut runner = Runner::new(&flags, kind, dir.path().join("db"), settings);
        for name in [
            "fillseq",
            "fillrandom",
            "overwrite",
            "fillbatch",
            "readseq",
            "readreverse",
            "readrandom",
            "readmissing",
            "readhot",
            "seekrandom",
            "compact",
            "readwhilewriting",
            "readmodifywrite",
            "deleterandom",
            "deleteseq",
        ] {
            let Some(r) = runner.run(&spec(name, &flags).unwrap()).unwrap() else {
                let na = (name == "compact" && !kind.has_compaction())
                    || (name == "fillbatch" && !kind.has_batches())
                    || (name == "readmodifywrite" && !kind.has_transactions());
                assert!(na, "{}: {name} printed nothing", kind.name());
                continue;
            };
            assert!(
                r.ops > 0 && r.micros_per_op > 0.0,
                "{} {name}: {r:?}",
                kind.name()
            );
            assert!(r.line().starts_with(name), "{}", r.line());
            assert_rates_agree(&r, kind.name());
            if name == "readmissing" {
                assert!(
                    r.message.starts_with("(0 of"),
                    "{}: {}",
                    kind.name(),
                    r.message
                );
            }
            if name == "readhot" || name == "seekrandom" {
                assert!(
                    !r.message.starts_with("(0 of"),
                    "{} {name} found nothing: {}",
                    kind.name(),
                    r.message
                );
            }
            if name == "readrandom" {
                assert!(r.message.contains("found"), "{}", r.message);
                assert!(r.latency_us.is_some());
            }
        }
        // deleteseq removed every key: a scan finds nothing (but on the null engine,
        // whose scans are the harness's cost alone and never depend on what was written).
        let after = runner
            .run(&spec("readseq", &flags).unwrap())
            .unwrap()
            .unwrap();
        if kind.name() != "null" {
            assert_eq!(after.bytes, 0);
        }
        // Transactions: every set's sum equal at the end (checked by the run itself).
        match runner
            .run(&spec("randomtransaction", &flags).unwrap())
            .unwrap()
        {
            Some(r) => assert!(
                r.message.contains("2000 committed") && r.message.contains("sums equal"),
                "{}: {}",
                kind.name(),
                r.message
            ),
            None => assert!(!kind.has_transactions(), "{}", kind.name()),
        }
    }
}
