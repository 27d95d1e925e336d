//! Key order: the user's [`Comparator`] (LevelDB's `leveldb::Comparator`), its built-in
//! [`BytewiseComparator`], and the one order built on it for internal keys,
//! [`InternalOrder`] (LevelDB's `InternalKeyComparator`).
//!
//! A database orders its user keys with one comparator for its whole life: the memtable,
//! data and index blocks, table ranges in the manifest, compaction and iterators all use
//! it, through the database's [`InternalOrder`] (K2 of `key.rs` over the comparator). Its
//! name is recorded in the manifest when the database is created and checked at every
//! open, so a database is never read in another order than it was written in.
//!
//! Everything that searches keys (skip list, block, table, merge) is written once,
//! generic over a `Comparator`, and the hot paths choose their type once per operation:
//! [`BytewiseComparator`] or [`InternalBytewise`] compared inline when the database's
//! order is bytewise, the user's `dyn Comparator` (a call per comparison) otherwise. The
//! bytewise default thus pays no indirection and no branch per comparison.
//!
//! Invariants a comparator must keep (the engine relies on them and cannot check them):
//! - O1 `compare` is a total order, the same on every call, for the database's lifetime.
//! - O2 keys that compare equal are equal bytes (filters and caches hash bytes; LevelDB
//!   assumes the same).
//! - O3 the shortening hooks only ever return a key `k` with `start <= k < limit`
//!   (separator) or `k >= key` (successor); leaving the key unchanged is always right.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use crate::coding::{compare_bytes, put_fixed64};
use crate::key::{MAX_SEQNUM, ValueType, pack_tag, tag, user_key};

/// The comparator name LevelDB records for bytewise order.
pub const BYTEWISE_COMPARATOR: &str = "leveldb.BytewiseComparator";

/// An order on user keys. The default, when `Options::comparator` is `None`, is bytewise
/// (`leveldb.BytewiseComparator`), with a fast path of its own.
pub trait Comparator: Send + Sync {
    /// The name recorded in the manifest; a database created with one name opens only with
    /// a comparator of the same name. Change the name when the order changes.
    fn name(&self) -> &str;

    /// Orders two user keys.
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering;

    /// May shorten `start` to any key `k` with `start <= k < limit`; used for index
    /// separators between blocks (shorter separators make smaller index blocks). The
    /// default leaves `start` as it is.
    fn find_shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]) {
        let _ = (start, limit);
    }

    /// May change `key` to any key `k >= key`; used for the index entry of a table's last
    /// block. The default leaves it as it is.
    fn find_short_successor(&self, key: &mut Vec<u8>) {
        let _ = key;
    }
}

impl fmt::Debug for dyn Comparator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Comparator").field(&self.name()).finish()
    }
}

/// LevelDB's built-in order, `leveldb.BytewiseComparator`: keys compared as byte strings
/// (`memcmp`, then length). The order of a database whose `Options::comparator` is `None`;
/// compared inline wherever the type is known.
#[derive(Debug, Clone, Copy, Default)]
pub struct BytewiseComparator;

impl Comparator for BytewiseComparator {
    fn name(&self) -> &str {
        BYTEWISE_COMPARATOR
    }

    #[inline(always)]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        compare_bytes(a, b)
    }

    fn find_shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]) {
        shortest_separator(start, limit);
    }

    fn find_short_successor(&self, key: &mut Vec<u8>) {
        short_successor(key);
    }
}

/// The name [`InternalOrder`] answers to, as LevelDB's internal comparator does (never
/// written to a file: the manifest records the user comparator's name).
pub const INTERNAL_KEY_COMPARATOR: &str = "leveldb.InternalKeyComparator";

/// The database's order on internal keys: K2 (user key ascending in the user's
/// comparator, then tag descending) over [`BytewiseComparator`] by default or over a
/// user's comparator. The memtable, data and index blocks, table ranges, compaction and
/// every merge use it. Bytewise user keys are compared inline (this is the hottest call
/// of every seek); a user's comparator costs a call.
#[derive(Clone, Default)]
pub struct InternalOrder {
    /// `None`: bytewise.
    user: Option<Arc<dyn Comparator>>,
}

impl fmt::Debug for InternalOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("InternalOrder")
            .field(&self.user_name())
            .finish()
    }
}

impl InternalOrder {
    /// Internal-key order over `comparator` (`Options::comparator`: `None` is bytewise).
    pub fn new(comparator: Option<&Arc<dyn Comparator>>) -> Self {
        InternalOrder {
            user: comparator.map(Arc::clone),
        }
    }

    /// True when user keys are ordered bytewise.
    #[inline]
    pub fn is_bytewise(&self) -> bool {
        self.user.is_none()
    }

    /// The user comparator, when it is not the built-in bytewise one: hot loops written
    /// over `C: Comparator + ?Sized` run with [`BytewiseComparator`] when this is `None`
    /// and with the user's comparator otherwise.
    #[inline]
    pub fn custom(&self) -> Option<&dyn Comparator> {
        self.user.as_deref()
    }

    /// The user comparator's name, as the manifest records it.
    pub fn user_name(&self) -> &str {
        self.custom().map_or(BYTEWISE_COMPARATOR, |c| c.name())
    }

    /// Orders two user keys (bytewise inline).
    #[inline(always)]
    pub fn compare_user(&self, a: &[u8], b: &[u8]) -> Ordering {
        match self.custom() {
            None => compare_bytes(a, b),
            Some(c) => c.compare(a, b),
        }
    }

    /// K2: user key ascending (in the user order), then tag descending.
    #[inline(always)]
    pub fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        match self.custom() {
            None => compare_internal_keys(a, b),
            Some(c) => compare_internal_custom(c, a, b),
        }
    }

    /// Shortens `start` to an internal key at or after it and before `limit`, when the
    /// user order finds a shorter user key: it gets the largest tag, so it still sorts
    /// after `start` and before `limit`.
    pub fn shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]) {
        let user_start = user_key(start);
        let mut tmp = user_start.to_vec();
        match self.custom() {
            None => shortest_separator(&mut tmp, user_key(limit)),
            Some(c) => c.find_shortest_separator(&mut tmp, user_key(limit)),
        }
        if tmp.len() < user_start.len() && self.compare_user(user_start, &tmp).is_lt() {
            put_fixed64(&mut tmp, pack_tag(MAX_SEQNUM, ValueType::Value));
            debug_assert!(self.compare(start, &tmp) == Ordering::Less);
            debug_assert!(self.compare(&tmp, limit) == Ordering::Less);
            *start = tmp;
        }
    }

    /// Shortens `key` to a short internal key after it (the user order's successor).
    pub fn short_successor(&self, key: &mut Vec<u8>) {
        let user = user_key(key);
        let mut tmp = user.to_vec();
        match self.custom() {
            None => short_successor(&mut tmp),
            Some(c) => c.find_short_successor(&mut tmp),
        }
        if tmp.len() < user.len() && self.compare_user(user, &tmp).is_lt() {
            put_fixed64(&mut tmp, pack_tag(MAX_SEQNUM, ValueType::Value));
            *key = tmp;
        }
    }
}

impl Comparator for InternalOrder {
    fn name(&self) -> &str {
        INTERNAL_KEY_COMPARATOR
    }

    #[inline(always)]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        InternalOrder::compare(self, a, b)
    }

    fn find_shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]) {
        self.shortest_separator(start, limit);
    }

    fn find_short_successor(&self, key: &mut Vec<u8>) {
        self.short_successor(key);
    }
}

/// [`InternalOrder`] over [`BytewiseComparator`], as a type: what a hot loop uses once it
/// has found the database's order is bytewise (no branch per comparison, nothing to drop).
#[derive(Debug, Clone, Copy, Default)]
pub struct InternalBytewise;

impl Comparator for InternalBytewise {
    fn name(&self) -> &str {
        INTERNAL_KEY_COMPARATOR
    }

    #[inline(always)]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        compare_internal_keys(a, b)
    }

    fn find_shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]) {
        InternalOrder::default().shortest_separator(start, limit);
    }

    fn find_short_successor(&self, key: &mut Vec<u8>) {
        InternalOrder::default().short_successor(key);
    }
}

/// K2 over bytewise user keys. Never panics, even on keys shorter than the 8-byte tag
/// (bytes from disk are untrusted): such a key compares as a user key with tag 0.
#[inline]
pub fn compare_internal_keys(a: &[u8], b: &[u8]) -> Ordering {
    match compare_bytes(user_key(a), user_key(b)) {
        Ordering::Equal => tag(b).cmp(&tag(a)),
        ord => ord,
    }
}

/// K2 over a user's comparator.
#[inline(never)]
fn compare_internal_custom(user: &dyn Comparator, a: &[u8], b: &[u8]) -> Ordering {
    match user.compare(user_key(a), user_key(b)) {
        Ordering::Equal => tag(b).cmp(&tag(a)),
        ord => ord,
    }
}

/// Shortens `start` to a key `k` with `start <= k < limit` (bytewise), when one shorter
/// exists: LevelDB's `FindShortestSeparator` for the bytewise comparator.
pub fn shortest_separator(start: &mut Vec<u8>, limit: &[u8]) {
    let shared = crate::coding::shared_prefix_len(start, limit);
    if shared >= start.len().min(limit.len()) {
        return; // one is a prefix of the other: no shorter separator
    }
    let byte = start[shared];
    if byte < 0xff && byte + 1 < limit[shared] {
        start[shared] += 1;
        start.truncate(shared + 1);
    }
}

/// Shortens `key` to a short key `k >= key`: LevelDB's `FindShortSuccessor` for the
/// bytewise comparator (increment the first byte that is not 0xff, drop the rest).
pub fn short_successor(key: &mut Vec<u8>) {
    if let Some(i) = key.iter().position(|&b| b != 0xff) {
        key[i] += 1;
        key.truncate(i + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ParsedInternalKey, SeqNum, make_internal_key};
    use proptest::prelude::*;

    fn ik(k: &[u8], s: SeqNum, t: ValueType) -> Vec<u8> {
        make_internal_key(k, s, t)
    }

    #[test]
    fn order_is_user_key_then_newest_first() {
        let mut keys = [
            ik(b"b", 1, ValueType::Value),
            ik(b"a", 1, ValueType::Value),
            ik(b"a", 5, ValueType::Deletion),
            ik(b"a", 5, ValueType::Value),
            ik(b"", 3, ValueType::Value),
            ik(b"a\x00", 9, ValueType::Value),
        ];
        keys.sort_by(|a, b| compare_internal_keys(a, b));
        let shown: Vec<String> = keys
            .iter()
            .map(|k| ParsedInternalKey::parse(k).unwrap().to_string())
            .collect();
        assert_eq!(
            shown,
            [
                "#3,SET",
                "a#5,SET",
                "a#5,DEL",
                "a#1,SET",
                "a\\x00#9,SET",
                "b#1,SET"
            ]
        );
    }

    #[test]
    fn short_keys_compare_without_panic() {
        assert_eq!(compare_internal_keys(b"", b"abc"), Ordering::Less);
        assert_eq!(compare_internal_keys(b"abc", b"abc"), Ordering::Equal);
    }

    #[test]
    fn separators_match_leveldb() {
        let sep = |a: &[u8], b: &[u8]| {
            let mut s = a.to_vec();
            shortest_separator(&mut s, b);
            s
        };
        assert_eq!(sep(b"abcd", b"abzz"), b"abd");
        assert_eq!(sep(b"abc", b"abd"), b"abc"); // adjacent bytes: unchanged
        assert_eq!(sep(b"abc", b"abcd"), b"abc"); // prefix: unchanged
        assert_eq!(sep(b"ab\xff", b"ac"), b"ab\xff");
        assert_eq!(sep(b"foo", b"hello"), b"g");
        let mut s = b"\xff\xffa\xff".to_vec();
        short_successor(&mut s);
        assert_eq!(s, b"\xff\xffb");
        let mut all = b"\xff\xff".to_vec();
        short_successor(&mut all);
        assert_eq!(all, b"\xff\xff");
    }

    #[test]
    fn internal_separator_gets_max_tag() {
        let mut s = ik(b"foo", 100, ValueType::Value);
        InternalOrder::default().shortest_separator(&mut s, &ik(b"hello", 200, ValueType::Value));
        assert_eq!(s, ik(b"g", MAX_SEQNUM, ValueType::Value));
        // Same user key: unchanged.
        let orig = ik(b"foo", 100, ValueType::Value);
        let mut s = orig.clone();
        InternalOrder::default().shortest_separator(&mut s, &ik(b"foo", 99, ValueType::Value));
        assert_eq!(s, orig);
        let mut k = ik(b"foo", 100, ValueType::Value);
        InternalOrder::default().short_successor(&mut k);
        assert_eq!(k, ik(b"g", MAX_SEQNUM, ValueType::Value));
    }

    proptest! {
        #[test]
        fn separator_is_between(a in proptest::collection::vec(any::<u8>(), 0..8), b in proptest::collection::vec(any::<u8>(), 0..8)) {
            let (lo, hi) = if a < b { (a, b) } else { (b, a) };
            prop_assume!(lo < hi);
            let mut s = lo.clone();
            shortest_separator(&mut s, &hi);
            prop_assert!(lo <= s && s < hi);
            prop_assert!(s.len() <= lo.len());
            let mut t = lo.clone();
            short_successor(&mut t);
            prop_assert!(t >= lo);
        }

        #[test]
        fn order_matches_tuple_order(a in proptest::collection::vec(0u8..3, 0..3), sa in 0u64..4, b in proptest::collection::vec(0u8..3, 0..3), sb in 0u64..4) {
            let ka = ik(&a, sa, ValueType::Value);
            let kb = ik(&b, sb, ValueType::Value);
            let expected = a.cmp(&b).then(sb.cmp(&sa));
            prop_assert_eq!(compare_internal_keys(&ka, &kb), expected);
        }
    }
}
