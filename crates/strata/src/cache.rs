//! [`Cache`]: a sharded cache of decoded blocks (any [`Cached`] value; the engine's
//! [`BlockCache`](crate::BlockCache) holds `sstable::Block`s), charged in bytes, evicting
//! in CLOCK order (second chance: an approximation of least-recently-used). It knows
//! nothing of what it holds but its charge and its buffer, so tables depend on it and
//! not the other way round.
//!
//! Keys are `(cache id, block offset)`: each open table gets a unique id from
//! [`Cache::new_id`], so one cache can serve every table of every database that
//! shares it. Each shard is a hash map and a clock ring under its own mutex; a key's shard is picked by
//! hashing it, so concurrent readers rarely contend.
//!
//! Invariants:
//! - BC1 a shard's `usage` is the sum of the charges of its entries.
//! - BC2 after an insert, `usage <= capacity` unless the single newest entry alone exceeds
//!   it (then it is dropped at the next insert).
//! - BC3 entries are handed out as `Arc`s: eviction never frees a block a reader holds.
//! - BC4 an evicted block no reader holds gives its buffer to the shard's spares (at most
//!   `SPARES` per shard), to be read into by the next block read; spares are charged
//!   like entries (their capacity counts in `usage`, BC1 with spares), so the cache never
//!   holds more than its capacity, blocks and spares together.
//! - BC5 `ring[e.slot]` names the key of every entry `e` of a shard's map, and every
//!   `Some` slot names a key of the map; `None` slots wait in `free`.
//! - BC6 admission: a shard with room admits every block read for it; a full shard (one
//!   more block of its average size would evict) admits a block only on its second miss
//!   while the shard's doorkeeper still remembers the first (a direct-mapped table of key
//!   fingerprints, twice as many slots as the shard holds blocks; a later miss in the same
//!   slot makes it forget). A block read once, by a scan or a uniform random read over far
//!   more blocks than fit, then neither evicts a block nor costs an insert; a block read
//!   again soon is cached at its second read.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

const SHARD_BITS: u32 = 4;
const SHARDS: usize = 1 << SHARD_BITS;
/// Most spare buffers a shard keeps (BC4).
const SPARES: usize = 2;

type Key = (u64, u64);

/// What a [`Cache`] holds: a value charged in bytes whose buffer, once no reader holds
/// it, can be reused to read the next value into (BC4).
pub trait Cached {
    /// The bytes it is charged for.
    fn charge(&self) -> usize;
    /// Its buffer, for reuse.
    fn into_buffer(self) -> Vec<u8>;
}

/// A hasher for the caches' integer keys (table ids, file numbers, offsets): they are the
/// engine's own numbers, not input an attacker picks, so SipHash's defence is not needed;
/// each word is mixed in and the result finished with SplitMix64's mixer, so offsets that
/// share their low bits still spread over the buckets.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct NumberHasher(u64);

impl Hasher for NumberHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(23) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A `HashMap` keyed by the engine's numbers, hashed with [`NumberHasher`].
pub(crate) type NumberMap<K, V> = HashMap<K, V, BuildHasherDefault<NumberHasher>>;

/// A cached block, found by its key in one hash probe: the probe's bucket holds the
/// block itself and its second-chance bit, so a hit reads no other memory of the cache's
/// (on a cache far larger than the CPU's, each further hop is a cache miss).
#[derive(Debug)]
struct Entry<V> {
    block: Arc<V>,
    /// Its slot in the clock ring.
    slot: usize,
    /// Read since the clock hand last passed (its second chance).
    referenced: bool,
}

/// A place in the clock ring: the key of a cached block and its charge.
#[derive(Debug, Clone, Copy)]
struct Slot {
    key: Key,
    charge: usize,
}

/// One shard: blocks in a hash map, evicted in CLOCK order (second chance), an
/// approximation of least-recently-used that costs a hit one store into its own bucket
/// instead of moving it in a list (which touched two neighbours and the head: three cache
/// misses on a cache far larger than the CPU's).
///
/// BC5: `ring[e.slot]` names the key of every entry `e` of `map`, and every `Some` slot
/// names a key of `map`; `None` slots wait in `free`.
#[derive(Debug)]
struct Shard<V> {
    map: NumberMap<Key, Entry<V>>,
    ring: Vec<Option<Slot>>,
    free: Vec<usize>,
    /// The clock hand: the slot looked at next for eviction.
    hand: usize,
    usage: usize,
    capacity: usize,
    /// Buffers of evicted blocks, to read new blocks into (BC4).
    spares: Vec<Vec<u8>>,
    /// Fingerprints of keys missed while the shard was full (BC6); empty until then.
    door: Vec<u64>,
    /// Lookups by readers ([`Cache::probe`]) so far, wrapping.
    probes: u64,
}

/// What [`Cache::probe`] found for a block about to be read.
#[derive(Debug)]
pub enum Probe<V> {
    /// The block, cached.
    Hit(Arc<V>),
    /// Not cached; read it into this buffer (a spare, or empty) and insert it.
    Admit(Vec<u8>),
    /// Not cached and not admitted (BC6): read it, use it, do not insert it.
    Pass,
}

impl<V: Cached> Shard<V> {
    fn new(capacity: usize) -> Self {
        Shard {
            map: NumberMap::default(),
            ring: Vec::new(),
            free: Vec::new(),
            hand: 0,
            usage: 0,
            capacity,
            spares: Vec::new(),
            door: Vec::new(),
            probes: 0,
        }
    }

    /// Whether one more block of the shard's average size would evict (BC6).
    fn is_full(&self) -> bool {
        let blocks = self.map.len();
        blocks > 0 && self.usage + self.usage / blocks > self.capacity
    }

    /// Whether a block missed under `key` is to be cached (BC6).
    fn admit(&mut self, key: &Key) -> bool {
        if !self.is_full() {
            return true;
        }
        if self.door.is_empty() {
            let average = (self.usage / self.map.len().max(1)).max(1);
            let slots = (2 * self.capacity / average).clamp(64, 1 << 20);
            self.door = vec![0; slots.next_power_of_two()];
        }
        let mut h = NumberHasher::default();
        h.write_u64(key.0);
        h.write_u64(key.1);
        let print = h.finish() | 1;
        let i = (print >> 32) as usize & (self.door.len() - 1);
        if self.door[i] == print {
            self.door[i] = 0;
            true
        } else {
            self.door[i] = print;
            false
        }
    }

    fn get(&mut self, key: &Key) -> Option<Arc<V>> {
        let e = self.map.get_mut(key)?;
        e.referenced = true;
        Some(Arc::clone(&e.block))
    }

    /// The slot to evict next: the hand passes over free slots, and over referenced
    /// blocks, clearing their bit. `None` when the shard holds no block. Ends within two
    /// turns of the ring: after one, no bit is left set.
    fn victim(&mut self) -> Option<usize> {
        if self.map.is_empty() {
            return None;
        }
        loop {
            if self.hand >= self.ring.len() {
                self.hand = 0;
            }
            if let Some(slot) = &self.ring[self.hand]
                && let Some(e) = self.map.get_mut(&slot.key)
            {
                if !e.referenced {
                    return Some(self.hand);
                }
                e.referenced = false;
            }
            self.hand += 1;
        }
    }

    /// The block in slot `i`, if any.
    fn block_at(&self, i: usize) -> Option<&Arc<V>> {
        let slot = self.ring[i].as_ref()?;
        self.map.get(&slot.key).map(|e| &e.block)
    }

    fn remove_index(&mut self, i: usize) {
        let Some(slot) = self.ring[i].take() else {
            return;
        };
        self.free.push(i);
        self.usage -= slot.charge;
        // If no reader holds the block, keep its buffer as a spare (BC4).
        if let Some(e) = self.map.remove(&slot.key)
            && self.spares.len() < SPARES
            && let Ok(block) = Arc::try_unwrap(e.block)
        {
            let data = block.into_buffer();
            self.usage += data.capacity();
            self.spares.push(data);
        }
    }

    fn take_spare(&mut self) -> Option<Vec<u8>> {
        let data = self.spares.pop()?;
        self.usage -= data.capacity();
        Some(data)
    }

    fn insert(&mut self, key: Key, block: Arc<V>, charge: usize) {
        if let Some(i) = self.map.get(&key).map(|e| e.slot) {
            self.remove_index(i);
        }
        // Spares count like blocks (BC4): blocks go first, spares only when none is left.
        while self.usage + charge > self.capacity {
            if let Some(v) = self.victim() {
                self.remove_index(v);
            } else if self.take_spare().is_none() {
                break;
            }
        }
        // Keep a spare ready in a full shard (no room left for another block this size):
        // with none, it gives the next victim for one if no reader holds it, so the next
        // read here allocates nothing (a full shard then holds one block fewer; the charge
        // stays within capacity). A shard with room evicts nothing.
        if self.spares.is_empty()
            && self.usage + 2 * charge > self.capacity
            && let Some(v) = self.victim()
            && self.block_at(v).is_some_and(|b| Arc::strong_count(b) == 1)
        {
            self.remove_index(v);
            while self.usage + charge > self.capacity
                && let Some(v) = self.victim()
            {
                self.remove_index(v);
            }
        }
        let slot = Some(Slot { key, charge });
        let i = match self.free.pop() {
            Some(i) => {
                self.ring[i] = slot;
                i
            }
            None => {
                self.ring.push(slot);
                self.ring.len() - 1
            }
        };
        self.map.insert(
            key,
            Entry {
                block,
                slot: i,
                referenced: false,
            },
        );
        self.usage += charge;
    }
}

/// A cache shared by tables (and databases); the engine's is
/// [`BlockCache`](crate::BlockCache), of decoded blocks.
#[derive(Debug)]
pub struct Cache<V> {
    shards: Vec<Mutex<Shard<V>>>,
    capacity: usize,
    next_id: AtomicU64,
}

impl<V: Cached> Cache<V> {
    /// A cache holding up to `capacity` bytes of blocks.
    pub fn new(capacity: usize) -> Arc<Self> {
        let per_shard = capacity.div_ceil(SHARDS);
        Arc::new(Cache {
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

    /// Lookups of blocks by readers that would fill the cache ([`Cache::probe`]) so far,
    /// wrapping: a reader is using the cache when it moves.
    pub fn probes(&self) -> u64 {
        self.shards
            .iter()
            .fold(0u64, |sum, s| sum.wrapping_add(lock(s).probes))
    }

    /// Bytes currently charged.
    pub fn usage(&self) -> usize {
        self.shards.iter().map(|s| lock(s).usage).sum()
    }

    fn shard(&self, key: &Key) -> MutexGuard<'_, Shard<V>> {
        // Fibonacci hashing of both parts; the top bits pick the shard.
        let h = (key.0 ^ key.1.rotate_left(32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        lock(&self.shards[(h >> (64 - SHARD_BITS)) as usize])
    }

    /// The block cached under `(id, offset)`, marking it recently used.
    pub fn get(&self, id: u64, offset: u64) -> Option<Arc<V>> {
        let key = (id, offset);
        self.shard(&key).get(&key)
    }

    /// True if a block is cached under `(id, offset)`; does not mark it as used.
    pub fn contains(&self, id: u64, offset: u64) -> bool {
        let key = (id, offset);
        self.shard(&key).map.contains_key(&key)
    }

    /// Drops the block cached under `(id, offset)`, if any (a reader holding it keeps it,
    /// BC3).
    pub fn erase(&self, id: u64, offset: u64) {
        let key = (id, offset);
        let mut shard = self.shard(&key);
        if let Some(i) = shard.map.get(&key).map(|e| e.slot) {
            shard.remove_index(i);
        }
    }

    /// One look at the shard of `(id, offset)` before a read that would fill the cache:
    /// the block if cached (marked recently used); else whether to cache it once read
    /// (BC6) and, if so, a buffer to read it into: the bytes of a block evicted earlier
    /// from that shard (BC4), or an empty one. Its insert then evicts there and leaves the
    /// next spare.
    pub fn probe(&self, id: u64, offset: u64) -> Probe<V> {
        let key = (id, offset);
        let mut shard = self.shard(&key);
        shard.probes = shard.probes.wrapping_add(1);
        if let Some(block) = shard.get(&key) {
            Probe::Hit(block)
        } else if shard.admit(&key) {
            Probe::Admit(shard.take_spare().unwrap_or_default())
        } else {
            Probe::Pass
        }
    }

    /// Caches `block` under `(id, offset)`, evicting the least recently used blocks.
    pub fn insert(&self, id: u64, offset: u64, block: Arc<V>) {
        let key = (id, offset);
        let charge = block.charge();
        self.shard(&key).insert(key, block, charge);
    }
}

fn lock<V>(m: &Mutex<Shard<V>>) -> MutexGuard<'_, Shard<V>> {
    // A shard's operations leave it consistent at every step a panic could interrupt
    // (they only index vectors the same call checked), so poisoning is not a hazard.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sstable::Block;
    type BlockCache = Cache<Block>;
    use crate::sstable::BlockBuilder;

    fn block(n: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(16);
        b.add(b"k", &vec![7u8; n]);
        Arc::new(Block::new(b.finish().to_vec()).unwrap())
    }

    /// The buffer a read of `(id, off)` would get: probed until admitted (a full shard
    /// admits at the second miss, BC6); empty when the shard has no spare.
    fn spare_buffer(cache: &BlockCache, id: u64, off: u64) -> Vec<u8> {
        for _ in 0..2 {
            match cache.probe(id, off) {
                Probe::Admit(buffer) => return buffer,
                Probe::Hit(_) => panic!("({id}, {off}) is cached"),
                Probe::Pass => {}
            }
        }
        panic!("({id}, {off}) not admitted at its second miss")
    }

    #[test]
    fn a_full_shard_admits_a_block_at_its_second_miss_only() {
        // A shard with room admits at once.
        let roomy = BlockCache::new(SHARDS * 100_000);
        for off in 0..200u64 {
            match roomy.probe(9, off) {
                Probe::Admit(_) => roomy.insert(9, off, block(300)),
                other => panic!("block {off} of a cache with room: {other:?}"),
            }
        }
        let cache = BlockCache::new(SHARDS * 1000);
        for off in 0..200u64 {
            cache.insert(9, off, block(300));
        }
        let cached: Vec<u64> = (0..200u64).filter(|&o| cache.get(9, o).is_some()).collect();
        assert!(cached.len() < 200, "the cache filled");
        // Blocks read once leave a full cache as it was.
        for off in 1000..5000u64 {
            assert!(
                matches!(cache.probe(9, off), Probe::Pass),
                "block {off} admitted at its first miss"
            );
        }
        for &o in &cached {
            assert!(cache.get(9, o).is_some(), "block {o} was evicted");
        }
        // A block missed again soon is admitted.
        assert!(matches!(cache.probe(9, 4999), Probe::Admit(_)));
    }

    #[test]
    fn an_evicted_block_no_one_holds_becomes_a_charged_spare() {
        let cap = SHARDS * 1000;
        // Offsets of table 7 that fall in one shard.
        let shard_of = |off: u64| {
            let h = (7u64 ^ off.rotate_left(32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            (h >> (64 - SHARD_BITS)) as usize
        };
        let offs: Vec<u64> = (0..100_000u64)
            .filter(|&o| shard_of(o) == shard_of(0))
            .take(8)
            .collect();

        // Blocks readers hold are never reused, however many are evicted.
        let cache = BlockCache::new(cap);
        let held: Vec<Arc<Block>> = offs.iter().map(|_| block(300)).collect();
        for (o, b) in offs.iter().zip(&held) {
            cache.insert(7, *o, Arc::clone(b));
            assert!(cache.usage() <= cap);
        }
        assert!(spare_buffer(&cache, 7, offs[0]).is_empty());

        // Blocks no one holds give their buffers as spares, charged within capacity.
        let cache = BlockCache::new(cap);
        for o in &offs {
            cache.insert(7, *o, block(300));
            assert!(cache.usage() <= cap);
        }
        let before = cache.usage();
        let spare = spare_buffer(&cache, 7, offs[0]);
        assert!(
            !spare.is_empty(),
            "an evicted block's bytes come back as a spare"
        );
        assert_eq!(cache.usage(), before - spare.capacity());
    }

    #[test]
    fn a_cache_with_room_evicts_nothing() {
        let cache = BlockCache::new(SHARDS * 100_000);
        for off in 0..100u64 {
            cache.insert(3, off, block(300));
        }
        for off in 0..100u64 {
            assert!(cache.get(3, off).is_some(), "block {off} was evicted");
        }
    }

    #[test]
    fn number_hashes_spread_offsets_that_share_low_bits() {
        use std::hash::BuildHasher;
        let b = BuildHasherDefault::<NumberHasher>::default();
        // Block offsets are often multiples of the block size: low bits all zero.
        let low: std::collections::HashSet<u64> = (0..1024u64)
            .map(|k| b.hash_one((1u64, k * 4096)) & 1023)
            .collect();
        assert!(low.len() > 550, "{} of 1024 buckets used", low.len());
        let high: std::collections::HashSet<u64> = (0..1024u64)
            .map(|k| b.hash_one((1u64, k * 4096)) >> 54)
            .collect();
        assert!(high.len() > 550, "{} of 1024 top values used", high.len());
    }

    #[test]
    fn hit_miss_and_clock_eviction() {
        let mut shard = Shard::new(300);
        // Readers hold every block, so none is kept as a spare (BC4) and the charges
        // below are the entries' alone.
        let held: Vec<Arc<Block>> = (0..5).map(|_| block(80)).collect();
        shard.insert((1, 0), Arc::clone(&held[0]), 100);
        shard.insert((1, 1), Arc::clone(&held[1]), 100);
        shard.insert((1, 2), Arc::clone(&held[2]), 100);
        assert!(shard.get(&(1, 0)).is_some()); // 0 is now the most recent
        shard.insert((1, 3), Arc::clone(&held[3]), 100); // evicts 1, the least recent
        assert!(shard.get(&(1, 1)).is_none());
        assert!(shard.get(&(1, 0)).is_some());
        assert!(shard.get(&(1, 2)).is_some());
        assert!(shard.get(&(1, 3)).is_some());
        assert_eq!(shard.usage, 300);
        shard.insert((1, 2), Arc::clone(&held[4]), 50); // replace: charge updated
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
