//! What `Db::delete_range` costs: a million keys deleted as one range, against the same
//! keys deleted one by one in batches of 1,000, and what reads across the gap cost
//! before and after a compaction. `docs/results/` records a run:
//!
//! ```text
//! cargo run --release -p strata --example delete_range_cost -- [DIR] [KEYS]
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::Instant;

use strata::{Db, Options, WriteBatch};

fn key(i: u64) -> String {
    format!("key{i:010}")
}

fn open(dir: &std::path::Path) -> Db {
    let _ = std::fs::remove_dir_all(dir);
    Db::open(
        dir,
        Options {
            create_if_missing: true,
            ..Options::default()
        },
    )
    .unwrap()
}

/// `n` keys in order, 100-byte values, then everything compacted.
fn fill(dir: &std::path::Path, n: u64) -> Db {
    let db = open(dir);
    let value = vec![b'v'; 100];
    let mut batch = WriteBatch::new();
    for i in 0..n {
        batch.put(key(i), &value);
        if batch.len() == 1000 {
            db.write(std::mem::take(&mut batch)).unwrap();
        }
    }
    db.write(batch).unwrap();
    db.compact_range(None, None).unwrap();
    db
}

/// Microseconds per seek to a key just below the gap followed by one step into it (the
/// step lands on the first key after the gap), averaged over `rounds`.
fn seek_across(db: &Db, below: u64, rounds: u32) -> f64 {
    let start = Instant::now();
    for _ in 0..rounds {
        let mut it = db.raw_iterator();
        it.seek(key(below).as_bytes());
        it.next();
        assert!(it.valid());
    }
    start.elapsed().as_secs_f64() * 1e6 / f64::from(rounds)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir =
        std::path::PathBuf::from(args.next().unwrap_or_else(|| "/tmp/strata-delrange".into()));
    let n: u64 = args.next().map_or(2_000_000, |s| s.parse().unwrap());
    let (lo, hi) = (n / 4, n / 4 + n / 2);
    println!("{n} keys, deleting [{lo}, {hi}): {} keys", hi - lo);

    let db = fill(&dir, n);
    let t = Instant::now();
    db.delete_range(key(lo), key(hi)).unwrap();
    let range_s = t.elapsed().as_secs_f64();
    let gap_before = seek_across(&db, lo - 1, 20);
    let t = Instant::now();
    db.compact_range(None, None).unwrap();
    let compact_s = t.elapsed().as_secs_f64();
    let gap_after = seek_across(&db, lo - 1, 2000);
    assert_eq!(db.get(key(lo)).unwrap(), None);
    assert!(db.get(key(hi)).unwrap().is_some());
    drop(db);

    let db = fill(&dir, n);
    let t = Instant::now();
    let mut batch = WriteBatch::new();
    for i in lo..hi {
        batch.delete(key(i));
        if batch.len() == 1000 {
            db.write(std::mem::take(&mut batch)).unwrap();
        }
    }
    db.write(batch).unwrap();
    let keys_s = t.elapsed().as_secs_f64();
    drop(db);

    println!(
        "delete_range: {range_s:.3} s ({:.3} us a key)",
        range_s * 1e6 / (hi - lo) as f64
    );
    println!(
        "per-key deletes in batches of 1,000: {keys_s:.3} s ({:.3} us a key)",
        keys_s * 1e6 / (hi - lo) as f64
    );
    println!("seek + next across the gap, before compaction: {gap_before:.1} us");
    println!("compact_range after it: {compact_s:.3} s");
    println!("seek + next across the gap, after compaction: {gap_after:.2} us");
}
