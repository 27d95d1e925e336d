//! Internal keys and their order. Format: `docs/format/table.md#internal-keys`.
//!
//! Every entry in a memtable or table is stored under an *internal key*:
//!
//! ```text
//! user_key | fixed64(seqnum << 8 | type)      type: 1 value, 0 deletion, 2 blob ref
//! ```
//!
//! Type 2 (a [`crate::blob::BlobRef`] in place of the value) exists only in databases
//! with value separation on; LevelDB never sees it (its manifest refuses them).
//!
//! Invariants:
//! - K1 seqnums are at most [`MAX_SEQNUM`] (56 bits).
//! - K2 internal keys order by user key ascending (bytewise), then by the packed tag
//!   *descending*: the newest version of a key comes first.
//! - K3 a lookup for "`key` as of `seqnum`" seeks to `key | tag(seqnum, FOR_SEEK)`;
//!   since [`ValueType::FOR_SEEK`] is the highest type, that sorts before every entry of
//!   `key` with a seqnum at most `seqnum`.
//!
//! The default comparator is bytewise, named [`crate::comparator::BYTEWISE_COMPARATOR`] in manifests.
//! Comparing never panics, even on keys shorter than the 8-byte tag (bytes from disk are
//! untrusted): such a key compares as a user key with tag 0.

use std::cmp::Ordering;

use crate::coding::{compare_bytes, decode_fixed64, put_fixed64};
use crate::comparator::{Comparator, CompareUser, UserOrder};

/// A sequence number: the position of a write in the database's history.
pub type SeqNum = u64;

/// The largest sequence number (56 bits).
pub const MAX_SEQNUM: SeqNum = (1 << 56) - 1;

/// Size of the tag that ends every internal key.
pub const TAG_SIZE: usize = 8;

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum ValueType {
    /// A tombstone: the key was deleted.
    Deletion = 0,
    /// A value.
    Value = 1,
    /// A reference to a value in a blob file ([`crate::blob::BlobRef`]).
    BlobRef = 2,
}

impl ValueType {
    /// The type stored in `b`, if it is one.
    pub fn from_byte(b: u8) -> Option<Self> {
        match b {
            0 => Some(ValueType::Deletion),
            1 => Some(ValueType::Value),
            2 => Some(ValueType::BlobRef),
            _ => None,
        }
    }

    /// The type a lookup key carries: the highest, so that it sorts before every entry
    /// of its user key at or below its seqnum (K3).
    pub const FOR_SEEK: ValueType = ValueType::BlobRef;

    /// True for the types that carry a value (inline or by reference).
    pub fn has_value(self) -> bool {
        self != ValueType::Deletion
    }
}

/// Packs a seqnum and type into a tag. Requires: `seqnum <= MAX_SEQNUM`.
#[inline]
pub fn pack_tag(seqnum: SeqNum, ty: ValueType) -> u64 {
    debug_assert!(seqnum <= MAX_SEQNUM);
    (seqnum << 8) | ty as u64
}

/// Appends `user_key | tag(seqnum, ty)` to `dst`.
#[inline]
pub fn append_internal_key(dst: &mut Vec<u8>, user_key: &[u8], seqnum: SeqNum, ty: ValueType) {
    dst.extend_from_slice(user_key);
    put_fixed64(dst, pack_tag(seqnum, ty));
}

/// Builds `user_key | tag(seqnum, ty)`.
pub fn make_internal_key(user_key: &[u8], seqnum: SeqNum, ty: ValueType) -> Vec<u8> {
    let mut k = Vec::with_capacity(user_key.len() + TAG_SIZE);
    append_internal_key(&mut k, user_key, seqnum, ty);
    k
}

/// Calls `f` with `user_key | tag(seqnum, ty)`, built on the stack when it fits in 64
/// bytes: a point lookup builds its key once per read and needs no allocation for it.
#[inline]
pub fn with_internal_key<R>(
    user_key: &[u8],
    seqnum: SeqNum,
    ty: ValueType,
    f: impl FnOnce(&[u8]) -> R,
) -> R {
    const ON_STACK: usize = 64;
    let n = user_key.len() + TAG_SIZE;
    if n > ON_STACK {
        return f(&make_internal_key(user_key, seqnum, ty));
    }
    let mut buf = [0u8; ON_STACK];
    buf[..user_key.len()].copy_from_slice(user_key);
    buf[user_key.len()..n].copy_from_slice(&pack_tag(seqnum, ty).to_le_bytes());
    f(&buf[..n])
}

/// The user-key part of an internal key (all of it if shorter than a tag).
#[inline]
pub fn user_key(ikey: &[u8]) -> &[u8] {
    match ikey.len().checked_sub(TAG_SIZE) {
        Some(at) => &ikey[..at],
        None => ikey,
    }
}

/// The tag of an internal key (0 if shorter than a tag).
#[inline]
pub fn tag(ikey: &[u8]) -> u64 {
    ikey.len()
        .checked_sub(TAG_SIZE)
        .and_then(|at| decode_fixed64(&ikey[at..]))
        .unwrap_or(0)
}

/// The type of an internal key's entry; `None` if it is shorter than a tag or its type is
/// unknown.
#[inline]
pub fn value_type(ikey: &[u8]) -> Option<ValueType> {
    ValueType::from_byte(tag(ikey) as u8).filter(|_| ikey.len() >= TAG_SIZE)
}

/// An internal key split into its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedInternalKey<'a> {
    /// The key the user wrote.
    pub user_key: &'a [u8],
    /// When it was written.
    pub seqnum: SeqNum,
    /// Value or deletion.
    pub ty: ValueType,
}

impl<'a> ParsedInternalKey<'a> {
    /// Splits `ikey`; `None` if it is shorter than a tag or its type is unknown.
    pub fn parse(ikey: &'a [u8]) -> Option<Self> {
        let at = ikey.len().checked_sub(TAG_SIZE)?;
        let tag = decode_fixed64(&ikey[at..])?;
        Some(ParsedInternalKey {
            user_key: &ikey[..at],
            seqnum: tag >> 8,
            ty: ValueType::from_byte(tag as u8)?,
        })
    }
}

impl std::fmt::Display for ParsedInternalKey<'_> {
    /// Pebble's notation: `key#seqnum,SET` or `key#seqnum,DEL`, the key escaped.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.ty {
            ValueType::Value => "SET",
            ValueType::Deletion => "DEL",
            ValueType::BlobRef => "BLOB",
        };
        write!(f, "{}#{},{kind}", self.user_key.escape_ascii(), self.seqnum)
    }
}

/// K2: user key ascending, then tag descending.
#[inline]
pub fn compare_internal_keys(a: &[u8], b: &[u8]) -> Ordering {
    match compare_bytes(user_key(a), user_key(b)) {
        Ordering::Equal => tag(b).cmp(&tag(a)),
        ord => ord,
    }
}

/// A total order on keys stored in a block: bytewise or internal-key.
pub trait KeyOrder: Clone + Send + Sync + 'static {
    /// Compares two keys.
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering;

    /// True when keys are internal keys whose user keys are ordered bytewise (K2 over
    /// bytewise): what a block's fences assume.
    #[inline]
    fn internal_bytewise(&self) -> bool {
        false
    }
}

/// Plain bytewise order (metaindex blocks, user keys).
#[derive(Debug, Clone, Copy, Default)]
pub struct Bytewise;

impl CompareUser for Bytewise {
    #[inline(always)]
    fn compare_user(&self, a: &[u8], b: &[u8]) -> Ordering {
        compare_bytes(a, b)
    }
}

impl KeyOrder for Bytewise {
    #[inline]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        compare_bytes(a, b)
    }
}

/// Internal-key order (K2) over bytewise user keys, as a type: what a hot loop uses once
/// it has found the database's order is bytewise (no branch per comparison, nothing to
/// drop).
#[derive(Debug, Clone, Copy, Default)]
pub struct InternalBytewise;

impl KeyOrder for InternalBytewise {
    #[inline(always)]
    fn internal_bytewise(&self) -> bool {
        true
    }

    #[inline(always)]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        compare_internal_keys(a, b)
    }
}

/// Internal-key order (K2) over a user key order: the memtable, data and index blocks,
/// table ranges and every merge use it. The default is over bytewise user keys.
#[derive(Debug, Clone, Default)]
pub struct InternalOrder {
    user: UserOrder,
}

impl InternalOrder {
    /// Internal-key order over `user`.
    pub fn new(user: UserOrder) -> Self {
        InternalOrder { user }
    }

    /// The user key order.
    pub fn user(&self) -> &UserOrder {
        &self.user
    }

    /// K2: user key ascending (in the user order), then tag descending. The bytewise
    /// order is compared inline (this is the hottest call of every seek); a user's
    /// comparator costs a call.
    #[inline(always)]
    pub fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        match &self.user {
            UserOrder::Bytewise => compare_internal_keys(a, b),
            UserOrder::Custom(c) => compare_internal_custom(c.as_ref(), a, b),
        }
    }

    /// Shortens `start` to an internal key at or after it and before `limit`, when the
    /// user order finds a shorter user key: it gets the largest tag, so it still sorts
    /// after `start` and before `limit`.
    pub fn shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]) {
        let user_start = user_key(start);
        let mut tmp = user_start.to_vec();
        self.user.shortest_separator(&mut tmp, user_key(limit));
        if tmp.len() < user_start.len() && self.user.compare(user_start, &tmp).is_lt() {
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
        self.user.short_successor(&mut tmp);
        if tmp.len() < user.len() && self.user.compare(user, &tmp).is_lt() {
            put_fixed64(&mut tmp, pack_tag(MAX_SEQNUM, ValueType::Value));
            *key = tmp;
        }
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

impl KeyOrder for InternalOrder {
    #[inline(always)]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        InternalOrder::compare(self, a, b)
    }

    #[inline]
    fn internal_bytewise(&self) -> bool {
        self.user().is_bytewise()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparator::{short_successor, shortest_separator};
    use proptest::prelude::*;

    fn ik(k: &[u8], s: SeqNum, t: ValueType) -> Vec<u8> {
        make_internal_key(k, s, t)
    }

    #[test]
    fn layout_and_parse() {
        let k = ik(b"foo", 0x0102, ValueType::Value);
        assert_eq!(k, b"foo\x01\x02\x01\x00\x00\x00\x00\x00");
        let p = ParsedInternalKey::parse(&k).unwrap();
        assert_eq!(
            (p.user_key, p.seqnum, p.ty),
            (&b"foo"[..], 0x0102, ValueType::Value)
        );
        assert_eq!(p.to_string(), "foo#258,SET");
        assert!(ParsedInternalKey::parse(b"short").is_none());
        let mut bad = k.clone();
        bad[3] = 7; // type 7
        assert!(ParsedInternalKey::parse(&bad).is_none());
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
