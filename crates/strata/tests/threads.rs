//! Four writers and four readers at once, for a bounded time, with small memtables so
//! flushes and compactions run underneath. Each writer owns a key space and publishes
//! the last round it acknowledged for each key; readers check every value they see
//! against those bounds, and snapshots and iterators against themselves.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::Rng;
use strata::{Db, Options, ReadOptions};

const WRITERS: usize = 4;
const READERS: usize = 4;
const KEYS: usize = 300;

fn key(t: usize, k: usize) -> Vec<u8> {
    format!("w{t}/{k:05}").into_bytes()
}

/// Round `r` of a key is a delete when `r % 5 == 4`, otherwise a put of this value.
fn value(t: usize, k: usize, r: u64) -> Vec<u8> {
    format!("{t}:{k}:{r}:").repeat(4).into_bytes()
}

fn round_of(t: usize, k: usize, v: &[u8]) -> u64 {
    let s = std::str::from_utf8(v).expect("utf-8 value");
    let mut parts = s.split(':');
    assert_eq!(
        parts.next(),
        Some(t.to_string().as_str()),
        "value of another writer: {s}"
    );
    assert_eq!(
        parts.next(),
        Some(k.to_string().as_str()),
        "value of another key: {s}"
    );
    let r: u64 = parts.next().unwrap().parse().unwrap();
    assert_eq!(v, value(t, k, r).as_slice(), "torn value");
    r
}

#[test]
fn writers_and_readers_agree() {
    let seconds: u64 = std::env::var("STRATA_THREADS_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(
        Db::open(
            dir.path(),
            Options {
                create_if_missing: true,
                write_buffer_size: 64 << 10,
                max_file_size: 64 << 10,
                bloom_bits_per_key: Some(10),
                ..Options::default()
            },
        )
        .unwrap(),
    );
    let progress: Arc<Vec<AtomicU64>> =
        Arc::new((0..WRITERS * KEYS).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut handles = Vec::new();
    for t in 0..WRITERS {
        let (db, progress, stop) = (Arc::clone(&db), Arc::clone(&progress), Arc::clone(&stop));
        handles.push(std::thread::spawn(move || {
            let mut rng = Rng::new(100 + t as u64);
            let mut writes = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let k = rng.below(KEYS as u64) as usize;
                let slot = &progress[t * KEYS + k];
                let r = slot.load(Ordering::Acquire) + 1;
                if r % 5 == 4 {
                    db.delete(key(t, k)).unwrap();
                } else if rng.below(10) == 0 {
                    let mut b = strata::WriteBatch::new();
                    b.put(key(t, k), value(t, k, r));
                    db.write(b).unwrap();
                } else {
                    db.put(key(t, k), value(t, k, r)).unwrap();
                }
                slot.store(r, Ordering::Release);
                writes += 1;
            }
            writes
        }));
    }
    for t in 0..READERS {
        let (db, progress, stop) = (Arc::clone(&db), Arc::clone(&progress), Arc::clone(&stop));
        handles.push(std::thread::spawn(move || {
            let mut rng = Rng::new(200 + t as u64);
            let mut reads = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let w = rng.below(WRITERS as u64) as usize;
                let k = rng.below(KEYS as u64) as usize;
                let slot = &progress[w * KEYS + k];
                if rng.below(8) == 0 {
                    // A snapshot and an iterator over one writer's keys: sorted, well
                    // formed, and equal to point reads through the same snapshot.
                    let snap = db.snapshot();
                    let ro = ReadOptions {
                        snapshot: Some(snap),
                        ..ReadOptions::default()
                    };
                    let prefix = format!("w{w}/");
                    let mut last: Option<Vec<u8>> = None;
                    for item in db
                        .range_opt(prefix.as_bytes()..format!("w{w}0").as_bytes(), false, &ro)
                        .take(50)
                    {
                        let (kk, v) = item.unwrap();
                        let kn: usize = std::str::from_utf8(&kk[prefix.len()..])
                            .unwrap()
                            .parse()
                            .unwrap();
                        let r = round_of(w, kn, &v);
                        assert_ne!(r % 5, 4, "a deleted round is visible");
                        assert_eq!(db.get_opt(&kk, &ro).unwrap(), Some(v));
                        assert!(
                            last.as_ref().is_none_or(|l| l < &kk),
                            "iterator out of order"
                        );
                        last = Some(kk);
                    }
                } else {
                    let before = slot.load(Ordering::Acquire);
                    let got = db.get(key(w, k)).unwrap();
                    let after = slot.load(Ordering::Acquire);
                    match got {
                        Some(v) => {
                            let r = round_of(w, k, &v);
                            assert!(
                                r >= before && r <= after + 1,
                                "read round {r}, acknowledged {before}..{after}"
                            );
                        }
                        None => {
                            // Never written, or a delete round in the window.
                            let ok = before == 0 || (before..=after + 1).any(|r| r % 5 == 4);
                            assert!(ok, "key missing, acknowledged rounds {before}..{after}");
                        }
                    }
                }
                reads += 1;
            }
            reads
        }));
    }
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    let counts: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let (writes, reads): (u64, u64) = (
        counts[..WRITERS].iter().sum(),
        counts[WRITERS..].iter().sum(),
    );
    println!("threads: {writes} writes, {reads} reads checked in {seconds} s");
    assert!(
        writes > 1000 && reads > 1000,
        "{writes} writes, {reads} reads"
    );
    // Everything acknowledged is there at the end, and after a reopen.
    let check = |db: &Db| {
        for t in 0..WRITERS {
            for k in 0..KEYS {
                let r = progress[t * KEYS + k].load(Ordering::Acquire);
                let got = db.get(key(t, k)).unwrap();
                if r == 0 || r % 5 == 4 {
                    assert_eq!(got, None);
                } else {
                    assert_eq!(got, Some(value(t, k, r)));
                }
            }
        }
    };
    check(&db);
    let db = Arc::into_inner(db).unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    check(&db);
}
