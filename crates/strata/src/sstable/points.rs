//! Point fences (B2): a summary of every entry of a cached data block, so that a point
//! lookup lands on its entry without stepping through the restart region before it.
//!
//! A seek in a plain block binary-searches the restart points and then decodes entries
//! forward, one after another, until it reaches the target: with LevelDB's restart
//! interval of 16 and 100-byte values that is about 8 entries and 1 KiB of the block on
//! average, a cache miss every 64 bytes once cached blocks outgrow the CPU's caches.
//! Point fences hold, per entry, the word of its user key after the prefix every key of
//! the block shares, and where the entry starts; a lookup binary-searches the words (one
//! small array) and decodes one entry.
//!
//! They exist only for blocks where a word identifies a user key exactly:
//! - every key is an internal key over a bytewise-ordered user key (the caller's check);
//! - every user key has the same length, at most 8 bytes past the shared prefix, so two
//!   words are equal exactly when the user keys are, and compare as the keys do;
//! - every entry's stored key delta holds its whole tag (8 bytes), so an entry's full
//!   internal key is the user key sought plus a tag read from the entry itself.
//!
//! A lookup they cannot answer (a user key of another length or prefix, a key the block
//! lacks, only versions newer than the target) is left to the ordinary seek, which gives
//! the same answer (`points_change_no_seek` in `block.rs`). Point fences are built the
//! first time a block is served from the block cache ([`super::Block::prepare_points`]):
//! a block read once and dropped never pays for them. They live beside the block's bytes
//! (12 bytes an entry, about a tenth of a block of 100-byte values) and are charged to
//! the block cache when they are built ([`crate::cache::BlockCache::charge_more`]).

use crate::coding::{decode_fixed64, shared_prefix_len};
use crate::key::TAG_SIZE;

/// Per-entry words and offsets of one block (B2), in one allocation: a lookup touches a
/// few cache lines of it and then one entry.
#[derive(Debug)]
pub(super) struct Points {
    /// Entries.
    n: usize,
    /// The length of every entry's user key.
    user_len: usize,
    /// The length of the user-key prefix every entry shares.
    prefix_len: usize,
    /// `n` words, one per entry in order: the big-endian word of its user key past the
    /// prefix, zero-padded; then the entries' header offsets, two `u32` to a word (low
    /// half first); then the prefix, 8 bytes to a big-endian word, zero-padded.
    data: Box<[u64]>,
}

/// One entry as the builder sees it.
pub(super) struct Seen {
    /// Offset of the entry's header.
    pub offset: usize,
    /// Bytes of its key stored in the entry (not shared with the previous key).
    pub non_shared: usize,
    /// Where its full internal key ends in the builder's key bytes (it starts where the
    /// previous one ends).
    pub key_end: usize,
}

/// What [`Points::find`] found: the entry at or after the target, whose user key is the
/// target's.
pub(super) struct Found {
    /// Offset of the entry's header.
    pub offset: usize,
}

impl Points {
    /// Point fences over `entries` (every entry of the block, in order, whose full keys
    /// lie one after another in `keys`), or `None` when the block does not qualify
    /// (module docs).
    pub(super) fn build(entries: &[Seen], keys: &[u8]) -> Option<Points> {
        let first_end = entries.first()?.key_end;
        let user_len = first_end.checked_sub(TAG_SIZE)?;
        let mut start = 0;
        for e in entries {
            if e.key_end - start != first_end || e.non_shared < TAG_SIZE {
                return None;
            }
            start = e.key_end;
        }
        let user = |i: usize| {
            let at = i * first_end;
            keys.get(at..at + user_len)
        };
        // Keys are sorted: what the first and last share, every key shares.
        let (first, last) = (user(0)?, user(entries.len() - 1)?);
        let skip = shared_prefix_len(first, last);
        if user_len - skip > 8 {
            return None;
        }
        let n = entries.len();
        let mut data = Vec::with_capacity(n + n.div_ceil(2) + skip.div_ceil(8));
        for i in 0..n {
            data.push(word_past(user(i)?, skip));
        }
        for pair in entries.chunks(2) {
            let low = u64::from(u32::try_from(pair[0].offset).ok()?);
            let high = match pair.get(1) {
                Some(e) => u64::from(u32::try_from(e.offset).ok()?),
                None => 0,
            };
            data.push(low | high << 32);
        }
        data.extend((0..skip.div_ceil(8)).map(|w| word_past(&first[..skip], 8 * w)));
        Some(Points {
            n,
            user_len,
            prefix_len: skip,
            data: data.into_boxed_slice(),
        })
    }

    /// Bytes they take beside the block.
    pub(super) fn size(&self) -> usize {
        8 * self.data.len()
    }

    fn offset(&self, i: usize) -> Option<usize> {
        let pair = *self.data.get(self.n + i / 2)?;
        Some((pair >> (32 * (i % 2)) & 0xffff_ffff) as usize)
    }

    /// The first entry at or after internal key `target` when its user key is the
    /// target's; `None` when the fences cannot say (the caller then seeks as usual).
    /// `tag_at(offset)` reads the tag of the entry at `offset`.
    pub(super) fn find(
        &self,
        target: &[u8],
        tag_at: impl Fn(usize) -> Option<u64>,
    ) -> Option<Found> {
        let ulen = target.len().checked_sub(TAG_SIZE)?;
        if ulen != self.user_len {
            return None;
        }
        let (user, tag) = target.split_at(ulen);
        let prefix = self.data.get(self.n + self.n.div_ceil(2)..)?;
        for (w, &stored) in prefix.iter().enumerate() {
            if word_past(&user[..self.prefix_len], 8 * w) != stored {
                return None;
            }
        }
        let want = decode_fixed64(tag)?;
        let word = word_past(user, self.prefix_len);
        let words = self.data.get(..self.n)?;
        let mut i = words.partition_point(|&w| w < word);
        // Versions of one user key sit newest (largest tag) first: the first whose tag is
        // at or below the target's is the first entry at or after it.
        while words.get(i) == Some(&word) {
            let offset = self.offset(i)?;
            if tag_at(offset)? <= want {
                return Some(Found { offset });
            }
            i += 1;
        }
        None
    }
}

/// The big-endian word of `user[skip..skip + 8]`, zero-padded.
fn word_past(user: &[u8], skip: usize) -> u64 {
    let mut bytes = [0u8; 8];
    let rest = user.get(skip..).unwrap_or_default();
    let n = rest.len().min(8);
    bytes[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(bytes)
}
