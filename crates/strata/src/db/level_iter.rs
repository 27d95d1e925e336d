//! [`LevelIter`]: one cursor over a whole level (1 and deeper), whose tables are sorted
//! and disjoint (V1): a concatenation, opening each table only when the cursor gets there.
//! It is the same two-level cursor as a table's ([`TwoLevel`]): the outer cursor walks
//! the level's file list ([`Files`], keyed by each table's largest key, as LevelDB's
//! `LevelFileNumIterator`), and each entry opens a table through the table cache.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::comparator::InternalOrder;
use crate::error::{Error, Result};
use crate::iter::{Cursor, Parts, TwoLevel};
use crate::sstable::{BlockReads, TableIter};
use crate::table_cache::TableCache;
use crate::version::FileMeta;

/// A cursor over the tables of one level.
pub type LevelIter = TwoLevel<Files, LevelParts>;

impl TwoLevel<Files, LevelParts> {
    /// A cursor over `files` (sorted, disjoint), opening tables through `table_cache`.
    pub fn over_level(
        files: Vec<Arc<FileMeta>>,
        table_cache: Arc<TableCache>,
        reads: BlockReads,
    ) -> Self {
        Self::with_parts(
            files,
            LevelParts {
                table_cache,
                open: Opening::Cached(reads),
            },
        )
    }

    /// A cursor for one pass over `files` (a compaction's input): each table is opened
    /// with [`TableCache::scan_once`] and closed when the cursor moves past it.
    pub fn once_over_level(files: Vec<Arc<FileMeta>>, table_cache: Arc<TableCache>) -> Self {
        Self::with_parts(
            files,
            LevelParts {
                table_cache,
                open: Opening::Once,
            },
        )
    }

    fn with_parts(files: Vec<Arc<FileMeta>>, parts: LevelParts) -> Self {
        TwoLevel::new(
            Files {
                files,
                at: usize::MAX,
                value: [0; 16],
                order: parts.table_cache.order().clone(),
            },
            parts,
        )
    }
}

/// A cursor over a level's file list: an entry per table, its key the table's largest key,
/// its value the table's number and size (8 bytes each, little-endian).
#[derive(Debug)]
pub struct Files {
    files: Vec<Arc<FileMeta>>,
    /// The current table; `usize::MAX` (or past the end) when not valid.
    at: usize,
    value: [u8; 16],
    order: InternalOrder,
}

impl Files {
    fn go(&mut self, at: usize) {
        self.at = at;
        if let Some(f) = self.files.get(at) {
            self.value[..8].copy_from_slice(&f.number.to_le_bytes());
            self.value[8..].copy_from_slice(&f.size.to_le_bytes());
        }
    }
}

impl Cursor for Files {
    fn valid(&self) -> bool {
        self.at < self.files.len()
    }
    fn seek_to_first(&mut self) {
        self.go(0);
    }
    fn seek_to_last(&mut self) {
        self.go(self.files.len().wrapping_sub(1));
    }
    fn seek(&mut self, target: &[u8]) {
        let at = self
            .files
            .partition_point(|f| self.order.compare(&f.largest, target) == Ordering::Less);
        self.go(at);
    }
    fn next(&mut self) {
        if self.valid() {
            self.go(self.at + 1);
        }
    }
    fn prev(&mut self) {
        if self.valid() {
            self.go(self.at.wrapping_sub(1));
        }
    }
    fn key(&self) -> &[u8] {
        self.files.get(self.at).map_or(&[], |f| &f.largest)
    }
    fn value(&self) -> &[u8] {
        if self.valid() { &self.value } else { &[] }
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

/// How a level's cursor opens its parts: tables, through the table cache.
#[derive(Debug)]
pub struct LevelParts {
    table_cache: Arc<TableCache>,
    open: Opening,
}

/// How a level's tables are opened.
#[derive(Debug, Clone, Copy)]
enum Opening {
    /// Through the table cache, reading blocks as given.
    Cached(BlockReads),
    /// For this pass only ([`TableCache::scan_once`]).
    Once,
}

impl Parts for LevelParts {
    type Part = TableIter;

    fn open(&self, value: &[u8]) -> Result<TableIter> {
        let word = |at: usize| {
            value
                .get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_le_bytes)
                .ok_or_else(|| Error::corruption("", 0, "bad file entry in a level cursor"))
        };
        match self.open {
            Opening::Cached(reads) => self.table_cache.iter(word(0)?, word(8)?, reads),
            Opening::Once => self.table_cache.scan_once(word(0)?, word(8)?),
        }
    }
}
