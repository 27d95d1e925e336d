//! What the database does when the disk says no: a failed WAL append or fsync fails that
//! write and every later one (the error is latched, the fsync never retried), reads keep
//! working, and a reopen recovers every acknowledged write.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::io::ErrorKind;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use strata::env::{Env, MemEnv};
use strata::testing::{Call, Fault, FaultEnv};
use strata::{Db, Options, WriteOptions};

fn options(env: Arc<dyn Env>) -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 64 << 10,
        // A failed flush pauses (C7) until `resume`; `disk_full.rs` tests the retries.
        background_retry_interval: Duration::ZERO,
        env,
        ..Options::default()
    }
}

fn fault(call: Call, path: &str, skip: u64, sticky: bool) -> Fault {
    Fault {
        call,
        path_contains: path.into(),
        skip,
        sticky,
        kind: ErrorKind::Other,
    }
}

/// Writes 200 synced keys, arms `f`, then writes until one fails; checks the latch,
/// reads, and recovery. Returns how many writes were acknowledged.
fn run(f: Fault) -> u64 {
    let mem = MemEnv::new();
    let faulty = FaultEnv::new(Arc::new(mem.clone()));
    let dir = Path::new("/db");
    let db = Db::open(dir, options(Arc::new(faulty.clone()))).unwrap();
    let sync = WriteOptions { sync: true };
    let mut acked = 0u64;
    for i in 0..200u64 {
        db.put_opt(format!("k{i:05}"), format!("v{i}"), &sync)
            .unwrap();
        acked += 1;
    }
    faulty.arm(f);
    let mut failed_at = None;
    for i in 200..5000u64 {
        match db.put_opt(format!("k{i:05}"), format!("v{i}"), &sync) {
            Ok(()) => acked += 1,
            Err(e) => {
                assert!(matches!(e, strata::Error::Io { .. }), "{e}");
                failed_at = Some(i);
                break;
            }
        }
    }
    let failed_at = failed_at.expect("the armed fault never fired");
    assert!(faulty.failures() >= 1);
    faulty.disarm();
    // Latched: later writes fail even though the disk is fine again.
    assert!(
        db.put("after", "x").is_err(),
        "a write succeeded after a failed WAL write"
    );
    // Reads go on.
    assert_eq!(db.get("k00000").unwrap(), Some(b"v0".to_vec()));
    assert_eq!(
        db.get(format!("k{:05}", failed_at - 1)).unwrap(),
        Some(format!("v{}", failed_at - 1).into_bytes())
    );
    drop(db);
    // Recovery: every acknowledged write is back.
    let db = Db::open(dir, options(Arc::new(mem))).unwrap();
    for i in 0..acked {
        assert_eq!(
            db.get(format!("k{i:05}")).unwrap(),
            Some(format!("v{i}").into_bytes()),
            "k{i:05} lost"
        );
    }
    assert_eq!(db.get("after").unwrap(), None);
    acked
}

#[test]
fn failed_wal_fsync_is_latched_and_recovered() {
    assert!(run(fault(Call::Sync, ".log", 50, false)) >= 250);
}

#[test]
fn failed_wal_append_is_latched_and_recovered() {
    assert!(run(fault(Call::Append, ".log", 30, false)) >= 200);
}

#[test]
fn failed_flush_stops_writes_but_not_reads() {
    // The first table write fails: the flush cannot finish, so writes that need the
    // memtable's room fail (paused until `resume`), and everything acknowledged is still
    // recovered from the WAL.
    run(fault(Call::Append, ".ldb", 0, true));
}

#[test]
fn failed_manifest_write_stops_writes() {
    run(fault(Call::Append, "MANIFEST", 0, true));
}
