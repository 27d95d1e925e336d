//! One conformance check for every [`Cursor`]: a seeded random walk (seeks to the first and
//! last entries, to present keys, to keys between and beyond them, steps both ways and
//! direction changes) compared at every position with the sorted entries it must show.
//! The layers' tests below build a block, a table, a memtable and a merge of blocks from
//! the same kind of model and run the walk on each. At every position the walk also checks
//! the cursor's [`Cursor::next_hint`], when it gives one: it must name a later entry.

use std::cmp::Ordering;

use super::Cursor;

/// How many entries `cursor` holds, walked once from the first; panics on its error.
pub(crate) fn count_forward(cursor: &mut dyn Cursor) -> usize {
    cursor.seek_to_first();
    let mut n = 0;
    while cursor.valid() {
        n += 1;
        cursor.next();
    }
    if let Err(e) = cursor.status() {
        panic!("the walk failed after {n} entries: {e}");
    }
    n
}

/// The hints a walk met: how many, and how many named the very next entry.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hints {
    pub given: usize,
    pub next: usize,
}

/// Drives `cursor` for `steps` random moves and checks each position against `model`,
/// the entries it holds in the cursor's order (`cmp`), and each hint the cursor gives of
/// the entry after it against the entries after it.
pub(crate) fn check(
    cursor: &mut dyn Cursor,
    model: &[(Vec<u8>, Vec<u8>)],
    cmp: fn(&[u8], &[u8]) -> Ordering,
    seed: u64,
    steps: usize,
) -> Hints {
    let mut hints = Hints::default();
    let mut rng = seed | 1;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut at: Option<usize> = None;
    for step in 0..steps {
        let what;
        match next() % 8 {
            0 => {
                what = "seek_to_first".to_string();
                cursor.seek_to_first();
                at = (!model.is_empty()).then_some(0);
            }
            1 => {
                what = "seek_to_last".to_string();
                cursor.seek_to_last();
                at = model.len().checked_sub(1);
            }
            2 | 3 => {
                let target = target(model, next());
                what = format!("seek({target:?})");
                cursor.seek(&target);
                let i = model.partition_point(|(k, _)| cmp(k, &target) == Ordering::Less);
                at = (i < model.len()).then_some(i);
            }
            4..=5 if at.is_some() => {
                what = "next".to_string();
                cursor.next();
                at = at.map(|i| i + 1).filter(|&i| i < model.len());
            }
            _ if at.is_some() => {
                what = "prev".to_string();
                cursor.prev();
                at = at.and_then(|i| i.checked_sub(1));
            }
            _ => continue, // a step needs a valid cursor
        }
        assert!(
            cursor.status().is_ok(),
            "step {step} {what}: {:?}",
            cursor.status()
        );
        match at {
            Some(i) => {
                assert!(
                    cursor.valid(),
                    "step {step} {what}: invalid, want entry {i}"
                );
                assert_eq!(cursor.key(), &model[i].0[..], "step {step} {what}: key");
                assert_eq!(cursor.value(), &model[i].1[..], "step {step} {what}: value");
                if let Some(h) = cursor.next_hint() {
                    hints.given += 1;
                    let later = model[i + 1..].iter().position(|(k, v)| {
                        k.ends_with(h.key_tail)
                            && (h.key_tail.len() >= 8 || h.key_tail.len() == k.len())
                            && v == h.value
                    });
                    assert!(
                        later.is_some(),
                        "step {step} {what}: {h:?} names no later entry"
                    );
                    hints.next += usize::from(later == Some(0));
                }
            }
            None => assert!(!cursor.valid(), "step {step} {what}: valid, want the end"),
        }
    }
    hints
}

/// A seek target: a present key, one just after or before it, or beyond either end.
fn target(model: &[(Vec<u8>, Vec<u8>)], r: u64) -> Vec<u8> {
    if model.is_empty() || r.is_multiple_of(10) {
        return if r.is_multiple_of(20) {
            Vec::new()
        } else {
            vec![0xff; 40]
        };
    }
    let mut k = model[(r >> 8) as usize % model.len()].0.clone();
    match (r >> 4) % 3 {
        0 => {}
        1 => k.push(0),
        _ => {
            if let Some(last) = k.last_mut() {
                *last = last.wrapping_sub(1);
            }
        }
    }
    k
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use super::*;
    use crate::comparator::{BytewiseComparator, InternalOrder, compare_internal_keys};
    use crate::iter::{BoxCursor, MergingIter};
    use crate::key::{ValueType, make_internal_key};
    use crate::memtable::MemTable;
    use crate::sstable::{Block, BlockBuilder, Compression, Table, TableBuilder, TableOptions};

    fn bytewise(a: &[u8], b: &[u8]) -> Ordering {
        a.cmp(b)
    }

    /// `n` sorted, distinct user keys with shared prefixes, and values, from `seed`.
    fn user_entries(seed: u64, n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut keys: Vec<Vec<u8>> = (0..n as u64)
            .map(|i| {
                let x = (i * 7919 + seed * 104_729) % 1_000_003;
                format!("key{:03}/{x}", x % 37).into_bytes()
            })
            .collect();
        keys.sort();
        keys.dedup();
        keys.into_iter()
            .enumerate()
            .map(|(i, k)| (k, format!("v{i}").repeat(i % 5 + 1).into_bytes()))
            .collect()
    }

    /// The same entries as internal keys: each user key at seqnum `i + 1`.
    fn internal(entries: &[(Vec<u8>, Vec<u8>)]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = entries
            .iter()
            .enumerate()
            .map(|(i, (k, v))| {
                (
                    make_internal_key(k, i as u64 + 1, ValueType::Value),
                    v.clone(),
                )
            })
            .collect();
        out.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
        out
    }

    fn block_of(entries: &[(Vec<u8>, Vec<u8>)], restart_interval: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(restart_interval);
        for (k, v) in entries {
            b.add(k, v);
        }
        Arc::new(Block::new(b.finish().to_vec()).unwrap())
    }

    #[test]
    fn block_cursors_conform() {
        for seed in 1..6u64 {
            for n in [0, 1, 2, 17, 300] {
                let model = user_entries(seed, n);
                for restart in [1, 2, 16] {
                    let block = block_of(&model, restart);
                    let hints = check(
                        &mut block.iter(BytewiseComparator),
                        &model,
                        bytewise,
                        seed,
                        2_000,
                    );
                    assert_eq!(hints.given, hints.next, "a block's hint is its next entry");
                    if n >= 17 {
                        assert!(hints.given > 0, "n {n}, restart {restart}: no hint given");
                    }
                }
            }
        }
    }

    #[test]
    fn table_cursors_conform() {
        for seed in 1..4u64 {
            for n in [0, 1, 40, 2_000] {
                let model = internal(&user_entries(seed, n));
                let options = TableOptions {
                    block_size: 256,
                    restart_interval: 4,
                    compression: if seed % 2 == 0 {
                        Compression::Snappy
                    } else {
                        Compression::None
                    },
                    ..TableOptions::default()
                };
                let mut builder = TableBuilder::new(Box::new(Vec::new()), options);
                for (k, v) in &model {
                    builder.add(k, v).unwrap();
                }
                let (file, size) = builder.finish().unwrap();
                let table = Arc::new(
                    Table::open(
                        Arc::new(*file),
                        "t",
                        size,
                        &crate::sstable::TableFormat::leveldb(),
                    )
                    .unwrap(),
                );
                let mut it = table.iter(crate::sstable::BlockReads::SCAN_ONCE);
                let hints = check(&mut it, &model, compare_internal_keys, seed, 3_000);
                assert_eq!(hints.given, hints.next, "a table's hint is its next entry");
                if n >= 40 {
                    assert!(hints.given > 0, "n {n}: no hint given");
                }
            }
        }
    }

    #[test]
    fn memtable_cursors_conform() {
        for seed in 1..4u64 {
            for (n, runs) in [(0, 0), (1, 0), (500, 0), (3_000, 2 << 10)] {
                let entries = user_entries(seed, n);
                let mem = if runs == 0 {
                    MemTable::new()
                } else {
                    MemTable::for_write_buffer(64 << 10, runs, InternalOrder::default())
                };
                for (i, (k, v)) in entries.iter().enumerate() {
                    mem.add(i as u64 + 1, ValueType::Value, k, v);
                }
                let model = internal(&entries);
                check(&mut mem.iter(), &model, compare_internal_keys, seed, 3_000);
            }
        }
    }

    /// A merge of one block per part.
    fn merge_of<P: AsRef<[(Vec<u8>, Vec<u8>)]>>(parts: &[P]) -> MergingIter {
        let cursors: Vec<BoxCursor> = parts
            .iter()
            .map(|p| Box::new(block_of(p.as_ref(), 3).iter(InternalOrder::default())) as BoxCursor)
            .collect();
        MergingIter::new(cursors, InternalOrder::default())
    }

    #[test]
    fn merging_cursors_conform() {
        for seed in 1..6u64 {
            let model = internal(&user_entries(seed, 600));
            for children in [1, 2, 5] {
                // Deal the entries out to the children round robin, so they interleave.
                let mut parts: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); children];
                for (i, e) in model.iter().enumerate() {
                    parts[(i * 31 + seed as usize) % children].push(e.clone());
                }
                let mut merged = merge_of(&parts);
                let hints = check(&mut merged, &model, compare_internal_keys, seed, 3_000);
                // Hints name later entries (`check`); with one child, the next one.
                assert!(hints.given > 0, "{children} children: no hint given");
                if children == 1 {
                    assert_eq!(
                        hints.given, hints.next,
                        "one child's hint is its next entry"
                    );
                }
            }
            // One child holds the first entries, another the rest: each hint is the next
            // entry, across the change of child too.
            let mut merged = merge_of(&[&model[..20], &model[20..]]);
            let hints = check(&mut merged, &model, compare_internal_keys, seed, 3_000);
            assert!(hints.given > 0, "no hint given");
            assert_eq!(hints.given, hints.next, "{hints:?}");
        }
    }

    #[test]
    fn level_cursors_conform() {
        use crate::env::{Env, MemEnv};
        use crate::table_cache::TableCache;
        use crate::version::FileMeta;
        let env: Arc<dyn Env> = Arc::new(MemEnv::new());
        let dir = std::path::Path::new("/lvl");
        for seed in 1..4u64 {
            let model = internal(&user_entries(seed, 1_500));
            // Cut the sorted entries into tables of 1 to 400 entries (a level: disjoint,
            // in order).
            let mut files = Vec::new();
            let mut rest = &model[..];
            let mut number = seed * 1_000;
            while !rest.is_empty() {
                number += 1;
                let n = ((number * 7_919) % 400 + 1).min(rest.len() as u64) as usize;
                let (part, tail) = rest.split_at(n);
                rest = tail;
                let file = env
                    .new_writable(&crate::filename::table(dir, number))
                    .unwrap();
                let mut builder = TableBuilder::new(file, TableOptions::default());
                for (k, v) in part {
                    builder.add(k, v).unwrap();
                }
                let (_, size) = builder.finish().unwrap();
                let first = part.first().map(|e| e.0.clone()).unwrap_or_default();
                let last = part.last().map(|e| e.0.clone()).unwrap_or_default();
                files.push(Arc::new(FileMeta::new(number, size, first, last)));
            }
            let cache = Arc::new(TableCache::new(
                dir,
                Arc::clone(&env),
                crate::sstable::BlockCache::new(64 << 10),
                4,
                false,
                crate::sstable::TableFormat::leveldb(),
            ));
            let mut it = crate::db::level_iter::LevelIter::over_level(
                files,
                cache,
                crate::sstable::BlockReads::SCAN_ONCE,
            );
            let hints = check(&mut it, &model, compare_internal_keys, seed, 3_000);
            assert!(hints.given > 0, "no hint given");
            assert_eq!(hints.given, hints.next, "a level's hint is its next entry");
        }
    }

    /// The database cursor, as a [`Cursor`] (it has the same methods, not the trait).
    struct DbCursor(crate::db::DbIterator);

    impl Cursor for DbCursor {
        fn valid(&self) -> bool {
            self.0.valid()
        }
        fn seek_to_first(&mut self) {
            self.0.seek_to_first()
        }
        fn seek_to_last(&mut self) {
            self.0.seek_to_last()
        }
        fn seek(&mut self, target: &[u8]) {
            self.0.seek(target)
        }
        fn next(&mut self) {
            self.0.next()
        }
        fn prev(&mut self) {
            self.0.prev()
        }
        fn key(&self) -> &[u8] {
            self.0.key()
        }
        fn value(&self) -> &[u8] {
            self.0.value()
        }
        fn status(&self) -> crate::error::Result<()> {
            self.0.status()
        }
    }

    #[test]
    fn database_cursors_conform() {
        use crate::env::MemEnv;
        for seed in 1..4u64 {
            let env = MemEnv::new();
            let db = crate::Db::open(
                "/db",
                crate::Options {
                    create_if_missing: true,
                    write_buffer_size: 16 << 10,
                    env: Arc::new(env),
                    ..crate::Options::default()
                },
            )
            .unwrap();
            let mut model = std::collections::BTreeMap::new();
            for (i, (k, v)) in user_entries(seed, 2_000).into_iter().enumerate() {
                db.put(&k, &v).unwrap();
                model.insert(k.clone(), v);
                if i % 7 == 3 {
                    // Overwritten and deleted keys: versions the cursor must hide.
                    db.put(&k, b"older").unwrap();
                    db.delete(&k).unwrap();
                    model.remove(&k);
                }
                if i == 900 {
                    db.compact_range(None, None).unwrap();
                }
            }
            let model: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
            let mut it = DbCursor(db.raw_iterator());
            check(&mut it, &model, bytewise, seed, 3_000);
        }
    }
}
