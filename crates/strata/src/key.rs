//! Internal keys: their format and parts. Format: `docs/format/table.md#internal-keys`.
//!
//! Every entry in a memtable or table is stored under an *internal key*:
//!
//! ```text
//! user_key | fixed64(seqnum << 8 | type)      type: 1 value, 0 deletion, 2 blob ref
//! ```
//!
//! Type 2 (a `blob::BlobRef` in place of the value) exists only in databases
//! with value separation on; LevelDB never sees it (its manifest refuses them).
//!
//! Invariants:
//! - K1 seqnums are at most [`MAX_SEQNUM`] (56 bits).
//! - K2 internal keys order by user key ascending (in the database's comparator), then by the packed tag
//!   *descending*: the newest version of a key comes first.
//! - K3 a lookup for "`key` as of `seqnum`" seeks to `key | tag(seqnum, FOR_SEEK)`;
//!   since [`ValueType::FOR_SEEK`] is the highest type, that sorts before every entry of
//!   `key` with a seqnum at most `seqnum`.
//!
//! The order itself (K2 over the database's comparator) is `comparator.rs`'s
//! `InternalOrder`; this module holds the format only.

use crate::coding::{decode_fixed64, put_fixed64};

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
    /// A reference to a value in a blob file (`blob::BlobRef`).
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
