//! Kill -9 (`docs/durability.md` C1, C2): a child process writes, one write in three with
//! `sync: true`, and reports each acknowledged write; the parent kills it with SIGKILL at
//! a random moment, reopens the database, and checks that every acknowledged put is there
//! and no acknowledged delete is undone, synced or not (a process crash keeps what reached
//! the OS). Repeated `STRATA_CRASH_CYCLES` times (default 50) on the real filesystem.
//! The log is written through a memory map (the default), so a killed writer leaves it
//! ending in preallocated zeros: recovery must read that as the end of the log, never as
//! damage (L4), and the test checks that it met such a tail. One value in ten is 40-60 KB
//! of random bytes, which the log writes (a WAL fragment of it, or its blob record) with
//! `pwritev` instead of through the map, and every other cycle runs with value separation
//! on (compressed blob files; the large values stay raw there, small ones stay inline).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::{Rng, env_u64};
use strata::{Db, Options, WriteOptions};

const KEYS: u64 = 200;

fn options(blobs: bool) -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 32 << 10,
        max_file_size: 32 << 10,
        blob_threshold: if blobs { 4096 } else { 0 },
        blob_compression: blobs,
        ..Options::default()
    }
}

/// Operation `i`: which key, and the value it puts (`None` = delete).
fn op(i: u64) -> (Vec<u8>, Option<Vec<u8>>) {
    let k = format!("key{:04}", i.wrapping_mul(2_654_435_761) % KEYS).into_bytes();
    if i % 7 == 3 {
        (k, None)
    } else if i % 10 == 5 {
        // Large and incompressible, so that it is written past the map (`mapped::DIRECT`,
        // 16 KiB) either way: stored raw in a blob record, or cut into WAL fragments of
        // which at least one is 20 KB or more (a record of 40 KB crosses at most two
        // 32 KiB block boundaries).
        let mut v = format!("large-{i}-").into_bytes();
        v.extend(Rng::new(i).bytes(40_000 + (i % 3) as usize * 10_000));
        (k, Some(v))
    } else {
        (
            k,
            Some(
                format!("value-{i}-")
                    .repeat(1 + (i % 9) as usize)
                    .into_bytes(),
            ),
        )
    }
}

/// The child: from operation `STRATA_CRASH_FROM` on, write (every third with sync) and print
/// `ACK <i>` after each, until killed.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var("STRATA_CRASH_CHILD") else {
        return;
    };
    let from: u64 = std::env::var("STRATA_CRASH_FROM").unwrap().parse().unwrap();
    let blobs = std::env::var("STRATA_CRASH_BLOBS").is_ok_and(|v| v == "1");
    let db = Db::open(Path::new(&dir), options(blobs)).unwrap();
    let mut out = std::io::stdout().lock();
    for i in from.. {
        let sync = WriteOptions { sync: i % 3 == 0 };
        match op(i) {
            (k, Some(v)) => db.put_opt(k, v, &sync).unwrap(),
            (k, None) => db.delete_opt(k, &sync).unwrap(),
        }
        writeln!(out, "ACK {i}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn acknowledged_writes_survive_kill_9() {
    let cycles = env_u64("STRATA_CRASH_CYCLES", 50);
    let mut dir = tempfile::tempdir().unwrap();
    // STRATA_CRASH_KEEP=1 keeps the directory (printed) for a look after a failure.
    dir.disable_cleanup(std::env::var_os("STRATA_CRASH_KEEP").is_some());
    let path = dir.path().join("db");
    println!("kill -9: database in {}", path.display());
    let seed = env_u64("STRATA_CRASH_SEED", 99);
    println!(
        "kill -9: {cycles} cycles, seed {seed} (STRATA_CRASH_SEED; kill moments are real time)"
    );
    let mut rng = Rng::new(seed);
    // What the database must hold: per key, the value of its last acknowledged operation.
    let mut model: HashMap<Vec<u8>, Option<Vec<u8>>> = HashMap::new();
    let mut next = 0u64;
    let mut total_acked = 0u64;
    let mut zero_tails = 0u64;
    for cycle in 0..cycles {
        let blobs = cycle % 2 == 1;
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
            .env("STRATA_CRASH_CHILD", &path)
            .env("STRATA_CRASH_FROM", next.to_string())
            .env("STRATA_CRASH_BLOBS", if blobs { "1" } else { "0" })
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let acked = Arc::new(AtomicU64::new(u64::MAX));
        let reader = {
            let acked = Arc::clone(&acked);
            let stdout = child.stdout.take().unwrap();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if let Some((_, n)) = line.split_once("ACK ") {
                        acked.store(n.trim().parse().unwrap(), Ordering::Release);
                    }
                }
            })
        };
        // Let it write for a while (at least until its first acknowledgement), then kill.
        let wait = Duration::from_millis(20 + rng.below(250));
        let started = std::time::Instant::now();
        while acked.load(Ordering::Acquire) == u64::MAX
            && started.elapsed() < Duration::from_secs(20)
        {
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(wait);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        reader.join().unwrap();
        let last = acked.load(Ordering::Acquire);
        assert_ne!(
            last,
            u64::MAX,
            "cycle {cycle}: the child acknowledged nothing"
        );
        for i in next..=last {
            let (k, v) = op(i);
            model.insert(k, v);
        }
        total_acked += last + 1 - next;
        // Operation last+1 may or may not have reached the log before the kill.
        let (in_flight_key, in_flight_value) = op(last + 1);

        zero_tails += u64::from(has_zero_tail(&path));
        let db = Db::open(&path, options(blobs)).unwrap();
        let notes = db.property("strata.recovery").unwrap();
        assert!(
            !notes.contains("ZeroFill"),
            "cycle {cycle}: a zero tail was taken for damage: {notes}"
        );
        for (k, expected) in &model {
            let got = db.get(k).unwrap();
            if *k == in_flight_key && got == in_flight_value {
                continue;
            }
            assert_eq!(
                &got,
                expected,
                "cycle {cycle}: key {} lost its acknowledged state",
                String::from_utf8_lossy(k)
            );
        }
        // Adopt the in-flight operation's outcome, whichever it was.
        model.insert(in_flight_key.clone(), db.get(&in_flight_key).unwrap());
        db.close().unwrap();
        next = last + 2;
    }
    println!(
        "kill -9: {cycles} cycles, {total_acked} acknowledged writes checked (one in three \
         synced), {zero_tails} logs left ending in preallocated zeros"
    );
    assert!(zero_tails > 0, "no cycle left a mapped log's zero tail");
}

/// True if the newest log in `dir` ends in zeros: a mapped log whose writer was killed.
fn has_zero_tail(dir: &Path) -> bool {
    let newest = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .max();
    newest.is_some_and(|p| std::fs::read(p).unwrap().last() == Some(&0))
}
