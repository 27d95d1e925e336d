//! [`MappedLog`]: a write-ahead log file written through a shared memory map, so an append
//! is a copy into the page cache instead of a `write(2)` call.
//!
//! The file is mapped one window at a time (`MAP_SHARED`) and grown ahead of the writer by
//! writing zeros (`pwrite`, a chunk at a time): the pages are then in the page cache with
//! their blocks reserved, so a store into the map is a plain copy (a page first touched
//! takes a minor fault) and a full disk shows as an error from `pwrite`, never as a
//! `SIGBUS`. A byte copied into the map is in the operating system's page cache at once,
//! exactly where `write(2)` would have put it: a process that dies (even by `kill -9`)
//! leaves it to the kernel, which writes it back (C2). `sync` is `fdatasync`, which writes
//! back pages dirtied through a map as it does those dirtied by `write(2)` (C1). Dropping
//! the file unmaps it and cuts the file to the bytes appended, so a log closed in order has
//! no zero tail; a log whose writer died keeps one (at most [`CHUNK`] bytes), which readers
//! take for the end of the log (L4; LevelDB's reader skips zero-filled blocks for the same
//! reason: its older versions wrote logs this way).
//!
//! An append of at least [`DIRECT`] bytes (a large value's blob record, a full log
//! fragment) is written with one `pwritev` at the end instead: the bytes land in the same
//! page cache pages, but without the zeros written ahead of them, the page faults, and
//! the write-protection that writeback of a page stored to through a map costs (one TLB
//! shootdown per page, an interrupt of the other cores). Small appends after it go through
//! the map again, the zeros written ahead from where it ended. For the same reason the
//! window is unmapped before pages are written back on request
//! ([`WritableFile::start_writeback`]) and when the log is sealed after its switch
//! ([`WritableFile::seal`]): a later flush's `fdatasync` then finds no mapped page to
//! write-protect. An append after either maps a window again.
//!
//! Only filesystems that update files in place get a map ([`maps_safely`]): on a
//! copy-on-write filesystem a store into an already written page needs new blocks, and a
//! full disk would kill the process with `SIGBUS`. Elsewhere the caller writes the log with
//! `write(2)`.
//!
//! Invariants:
//! - W1 `window` (when present) maps file bytes `[window.offset, window.offset + WINDOW)`;
//!   only bytes below `filled` are ever stored to, and the file holds at least `filled`
//!   bytes, written (zeros at first), so every page stored to is in the file and has its
//!   blocks.
//! - W2 `len` is the number of bytes appended; `len <= filled`; the file's bytes from `len`
//!   on are zeros.
//! - W3 the map is only ever written through `append`, by the one owner of this value
//!   (`&mut self`); no reference into it outlives a call.
//!
//! This is the only module of the engine's filesystem seam with `unsafe` code (the map and
//! the copy into it). Miri cannot run its tests: it has no file-backed `mmap`. The tests
//! below run natively in `make test` and under the sanitizers in `make sanitize`.

#![allow(unsafe_code)]

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use rustix::mm::{MapFlags, ProtFlags};

use super::WritableFile;
use crate::error::{Error, Result};

/// Bytes mapped at a time: a multiple of every page size in use. The window's written
/// pages count in the process's resident set while it is mapped; 1 MiB held about 1 MB
/// more at a fillseq's peak than 256 KiB, and was no faster (A/B, 5 rounds, 2026-11-26).
pub(super) const WINDOW: usize = 256 << 10;
/// Bytes of zeros written ahead of the writer at a time; divides `WINDOW`.
pub(super) const CHUNK: usize = 64 << 10;
/// Appends of at least this many bytes are written with `pwritev` instead of through the
/// map (see the module docs).
pub(super) const DIRECT: usize = 16 << 10;
const _: () = assert!(WINDOW.is_multiple_of(CHUNK));

static ZEROS: [u8; CHUNK] = [0; CHUNK];

/// One mapped window of the file.
struct Window {
    ptr: NonNull<u8>,
    /// File offset of the window's first byte (a multiple of `WINDOW`).
    offset: u64,
}

/// A log file appended through a shared memory map (see the module docs).
pub(super) struct MappedLog {
    file: File,
    path: PathBuf,
    window: Option<Window>,
    /// Bytes appended (W2).
    len: u64,
    /// Bytes of the file written so far, data and zeros ahead of it (W1).
    filled: u64,
    /// A large append failed, perhaps part-way: the bytes from `len` on may hold part of
    /// it, so no append is taken again (W2; the engine stops writing a log after a failed
    /// append anyway). Dropping the log cuts them off.
    failed: bool,
}

// SAFETY: the map is owned by this value alone (W3): moving it to another thread moves
// the only way to reach the mapped memory.
unsafe impl Send for MappedLog {}

fn io_err(call: &str, path: &Path, e: std::io::Error) -> Error {
    Error::io(format!("{call} {}", path.display()), e)
}

/// True if stores into a shared map of a file on `file`'s filesystem cannot fail for want
/// of space once the page was written: filesystems that overwrite in place (ext2/3/4, XFS,
/// tmpfs). Copy-on-write ones (Btrfs, ZFS, ...) and anything unknown get `write(2)`.
pub(super) fn maps_safely(file: &File) -> bool {
    const EXT4: u64 = 0xEF53;
    const XFS: u64 = 0x5846_5342;
    const TMPFS: u64 = 0x0102_1994;
    rustix::fs::fstatfs(file).is_ok_and(|s| matches!(s.f_type as u64, EXT4 | XFS | TMPFS))
}

impl MappedLog {
    /// A mapped log on the new, empty `file` (open for reading and writing), or `Ok(None)`
    /// if its filesystem does not map safely (then the caller uses `write(2)`).
    pub(super) fn create(file: File, path: &Path) -> Result<Option<MappedLog>> {
        if !maps_safely(&file) {
            return Ok(None);
        }
        let mut log = MappedLog {
            file,
            path: path.to_path_buf(),
            window: None,
            len: 0,
            filled: 0,
            failed: false,
        };
        log.map_at(0)?;
        Ok(Some(log))
    }

    /// Maps the window that starts at `offset` (W1; its pages are filled as needed).
    fn map_at(&mut self, offset: u64) -> Result<()> {
        self.unmap()?;
        // SAFETY: a fresh mapping chosen by the kernel (null hint), so it aliases no Rust
        // object. Part of it may lie past the end of the file: those pages are never
        // touched until `fill_to` has written them (W1).
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                WINDOW,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                &self.file,
                offset,
            )
        }
        .map_err(|e| io_err("mmap", &self.path, e.into()))?;
        let ptr = NonNull::new(ptr.cast::<u8>())
            .ok_or_else(|| io_err("mmap", &self.path, std::io::Error::other("null mapping")))?;
        self.window = Some(Window { ptr, offset });
        Ok(())
    }

    /// Writes zeros, a chunk at a time, until the file holds at least `end` bytes (W1).
    fn fill_to(&mut self, end: u64) -> Result<()> {
        while self.filled < end {
            self.file
                .write_all_at(&ZEROS, self.filled)
                .map_err(|e| io_err("pwrite", &self.path, e))?;
            self.filled += CHUNK as u64;
        }
        Ok(())
    }

    /// Writes `parts` at `len` with `pwritev` (a large append, [`DIRECT`]): the bytes land
    /// in the page cache where a copy into the map would have put them, without the zeros
    /// written ahead, the page faults, or the write-protection (one TLB shootdown per
    /// page) that writeback of a mapped page costs. Past `filled` they grow the file, so
    /// W1 and W2 hold after it: the file holds `len` bytes at least, zeros from `len` on.
    /// `total` is the parts' length. A failure leaves the log `failed`.
    fn write_at_end(&mut self, parts: &[&[u8]], total: usize) -> Result<()> {
        let mut done = 0;
        while done < total {
            let slices = unwritten(parts, done);
            let e = match rustix::io::pwritev(&self.file, &slices, self.len + done as u64) {
                Ok(0) => std::io::Error::from(std::io::ErrorKind::WriteZero),
                Ok(n) => {
                    done += n;
                    continue;
                }
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => e.into(),
            };
            self.failed = true;
            return Err(io_err("pwritev", &self.path, e));
        }
        self.len += total as u64;
        self.filled = self.filled.max(self.len);
        Ok(())
    }

    fn unmap(&mut self) -> Result<()> {
        if let Some(w) = self.window.take() {
            // SAFETY: `w` came from `mmap` with length `WINDOW` and was unmapped never
            // before (it is taken out of `self.window`); no reference into it is alive
            // (W3).
            unsafe { rustix::mm::munmap(w.ptr.as_ptr().cast(), WINDOW) }
                .map_err(|e| io_err("munmap", &self.path, e.into()))?;
        }
        Ok(())
    }
}

/// What is left of `parts` once their first `done` bytes are written: the first part
/// not written whole, cut where the writing stopped, and every one after it.
fn unwritten<'a>(parts: &[&'a [u8]], mut done: usize) -> Vec<std::io::IoSlice<'a>> {
    let mut left = Vec::with_capacity(parts.len());
    for p in parts {
        if done >= p.len() {
            done -= p.len();
        } else {
            left.push(std::io::IoSlice::new(&p[done..]));
            done = 0;
        }
    }
    left
}

impl WritableFile for MappedLog {
    fn append(&mut self, mut data: &[u8]) -> Result<()> {
        if self.failed {
            let e = std::io::Error::other("an earlier append failed part-way");
            return Err(io_err("append", &self.path, e));
        }
        if data.len() >= DIRECT {
            return self.write_at_end(&[data], data.len());
        }
        while !data.is_empty() {
            let (ptr, offset) = match &self.window {
                Some(w) if self.len < w.offset + WINDOW as u64 => (w.ptr, w.offset),
                _ => {
                    // The window is full (or was lost to an error): map the one that
                    // holds the next byte.
                    self.map_at(self.len - self.len % WINDOW as u64)?;
                    continue;
                }
            };
            let at = (self.len - offset) as usize;
            let n = data.len().min(WINDOW - at);
            self.fill_to(self.len + n as u64)?;
            // SAFETY: `at + n <= WINDOW`, so the destination lies inside the live mapping,
            // and below `filled`, so inside the file (W1); the source is a Rust slice,
            // which cannot overlap the map because no reference into the map is ever
            // handed out (W3).
            unsafe {
                std::ptr::copy_nonoverlapping(data.as_ptr(), ptr.as_ptr().add(at), n);
            }
            self.len += n as u64;
            data = &data[n..];
        }
        Ok(())
    }

    fn append_parts(&mut self, parts: &[&[u8]]) -> Result<()> {
        let total = parts.iter().map(|p| p.len()).sum();
        if !self.failed && total >= DIRECT {
            return self.write_at_end(parts, total);
        }
        parts.iter().try_for_each(|p| self.append(p))
    }

    fn flush(&mut self) -> Result<()> {
        // Bytes in the map are already in the page cache: visible to every reader of the
        // file (E3) and the kernel's to write back.
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        // fdatasync writes back the pages dirtied through the map, and the file's size.
        self.file
            .sync_data()
            .map_err(|e| io_err("fdatasync", &self.path, e))
    }

    fn seal(&mut self) {
        // Best effort: a failed `munmap` leaves the window mapped until the process ends,
        // which costs address space only; the next append maps a window again (W1).
        let _ = self.unmap();
    }

    fn start_writeback(&mut self) -> Result<()> {
        // Pages dirtied through a shared map are in the page cache's dirty set like any
        // others: the kernel starts writing them as for `write(2)`. The window is
        // unmapped first, so that writing its pages back needs no write-protection of
        // each (a TLB shootdown per page); the next small append maps it again. A hint as
        // `seal` is: a failed `munmap` costs address space only.
        let _ = self.unmap();
        super::writeback::start(&self.file);
        Ok(())
    }
}

impl Drop for MappedLog {
    fn drop(&mut self) {
        // Best effort, as for any file dropped without a sync: the zero tail left by a
        // failure here reads as the end of the log (L4).
        if self.unmap().is_ok() {
            let _ = self.file.set_len(self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    fn create(path: &Path) -> MappedLog {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .unwrap();
        MappedLog::create(file, path).unwrap().unwrap()
    }

    #[test]
    fn appends_across_windows_and_cuts_the_tail_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("000003.log");
        let mut log = create(&p);
        let mut expected = Vec::new();
        // Pieces of every size, some larger than a window, crossing several boundaries.
        for (i, size) in [1usize, 7, 4096, WINDOW - 5000, 3 * WINDOW + 11, 100, 1]
            .into_iter()
            .enumerate()
        {
            let piece: Vec<u8> = (0..size).map(|j| (i * 31 + j * 7) as u8 | 1).collect();
            log.append(&piece).unwrap();
            expected.extend_from_slice(&piece);
            log.flush().unwrap();
            // Visible through the file at once, before any sync, followed by zeros only.
            let on_disk = std::fs::read(&p).unwrap();
            assert!(on_disk.len() as u64 >= expected.len() as u64);
            assert_eq!(&on_disk[..expected.len()], &expected[..]);
            assert!(on_disk[expected.len()..].iter().all(|&b| b == 0));
            assert!(
                on_disk.len() - expected.len() < CHUNK,
                "at most a chunk ahead"
            );
        }
        log.sync().unwrap();
        drop(log);
        assert_eq!(std::fs::read(&p).unwrap(), expected);
    }

    #[test]
    fn large_appends_bypass_the_map_and_small_ones_continue_after_them() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("000006.log");
        let mut log = create(&p);
        let mut expected = Vec::new();
        let mut add = |log: &mut MappedLog, parts: &[&[u8]]| {
            log.append_parts(parts).unwrap();
            for part in parts {
                expected.extend_from_slice(part);
            }
            let on_disk = std::fs::read(&p).unwrap();
            assert_eq!(&on_disk[..expected.len()], &expected[..]);
            assert!(on_disk[expected.len()..].iter().all(|&b| b == 0));
            assert!(on_disk.len() - expected.len() < CHUNK);
        };
        let big = |n: usize, seed: u8| -> Vec<u8> {
            (0..n)
                .map(|j| (j as u8).wrapping_mul(13) ^ seed | 1)
                .collect()
        };
        // Small (mapped), then a large one that ends inside the zeros written ahead,
        // then small ones on the same page, then large ones that grow the file past the
        // window and past everything filled, each followed by a small one.
        add(&mut log, &[b"head", b"key"]);
        add(&mut log, &[b"h", &big(DIRECT, 1), b"t"]);
        add(&mut log, &[b"abc"]);
        add(&mut log, &[&big(100, 2), &big(WINDOW, 3)]);
        add(&mut log, &[b"after a window"]);
        add(&mut log, &[&big(3 * CHUNK + 5, 4)]);
        add(&mut log, &[b"x"]);
        add(&mut log, &[&big(DIRECT - 1, 5)]);
        add(&mut log, &[&big(WINDOW - 3, 6), &[]]);
        log.sync().unwrap();
        drop(log);
        assert_eq!(std::fs::read(&p).unwrap(), expected);
    }

    #[test]
    fn a_sealed_log_lets_go_of_its_map_and_still_appends() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("000007.log");
        let mut log = create(&p);
        log.append(b"before the seal").unwrap();
        log.seal();
        assert!(log.window.is_none(), "sealed: no window mapped");
        // Sealing is a hint: a later append maps a window again, after the same bytes.
        log.append(b", after it").unwrap();
        assert!(log.window.is_some());
        // Early writeback lets go of the window too.
        log.start_writeback().unwrap();
        assert!(log.window.is_none(), "written back: no window mapped");
        log.append(b"!").unwrap();
        log.seal();
        log.sync().unwrap();
        drop(log);
        assert_eq!(std::fs::read(&p).unwrap(), b"before the seal, after it!");
    }

    #[test]
    fn unwritten_parts_start_where_the_writing_stopped() {
        let parts: [&[u8]; 3] = [b"ab", b"", b"cdef"];
        let left =
            |done| -> Vec<Vec<u8>> { unwritten(&parts, done).iter().map(|s| s.to_vec()).collect() };
        // Empty parts are left out: there is nothing of them to write.
        assert_eq!(left(0), [b"ab".to_vec(), b"cdef".to_vec()]);
        assert_eq!(left(1), [b"b".to_vec(), b"cdef".to_vec()]);
        assert_eq!(left(2), [b"cdef".to_vec()]);
        assert_eq!(left(5), [b"f".to_vec()]);
        assert!(left(6).is_empty());
    }

    #[test]
    fn an_empty_log_is_cut_to_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("000004.log");
        drop(create(&p));
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 0);
    }

    #[test]
    fn a_window_exactly_filled_maps_the_next_one_only_when_written() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("000005.log");
        let mut log = create(&p);
        // Through the map: pieces below the size written directly.
        for _ in 0..WINDOW / 4096 {
            log.append(&[9u8; 4096]).unwrap();
        }
        assert_eq!(std::fs::metadata(&p).unwrap().len(), WINDOW as u64);
        log.append(b"x").unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().len(),
            (WINDOW + CHUNK) as u64
        );
        drop(log);
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(bytes.len(), WINDOW + 1);
        assert!(bytes[..WINDOW].iter().all(|&b| b == 9));
        assert_eq!(bytes[WINDOW], b'x');
    }
}
