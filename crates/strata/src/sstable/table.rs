//! [`Table`]: an open table file, and [`TableIter`], a cursor over its entries.
//!
//! Opening reads the footer, the index block and (when present) the filter block and
//! keeps them in memory; data blocks are read on demand. Thread-safe: a `Table` is shared
//! by many readers (`&self` everywhere).

use std::sync::Arc;

use super::block::{Block, BlockIter, BlockSlice};
use super::filter_block::FilterBlockReader;
use super::format::{self, BlockHandle, FOOTER_SIZE, Footer};
use crate::cache::BlockCache;
use crate::env::RandomAccessFile;
use crate::error::{Error, Result};
use crate::filter::BLOOM_POLICY_NAME;
use crate::iter::Cursor;
use crate::key::{self, Bytewise, InternalOrder};

/// How a reader gets a table's data blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockReads {
    /// Check each block's CRC-32C before using it (a block from the cache was checked).
    pub verify_checksums: bool,
    /// Put blocks read from the file into the block cache.
    pub fill_cache: bool,
}

impl BlockReads {
    /// What a user's read asks for ([`crate::ReadOptions`]).
    pub const fn user(verify_checksums: bool, fill_cache: bool) -> Self {
        BlockReads {
            verify_checksums,
            fill_cache,
        }
    }

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

/// An open, immutable table.
pub struct Table {
    file: Arc<dyn RandomAccessFile>,
    name: String,
    size: u64,
    index: Arc<Block>,
    filter: Option<FilterBlockReader>,
    metaindex: BlockHandle,
    /// The shared block cache and this table's id in it.
    cache: Option<(Arc<BlockCache>, u64)>,
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
    /// Opens the table in `file` (of `size` bytes; `name` is used in errors). Checksums of
    /// the index and filter blocks are always verified. With `use_filter` off the filter
    /// block is not read.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        name: &str,
        size: u64,
        use_filter: bool,
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
        let index =
            Arc::new(Block::new(index_bytes).map_err(|e| e.located(name, footer.index.offset))?);
        let mut table = Table {
            file,
            name: name.to_string(),
            size,
            index,
            filter: None,
            metaindex: footer.metaindex,
            cache: None,
        };
        if use_filter {
            table.filter = table.read_filter()?;
        }
        Ok(table)
    }

    fn read_filter(&self) -> Result<Option<FilterBlockReader>> {
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
        let mut it = meta.iter(Bytewise);
        let wanted = format!("filter.{BLOOM_POLICY_NAME}");
        it.seek(wanted.as_bytes());
        it.status()
            .map_err(|e| e.located(&self.name, self.metaindex.offset))?;
        if !it.valid() || it.key() != wanted.as_bytes() {
            return Ok(None);
        }
        let handle = BlockHandle::decode_exact(it.value())
            .map_err(|e| e.located(&self.name, self.metaindex.offset))?;
        let data = format::read_block(self.file.as_ref(), &self.name, self.size, handle, true)?;
        Ok(Some(FilterBlockReader::new(data)))
    }

    /// Serves data blocks through `cache` (the table gets a fresh id in it).
    pub fn with_cache(mut self, cache: Arc<BlockCache>) -> Self {
        let id = cache.new_id();
        self.cache = Some((cache, id));
        self
    }

    /// The file name given at open.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Size of the file in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// True if a filter block was loaded.
    pub fn has_filter(&self) -> bool {
        self.filter.is_some()
    }

    /// A cursor over the index block: one entry per data block, the value its handle.
    pub fn index_iter(&self) -> BlockIter<InternalOrder> {
        self.index.iter(InternalOrder)
    }

    /// The data block at `handle`: from the block cache when it is there, otherwise read,
    /// decoded and (with a cache and `reads.fill_cache`) inserted.
    pub fn read_block(&self, handle: BlockHandle, reads: BlockReads) -> Result<Arc<Block>> {
        if let Some((cache, id)) = &self.cache
            && let Some(block) = cache.get(*id, handle.offset)
        {
            return Ok(block);
        }
        // A buffer the cache let go of, if it has one: no allocation, no zeroing.
        let buffer = match &self.cache {
            Some((cache, id)) if reads.fill_cache => cache.spare_buffer(*id, handle.offset),
            _ => Vec::new(),
        };
        let data = format::read_block_into(
            self.file.as_ref(),
            &self.name,
            self.size,
            handle,
            reads.verify_checksums,
            buffer,
        )?;
        let block = Block::new(data)
            .map(Arc::new)
            .map_err(|e| e.located(&self.name, handle.offset))?;
        // Only verified blocks are shared: a later reader that asks for verification
        // must not be handed bytes nobody checked.
        if reads.verify_checksums
            && reads.fill_cache
            && let Some((cache, id)) = &self.cache
        {
            cache.insert(*id, handle.offset, Arc::clone(&block));
        }
        Ok(block)
    }

    /// The first entry at or after `ikey` in the data block that would hold it; `None`
    /// when there is none or the filter rules out `ikey`'s user key. Callers compare the
    /// user key of the result with their own.
    pub fn get(&self, ikey: &[u8], reads: BlockReads) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.find_entry(ikey, reads, |it| (it.key().to_vec(), it.value().to_vec()))
    }

    /// [`Table::get`] with the value as a view into its block (no copy; the view keeps
    /// the block alive).
    pub fn get_pinned(
        &self,
        ikey: &[u8],
        reads: BlockReads,
    ) -> Result<Option<(Vec<u8>, BlockSlice)>> {
        self.find_entry(ikey, reads, |it| (it.key().to_vec(), it.value_slice()))
    }

    /// Positions a cursor on the first entry at or after `ikey` in the data block that
    /// would hold it, and hands it to `take`; `None` as for [`Table::get`].
    fn find_entry<T>(
        &self,
        ikey: &[u8],
        reads: BlockReads,
        take: impl FnOnce(&BlockIter<InternalOrder>) -> T,
    ) -> Result<Option<T>> {
        let mut index = self.index.iter(InternalOrder);
        index.seek(ikey);
        index.status().map_err(|e| e.located(&self.name, 0))?;
        if !index.valid() {
            return Ok(None);
        }
        let handle =
            BlockHandle::decode_exact(index.value()).map_err(|e| e.located(&self.name, 0))?;
        if let Some(f) = &self.filter
            && !f.key_may_match(handle.offset, key::user_key(ikey))
        {
            return Ok(None);
        }
        let block = self.read_block(handle, reads)?;
        let mut it = block.iter(InternalOrder);
        it.seek(ikey);
        it.status()
            .map_err(|e| e.located(&self.name, handle.offset))?;
        Ok(it.valid().then(|| take(&it)))
    }

    /// Approximate file offset where the data for `ikey` would start.
    pub fn approximate_offset_of(&self, ikey: &[u8]) -> u64 {
        let mut index = self.index.iter(InternalOrder);
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
        TableIter {
            table: Arc::clone(self),
            reads,
            index: self.index.iter(InternalOrder),
            data: None,
            data_handle: BlockHandle::default(),
            err: None,
        }
    }
}

/// A two-level cursor: the index block picks the data block, the data block the entry.
/// Errors are sticky: after one, the cursor stays invalid and `status` reports it.
#[derive(Debug)]
pub struct TableIter {
    table: Arc<Table>,
    reads: BlockReads,
    index: BlockIter<InternalOrder>,
    data: Option<BlockIter<InternalOrder>>,
    data_handle: BlockHandle,
    err: Option<Error>,
}

impl TableIter {
    fn fail(&mut self, e: Error) {
        if self.err.is_none() {
            self.err = Some(e);
        }
        self.data = None;
    }

    /// Points `data` at the block the index cursor names (reusing it if unchanged).
    fn init_data_block(&mut self) {
        if self.err.is_some() || !self.index.valid() {
            self.data = None;
            return;
        }
        let handle = match BlockHandle::decode_exact(self.index.value()) {
            Ok(h) => h,
            Err(e) => return self.fail(e.located(&self.table.name, self.table.size)),
        };
        if self.data.is_some() && handle == self.data_handle {
            return;
        }
        match self.table.read_block(handle, self.reads) {
            Ok(block) => {
                self.data = Some(block.iter(InternalOrder));
                self.data_handle = handle;
            }
            Err(e) => self.fail(e),
        }
    }

    /// Checks the data cursor for an error and moves it into `err`.
    fn check_data(&mut self) -> bool {
        if self.err.is_some() {
            return false;
        }
        if let Some(Err(e)) = self.data.as_ref().map(|d| d.status()) {
            let e = e.located(&self.table.name, self.data_handle.offset);
            self.fail(e);
            return false;
        }
        if let Err(e) = self.index.status() {
            let e = e.located(&self.table.name, 0);
            self.fail(e);
            return false;
        }
        true
    }

    fn skip_empty_blocks_forward(&mut self) {
        while self.check_data() && !self.data.as_ref().is_some_and(|d| d.valid()) {
            if !self.index.valid() {
                self.data = None;
                return;
            }
            self.index.next();
            self.init_data_block();
            if let Some(d) = self.data.as_mut() {
                d.seek_to_first();
            }
        }
    }

    fn skip_empty_blocks_backward(&mut self) {
        while self.check_data() && !self.data.as_ref().is_some_and(|d| d.valid()) {
            if !self.index.valid() {
                self.data = None;
                return;
            }
            self.index.prev();
            self.init_data_block();
            if let Some(d) = self.data.as_mut() {
                d.seek_to_last();
            }
        }
    }
}

impl Cursor for TableIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.data.as_ref().is_some_and(|d| d.valid())
    }

    fn seek_to_first(&mut self) {
        self.index.seek_to_first();
        self.init_data_block();
        if let Some(d) = self.data.as_mut() {
            d.seek_to_first();
        }
        self.skip_empty_blocks_forward();
    }

    fn seek_to_last(&mut self) {
        self.index.seek_to_last();
        self.init_data_block();
        if let Some(d) = self.data.as_mut() {
            d.seek_to_last();
        }
        self.skip_empty_blocks_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        self.index.seek(target);
        self.init_data_block();
        if let Some(d) = self.data.as_mut() {
            d.seek(target);
        }
        self.skip_empty_blocks_forward();
    }

    fn next(&mut self) {
        if let Some(d) = self.data.as_mut().filter(|d| d.valid()) {
            d.next();
            self.skip_empty_blocks_forward();
        }
    }

    fn prev(&mut self) {
        if let Some(d) = self.data.as_mut().filter(|d| d.valid()) {
            d.prev();
            self.skip_empty_blocks_backward();
        }
    }

    fn key(&self) -> &[u8] {
        match &self.data {
            Some(d) if self.err.is_none() => d.key(),
            _ => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match &self.data {
            Some(d) if self.err.is_none() => d.value(),
            _ => &[],
        }
    }

    fn status(&self) -> Result<()> {
        crate::iter::status_of(&self.err)
    }
}

#[cfg(test)]
mod tests;
