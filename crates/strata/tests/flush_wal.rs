//! `Db::flush_wal(true)`: writes acknowledged unsynced before it survive a power cut
//! after it; without it, a power cut loses them (so the test can tell).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use strata::testing::{CrashEnv, Damage};
use strata::{Db, Options};

fn open(env: &CrashEnv) -> Db {
    Db::open(
        "/db",
        Options {
            create_if_missing: true,
            env: Arc::new(env.clone()),
            ..Options::default()
        },
    )
    .unwrap()
}

/// Writes 500 unsynced keys (and, with `flush`, calls `flush_wal(true)`), then cuts the
/// power losing every unsynced byte: how many keys come back.
fn survivors(flush: bool) -> usize {
    let env = CrashEnv::new();
    let db = open(&env);
    for i in 0..500 {
        db.put(format!("k{i:04}"), "v").unwrap();
    }
    if flush {
        db.flush_wal(true).unwrap();
    }
    let after = env.crash(Damage::DropAll, 1);
    drop(db);
    let db = open(&after);
    db.range::<&[u8]>(..).count()
}

#[test]
fn flush_wal_makes_earlier_unsynced_writes_durable() {
    assert_eq!(survivors(true), 500);
    assert!(
        survivors(false) < 500,
        "without flush_wal the unsynced writes are lost"
    );
}

/// A closed database on disk whose log holds `a`, the empty synced record (after a
/// `flush_wal(false)`, which writes nothing) and `b`.
fn written_around_a_flush(dir: &std::path::Path) {
    let db = Db::open(
        dir,
        Options {
            create_if_missing: true,
            ..Options::default()
        },
    )
    .unwrap();
    db.put("a", "1").unwrap();
    db.flush_wal(false).unwrap();
    db.flush_wal(true).unwrap();
    db.put("b", "2").unwrap();
}

#[test]
fn flush_wal_without_sync_and_on_a_read_only_database() {
    let dir = tempfile::tempdir().unwrap();
    written_around_a_flush(dir.path());
    let ro = Db::open_read_only(dir.path(), Options::default()).unwrap();
    assert_eq!(
        ro.range::<&[u8]>(..).count(),
        2,
        "the empty record replays cleanly"
    );
    for sync in [true, false] {
        assert!(matches!(
            ro.flush_wal(sync),
            Err(strata::Error::NotSupported(_))
        ));
    }
}

#[test]
fn leveldb_reads_a_log_with_the_empty_record() {
    let dir = tempfile::tempdir().unwrap();
    written_around_a_flush(dir.path());
    let ldb = leveldb_ffi::Db::open(dir.path(), &leveldb_ffi::Options::default()).unwrap();
    assert_eq!(ldb.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(ldb.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
}

/// W5: a memtable switch creates the new WAL without syncing the directory, so the first
/// synced write to it must sync the directory before it is acknowledged. Here no flush
/// can do it instead (every table creation fails, so the flush of the full memtable is
/// paused): a power cut that undoes unsynced directory operations must still leave the
/// synced write's log, and the write, in place.
#[test]
fn a_synced_write_right_after_a_switch_survives_a_power_cut() {
    use strata::WriteOptions;
    use strata::testing::{Call, Fault, FaultEnv};
    for seed in 0..8 {
        let crash = CrashEnv::new();
        let faults = FaultEnv::new(Arc::new(crash.clone()));
        faults.arm(Fault {
            call: Call::Create,
            path_contains: ".ldb".into(),
            skip: 0,
            sticky: true,
            kind: std::io::ErrorKind::StorageFull,
        });
        let db = Db::open(
            "/db",
            Options {
                create_if_missing: true,
                env: Arc::new(faults.clone()),
                write_buffer_size: 64 << 10,
                background_retry_interval: std::time::Duration::ZERO,
                ..Options::default()
            },
        )
        .unwrap();
        let logs = |f: &FaultEnv| {
            f.calls()
                .iter()
                .filter(|(c, p, _)| {
                    matches!(c, Call::Create) && p.to_string_lossy().ends_with(".log")
                })
                .count()
        };
        let first = logs(&faults);
        let mut i = 0;
        while logs(&faults) == first {
            db.put(format!("k{i:06}"), [b'v'; 100]).unwrap();
            i += 1;
        }
        db.put_opt("synced", "yes", &WriteOptions { sync: true })
            .unwrap();
        let after = crash.crash(Damage::DropAll, seed);
        drop(db);
        let db = open(&after);
        assert_eq!(
            db.get("synced").unwrap().as_deref(),
            Some(&b"yes"[..]),
            "seed {seed}: the acknowledged synced write is gone"
        );
    }
}
