//! [`OpenFiles`]: files kept open by their number, at most `capacity` of them, the least
//! recently used closed first. The table cache keeps its tables in one, the blob store its
//! blob files.
//!
//! Closing a file here only drops this map's handle (`V` is typically an `Arc`): a reader
//! holding its own clone goes on reading.
//!
//! Invariants:
//! - OF1 after [`OpenFiles::insert`] at most `capacity` files are open.
//! - OF2 every use takes a tick one higher than the last, so the entry with the smallest
//!   tick is the least recently used.

use crate::cache::NumberMap;

/// Open files by number, with the tick of their last use.
#[derive(Debug)]
pub(crate) struct OpenFiles<V> {
    map: NumberMap<u64, (V, u64)>,
    tick: u64,
    capacity: usize,
}

impl<V: Clone> OpenFiles<V> {
    /// A map keeping at most `capacity` (at least one) files open.
    pub(crate) fn new(capacity: usize) -> Self {
        OpenFiles {
            map: NumberMap::default(),
            tick: 0,
            capacity: capacity.max(1),
        }
    }

    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    /// File `number` if open, marked as just used.
    pub(crate) fn get(&mut self, number: u64) -> Option<V> {
        let tick = self.next_tick();
        let (file, used) = self.map.get_mut(&number)?;
        *used = tick;
        Some(file.clone())
    }

    /// Keeps `file` open as `number`, closing the least recently used file first if the
    /// map is full (OF1).
    pub(crate) fn insert(&mut self, number: u64, file: V) {
        if self.map.len() >= self.capacity
            && !self.map.contains_key(&number)
            && let Some(oldest) = self
                .map
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(n, _)| *n)
        {
            self.map.remove(&oldest);
        }
        let tick = self.next_tick();
        self.map.insert(number, (file, tick));
    }

    /// File `number` if open, without marking it used.
    pub(crate) fn peek(&self, number: u64) -> Option<&V> {
        self.map.get(&number).map(|(file, _)| file)
    }

    /// Closes file `number` if open, returning it.
    pub(crate) fn remove(&mut self, number: u64) -> Option<V> {
        self.map.remove(&number).map(|(file, _)| file)
    }

    #[cfg(test)]
    /// Files open now.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_file_is_closed_first() {
        let mut files = OpenFiles::new(2);
        files.insert(1, "one");
        files.insert(2, "two");
        assert_eq!(files.get(1), Some("one")); // 2 is now the oldest
        files.insert(3, "three");
        assert_eq!(files.len(), 2);
        assert_eq!(files.get(2), None);
        assert_eq!(files.get(1), Some("one"));
        assert_eq!(files.get(3), Some("three"));
        // Putting an open file back closes nothing else.
        files.insert(3, "three again");
        assert_eq!(files.len(), 2);
        assert_eq!(files.get(1), Some("one"));
        files.remove(1);
        assert_eq!(files.get(1), None);
        assert_eq!(files.len(), 1);
    }

    #[test]
    fn a_capacity_of_zero_keeps_one_file() {
        let mut files = OpenFiles::new(0);
        files.insert(7, 7u8);
        files.insert(8, 8u8);
        assert_eq!(files.len(), 1);
        assert_eq!(files.get(8), Some(8));
    }
}
