//! Snapshots: a reader's fixed view of the database, named by a seqnum.
//!
//! Every live [`Snapshot`] is counted in its database's [`SnapshotList`]; compaction keeps
//! every version a live snapshot can see (it asks for [`SnapshotList::oldest`]). A
//! snapshot is released when its last clone is dropped.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::key::SeqNum;

/// A database as of one moment. Cheap to clone; released on drop.
#[derive(Clone)]
pub struct Snapshot(Arc<Inner>);

struct Inner {
    seqnum: SeqNum,
    list: Arc<SnapshotList>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.list.release(self.seqnum);
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("seqnum", &self.0.seqnum)
            .finish()
    }
}

impl Snapshot {
    /// The last seqnum this snapshot sees.
    pub fn seqnum(&self) -> SeqNum {
        self.0.seqnum
    }

    /// True if the snapshot was taken from the database owning `list`.
    pub(crate) fn belongs_to(&self, list: &Arc<SnapshotList>) -> bool {
        Arc::ptr_eq(&self.0.list, list)
    }
}

/// The live snapshots of one database: seqnum to number of snapshots at it.
#[derive(Debug, Default)]
pub struct SnapshotList {
    live: Mutex<BTreeMap<SeqNum, usize>>,
}

impl SnapshotList {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<SeqNum, usize>> {
        // Each operation is a single map update: a panic cannot leave it half done.
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a snapshot at `seqnum`.
    pub fn acquire(self: &Arc<Self>, seqnum: SeqNum) -> Snapshot {
        *self.lock().entry(seqnum).or_insert(0) += 1;
        Snapshot(Arc::new(Inner {
            seqnum,
            list: Arc::clone(self),
        }))
    }

    fn release(&self, seqnum: SeqNum) {
        let mut live = self.lock();
        if let Some(n) = live.get_mut(&seqnum) {
            *n -= 1;
            if *n == 0 {
                live.remove(&seqnum);
            }
        }
    }

    /// The oldest live snapshot's seqnum.
    pub fn oldest(&self) -> Option<SeqNum> {
        self.lock().keys().next().copied()
    }

    /// Number of live snapshots.
    pub fn len(&self) -> usize {
        self.lock().values().sum()
    }

    #[cfg(test)]
    /// True when no snapshot is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oldest_tracks_live_snapshots() {
        let list = Arc::new(SnapshotList::default());
        assert_eq!(list.oldest(), None);
        let a = list.acquire(5);
        let b = list.acquire(9);
        let a2 = a.clone();
        assert_eq!(list.oldest(), Some(5));
        drop(a);
        assert_eq!(list.oldest(), Some(5), "a clone still holds it");
        drop(a2);
        assert_eq!(list.oldest(), Some(9));
        assert_eq!(b.seqnum(), 9);
        assert!(b.belongs_to(&list));
        assert!(!b.belongs_to(&Arc::new(SnapshotList::default())));
        drop(b);
        assert!(list.is_empty());
    }
}
