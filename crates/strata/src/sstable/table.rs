//! [`Table`]: an open table file, and [`TableIter`], a cursor over its entries.
//!
//! Opening reads the footer, the index block and (when present) the filter block and
//! keeps them in memory; data blocks are read on demand. Thread-safe: a `Table` is shared
//! by many readers (`&self` everywhere).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::block::{Block, BlockIter, BlockRef, BlockSlice};
use super::fences::Found;
use super::filter_block::FilterBlockReader;
use super::format::{self, BlockHandle, FOOTER_SIZE, Footer};
use super::verified::{Stored, Verified};
use crate::cache::Probe;
use crate::comparator::{BytewiseComparator, Comparator, InternalBytewise, InternalOrder};
use crate::env::{MappedBytes, RandomAccessFile};
use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::iter::{Cursor, Parts, TwoLevel};
use crate::key::{self, ParsedInternalKey, ValueType};
use crate::sstable::BlockCache;

/// A data block as a read gets it.
enum Fetched {
    /// Read in place from the map for this read alone.
    InPlace(Block),
    /// Shared with the block cache (or read for it).
    Shared(Arc<Block>),
}

/// What a block is read for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    /// One seek into it (a point lookup).
    Lookup,
    /// A walk through it (an iterator).
    Walk,
}

/// How a reader gets a table's data blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockReads {
    /// Check each block's CRC-32C before using it (a block from the cache was checked).
    pub verify_checksums: bool,
    /// Put blocks read from the file into the block cache.
    pub fill_cache: bool,
}

impl BlockReads {
    /// A reader's default: checked and cached, as a user's read asks by default.
    pub const CHECKED_CACHED: BlockReads = BlockReads {
        verify_checksums: true,
        fill_cache: true,
    };

    /// A pass over whole tables once, in order (compaction, verify, repair): checked, not
    /// cached (it would push out what readers use). Reading ahead 256 KiB at a time was
    /// tried for compaction (2026-11-24): about 20 % more time per compacted byte than a
    /// `pread` per block from the page cache (zeroed buffers, cache pollution), so blocks
    /// are read one at a time.
    pub const SCAN_ONCE: BlockReads = BlockReads {
        verify_checksums: true,
        fill_cache: false,
    };
}

/// What a reader must know of a table that its file does not say: the key order it was
/// written in and the filter policy to read its filter block with (F1).
#[derive(Debug, Clone, Default)]
pub struct TableFormat {
    /// The order of its keys.
    pub order: InternalOrder,
    /// The policy whose filter block (`filter.<name>`) is read; `None`: none is read.
    pub filter: Option<Filter>,
}

impl TableFormat {
    /// Bytewise keys, LevelDB's Bloom filters read when present: every table LevelDB or
    /// Strata writes with default options.
    #[cfg(any(test, feature = "internals"))]
    pub fn leveldb() -> Self {
        TableFormat {
            order: InternalOrder::default(),
            filter: Some(Filter::builtin()),
        }
    }
}

/// An open, immutable table.
pub struct Table {
    file: Arc<dyn RandomAccessFile>,
    name: String,
    size: u64,
    index: Arc<Block>,
    filter: Option<FilterBlockReader>,
    order: InternalOrder,
    metaindex: BlockHandle,
    /// The shared block cache and this table's id in it.
    cache: Option<(Arc<BlockCache>, u64)>,
    /// For a mapped file: the data blocks already checked (`verified.rs`, T4).
    verified: Option<Verified>,
    /// Data blocks this table has put into the block cache (read or warmed), ever: a
    /// table that never cached one holds none there (J2 asks it nothing).
    cached_blocks: AtomicU64,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.name)
            .field("size", &self.size)
            .field("has_filter", &self.filter.is_some())
            .finish_non_exhaustive()
    }
}

impl Table {
    /// Opens the table in `file` (of `size` bytes; `name` is used in errors), written in
    /// `format`. Checksums of the index and filter blocks are always verified.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        name: &str,
        size: u64,
        format: &TableFormat,
    ) -> Result<Table> {
        if size < FOOTER_SIZE as u64 {
            return Err(Error::corruption(
                name,
                0,
                format!("file of {size} bytes is too short to be a table"),
            ));
        }
        let footer_at = size - FOOTER_SIZE as u64;
        let mut buf = [0u8; FOOTER_SIZE];
        let got = file.read_at(footer_at, &mut buf)?;
        if got != FOOTER_SIZE {
            return Err(Error::corruption(name, footer_at, "truncated footer"));
        }
        let footer = Footer::decode(&buf).map_err(|e| e.located(name, footer_at))?;
        let index_bytes = format::read_block(file.as_ref(), name, size, footer.index, true)?;
        // The index keeps each data block's handle beside its fence (T6): a lookup finds
        // its block without reading the index's entries.
        let index = Arc::new(
            Block::kept_index(index_bytes, format.order.is_bytewise(), |value| {
                BlockHandle::decode_exact(value).ok()?.packed()
            })
            .map_err(|e| e.located(name, footer.index.offset))?,
        );
        let verified = file.mapped().map(|_| Verified::new(&index));
        let mut table = Table {
            file,
            name: name.to_string(),
            size,
            index,
            filter: None,
            order: format.order.clone(),
            metaindex: footer.metaindex,
            cache: None,
            verified,
            cached_blocks: AtomicU64::new(0),
        };
        if let Some(policy) = &format.filter {
            table.filter = table.read_filter(policy)?;
        }
        // The footer, index and filter are copied out now, and nothing else was read: a
        // mapped file need not keep any page of it in the resident set until a reader
        // needs one (LevelDB's open keeps the footer's). The whole file, not only its
        // tail: the kernel may have mapped more around each page the open read (fault-
        // around, or all of a large page-cache folio).
        table.file.release(0, size);
        Ok(table)
    }

    fn read_filter(&self, policy: &Filter) -> Result<Option<FilterBlockReader>> {
        let meta_bytes = format::read_block(
            self.file.as_ref(),
            &self.name,
            self.size,
            self.metaindex,
            true,
        )?;
        let meta = Arc::new(
            Block::new(meta_bytes).map_err(|e| e.located(&self.name, self.metaindex.offset))?,
        );
        let mut it = meta.iter(BytewiseComparator);
        let wanted = policy.meta_key();
        it.seek(wanted.as_bytes());
        it.status()
            .map_err(|e| e.located(&self.name, self.metaindex.offset))?;
        if !it.valid() || it.key() != wanted.as_bytes() {
            return Ok(None);
        }
        let handle = BlockHandle::decode_exact(it.value())
            .map_err(|e| e.located(&self.name, self.metaindex.offset))?;
        let data = format::read_block(self.file.as_ref(), &self.name, self.size, handle, true)?;
        Ok(Some(FilterBlockReader::new(data, policy.clone())))
    }

    /// Serves data blocks through `cache` (the table gets a fresh id in it).
    pub fn with_cache(mut self, cache: Arc<BlockCache>) -> Self {
        let id = cache.new_id();
        self.cache = Some((cache, id));
        self
    }

    /// The file name given at open.
    #[cfg(any(test, feature = "internals"))]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Size of the file in bytes.
    #[cfg(any(test, feature = "internals"))]
    pub fn size(&self) -> u64 {
        self.size
    }

    /// True if a filter block was loaded.
    #[cfg(any(test, feature = "internals"))]
    pub fn has_filter(&self) -> bool {
        self.filter.is_some()
    }

    /// A cursor over the index block: one entry per data block, the value its handle.
    pub fn index_iter(&self) -> BlockIter<InternalOrder> {
        self.index.iter(self.order.clone())
    }

    /// An index or data block's bytes as a [`Block`]. One that is `kept` (the index, a
    /// block the cache takes) has fences (T5 in `block.rs`) when user keys are ordered
    /// bytewise, and its seeks touch their lines first; a block read for one use has
    /// neither (a 4 % share of a random read that misses the cache, `perf`).
    fn decode_block(order: &InternalOrder, data: Vec<u8>, kept: bool) -> Result<Block> {
        if kept {
            Block::kept(data, order.is_bytewise())
        } else {
            Block::new(data)
        }
    }

    /// The data block at `handle`. A block of a mapped file stored uncompressed is read in
    /// place and not cached (as LevelDB does: the map is as fast as the cache and costs
    /// no copy). Any other comes from the block cache when it is there, or is read,
    /// decoded and (with a cache and `reads.fill_cache`) inserted. A mapped file's block
    /// is checked at its first verified read only, which also records how it is stored,
    /// so later reads go straight to the map or the cache (`verified.rs`, T4).
    pub fn read_block(&self, handle: BlockHandle, reads: BlockReads) -> Result<Arc<Block>> {
        Ok(match self.fetch(handle, None, reads, Use::Walk)? {
            Fetched::InPlace(block) => Arc::new(block),
            Fetched::Shared(block) => block,
        })
    }

    /// [`Table::read_block`], for `purpose`: a block read in place for a point lookup has
    /// every cache line prefetched first, its last (trailer, restart array) first: they
    /// and the entries a seek probes are all about to be read, in dependent steps, and
    /// the fetches overlap those misses. A walk, which reads the block front to back, is
    /// left to the hardware's own prefetching (touching first made a scan 9 % slower).
    /// `entry` is the number of the index entry that gave `handle`, when known (its marks
    /// are then found without a search, `verified.rs`).
    fn fetch(
        &self,
        handle: BlockHandle,
        entry: Option<usize>,
        reads: BlockReads,
        purpose: Use,
    ) -> Result<Fetched> {
        let cached = |check| {
            self.read_block_cached(handle, reads, check)
                .map(Fetched::Shared)
        };
        let Some(marks) = &self.verified else {
            return cached(reads.verify_checksums);
        };
        match marks.get(entry, handle.offset) {
            Some(Stored::Plain) => match usize::try_from(handle.size)
                .ok()
                .and_then(|size| self.file.map_range(handle.offset, size))
            {
                Some(bytes) => self.in_place(handle, bytes, purpose),
                None => cached(false),
            },
            Some(Stored::Compressed) => cached(false),
            None => {
                let check = reads.verify_checksums;
                if let Some(bytes) =
                    format::read_block_in_place(self.file.as_ref(), &self.name, handle, check)?
                {
                    if check {
                        marks.insert(entry, handle.offset, Stored::Plain);
                    }
                    return self.in_place(handle, bytes, purpose);
                }
                let block = cached(check)?;
                if check {
                    marks.insert(entry, handle.offset, Stored::Compressed);
                }
                Ok(block)
            }
        }
    }

    /// A block read in place from the map.
    fn in_place(&self, handle: BlockHandle, bytes: MappedBytes, purpose: Use) -> Result<Fetched> {
        if purpose == Use::Lookup {
            crate::prefetch::lines_tail_first(&bytes);
        }
        Block::in_place(bytes)
            .map(Fetched::InPlace)
            .map_err(|e| e.located(&self.name, handle.offset))
    }

    /// The block at `handle` from the block cache, or read (its trailer checked when
    /// `check`), decoded and cached when `reads` asks for checked, cached reads. `check`
    /// is false for a block checked before (T4) or when `reads` does not verify.
    fn read_block_cached(
        &self,
        handle: BlockHandle,
        reads: BlockReads,
        check: bool,
    ) -> Result<Arc<Block>> {
        // A cached block; else a buffer the cache let go of, if it has one (no allocation,
        // no zeroing), when the block is to be cached (BC6). Only verified blocks are
        // shared: a later reader that asks for verification must not be handed bytes
        // nobody checked (checked now, or before: T4), so reads that do not verify only
        // look.
        let cacheable = reads.fill_cache && reads.verify_checksums;
        let (buffer, admit) = match &self.cache {
            Some((cache, id)) if cacheable => match cache.probe(*id, handle.offset) {
                Probe::Hit(block) => return Ok(block),
                Probe::Admit(buffer) => (buffer, true),
                Probe::Pass => (Vec::new(), false),
            },
            Some((cache, id)) => match cache.get(*id, handle.offset) {
                Some(block) => return Ok(block),
                None => (Vec::new(), false),
            },
            None => (Vec::new(), false),
        };
        let data = format::read_block_into(
            self.file.as_ref(),
            &self.name,
            self.size,
            handle,
            check,
            buffer,
        )?;
        let block = Self::decode_block(&self.order, data, admit)
            .map(Arc::new)
            .map_err(|e| e.located(&self.name, handle.offset))?;
        if admit && let Some((cache, id)) = &self.cache {
            cache.insert(*id, handle.offset, Arc::clone(&block));
            self.cached_blocks.fetch_add(1, Ordering::Relaxed);
        }
        Ok(block)
    }

    /// How many of this table's data blocks the block cache holds, and how many it has
    /// (J2). (0, 0) for a table that never cached a block, or whose file is not mapped
    /// (its blocks are never warmed, [`Table::warm`]): it is not looked at.
    pub fn cached_share(&self) -> (usize, usize) {
        let (Some((cache, id)), Some(_)) = (&self.cache, &self.verified) else {
            return (0, 0);
        };
        if self.cached_blocks.load(Ordering::Relaxed) == 0 {
            return (0, 0);
        }
        let (mut cached, mut blocks) = (0, 0);
        self.each_data_block(|offset| {
            blocks += 1;
            cached += usize::from(cache.contains(*id, offset));
        });
        (cached, blocks)
    }

    /// Drops every data block of this table from the block cache (J3: its file is being
    /// deleted, and the cache's room goes to live tables' blocks instead of waiting for
    /// the clock to reach them). Nothing to do for a table that never cached a block.
    pub fn drop_cached_blocks(&self) {
        let Some((cache, id)) = &self.cache else {
            return;
        };
        if self.cached_blocks.load(Ordering::Relaxed) == 0 {
            return;
        }
        self.each_data_block(|offset| cache.erase(*id, offset));
    }

    /// Calls `f` with the offset of each data block the index names (an entry whose handle
    /// does not decode is passed over).
    fn each_data_block(&self, mut f: impl FnMut(u64)) {
        let mut index = self.index.iter(self.order.clone());
        index.seek_to_first();
        while index.valid() {
            if let Ok(handle) = BlockHandle::decode_exact(index.value()) {
                f(handle.offset);
            }
            index.next();
        }
    }

    /// Puts `contents`, the uncompressed contents of the data block at `handle` that the
    /// table's writer kept (`KeptBlock`), into the block cache as a read would have (J2),
    /// so that its first reader neither reads nor
    /// decompresses it. The stored block's checksum is checked first, where it lies in
    /// the map, and the block marked checked (T4), as a read does; a block whose check
    /// fails is left out, for the first read to report. Nothing is done without a cache
    /// or for a file that is not mapped (its stored bytes would have to be read back).
    pub fn warm(&self, handle: BlockHandle, contents: Vec<u8>) {
        let (Some((cache, id)), Some(marks)) = (&self.cache, &self.verified) else {
            return;
        };
        match format::check_in_place(self.file.as_ref(), &self.name, handle) {
            Ok(true) => marks.insert(None, handle.offset, Stored::Compressed),
            Ok(false) | Err(_) => return,
        }
        if let Ok(decoded) = Self::decode_block(&self.order, contents, true) {
            cache.insert(*id, handle.offset, Arc::new(decoded));
            self.cached_blocks.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The first entry at or after `ikey` in the data block that would hold it; `None`
    /// when there is none or the filter rules out `ikey`'s user key. Callers compare the
    /// user key of the result with their own.
    #[cfg(any(test, feature = "internals"))]
    pub fn get(&self, ikey: &[u8], reads: BlockReads) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.find_entry::<CopyEntry>(ikey, reads)
    }

    /// The newest version of `ikey`'s user key at or below its seqnum: its type and its
    /// value (copied); `None` when the table holds none (or its filter rules it out).
    pub fn get_version(
        &self,
        ikey: &[u8],
        reads: BlockReads,
    ) -> Result<Option<(ValueType, Vec<u8>)>> {
        self.find_entry::<CopyVersion>(ikey, reads)
    }

    /// [`Table::get_version`] with the value as a view into its block (no copy; the view
    /// keeps the block alive).
    pub fn get_version_pinned(
        &self,
        ikey: &[u8],
        reads: BlockReads,
    ) -> Result<Option<(ValueType, BlockSlice)>> {
        self.find_entry::<PinVersion>(ikey, reads)
    }

    /// What `T` takes from the first entry at or after `ikey` in the data block that would
    /// hold it; `None` when there is none, the filter rules out `ikey`'s user key, or `T`
    /// takes nothing. The order is chosen once here: bytewise keys are compared inline
    /// through the whole seek.
    fn find_entry<T: TakeEntry>(&self, ikey: &[u8], reads: BlockReads) -> Result<Option<T::Out>> {
        if self.order.is_bytewise() {
            self.find_entry_in::<InternalBytewise, T>(InternalBytewise, ikey, reads)
        } else {
            self.find_entry_in::<InternalOrder, T>(self.order.clone(), ikey, reads)
        }
    }

    fn find_entry_in<O: Comparator + Clone, T: TakeEntry>(
        &self,
        order: O,
        ikey: &[u8],
        reads: BlockReads,
    ) -> Result<Option<T::Out>> {
        let (entry, handle) = match self.index.find(ikey) {
            Found::Entry { number, aux } => (Some(number), BlockHandle::unpacked(aux)),
            Found::End => return Ok(None),
            Found::Undecided => {
                let mut index = self.index.iter_borrowed(order.clone());
                index.seek(ikey);
                index.status().map_err(|e| e.located(&self.name, 0))?;
                if !index.valid() {
                    return Ok(None);
                }
                let handle = BlockHandle::decode_exact(index.value())
                    .map_err(|e| e.located(&self.name, 0))?;
                (index.restart_number(), handle)
            }
        };
        if let Some(f) = &self.filter
            && !f.key_may_match(handle.offset, key::user_key(ikey))
        {
            return Ok(None);
        }
        // A block read in place is this lookup's alone: borrowed, never counted.
        match self.fetch(handle, entry, reads, Use::Lookup)? {
            Fetched::InPlace(block) => {
                self.take_at::<O, T, _>(block.iter_borrowed(order), ikey, handle)
            }
            Fetched::Shared(block) => self.take_at::<O, T, _>(block.iter(order), ikey, handle),
        }
    }

    /// What `T` takes from the first entry at or after `ikey` in the block under `it`.
    fn take_at<O: Comparator + Clone, T: TakeEntry, B: BlockRef>(
        &self,
        mut it: BlockIter<O, B>,
        ikey: &[u8],
        handle: BlockHandle,
    ) -> Result<Option<T::Out>> {
        it.seek(ikey);
        it.status()
            .map_err(|e| e.located(&self.name, handle.offset))?;
        Ok(if it.valid() { T::take(&it, ikey) } else { None })
    }

    /// Approximate file offset where the data for `ikey` would start.
    pub fn approximate_offset_of(&self, ikey: &[u8]) -> u64 {
        let mut index = self.index.iter(self.order.clone());
        index.seek(ikey);
        if index.valid()
            && let Ok(h) = BlockHandle::decode_exact(index.value())
        {
            return h.offset;
        }
        self.metaindex.offset
    }

    /// A cursor over every entry.
    pub fn iter(self: &Arc<Self>, reads: BlockReads) -> TableIter {
        self.cursor(reads, None)
    }

    /// A cursor for one pass from front to back over a table whose map is its own (a
    /// compaction's input): every MiB it moves on, the map's pages behind it leave the
    /// resident set ([`RandomAccessFile::release`]), so a pass over a large table keeps
    /// about a MiB of it resident, not all of it until the pass ends.
    pub fn scan_iter(self: &Arc<Self>, reads: BlockReads) -> TableIter {
        self.cursor(reads, Some(std::cell::Cell::new(0)))
    }

    fn cursor(
        self: &Arc<Self>,
        reads: BlockReads,
        released: Option<std::cell::Cell<u64>>,
    ) -> TableIter {
        TwoLevel::new(
            self.index.iter(self.order.clone()),
            TableParts {
                table: Arc::clone(self),
                reads,
                released,
            },
        )
    }
}

/// How far behind a one-pass cursor releases its table's pages.
const RELEASE_EVERY: u64 = 1 << 20;

/// What a point lookup takes from the entry its seek lands on (given the target).
trait TakeEntry {
    type Out;
    fn take<O: Comparator + Clone, B: BlockRef>(
        it: &BlockIter<O, B>,
        target: &[u8],
    ) -> Option<Self::Out>;
}

/// The entry's key and value, copied ([`Table::get`]).
#[cfg(any(test, feature = "internals"))]
struct CopyEntry;

#[cfg(any(test, feature = "internals"))]
impl TakeEntry for CopyEntry {
    type Out = (Vec<u8>, Vec<u8>);
    fn take<O: Comparator + Clone, B: BlockRef>(
        it: &BlockIter<O, B>,
        _: &[u8],
    ) -> Option<Self::Out> {
        Some((it.key().to_vec(), it.value().to_vec()))
    }
}

/// The entry's type when its user key is the target's (a version of the key the lookup
/// asks for), or `None`: no key is copied.
fn version_of<O: Comparator + Clone, B: BlockRef>(
    it: &BlockIter<O, B>,
    target: &[u8],
) -> Option<ValueType> {
    let found = ParsedInternalKey::parse(it.key())?;
    (found.user_key == key::user_key(target)).then_some(found.ty)
}

/// The version's type and its value, copied ([`Table::get_version`]).
struct CopyVersion;

impl TakeEntry for CopyVersion {
    type Out = (ValueType, Vec<u8>);
    fn take<O: Comparator + Clone, B: BlockRef>(
        it: &BlockIter<O, B>,
        target: &[u8],
    ) -> Option<Self::Out> {
        version_of(it, target).map(|ty| (ty, it.value().to_vec()))
    }
}

/// The version's type and its value as a view that keeps its block alive
/// ([`Table::get_version_pinned`]).
struct PinVersion;

impl TakeEntry for PinVersion {
    type Out = (ValueType, BlockSlice);
    fn take<O: Comparator + Clone, B: BlockRef>(
        it: &BlockIter<O, B>,
        target: &[u8],
    ) -> Option<Self::Out> {
        version_of(it, target).map(|ty| (ty, it.value_slice()))
    }
}

/// How a table's cursor opens its parts: the index block's entries are the handles of
/// the data blocks.
#[derive(Debug)]
pub struct TableParts {
    table: Arc<Table>,
    reads: BlockReads,
    /// For a one-pass cursor ([`Table::scan_iter`]): the offset up to which the map's
    /// pages were released.
    released: Option<std::cell::Cell<u64>>,
}

impl Parts for TableParts {
    type Part = BlockIter<InternalOrder>;

    fn open(&self, value: &[u8]) -> Result<Self::Part> {
        let handle = BlockHandle::decode_exact(value)
            .map_err(|e| e.located(&self.table.name, self.table.size))?;
        if let Some(released) = &self.released
            && handle.offset >= released.get() + RELEASE_EVERY
        {
            let from = released.get();
            self.table.file.release(from, handle.offset - from);
            released.set(handle.offset);
        }
        Ok(self
            .table
            .read_block(handle, self.reads)?
            .iter(self.table.order.clone()))
    }

    fn locate_part_error(&self, e: Error, value: &[u8]) -> Error {
        let offset = BlockHandle::decode_exact(value).map_or(0, |h| h.offset);
        e.located(&self.table.name, offset)
    }

    fn locate_outer_error(&self, e: Error) -> Error {
        e.located(&self.table.name, 0)
    }
}

/// A cursor over a table's entries: the index block picks the data block, the data block
/// the entry (a [`TwoLevel`] cursor). Errors are sticky.
pub type TableIter = TwoLevel<BlockIter<InternalOrder>, TableParts>;

#[cfg(test)]
mod tests;
