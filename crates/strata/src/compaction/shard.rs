//! Shards: one compaction's key space cut into ranges that separate threads merge at the
//! same time (RocksDB calls them subcompactions), and the rules each merge keeps as keys go
//! by (when to end an output table, whether a tombstone can go).
//!
//! Invariants:
//! - H2 shards cut the user-key space into consecutive ranges: shard `i` holds the user
//!   keys above `shards[i - 1].hi` up to and including its own `hi` (the last shard has no
//!   upper bound). Every version of a user key therefore falls in one shard, so P2 needs no
//!   knowledge of another shard, and the outputs of shard `i` all sort before those of
//!   shard `i + 1`: appended in shard order they form a valid level (V1).
//! - H3 cuts are anchors (see [`Anchor`]): keys at which an input table, or one of its
//!   data blocks, ends. Taken from every input table's index, they split level-0 tables
//!   (which each span the whole range) as well as sorted levels, so that a compaction of
//!   level 0 alone is shared too; the shards then hold about equal input bytes.

use std::cmp::Ordering;

use super::Compaction;
use crate::comparator::InternalOrder;
use crate::key::user_key;
use crate::version::NUM_LEVELS;

/// One shard of a compaction: its key range and the merge's running state in it.
#[derive(Debug, Clone, Default)]
pub struct Shard {
    /// User keys above this one (exclusive); `None`: from the start.
    pub lo: Option<Vec<u8>>,
    /// User keys up to this one (inclusive); `None`: to the end.
    pub hi: Option<Vec<u8>>,
    grandparent_index: usize,
    seen_key: bool,
    overlapped_bytes: u64,
    level_ptrs: [usize; NUM_LEVELS],
    /// The order of user keys.
    order: InternalOrder,
}

impl Shard {
    /// The user keys above `lo` up to and including `hi` (`None`: unbounded), in `order`.
    pub fn between(lo: Option<Vec<u8>>, hi: Option<Vec<u8>>, order: &InternalOrder) -> Self {
        Shard {
            lo,
            hi,
            order: order.clone(),
            ..Shard::default()
        }
    }

    /// True if `user_key` lies past the shard's end.
    pub fn is_past_end(&self, user_key: &[u8]) -> bool {
        self.hi
            .as_deref()
            .is_some_and(|hi| self.order.compare_user(user_key, hi).is_gt())
    }

    /// True if `user_key` lies before the shard's start.
    pub fn is_before_start(&self, user_key: &[u8]) -> bool {
        self.lo
            .as_deref()
            .is_some_and(|lo| self.order.compare_user(user_key, lo).is_le())
    }

    /// True if no level below the output holds `key`, so a tombstone for it can go (P2).
    /// Calls must come in increasing key order.
    pub fn is_base_level_for_key(&mut self, c: &Compaction, key: &[u8]) -> bool {
        for level in c.level + 2..NUM_LEVELS {
            let files = &c.version.levels[level];
            while let Some(f) = files.get(self.level_ptrs[level]) {
                let (lo, hi) = f.user_range();
                if self.order.compare_user(key, hi).is_le() {
                    if self.order.compare_user(key, lo).is_ge() {
                        return false;
                    }
                    break;
                }
                self.level_ptrs[level] += 1;
            }
        }
        true
    }

    /// True if the output table should end before `ikey`, so that no output overlaps too
    /// many grandparent bytes (which would make its own compaction expensive).
    pub fn should_stop_before(&mut self, c: &Compaction, ikey: &[u8]) -> bool {
        while let Some(g) = c.grandparents.get(self.grandparent_index) {
            if c.version.order.compare(ikey, &g.largest) != Ordering::Greater {
                break;
            }
            if self.seen_key {
                self.overlapped_bytes += g.size;
            }
            self.grandparent_index += 1;
        }
        self.seen_key = true;
        if self.overlapped_bytes > c.max_grandparent_overlap() {
            self.overlapped_bytes = 0;
            true
        } else {
            false
        }
    }
}

/// A point in a compaction's input: `bytes` of one input table's data lie at or before
/// user key `key` (since the table's point before). A table's index block gives one per
/// data block; a table end alone says less, but costs no read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    /// A user key (a data block's last key, or a separator just above it).
    pub key: Vec<u8>,
    /// Input bytes since the table's anchor before.
    pub bytes: u64,
}

/// One anchor per table of a sorted input level: its last user key, with all its bytes
/// (a level-0 table's end says nothing of where its bytes lie: it spans the range). Costs
/// no read; what [`shards`] is given when the tables' indexes cannot be read.
pub fn table_end_anchors(c: &Compaction) -> Vec<Anchor> {
    c.inputs
        .iter()
        .enumerate()
        .filter(|(which, _)| c.level + which > 0)
        .flat_map(|(_, files)| files)
        .map(|f| Anchor {
            key: user_key(&f.largest).to_vec(),
            bytes: f.size,
        })
        .collect()
}

/// Cuts `c` into at most `max` shards of about equal input bytes (H2, H3), at the anchors
/// `anchors` gives (any order; [`table_end_anchors`], or finer ones from the tables' index
/// blocks). A compaction smaller than `min_bytes` is one shard without asking for them
/// (they may cost reads); so is one whose anchors offer no cut.
pub fn shards(
    c: &Compaction,
    max: usize,
    min_bytes: u64,
    anchors: impl FnOnce() -> Vec<Anchor>,
) -> Vec<Shard> {
    let order = &c.version.order;
    let whole = || vec![Shard::between(None, None, order)];
    if max < 2 || c.input_bytes() < min_bytes {
        return whole();
    }
    let mut anchors = anchors();
    anchors.sort_by(|a, b| order.compare_user(&a.key, &b.key));
    let Some(last) = anchors.last().map(|a| &a.key) else {
        return whole();
    };
    let total: u64 = anchors.iter().map(|a| a.bytes).sum();
    let mut cuts: Vec<Vec<u8>> = Vec::new();
    let mut sum = 0u64;
    // A cut at an anchor when the bytes up to it reach the next share; never at the last
    // anchor's key (nothing would be left above it), nor twice at one key.
    for a in &anchors {
        sum += a.bytes;
        let next_share = total * (cuts.len() as u64 + 1) / max as u64;
        if cuts.len() + 1 < max
            && sum >= next_share
            && order.compare_user(&a.key, last).is_lt()
            && cuts
                .last()
                .is_none_or(|prev| order.compare_user(prev, &a.key).is_lt())
        {
            cuts.push(a.key.clone());
        }
    }
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut lo = None;
    for cut in cuts {
        out.push(Shard::between(lo.take(), Some(cut.clone()), order));
        lo = Some(cut);
    }
    out.push(Shard::between(lo, None, order));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::picker::tests::{f, version};
    use crate::compaction::range_compaction;
    use crate::key::{ValueType, make_internal_key};
    use std::sync::Arc;

    #[test]
    fn base_level_and_stop_rules() {
        let v = version(vec![
            (1, f(1, "a", "z", 100)),
            (3, f(2, "c", "d", 100)),
            (3, f(3, "m", "n", 100)),
        ]);
        let c = range_compaction(&v, 1, None, None, 2 << 20).unwrap();
        let mut s = Shard::between(None, None, &InternalOrder::default());
        assert!(s.is_base_level_for_key(&c, b"a"));
        assert!(!s.is_base_level_for_key(&c, b"c"));
        assert!(s.is_base_level_for_key(&c, b"e"));
        assert!(!s.is_base_level_for_key(&c, b"m"));
        assert!(s.is_base_level_for_key(&c, b"p"));
        let mut g = Compaction::new(1, Arc::clone(&v), 10);
        g.grandparents = vec![f(8, "b", "b", 60), f(9, "d", "d", 60)];
        let mut s = Shard::between(None, None, &InternalOrder::default());
        let k = |u: &[u8]| make_internal_key(u, 1, ValueType::Value);
        assert!(!s.should_stop_before(&g, &k(b"a")));
        assert!(!s.should_stop_before(&g, &k(b"c")));
        assert!(s.should_stop_before(&g, &k(b"e")));
    }

    #[test]
    fn shards_cut_at_table_ends_in_equal_shares() {
        // Level 0 spans everything; level 1 has four tables of 100 bytes.
        let v = version(vec![
            (0, f(1, "a", "z", 50)),
            (1, f(2, "a", "e", 100)),
            (1, f(3, "f", "j", 100)),
            (1, f(4, "k", "o", 100)),
            (1, f(5, "p", "z", 100)),
        ]);
        let c = range_compaction(&v, 0, None, None, 2 << 20).unwrap();
        assert_eq!(c.inputs[1].len(), 4);
        let ends = || table_end_anchors(&c);
        let two = shards(&c, 2, 0, ends);
        let bounds: Vec<_> = two.iter().map(|s| (s.lo.clone(), s.hi.clone())).collect();
        assert_eq!(
            bounds,
            vec![(None, Some(b"j".to_vec())), (Some(b"j".to_vec()), None)]
        );
        assert!(!two[0].is_before_start(b"") && two[0].is_past_end(b"j\0"));
        assert!(two[1].is_before_start(b"j") && !two[1].is_before_start(b"j\0"));
        // Never more shards than distinct anchor keys below the last, never an empty
        // last one: the anchors are e, j, o, z and z.
        assert_eq!(shards(&c, 8, 0, ends).len(), 4);
        // Too small, or one shard asked for: the whole range.
        assert_eq!(shards(&c, 2, 10_000, ends).len(), 1);
        assert_eq!(shards(&c, 1, 0, ends).len(), 1);
        let whole = &shards(&c, 1, 0, ends)[0];
        assert!(whole.lo.is_none() && whole.hi.is_none());
    }

    #[test]
    fn index_anchors_cut_level_zero_alone() {
        // Two level-0 tables over the whole range: their ends alone offer no cut, the
        // ends of their blocks do, at the middle of the bytes.
        let v = version(vec![(0, f(1, "a", "z", 400)), (0, f(2, "a", "z", 400))]);
        let c = range_compaction(&v, 0, None, None, 2 << 20).unwrap();
        assert_eq!(shards(&c, 4, 0, || table_end_anchors(&c)).len(), 1);
        let blocks = |keys: &[&str]| -> Vec<Anchor> {
            keys.iter()
                .map(|k| Anchor {
                    key: k.as_bytes().to_vec(),
                    bytes: 100,
                })
                .collect()
        };
        let mut anchors = blocks(&["f", "m", "s", "z"]);
        anchors.extend(blocks(&["d", "k", "p", "z"]));
        let two = shards(&c, 2, 0, || anchors.clone());
        let bounds: Vec<_> = two.iter().map(|s| (s.lo.clone(), s.hi.clone())).collect();
        assert_eq!(
            bounds,
            vec![(None, Some(b"m".to_vec())), (Some(b"m".to_vec()), None)]
        );
        // Four shares of 200 bytes: cuts after f, m and s.
        let four: Vec<_> = shards(&c, 4, 0, || anchors)
            .iter()
            .map(|s| s.hi.clone())
            .collect();
        assert_eq!(
            four,
            vec![
                Some(b"f".to_vec()),
                Some(b"m".to_vec()),
                Some(b"s".to_vec()),
                None
            ]
        );
    }
}
