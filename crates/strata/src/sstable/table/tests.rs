use super::*;
use crate::filter::{BloomPolicy, Filter};
use crate::iter::conformance::count_forward;
use crate::key::{ValueType, make_internal_key};
use crate::sstable::{Compression, TableBuilder, TableOptions};
use std::sync::Arc;

fn ikey(i: usize, seq: u64) -> Vec<u8> {
    make_internal_key(format!("key{i:08}").as_bytes(), seq, ValueType::Value)
}

fn value(i: usize) -> Vec<u8> {
    format!("value-{i}-").repeat(1 + i % 7).into_bytes()
}

fn build(n: usize, options: TableOptions) -> Vec<u8> {
    let mut b = TableBuilder::new(Box::new(Vec::new()), options);
    for i in 0..n {
        b.add(&ikey(i, 100 + i as u64), &value(i)).unwrap();
    }
    assert_eq!(b.num_entries(), n as u64);
    let (file, size) = b.finish().unwrap();
    assert_eq!(file.len() as u64, size);
    *file
}

fn open(bytes: Vec<u8>) -> Result<Arc<Table>> {
    let size = bytes.len() as u64;
    Table::open(
        Arc::new(bytes),
        "test.ldb",
        size,
        &crate::sstable::TableFormat::leveldb(),
    )
    .map(Arc::new)
}

fn options(compression: Compression, bloom: Option<usize>, block_size: usize) -> TableOptions {
    TableOptions {
        block_size,
        restart_interval: 16,
        compression,
        filter: bloom.map(|b| Filter::Bloom(BloomPolicy::new(b))),
        order: Default::default(),
    }
}

#[test]
fn empty_table() {
    let t = open(build(0, TableOptions::default())).unwrap();
    let mut it = t.iter(BlockReads::CHECKED_CACHED);
    it.seek_to_first();
    assert!(!it.valid());
    it.seek_to_last();
    assert!(!it.valid());
    assert!(
        t.get(&ikey(1, 5), BlockReads::CHECKED_CACHED)
            .unwrap()
            .is_none()
    );
    assert!(it.status().is_ok());
}

#[test]
fn iterate_both_ways_and_seek() {
    for opts in [
        options(Compression::None, None, 4096),
        options(Compression::Snappy, Some(10), 4096),
        options(Compression::Snappy, Some(10), 64),
        options(Compression::None, None, 1),
    ] {
        let n = 2000;
        let t = open(build(n, opts.clone())).unwrap();
        assert_eq!(t.has_filter(), opts.filter.is_some());
        let mut it = t.iter(BlockReads::CHECKED_CACHED);
        it.seek_to_first();
        for i in 0..n {
            assert!(it.valid(), "{i} {opts:?}");
            assert_eq!(it.key(), &ikey(i, 100 + i as u64)[..]);
            assert_eq!(it.value(), &value(i)[..]);
            it.next();
        }
        assert!(!it.valid());
        it.seek_to_last();
        for i in (0..n).rev() {
            assert_eq!(it.key(), &ikey(i, 100 + i as u64)[..]);
            it.prev();
        }
        assert!(!it.valid());
        for i in (0..n).step_by(37) {
            // A newer seqnum sorts first: seeking for seq MAX lands on the entry itself.
            it.seek(&make_internal_key(
                format!("key{i:08}").as_bytes(),
                u64::MAX >> 8,
                ValueType::Value,
            ));
            assert_eq!(it.key(), &ikey(i, 100 + i as u64)[..]);
            let got = t
                .get(&ikey(i, 100 + i as u64), BlockReads::CHECKED_CACHED)
                .unwrap()
                .unwrap();
            assert_eq!(got, (ikey(i, 100 + i as u64), value(i)));
        }
        it.status().unwrap();
    }
}

#[test]
fn filter_rules_out_absent_keys() {
    let n = 5000;
    let t = open(build(n, options(Compression::Snappy, Some(10), 4096))).unwrap();
    let hits = (0..n)
        .filter(|i| {
            let k = make_internal_key(format!("key{i:08}x").as_bytes(), 1000, ValueType::Value);
            t.get(&k, BlockReads::CHECKED_CACHED)
                .unwrap()
                .is_some_and(|(found, _)| key::user_key(&found) == key::user_key(&k))
        })
        .count();
    assert_eq!(hits, 0);
}

#[test]
fn compression_is_used_when_it_pays() {
    let plain = build(1000, options(Compression::None, None, 4096));
    let snappy = build(1000, options(Compression::Snappy, None, 4096));
    assert!(
        snappy.len() < plain.len() / 2,
        "{} vs {}",
        snappy.len(),
        plain.len()
    );
}

#[test]
fn damaged_files_give_errors() {
    let good = build(500, options(Compression::Snappy, Some(10), 1024));
    assert!(open(good[..47].to_vec()).unwrap_err().is_corruption());
    let mut bad_magic = good.clone();
    let n = bad_magic.len();
    bad_magic[n - 1] ^= 0xff;
    let err = open(bad_magic).unwrap_err();
    assert!(err.to_string().contains("test.ldb"), "{err}");
    // A flipped bit in the first data block: the iterator reports it, with the file.
    let mut bad_data = good.clone();
    bad_data[10] ^= 0x04;
    let t = open(bad_data).unwrap();
    let mut it = t.iter(BlockReads::CHECKED_CACHED);
    it.seek_to_first();
    assert!(!it.valid());
    let err = it.status().unwrap_err();
    assert!(err.is_corruption());
    assert_eq!(err.as_corruption().unwrap().file, "test.ldb");
    assert!(t.get(&ikey(0, 100), BlockReads::CHECKED_CACHED).is_err());
}

#[test]
fn block_cache_serves_repeated_reads() {
    let bytes = build(3000, options(Compression::Snappy, Some(10), 4096));
    let size = bytes.len() as u64;
    let cache = crate::sstable::BlockCache::new(1 << 20);
    let t = Table::open(
        Arc::new(bytes),
        "c.ldb",
        size,
        &crate::sstable::TableFormat::leveldb(),
    )
    .unwrap()
    .with_cache(Arc::clone(&cache));
    assert_eq!(cache.usage(), 0);
    let got = t
        .get(&ikey(10, 110), BlockReads::CHECKED_CACHED)
        .unwrap()
        .unwrap();
    assert_eq!(got.1, value(10));
    let after_one = cache.usage();
    assert!(after_one > 0);
    assert_eq!(
        t.get(&ikey(11, 111), BlockReads::CHECKED_CACHED)
            .unwrap()
            .unwrap()
            .1,
        value(11)
    );
    assert_eq!(
        cache.usage(),
        after_one,
        "same block: served from the cache"
    );
}

/// Opening a mapped table copies its index and filter out of the map and leaves none of
/// its pages in the process's resident set; a read maps its block again.
#[test]
fn a_mapped_table_opens_without_keeping_its_pages_resident() {
    use crate::env::{DiskEnv, Env, resident_kb};
    let dir = tempfile::tempdir().unwrap();
    for compression in [Compression::None, Compression::Snappy] {
        let bytes = build(20_000, options(compression, Some(10), 4096));
        assert!(bytes.len() > 256 << 10, "{} bytes", bytes.len());
        let path = dir.path().join(format!("{compression:?}.ldb"));
        std::fs::write(&path, &bytes).unwrap();
        // In the page cache, as a table just written is: the map would fault it in around
        // every page read.
        let _ = std::fs::read(&path).unwrap();
        let file = DiskEnv::new().new_table_reader(&path).unwrap();
        let t = Table::open(
            file,
            "r.ldb",
            bytes.len() as u64,
            &crate::sstable::TableFormat::leveldb(),
        )
        .unwrap();
        assert!(t.has_filter());
        assert_eq!(resident_kb(&path), 0, "{compression:?}: after the open");
        let got = t
            .get_version_pinned(&ikey(7_000, 1 << 40), BlockReads::CHECKED_CACHED)
            .unwrap();
        assert_eq!(&got.unwrap().1[..], &value(7_000)[..]);
        // A read maps its pages again (as much as the kernel maps around them: up to a
        // large folio's worth on this kernel, seen 256 kB to 1 MB).
        assert!(resident_kb(&path) > 0, "{compression:?}: after a read");
    }
}

/// A one-pass cursor (a compaction's) over a mapped table keeps about a MiB of it
/// resident, not the whole table; a plain cursor keeps every page it read.
#[test]
fn a_one_pass_cursor_releases_the_pages_behind_it() {
    use crate::env::resident_kb;
    let dir = tempfile::tempdir().unwrap();
    let bytes = build(200_000, options(Compression::None, None, 4096));
    assert!(bytes.len() > 8 << 20, "{} bytes", bytes.len());
    let path = dir.path().join("scan.ldb");
    std::fs::write(&path, &bytes).unwrap();
    let _ = std::fs::read(&path).unwrap();
    let mut resident = Vec::new();
    for one_pass in [false, true] {
        let t = open_mapped(&path);
        let mut it = if one_pass {
            t.scan_iter(BlockReads::SCAN_ONCE)
        } else {
            t.iter(BlockReads::SCAN_ONCE)
        };
        assert_eq!(count_forward(&mut it), 200_000);
        resident.push(resident_kb(&path));
    }
    let (plain, one_pass) = (resident[0], resident[1]);
    assert!(
        plain > 6 * 1024,
        "a plain pass keeps what it read: {plain} kB"
    );
    assert!(
        one_pass <= 3 * 1024,
        "a one-pass cursor keeps about a MiB (plus what the kernel maps around it): {one_pass} kB"
    );
}

/// A mapped table (the real filesystem): uncompressed blocks are read in place and never
/// cached, Snappy blocks are uncompressed into the cache; damage is found either way.
#[test]
fn mapped_tables_read_uncompressed_blocks_in_place() {
    use crate::env::{DiskEnv, Env};
    let dir = tempfile::tempdir().unwrap();
    for (compression, cached) in [(Compression::None, false), (Compression::Snappy, true)] {
        for damaged in [false, true] {
            let mut bytes = build(3000, options(compression, Some(10), 4096));
            if damaged {
                bytes[10] ^= 0x04; // the first data block
            }
            let path = dir.path().join(format!("{compression:?}-{damaged}.ldb"));
            std::fs::write(&path, &bytes).unwrap();
            let file = DiskEnv::new().new_table_reader(&path).unwrap();
            assert!(file.mapped().is_some());
            let cache = crate::sstable::BlockCache::new(1 << 20);
            let t = Table::open(
                file,
                "m.ldb",
                bytes.len() as u64,
                &crate::sstable::TableFormat::leveldb(),
            )
            .unwrap()
            .with_cache(Arc::clone(&cache));
            for round in 0..2 {
                let got = t.get_version_pinned(&ikey(0, 100), BlockReads::CHECKED_CACHED);
                if damaged {
                    let err = got.unwrap_err();
                    assert!(err.is_corruption(), "{compression:?} round {round}: {err}");
                } else {
                    assert_eq!(&got.unwrap().unwrap().1[..], &value(0)[..]);
                }
            }
            let used = cache.usage() > 0;
            assert_eq!(
                used,
                cached && !damaged,
                "{compression:?} damaged {damaged}"
            );
        }
    }
}

/// The table in the file at `path`, opened through a map.
fn open_mapped(path: &std::path::Path) -> Arc<Table> {
    use crate::env::{DiskEnv, Env};
    let file = DiskEnv::new().new_table_reader(path).unwrap();
    assert!(file.mapped().is_some());
    let size = std::fs::metadata(path).unwrap().len();
    let format = crate::sstable::TableFormat::leveldb();
    Arc::new(Table::open(file, "t.ldb", size, &format).unwrap())
}

/// A lookup finds a block's checked mark by the number of its index entry, a walk by the
/// block's offset: both reach the same mark, for every block (T4).
#[test]
fn lookups_and_walks_share_each_blocks_checked_mark() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = build(3000, options(Compression::None, None, 1024));
    let path = dir.path().join("t.ldb");
    std::fs::write(&path, &bytes).unwrap();
    let t = open_mapped(&path);
    let marks = t.verified.as_ref().unwrap();
    let mut index = t.index.iter(t.order.clone());
    index.seek_to_first();
    let mut handles = Vec::new();
    while index.valid() {
        handles.push(BlockHandle::decode_exact(index.value()).unwrap());
        index.next();
    }
    assert!(handles.len() > 50, "{} blocks", handles.len());
    // Lookups of the even keys mark their blocks (by entry number).
    for i in (0..3000).step_by(2) {
        let got = t.get_version(&ikey(i, 100 + i as u64), BlockReads::CHECKED_CACHED);
        assert_eq!(got.unwrap().unwrap().1, value(i));
    }
    for (n, h) in handles.iter().enumerate() {
        assert_eq!(marks.get(None, h.offset), Some(Stored::Plain), "block {n}");
        assert_eq!(
            marks.get(Some(n), h.offset),
            Some(Stored::Plain),
            "block {n}"
        );
    }
    // A fresh table: a walk marks every block (by offset); lookups then see the marks.
    let t = open_mapped(&path);
    let marks = t.verified.as_ref().unwrap();
    assert!(handles.iter().all(|h| marks.get(None, h.offset).is_none()));
    assert_eq!(count_forward(&mut t.iter(BlockReads::CHECKED_CACHED)), 3000);
    for (n, h) in handles.iter().enumerate() {
        assert_eq!(
            marks.get(Some(n), h.offset),
            Some(Stored::Plain),
            "block {n}"
        );
    }
}
