//! [`LevelIter`]: one cursor over a whole level (1 and deeper), whose tables are sorted
//! and disjoint (V1): a concatenation, opening each table only when the cursor gets there.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iter::Cursor;
use crate::key::compare_internal_keys;
use crate::sstable::{BlockReads, TableIter};
use crate::table_cache::TableCache;
use crate::version::FileMeta;

/// A cursor over the tables of one level.
pub struct LevelIter {
    files: Vec<Arc<FileMeta>>,
    table_cache: Arc<TableCache>,
    reads: BlockReads,
    /// Index of the table `current` reads.
    index: usize,
    current: Option<TableIter>,
    err: Option<Error>,
}

impl std::fmt::Debug for LevelIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LevelIter")
            .field("files", &self.files.len())
            .field("index", &self.index)
            .finish()
    }
}

impl LevelIter {
    /// A cursor over `files` (sorted, disjoint).
    pub fn new(files: Vec<Arc<FileMeta>>, table_cache: Arc<TableCache>, reads: BlockReads) -> Self {
        LevelIter {
            files,
            table_cache,
            reads,
            index: 0,
            current: None,
            err: None,
        }
    }

    fn open(&mut self, index: usize) -> bool {
        self.index = index;
        self.current = None;
        if self.err.is_some() {
            return false;
        }
        let Some(f) = self.files.get(index) else {
            return false;
        };
        match self.table_cache.iter(f.number, f.size, self.reads) {
            Ok(it) => {
                self.current = Some(it);
                true
            }
            Err(e) => {
                self.err = Some(e);
                false
            }
        }
    }

    fn check(&mut self) -> bool {
        if let Some(Err(e)) = self.current.as_ref().map(|c| c.status()) {
            self.err = Some(e);
            self.current = None;
        }
        self.err.is_none()
    }

    fn skip_forward(&mut self) {
        while self.check() && self.current.as_ref().is_some_and(|c| !c.valid()) {
            if !self.open(self.index + 1) {
                return;
            }
            if let Some(c) = self.current.as_mut() {
                c.seek_to_first();
            }
        }
    }

    fn skip_backward(&mut self) {
        while self.check() && self.current.as_ref().is_some_and(|c| !c.valid()) {
            if self.index == 0 {
                self.current = None;
                return;
            }
            if !self.open(self.index - 1) {
                return;
            }
            if let Some(c) = self.current.as_mut() {
                c.seek_to_last();
            }
        }
    }
}

impl Cursor for LevelIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.current.as_ref().is_some_and(|c| c.valid())
    }

    fn seek_to_first(&mut self) {
        if self.open(0)
            && let Some(c) = self.current.as_mut()
        {
            c.seek_to_first();
        }
        self.skip_forward();
    }

    fn seek_to_last(&mut self) {
        if !self.files.is_empty()
            && self.open(self.files.len() - 1)
            && let Some(c) = self.current.as_mut()
        {
            c.seek_to_last();
        }
        self.skip_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        let index = self
            .files
            .partition_point(|f| compare_internal_keys(&f.largest, target) == Ordering::Less);
        if self.open(index)
            && let Some(c) = self.current.as_mut()
        {
            c.seek(target);
        }
        self.skip_forward();
    }

    fn next(&mut self) {
        if let Some(c) = self.current.as_mut().filter(|c| c.valid()) {
            c.next();
            self.skip_forward();
        }
    }

    fn prev(&mut self) {
        if let Some(c) = self.current.as_mut().filter(|c| c.valid()) {
            c.prev();
            self.skip_backward();
        }
    }

    fn key(&self) -> &[u8] {
        match &self.current {
            Some(c) if self.err.is_none() => c.key(),
            _ => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match &self.current {
            Some(c) if self.err.is_none() => c.value(),
            _ => &[],
        }
    }

    fn status(&self) -> Result<()> {
        crate::iter::status_of(&self.err)
    }
}
