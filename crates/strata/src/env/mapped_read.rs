//! [`MappedRead`]: a table file read through a read-only shared memory map, so reading a
//! block is a look at memory the page cache already holds, not a `pread` call and a copy
//! (LevelDB 1.23 reads its tables the same way, up to 1,000 of them at once on 64-bit
//! machines). The block decoder checks and decompresses straight from the map.
//!
//! A table is never written after it is complete, so its map only ever shows the bytes
//! the table was written with. The map covers the file's length when it was opened;
//! reads past it are refused with an error like a short `pread`, so a table truncated
//! while the database was closed gives an error, never a crash. A table truncated by
//! another process while the database has it open is outside what a map can survive: the
//! next read of a lost page stops the process with `SIGBUS` (`docs/durability.md`,
//! limits). Deleting a mapped table is fine: the map keeps its pages until it is dropped.
//!
//! A block stored uncompressed can be read in place ([`MappedBytes`]): it shares the map,
//! which stays until the file and the last such block are gone, so a block a reader
//! holds stays readable even after its table is closed or deleted.
//!
//! Invariants:
//! - R1 `ptr` maps file bytes `[0, len)` read-only for the whole life of the `Map` (shared
//!   by the file and every `MappedBytes` cut from it) and is unmapped exactly once, in
//!   `Drop`.
//! - R2 nothing writes through the map (it is mapped `PROT_READ`), so the shared slices
//!   handed out never change under a reader while the file is left alone.
//!
//! With `mapped.rs`, the only `unsafe` code of the filesystem seam. Miri cannot run these
//! tests (no file-backed `mmap`); they run natively in `make test` and under the
//! sanitizers in `make sanitize`.

#![allow(unsafe_code)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;

use rustix::mm::{MapFlags, ProtFlags};

use super::RandomAccessFile;
use crate::error::{Error, Result};

/// A whole file mapped read-only: shared by its [`MappedRead`] and every
/// [`MappedBytes`] cut from it, unmapped when the last of them is dropped.
struct Map {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the map is read-only (R2) and lives as long as the value (R1): sharing the
// pointer between threads shares nothing but reads of bytes that do not change.
unsafe impl Send for Map {}
// SAFETY: as above; `&self` methods only read through the map.
unsafe impl Sync for Map {}

impl Map {
    fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes for as long as `self` lives (R1), and
        // nothing writes them (R2), so a shared slice tied to `&self` is sound.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` came from `mmap` and are unmapped only here, once (R1); no
        // slice into the map outlives `&self`, so none is left.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// A whole table file mapped read-only.
pub(super) struct MappedRead {
    map: Arc<Map>,
    path: PathBuf,
}

/// A range of a mapped file's bytes that keeps the map alive: a block read in place
/// outlives neither its bytes nor, through them, anything else (R1).
#[derive(Clone)]
pub struct MappedBytes {
    map: Arc<Map>,
    start: usize,
    end: usize,
}

impl std::ops::Deref for MappedBytes {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        // In range: `MappedRead::map_range` checked `start <= end <= len`.
        self.map.bytes().get(self.start..self.end).unwrap_or(&[])
    }
}

impl MappedBytes {
    /// Bytes `start..end` of the range (clamped to it).
    pub fn range(mut self, start: usize, end: usize) -> MappedBytes {
        let len = self.end - self.start;
        let (start, end) = (start.min(len), end.min(len));
        self.end = self.start + end.max(start);
        self.start += start;
        self
    }

    /// The first `len` bytes of the range (all of them when it is shorter).
    pub fn prefix(self, len: usize) -> MappedBytes {
        self.range(0, len)
    }
}

impl std::fmt::Debug for MappedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MappedBytes({}..{})", self.start, self.end)
    }
}

impl MappedRead {
    /// Maps `file` (at `path`) whole. `None` for an empty file, which has nothing to map
    /// (the caller reads it the usual way).
    pub(super) fn open(file: &File, path: &Path) -> Result<Option<MappedRead>> {
        let io_err =
            |call: &str, e: std::io::Error| Error::io(format!("{call} {}", path.display()), e);
        let len = file.metadata().map_err(|e| io_err("stat", e))?.len();
        let len = usize::try_from(len)
            .map_err(|_| io_err("mmap", std::io::Error::other("file too large to map")))?;
        if len == 0 {
            return Ok(None);
        }
        // SAFETY: a fresh read-only mapping at an address the kernel picks (null hint):
        // it aliases no Rust object (R1, R2).
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ,
                MapFlags::SHARED,
                file,
                0,
            )
        }
        .map_err(|e| io_err("mmap", e.into()))?;
        let ptr = NonNull::new(ptr.cast::<u8>())
            .ok_or_else(|| io_err("mmap", std::io::Error::other("null mapping")))?;
        Ok(Some(MappedRead {
            map: Arc::new(Map { ptr, len }),
            path: path.to_path_buf(),
        }))
    }

    fn bytes(&self) -> &[u8] {
        self.map.bytes()
    }
}

impl RandomAccessFile for MappedRead {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let bytes = self.bytes();
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        let n = buf.len().min(bytes.len() - start);
        buf[..n].copy_from_slice(&bytes[start..start + n]);
        Ok(n)
    }

    fn mapped(&self) -> Option<&[u8]> {
        Some(self.bytes())
    }

    fn map_range(&self, offset: u64, len: usize) -> Option<MappedBytes> {
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(len).filter(|&e| e <= self.map.len)?;
        Some(MappedBytes {
            map: Arc::clone(&self.map),
            start,
            end,
        })
    }

    fn release(&self, offset: u64, len: u64) {
        // Whole pages only: from the page `offset` lies on to the range's end (or the
        // map's: the kernel rounds a length up to the page).
        let page = rustix::param::page_size();
        let Ok(start) = usize::try_from(offset) else {
            return;
        };
        let end = usize::try_from(offset.saturating_add(len))
            .unwrap_or(usize::MAX)
            .min(self.map.len);
        let start = start / page * page;
        if start >= end {
            return;
        }
        // SAFETY: `[start, end)` lies inside the mapping (R1: `end <= len`), and `start`
        // is a multiple of the page size from the map's base, which `mmap` returned
        // page-aligned. `MADV_DONTNEED` on a shared file mapping only drops this process's
        // page-table entries for those pages: the next read of any of their bytes maps
        // the same page-cache page again, with the same bytes (R2: nothing writes them),
        // so every slice into the map that any thread holds stays valid and unchanged.
        // A failure (it cannot fail on a valid range) only leaves the pages resident.
        let _ = unsafe {
            rustix::mm::madvise(
                self.map.ptr.as_ptr().add(start).cast(),
                end - start,
                rustix::mm::Advice::LinuxDontNeed,
            )
        };
    }
}

impl std::fmt::Debug for MappedRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedRead")
            .field("path", &self.path)
            .field("len", &self.map.len)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn mapped(contents: &[u8]) -> (tempfile::TempDir, Option<MappedRead>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ldb");
        std::fs::write(&path, contents).unwrap();
        let file = File::open(&path).unwrap();
        let m = MappedRead::open(&file, &path).unwrap();
        (dir, m)
    }

    #[test]
    fn reads_what_the_file_holds_and_stops_at_its_end() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let (_dir, m) = mapped(&data);
        let m = m.unwrap();
        assert_eq!(m.mapped().unwrap(), &data[..]);
        let mut buf = [0u8; 100];
        assert_eq!(m.read_at(9_950, &mut buf).unwrap(), 50);
        assert_eq!(&buf[..50], &data[9_950..]);
        assert_eq!(m.read_at(10_000, &mut buf).unwrap(), 0);
        assert_eq!(m.read_at(u64::MAX, &mut buf).unwrap(), 0);
        assert_eq!(m.read_at(0, &mut buf).unwrap(), 100);
        assert_eq!(&buf[..], &data[..100]);
    }

    #[test]
    fn released_pages_leave_the_resident_set_and_read_the_same_again() {
        let data: Vec<u8> = (0..256 * 1024u32).map(|i| (i % 253) as u8).collect();
        let (dir, m) = mapped(&data);
        let m = m.unwrap();
        let path = dir.path().join("t.ldb");
        crate::sstable::format::touch_lines(m.mapped().unwrap());
        let all = crate::env::resident_kb(&path);
        assert!(all >= 200, "every page touched: {all} kB resident");
        // Part of the range: whole pages from the one 100,000 lies on to 150,000.
        m.release(100_000, 50_000);
        let part = crate::env::resident_kb(&path);
        assert!(
            part <= all - 40 && part >= all - 56,
            "{all} kB -> {part} kB after releasing about 50 kB"
        );
        m.release(0, data.len() as u64);
        assert_eq!(crate::env::resident_kb(&path), 0);
        // The bytes are all still there, and a range past the end is ignored.
        assert_eq!(m.mapped().unwrap(), &data[..]);
        m.release(data.len() as u64 + 10, 100);
        m.release(u64::MAX, u64::MAX);
    }

    #[test]
    fn a_range_of_a_range_is_clamped_to_it() {
        let data: Vec<u8> = (0..200u8).collect();
        let (_dir, m) = mapped(&data);
        let bytes = m.unwrap().map_range(50, 100).unwrap();
        assert_eq!(&bytes.clone().range(10, 20)[..], &data[60..70]);
        assert_eq!(&bytes.clone().range(0, 100)[..], &data[50..150]);
        assert_eq!(&bytes.clone().range(90, 500)[..], &data[140..150]);
        assert!(bytes.clone().range(120, 130).is_empty());
        assert!(bytes.clone().range(30, 20).is_empty());
    }

    #[test]
    fn an_empty_file_is_not_mapped() {
        let (_dir, m) = mapped(b"");
        assert!(m.is_none());
    }

    #[test]
    fn a_deleted_file_stays_readable_through_its_map() {
        let (dir, m) = mapped(b"still here");
        std::fs::remove_file(dir.path().join("t.ldb")).unwrap();
        assert_eq!(m.unwrap().mapped().unwrap(), b"still here");
    }
}
