//! Transactions: optimistic and serializable. A [`Transaction`] reads a snapshot (and its
//! own writes), buffers its writes, and at commit hands them to the write path as one
//! batch with what it read; the write leader checks the reads against the writes
//! committed since the snapshot, in commit order (`conflicts.rs`, TX1-TX3), and writes
//! the batch or answers [`Error::Conflict`]. No lock is held while a transaction runs,
//! and transactions that do not conflict commit side by side, in the same write group.
//!
//! A committed transaction is an ordinary batch in the WAL: the files stay LevelDB's.

use std::collections::VecDeque;
use std::ops::{Bound, RangeBounds};

use super::conflicts::{KeyRange, ReadSet, contains};
use super::iter::{KeyValue, Range, in_bounds};
use super::{Db, check_sizes, write};
use crate::batch::WriteBatch;
use crate::comparator::InternalOrder;
use crate::error::{Error, Result};
use crate::key::SeqNum;
use crate::options::{ReadOptions, WriteOptions};
use crate::snapshot::Snapshot;

/// How many times [`Db::compare_and_swap`] runs its read and write again after a
/// conflict before it gives up with the conflict.
const SWAP_ATTEMPTS: usize = 1000;

/// A transaction over a [`Db`]: reads see the database as of the transaction's start, and
/// the transaction's own writes; writes are buffered until [`Transaction::commit`], which
/// applies all of them atomically, or none, with [`Error::Conflict`] if something the
/// transaction read (a key, or any key of a range it scanned, so an insert into it too)
/// was written by someone else after the transaction started. Dropping a transaction
/// without committing discards it.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// let options = strata::Options { create_if_missing: true, ..Default::default() };
/// let db = strata::Db::open(dir.path(), options)?;
/// db.put("alice", "10")?;
/// db.put("bob", "0")?;
/// // Move 3 from alice to bob, whatever other threads do meanwhile.
/// db.transact(10, |txn| {
///     let read = |v: Option<Vec<u8>>| -> u64 {
///         v.and_then(|v| String::from_utf8(v).ok()?.parse().ok()).unwrap_or(0)
///     };
///     let alice = read(txn.get("alice")?);
///     let bob = read(txn.get("bob")?);
///     txn.put("alice", (alice - 3).to_string());
///     txn.put("bob", (bob + 3).to_string());
///     Ok(())
/// })?;
/// assert_eq!(db.get("bob")?.as_deref(), Some(&b"3"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A transaction's reads are remembered until it ends, and so is every write others
/// commit meanwhile; one left open while more than about a million writes commit fails
/// at its commit ("too old"). Keep transactions short.
#[derive(Debug)]
pub struct Transaction<'db> {
    db: &'db Db,
    snapshot: Snapshot,
    /// The snapshot's seqnum, under which the transaction is registered (TX1).
    seqnum: SeqNum,
    read: ReadSet,
    /// Its puts (`Some`) and deletes (`None`), one per key, in the database's key order.
    writes: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// Its range deletes, `[start, end)`; a later put in one lives in `writes`.
    deleted: Vec<(Vec<u8>, Vec<u8>)>,
    order: InternalOrder,
    /// Its registration was ended by its commit (`write::write_checked`), not by its drop.
    ended: bool,
}

impl Db {
    /// Starts a transaction: its reads see the database as it is now.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open(dir.path(), strata::Options { create_if_missing: true, ..Default::default() })?;
    /// db.put("stock", "5")?;
    /// let mut txn = db.transaction();
    /// let stock: u32 = String::from_utf8(txn.get("stock")?.ok_or("no stock")?)?.parse()?;
    /// db.put("stock", "4")?; // someone else sells one meanwhile
    /// txn.put("stock", (stock - 1).to_string());
    /// let err = txn.commit().unwrap_err(); // it read "stock" before that write
    /// assert!(err.is_conflict());
    /// assert_eq!(db.get("stock")?.as_deref(), Some(&b"4"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn transaction(&self) -> Transaction<'_> {
        let mut st = self.inner.lock();
        let seqnum = st.versions.last_seqnum;
        let snapshot = self.inner.snapshots.acquire(seqnum);
        st.conflicts.begin(seqnum); // TX1: in the section that read the seqnum
        drop(st);
        Transaction {
            db: self,
            snapshot,
            seqnum,
            read: ReadSet {
                snapshot: seqnum,
                ..ReadSet::default()
            },
            writes: Vec::new(),
            deleted: Vec::new(),
            order: self.inner.table_cache.order().clone(),
            ended: false,
        }
    }

    /// Runs `f` in a transaction and commits it (unsynced), starting again from a fresh
    /// transaction after each conflict, at most `attempts` times in all; other errors
    /// (from `f` or the commit) end it at once. Returns what `f` returned with the
    /// transaction that committed, or the last conflict.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open(dir.path(), strata::Options { create_if_missing: true, ..Default::default() })?;
    /// // A counter that many threads may bump at once without losing a bump.
    /// let bumped = db.transact(100, |txn| {
    ///     let n: u64 = match txn.get("hits")? {
    ///         Some(v) => String::from_utf8_lossy(&v).parse().unwrap_or(0),
    ///         None => 0,
    ///     };
    ///     txn.put("hits", (n + 1).to_string());
    ///     Ok(n + 1)
    /// })?;
    /// assert_eq!(bumped, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn transact<T>(
        &self,
        attempts: usize,
        f: impl FnMut(&mut Transaction<'_>) -> Result<T>,
    ) -> Result<T> {
        self.transact_opt(attempts, &WriteOptions::default(), f)
    }

    /// [`Db::transact`], committing with the given write options.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open(dir.path(), strata::Options { create_if_missing: true, ..Default::default() })?;
    /// let synced = strata::WriteOptions { sync: true };
    /// let n = db.transact_opt(5, &synced, |txn| {
    ///     let n = txn.range("user/".."user0").count();
    ///     txn.put(format!("user/{n:04}"), "new");
    ///     Ok(n)
    /// })?;
    /// assert_eq!(n, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn transact_opt<T>(
        &self,
        attempts: usize,
        options: &WriteOptions,
        mut f: impl FnMut(&mut Transaction<'_>) -> Result<T>,
    ) -> Result<T> {
        let mut last = None;
        for _ in 0..attempts.max(1) {
            let mut txn = self.transaction();
            let out = match f(&mut txn) {
                Ok(out) => out,
                Err(e) if e.is_conflict() => {
                    last = Some(e);
                    continue;
                }
                Err(e) => return Err(e),
            };
            match txn.commit_opt(options) {
                Ok(()) => return Ok(out),
                Err(e) if e.is_conflict() => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::Conflict("transaction not committed".into())))
    }

    /// Sets `key` to `new` (deletes it with `None`) if its value is `expected` (absent
    /// with `None`), atomically: true if it did, false if the value was another.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open(dir.path(), strata::Options { create_if_missing: true, ..Default::default() })?;
    /// assert!(db.compare_and_swap("lock", None, Some(b"owner-1"))?);
    /// assert!(!db.compare_and_swap("lock", None, Some(b"owner-2"))?);
    /// assert!(db.compare_and_swap("lock", Some(b"owner-1"), None)?);
    /// assert!(db.get("lock")?.is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compare_and_swap(
        &self,
        key: impl AsRef<[u8]>,
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<bool> {
        let key = key.as_ref();
        let mut last = None;
        for _ in 0..SWAP_ATTEMPTS {
            let mut txn = self.transaction();
            if txn.get(key)?.as_deref() != expected {
                return Ok(false);
            }
            match new {
                Some(v) => txn.put(key, v),
                None => txn.delete(key),
            }
            match txn.commit() {
                Ok(()) => return Ok(true),
                Err(e) if e.is_conflict() => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::Conflict("compare and swap not done".into())))
    }
}

impl<'db> Transaction<'db> {
    /// The value of `key`: the transaction's own write if it made one, else the value as
    /// of the transaction's start (and the key counts as read).
    pub fn get(&mut self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        let key = key.as_ref();
        if let Some(own) = self.own(key) {
            return Ok(own.map(<[u8]>::to_vec));
        }
        self.read.keys.push(key.to_vec());
        self.db.get_opt(key, &self.read_options())
    }

    /// Sets `key` to `value` when the transaction commits.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.set(key.as_ref(), Some(value.as_ref().to_vec()));
    }

    /// Removes `key` when the transaction commits.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) {
        self.set(key.as_ref(), None);
    }

    /// Removes every key `k` with `start <= k < end` when the transaction commits (as
    /// [`Db::delete_range`]: the keys there at the commit), its own earlier writes there
    /// included; its later writes there stay.
    pub fn delete_range(&mut self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) {
        let (start, end) = (start.as_ref().to_vec(), end.as_ref().to_vec());
        let order = &self.order;
        self.writes
            .retain(|(k, _)| !in_bounds(order, k, Bound::Included(&start), Bound::Excluded(&end)));
        self.deleted.push((start, end));
    }

    /// The entries with keys in `range`, in key order, as the transaction sees them. The
    /// whole range counts as read: a key written into it by another transaction after
    /// this one started makes this one's commit fail, even past where the caller stopped.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open(dir.path(), strata::Options { create_if_missing: true, ..Default::default() })?;
    /// db.put("seat/1", "taken")?;
    /// let mut txn = db.transaction();
    /// txn.put("seat/2", "taken"); // its own write shows in its scans
    /// let taken = txn.range("seat/".."seat0").count();
    /// assert_eq!(taken, 2);
    /// db.put("seat/3", "taken")?; // an insert into the scanned range...
    /// txn.put("full", taken.to_string());
    /// assert!(txn.commit().unwrap_err().is_conflict()); // ...fails the commit
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn range<K: AsRef<[u8]>>(&mut self, range: impl RangeBounds<K>) -> TransactionRange {
        self.range_opt(range, false)
    }

    /// [`Transaction::range`] in reverse key order.
    pub fn range_rev<K: AsRef<[u8]>>(&mut self, range: impl RangeBounds<K>) -> TransactionRange {
        self.range_opt(range, true)
    }

    fn range_opt<K: AsRef<[u8]>>(
        &mut self,
        range: impl RangeBounds<K>,
        reverse: bool,
    ) -> TransactionRange {
        let own = |b: Bound<&K>| match b {
            Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        let bounds: KeyRange = (own(range.start_bound()), own(range.end_bound()));
        let mut writes: VecDeque<_> = self
            .writes
            .iter()
            .filter(|(k, _)| contains(&bounds, k, &self.order))
            .cloned()
            .collect();
        if reverse {
            writes = writes.into_iter().rev().collect();
        }
        let base = self
            .db
            .range_opt(bounds.clone(), reverse, &self.read_options());
        self.read.ranges.push(bounds);
        TransactionRange {
            base,
            peeked: None,
            writes,
            deleted: self.deleted.clone(),
            order: self.order.clone(),
            reverse,
            done: false,
        }
    }

    /// Commits (unsynced): all of the writes, atomically, or none with
    /// [`Error::Conflict`]. A transaction that wrote nothing commits at once: its reads
    /// all came from one snapshot.
    pub fn commit(self) -> Result<()> {
        self.commit_opt(&WriteOptions::default())
    }

    /// [`Transaction::commit`] with the given write options (`sync`: durable before it
    /// returns, as a synced write).
    pub fn commit_opt(mut self, options: &WriteOptions) -> Result<()> {
        let mut batch = WriteBatch::new();
        for (start, end) in &self.deleted {
            batch.delete_range(start, end);
        }
        for (k, v) in &self.writes {
            check_sizes(k, v.as_deref().unwrap_or_default())?;
            match v {
                Some(v) => batch.put(k, v),
                None => batch.delete(k),
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        let read = std::mem::take(&mut self.read);
        self.ended = true;
        write::write_checked(&self.db.inner, Some(batch), options.sync, Some(read))
    }

    /// The transaction's own write of `key`: `Some(None)` for a delete (or a range
    /// delete over it), `None` if it wrote nothing there.
    fn own(&self, key: &[u8]) -> Option<Option<&[u8]>> {
        if let Ok(i) = self.find(key) {
            return Some(self.writes[i].1.as_deref());
        }
        range_deleted(&self.deleted, key, &self.order).then_some(None)
    }

    fn set(&mut self, key: &[u8], value: Option<Vec<u8>>) {
        match self.find(key) {
            Ok(i) => self.writes[i].1 = value,
            Err(i) => self.writes.insert(i, (key.to_vec(), value)),
        }
    }

    fn find(&self, key: &[u8]) -> std::result::Result<usize, usize> {
        self.writes
            .binary_search_by(|(k, _)| self.order.compare_user(k, key))
    }

    fn read_options(&self) -> ReadOptions {
        ReadOptions {
            snapshot: Some(self.snapshot.clone()),
            ..ReadOptions::default()
        }
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        // After a commit's check, never before it: the records it needs stay (TX3).
        if !self.ended {
            self.db.inner.lock().conflicts.end(self.seqnum);
        }
    }
}

/// The entries of a key range as a transaction sees them: the snapshot's, with the
/// transaction's own writes laid over them. Yields `Err` once, then ends, if reading
/// fails.
#[derive(Debug)]
pub struct TransactionRange {
    base: Range,
    peeked: Option<KeyValue>,
    /// Own writes in the range, in the order of iteration.
    writes: VecDeque<(Vec<u8>, Option<Vec<u8>>)>,
    deleted: Vec<(Vec<u8>, Vec<u8>)>,
    order: InternalOrder,
    reverse: bool,
    done: bool,
}

impl TransactionRange {
    /// True if `a` comes before `b` in the direction of iteration.
    fn before(&self, a: &[u8], b: &[u8]) -> bool {
        let c = self.order.compare_user(a, b);
        if self.reverse { c.is_gt() } else { c.is_lt() }
    }
}

/// True if `key` lies in one of the range deletes `[start, end)` of `deleted`.
fn range_deleted(deleted: &[(Vec<u8>, Vec<u8>)], key: &[u8], order: &InternalOrder) -> bool {
    deleted
        .iter()
        .any(|(s, e)| in_bounds(order, key, Bound::Included(s), Bound::Excluded(e)))
}

impl Iterator for TransactionRange {
    type Item = Result<KeyValue>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            if self.peeked.is_none() {
                match self.base.next() {
                    Some(Ok(kv)) => self.peeked = Some(kv),
                    Some(Err(e)) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                    None => {}
                }
            }
            let take_own = match (&self.peeked, self.writes.front()) {
                (None, None) => {
                    self.done = true;
                    return None;
                }
                (None, Some(_)) => true,
                (Some(_), None) => false,
                (Some((bk, _)), Some((ok, _))) => !self.before(bk, ok),
            };
            if take_own {
                let Some((k, v)) = self.writes.pop_front() else {
                    continue;
                };
                if self
                    .peeked
                    .as_ref()
                    .is_some_and(|(bk, _)| self.order.compare_user(bk, &k).is_eq())
                {
                    self.peeked = None; // shadowed by the transaction's own write
                }
                match v {
                    Some(v) => return Some(Ok((k, v))),
                    None => continue,
                }
            }
            let Some((k, v)) = self.peeked.take() else {
                continue;
            };
            if !range_deleted(&self.deleted, &k, &self.order) {
                return Some(Ok((k, v)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Db, Options};

    #[test]
    fn every_way_a_transaction_ends_releases_its_registration() {
        let tmp = tempfile::tempdir().unwrap();
        let options = Options {
            create_if_missing: true,
            ..Default::default()
        };
        let db = Db::open(tmp.path(), options).unwrap();
        db.put("x", "0").unwrap();
        let tracking = || db.inner.lock().conflicts.tracking();
        // Committed, conflicting, empty, dropped, and committed synced.
        let mut won = db.transaction();
        let mut lost = db.transaction();
        let _ = lost.get("x").unwrap();
        won.put("x", "1");
        won.commit().unwrap();
        lost.put("x", "2");
        assert!(lost.commit().unwrap_err().is_conflict());
        db.transaction().commit().unwrap();
        drop(db.transaction());
        let mut synced = db.transaction();
        synced.put("y", "1");
        synced
            .commit_opt(&crate::WriteOptions { sync: true })
            .unwrap();
        assert!(!tracking(), "a registration outlived its transaction");
        // Writes are no longer recorded for nobody.
        db.put("z", "1").unwrap();
        assert!(!tracking());
    }
}
