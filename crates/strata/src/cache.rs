//! [`BlockCache`]: a sharded LRU cache of decoded blocks, charged in bytes.
//!
//! Keys are `(cache id, block offset)`: each open table gets a unique id from
//! [`BlockCache::new_id`], so one cache can serve every table of every database that
//! shares it. Each shard is an LRU list under its own mutex; a key's shard is picked by
//! hashing it, so concurrent readers rarely contend.
//!
//! Invariants:
//! - C1 a shard's `usage` is the sum of the charges of its entries.
//! - C2 after an insert, `usage <= capacity` unless the single newest entry alone exceeds
//!   it (then it is dropped at the next insert).
//! - C3 entries are handed out as `Arc`s: eviction never frees a block a reader holds.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::sstable::Block;

const SHARD_BITS: u32 = 4;
const SHARDS: usize = 1 << SHARD_BITS;
const NIL: usize = usize::MAX;

type Key = (u64, u64);

#[derive(Debug)]
struct Node {
    key: Key,
    block: Arc<Block>,
    charge: usize,
    prev: usize,
    next: usize,
}

/// One LRU list in a slab: `head` is the most recently used.
#[derive(Debug, Default)]
struct Shard {
    map: HashMap<Key, usize>,
    nodes: Vec<Node>,
    free: Vec<usize>,
    head: usize,
    tail: usize,
    usage: usize,
    capacity: usize,
}

impl Shard {
    fn new(capacity: usize) -> Self {
        Shard {
            head: NIL,
            tail: NIL,
            capacity,
            ..Shard::default()
        }
    }

    fn unlink(&mut self, i: usize) {
        let (prev, next) = (self.nodes[i].prev, self.nodes[i].next);
        match prev {
            NIL => self.head = next,
            p => self.nodes[p].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.nodes[n].prev = prev,
        }
    }

    fn push_front(&mut self, i: usize) {
        self.nodes[i].prev = NIL;
        self.nodes[i].next = self.head;
        if self.head != NIL {
            self.nodes[self.head].prev = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }

    fn get(&mut self, key: &Key) -> Option<Arc<Block>> {
        let i = *self.map.get(key)?;
        self.unlink(i);
        self.push_front(i);
        Some(Arc::clone(&self.nodes[i].block))
    }

    fn remove_index(&mut self, i: usize) {
        self.unlink(i);
        let key = self.nodes[i].key;
        self.map.remove(&key);
        self.usage -= self.nodes[i].charge;
        self.free.push(i);
    }

    fn insert(&mut self, key: Key, block: Arc<Block>, charge: usize) {
        if let Some(&i) = self.map.get(&key) {
            self.remove_index(i);
        }
        while self.usage + charge > self.capacity && self.tail != NIL {
            self.remove_index(self.tail);
        }
        let node = Node {
            key,
            block,
            charge,
            prev: NIL,
            next: NIL,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i] = node;
                i
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        };
        self.map.insert(key, i);
        self.push_front(i);
        self.usage += charge;
    }
}

/// A block cache shared by tables (and databases).
#[derive(Debug)]
pub struct BlockCache {
    shards: Vec<Mutex<Shard>>,
    capacity: usize,
    next_id: AtomicU64,
}

impl BlockCache {
    /// A cache holding up to `capacity` bytes of blocks.
    pub fn new(capacity: usize) -> Arc<Self> {
        let per_shard = capacity.div_ceil(SHARDS);
        Arc::new(BlockCache {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(Shard::new(per_shard)))
                .collect(),
            capacity,
            next_id: AtomicU64::new(1),
        })
    }

    /// A fresh id for a newly opened table.
    pub fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes currently charged.
    pub fn usage(&self) -> usize {
        self.shards.iter().map(|s| lock(s).usage).sum()
    }

    fn shard(&self, key: &Key) -> MutexGuard<'_, Shard> {
        // Fibonacci hashing of both parts; the top bits pick the shard.
        let h = (key.0 ^ key.1.rotate_left(32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        lock(&self.shards[(h >> (64 - SHARD_BITS)) as usize])
    }

    /// The block cached under `(id, offset)`, marking it recently used.
    pub fn get(&self, id: u64, offset: u64) -> Option<Arc<Block>> {
        let key = (id, offset);
        self.shard(&key).get(&key)
    }

    /// Caches `block` under `(id, offset)`, evicting the least recently used blocks.
    pub fn insert(&self, id: u64, offset: u64, block: Arc<Block>) {
        let key = (id, offset);
        let charge = block.size();
        self.shard(&key).insert(key, block, charge);
    }
}

fn lock(m: &Mutex<Shard>) -> MutexGuard<'_, Shard> {
    // A shard's operations leave it consistent at every step a panic could interrupt
    // (they only index vectors the same call checked), so poisoning is not a hazard.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sstable::BlockBuilder;

    fn block(n: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(16);
        b.add(b"k", &vec![7u8; n]);
        Arc::new(Block::new(b.finish().to_vec()).unwrap())
    }

    #[test]
    fn hit_miss_and_lru_eviction() {
        let mut shard = Shard::new(300);
        shard.insert((1, 0), block(80), 100);
        shard.insert((1, 1), block(80), 100);
        shard.insert((1, 2), block(80), 100);
        assert!(shard.get(&(1, 0)).is_some()); // 0 is now the most recent
        shard.insert((1, 3), block(80), 100); // evicts 1, the least recent
        assert!(shard.get(&(1, 1)).is_none());
        assert!(shard.get(&(1, 0)).is_some());
        assert!(shard.get(&(1, 2)).is_some());
        assert!(shard.get(&(1, 3)).is_some());
        assert_eq!(shard.usage, 300);
        shard.insert((1, 2), block(10), 50); // replace: charge updated
        assert_eq!(shard.usage, 250);
    }

    #[test]
    fn usage_stays_within_capacity() {
        let cache = BlockCache::new(64 * 1024);
        let id = cache.new_id();
        assert_ne!(id, cache.new_id());
        for off in 0..1000 {
            cache.insert(id, off, block(1000));
            assert!(cache.usage() <= 64 * 1024 + SHARDS * 1100);
        }
        let held = cache.get(id, 999).unwrap();
        for off in 1000..2000 {
            cache.insert(id, off, block(1000));
        }
        assert_eq!(
            held.size(),
            block(1000).size(),
            "an evicted block stays alive for its holder"
        );
    }
}
