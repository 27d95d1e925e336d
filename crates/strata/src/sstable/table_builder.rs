//! [`TableBuilder`]: writes a sorted table, LevelDB's layout byte for byte.

use super::block_builder::BlockBuilder;
use super::filter_block::FilterBlockBuilder;
use super::format::{BLOCK_TRAILER_SIZE, BlockHandle, Compression, Footer};
use crate::checksum;
use crate::comparator::InternalOrder;
use crate::env::{WRITEBACK_EVERY, WritableFile};
use crate::error::Result;
use crate::filter::Filter;
use crate::key;

/// How tables are laid out.
#[derive(Debug, Clone)]
pub struct TableOptions {
    /// Target size of a data block before compression (LevelDB: 4 KiB).
    pub block_size: usize,
    /// Entries between full keys in a data block (LevelDB: 16).
    pub restart_interval: usize,
    /// Block compression; a compressed block is kept only if it saves 1/8.
    pub compression: Compression,
    /// The filter policy; `None` writes no filter block.
    pub filter: Option<Filter>,
    /// The key order (it shortens index separators).
    pub order: InternalOrder,
}

impl TableOptions {
    /// What a reader of these tables needs to know (`crate::sstable::TableFormat`).
    #[cfg(any(test, feature = "internals"))]
    pub fn format(&self) -> super::TableFormat {
        super::TableFormat {
            order: self.order.clone(),
            filter: self.filter.clone(),
        }
    }
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size: 4096,
            restart_interval: 16,
            compression: Compression::Snappy,
            filter: None,
            order: InternalOrder::default(),
        }
    }
}

/// Writes one table. Keys (internal keys) must be added in strictly increasing order.
///
/// The builder does not latch errors: after any `Err`, the caller abandons the file.
pub struct TableBuilder<W: WritableFile + ?Sized> {
    file: Box<W>,
    options: TableOptions,
    offset: u64,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    last_key: Vec<u8>,
    num_entries: u64,
    filter: Option<FilterBlockBuilder>,
    /// The handle of the last data block written, whose index entry waits for the next
    /// key so the separator can be shortened (T3).
    pending_index: Option<BlockHandle>,
    compressed: Vec<u8>,
    snappy: snap::raw::Encoder,
    /// Where the last early writeback was started ([`WRITEBACK_EVERY`]).
    writeback_at: u64,
    /// The data blocks stored compressed, for the block cache
    /// ([`TableBuilder::keep_compressed_blocks`]); `None`: none kept.
    kept: Option<Vec<KeptBlock>>,
}

/// A data block the builder stored compressed, as a reader would find it after
/// decompressing it: for the block cache, so that readers of a table a compaction just
/// wrote do not read and decompress it again (`docs/design.md`, J2).
#[derive(Debug)]
pub struct KeptBlock {
    /// Where the block lies in the table.
    pub handle: BlockHandle,
    /// Its contents, uncompressed.
    pub contents: Vec<u8>,
}

impl<W: WritableFile + ?Sized> std::fmt::Debug for TableBuilder<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableBuilder")
            .field("offset", &self.offset)
            .field("num_entries", &self.num_entries)
            .finish_non_exhaustive()
    }
}

impl<W: WritableFile + ?Sized> TableBuilder<W> {
    /// A builder writing to an empty `file`.
    pub fn new(file: Box<W>, options: TableOptions) -> Self {
        let mut filter = options.filter.clone().map(FilterBlockBuilder::new);
        if let Some(f) = filter.as_mut() {
            f.start_block(0);
        }
        TableBuilder {
            file,
            offset: 0,
            data_block: BlockBuilder::new(options.restart_interval),
            options,
            index_block: BlockBuilder::new(1),
            last_key: Vec::new(),
            num_entries: 0,
            filter,
            pending_index: None,
            compressed: Vec::new(),
            snappy: snap::raw::Encoder::new(),
            writeback_at: 0,
            kept: None,
        }
    }

    /// From here on, keeps a copy of each data block it stores compressed, returned by
    /// [`TableBuilder::finish_keeping`]. A block stored uncompressed is not kept: a mapped
    /// table's reader reads it in place, never through the cache.
    pub fn keep_compressed_blocks(&mut self) {
        self.kept.get_or_insert_with(Vec::new);
    }

    /// Adds an entry. Requires: `ikey` is after every key added so far (T1).
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        debug_assert!(
            self.num_entries == 0 || self.options.order.compare(&self.last_key, ikey).is_lt(),
            "table keys out of order"
        );
        if let Some(handle) = self.pending_index.take() {
            self.options
                .order
                .shortest_separator(&mut self.last_key, ikey);
            self.index_block.add(&self.last_key, &handle.encode());
        }
        if let Some(f) = self.filter.as_mut() {
            f.add_key(key::user_key(ikey));
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        self.num_entries += 1;
        self.data_block.add(ikey, value);
        if self.data_block.size_estimate() >= self.options.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Ends the current data block early (it will be the last one for its keys).
    pub fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        let handle = self.write_data_block()?;
        self.pending_index = Some(handle);
        // No flush here (LevelDB flushes after each data block): the file's own buffer
        // goes out when full, so a table costs one write per 64 KiB, not per block; the
        // table counts only once `finish` has synced it.
        if let Some(f) = self.filter.as_mut() {
            f.start_block(self.offset);
        }
        Ok(())
    }

    fn write_data_block(&mut self) -> Result<BlockHandle> {
        let mut block = std::mem::replace(&mut self.data_block, BlockBuilder::new(1));
        let written = self.write_stored(&mut block);
        if let (Ok((handle, Compression::Snappy)), Some(kept)) = (&written, &mut self.kept) {
            // `finish` was called by `write_stored`; it returns the same contents again.
            kept.push(KeptBlock {
                handle: *handle,
                contents: block.finish().to_vec(),
            });
        }
        block.reset();
        self.data_block = block;
        written.map(|(handle, _)| handle)
    }

    /// Finishes `block`, compresses it when that saves at least 1/8, and writes it.
    fn write_block(&mut self, block: &mut BlockBuilder) -> Result<BlockHandle> {
        self.write_stored(block).map(|(handle, _)| handle)
    }

    /// [`TableBuilder::write_block`], and how the block was stored.
    fn write_stored(&mut self, block: &mut BlockBuilder) -> Result<(BlockHandle, Compression)> {
        let raw = block.finish();
        if self.options.compression == Compression::Snappy {
            self.compressed
                .resize(snap::raw::max_compress_len(raw.len()), 0);
            if let Ok(n) = self.snappy.compress(raw, &mut self.compressed)
                && n < raw.len() - raw.len() / 8
            {
                let compressed = std::mem::take(&mut self.compressed);
                let handle = self.write_raw_block(&compressed[..n], Compression::Snappy);
                self.compressed = compressed;
                return handle.map(|h| (h, Compression::Snappy));
            }
        }
        self.write_raw_block(raw, Compression::None)
            .map(|h| (h, Compression::None))
    }

    fn write_raw_block(&mut self, contents: &[u8], ty: Compression) -> Result<BlockHandle> {
        let handle = BlockHandle {
            offset: self.offset,
            size: contents.len() as u64,
        };
        self.file.append(contents)?;
        let crc = checksum::extend(checksum::crc32c(contents), &[ty as u8]);
        let mut trailer = [0u8; BLOCK_TRAILER_SIZE];
        trailer[0] = ty as u8;
        trailer[1..].copy_from_slice(&checksum::mask(crc).to_le_bytes());
        self.file.append(&trailer)?;
        self.offset += (contents.len() + BLOCK_TRAILER_SIZE) as u64;
        if self.offset - self.writeback_at >= WRITEBACK_EVERY {
            // The table goes to the device while it is built, not all at the fdatasync
            // that ends it (which a flush, and so the writer, may be waiting for).
            self.writeback_at = self.offset;
            self.file.start_writeback()?;
        }
        Ok(handle)
    }

    /// Writes the filter, metaindex and index blocks and the footer; flushes (does not
    /// sync) the file. Returns the file and its final size.
    #[cfg(any(test, feature = "internals"))]
    pub fn finish(self) -> Result<(Box<W>, u64)> {
        self.finish_keeping().map(|(file, size, _)| (file, size))
    }

    /// [`TableBuilder::finish`], and the data blocks kept
    /// ([`TableBuilder::keep_compressed_blocks`]; none if it was not called).
    pub fn finish_keeping(mut self) -> Result<(Box<W>, u64, Vec<KeptBlock>)> {
        self.flush_data_block()?;
        let filter_handle = match self.filter.take() {
            Some(mut f) => Some(self.write_raw_block(f.finish(), Compression::None)?),
            None => None,
        };
        let mut meta = BlockBuilder::new(self.options.restart_interval);
        if let (Some(h), Some(policy)) = (filter_handle, &self.options.filter) {
            meta.add(policy.meta_key().as_bytes(), &h.encode());
        }
        let metaindex = self.write_block(&mut meta)?;
        if let Some(handle) = self.pending_index.take() {
            self.options.order.short_successor(&mut self.last_key);
            self.index_block.add(&self.last_key, &handle.encode());
        }
        let mut index_block = std::mem::replace(&mut self.index_block, BlockBuilder::new(1));
        let index = self.write_block(&mut index_block)?;
        let footer = Footer { metaindex, index }.encode();
        self.file.append(&footer)?;
        self.offset += footer.len() as u64;
        self.file.flush()?;
        Ok((self.file, self.offset, self.kept.unwrap_or_default()))
    }

    /// Entries added so far.
    #[cfg(any(test, feature = "internals"))]
    pub fn num_entries(&self) -> u64 {
        self.num_entries
    }

    /// Bytes written so far (an estimate of the final size while building).
    pub fn file_size(&self) -> u64 {
        self.offset
    }
}
