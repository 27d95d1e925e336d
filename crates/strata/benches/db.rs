//! Micro-benchmarks of the database: point get from the memtable and from a table whose
//! block is cached, sequential and random put (no sync). `cargo bench -p strata --bench db`.
//! The db_bench-style comparisons with peers live in `strata-bench`.

#![allow(
    clippy::unwrap_used,
    reason = "benchmark setup: a failure aborts the run"
)]

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use strata::{Db, Options};

fn key(i: u64) -> Vec<u8> {
    format!("{i:016}").into_bytes()
}

fn spread(i: u64, n: u64) -> u64 {
    i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % n
}

fn open(dir: &std::path::Path, write_buffer: usize) -> Db {
    Db::open(
        dir,
        Options {
            create_if_missing: true,
            write_buffer_size: write_buffer,
            ..Options::default()
        },
    )
    .unwrap()
}

fn gets(c: &mut Criterion) {
    let n = 50_000u64;
    let value = vec![b'v'; 100];
    // All in the memtable.
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 64 << 20);
    for i in 0..n {
        db.put(key(i), &value).unwrap();
    }
    let mut i = 0;
    c.bench_function("db/get_memtable", |b| {
        b.iter(|| {
            i += 1;
            black_box(db.get(key(spread(i, n))).unwrap())
        })
    });
    drop(db);
    // All in tables, blocks cached (8 MiB cache, ~6 MiB of data).
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 1 << 20);
    for i in 0..n {
        db.put(key(i), &value).unwrap();
    }
    db.compact_range(None, None).unwrap();
    for i in 0..n {
        db.get(key(i)).unwrap();
    }
    c.bench_function("db/get_table_cached_block", |b| {
        b.iter(|| {
            i += 1;
            black_box(db.get(key(spread(i, n))).unwrap())
        })
    });
}

fn puts(c: &mut Criterion) {
    let value = vec![b'v'; 100];
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 4 << 20);
    let mut i = 0u64;
    c.bench_function("db/put_sequential", |b| {
        b.iter(|| {
            i += 1;
            db.put(key(i), &value).unwrap()
        })
    });
    let mut j = 0u64;
    c.bench_function("db/put_random", |b| {
        b.iter_batched(
            || {
                j += 1;
                key(spread(j, 1 << 40))
            },
            |k| db.put(k, &value).unwrap(),
            BatchSize::SmallInput,
        )
    });
}

criterion_group!(benches, gets, puts);
criterion_main!(benches);
