//! Micro-benchmarks of the format layer: CRC, Bloom probe, block seek, table point
//! lookup with the block cached, log append, a scan of a full memtable (what a flush
//! reads). `cargo bench -p strata --bench formats`.

#![allow(
    clippy::unwrap_used,
    reason = "benchmark setup: a failure aborts the run"
)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata::BlockCache;
use strata::comparator::InternalOrder;
use strata::env::WritableFile;
use strata::filter::BloomPolicy;
use strata::iter::Cursor;
use strata::key::{ValueType, make_internal_key};
use strata::log::LogWriter;
use strata::sstable::{
    Block, BlockBuilder, BlockReads, Compression, Table, TableBuilder, TableOptions,
};

fn user_key(i: u64) -> Vec<u8> {
    format!("{i:016}").into_bytes()
}

/// A deterministic spread of key indexes (a multiplicative hash of a counter).
fn spread(i: u64, n: u64) -> u64 {
    i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % n
}

fn crc(c: &mut Criterion) {
    let data = vec![0xabu8; 4096];
    let mut g = c.benchmark_group("crc32c");
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.bench_function("4KiB", |b| {
        b.iter(|| strata::checksum::crc32c(black_box(&data)))
    });
    g.finish();
}

fn bloom(c: &mut Criterion) {
    let keys: Vec<Vec<u8>> = (0..10_000).map(user_key).collect();
    let mut filter = Vec::new();
    BloomPolicy::new(10).create_filter(keys.iter().map(|k| k.as_slice()), &mut filter);
    let mut i = 0u64;
    c.bench_function("bloom/probe_10k_keys", |b| {
        b.iter(|| {
            i += 1;
            BloomPolicy::key_may_match(black_box(&user_key(spread(i, 20_000))), &filter)
        })
    });
}

fn block_seek(c: &mut Criterion) {
    let mut builder = BlockBuilder::new(16);
    let n = 4096 / (16 + 8 + 100);
    for i in 0..n {
        builder.add(
            &make_internal_key(&user_key(i), 1, ValueType::Value),
            &[b'v'; 100],
        );
    }
    let block = Arc::new(Block::new(builder.finish().to_vec()).unwrap());
    let targets: Vec<Vec<u8>> = (0..n)
        .map(|i| make_internal_key(&user_key(spread(i, n)), u64::MAX >> 8, ValueType::Value))
        .collect();
    let mut it = block.iter(InternalOrder::default());
    let mut i = 0;
    c.bench_function("block/seek_4KiB", |b| {
        b.iter(|| {
            i = (i + 1) % targets.len();
            it.seek(black_box(&targets[i]));
            black_box(it.valid())
        })
    });
}

fn table_get(c: &mut Criterion) {
    let n = 20_000u64;
    let options = TableOptions {
        compression: Compression::Snappy,
        filter: Some(strata::filter::Filter::Bloom(strata::BloomPolicy::new(10))),
        ..TableOptions::default()
    };
    let mut builder = TableBuilder::new(Box::new(Vec::new()), options);
    for i in 0..n {
        let k = make_internal_key(&user_key(i), i + 1, ValueType::Value);
        builder.add(&k, &[b'v'; 100]).unwrap();
    }
    let (file, size) = builder.finish().unwrap();
    let cache = BlockCache::new(64 << 20);
    let table = Table::open(
        Arc::new(*file),
        "bench.ldb",
        size,
        &strata::sstable::TableFormat::leveldb(),
    )
    .unwrap()
    .with_cache(cache);
    let targets: Vec<Vec<u8>> = (0..n)
        .map(|i| make_internal_key(&user_key(spread(i, n)), u64::MAX >> 8, ValueType::Value))
        .collect();
    for t in &targets {
        let _ = table.get(t, BlockReads::CHECKED_CACHED); // warm the cache
    }
    let mut i = 0;
    c.bench_function("table/get_cached_block", |b| {
        b.iter(|| {
            i = (i + 1) % targets.len();
            black_box(
                table
                    .get(black_box(&targets[i]), BlockReads::CHECKED_CACHED)
                    .ok()
                    .flatten()
                    .is_some(),
            )
        })
    });
}

/// A file that only counts bytes.
struct Sink(u64);

impl WritableFile for Sink {
    fn append(&mut self, data: &[u8]) -> strata::Result<()> {
        self.0 += data.len() as u64;
        black_box(data);
        Ok(())
    }
    fn flush(&mut self) -> strata::Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> strata::Result<()> {
        Ok(())
    }
}

fn log_append(c: &mut Criterion) {
    let record = vec![b'x'; 128];
    let mut w = LogWriter::new(Box::new(Sink(0)));
    let mut g = c.benchmark_group("log");
    g.throughput(Throughput::Bytes(record.len() as u64));
    g.bench_function("append_128B", |b| {
        b.iter(|| w.add_record(black_box(&record)))
    });
    g.finish();
}

/// A scan of a full default memtable (4 MiB in four runs, random 16-byte keys, 100-byte
/// values) in key order, as a flush reads it: a merge of the runs' skip lists.
fn memtable_scan(c: &mut Criterion) {
    let n = 28_000u64;
    let m =
        strata::memtable::MemTable::for_write_buffer(4 << 20, 1 << 20, InternalOrder::default());
    let value = vec![b'v'; 100];
    for i in 0..n {
        m.add(
            i + 1,
            ValueType::Value,
            &user_key(spread(i, 1 << 40)),
            &value,
        );
    }
    let mut g = c.benchmark_group("memtable");
    g.throughput(Throughput::Elements(n));
    g.bench_function("scan_4MiB", |b| {
        b.iter(|| {
            let mut cursor = m.iter();
            cursor.seek_to_first();
            let mut bytes = 0;
            while cursor.valid() {
                bytes += cursor.key().len() + cursor.value().len();
                cursor.next();
            }
            black_box(bytes)
        })
    });
    g.finish();
}

criterion_group!(
    benches,
    crc,
    bloom,
    block_seek,
    table_get,
    log_append,
    memtable_scan
);
criterion_main!(benches);
