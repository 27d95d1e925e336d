//! [`SkipList`]: the memtable's sorted index, a skip list whose nodes live in an arena.
//!
//! Each entry is one arena allocation: a small header, its forward pointers, the internal
//! key (`user key | tag`, 8-byte little-endian tag) and the value, side by side. A lookup
//! compares keys where they lie (no pointer to chase, no allocation); an insert is one bump
//! of the arena pointer; a dropped memtable frees a few large blocks instead of one heap
//! object per entry. This is LevelDB's `SkipList` + `Arena` design, with the key inline as
//! in RocksDB's `InlineSkipList`.
//!
//! This is the only module of the memtable with `unsafe` code. Its invariants:
//! - S1 nodes are never moved, changed after publication (except their forward pointers)
//!   or freed before the list is dropped: arena blocks are freed only in `Drop`.
//! - S2 one inserter at a time: `insert` holds the writer mutex for the whole insertion.
//! - S3 a node is fully written before it becomes reachable: each forward pointer that
//!   links it in is stored with `Release` and every reader loads with `Acquire`, so a
//!   reader that reaches a node sees its header, key and value.
//! - S4 every pointer a [`Cursor`] holds is the list's head or a node of the list the cursor
//!   keeps alive through its `Arc` (S1 keeps it valid).
//! - S5 at every level the list is sorted by internal-key order (user key ascending, tag
//!   descending) and internal keys are unique (the caller's duty, M2).
//!
//! - S6 a search answers with the node it compared against the target, from the same
//!   load of the forward pointer; it never reads that pointer a second time.
//!
//! Readers take no lock: a reader racing an insert sees the list with or without the new
//! node at each level, and either is a sorted list (LevelDB's argument). S6 is what makes
//! that argument hold for a whole search: a second read of a pointer already compared can
//! return a node linked in since, which may sort before the target (a newer version of
//! the same key), and a read at an older seqnum would return it. Miri runs this
//! module's tests (`make miri`); `tests/loom_models.rs` explores the publication's
//! interleavings with [`PUBLISH`] and [`OBSERVE`], the orderings used here.

#![allow(unsafe_code)]

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::cmp::Ordering as CmpOrdering;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::comparator::{BytewiseComparator, Comparator, InternalOrder};
use crate::key;

/// Tallest tower a node can have: 4^12 = 16 M entries before search slows down.
const MAX_HEIGHT: usize = 12;
/// One node in `BRANCHING` rises a level.
const BRANCHING: u32 = 4;
/// Arena block size; an allocation over a quarter of it gets a block of its own.
const BLOCK_SIZE: usize = 32 << 10;
/// Alignment of every node (its forward pointers are `AtomicPtr`s).
const ALIGN: usize = std::mem::align_of::<AtomicPtr<Node>>();
/// Bytes of the tag at the end of an internal key.
const TAG_SIZE: usize = 8;

/// How an inserter stores the forward pointer that links a fully written node in (S3).
/// `tests/loom_models.rs` checks the publication protocol with these two orderings.
pub const PUBLISH: Ordering = Ordering::Release;
/// How a reader loads a forward pointer (S3).
pub const OBSERVE: Ordering = Ordering::Acquire;

/// A node's fixed part. In memory it is followed by `height` forward pointers, then the
/// internal key (`key_len` bytes), then the value (`value_len` bytes).
#[repr(C)]
struct Node {
    key_len: u32,
    value_len: u32,
    height: u32,
    _pad: u32,
}

const HEADER: usize = std::mem::size_of::<Node>();
const _: () = assert!(HEADER.is_multiple_of(ALIGN));

/// Bytes a node with this tower and entry takes.
fn node_size(height: usize, key_len: usize, value_len: usize) -> usize {
    HEADER + height * std::mem::size_of::<AtomicPtr<Node>>() + key_len + value_len
}

impl Node {
    /// The forward pointer at `level`.
    ///
    /// # Safety
    /// `node` points to a node written by [`SkipList::new_node`] (or the head) and
    /// `level < height`.
    unsafe fn next<'a>(node: *const Node, level: usize) -> &'a AtomicPtr<Node> {
        // SAFETY: the caller guarantees the tower has a slot at `level`; the slots start
        // at HEADER, which is a multiple of ALIGN, inside the node's allocation (S1), and
        // atomics are only ever accessed as atomics.
        unsafe {
            &*node
                .cast::<u8>()
                .add(HEADER + level * std::mem::size_of::<AtomicPtr<Node>>())
                .cast::<AtomicPtr<Node>>()
        }
    }

    /// The node's internal key.
    ///
    /// # Safety
    /// `node` is a fully written node (S3) that lives at least as long as `'a` (S1).
    unsafe fn key<'a>(node: *const Node) -> &'a [u8] {
        // SAFETY: header fields and key bytes were written before the node was
        // published and never change (S1, S3).
        unsafe {
            let n = &*node;
            let at = HEADER + n.height as usize * std::mem::size_of::<AtomicPtr<Node>>();
            std::slice::from_raw_parts(node.cast::<u8>().add(at), n.key_len as usize)
        }
    }

    /// The node's value.
    ///
    /// # Safety
    /// As for [`Node::key`].
    unsafe fn value<'a>(node: *const Node) -> &'a [u8] {
        // SAFETY: as in `key`; the value follows the key inside the same allocation.
        unsafe {
            let n = &*node;
            let at = HEADER
                + n.height as usize * std::mem::size_of::<AtomicPtr<Node>>()
                + n.key_len as usize;
            std::slice::from_raw_parts(node.cast::<u8>().add(at), n.value_len as usize)
        }
    }
}

/// A search target: a user key and a tag, compared as an internal key without building
/// one.
#[derive(Clone, Copy)]
struct Target<'k> {
    user_key: &'k [u8],
    tag: u64,
}

impl<'k> Target<'k> {
    fn of_internal_key(ikey: &'k [u8]) -> Self {
        Target {
            user_key: key::user_key(ikey),
            tag: key::tag(ikey),
        }
    }

    /// How `ikey` (a node's key) orders against the target in `order`.
    #[inline(always)]
    fn node_cmp<C: Comparator + ?Sized>(&self, order: &C, ikey: &[u8]) -> CmpOrdering {
        match order.compare(key::user_key(ikey), self.user_key) {
            CmpOrdering::Equal => self.tag.cmp(&key::tag(ikey)),
            ord => ord,
        }
    }
}

/// Memory the list owns: large blocks carved into nodes, freed all at once.
struct Arena {
    blocks: Vec<(NonNull<u8>, Layout)>,
    /// Next free byte of the current block, and how many are left in it.
    free: *mut u8,
    left: usize,
}

impl Arena {
    fn new() -> Self {
        Arena {
            blocks: Vec::new(),
            free: ptr::null_mut(),
            left: 0,
        }
    }

    /// `size` bytes aligned to `ALIGN`, uninitialized. Returns the memory and how many
    /// bytes it charges (`size` rounded up to `ALIGN`).
    fn allocate(&mut self, size: usize) -> (NonNull<u8>, usize) {
        let size = size.next_multiple_of(ALIGN);
        if size <= self.left
            && let Some(p) = NonNull::new(self.free)
        {
            // SAFETY: `free` points into the current block with `left >= size` bytes
            // after it, so the new pointer stays inside or one past the block.
            self.free = unsafe { self.free.add(size) };
            self.left -= size;
            return (p, size);
        }
        if size > BLOCK_SIZE / 4 {
            // A large entry gets a block of its own; the current block keeps its room.
            return (self.new_block(size), size);
        }
        let block = self.new_block(BLOCK_SIZE);
        // SAFETY: the block has BLOCK_SIZE >= size bytes.
        self.free = unsafe { block.as_ptr().add(size) };
        self.left = BLOCK_SIZE - size;
        (block, size)
    }

    fn new_block(&mut self, size: usize) -> NonNull<u8> {
        let Ok(layout) = Layout::from_size_align(size, ALIGN) else {
            handle_alloc_error(Layout::new::<u8>());
        };
        // SAFETY: `layout` has a non-zero size (every node has a header).
        let p = unsafe { alloc(layout) };
        let Some(p) = NonNull::new(p) else {
            handle_alloc_error(layout);
        };
        self.blocks.push((p, layout));
        p
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        for (p, layout) in self.blocks.drain(..) {
            // SAFETY: each block was allocated with exactly this layout and is freed once;
            // no node outlives the list that owns the arena (S1, S4).
            unsafe { dealloc(p.as_ptr(), layout) };
        }
    }
}

/// What only the inserter touches (S2).
struct WriterState {
    arena: Arena,
    /// Xorshift state for tower heights.
    rng: u32,
    /// The last inserted node and its predecessor at every level: a sequential insert
    /// (a key after the last one) starts its search from here.
    last: *mut Node,
    splice: [*mut Node; MAX_HEIGHT],
}

/// A sorted set of (internal key, value) entries; one inserter, any number of readers.
pub struct SkipList {
    /// The order of internal keys (K2).
    order: InternalOrder,
    head: NonNull<Node>,
    /// Tallest tower in the list (readers may see a stale value: harmless).
    max_height: AtomicUsize,
    len: AtomicUsize,
    /// Bytes of nodes (head included) carved from the arena. The unused tail of the
    /// current block is not counted: a new list must stay far below the smallest write
    /// buffer (4 KiB), or every write would switch to a fresh, already "full" memtable.
    used: AtomicUsize,
    writer: Mutex<WriterState>,
}

// SAFETY: the raw pointers refer to arena memory the list owns. Readers only read nodes
// that are fully written (S3) and never freed while the list lives (S1); mutation of the
// writer state is behind a mutex (S2) and forward pointers are atomics.
unsafe impl Send for SkipList {}
// SAFETY: as above.
unsafe impl Sync for SkipList {}

impl std::fmt::Debug for SkipList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkipList")
            .field("len", &self.len())
            .field("used", &self.memory_usage())
            .finish()
    }
}

impl Default for SkipList {
    fn default() -> Self {
        Self::new()
    }
}

impl SkipList {
    /// An empty list of bytewise user keys.
    pub fn new() -> Self {
        Self::with_order(InternalOrder::default())
    }

    /// An empty list (one block holding the head) ordering user keys by `order`.
    pub fn with_order(order: InternalOrder) -> Self {
        let mut arena = Arena::new();
        let size = node_size(MAX_HEIGHT, 0, 0);
        let (p, charged) = arena.allocate(size);
        let head = p.cast::<Node>();
        // SAFETY: `p` is fresh, aligned memory of `size` bytes: a header and MAX_HEIGHT
        // null forward pointers are written into it before anyone can read it.
        unsafe { init_node(head.as_ptr(), MAX_HEIGHT, None, &[]) };
        SkipList {
            order,
            head,
            max_height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            used: AtomicUsize::new(charged),
            writer: Mutex::new(WriterState {
                arena,
                rng: 0xdead_beef,
                last: ptr::null_mut(),
                splice: [head.as_ptr(); MAX_HEIGHT],
            }),
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of nodes in the arena (keys, values, towers, alignment). The allocator holds
    /// at most one block more.
    pub fn memory_usage(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Inserts `user_key | tag` with `value`. Requires: no entry with the same user key and
    /// tag is in the list (S5, M2).
    pub fn insert(&self, user_key: &[u8], tag: u64, value: &[u8]) {
        match self.order.custom() {
            None => self.insert_in(&BytewiseComparator, user_key, tag, value),
            Some(c) => self.insert_in(c, user_key, tag, value),
        }
    }

    fn insert_in<C: Comparator + ?Sized>(
        &self,
        order: &C,
        user_key: &[u8],
        tag: u64,
        value: &[u8],
    ) {
        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let w = &mut *w;
        let target = Target { user_key, tag };
        let head = self.head.as_ptr();

        // A key after the last inserted one: the last insert's predecessors are all
        // before it too, so the search may start from them (fillseq's common case).
        let sequential = !w.last.is_null()
            // SAFETY: `last` is a published node of this list (S1).
            && target.node_cmp(order, unsafe { Node::key(w.last) }) == CmpOrdering::Less;
        let mut prev = [head; MAX_HEIGHT];
        let height_now = self.max_height.load(Ordering::Relaxed);
        let mut x = head;
        for level in (0..height_now).rev() {
            if sequential {
                let hint = w.splice[level];
                // SAFETY: splice entries are the head or published nodes (S1).
                if hint != head && (x == head || unsafe { key_lt(order, x, hint) }) {
                    x = hint;
                }
            }
            x = self.walk(order, x, level, &target).0;
            prev[level] = x;
        }
        // S5: an entry equal to one already in the list (only damaged input can bring
        // one: a log replaying seqnums it already used) is dropped; the first stays.
        // SAFETY: `prev[0]` is the head or a published node (S1).
        let at = unsafe { Node::next(prev[0], 0).load(OBSERVE) };
        // SAFETY: a non-null forward pointer is a published node (S3).
        if !at.is_null() && target.node_cmp(order, unsafe { Node::key(at) }) == CmpOrdering::Equal {
            return;
        }

        let height = random_height(&mut w.rng);
        if height > height_now {
            // `prev` already holds the head for the new levels. Readers that see the new
            // height before the node find null pointers in the head there: harmless.
            self.max_height.store(height, Ordering::Relaxed);
        }

        let key_len = user_key.len() + TAG_SIZE;
        let size = node_size(height, key_len, value.len());
        let (p, charged) = w.arena.allocate(size);
        let node = p.cast::<Node>().as_ptr();
        // SAFETY: fresh arena memory of `size` bytes, aligned; nothing else can see it
        // until it is linked in below.
        unsafe { init_node(node, height, Some((user_key, tag)), value) };
        for (level, &before) in prev.iter().enumerate().take(height) {
            // SAFETY: `before` is the head or a published node of this list with a tower
            // of at least `level + 1` (it was reached at that level); `node` has `height`.
            unsafe {
                let succ = Node::next(before, level).load(Ordering::Relaxed);
                Node::next(node, level).store(succ, Ordering::Relaxed);
                // S3: publish the fully written node.
                Node::next(before, level).store(node, PUBLISH);
            }
        }
        w.last = node;
        for (level, slot) in w.splice.iter_mut().enumerate() {
            *slot = if level < height { node } else { prev[level] };
        }
        self.used.fetch_add(charged, Ordering::Relaxed);
        self.len.fetch_add(1, Ordering::Release);
    }

    /// From `x` (before the target, or the head), moves right along `level` while the next
    /// node is before the target. Returns the last node before it and the node after that
    /// one as it was read (the first at or after the target on this level, or null).
    ///
    /// The pair comes from one load: reading `x`'s pointer again could return a node the
    /// inserter linked in since, one that may sort before the target (a newer version of
    /// the same user key), and a read at an older seqnum would then see it.
    #[inline(always)]
    fn walk<C: Comparator + ?Sized>(
        &self,
        order: &C,
        mut x: *mut Node,
        level: usize,
        target: &Target<'_>,
    ) -> (*mut Node, *mut Node) {
        loop {
            // SAFETY: `x` is the head or a published node with a tower above `level`
            // (it was reached at `level` or above).
            let next = unsafe { Node::next(x, level).load(OBSERVE) };
            if next.is_null() {
                return (x, next);
            }
            // SAFETY: a non-null forward pointer is a published node (S3).
            let key = unsafe { Node::key(next) };
            if target.node_cmp(order, key) == CmpOrdering::Less {
                x = next;
            } else {
                return (x, next);
            }
        }
    }

    /// The first node at or after the target, or null.
    fn find_greater_or_equal(&self, target: &Target<'_>) -> *mut Node {
        match self.order.custom() {
            None => self.find_greater_or_equal_in(&BytewiseComparator, target),
            Some(c) => self.find_greater_or_equal_in(c, target),
        }
    }

    fn find_greater_or_equal_in<C: Comparator + ?Sized>(
        &self,
        order: &C,
        target: &Target<'_>,
    ) -> *mut Node {
        let mut x = self.head.as_ptr();
        let mut found = ptr::null_mut();
        for level in (0..self.max_height.load(Ordering::Relaxed)).rev() {
            (x, found) = self.walk(order, x, level, target);
        }
        found
    }

    /// The last node before the target, or the head.
    fn find_less_than(&self, target: &Target<'_>) -> *mut Node {
        match self.order.custom() {
            None => self.find_less_than_in(&BytewiseComparator, target),
            Some(c) => self.find_less_than_in(c, target),
        }
    }

    fn find_less_than_in<C: Comparator + ?Sized>(
        &self,
        order: &C,
        target: &Target<'_>,
    ) -> *mut Node {
        let mut x = self.head.as_ptr();
        for level in (0..self.max_height.load(Ordering::Relaxed)).rev() {
            x = self.walk(order, x, level, target).0;
        }
        x
    }

    /// The last node, or the head if the list is empty.
    fn find_last(&self) -> *mut Node {
        let mut x = self.head.as_ptr();
        for level in (0..self.max_height.load(Ordering::Relaxed)).rev() {
            loop {
                // SAFETY: as in `walk`.
                let next = unsafe { Node::next(x, level).load(OBSERVE) };
                if next.is_null() {
                    break;
                }
                x = next;
            }
        }
        x
    }

    /// The value of the first entry at or after `user_key | tag` if its user key is
    /// `user_key`: the newest version visible at that tag's seqnum.
    pub fn get(&self, user_key: &[u8], tag: u64) -> Option<(u64, &[u8])> {
        let node = self.find_greater_or_equal(&Target { user_key, tag });
        if node.is_null() {
            return None;
        }
        // SAFETY: a published node of this list, alive as long as `&self` (S1).
        let (ikey, value) = unsafe { (Node::key(node), Node::value(node)) };
        (key::user_key(ikey) == user_key).then(|| (key::tag(ikey), value))
    }
}

/// `a`'s key is before `b`'s.
///
/// # Safety
/// Both are published nodes (S1, S3).
unsafe fn key_lt<C: Comparator + ?Sized>(order: &C, a: *const Node, b: *const Node) -> bool {
    // SAFETY: the caller's guarantee.
    let (ka, kb) = unsafe { (Node::key(a), Node::key(b)) };
    Target::of_internal_key(kb).node_cmp(order, ka) == CmpOrdering::Less
}

/// Writes a node: header, `height` null forward pointers, `user_key | tag` (none for the
/// head), `value`.
///
/// # Safety
/// `node` is writable, `ALIGN`-aligned memory of at least `node_size(height, key_len,
/// value.len())` bytes, where `key_len` is the user key's length plus the tag's, or 0.
unsafe fn init_node(node: *mut Node, height: usize, key: Option<(&[u8], u64)>, value: &[u8]) {
    let key_len = key.map_or(0, |(k, _)| k.len() + TAG_SIZE);
    // SAFETY: all writes stay inside the `node_size` bytes the caller provides.
    unsafe {
        node.write(Node {
            key_len: key_len as u32,
            value_len: value.len() as u32,
            height: height as u32,
            _pad: 0,
        });
        let tower = node.cast::<u8>().add(HEADER).cast::<AtomicPtr<Node>>();
        for level in 0..height {
            tower.add(level).write(AtomicPtr::new(ptr::null_mut()));
        }
        let mut at = tower.add(height).cast::<u8>();
        if let Some((user_key, tag)) = key {
            ptr::copy_nonoverlapping(user_key.as_ptr(), at, user_key.len());
            at = at.add(user_key.len());
            ptr::copy_nonoverlapping(tag.to_le_bytes().as_ptr(), at, TAG_SIZE);
            at = at.add(TAG_SIZE);
        }
        ptr::copy_nonoverlapping(value.as_ptr(), at, value.len());
    }
}

/// 1 + the number of times in a row a 1-in-`BRANCHING` chance came up, at most
/// `MAX_HEIGHT`.
fn random_height(rng: &mut u32) -> usize {
    let mut height = 1;
    while height < MAX_HEIGHT {
        // xorshift32
        *rng ^= *rng << 13;
        *rng ^= *rng >> 17;
        *rng ^= *rng << 5;
        if !rng.is_multiple_of(BRANCHING) {
            break;
        }
        height += 1;
    }
    height
}

/// A position in a list, keeping the list alive. Sees entries inserted after it was made.
pub struct Cursor {
    list: Arc<SkipList>,
    /// Null when not positioned; otherwise a node of `list` (S4), never the head.
    node: *const Node,
}

// SAFETY: the cursor's one raw pointer is a node of the list its `Arc` keeps alive (S4),
// which is never moved, freed or changed but for its atomic forward pointers while the list
// lives (S1); the list itself is `Sync`. So the cursor may move to another thread (a scan
// held across an `.await`) and read the same node there.
unsafe impl Send for Cursor {}

impl std::fmt::Debug for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cursor")
            .field("valid", &self.valid())
            .finish()
    }
}

impl Cursor {
    /// A cursor on `list`, not positioned.
    pub fn new(list: Arc<SkipList>) -> Self {
        Cursor {
            list,
            node: ptr::null(),
        }
    }

    fn set(&mut self, node: *const Node) {
        self.node = if node == self.list.head.as_ptr() {
            ptr::null()
        } else {
            node
        };
    }

    /// True when positioned at an entry.
    pub fn valid(&self) -> bool {
        !self.node.is_null()
    }

    /// Moves to the first entry.
    pub fn seek_to_first(&mut self) {
        // SAFETY: the head has every level.
        let first = unsafe { Node::next(self.list.head.as_ptr(), 0).load(OBSERVE) };
        self.set(first);
    }

    /// Moves to the last entry.
    pub fn seek_to_last(&mut self) {
        let last = self.list.find_last();
        self.set(last);
    }

    /// Moves to the first entry at or after the internal key `target`.
    pub fn seek(&mut self, target: &[u8]) {
        let node = self
            .list
            .find_greater_or_equal(&Target::of_internal_key(target));
        self.set(node);
    }

    /// Moves to the next entry. Requires: `valid()` (otherwise stays invalid).
    pub fn next(&mut self) {
        if self.valid() {
            // SAFETY: `node` is a node of `list` (S4).
            let next = unsafe { Node::next(self.node, 0).load(OBSERVE) };
            if !next.is_null() {
                // SAFETY: a non-null forward pointer is a published node (S3).
                let after = unsafe { Node::next(next, 0).load(OBSERVE) };
                prefetch(after);
            }
            self.set(next);
        }
    }

    /// Moves to the previous entry. Requires: `valid()` (otherwise stays invalid).
    pub fn prev(&mut self) {
        if self.valid() {
            // SAFETY: `node` is a node of `list` (S4).
            let here = Target::of_internal_key(unsafe { Node::key(self.node) });
            let before = self.list.find_less_than(&here);
            self.set(before);
        }
    }

    /// The current entry's internal key (empty when not positioned).
    pub fn key(&self) -> &[u8] {
        if self.valid() {
            // SAFETY: `node` is a node of `list`, which `self` keeps alive (S1, S4).
            unsafe { Node::key(self.node) }
        } else {
            &[]
        }
    }

    /// The current entry's value (empty when not positioned).
    pub fn value(&self) -> &[u8] {
        if self.valid() {
            // SAFETY: as in `key`.
            unsafe { Node::value(self.node) }
        } else {
            &[]
        }
    }
}

#[cfg(test)]
mod tests;

/// Asks the CPU to bring the cache line at `p` in: a scan reads the node after the next
/// one while it still works on this one, instead of waiting for it then (a scan of a
/// full 4 MiB memtable, what a flush reads: 2.14 -> 1.20 ms, `memtable/scan_4MiB` in
/// `benches/formats.rs`). A hint only: it never faults, whatever `p` is (the skip list's
/// tests pass under Miri with it).
#[inline(always)]
fn prefetch(p: *const Node) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetch` needs SSE, which every x86_64 CPU has; it reads nothing into
    // the program and never faults, for any address (null included).
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
