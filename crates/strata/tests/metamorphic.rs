//! The metamorphic test: one seeded random operation log, run under several option sets
//! and on a `BTreeMap` model; every observable result must be the same everywhere: each
//! get, each cursor step (the entry it lands on, or not valid), each scan's entries, each
//! error. The log mixes writes, batches, gets, snapshots, cursors, bounded scans,
//! transactions (with writes, flushes and compactions by another writer while they are
//! open, so that some conflict), flushes, compactions, closes and reopens (`metamorphic/generate.rs`); the option sets
//! vary sizes, compression, filters, caches, checksum checks and the filesystem
//! (`metamorphic/sets.rs`). The log's text form is in `metamorphic/op.rs`.
//!
//! On a mismatch the test prints the seed, the set, the operation and what was expected
//! and seen; the first failing set's log is shrunk (`metamorphic/minimize.rs`) and written
//! to `target/metamorphic/seed<N>-<set>.log`, and a set that failed sits out the later
//! logs. To run such a file again:
//! `STRATA_META_REPLAY=path cargo test -p strata --test metamorphic replay -- --nocapture`.
//! Shrunk logs of failures found are kept in `metamorphic/regressions/` and replayed by
//! the `regressions` test.
//!
//! Knobs: `STRATA_META_SEED` (first seed, default 1; log `i` uses seed + `i`),
//! `STRATA_META_LOGS` (default 5), `STRATA_META_OPS` (operations per log, default
//! 4,000), `STRATA_META_SETS` (comma-separated set names, default all),
//! `STRATA_META_HANG_SECS` (an operation that takes longer is a hang, default 60),
//! `STRATA_META_MINIMIZE_SECS` (time to shrink a failing log, default 120),
//! `STRATA_META_TRACE=1` (print every operation and its outcome).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "metamorphic/check.rs"]
mod check;
mod common;
#[path = "metamorphic/generate.rs"]
mod generate;
#[path = "metamorphic/minimize.rs"]
mod minimize;
#[path = "metamorphic/model.rs"]
mod model;
#[path = "metamorphic/op.rs"]
mod op;
#[path = "metamorphic/outcome.rs"]
mod outcome;
#[path = "metamorphic/parse.rs"]
mod parse;
#[path = "metamorphic/runner.rs"]
mod runner;
#[path = "metamorphic/sets.rs"]
mod sets;
#[path = "metamorphic/stop.rs"]
mod stop;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use check::Verdict;
use common::env_u64;
use op::Op;
use sets::OptionSet;

/// The knobs read from the environment.
#[derive(Debug, Clone, Copy)]
struct Knobs {
    hang: Duration,
    minimize: Duration,
    trace: bool,
}

impl Knobs {
    fn read() -> Knobs {
        Knobs {
            hang: Duration::from_secs(env_u64("STRATA_META_HANG_SECS", 60)),
            minimize: Duration::from_secs(env_u64("STRATA_META_MINIMIZE_SECS", 120)),
            trace: env_u64("STRATA_META_TRACE", 0) != 0,
        }
    }
}

/// Where failing logs go: `target/metamorphic/` of the workspace.
fn out_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = manifest
        .join("../..")
        .canonicalize()
        .unwrap_or_else(|_| manifest.join("../.."));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map_or_else(|| workspace.join("target"), |t| workspace.join(t));
    target.join("metamorphic")
}

fn one_line(s: &str) -> String {
    s.replace('\n', " ")
}

/// Shrinks the failing log (unless its run could not be stopped) and writes it; returns
/// the file's path. Candidates get a hang timeout of at most 10 s: a log that hangs has
/// many candidates that hang too.
fn shrink_and_write(
    name: &str,
    ops: &[Op],
    set: &OptionSet,
    first: &Verdict,
    knobs: Knobs,
) -> PathBuf {
    let first_mismatch = first.mismatch.clone().expect("a failing run");
    let hang = knobs.hang.min(Duration::from_secs(10));
    let stuck = std::cell::Cell::new(first.stuck);
    let fails = |cand: &[Op]| {
        if stuck.get() {
            return None;
        }
        let v = check::check(&Arc::new(cand.to_vec()), set, hang, false);
        stuck.set(v.stuck);
        v.mismatch.map(|m| m.index)
    };
    let budget = if first.stuck {
        Duration::ZERO
    } else {
        knobs.minimize
    };
    let (small, shrink) = minimize::minimize(ops.to_vec(), first_mismatch.index, fails, budget);
    let mut text = String::new();
    let _ = writeln!(text, "# strata metamorphic log: {name}, set {}", set.name);
    let _ = writeln!(
        text,
        "# shrunk from {} to {} operations in {:.2} s ({} runs{}); the first mismatch was at op {}: {}",
        ops.len(),
        small.len(),
        shrink.elapsed.as_secs_f64(),
        shrink.runs,
        if shrink.out_of_time {
            ", out of time"
        } else {
            ""
        },
        first_mismatch.index,
        one_line(&first_mismatch.detail)
    );
    if stuck.get() {
        let _ = writeln!(text, "# not shrunk further: a run could not be stopped");
    } else {
        let last = check::check(&Arc::new(small.clone()), set, hang, false);
        let _ = match &last.mismatch {
            Some(m) => writeln!(
                text,
                "# now fails at op {}: {}",
                m.index,
                one_line(&m.detail)
            ),
            None => writeln!(text, "# (the shrunk log passed when run again: flaky?)"),
        };
    }
    let path = out_dir().join(format!("{name}-{}.log", set.name));
    let _ = writeln!(
        text,
        "# STRATA_META_REPLAY={} cargo test -p strata --test metamorphic replay",
        path.display()
    );
    for op in &small {
        let _ = writeln!(text, "{op}");
    }
    std::fs::create_dir_all(out_dir()).unwrap();
    std::fs::write(&path, text).unwrap();
    println!(
        "{name} {}: shrunk to {} operations in {:.2} s: {}",
        set.name,
        small.len(),
        shrink.elapsed.as_secs_f64(),
        path.display()
    );
    path
}

fn summary(name: &str, set: &str, v: &Verdict, secs: f64) -> String {
    let t = v.tally;
    format!(
        "{name} {set:<12} {} ops agree in {secs:.2} s: gets {} found + {} not, {} cursor positions, {} scanned entries, {} transactions ({} conflicts); {} flushes, {} compactions",
        v.ran,
        t.found,
        t.not_found,
        t.positions,
        t.entries,
        t.transactions,
        t.conflicts,
        t.flushes,
        t.compactions
    )
}

/// Runs `ops` under every set; returns each failing set's name and a line about it. The
/// first failing set's log is shrunk and written when `shrink` is set.
fn run_log(
    name: &str,
    ops: Vec<Op>,
    sets: &[OptionSet],
    knobs: Knobs,
    mut shrink: bool,
) -> Vec<(&'static str, String)> {
    let ops = Arc::new(ops);
    let mut failures = Vec::new();
    for set in sets {
        let start = Instant::now();
        let v = check::check(&ops, set, knobs.hang, knobs.trace);
        let secs = start.elapsed().as_secs_f64();
        let Some(m) = v.mismatch.clone() else {
            println!("{}", summary(name, set.name, &v, secs));
            continue;
        };
        let op = ops.get(m.index).map(Op::to_string).unwrap_or_default();
        let mut line = format!(
            "{name}, set {}: op {} `{op}`: {}",
            set.name, m.index, m.detail
        );
        println!("MISMATCH {line}");
        if shrink {
            let path = shrink_and_write(name, &ops, set, &v, knobs);
            let _ = write!(line, " (shrunk log: {})", path.display());
            shrink = false;
        }
        failures.push((set.name, line));
    }
    failures
}

#[test]
fn option_sets_agree_with_the_model() {
    let seed = env_u64("STRATA_META_SEED", 1);
    let logs = env_u64("STRATA_META_LOGS", 5);
    let len = env_u64("STRATA_META_OPS", 4_000) as usize;
    let mut sets = sets::selected();
    let knobs = Knobs::read();
    println!(
        "metamorphic: seeds {seed} to {}, {len} operations a log, sets {:?} (STRATA_META_SEED, STRATA_META_LOGS, STRATA_META_OPS, STRATA_META_SETS)",
        seed + logs.max(1) - 1,
        sets.iter().map(|s| s.name).collect::<Vec<_>>()
    );
    let start = Instant::now();
    let mut failures: Vec<String> = Vec::new();
    for s in seed..seed + logs {
        let ops = generate::generate(s, len);
        let failed = run_log(&format!("seed{s}"), ops, &sets, knobs, failures.is_empty());
        // A set that failed sits out the later logs: its failure is reported (and shrunk
        // when it was the first), and a hang would only cost the hang timeout again.
        sets.retain(|set| failed.iter().all(|(name, _)| *name != set.name));
        failures.extend(failed.into_iter().map(|(_, line)| line));
        if sets.is_empty() {
            break;
        }
    }
    println!(
        "metamorphic: done in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Replays the log file named by `STRATA_META_REPLAY` (as written by a failing run, or
/// by hand) under every set of `STRATA_META_SETS`, printing each operation's outcome
/// when the log is short. Without that variable this test does nothing and checks
/// nothing: it is a tool, not one of the suite's checks.
#[test]
fn replay() {
    let Some(path) = std::env::var_os("STRATA_META_REPLAY") else {
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap();
    let ops = parse::parse_log(&text).unwrap_or_else(|e| panic!("{}: {e}", path.to_string_lossy()));
    let knobs = Knobs {
        trace: Knobs::read().trace || ops.len() <= 200,
        ..Knobs::read()
    };
    let name = Path::new(&path)
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let failures = run_log(&name, ops, &sets::selected(), knobs, false);
    let lines: Vec<String> = failures.into_iter().map(|(_, line)| line).collect();
    assert!(
        lines.is_empty(),
        "{} mismatches:\n{}",
        lines.len(),
        lines.join("\n")
    );
}

/// Every log in `tests/metamorphic/regressions/` (shrunk logs of failures found, each
/// headed by what was wrong) runs clean under every set (of `STRATA_META_SETS`), with a
/// 10 s hang timeout.
#[test]
fn regressions() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/metamorphic/regressions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    files.sort();
    let knobs = Knobs {
        hang: Duration::from_secs(10),
        ..Knobs::read()
    };
    let mut failures = Vec::new();
    for path in &files {
        let ops = parse::parse_log(&std::fs::read_to_string(path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        failures.extend(run_log(&name, ops, &sets::selected(), knobs, false));
    }
    let lines: Vec<String> = failures.into_iter().map(|(_, line)| line).collect();
    assert!(
        lines.is_empty(),
        "{} mismatches in {} regression logs:\n{}",
        lines.len(),
        files.len(),
        lines.join("\n")
    );
}

/// The text form reads back as the operations it was written from.
#[test]
fn logs_read_back_as_written() {
    let ops = generate::generate(env_u64("STRATA_META_SEED", 1), 3_000);
    let text: String = ops.iter().map(|op| format!("{op}\n")).collect();
    let back = parse::parse_log(&text).unwrap();
    assert_eq!(back.len(), ops.len());
    for (i, (a, b)) in ops.iter().zip(&back).enumerate() {
        assert_eq!(a, b, "op {i}: {a}");
    }
}
