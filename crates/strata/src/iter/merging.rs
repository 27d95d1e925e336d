//! [`MergingIter`]: one sorted view over several sorted cursors (memtables, level-0
//! tables, levels).
//!
//! Children are scanned linearly for the smallest (or largest) key: the tree has few
//! children (memtables, level-0 tables, one per deeper level), where a scan beats a heap.
//! Keys are internal keys; they are unique across children (every write has its own
//! seqnum), so ties do not arise. An error in any child makes the merge invalid and is
//! reported by `status`: a damaged child never silently drops out of the merge.
//!
//! Invariant:
//! - I4 `live[i]` is child `i`'s validity after its last move, whenever the merge is not
//!   in the middle of moving its children.

use std::cmp::Ordering;

use super::{BoxCursor, Cursor};
use crate::comparator::InternalOrder;
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// A cursor over the union of its children, in internal-key order.
pub struct MergingIter {
    children: Vec<BoxCursor>,
    /// Whether each child was valid after it last moved: the search for the smallest
    /// (or largest) key reads these instead of asking every child through its vtable
    /// at every step (I4: `live[i] == children[i].valid()` whenever the merge is not
    /// in the middle of a move).
    live: Vec<bool>,
    current: Option<usize>,
    direction: Direction,
    err: Option<Error>,
    order: InternalOrder,
}

impl std::fmt::Debug for MergingIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergingIter")
            .field("children", &self.children.len())
            .field("current", &self.current)
            .finish()
    }
}

impl MergingIter {
    /// A merge of `children`, whose keys are in `order`.
    pub fn new(children: Vec<BoxCursor>, order: InternalOrder) -> Self {
        MergingIter {
            live: vec![false; children.len()],
            children,
            current: None,
            direction: Direction::Forward,
            err: None,
            order,
        }
    }

    /// Records the first error among `which` children; true if there is none.
    fn check(&mut self, which: Option<usize>) -> bool {
        if self.err.is_some() {
            return false;
        }
        let found = match which {
            Some(i) => self.children[i].status().err(),
            None => self.children.iter().find_map(|c| c.status().err()),
        };
        if let Some(e) = found {
            self.err = Some(e);
            self.current = None;
            return false;
        }
        true
    }

    /// Refreshes `live` for every child (I4), after moving them all.
    fn refresh_all(&mut self) {
        for (live, c) in self.live.iter_mut().zip(&self.children) {
            *live = c.valid();
        }
    }

    fn pick(&mut self, want: Ordering) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if !self.live[i] {
                continue;
            }
            best = match best {
                Some(b) if self.order.compare(c.key(), self.children[b].key()) != want => Some(b),
                _ => Some(i),
            };
        }
        self.current = best;
    }

    fn find_smallest(&mut self) {
        self.pick(Ordering::Less);
    }

    fn find_largest(&mut self) {
        self.pick(Ordering::Greater);
    }
}

impl Cursor for MergingIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        self.children.iter_mut().for_each(|c| c.seek_to_first());
        self.refresh_all();
        self.direction = Direction::Forward;
        if self.check(None) {
            self.find_smallest();
        }
    }

    fn seek_to_last(&mut self) {
        self.children.iter_mut().for_each(|c| c.seek_to_last());
        self.refresh_all();
        self.direction = Direction::Reverse;
        if self.check(None) {
            self.find_largest();
        }
    }

    fn seek(&mut self, target: &[u8]) {
        self.children.iter_mut().for_each(|c| c.seek(target));
        self.refresh_all();
        self.direction = Direction::Forward;
        if self.check(None) {
            self.find_smallest();
        }
    }

    fn next(&mut self) {
        let Some(cur) = self.current.filter(|_| self.err.is_none()) else {
            return;
        };
        if self.direction != Direction::Forward {
            // Every other child is positioned before key(); move each to the first entry
            // after it.
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.seek(&key);
                    if c.valid() && self.order.compare(&key, c.key()) == Ordering::Equal {
                        c.next();
                    }
                }
            }
            self.direction = Direction::Forward;
            self.refresh_all();
            if !self.check(None) {
                return;
            }
        }
        self.children[cur].next();
        self.live[cur] = self.children[cur].valid();
        if self.check(Some(cur)) {
            self.find_smallest();
        }
    }

    fn prev(&mut self) {
        let Some(cur) = self.current.filter(|_| self.err.is_none()) else {
            return;
        };
        if self.direction != Direction::Reverse {
            // Every other child is positioned after key(); move each to the last entry
            // before it.
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.seek(&key);
                    if c.valid() {
                        c.prev();
                    } else {
                        c.seek_to_last();
                    }
                }
            }
            self.direction = Direction::Reverse;
            self.refresh_all();
            if !self.check(None) {
                return;
            }
        }
        self.children[cur].prev();
        self.live[cur] = self.children[cur].valid();
        if self.check(Some(cur)) {
            self.find_largest();
        }
    }

    fn key(&self) -> &[u8] {
        match self.current {
            Some(i) if self.err.is_none() => self.children[i].key(),
            _ => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match self.current {
            Some(i) if self.err.is_none() => self.children[i].value(),
            _ => &[],
        }
    }

    fn status(&self) -> Result<()> {
        crate::iter::status_of(&self.err)
    }

    /// The current child's hint, going forward. While several children are live the
    /// entry it names may come a few steps later than the next one (which child holds
    /// the next entry is known only by comparing their keys); it is still an entry the
    /// merge will reach, so asking for it early is rarely wasted.
    fn next_hint(&self) -> Option<super::Hint<'_>> {
        match (self.current, self.direction) {
            (Some(cur), Direction::Forward) if self.err.is_none() => self.children[cur].next_hint(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparator::compare_internal_keys;
    use crate::key::{ValueType, make_internal_key, user_key};
    use crate::memtable::MemTable;
    use std::sync::Arc;

    fn mem(entries: &[(&str, u64)]) -> BoxCursor {
        let m = Arc::new(MemTable::new());
        for (k, s) in entries {
            m.add(*s, ValueType::Value, k.as_bytes(), k.as_bytes());
        }
        Box::new(m.iter())
    }

    fn keys_forward(it: &mut MergingIter) -> Vec<String> {
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push(String::from_utf8_lossy(user_key(it.key())).into_owned());
            it.next();
        }
        out
    }

    #[test]
    fn merges_and_switches_direction() {
        let mut it = MergingIter::new(
            vec![
                mem(&[("a", 1), ("d", 4), ("g", 7)]),
                mem(&[("b", 2), ("e", 5)]),
                mem(&[]),
                mem(&[("c", 3), ("f", 6)]),
            ],
            InternalOrder::default(),
        );
        assert_eq!(keys_forward(&mut it), ["a", "b", "c", "d", "e", "f", "g"]);
        it.seek(&make_internal_key(b"d", 100, ValueType::Value));
        assert_eq!(user_key(it.key()), b"d");
        it.prev();
        assert_eq!(user_key(it.key()), b"c");
        it.prev();
        assert_eq!(user_key(it.key()), b"b");
        it.next();
        assert_eq!(user_key(it.key()), b"c");
        it.next();
        assert_eq!(user_key(it.key()), b"d");
        it.seek_to_last();
        assert_eq!(user_key(it.key()), b"g");
        it.prev();
        assert_eq!(user_key(it.key()), b"f");
        it.next();
        assert_eq!(user_key(it.key()), b"g");
        it.next();
        assert!(!it.valid());
        assert!(it.status().is_ok());
    }

    fn entries(it: &MergingIter) -> (String, u64) {
        (
            String::from_utf8_lossy(user_key(it.key())).into_owned(),
            crate::key::tag(it.key()) >> 8,
        )
    }

    /// Equal user keys in different children: the merge must order them by seqnum,
    /// newest first (K2), whichever child holds them, in both directions and across
    /// direction changes. A tie-break on child order instead would hand an old version
    /// to the database iterator as the newest.
    #[test]
    fn equal_user_keys_order_by_seqnum_across_children() {
        let children = || {
            vec![
                mem(&[("k", 3), ("m", 1)]),
                mem(&[("k", 9), ("m", 4)]),
                mem(&[("k", 5), ("j", 2)]),
                mem(&[("m", 8)]),
            ]
        };
        let want = [
            ("j", 2),
            ("k", 9),
            ("k", 5),
            ("k", 3),
            ("m", 8),
            ("m", 4),
            ("m", 1),
        ];
        let want: Vec<(String, u64)> = want.iter().map(|(k, s)| (k.to_string(), *s)).collect();

        let mut it = MergingIter::new(children(), InternalOrder::default());
        let mut forward = Vec::new();
        it.seek_to_first();
        while it.valid() {
            forward.push(entries(&it));
            it.next();
        }
        assert_eq!(forward, want);

        let mut it = MergingIter::new(children(), InternalOrder::default());
        let mut backward = Vec::new();
        it.seek_to_last();
        while it.valid() {
            backward.push(entries(&it));
            it.prev();
        }
        backward.reverse();
        assert_eq!(backward, want);

        // Seeking k at seqnum 6 lands on k#5; stepping both ways from inside the run of
        // equal user keys visits the neighbours in order.
        let mut it = MergingIter::new(children(), InternalOrder::default());
        it.seek(&make_internal_key(b"k", 6, ValueType::Value));
        assert_eq!(entries(&it), want[2]);
        it.prev();
        assert_eq!(entries(&it), want[1]);
        it.next();
        assert_eq!(entries(&it), want[2]);
        it.next();
        assert_eq!(entries(&it), want[3]);
        it.prev();
        assert_eq!(entries(&it), want[2]);
        it.prev();
        it.prev();
        assert_eq!(entries(&it), want[0]);
        it.next();
        it.next();
        it.next();
        it.next();
        assert_eq!(entries(&it), want[4]);
        it.prev();
        assert_eq!(entries(&it), want[3]);
    }

    /// Many children, random steps both ways and seeks, against the sorted union (every
    /// way a child can run out or a direction change can reposition the others).
    #[test]
    fn random_walks_match_the_sorted_union() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        for round in 0..60 {
            let n_children = 1 + next(14) as usize;
            let mut seq = 1u64;
            let mut all: Vec<Vec<u8>> = Vec::new();
            let mut children: Vec<BoxCursor> = Vec::new();
            for _ in 0..n_children {
                let m = Arc::new(MemTable::new());
                for _ in 0..next(30) {
                    let k = format!("k{:03}", next(60));
                    m.add(seq, ValueType::Value, k.as_bytes(), b"v");
                    all.push(make_internal_key(k.as_bytes(), seq, ValueType::Value));
                    seq += 1;
                }
                children.push(Box::new(m.iter()));
            }
            all.sort_by(|a, b| compare_internal_keys(a, b));
            let mut it = MergingIter::new(children, InternalOrder::default());
            // `at`: the model's position; None is "not valid".
            let mut at: Option<usize> = None;
            for step in 0..300 {
                match next(6) {
                    0 => {
                        it.seek_to_first();
                        at = (!all.is_empty()).then_some(0);
                    }
                    1 => {
                        it.seek_to_last();
                        at = all.len().checked_sub(1);
                    }
                    2 => {
                        let target = make_internal_key(
                            format!("k{:03}", next(62)).as_bytes(),
                            next(seq + 1),
                            ValueType::Value,
                        );
                        it.seek(&target);
                        let p = all.partition_point(|k| {
                            compare_internal_keys(k, &target) == Ordering::Less
                        });
                        at = (p < all.len()).then_some(p);
                    }
                    3 | 4 => {
                        if let Some(p) = at {
                            it.next();
                            at = (p + 1 < all.len()).then_some(p + 1);
                        }
                    }
                    _ => {
                        if let Some(p) = at {
                            it.prev();
                            at = p.checked_sub(1);
                        }
                    }
                }
                let ctx = format!("round {round}, step {step}");
                assert_eq!(it.valid(), at.is_some(), "{ctx}");
                if let Some(p) = at {
                    assert_eq!(it.key(), &all[p][..], "{ctx}");
                }
            }
            assert!(it.status().is_ok());
        }
    }
}
