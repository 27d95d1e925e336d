//! [`Fences`]: a summary of a kept block's restart keys that decides most of a seek's
//! comparisons without reading the block's entries (T5), and, for a table's index, finds
//! the entry a lookup wants and the data block it names without reading the index's
//! entries at all (T6).
//!
//! Built when a kept block (the block cache's, a table's index) is read, for a block whose
//! keys are internal keys over bytewise user keys: the bytes every restart's user key but
//! the last starts with (the prefix), and for each restart the next 8 bytes of its user
//! key as a big-endian word. A seek then binary-searches those words, one small array,
//! and reads a restart's entry only when its word equals the target's; without fences
//! each probe of the search reads an entry somewhere in the block, a cache miss on a
//! cache larger than the CPU's. Words decide only strict order: a word below the target's
//! means a user key below the target's (both start with the prefix; zero padding can only
//! make a key look smaller when it is a prefix of the other, so also smaller), and the
//! same above.
//!
//! The last restart key may not start with the prefix: a table's last index key is the
//! short successor of its last key (`"1"` after keys `"000..."`), and a prefix shared by
//! it too would be empty, every word alike and every probe a read of an entry. Such a key
//! is above every key that starts with the prefix (it sorts after the first key and
//! differs from it inside the prefix), so its fence is `u64::MAX`: above every target's
//! word but `u64::MAX` itself, which is a tie and reads the entry.
//!
//! A block of one entry per restart (an index block as LevelDB and Strata write them) can
//! also keep, beside each restart's word, a word its reader computes from the entry's
//! value (`aux`; a table packs the data block's handle into it). Word and aux lie side by
//! side, 16 bytes a restart, so the line the search's last probes read holds the answer:
//! a point lookup goes from the fences to the data block with no read of the index's
//! entries, one dependent cache miss fewer.
//!
//! Layout of `words`: restart `i`'s word at `i * stride`, its aux at `i * stride + 1`
//! when `stride` is 2; after the restarts, the prefix, 8 bytes to a word (zero-padded).
//!
//! Invariants:
//! - T5 a seek on a block with fences lands where the same seek on the same bytes
//!   without fences would. A block gets fences only from a table whose order is internal
//!   keys over bytewise user keys (`Table` decides when it decodes the block), and is
//!   sought only in that order (walks in any order are fine).
//! - T6 [`Fences::find`] answers only where the words decide, and then as a seek in that
//!   order would: `Found::Entry { number, aux }` when entry `number` is the first whose
//!   key is at or after the target (every restart key before it is below the target, its
//!   own is above) and `aux` is what was computed from its value; `Found::End` when every
//!   key is below the target. It answers only for fences built with an aux for every
//!   restart of a block of one entry per restart (entry `i` is restart `i`).

use std::cmp::Ordering;

use crate::coding::shared_prefix_len;
use crate::key::{TAG_SIZE, user_key};

/// A block's fences; empty (`num` 0) for a block without them.
#[derive(Debug, Default)]
pub(super) struct Fences {
    words: Vec<u64>,
    /// 1, or 2 with an aux beside each restart's word.
    stride: usize,
    /// Restarts summarized.
    num: usize,
    /// Length of the prefix every restart's user key (but perhaps the last's) starts with.
    skip: usize,
    /// How many restarts, from the first, have user keys that start with the prefix: all,
    /// or all but the last (whose fence is then `u64::MAX`).
    prefixed: usize,
}

/// Where fences place a target among a block's restart keys.
#[derive(Debug, Clone, Copy)]
pub(super) enum Place {
    /// Before every restart key.
    Before,
    /// After every restart key that starts with the fences' prefix (all, or all but the
    /// last).
    After,
    /// Among them: the word to compare with each restart's fence.
    Word(u64),
    /// The block has no fences (or the target is not an internal key).
    Unknown,
}

/// What [`Fences::find`] found (T6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Entry `number` is the first at or after the target; `aux` came from its value.
    Entry { number: usize, aux: u64 },
    /// Every key is below the target.
    End,
    /// The words do not decide (a tie, a target outside the prefix's reach, or no aux):
    /// seek.
    Undecided,
}

/// The big-endian word of `key[at..at + 8]`, zero-padded past the key's end.
#[inline]
fn word_at(key: &[u8], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    if let Some(rest) = key.get(at..) {
        let n = rest.len().min(8);
        bytes[..n].copy_from_slice(&rest[..n]);
    }
    u64::from_be_bytes(bytes)
}

impl Fences {
    /// Fences over the restarts' user keys (in order; at least two, or none are built),
    /// with `aux[i]` beside restart `i`'s word when given for every restart.
    pub(super) fn build(users: &[&[u8]], aux: Option<&[u64]>) -> Fences {
        if users.len() < 2 {
            return Fences::default();
        }
        let first = users[0];
        let (body, last) = users.split_at(users.len() - 1);
        let skip = body
            .iter()
            .map(|k| shared_prefix_len(first, k))
            .min()
            .unwrap_or(0);
        let outside = shared_prefix_len(first, last[0]) < skip;
        let aux = aux.filter(|a| a.len() == users.len());
        let stride = if aux.is_some() { 2 } else { 1 };
        let mut words = Vec::with_capacity(users.len() * stride + skip.div_ceil(8));
        for (i, k) in users.iter().enumerate() {
            words.push(if i == body.len() && outside {
                u64::MAX
            } else {
                word_at(k, skip)
            });
            if let Some(aux) = aux {
                words.push(aux[i]);
            }
        }
        words.extend((0..skip.div_ceil(8)).map(|w| word_at(&first[..skip], 8 * w)));
        Fences {
            words,
            stride,
            num: users.len(),
            skip,
            prefixed: users.len() - usize::from(outside),
        }
    }

    /// True for a block without fences.
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.num == 0
    }

    /// Restart `i`'s word. Requires `i` below the number of restarts.
    #[inline]
    pub(super) fn word(&self, i: usize) -> u64 {
        self.words[i * self.stride]
    }

    /// How many restarts, from the first, have user keys with the prefix.
    #[inline]
    pub(super) fn prefixed(&self) -> usize {
        self.prefixed
    }

    /// The prefix's length.
    #[cfg(test)]
    pub(super) fn skip(&self) -> usize {
        self.skip
    }

    /// Bytes the fences hold, for cache accounting.
    pub(super) fn bytes(&self) -> usize {
        8 * self.words.len()
    }

    /// Where the fences put internal key `target` among the restart keys.
    #[inline]
    pub(super) fn place(&self, target: &[u8]) -> Place {
        if self.num == 0 || target.len() < TAG_SIZE {
            return Place::Unknown;
        }
        let user = user_key(target);
        let head = &user[..user.len().min(self.skip)];
        let prefix = self.words.get(self.num * self.stride..).unwrap_or(&[]);
        for (w, &shared) in prefix.iter().enumerate() {
            match word_at(head, 8 * w).cmp(&shared) {
                Ordering::Less => return Place::Before,
                Ordering::Greater => return Place::After,
                Ordering::Equal => {}
            }
        }
        if user.len() < self.skip {
            return Place::Before; // a proper prefix of every restart's user key
        }
        Place::Word(word_at(user, self.skip))
    }

    /// The first entry at or after internal key `target`, where the words decide (T6).
    #[inline]
    pub fn find(&self, target: &[u8]) -> Found {
        if self.stride != 2 {
            return Found::Undecided;
        }
        let first = match self.place(target) {
            Place::Unknown => return Found::Undecided,
            Place::Before => 0,
            Place::After if self.prefixed == self.num => self.num,
            // Past every key with the prefix: the last key, outside it, decides.
            Place::After => return Found::Undecided,
            Place::Word(t) => {
                let (mut lo, mut hi) = (0, self.num);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if self.word(mid) < t {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                if lo < self.num && self.word(lo) == t {
                    return Found::Undecided; // the entry's key decides
                }
                lo
            }
        };
        match self.words.get(first * 2 + 1) {
            Some(&aux) if first < self.num => Found::Entry { number: first, aux },
            _ => Found::End,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ikey(user: &[u8]) -> Vec<u8> {
        crate::key::make_internal_key(user, 7, crate::key::ValueType::Value)
    }

    #[test]
    fn words_pad_with_zeros() {
        assert_eq!(word_at(b"ab", 0), 0x6162_0000_0000_0000);
        assert_eq!(word_at(b"ab", 5), 0);
        assert_eq!(word_at(b"0123456789", 2), u64::from_be_bytes(*b"23456789"));
    }

    #[test]
    fn find_decides_strict_order_and_leaves_ties() {
        let users: Vec<&[u8]> = vec![b"k10", b"k20", b"k30"];
        let f = Fences::build(&users, Some(&[100, 200, 300]));
        assert_eq!(f.skip, 1);
        let at = |u: &[u8]| f.find(&ikey(u));
        assert_eq!(
            at(b"k05"),
            Found::Entry {
                number: 0,
                aux: 100
            }
        );
        assert_eq!(
            at(b"k15"),
            Found::Entry {
                number: 1,
                aux: 200
            }
        );
        assert_eq!(
            at(b"k25"),
            Found::Entry {
                number: 2,
                aux: 300
            }
        );
        assert_eq!(at(b"k35"), Found::End);
        // Below the prefix, and a proper prefix of it: before every key.
        assert_eq!(
            at(b"a"),
            Found::Entry {
                number: 0,
                aux: 100
            }
        );
        assert_eq!(
            at(b""),
            Found::Entry {
                number: 0,
                aux: 100
            }
        );
        // Past the prefix: after every key.
        assert_eq!(at(b"z"), Found::End);
        // A user key equal to a restart's: the tags decide, the entry must be read.
        assert_eq!(at(b"k20"), Found::Undecided);
        // Not an internal key.
        assert_eq!(f.find(b"k"), Found::Undecided);
        // Without aux, nothing is found.
        let plain = Fences::build(&users, None);
        assert_eq!(plain.find(&ikey(b"k15")), Found::Undecided);
        assert_eq!(plain.word(1), f.word(1));
        // Too few restarts: no fences.
        assert!(Fences::build(&users[..1], Some(&[1])).is_empty());
    }

    #[test]
    fn a_last_key_outside_the_prefix_decides_only_past_the_others() {
        let users: Vec<&[u8]> = vec![b"0001", b"0002", b"1"];
        let f = Fences::build(&users, Some(&[1, 2, 3]));
        assert_eq!((f.skip, f.prefixed), (3, 2));
        assert_eq!(f.word(2), u64::MAX);
        // Among the prefixed keys, past them (the last key is above every prefixed key).
        assert_eq!(f.find(&ikey(b"00015")), Found::Entry { number: 1, aux: 2 });
        assert_eq!(f.find(&ikey(b"0003")), Found::Entry { number: 2, aux: 3 });
        // Outside the prefix: the last key's entry decides.
        assert_eq!(f.find(&ikey(b"05")), Found::Undecided);
    }
}
