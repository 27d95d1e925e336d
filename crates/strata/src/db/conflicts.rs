//! Conflict tracking for transactions (`transaction.rs`): the keys written since the
//! oldest live transaction's snapshot, each with the seqnum of its latest write, so that a
//! commit can tell whether anything it read was written after its snapshot. It lives in
//! `State`, under the state mutex, and only in memory: a committed transaction is one
//! ordinary batch in the WAL.
//!
//! Invariants:
//! - TX1 while a transaction is live, every write published after its snapshot (D2) is
//!   recorded here with its seqnum, in the same critical section that publishes it; a
//!   transaction's snapshot is taken, and the transaction registered, in one critical
//!   section too. So no write after a live snapshot goes unrecorded. (A group whose own
//!   transactions are the only live ones skips its records: they end in the critical
//!   section that publishes it.)
//! - TX2 a transaction commits only if no key it read and no key in a range it scanned
//!   was written with a seqnum above its snapshot: the write leader checks this under the
//!   state mutex, in commit order, against the records (TX1) and against the writes of
//!   the members of its group ahead of the transaction (`write.rs`).
//! - TX3 records at or below every live transaction's snapshot are dropped; past
//!   [`MAX_RECORDS`] the oldest are dropped and `floor` rises; a transaction whose
//!   snapshot is below `floor` fails to commit ("too old", a conflict to retry), never
//!   commits unchecked.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;

use super::iter::in_bounds;
use crate::comparator::InternalOrder;
use crate::error::{Error, Result};
use crate::key::SeqNum;

/// Most writes remembered at once (about 64 bytes and the key twice each): a transaction
/// that stays open while more are written than this fails with "too old".
pub(super) const MAX_RECORDS: usize = 1 << 20;

/// A range of user keys, as a transaction scanned it.
pub(super) type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// What a transaction read: checked at its commit (TX2).
#[derive(Debug, Clone, Default)]
pub(super) struct ReadSet {
    /// The snapshot its reads saw.
    pub(super) snapshot: SeqNum,
    /// Keys it read from the database (not from its own writes).
    pub(super) keys: Vec<Vec<u8>>,
    /// Ranges it scanned, whole, as asked (an insert anywhere in one is a conflict).
    pub(super) ranges: Vec<KeyRange>,
}

/// The records of recent writes (TX1, TX3).
#[derive(Debug)]
pub(super) struct Conflicts {
    /// Snapshots of live transactions, with how many share each.
    live: BTreeMap<SeqNum, usize>,
    /// Each recorded key's latest write.
    latest: BTreeMap<Vec<u8>, SeqNum>,
    /// Every recorded write in seqnum order, for dropping the oldest.
    log: VecDeque<(SeqNum, Vec<u8>)>,
    /// Records of writes at or below this seqnum may have been dropped past the limit.
    floor: SeqNum,
    limit: usize,
}

impl Default for Conflicts {
    fn default() -> Self {
        Conflicts::with_limit(MAX_RECORDS)
    }
}

impl Conflicts {
    pub(super) fn with_limit(limit: usize) -> Self {
        Conflicts {
            live: BTreeMap::new(),
            latest: BTreeMap::new(),
            log: VecDeque::new(),
            floor: 0,
            limit: limit.max(1),
        }
    }

    /// Registers a transaction reading at `snapshot`. Requires: the state mutex is held
    /// since `snapshot` was read (TX1).
    pub(super) fn begin(&mut self, snapshot: SeqNum) {
        *self.live.entry(snapshot).or_default() += 1;
    }

    /// Ends the transaction that began at `snapshot` and drops what no live one needs.
    pub(super) fn end(&mut self, snapshot: SeqNum) {
        if let Some(n) = self.live.get_mut(&snapshot) {
            *n -= 1;
            if *n == 0 {
                self.live.remove(&snapshot);
            }
        }
        self.prune();
    }

    /// True while some transaction is live.
    #[cfg(test)]
    pub(super) fn tracking(&self) -> bool {
        !self.live.is_empty()
    }

    /// True while more than `ending` transactions are live. A group that carries the
    /// commits of `ending` live transactions, which end in the critical section that
    /// publishes it, need not record its writes when no other is live: every
    /// transaction registered later has a snapshot that includes them (TX1).
    pub(super) fn tracking_beyond(&self, ending: usize) -> bool {
        self.live.values().sum::<usize>() > ending
    }

    /// How many writes are remembered.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.log.len()
    }

    /// Records a write of `key` at `seqnum` (seqnums increase from call to call).
    pub(super) fn record(&mut self, key: &[u8], seqnum: SeqNum) {
        self.latest.insert(key.to_vec(), seqnum);
        self.log.push_back((seqnum, key.to_vec()));
        while self.log.len() > self.limit {
            self.drop_oldest();
        }
    }

    /// Drops the records no live transaction needs: those at or below the oldest live
    /// snapshot (all of them when none is live).
    fn prune(&mut self) {
        match self.live.keys().next() {
            None => {
                self.latest.clear();
                self.log.clear();
                self.floor = 0;
            }
            Some(&oldest) => {
                while self.log.front().is_some_and(|(s, _)| *s <= oldest) {
                    self.drop_oldest();
                }
            }
        }
    }

    fn drop_oldest(&mut self) {
        if let Some((seqnum, key)) = self.log.pop_front() {
            if self.latest.get(&key) == Some(&seqnum) {
                self.latest.remove(&key);
            }
            self.floor = self.floor.max(seqnum);
        }
    }

    /// TX2: `Ok` if nothing `read` saw was written after its snapshot, by a recorded
    /// write or by one of `pending` (keys written ahead of it in its group).
    pub(super) fn check(
        &self,
        read: &ReadSet,
        pending: &[&[u8]],
        order: &InternalOrder,
    ) -> Result<()> {
        if read.snapshot < self.floor {
            return Err(Error::Conflict(format!(
                "transaction too old: its snapshot (seqnum {}) is older than the {} most \
                 recent writes kept for checking; retry it",
                read.snapshot, self.limit
            )));
        }
        for key in &read.keys {
            if self.latest.get(key).is_some_and(|&s| s > read.snapshot)
                || pending.iter().any(|p| order.compare_user(p, key).is_eq())
            {
                return Err(conflict(&format!("key {}", show(key))));
            }
        }
        for range in &read.ranges {
            if self.written_in(range, read.snapshot, order)
                || pending.iter().any(|p| contains(range, p, order))
            {
                return Err(conflict(&format!("range {}", show_range(range))));
            }
        }
        Ok(())
    }

    /// True if a recorded write above `snapshot` falls in `range`.
    fn written_in(&self, range: &KeyRange, snapshot: SeqNum, order: &InternalOrder) -> bool {
        if !order.is_bytewise() {
            // The map is in bytewise order: look at every record.
            return self
                .latest
                .iter()
                .any(|(k, &s)| s > snapshot && contains(range, k, order));
        }
        if is_empty(range, order) {
            return false; // and `BTreeMap::range` would panic on it
        }
        self.latest
            .range::<Vec<u8>, _>((range.0.as_ref(), range.1.as_ref()))
            .any(|(_, &s)| s > snapshot)
    }
}

/// The error of a failed check.
fn conflict(what: &str) -> Error {
    Error::Conflict(format!(
        "transaction conflict: {what} was written after the transaction's snapshot; retry it"
    ))
}

/// True if `key` lies in `range` in the database's order.
pub(super) fn contains(range: &KeyRange, key: &[u8], order: &InternalOrder) -> bool {
    in_bounds(
        order,
        key,
        range.0.as_ref().map(Vec::as_slice),
        range.1.as_ref().map(Vec::as_slice),
    )
}

/// True if no key can lie in `range` (its start after its end, or an empty interval).
fn is_empty(range: &KeyRange, order: &InternalOrder) -> bool {
    let (start, start_in, end, end_in) = match (&range.0, &range.1) {
        (Bound::Included(s), Bound::Included(e)) => (s, true, e, true),
        (Bound::Included(s), Bound::Excluded(e)) => (s, true, e, false),
        (Bound::Excluded(s), Bound::Included(e)) => (s, false, e, true),
        (Bound::Excluded(s), Bound::Excluded(e)) => (s, false, e, false),
        _ => return false,
    };
    match order.compare_user(start, end) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Equal => !(start_in && end_in),
        std::cmp::Ordering::Less => false,
    }
}

/// A key for an error message: printable ASCII as is, other bytes escaped, long keys cut.
fn show(key: &[u8]) -> String {
    let mut s: String = key
        .iter()
        .take(64)
        .flat_map(|&b| std::ascii::escape_default(b))
        .map(char::from)
        .collect();
    if key.len() > 64 {
        s.push_str("...");
    }
    format!("\"{s}\"")
}

fn show_range(range: &KeyRange) -> String {
    let start = match &range.0 {
        Bound::Unbounded => String::new(),
        Bound::Included(k) | Bound::Excluded(k) => show(k),
    };
    let end = match &range.1 {
        Bound::Unbounded => String::new(),
        Bound::Included(k) => format!("={}", show(k)),
        Bound::Excluded(k) => show(k),
    };
    format!("{start}..{end}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order() -> InternalOrder {
        InternalOrder::new(None)
    }

    fn read(snapshot: SeqNum, keys: &[&str], ranges: Vec<KeyRange>) -> ReadSet {
        ReadSet {
            snapshot,
            keys: keys.iter().map(|k| k.as_bytes().to_vec()).collect(),
            ranges,
        }
    }

    fn r(a: &str, b: &str) -> KeyRange {
        (Bound::Included(a.into()), Bound::Excluded(b.into()))
    }

    #[test]
    fn a_key_written_after_the_snapshot_conflicts_and_one_before_does_not() {
        let mut c = Conflicts::default();
        c.begin(10);
        c.record(b"a", 11);
        assert!(c.check(&read(10, &["a"], vec![]), &[], &order()).is_err());
        assert!(c.check(&read(11, &["a"], vec![]), &[], &order()).is_ok());
        assert!(c.check(&read(10, &["b"], vec![]), &[], &order()).is_ok());
    }

    #[test]
    fn a_write_into_a_scanned_range_conflicts_and_one_outside_does_not() {
        let mut c = Conflicts::default();
        c.begin(5);
        c.record(b"b3", 6);
        assert!(
            c.check(&read(5, &[], vec![r("b", "c")]), &[], &order())
                .is_err()
        );
        assert!(
            c.check(&read(5, &[], vec![r("c", "d")]), &[], &order())
                .is_ok()
        );
        // An empty or inverted range holds nothing and does not panic.
        assert!(
            c.check(&read(5, &[], vec![r("c", "b")]), &[], &order())
                .is_ok()
        );
        assert!(
            c.check(&read(5, &[], vec![r("b3", "b3")]), &[], &order())
                .is_ok()
        );
        let all = (Bound::Unbounded, Bound::Unbounded);
        assert!(c.check(&read(5, &[], vec![all]), &[], &order()).is_err());
    }

    #[test]
    fn writes_ahead_in_the_group_conflict() {
        let c = Conflicts::default();
        let pending: [&[u8]; 1] = [b"k"];
        assert!(
            c.check(&read(1, &["k"], vec![]), &pending, &order())
                .is_err()
        );
        assert!(
            c.check(&read(1, &[], vec![r("a", "z")]), &pending, &order())
                .is_err()
        );
        assert!(
            c.check(&read(1, &["j"], vec![r("l", "z")]), &pending, &order())
                .is_ok()
        );
    }

    #[test]
    fn records_go_when_no_live_transaction_needs_them() {
        let mut c = Conflicts::default();
        c.begin(10);
        c.begin(20);
        for s in 11..=30 {
            c.record(format!("k{s}").as_bytes(), s);
        }
        c.end(10);
        assert_eq!(
            c.len(),
            10,
            "records above the oldest live snapshot (20) stay"
        );
        c.end(20);
        assert_eq!(c.len(), 0);
        assert!(!c.tracking());
    }

    #[test]
    fn past_the_limit_an_old_transaction_is_too_old_not_unchecked() {
        let mut c = Conflicts::with_limit(4);
        c.begin(0);
        for s in 1..=10 {
            c.record(format!("k{s}").as_bytes(), s);
        }
        assert_eq!(c.len(), 4);
        let e = c
            .check(&read(0, &["x"], vec![]), &[], &order())
            .unwrap_err();
        assert!(e.to_string().contains("too old"), "{e}");
        assert!(c.check(&read(6, &["k7"], vec![]), &[], &order()).is_err());
        assert!(c.check(&read(6, &["k5"], vec![]), &[], &order()).is_ok());
    }
}
