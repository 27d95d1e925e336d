//! [`BlockBuilder`]: lays out a block's entries with prefix compression.

use crate::coding::{put_fixed32, put_varint32};

/// Builds one block. Keys must be added in increasing order.
#[derive(Debug)]
pub struct BlockBuilder {
    restart_interval: usize,
    buffer: Vec<u8>,
    restarts: Vec<u32>,
    /// Entries since the last restart point.
    counter: usize,
    last_key: Vec<u8>,
    finished: bool,
}

impl BlockBuilder {
    /// A builder that stores a full key every `restart_interval` entries (at least 1).
    pub fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            restart_interval: restart_interval.max(1),
            buffer: Vec::new(),
            restarts: vec![0],
            counter: 0,
            last_key: Vec::new(),
            finished: false,
        }
    }

    /// Forgets everything added, keeping the allocations.
    pub fn reset(&mut self) {
        self.buffer.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.finished = false;
    }

    /// Adds an entry. Requires: not finished; `key` after every key added so far.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        debug_assert!(!self.finished);
        let shared = if self.counter < self.restart_interval {
            crate::coding::shared_prefix_len(&self.last_key, key)
        } else {
            self.restarts.push(self.buffer.len() as u32);
            self.counter = 0;
            0
        };
        let non_shared = key.len() - shared;
        put_varint32(&mut self.buffer, shared as u32);
        put_varint32(&mut self.buffer, non_shared as u32);
        put_varint32(&mut self.buffer, value.len() as u32);
        self.buffer.extend_from_slice(&key[shared..]);
        self.buffer.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.counter += 1;
    }

    /// Appends the restart array and returns the finished block. Valid until
    /// [`BlockBuilder::reset`].
    pub fn finish(&mut self) -> &[u8] {
        if !self.finished {
            for &r in &self.restarts {
                put_fixed32(&mut self.buffer, r);
            }
            put_fixed32(&mut self.buffer, self.restarts.len() as u32);
            self.finished = true;
        }
        &self.buffer
    }

    /// The size the block would have if finished now.
    pub fn size_estimate(&self) -> usize {
        self.buffer.len() + self.restarts.len() * 4 + 4
    }

    /// True when no entry has been added.
    pub fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }

    /// The last key added.
    #[cfg(any(test, feature = "internals"))]
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }
}
