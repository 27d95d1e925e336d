//! The skip list against a `BTreeMap`, alone and with readers racing the inserter. These
//! run under Miri too (`make miri`), with smaller counts.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::*;
use crate::key::{ValueType, make_internal_key, pack_tag};

/// A model ordered like the list: (user key, reversed tag).
type Model = BTreeMap<(Vec<u8>, std::cmp::Reverse<u64>), Vec<u8>>;

fn scale(n: usize) -> usize {
    if cfg!(miri) { n / 50 + 10 } else { n }
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn ikey(user: &[u8], tag: u64) -> Vec<u8> {
    let mut k = user.to_vec();
    k.extend_from_slice(&tag.to_le_bytes());
    k
}

fn check_against(list: &Arc<SkipList>, model: &Model) {
    assert_eq!(list.len(), model.len());
    let mut c = Cursor::new(Arc::clone(list));
    c.seek_to_first();
    for ((user, tag), value) in model {
        assert!(c.valid());
        assert_eq!(c.key(), ikey(user, tag.0));
        assert_eq!(c.value(), value.as_slice());
        c.next();
    }
    assert!(!c.valid());
    c.seek_to_last();
    for ((user, tag), value) in model.iter().rev() {
        assert!(c.valid());
        assert_eq!(c.key(), ikey(user, tag.0));
        assert_eq!(c.value(), value.as_slice());
        c.prev();
    }
    assert!(!c.valid());
}

#[test]
fn random_inserts_match_a_sorted_map() {
    let list = Arc::new(SkipList::new());
    let mut model = Model::new();
    let mut rng = Rng(7);
    for seq in 1..=scale(5000) as u64 {
        let user = format!("k{:04}", rng.below(700)).into_bytes();
        let value = vec![b'v'; rng.below(40) as usize];
        let tag = pack_tag(seq, ValueType::Value);
        list.insert(&user, tag, &value);
        model.insert((user, std::cmp::Reverse(tag)), value);
    }
    check_against(&list, &model);

    // Seeks land on the first entry at or after the target; gets see the newest version
    // at or below the read seqnum.
    let mut c = Cursor::new(Arc::clone(&list));
    for _ in 0..scale(2000) {
        let user = format!("k{:04}", rng.below(720)).into_bytes();
        let seq = rng.below(scale(5000) as u64 + 10);
        let tag = pack_tag(seq, ValueType::Value);
        let want = model.range((user.clone(), std::cmp::Reverse(tag))..).next();
        c.seek(&make_internal_key(&user, seq, ValueType::Value));
        match want {
            Some(((u, t), v)) => {
                assert_eq!(c.key(), ikey(u, t.0));
                assert_eq!(c.value(), v.as_slice());
                let got = list.get(&user, tag);
                if *u == user {
                    assert_eq!(got, Some((t.0, v.as_slice())));
                } else {
                    assert_eq!(got, None);
                }
            }
            None => {
                assert!(!c.valid());
                assert_eq!(list.get(&user, tag), None);
            }
        }
    }
}

#[test]
fn sequential_then_interleaved_inserts_stay_sorted() {
    // Ascending keys take the splice shortcut; then keys before, between and after them.
    let list = Arc::new(SkipList::new());
    let mut model = Model::new();
    let mut seq = 0;
    let mut add = |user: Vec<u8>, list: &SkipList| {
        seq += 1;
        let tag = pack_tag(seq, ValueType::Value);
        list.insert(&user, tag, &user);
        model.insert((user.clone(), std::cmp::Reverse(tag)), user);
    };
    for i in 0..scale(3000) {
        add(format!("{i:08}").into_bytes(), &list);
    }
    for i in (0..scale(3000)).step_by(7) {
        add(format!("{i:08}x").into_bytes(), &list); // between
        add(format!("{i:08}").into_bytes(), &list); // same user key, newer
    }
    for i in 0..scale(200) {
        add(format!("{:08}", 99_000_000 + i).into_bytes(), &list); // after all
        add(format!("-{i:05}").into_bytes(), &list); // before all
    }
    check_against(&list, &model);
}

#[test]
fn empty_keys_and_values_and_large_values() {
    let list = Arc::new(SkipList::new());
    let start = list.memory_usage();
    assert!(start > 0, "the head is a node");
    let big = vec![9u8; BLOCK_SIZE]; // over a quarter block: a block of its own
    list.insert(b"", pack_tag(1, ValueType::Value), b"");
    list.insert(b"", pack_tag(2, ValueType::Deletion), b"");
    list.insert(b"big", pack_tag(3, ValueType::Value), &big);
    list.insert(b"small", pack_tag(4, ValueType::Value), b"s");
    assert!(list.memory_usage() >= start + BLOCK_SIZE + 4);
    assert_eq!(
        list.get(b"", pack_tag(5, ValueType::Value)),
        Some((pack_tag(2, ValueType::Deletion), &b""[..]))
    );
    assert_eq!(
        list.get(b"", pack_tag(1, ValueType::Value)),
        Some((pack_tag(1, ValueType::Value), &b""[..]))
    );
    assert_eq!(
        list.get(b"big", pack_tag(9, ValueType::Value))
            .map(|(_, v)| v.len()),
        Some(BLOCK_SIZE)
    );
    let mut c = Cursor::new(Arc::clone(&list));
    c.seek_to_first();
    assert_eq!(c.key(), ikey(b"", pack_tag(2, ValueType::Deletion)));
    c.prev();
    assert!(!c.valid(), "prev from the first entry leaves the list");
    c.seek_to_last();
    assert_eq!(c.value(), b"s");
    c.next();
    assert!(!c.valid());
    c.next();
    assert!(!c.valid());
    assert_eq!(c.key(), b"");
}

#[test]
fn a_cursor_keeps_the_list_alive() {
    let list = Arc::new(SkipList::new());
    list.insert(b"a", pack_tag(1, ValueType::Value), b"1");
    list.insert(b"b", pack_tag(2, ValueType::Value), b"2");
    let mut c = Cursor::new(Arc::clone(&list));
    drop(list);
    c.seek_to_last();
    assert_eq!(c.value(), b"2");
    c.prev();
    assert_eq!(c.value(), b"1");
}

/// A cursor positioned on one thread reads on another while the first keeps inserting
/// (the `Send` of `Cursor`; under Miri, its data-race checker watches the handover).
#[test]
fn a_cursor_moves_to_another_thread() {
    let list = Arc::new(SkipList::new());
    for (i, k) in [b"a", b"b", b"c"].iter().enumerate() {
        list.insert(*k, pack_tag(i as u64 + 1, ValueType::Value), *k);
    }
    let mut c = Cursor::new(Arc::clone(&list));
    c.seek_to_first();
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        while c.valid() {
            seen.push(c.value().to_vec());
            c.next();
        }
        seen
    });
    list.insert(b"d", pack_tag(4, ValueType::Value), b"d");
    let seen = reader.join().unwrap();
    assert!(seen.starts_with(&[b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]));
    assert!(seen.len() <= 4);
}

#[test]
fn memory_counts_node_bytes() {
    let list = SkipList::new();
    // A new list is far from full under the smallest write buffer (4 KiB): if it were
    // not, every write would switch to a fresh memtable that is already "full".
    assert!(list.memory_usage() < 512, "{}", list.memory_usage());
    let per_entry = node_size(1, 16 + TAG_SIZE, 100);
    let n = scale(20_000);
    for i in 0..n {
        list.insert(
            format!("{i:016}").as_bytes(),
            pack_tag(i as u64 + 1, ValueType::Value),
            &[0; 100],
        );
    }
    let used = list.memory_usage();
    // Towers average 1 + 1/3 pointers of 8 bytes, alignment adds at most 7 bytes.
    assert!(used >= n * per_entry, "{used} < {n} x {per_entry}");
    assert!(used <= n * (per_entry + 16) + 512, "{used} for {n} entries");
}

#[test]
fn readers_racing_the_inserter_see_sorted_whole_entries() {
    let list = Arc::new(SkipList::new());
    let n = scale(20_000) as u64;
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let list = Arc::clone(&list);
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let mut passes = 0;
                let mut rng = Rng(r + 11);
                loop {
                    let finished = done.load(Ordering::Acquire);
                    let before = list.len();
                    let mut c = Cursor::new(Arc::clone(&list));
                    c.seek_to_first();
                    let mut seen = 0;
                    let mut last: Option<Vec<u8>> = None;
                    while c.valid() {
                        let k = c.key().to_vec();
                        // Every entry is whole: its value is its user key, reversed.
                        let mut want = crate::key::user_key(&k).to_vec();
                        want.reverse();
                        assert_eq!(c.value(), want.as_slice());
                        if let Some(l) = &last {
                            assert_eq!(
                                crate::comparator::compare_internal_keys(l, &k),
                                std::cmp::Ordering::Less
                            );
                        }
                        last = Some(k);
                        seen += 1;
                        c.next();
                    }
                    assert!(seen >= before, "an iteration saw {seen} < {before} entries");
                    let probe = format!("{:08}", rng.below(n)).into_bytes();
                    if let Some((_, v)) =
                        list.get(&probe, pack_tag(u64::MAX >> 8, ValueType::Value))
                    {
                        let mut want = probe.clone();
                        want.reverse();
                        assert_eq!(v, want.as_slice());
                    }
                    passes += 1;
                    if finished {
                        assert_eq!(seen as u64, n);
                        return passes;
                    }
                }
            })
        })
        .collect();
    for seq in 1..=n {
        // Random order, unique keys: a permutation of 0..n by a multiplier coprime to n.
        let i = (seq * 7919) % n;
        let user = format!("{i:08}").into_bytes();
        let mut value = user.clone();
        value.reverse();
        list.insert(&user, pack_tag(seq, ValueType::Value), &value);
    }
    done.store(true, Ordering::Release);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
}

#[test]
fn heights_are_bounded_and_mostly_short() {
    let mut rng = 0xdead_beef;
    let mut counts = [0usize; MAX_HEIGHT + 1];
    for _ in 0..scale(40_000) {
        let h = random_height(&mut rng);
        assert!((1..=MAX_HEIGHT).contains(&h));
        counts[h] += 1;
    }
    let total: usize = counts.iter().sum();
    assert!(counts[1] * 10 > total * 7, "{counts:?}"); // about 3 in 4 are height 1
}

/// Many versions of few keys, inserted while readers read at a published seqnum (as the
/// database's snapshots do): a point read and a cursor scan at that seqnum must agree on
/// each key's newest visible version.
#[test]
fn versioned_reads_at_a_published_seqnum_agree_while_inserting() {
    use std::sync::atomic::AtomicU64;
    let list = Arc::new(SkipList::new());
    // Under Miri each reader pass is slow: a short run still interleaves the threads.
    let n = if cfg!(miri) { 200 } else { 40_000 };
    let keys = 64u64;
    let published = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let list = Arc::clone(&list);
            let published = Arc::clone(&published);
            std::thread::spawn(move || {
                let _ = r;
                loop {
                    let s = published.load(Ordering::Acquire);
                    // Point reads, then a scan, at seqnum s.
                    let mut newest = std::collections::BTreeMap::new();
                    for k in 0..keys {
                        let user = format!("k{k:03}").into_bytes();
                        if let Some((tag, v)) = list.get(&user, pack_tag(s, ValueType::Value)) {
                            if tag >> 8 > s {
                                let now = published.load(Ordering::Acquire);
                                let again = list.get(&user, pack_tag(s, ValueType::Value));
                                panic!(
                                    "get {:?} at {s} gave seq {} (published now {now}); again: {:?}",
                                    String::from_utf8_lossy(&user),
                                    tag >> 8,
                                    again.map(|(t, _)| t >> 8)
                                );
                            }
                            assert_eq!(v, format!("{}", tag >> 8).as_bytes());
                            newest.insert(user, tag >> 8);
                        }
                    }
                    let mut c = Cursor::new(Arc::clone(&list));
                    c.seek_to_first();
                    let mut seen = std::collections::BTreeMap::new();
                    while c.valid() {
                        let ik = c.key().to_vec();
                        let seq = crate::key::tag(&ik) >> 8;
                        let user = crate::key::user_key(&ik).to_vec();
                        if seq <= s && !seen.contains_key(&user) {
                            seen.insert(user, seq);
                        }
                        c.next();
                    }
                    // Every key a point read found, the scan found at the same version.
                    for (user, seq) in &newest {
                        assert_eq!(seen.get(user), Some(seq), "{:?} at {s}", user);
                    }
                    if s == n {
                        return;
                    }
                }
            })
        })
        .collect();
    let mut rng = Rng(99);
    for seq in 1..=n {
        let user = format!("k{:03}", rng.below(keys)).into_bytes();
        list.insert(
            &user,
            pack_tag(seq, ValueType::Value),
            seq.to_string().as_bytes(),
        );
        published.store(seq, Ordering::Release);
    }
    for r in readers {
        r.join().unwrap();
    }
}

/// Many versions of few keys, in random key order: the list stays sorted (newest
/// version of a key first).
#[test]
fn many_versions_of_few_keys_stay_sorted() {
    let list = SkipList::new();
    let mut rng = Rng(99);
    let n = scale(20_000) as u64;
    for seq in 1..=n {
        let user = format!("k{:03}", rng.below(64)).into_bytes();
        list.insert(
            &user,
            pack_tag(seq, ValueType::Value),
            seq.to_string().as_bytes(),
        );
    }
    let mut c = Cursor::new(Arc::new(list));
    c.seek_to_first();
    let mut last: Option<Vec<u8>> = None;
    let mut i = 0;
    while c.valid() {
        let k = c.key().to_vec();
        if let Some(l) = &last {
            assert_eq!(
                crate::comparator::compare_internal_keys(l, &k),
                std::cmp::Ordering::Less,
                "at {i}"
            );
        }
        last = Some(k);
        i += 1;
        c.next();
    }
    assert_eq!(i, n);
}

/// A second insert of the same internal key (damaged input only) is dropped: the list
/// stays strictly sorted and keeps the first value.
#[test]
fn a_duplicate_internal_key_keeps_the_first() {
    let list = SkipList::new();
    list.insert(b"k", pack_tag(5, ValueType::Value), b"first");
    list.insert(b"k", pack_tag(5, ValueType::Value), b"second");
    assert_eq!(list.len(), 1);
    assert_eq!(
        list.get(b"k", pack_tag(9, ValueType::Value)),
        Some((pack_tag(5, ValueType::Value), &b"first"[..]))
    );
}
