//! `strata-bench`: LevelDB's db_bench workloads on Strata and its peers, with latency
//! histograms, resource accounting, JSON results and preset suites.

mod access;
mod accounting;
mod bench;
mod child;
mod dbbench;
mod engine;
mod flags;
mod journal;
mod outcome;
mod peers;
mod probe;
mod progress;
mod report;
mod results;
mod suite;
mod summary;
mod watchdog;
mod workload;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};

use crate::bench::{KEY_SIZE, Runner};
use crate::engine::{EngineKind, Settings};
use crate::flags::Flags;
use crate::outcome::GroupOutcome;
use crate::results::{Document, EngineRun};

/// Peers that later builds add, named so `--engines` can say they are not built.
const PEERS: &[&str] = &[
    #[cfg(not(feature = "leveldb"))]
    "leveldb",
    #[cfg(not(feature = "rocksdb"))]
    "rocksdb",
    #[cfg(not(feature = "rocksdb"))]
    "rocksdb-blob",
    #[cfg(not(feature = "rocksdb"))]
    "rocksdb-optimistic",
    #[cfg(not(all(feature = "rocksdb", rocksdb_base_db)))]
    "rocksdb-pessimistic",
    #[cfg(not(feature = "sqlite"))]
    "sqlite3",
    #[cfg(not(feature = "sqlite"))]
    "sqlite3-wal",
    #[cfg(not(feature = "kyoto"))]
    "kyoto-treedb",
    #[cfg(not(feature = "wiredtiger"))]
    "wiredtiger-lsm",
    #[cfg(not(feature = "wiredtiger"))]
    "wiredtiger-btree",
    #[cfg(not(feature = "lmdb"))]
    "lmdb",
    #[cfg(not(any(feature = "fjall", feature = "fjall-ssi")))]
    "fjall",
    #[cfg(not(feature = "fjall"))]
    "fjall-tx",
    #[cfg(not(feature = "fjall-ssi"))]
    "fjall-ssi",
];

/// One column of a run: an engine this harness drives, or a peer's own benchmark program.
#[derive(Clone)]
enum Column {
    /// Driven through the engine seam.
    Engine(&'static dyn EngineKind),
    /// One of the LevelDB page's own benchmark programs, one process per group.
    DbBench(dbbench::DbBench),
}

impl Column {
    fn name(&self) -> &'static str {
        match self {
            Column::Engine(k) => k.name(),
            Column::DbBench(d) => d.kind().column(),
        }
    }
    fn version(&self) -> String {
        match self {
            Column::Engine(k) => k.version(),
            Column::DbBench(d) => d.version().to_string(),
        }
    }
}

fn select_engines(list: &str) -> Result<Vec<Column>> {
    let all = peers::all();
    if list == "all" {
        for p in PEERS {
            eprintln!("note: engine {p} is not built into this strata-bench yet; skipped");
        }
        let mut out: Vec<Column> = all.into_iter().map(Column::Engine).collect();
        for kind in dbbench::Program::ALL {
            match dbbench::DbBench::locate(kind) {
                Ok(d) => out.push(Column::DbBench(d)),
                Err(e) => eprintln!("note: {} skipped: {e:#}", kind.column()),
            }
        }
        return Ok(out);
    }
    let mut out = Vec::new();
    for name in list.split(',').filter(|s| !s.is_empty()) {
        match all
            .iter()
            .copied()
            .find(|k| k.name() == name)
            .or_else(|| peers::find(name))
        {
            Some(k) => out.push(Column::Engine(k)),
            None if let Some(kind) = dbbench::Program::ALL
                .into_iter()
                .find(|p| p.column() == name) =>
            {
                out.push(Column::DbBench(dbbench::DbBench::locate(kind)?))
            }
            None if PEERS.contains(&name) => {
                eprintln!("note: engine {name} is not built into this strata-bench yet; skipped")
            }
            None => bail!("unknown engine {name:?}"),
        }
    }
    if out.is_empty() {
        bail!("no engine to run");
    }
    Ok(out)
}

fn settings(f: &Flags) -> Settings {
    Settings {
        cache_size: f.cache_size,
        write_buffer_size: f.write_buffer_size,
        max_file_size: f.max_file_size,
        block_size: f.block_size,
        bloom_bits: f.bloom(),
        open_files: f.open_files,
        mmap_write: f.mmap_write,
        mmap_read: f.mmap_read,
        subcompactions: f.subcompactions,
        memtable_run_size: f.memtable_run_size,
        max_write_buffer_number: f.max_write_buffer_number,
        level0_triggers: (
            f.level0_slowdown_writes_trigger,
            f.level0_stop_writes_trigger,
        ),
        blob_threshold: f.blob_threshold,
        blob_gc_ratio: f.blob_gc_ratio,
        blob_file_size: f.blob_file_size,
        blob_compression: f.blob_compression,
        compression: f.compression,
    }
}

fn header(column: &Column, f: &Flags, label: &str, machine: &accounting::Machine) {
    let raw = (KEY_SIZE + f.value_size) as f64 * f.num as f64 / 1_048_576.0;
    let file =
        (KEY_SIZE as f64 + f.value_size as f64 * f.compression_ratio) * f.num as f64 / 1_048_576.0;
    println!("Engine:     {} {}", column.name(), column.version());
    if !label.is_empty() {
        println!("Group:      {label}");
    }
    println!("CPU:        {} * {}", machine.cores, machine.cpu);
    println!("Keys:       {KEY_SIZE} bytes each");
    println!(
        "Values:     {} bytes each ({} bytes after compression)",
        f.value_size,
        (f.value_size as f64 * f.compression_ratio) as usize
    );
    println!("Entries:    {}", f.num);
    println!("RawSize:    {raw:.1} MB (estimated)");
    println!("FileSize:   {file:.1} MB (estimated)");
    println!(
        "Settings:   write_buffer {} B, cache {} B, block {} B, bloom {:?}, compression {}",
        f.write_buffer_size,
        f.cache_size,
        f.block_size,
        f.bloom(),
        f.compression
    );
    println!("------------------------------------------------");
}

fn run(flags: &Flags) -> Result<()> {
    if let Some(gi) = flags.child_group {
        return child::serve(flags, gi);
    }
    let engines = select_engines(&flags.engines)?;
    let groups = suite::groups(flags)?;
    let temp = match &flags.db {
        Some(_) => None,
        None => Some(
            tempfile::Builder::new()
                .prefix("strata-bench-")
                .tempdir()
                .context("create a temporary directory")?,
        ),
    };
    let base: PathBuf = match (&flags.db, &temp) {
        (Some(d), _) => d.clone(),
        (None, Some(t)) => t.path().to_path_buf(),
        (None, None) => std::env::temp_dir(),
    };
    std::fs::create_dir_all(&base)?;
    let machine = accounting::machine(&base);
    let mut doc = Document {
        tool: "strata-bench".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        started_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        suite: flags.suite.clone(),
        args: std::env::args().collect(),
        commit: std::process::Command::new("git")
            .args(["describe", "--always", "--dirty"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()),
        machine: machine.clone(),
        page_cache: "not dropped between benchmarks: the database may sit in the OS page cache"
            .into(),
        probes: Vec::new(),
        runs: Vec::new(),
        summary: Vec::new(),
    };
    let rounds = flags.repeats.max(1);
    let timeout = flags.group_timeout();
    let home = suite::homes(&groups);
    let mut journaled = match &flags.json {
        Some(json) if flags.resume => journal::load(json, &doc.args, &home)?,
        _ => Vec::new(),
    };
    let last_in_home = |gi: usize| home.iter().rposition(|h| *h == home[gi]) == Some(gi);
    let mut steps = Vec::new();
    for round in 0..rounds {
        for group in 0..groups.len() {
            for c in &engines {
                steps.push(progress::Step {
                    engine: c.name().to_string(),
                    group,
                    round,
                });
            }
        }
    }
    let mut progress = progress::Progress::new(steps);
    // Round by round, group by group, engine by engine: every engine meets the machine in
    // the same state of noise as often as the others.
    for round in 0..rounds {
        let reading = probe::take(round);
        println!("{}\n", probe::line(&reading, rounds));
        doc.probes.push(reading);
        for (gi, g) in groups.iter().enumerate() {
            for column in &engines {
                if rounds > 1 {
                    println!("Round:      {} of {rounds}", round + 1);
                }
                header(column, &g.flags, &g.label, &machine);
                let dir = if flags.db.is_some() && groups.len() == 1 {
                    base.join(column.name())
                } else {
                    base.join(format!("{}-{}", column.name(), home[gi]))
                };
                if let Some(i) = journaled.iter().position(|r| {
                    r.engine == column.name() && r.round == round && r.group_index == gi
                }) {
                    let run = journaled.swap_remove(i);
                    println!("(from the journal of the interrupted run)");
                    for r in &run.results {
                        print_result(r)?;
                    }
                    doc.runs.push(run);
                    println!();
                    eprintln!("{}", progress.step_done(None));
                    continue;
                }
                let started = std::time::Instant::now();
                // A group that reads what an earlier one built cannot run on what a
                // failed group left.
                let broken = doc.runs.iter().any(|run| {
                    run.engine == column.name()
                        && run.round == round
                        && run.failure.is_some()
                        && home[run.group_index] == home[gi]
                });
                let outcome = match column {
                    _ if broken => GroupOutcome::not_run(
                        column.name(),
                        &g.specs,
                        "the earlier group that built its database failed".into(),
                    ),
                    Column::Engine(kind) if flags.process_per_group => {
                        child::run_group(kind.name(), g, gi, &dir, timeout)
                    }
                    Column::Engine(kind) => {
                        run_engine_group(*kind, g, dir.clone(), &mut |_| Ok(()))?
                    }
                    Column::DbBench(program) => run_program_group(program, g, &dir),
                };
                if let Some(f) = &outcome.failure {
                    println!(
                        "FAILED:     {} in group {:?}: {}",
                        column.name(),
                        g.label,
                        f.what
                    );
                }
                if temp.is_some() && last_in_home(gi) {
                    let _ = std::fs::remove_dir_all(&dir);
                }
                doc.runs.push(EngineRun {
                    engine: column.name().into(),
                    group: g.label.clone(),
                    group_index: gi,
                    round,
                    engine_version: column.version(),
                    settings: settings(&g.flags),
                    // The page's own programs keep their rule.
                    values_touched: g.flags.touch_values && matches!(column, Column::Engine(_)),
                    results: outcome.results,
                    not_available: outcome.not_available,
                    sweep: g.sweep.clone(),
                    failure: outcome.failure,
                });
                if let Some(json) = &flags.json {
                    journal::save(json, &doc)?;
                }
                println!();
                // A group that ran nothing (skipped, or failed before its first result)
                // says nothing of how long the next ones take.
                let ran = !doc.runs.last().is_some_and(|r| r.results.is_empty());
                eprintln!("{}", progress.step_done(ran.then(|| started.elapsed())));
            }
        }
    }
    // One more reading after the last round: every round now lies between two.
    let reading = probe::take(rounds);
    println!("{}\n", probe::line(&reading, rounds));
    doc.probes.push(reading);
    doc.summary = summary::summarize(&doc.runs);
    let names: Vec<&str> = engines.iter().map(Column::name).collect();
    if names.len() > 1 || rounds > 1 {
        println!("{}", summary::table(&doc.summary, &names));
    }
    let states = probe::round_states(&doc.probes, rounds);
    if let Some(split) = summary::by_state(&doc.summary, &doc.runs, &states, &names) {
        println!("{split}");
    }
    if let Some(state) = probe::summary(&doc.probes) {
        println!("{state}");
    }
    if let Some(line) = probe::states_line(&doc.probes, rounds) {
        println!("{line}");
    }
    // Every group run that did not finish (journaled runs all did: a failed one is run
    // again).
    let failed: Vec<&EngineRun> = doc.runs.iter().filter(|r| r.failure.is_some()).collect();
    if let Some(path) = &flags.json {
        let text = serde_json::to_string_pretty(&doc)?;
        std::fs::write(path, text).with_context(|| format!("write {}", path.display()))?;
        if failed.is_empty() {
            journal::remove(path);
        } else {
            eprintln!(
                "the journal {} is kept: the same command with --resume runs the failed groups again",
                journal::path(path).display()
            );
        }
        eprintln!("results written to {}", path.display());
    }
    if !failed.is_empty() {
        bail!("{}", outcome::summary_line(&failed));
    }
    Ok(())
}

fn print_result(r: &results::BenchResult) -> Result<()> {
    println!("{}", r.line());
    if let Some(p) = &r.latency_us {
        println!(
            "             : latency p50 {:.2} us, p99 {:.2} us, p99.9 {:.2} us, max {:.2} us",
            p.p50, p.p99, p.p999, p.max
        );
    }
    std::io::stdout().flush()?;
    Ok(())
}

/// Runs one group on an engine the harness drives, benchmark by benchmark; `progress`
/// is shown the outcome so far before each benchmark (`running` names it).
fn run_engine_group(
    kind: &'static dyn EngineKind,
    g: &suite::Group,
    dir: PathBuf,
    progress: &mut dyn FnMut(&GroupOutcome) -> Result<()>,
) -> Result<GroupOutcome> {
    let mut runner = Runner::new(&g.flags, kind, dir, settings(&g.flags));
    let mut out = GroupOutcome::default();
    for (position, spec) in g.specs.iter().enumerate() {
        out.running = Some(position);
        progress(&out)?;
        if let Some(why) = runner.lacks(spec) {
            out.not_available.push(outcome::not_available(
                position,
                spec,
                format!("{} has {why}", kind.name()),
                false,
            ));
        }
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_message(format!("{} {}", kind.name(), spec.name));
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        let outcome = inject(g.flags.fault.as_deref(), kind.name(), &spec.name)
            .and_then(|()| runner.run(spec));
        bar.finish_and_clear();
        match outcome {
            Ok(Some(mut r)) => {
                r.position = Some(position);
                print_result(&r)?;
                out.results.push(r);
            }
            Ok(None) => {}
            Err(e) if e.downcast_ref::<engine::Cannot>().is_some() => {
                let why = format!("{e}");
                println!("{:<12} : n/a ({} cannot: {why})", spec.name, kind.name());
                out.not_available.push(outcome::not_available(
                    position,
                    spec,
                    format!("{} has {why}", kind.name()),
                    false,
                ));
                // The database may be half-written: the group's later benchmarks start
                // over only if they make a fresh database.
            }
            Err(e) => {
                // One engine failing must not lose the others' figures: the rest of its
                // group is reported as not run, with the reason.
                let why = format!("{e:#}");
                println!("{:<12} : FAILED ({why})", spec.name);
                eprintln!(
                    "strata-bench: benchmark {} on {} failed: {why}",
                    spec.name,
                    kind.name()
                );
                out.fail_at(kind.name(), &g.specs, position, why, Vec::new());
                break;
            }
        }
    }
    out.running = None;
    std::hint::black_box(runner.sink());
    runner.close();
    Ok(out)
}

/// `--fault=ENGINE:BENCHMARK:abort|hang|error`, for the harness's own tests: when
/// `engine` reaches `benchmark`, abort the process (SIGABRT), hang, or fail.
fn inject(fault: Option<&str>, engine: &str, benchmark: &str) -> Result<()> {
    let Some(fault) = fault else {
        return Ok(());
    };
    let parts: Vec<&str> = fault.split(':').collect();
    let [e, b, how] = parts[..] else {
        bail!("--fault takes ENGINE:BENCHMARK:abort|hang|error, not {fault:?}");
    };
    if e != engine || b != benchmark {
        return Ok(());
    }
    match how {
        "abort" => std::process::abort(),
        "hang" => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        "error" => bail!("an error injected by --fault"),
        other => bail!("--fault: no fault {other:?} (abort, hang, error)"),
    }
}

/// Runs one group as one process of LevelDB's own db_bench.
fn run_program_group(
    program: &dbbench::DbBench,
    g: &suite::Group,
    dir: &std::path::Path,
) -> GroupOutcome {
    match program.run_group(&g.flags, &g.specs, dir) {
        Ok(run) => {
            for na in &run.not_available {
                println!("{:<12} : n/a ({})", na.name, na.reason);
            }
            for r in &run.results {
                let _ = print_result(r);
            }
            GroupOutcome {
                results: run.results,
                not_available: run.not_available,
                ..GroupOutcome::default()
            }
        }
        Err(e) => {
            let why = format!("{e:#}");
            let name = program.kind().column();
            println!("{:<12} : FAILED ({why})", name);
            eprintln!("strata-bench: {name} failed: {why}");
            GroupOutcome::failed_from_start(name, &g.specs, why, Vec::new())
        }
    }
}

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("site") {
        let Some(dir) = std::env::args().nth(2) else {
            eprintln!("usage: strata-bench site DIR   (writes DIR/index.html: every run in DIR)");
            return ExitCode::from(2);
        };
        return match report::site::run(std::path::Path::new(&dir)) {
            Ok(index) => {
                println!("index written to {}", index.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("strata-bench site: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    if std::env::args().nth(1).as_deref() == Some("report") {
        let args = match report::Args::try_parse_from(std::env::args().skip(1)) {
            Ok(a) => a,
            Err(e) => {
                let _ = e.print();
                return if e.use_stderr() {
                    ExitCode::from(2)
                } else {
                    ExitCode::SUCCESS
                };
            }
        };
        return match report::run(&args) {
            Ok(index) => {
                println!("report written to {}", index.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("strata-bench report: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    let flags = match Flags::try_parse() {
        Ok(f) => f,
        Err(e) if e.use_stderr() => {
            eprint!("{}", flags::parse_error_message(&e));
            return ExitCode::from(2);
        }
        Err(e) => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    match run(&flags) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strata-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}
