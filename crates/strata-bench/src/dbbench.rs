//! Columns run by the LevelDB page's own benchmark programs, not through this harness:
//! `leveldb-dbbench` (LevelDB by its release `db_bench`, so every ratio against it is
//! against LevelDB at its own speed), `sqlite3-dbbench` (`db_bench_sqlite3`) and
//! `kyoto-dbbench` (`db_bench_tree_db`): SQLite3 and Kyoto TreeDB exactly as the page
//! measured them, beside strata-bench's own peers.
//!
//! `scripts/build-leveldb-dbbench.sh` builds the three (LevelDB 1.23's `benchmarks/` from
//! Debian's source package, `-O3 -DNDEBUG`; `db_bench` seeded `1000 + thread` as the 2011
//! page's was, plus a `--compression` flag; the other two as shipped) into
//! `target/leveldb-dbbench/`. A group of benchmarks runs as one process of a program,
//! `--benchmarks=a,b,c` with the group's flags, exactly as db_bench is used by hand: the database stays open from one benchmark to the next, as it does for
//! every other engine. Its result lines are read as they come; at each line the process's
//! peak memory, bytes written and CPU time are read from `/proc` (and the peak reset), and
//! the database directory is measured, so its rows carry the same accounting as the
//! others'. What db_bench cannot do as strata-bench means it (a benchmark it lacks, a rate
//! limit, a duration) is an n/a row with the reason.
//!
//! Differences that remain, written down in `docs/bench.md`: db_bench's writes and random
//! reads are not time-boxed (`--write_budget` and `--read_budget` do not apply), its
//! `fillsync` writes `num / 1000` entries where the baseline suite writes 10,000 (µs/op compares), and it prints no
//! latency histogram this harness reads.

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::accounting::{self, Process};
use crate::bench::Spec;
use crate::flags::Flags;
use crate::outcome;
use crate::results::{BenchResult, NotAvailable};
use crate::watchdog::Watchdog;

/// Where the build script puts the programs, relative to the cargo target directory.
const BUILT_IN: &str = "leveldb-dbbench";

/// One of the LevelDB page's benchmark programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// `db_bench`: LevelDB.
    LevelDb,
    /// `db_bench_sqlite3`: SQLite3 (WAL, one transaction per write, 1 KiB pages).
    Sqlite3,
    /// `db_bench_tree_db`: Kyoto Cabinet TreeDB (LZO, 1 KiB pages).
    TreeDb,
}

impl Program {
    /// Every program, in the order columns list them.
    pub const ALL: [Program; 3] = [Program::LevelDb, Program::Sqlite3, Program::TreeDb];

    /// The column's name on the command line and in reports.
    pub fn column(self) -> &'static str {
        match self {
            Program::LevelDb => "leveldb-dbbench",
            Program::Sqlite3 => "sqlite3-dbbench",
            Program::TreeDb => "kyoto-dbbench",
        }
    }

    /// The program's file name.
    fn file(self) -> &'static str {
        match self {
            Program::LevelDb => "db_bench",
            Program::Sqlite3 => "db_bench_sqlite3",
            Program::TreeDb => "db_bench_tree_db",
        }
    }

    /// The threads it runs a benchmark on: `--threads` for db_bench; the SQLite3 and TreeDB
    /// programs have one.
    fn threads(self, flags: &Flags) -> usize {
        match self {
            Program::LevelDb => flags.threads.max(1),
            Program::Sqlite3 | Program::TreeDb => 1,
        }
    }

    /// The variable that names the program's path, overriding the built one.
    fn variable(self) -> &'static str {
        match self {
            Program::LevelDb => "STRATA_BENCH_DBBENCH",
            Program::Sqlite3 => "STRATA_BENCH_DBBENCH_SQLITE3",
            Program::TreeDb => "STRATA_BENCH_DBBENCH_TREE_DB",
        }
    }
}

/// One of the page's programs, ready to run.
#[derive(Debug, Clone)]
pub struct DbBench {
    kind: Program,
    program: PathBuf,
    version: String,
}

/// What one group's run of the program gave.
#[derive(Debug, Default)]
pub struct GroupRun {
    /// One result per benchmark that ran, in order, with its position in the group.
    pub results: Vec<BenchResult>,
    /// The benchmarks db_bench cannot run as this harness means them.
    pub not_available: Vec<NotAvailable>,
}

/// One parsed result line of db_bench: `name : 1.234 micros/op; 12.3 MB/s (message)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// The benchmark.
    pub name: String,
    /// Microseconds per operation (thread-seconds over operations).
    pub micros_per_op: f64,
    /// Megabytes per second, when the benchmark moved bytes.
    pub mb_per_sec: Option<f64>,
    /// The rest (`(864322 of 1000000 found)`).
    pub message: String,
}

impl DbBench {
    /// The program at its variable's path (`$STRATA_BENCH_DBBENCH` for `db_bench`), else
    /// the one the build script made in the target directory this executable runs from
    /// (`target/release/../leveldb-dbbench`).
    pub fn locate(kind: Program) -> Result<DbBench> {
        let program = match std::env::var_os(kind.variable()) {
            Some(p) => PathBuf::from(p),
            None => {
                let exe = std::env::current_exe().context("find this executable")?;
                let target = exe
                    .parent()
                    .and_then(Path::parent)
                    .context("find the target directory")?;
                target.join(BUILT_IN).join(kind.file())
            }
        };
        if !program.is_file() {
            bail!(
                "{} is not at {} (build it with scripts/build-leveldb-dbbench.sh, or set {})",
                kind.file(),
                program.display(),
                kind.variable()
            );
        }
        Ok(DbBench::at(kind, program))
    }

    /// The program at `program`; its version is read from `BUILD_INFO` beside it.
    pub fn at(kind: Program, program: PathBuf) -> DbBench {
        let build = program
            .parent()
            .map(|d| d.join("BUILD_INFO"))
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map(|s| s.lines().collect::<Vec<_>>().join("; "))
            .unwrap_or_else(|| "no BUILD_INFO beside it".into());
        DbBench {
            kind,
            version: format!("{} ({build})", kind.file()),
            program,
        }
    }

    /// Which program it is.
    pub fn kind(&self) -> Program {
        self.kind
    }

    /// The version and build flags, for the run's settings and the page.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Runs `specs` (one group, sharing `flags`) as one db_bench process on `dir`.
    pub fn run_group(&self, flags: &Flags, specs: &[Spec], dir: &Path) -> Result<GroupRun> {
        let mut out = GroupRun::default();
        let mut planned = Vec::new();
        for (position, spec) in specs.iter().enumerate() {
            match program_name(self.kind, spec, flags) {
                Ok(name) => planned.push((position, spec, name)),
                Err(reason) => {
                    let reason = format!("{} has {reason}", self.kind.column());
                    out.not_available
                        .push(outcome::not_available(position, spec, reason, false));
                }
            }
        }
        if planned.is_empty() {
            return Ok(out);
        }
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        let names: Vec<&str> = planned.iter().map(|(_, _, n)| *n).collect();
        let mut child = Command::new(&self.program)
            .args(arguments(self.kind, flags, &names, dir))
            // SQLite's and TreeDB's programs put their files in the test directory.
            .env("TEST_TMPDIR", dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("start {}", self.program.display()))?;
        let pid = Process::Pid(child.id());
        let stderr = child.stderr.take().context("the program's stderr")?;
        // Its progress lines go to stderr: drain it so it never blocks, keep the tail.
        let errors = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = BufReader::new(stderr).read_to_string(&mut text);
            text
        });
        let watchdog = Watchdog::start(child.id(), flags.group_timeout());
        let read = child
            .stdout
            .take()
            .context("the program's stdout")
            .and_then(|stdout| self.read_results(stdout, pid, flags, &planned, dir));
        // Stood down before the wait: the process's id is not reused while it is unwaited.
        let timed_out = watchdog.stand_down();
        if timed_out {
            let _ = child.wait();
            bail!(
                "{} timed out after {} s (--group_timeout)",
                self.kind.file(),
                flags.group_timeout
            );
        }
        let read = match read {
            Ok(results) => results,
            Err(e) => {
                // Never leave the program running on after the harness gave up on it.
                let _ = child.kill();
                let _ = child.wait();
                return Err(e);
            }
        };
        out.results = read;
        let status = child.wait().context("wait for the program")?;
        let errors = errors.join().unwrap_or_default();
        if !status.success() || out.results.len() != planned.len() {
            let tail: Vec<&str> = errors
                .split(['\n', '\r'])
                .filter(|l| !l.trim().is_empty() && !l.starts_with("... finished"))
                .collect();
            bail!(
                "{} ({status}) gave {} of {} results; it said: {}",
                self.kind.file(),
                out.results.len(),
                planned.len(),
                tail[tail.len().saturating_sub(3)..].join(" / ")
            );
        }
        Ok(out)
    }

    /// Reads the program's result lines as they come, one per planned benchmark, with the
    /// process's accounting at each (peak memory since the last line, then reset; CPU and
    /// bytes written since the last line; the directory's size).
    fn read_results(
        &self,
        stdout: std::process::ChildStdout,
        pid: Process,
        flags: &Flags,
        planned: &[(usize, &Spec, &'static str)],
        dir: &Path,
    ) -> Result<Vec<BenchResult>> {
        let program = self.kind.file();
        let mut results = Vec::new();
        accounting::reset_peak_rss_of(pid);
        let (mut cpu, mut written) = (
            accounting::cpu_seconds_of(pid),
            accounting::bytes_written_of(pid),
        );
        let mut next = planned.iter();
        for text in BufReader::new(stdout).lines() {
            let text = text.with_context(|| format!("read {program}'s output"))?;
            let Some(line) = parse_line(&text) else {
                continue;
            };
            let Some((position, spec, name)) = next.next() else {
                bail!("{program} printed a result nobody asked for: {text}");
            };
            if line.name != *name {
                bail!("{program} printed {:?} where {name:?} was due", line.name);
            }
            let peak = accounting::peak_rss_of(pid);
            accounting::reset_peak_rss_of(pid);
            let (cpu_now, written_now) = (
                accounting::cpu_seconds_of(pid),
                accounting::bytes_written_of(pid),
            );
            let mut r = result(self.kind, spec, flags, &line, dir);
            r.position = Some(*position);
            r.peak_rss_bytes = peak;
            r.cpu_seconds = cpu_now - cpu;
            r.written_bytes = written_now.saturating_sub(written);
            r.write_amplification = (spec.kind.is_write() && r.bytes > 0)
                .then(|| r.written_bytes as f64 / r.bytes as f64);
            (cpu, written) = (cpu_now, written_now);
            results.push(r);
        }
        Ok(results)
    }
}

/// Benchmarks LevelDB's db_bench has under the names this harness uses, beyond the ones
/// every program has.
const LEVELDB_ALSO: [&str; 11] = [
    "readreverse",
    "readmissing",
    "readhot",
    "seekrandom",
    "deleteseq",
    "deleterandom",
    "readwhilewriting",
    "compact",
    "crc32c",
    "snappycomp",
    "snappyuncomp",
];

/// The program's name for `spec`, or why it cannot run it as this harness means it.
fn program_name(kind: Program, spec: &Spec, flags: &Flags) -> Result<&'static str, String> {
    if flags.duration > 0.0 {
        return Err("no --duration".into());
    }
    if flags.writes_per_second > 0 {
        return Err("no write rate limit".into());
    }
    if spec.name == "fsyncceiling" {
        return Err("no engine in it (a property of the disk)".into());
    }
    let name = match (kind, spec.name.as_str()) {
        (_, "fillseq") => "fillseq",
        (_, "fillrandom") => "fillrandom",
        (_, "overwrite") => "overwrite",
        (_, "readseq") => "readseq",
        (_, "readrandom") => "readrandom",
        (Program::LevelDb, "fillsync") => "fillsync",
        (Program::LevelDb, "fill100K") => "fill100K",
        (Program::LevelDb, "fillbatch" | "fillseqbatch") => "fillbatch",
        (Program::LevelDb, n) if let Some(same) = LEVELDB_ALSO.iter().find(|b| **b == n) => same,
        // The page's SQLite3 and TreeDB programs: synced random writes (num / 100), random
        // 100 KB writes (num / 1000), SQLite's batches of 1,000.
        (Program::Sqlite3 | Program::TreeDb, "fillsync") => "fillrandsync",
        (Program::Sqlite3 | Program::TreeDb, "fill100K") => "fillrand100K",
        (Program::Sqlite3, "fillbatch" | "fillseqbatch") => "fillseqbatch",
        (Program::Sqlite3, "fillrandbatch") => "fillrandbatch",
        (_, other) => return Err(format!("no {other} benchmark in {}", kind.file())),
    };
    Ok(name)
}

/// The program's command line for a group: only the flags it knows (it refuses others).
fn arguments(kind: Program, flags: &Flags, names: &[&str], dir: &Path) -> Vec<String> {
    let mut list = names.join(",");
    if kind == Program::LevelDb {
        // `stats` last keeps the process alive a moment after the last result line,
        // while its memory and I/O counters are read.
        list.push_str(",stats");
    }
    let mut a = vec![
        format!("--benchmarks={list}"),
        format!("--db={}", dir.display()),
        format!("--num={}", flags.num),
        format!("--value_size={}", flags.value_size),
        format!("--compression_ratio={}", flags.compression_ratio),
    ];
    // db_bench_tree_db has the flag but does not parse it: it is passed only when on (and
    // that program then refuses the run, as it cannot reuse a database).
    if kind != Program::TreeDb || flags.use_existing_db {
        a.push(format!(
            "--use_existing_db={}",
            u8::from(flags.use_existing_db)
        ));
    }
    if flags.reads >= 0 {
        a.push(format!("--reads={}", flags.reads));
    }
    match kind {
        Program::LevelDb => a.extend([
            format!("--threads={}", flags.threads.max(1)),
            format!("--compression={}", u8::from(flags.compression)),
            format!("--write_buffer_size={}", flags.write_buffer_size),
            format!("--max_file_size={}", flags.max_file_size),
            format!("--block_size={}", flags.block_size),
            format!("--cache_size={}", flags.cache_size),
            format!("--open_files={}", flags.open_files),
            format!("--bloom_bits={}", flags.bloom().map_or(-1, |b| b as i64)),
        ]),
        // SQLite's page cache is pages of 1 KiB: the budget in pages.
        Program::Sqlite3 => a.extend([
            "--page_size=1024".to_string(),
            format!("--num_pages={}", (flags.cache_size / 1024).max(1)),
        ]),
        Program::TreeDb => a.extend([
            "--page_size=1024".to_string(),
            format!("--cache_size={}", flags.cache_size),
            format!("--compression={}", u8::from(flags.compression)),
        ]),
    }
    a
}

/// Parses one of db_bench's result lines; `None` for any other line.
pub fn parse_line(text: &str) -> Option<Line> {
    let (name, rest) = text.split_once(" : ")?;
    let name = name.trim();
    let (micros, rest) = rest.trim_start().split_once(" micros/op;")?;
    let micros_per_op: f64 = micros.trim().parse().ok()?;
    if name.is_empty() || name.contains(' ') {
        return None;
    }
    let rest = rest.trim();
    let (mb_per_sec, message) = match rest.split_once(" MB/s") {
        Some((mb, message)) if mb.trim().parse::<f64>().is_ok() => {
            (mb.trim().parse().ok(), message.trim())
        }
        _ => (None, rest),
    };
    Some(Line {
        name: name.to_string(),
        micros_per_op,
        mb_per_sec,
        message: message.to_string(),
    })
}

/// How many operations the program counts for `spec` (its own rules, which the suite's
/// per-row sizes do not change).
fn program_ops(kind: Program, spec: &Spec, flags: &Flags) -> u64 {
    let threads = kind.threads(flags) as u64;
    match (kind, spec.name.as_str()) {
        (Program::LevelDb, "fillsync") | (_, "fill100K") => (flags.num / 1000).max(1) * threads,
        (_, "fillsync") => (flags.num / 100).max(1) * threads,
        (_, "compact") => 1,
        (
            _,
            "readseq" | "readreverse" | "readrandom" | "readmissing" | "readhot" | "seekrandom"
            | "readwhilewriting",
        ) => flags.reads() * threads,
        _ => flags.num * threads,
    }
}

/// The harness's result for one db_bench line; the caller adds the accounting.
fn result(kind: Program, spec: &Spec, flags: &Flags, line: &Line, dir: &Path) -> BenchResult {
    let ops = program_ops(kind, spec, flags);
    let threads = kind.threads(flags) as f64;
    let seconds = line.micros_per_op * ops as f64 / 1e6 / threads;
    let bytes = line
        .mb_per_sec
        .map_or(0, |mb| (mb * 1_048_576.0 * seconds) as u64);
    BenchResult {
        name: spec.name.clone(),
        row: spec.row.clone(),
        ops,
        bytes,
        seconds,
        micros_per_op: line.micros_per_op,
        ops_per_sec: ops as f64 / seconds.max(1e-9),
        threads: spec.threads,
        mb_per_sec: line.mb_per_sec,
        message: line.message.clone(),
        disk_bytes: accounting::disk_usage(dir),
        ..BenchResult::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn result_lines_parse_and_others_do_not() {
        let l = parse_line("fillseq      :       1.790 micros/op;   61.8 MB/s").unwrap();
        assert_eq!(l.name, "fillseq");
        assert_eq!((l.micros_per_op, l.mb_per_sec), (1.79, Some(61.8)));
        assert_eq!(l.message, "");
        let l =
            parse_line("readrandom   :       5.710 micros/op; (864322 of 1000000 found)").unwrap();
        assert_eq!(
            (l.mb_per_sec, l.message.as_str()),
            (None, "(864322 of 1000000 found)")
        );
        let l = parse_line("fill100K     :     149.390 micros/op;  638.5 MB/s (100 ops)").unwrap();
        assert_eq!(
            (l.mb_per_sec, l.message.as_str()),
            (Some(638.5), "(100 ops)")
        );
        let l = parse_line("compact      :   57611.000 micros/op;").unwrap();
        assert_eq!((l.micros_per_op, l.mb_per_sec), (57611.0, None));
        for other in [
            "Keys:       16 bytes each",
            "Values:     100 bytes each (50 bytes after compression)",
            "------------------------------------------------",
            "                               Compactions",
            "Level  Files Size(MB) Time(sec) Read(MB) Write(MB)",
            "",
        ] {
            assert_eq!(parse_line(other), None, "{other}");
        }
    }

    #[test]
    fn what_each_program_cannot_run_is_named() {
        let flags = Flags::try_parse_from(["strata-bench"]).unwrap();
        let spec = |n: &str| crate::bench::spec(n, &flags).unwrap();
        let name = |k, n: &str| program_name(k, &spec(n), &flags);
        assert_eq!(name(Program::LevelDb, "fillseqbatch"), Ok("fillbatch"));
        assert!(name(Program::LevelDb, "fsyncceiling").is_err());
        assert!(name(Program::LevelDb, "fillrandbatch").is_err());
        assert_eq!(name(Program::Sqlite3, "fillsync"), Ok("fillrandsync"));
        assert_eq!(name(Program::Sqlite3, "fillrandbatch"), Ok("fillrandbatch"));
        assert_eq!(name(Program::TreeDb, "fill100K"), Ok("fillrand100K"));
        assert!(
            name(Program::TreeDb, "fillbatch").is_err(),
            "TreeDB has no batches"
        );
        assert!(name(Program::Sqlite3, "compact").is_err());
        assert!(name(Program::TreeDb, "readreverse").is_err());
        let limited = Flags::try_parse_from(["strata-bench", "--writes_per_second=100"]).unwrap();
        assert!(program_name(Program::LevelDb, &spec("readwhilewriting"), &limited).is_err());
        // Each program gets only the flags it knows.
        let dir = Path::new("/d");
        let sqlite = arguments(Program::Sqlite3, &flags, &["fillseq"], dir).join(" ");
        assert!(sqlite.contains("--num_pages=8192") && !sqlite.contains("--cache_size"));
        let tree = arguments(Program::TreeDb, &flags, &["fillseq"], dir).join(" ");
        assert!(tree.contains("--cache_size=8388608") && !tree.contains("--bloom_bits"));
        assert!(!tree.contains(",stats"));
    }

    /// A stand-in for db_bench: a shell script that prints what db_bench prints (progress
    /// on stderr, a header and result lines on stdout) and records its arguments.
    fn fake_program(dir: &Path, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        let path = dir.join("db_bench");
        std::fs::write(
            &path,
            format!("#!/bin/sh\necho \"$@\" > {}/args\n{body}", dir.display()),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.join("BUILD_INFO"), "fake db_bench\nno flags\n").unwrap();
        path
    }

    #[test]
    fn a_group_runs_as_one_process_and_reads_every_line() {
        let tmp = tempfile::tempdir().unwrap();
        let program = fake_program(
            tmp.path(),
            "printf '... finished 100 ops\\r' >&2\n\
             echo 'Keys:       16 bytes each'\n\
             echo 'fillseq      :       2.000 micros/op;   55.0 MB/s'\n\
             echo 'readrandom   :       4.500 micros/op; (900 of 1000 found)'\n\
             echo 'compact      :    1000.000 micros/op;'\n",
        );
        let db = DbBench::at(Program::LevelDb, program);
        assert_eq!(db.version(), "db_bench (fake db_bench; no flags)");
        let flags =
            Flags::try_parse_from(["strata-bench", "--num=1000", "--compression=false"]).unwrap();
        let specs: Vec<Spec> = ["fillseq", "fsyncceiling", "readrandom", "compact"]
            .iter()
            .map(|n| crate::bench::spec(n, &flags).unwrap())
            .collect();
        let run = db
            .run_group(&flags, &specs, &tmp.path().join("db"))
            .unwrap();
        let got: Vec<_> = run
            .results
            .iter()
            .map(|r| (r.position, r.name.as_str(), r.micros_per_op))
            .collect();
        assert_eq!(
            got,
            [
                (Some(0), "fillseq", 2.0),
                (Some(2), "readrandom", 4.5),
                (Some(3), "compact", 1000.0)
            ]
        );
        assert_eq!(run.results[0].ops, 1000);
        assert!((run.results[0].seconds - 0.002).abs() < 1e-9);
        assert_eq!(run.results[1].message, "(900 of 1000 found)");
        assert_eq!(run.not_available.len(), 1);
        assert_eq!(run.not_available[0].position, 1);
        let args = std::fs::read_to_string(tmp.path().join("args")).unwrap();
        for want in [
            "--benchmarks=fillseq,readrandom,compact,stats",
            "--num=1000",
            "--compression=0",
            "--bloom_bits=-1",
            "--use_existing_db=0",
        ] {
            assert!(args.contains(want), "{want} missing from {args}");
        }
    }

    #[test]
    fn a_short_or_failed_run_is_an_error_with_what_it_said() {
        let tmp = tempfile::tempdir().unwrap();
        let program = fake_program(
            tmp.path(),
            "echo 'fillseq      :       2.000 micros/op;   55.0 MB/s'\n\
             echo 'open error: IO error: lock held' >&2\nexit 1\n",
        );
        let flags = Flags::try_parse_from(["strata-bench", "--num=1000"]).unwrap();
        let specs: Vec<Spec> = ["fillseq", "readrandom"]
            .iter()
            .map(|n| crate::bench::spec(n, &flags).unwrap())
            .collect();
        let err = DbBench::at(Program::LevelDb, program)
            .run_group(&flags, &specs, &tmp.path().join("db"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("1 of 2 results"), "{err}");
        assert!(err.contains("lock held"), "{err}");
    }
}
