//! A full disk during a flush or compaction (`docs/durability.md` C7): the step is paused,
//! not final. Its partial tables are removed, reads and the writes that fit in the
//! memtable go on, writes that would wait for it fail at once with its error (no hang),
//! and once space returns the step runs again, by itself after
//! `Options::background_retry_interval` or at `Db::resume`, with nothing lost. A failed
//! manifest write stays final. Every test runs its database on a thread and fails if it
//! takes over a minute, so a hang is a failure, not a stuck CI.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use common::eventually;
use strata::env::{Env, MemEnv};
use strata::testing::{Call, Fault, FaultEnv};
use strata::{Db, Error, Options};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const DIR: &str = "/db";

fn options(env: &FaultEnv, retry: Duration) -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 8 << 10,
        max_file_size: 8 << 10,
        block_size: 512,
        background_retry_interval: retry,
        env: Arc::new(env.clone()),
        ..Options::default()
    }
}

fn key(n: u32) -> Vec<u8> {
    format!("key{n:06}").into_bytes()
}

fn value(n: u32, round: u32) -> Vec<u8> {
    let mut v = format!("value{n}-{round}-").into_bytes();
    v.resize(100, b'a' + (n % 26) as u8);
    v
}

/// A full disk for new tables: every append to a table file fails with ENOSPC, after
/// `skip` of them pass. The WAL and manifest still have room (a disk that is nearly full:
/// small appends fit, a table does not), so what is tested is the background step.
fn disk_full(skip: u64) -> Fault {
    Fault {
        call: Call::Append,
        path_contains: ".ldb".into(),
        skip,
        sticky: true,
        kind: ErrorKind::StorageFull,
    }
}

fn is_enospc(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == ErrorKind::StorageFull)
}

fn background_error(db: &Db) -> String {
    db.property("strata.background-error").unwrap()
}

fn stat(db: &Db, name: &str) -> u64 {
    let stats = db.property("strata.stats").unwrap();
    stats
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no {name} in {stats}"))
        .parse()
        .unwrap()
}

/// Everything the database holds, by a forward scan.
fn contents(db: &Db) -> Model {
    db.range::<&[u8]>(..).map(|r| r.unwrap()).collect()
}

/// How long a test waits for background work.
const WAIT: Duration = Duration::from_secs(10);

/// Runs `f` on its own thread; a test that has not finished after a minute hangs.
fn within_a_minute(f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(()) => worker.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // The test panicked: report its own message.
            if let Err(p) = worker.join() {
                std::panic::resume_unwind(p);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("the database hung for a minute"),
    }
}

/// After an append or sync of a file failed, that file is never written or synced again:
/// a retried step writes new tables.
fn audit(calls: &[(Call, PathBuf, bool)]) {
    let mut poisoned: Vec<&PathBuf> = Vec::new();
    for (call, path, failed) in calls {
        if matches!(call, Call::Append | Call::Sync) {
            assert!(
                !poisoned.contains(&path),
                "{call:?} on {path:?} after a write or sync of it failed"
            );
            if *failed {
                poisoned.push(path);
            }
        }
    }
}

/// The end of every healed run: the contents are the model, nothing unreferenced is left,
/// a reopen keeps everything, and no failed file was touched again.
fn check_healed(db: Db, env: &FaultEnv, options: Options, model: &Model) {
    assert_eq!(&contents(&db), model);
    let report = db.verify().unwrap();
    assert!(report.unreferenced.is_empty(), "{report:?}");
    drop(db);
    let db = Db::open(DIR, options).unwrap();
    assert_eq!(&contents(&db), model);
    drop(db);
    audit(&env.calls());
}

/// Puts keys `0..keys` with values of `round`, in the database and the model.
fn fill(db: &Db, model: &mut Model, round: u32, keys: u32) {
    for i in 0..keys {
        db.put(key(i), value(i, round)).unwrap();
        model.insert(key(i), value(i, round));
    }
}

fn level0(db: &Db) -> usize {
    db.property("leveldb.num-files-at-level0")
        .unwrap()
        .parse()
        .unwrap()
}

/// Table files in the directory.
fn tables(env: &FaultEnv) -> usize {
    env.children(Path::new(DIR))
        .unwrap()
        .iter()
        .filter(|n| n.ends_with(".ldb"))
        .count()
}

#[test]
fn a_full_disk_during_a_flush_fails_waiting_writes_and_resume_goes_on() {
    within_a_minute(|| {
        let env = FaultEnv::new(Arc::new(MemEnv::new()));
        // No automatic retry: only `resume` runs the flush again.
        let db = Db::open(DIR, options(&env, Duration::ZERO)).unwrap();
        let mut model = Model::new();
        env.arm(disk_full(0));
        // Writes are acknowledged until the memtable is full and its flush has failed.
        let mut failed = None;
        for i in 0..2_000 {
            match db.put(key(i), value(i, 0)) {
                Ok(()) => {
                    model.insert(key(i), value(i, 0));
                }
                Err(e) => {
                    failed = Some((i, e));
                    break;
                }
            }
        }
        let (first_failed, e) = failed.expect("a write must fail once the flush cannot run");
        assert!(is_enospc(&e), "{e}");
        assert!(
            first_failed > 10,
            "the first memtable takes writes: {first_failed}"
        );
        assert!(
            background_error(&db).starts_with("paused:"),
            "{}",
            background_error(&db)
        );
        // Writes keep failing at once while the disk is full; nothing of them is kept.
        for i in first_failed..first_failed + 20 {
            let e = db.put(key(i), value(i, 0)).unwrap_err();
            assert!(is_enospc(&e), "{e}");
        }
        assert!(is_enospc(&db.flush().unwrap_err()));
        // Reads go on, and the failed flush left no table behind.
        assert_eq!(contents(&db), model);
        for (k, v) in model.iter().step_by(7) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
        }
        assert_eq!(tables(&env), 0);
        // Still full: resume fails again, with the same error.
        assert!(is_enospc(&db.resume().unwrap_err()));
        assert_eq!(tables(&env), 0);
        assert!(stat(&db, "background_retries") >= 1);

        // Space returns.
        env.disarm();
        db.resume().unwrap();
        assert_eq!(background_error(&db), "none\n");
        for i in first_failed..first_failed + 500 {
            db.put(key(i), value(i, 1)).unwrap();
            model.insert(key(i), value(i, 1));
        }
        db.compact_range(None, None).unwrap();
        check_healed(db, &env, options(&env, Duration::ZERO), &model);
    });
}

#[test]
fn a_full_disk_during_a_compaction_heals_by_itself_and_writes_go_on_meanwhile() {
    within_a_minute(|| {
        let mem = MemEnv::new();
        let env = FaultEnv::new(Arc::new(mem.clone()));
        let mut o = options(&env, Duration::from_millis(20));
        o.write_buffer_size = 1 << 20; // flushes only when asked
        let db = Db::open(DIR, o.clone()).unwrap();
        let mut model = Model::new();
        // Flush overlapping tables until level 0 holds three (the first ones go deeper);
        // the fourth starts a compaction.
        let mut appends_per_flush = 0;
        let mut round = 0;
        while level0(&db) != 3 {
            assert!(round < 10, "{}", db.property("leveldb.sstables").unwrap());
            fill(&db, &mut model, round, 200);
            round += 1;
            let before = env.calls().len();
            db.flush().unwrap();
            appends_per_flush = env.calls()[before..]
                .iter()
                .filter(|(c, p, _)| *c == Call::Append && p.to_string_lossy().ends_with(".ldb"))
                .count() as u64;
        }
        // The fourth flush (same keys, same size: same appends) fits; the compaction it
        // starts does not.
        env.arm(disk_full(appends_per_flush));
        fill(&db, &mut model, round, 200);
        db.flush().unwrap();
        eventually("the compaction pauses", WAIT, || {
            background_error(&db).starts_with("paused:")
        });
        // Writes that fit in the memtable go on while it is paused; reads are right.
        for i in 200..400 {
            db.put(key(i), value(i, round)).unwrap();
            model.insert(key(i), value(i, round));
        }
        assert_eq!(contents(&db), model);
        // Retries keep failing while the disk is full (each removes its partial output:
        // checked by `verify` below, which lists files nothing references).
        let retries = stat(&db, "background_retries");
        eventually("five more retries", WAIT, || {
            stat(&db, "background_retries") >= retries + 5
        });
        // `LOG` says so, but not at every retry (a disk that stays bad would fill it).
        let log = String::from_utf8(mem.contents(Path::new("/db/LOG")).unwrap()).unwrap();
        let paused_lines = log.lines().filter(|l| l.contains("paused")).count() as u64;
        let retries = stat(&db, "background_retries");
        assert!(paused_lines >= 1, "{log}");
        assert!(
            paused_lines <= 2 + retries.ilog2() as u64,
            "{paused_lines} lines for {retries} retries"
        );

        // Space returns: the compaction runs by itself.
        env.disarm();
        eventually("the compaction runs again", WAIT, || {
            background_error(&db) == "none\n" && level0(&db) == 0
        });
        check_healed(db, &env, o, &model);
    });
}

#[test]
fn a_failed_manifest_write_stays_final_and_reopening_recovers() {
    within_a_minute(|| {
        let env = FaultEnv::new(Arc::new(MemEnv::new()));
        let db = Db::open(DIR, options(&env, Duration::from_millis(10))).unwrap();
        let mut model = Model::new();
        for i in 0..50 {
            db.put(key(i), value(i, 0)).unwrap();
            model.insert(key(i), value(i, 0));
        }
        env.arm(Fault {
            call: Call::Append,
            path_contains: "MANIFEST".into(),
            skip: 0,
            sticky: false,
            kind: ErrorKind::StorageFull,
        });
        // The flush's table is written, but the manifest edit naming it is not.
        assert!(is_enospc(&db.flush().unwrap_err()));
        assert!(background_error(&db).starts_with("stopped:"));
        // The fault was a one-off, yet the error stays: the manifest may hold a torn edit.
        std::thread::sleep(Duration::from_millis(50));
        assert!(db.resume().is_err());
        assert!(db.put(b"after", b"x").is_err());
        assert_eq!(contents(&db), model);
        drop(db);
        let db = Db::open(DIR, options(&env, Duration::ZERO)).unwrap();
        assert_eq!(contents(&db), model);
        db.put(b"after", b"x").unwrap();
    });
}

#[test]
fn a_full_disk_seen_by_the_wal_is_final() {
    within_a_minute(|| {
        let env = FaultEnv::new(Arc::new(MemEnv::new()));
        let db = Db::open(DIR, options(&env, Duration::from_millis(10))).unwrap();
        db.put(b"a", b"1").unwrap();
        env.arm(Fault {
            call: Call::Append,
            path_contains: ".log".into(),
            skip: 0,
            sticky: false,
            kind: ErrorKind::StorageFull,
        });
        assert!(is_enospc(&db.put(b"b", b"2").unwrap_err()));
        // C6: the log may end in a partial record; no later write may follow it, even
        // though the disk has room again.
        assert!(db.put(b"c", b"3").is_err());
        assert!(db.resume().is_err());
        assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
        drop(db);
        let db = Db::open(DIR, options(&env, Duration::ZERO)).unwrap();
        assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
        assert_eq!(db.get(b"c").unwrap(), None);
    });
}

#[test]
fn a_manual_compaction_on_a_full_disk_reports_its_failure_however_fast_retries_run() {
    within_a_minute(|| {
        let env = FaultEnv::new(Arc::new(MemEnv::new()));
        // Retries every millisecond: the pause may clear before the caller looks.
        let o = options(&env, Duration::from_millis(1));
        let db = Db::open(DIR, o.clone()).unwrap();
        let mut model = Model::new();
        for i in 0..1_500 {
            db.put(key(i % 700), value(i, i / 700)).unwrap();
            model.insert(key(i % 700), value(i, i / 700));
        }
        db.flush().unwrap();
        env.arm(disk_full(0));
        for attempt in 0..20 {
            let e = db
                .compact_range(None, None)
                .expect_err("a compaction on a full disk cannot succeed");
            assert!(is_enospc(&e), "attempt {attempt}: {e}");
        }
        // Nothing was lost or left behind meanwhile, and reads are right.
        assert_eq!(contents(&db), model);
        env.disarm();
        db.resume().unwrap();
        db.compact_range(None, None).unwrap();
        assert_eq!(level0(&db), 0);
        check_healed(db, &env, o, &model);
    });
}

#[test]
fn flushes_go_on_while_a_compaction_is_paused_until_level_0_is_full() {
    within_a_minute(|| {
        let env = FaultEnv::new(Arc::new(MemEnv::new()));
        let mut o = options(&env, Duration::ZERO);
        o.write_buffer_size = 1 << 20; // flushes only when asked
        let db = Db::open(DIR, o.clone()).unwrap();
        let mut model = Model::new();
        let mut round = 0;
        while level0(&db) != 3 {
            assert!(round < 10);
            fill(&db, &mut model, round, 100);
            db.flush().unwrap();
            round += 1;
        }
        // One new table cannot be created: the fourth flush's can, the compaction's first
        // output cannot. The disk then has room for flushes again.
        env.arm(Fault {
            call: Call::Create,
            path_contains: ".ldb".into(),
            skip: 1,
            sticky: false,
            kind: ErrorKind::StorageFull,
        });
        fill(&db, &mut model, round, 100);
        db.flush().unwrap();
        round += 1;
        eventually("the compaction pauses", WAIT, || {
            background_error(&db).starts_with("paused:")
        });
        // Flushes go on while the compaction waits for `resume`, until level 0 is full;
        // then the write that needs room fails at once instead of waiting.
        let stopped = loop {
            assert!(round < 40, "level 0 never filled: {}", level0(&db));
            fill(&db, &mut model, round, 100);
            round += 1;
            if let Err(e) = db.flush() {
                break e;
            }
        };
        assert!(is_enospc(&stopped), "{stopped}");
        assert_eq!(level0(&db), strata::version::L0_STOP_TRIGGER);
        assert_eq!(contents(&db), model);
        db.resume().unwrap();
        assert!(level0(&db) < 4, "{}", level0(&db));
        assert_eq!(contents(&db), model);
        db.flush().unwrap();
        check_healed(db, &env, o, &model);
    });
}
