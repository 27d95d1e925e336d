//! The filesystem seam: every byte the engine reads or writes goes through [`Env`].
//!
//! [`DiskEnv`] is the real filesystem; [`MemEnv`] keeps files in memory for tests and
//! benchmarks. Fault-injecting and crash-simulating filesystems (`crate::testing`) are
//! further implementations of the same traits, so no engine code touches `std::fs`
//! directly.
//!
//! Contracts every implementation keeps:
//! - E1 `RandomAccessFile::read_at` fills the buffer unless the file ends first; it returns
//!   fewer bytes only at end of file.
//! - E2 `SequentialFile::read` returns 0 only at end of file.
//! - E3 bytes given to `WritableFile::append` are visible to readers of the same `Env`
//!   after `flush`; they are durable after `sync` returns `Ok`.
//! - E4 a file lock excludes every other holder, in this process or another, until the
//!   [`FileLock`] is dropped.

#[cfg(any(test, feature = "testing"))]
pub(crate) mod crash;
mod disk;
#[cfg(any(test, feature = "testing"))]
pub(crate) mod fault;
mod mapped;
mod mapped_read;
mod mem;
mod writeback;

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

pub use disk::DiskEnv;
pub use mapped_read::MappedBytes;
pub use mem::MemEnv;

use crate::error::Result;

/// Copies `from` to a new file `to` through `env`, the copy's bytes synced.
pub fn copy_file<E: Env + ?Sized>(env: &E, from: &Path, to: &Path) -> Result<()> {
    let mut src = env.new_sequential(from)?;
    let mut dst = env.new_writable(to)?;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = src.read(&mut buf)?;
        if n == 0 {
            break;
        }
        dst.append(&buf[..n])?;
    }
    dst.flush()?;
    dst.sync()
}

/// A file read from start to end (logs and manifests during recovery).
pub trait SequentialFile: Send {
    /// Reads up to `buf.len()` bytes; 0 means end of file.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize>;
}

/// A file read at arbitrary offsets by many threads at once (tables).
pub trait RandomAccessFile: Send + Sync {
    /// Reads into `buf` from `offset`; fewer bytes than asked only at end of file.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize>;
    /// The whole file as memory, when it is mapped: readers then look at its bytes in
    /// place instead of copying them out with [`RandomAccessFile::read_at`]. `None` by
    /// default.
    fn mapped(&self) -> Option<&[u8]> {
        None
    }
    /// Bytes `[offset, offset + len)` of a mapped file as a value that keeps the map alive
    /// (a block read in place); `None` when the file is not mapped or the range runs past
    /// its end. `None` by default.
    fn map_range(&self, offset: u64, len: usize) -> Option<MappedBytes> {
        let _ = (offset, len);
        None
    }
    /// A hint that bytes `[offset, offset + len)` are not about to be read again (a
    /// table's index and filter, copied out at its open; what a compaction's pass over an
    /// input has gone by): a mapped file lets the pages they lie on leave the process's
    /// resident set. They stay in the page cache, and a later read of them maps them
    /// again and sees the same bytes. Nothing by default.
    fn release(&self, offset: u64, len: u64) {
        let _ = (offset, len);
    }
}

/// Bytes a blob file or a table appends between two early writebacks
/// ([`WritableFile::start_writeback`]).
pub const WRITEBACK_EVERY: u64 = 1 << 20;

/// A file written by appending (logs, manifests, tables).
pub trait WritableFile: Send {
    /// Appends `data`; it may sit in a buffer until [`WritableFile::flush`].
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Appends `parts` one after another, exactly as one [`WritableFile::append`] each
    /// would (a record's header and body, say); a file may hand them to the operating
    /// system in one call. The default appends them one by one.
    fn append_parts(&mut self, parts: &[&[u8]]) -> Result<()> {
        parts.iter().try_for_each(|p| self.append(p))
    }
    /// Hands buffered bytes to the operating system.
    fn flush(&mut self) -> Result<()>;
    /// Flushes, then makes the file's contents durable.
    fn sync(&mut self) -> Result<()>;
    /// A hint: flushes, then lets the operating system start writing what was appended
    /// to the device, without waiting (RocksDB's `bytes_per_sync`). It promises nothing
    /// about durability; a later [`WritableFile::sync`] then has less left to write. The
    /// default only flushes.
    fn start_writeback(&mut self) -> Result<()> {
        self.flush()
    }
    /// A hint: nothing more will be appended for a while (a log after its switch), so the
    /// file may let go of what it holds for appending. Its bytes and the calls allowed
    /// stay the same; a mapped log unmaps its window, so that writing its pages back
    /// later (a flush's sync) needs no write-protection of mapped pages. The default does
    /// nothing.
    fn seal(&mut self) {}
}

/// Holds a database's `LOCK` file; the lock is released on drop.
pub trait FileLock: Send + Sync + Debug {}

/// The filesystem operations the engine needs.
pub trait Env: Send + Sync + Debug {
    /// Opens an existing file for reading from the start.
    fn new_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>>;
    /// Opens an existing file for positioned reads.
    fn new_random_access(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// Creates `path`, or truncates it, for writing.
    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Opens `path` for appending, creating it when missing.
    fn new_appendable(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Creates `path`, or truncates it, for a write-ahead log: many small appends, each
    /// flushed. An implementation may preallocate the file and leave zeros past the
    /// appended bytes until the file is dropped (readers take a zero tail for the end of
    /// the log); by default it is [`Env::new_writable`].
    fn new_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.new_writable(path)
    }
    /// Opens a table file for reading. An implementation may map it into memory
    /// ([`RandomAccessFile::mapped`]); by default it is [`Env::new_random_access`].
    fn new_table_reader(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.new_random_access(path)
    }
    /// True if `path` exists.
    fn exists(&self, path: &Path) -> bool;
    /// The names (not paths) of the entries in `dir`.
    fn children(&self, dir: &Path) -> Result<Vec<String>>;
    /// Size of the file in bytes.
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// Deletes a file.
    fn remove_file(&self, path: &Path) -> Result<()>;
    /// Creates a directory and its parents.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Removes an empty directory.
    fn remove_dir(&self, dir: &Path) -> Result<()>;
    /// Renames `from` to `to`, replacing `to` atomically if it exists.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Makes `to` a file with `from`'s bytes (`from` must not change afterwards: an
    /// immutable table): a hard link where the filesystem has them, otherwise a copy whose
    /// bytes are synced. Either way `to` is durable once its directory is synced. The
    /// default copies ([`copy_file`]).
    fn link_file(&self, from: &Path, to: &Path) -> Result<()> {
        copy_file(self, from, to)
    }
    /// Frees the disk blocks under each `(offset, len)` range of the file at `path`, which
    /// then reads as zeros there while its length stays (`FALLOC_FL_PUNCH_HOLE`). Returns
    /// the bytes freed: 0 where the filesystem cannot punch holes, and 0 without touching
    /// the file where it has other hard links (a checkpoint's: see
    /// [`Env::link_file`], whose files must not change). The ranges are the caller's to
    /// choose: every byte in them is lost. The default frees nothing.
    fn punch_holes(&self, path: &Path, ranges: &[(u64, u64)]) -> Result<u64> {
        let _ = (path, ranges);
        Ok(0)
    }
    /// Makes the directory's entries (creations, renames, deletions) durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Takes the exclusive lock on `path`, creating the file if needed.
    fn lock_file(&self, path: &Path) -> Result<Box<dyn FileLock>>;
}

impl WritableFile for Vec<u8> {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
}

/// A byte slice read sequentially (tests and tools).
impl SequentialFile for std::io::Cursor<Vec<u8>> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        std::io::Read::read(self, buf).map_err(|e| crate::Error::io("read from memory", e))
    }
}

/// A byte vector read at offsets (tests and tools).
impl RandomAccessFile for Vec<u8> {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.len());
        let src = self.get(start..).unwrap_or_default();
        let n = src.len().min(buf.len());
        buf[..n].copy_from_slice(&src[..n]);
        Ok(n)
    }
}

/// Kilobytes of this process's resident set in its maps of `path` (`/proc/self/smaps`).
#[cfg(test)]
pub(crate) fn resident_kb(path: &Path) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
    let name = path.to_string_lossy();
    let mut ours = false;
    let mut kb = 0;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            ours = line.ends_with(name.as_ref());
        } else if ours && let Some(rest) = line.strip_prefix("Rss:") {
            kb += rest
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .unwrap_or(0);
        }
    }
    kb
}
