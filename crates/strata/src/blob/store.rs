//! [`BlobStore`]: reads values through their refs, keeping blob files open.
//!
//! A blob file is read through a read-only memory map (`Env::new_table_reader`, as
//! tables are, with `Options::mmap_reads`) once it is *sealed*: no longer written. A
//! value is checked and then copied, or decompressed, straight out of the map (measured
//! 2026-11-25 against a `pread` of records of 16 KiB and more into the caller's buffer:
//! 100 KB values scanned 5-10 % faster compressed and 25-30 % raw, 1 MB values level
//! or faster). The file a writer still appends to is read with `pread` instead, since a
//! map covers the length the file had when it was made. Writers say which files they
//! append to ([`BlobStore::begin_writing`]) and when they are done
//! ([`BlobStore::seal`]); every other file (those of earlier runs included) is
//! complete.
//!
//! A value stored raw in a mapped file can be read in place: [`BlobStore::read_pinned`]
//! returns a [`BlobView`] into the map, which keeps the map alive. A record of 512 bytes
//! or more has its CRC checked at its first read through the map and not again by gets
//! and scans while the file stays open (X5, `checked.rs`): a blob file is never written
//! after it is sealed, so the bytes are those the first check passed, as a verified block
//! in the block cache is. Reads that verify or copy values into new files check every
//! CRC ([`BlobStore::read_into`], [`BlobStore::read_stored_into`]).
//!
//! Buffers: a reader's buffer is reused from value to value and never zeroed again once
//! grown; a compressed value read with `pread` needs a second buffer, the thread's spare
//! (`SPARE`), which trades places with the caller's.
//!
//! At most `capacity` files are kept open with a descriptor (their share of
//! `Options::max_open_files`), and `MAPS_PER_SLOT` times as many mapped files, which hold
//! no descriptor (the file is closed once mapped, as a table's is); opening one more
//! closes the least recently read of its kind. A reader in the middle of a read holds its
//! file's entry through an `Arc` (one count to take and drop per read, not one per handle
//! inside), so closing never pulls a file from under a read. (With holes in
//! place of moves, values stay in the files they were written to, so a scan in key order
//! reads from hundreds of files in turn: with 2 GB of 100 KB values, 489 files, and 247
//! kept open, scans took twice as long, each value reopening and mapping its file.)

use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use super::checked::Checked;
use super::file::decode_record_checking;
use super::{BlobRef, decode_record, decode_split, record_header_len};
use crate::env::{Env, RandomAccessFile};
use crate::error::{Error, Result};
use crate::filename;
use crate::open_files::OpenFiles;

/// Mapped files kept open per descriptor slot: a map costs an entry in the process's map
/// table (`vm.max_map_count`, 65,530 by default), not a descriptor. With the default
/// `max_open_files`, 3,952 files: about 15 GiB of 4 MiB blob files.
const MAPS_PER_SLOT: usize = 16;

/// How one blob file is read.
pub(super) struct Open {
    /// Read with `pread`.
    file: Arc<dyn RandomAccessFile>,
    /// The file's map, once it is complete (sealed) and maps are on.
    map: Option<Arc<dyn RandomAccessFile>>,
    /// The records of at least `checked::SPAN` bytes whose CRC matched in `map` (X5).
    checked: Checked,
}

impl Open {
    /// The file's mapped bytes, when it is read through a map.
    pub(super) fn mapped(&self) -> Option<&[u8]> {
        self.map.as_ref().and_then(|m| m.mapped())
    }

    /// How many of this entry's handles are the map `w` (a mapped file's `file` is its
    /// map).
    fn holds(&self, w: &Weak<dyn RandomAccessFile>) -> usize {
        let same =
            |a: &Arc<dyn RandomAccessFile>| Arc::as_ptr(a).cast::<()>() == w.as_ptr().cast::<()>();
        usize::from(same(&self.file)) + self.map.as_ref().map_or(0, |m| usize::from(same(m)))
    }
}

/// A value read in place: a view into a sealed blob file's map, which it keeps alive.
/// Dereferences to the value's bytes.
#[derive(Clone)]
pub struct BlobView {
    map: Arc<dyn RandomAccessFile>,
    start: usize,
    end: usize,
}

impl std::ops::Deref for BlobView {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // The range was taken from this map when the view was made.
        self.map
            .mapped()
            .and_then(|m| m.get(self.start..self.end))
            .unwrap_or(&[])
    }
}

impl std::fmt::Debug for BlobView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobView")
            .field("start", &self.start)
            .field("len", &(self.end - self.start))
            .finish()
    }
}

struct Files {
    /// Files open with a descriptor (not mapped), the least recently read closed first.
    open: OpenFiles<Arc<Open>>,
    /// Mapped files (no descriptor), the least recently read closed first.
    mapped: OpenFiles<Arc<Open>>,
    /// Files a writer still appends to.
    writing: std::collections::HashSet<u64>,
    /// Every map made of each file and perhaps still held (by a [`BlobView`] or a read
    /// in progress), closed or not: see [`BlobStore::in_use`].
    maps: std::collections::HashMap<u64, Vec<Weak<dyn RandomAccessFile>>>,
}

/// The open blob files of a database, shared by every reader.
pub struct BlobStore {
    env: Arc<dyn Env>,
    dir: PathBuf,
    mapped: bool,
    files: Mutex<Files>,
}

impl std::fmt::Debug for BlobStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobStore")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl BlobStore {
    /// A store for the blob files of the database in `dir`, keeping at most `capacity`
    /// of them open; with `mapped`, sealed files are read through memory maps.
    pub fn new(env: Arc<dyn Env>, dir: PathBuf, mapped: bool, capacity: usize) -> Self {
        BlobStore {
            env,
            dir,
            mapped,
            files: Mutex::new(Files {
                open: OpenFiles::new(capacity),
                mapped: OpenFiles::new(capacity.saturating_mul(MAPS_PER_SLOT)),
                writing: Default::default(),
                maps: Default::default(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Files> {
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn open(&self, number: u64) -> Result<Arc<Open>> {
        let mut files = self.lock();
        if let Some(f) = files.mapped.get(number) {
            return Ok(f);
        }
        if let Some(f) = files.open.get(number) {
            return Ok(f);
        }
        let path = filename::blob(&self.dir, number);
        let sealed = !files.writing.contains(&number);
        let map = if sealed && self.mapped {
            Some(self.env.new_table_reader(&path)?).filter(|m| m.mapped().is_some())
        } else {
            None
        };
        let open = Arc::new(match map {
            // A map reads with `pread`'s semantics too, and holds no descriptor.
            Some(m) => Open {
                file: Arc::clone(&m),
                checked: Checked::new(m.mapped().map_or(0, <[u8]>::len)),
                map: Some(m),
            },
            None => Open {
                file: self.env.new_random_access(&path)?,
                map: None,
                checked: Checked::new(0),
            },
        });
        match &open.map {
            Some(m) => {
                let maps = files.maps.entry(number).or_default();
                maps.retain(|w| w.strong_count() > 0);
                maps.push(Arc::downgrade(m));
                files.mapped.insert(number, Arc::clone(&open));
            }
            None => files.open.insert(number, Arc::clone(&open)),
        }
        Ok(open)
    }

    #[cfg(test)]
    /// Blob files open now.
    pub fn open_files(&self) -> usize {
        let files = self.lock();
        files.open.len() + files.mapped.len()
    }

    /// A writer is about to append to blob file `number` (before any ref to it exists).
    pub fn begin_writing(&self, number: u64) {
        let mut files = self.lock();
        files.writing.insert(number);
        files.open.remove(number);
        files.mapped.remove(number);
    }

    /// Blob file `number` is complete: later reads may map it.
    pub fn seal(&self, number: u64) {
        let mut files = self.lock();
        if files.writing.remove(&number) {
            files.open.remove(number);
            files.mapped.remove(number);
        }
    }

    /// The value `encoded_ref` points to, checked against `user_key` (X2).
    pub fn read(&self, user_key: &[u8], encoded_ref: &[u8]) -> Result<Vec<u8>> {
        let r = BlobRef::decode(encoded_ref)?;
        let mut out = Vec::new();
        if r.raw_len.is_none() {
            self.read_with(user_key, &r, &mut out, Marks::Trust, keep_stored)?;
            return Ok(out);
        }
        // Compressed: the stored bytes (when read with `pread`) go to the thread's spare
        // buffer, the value, which the caller keeps, to a buffer of its own size.
        let mut spare = SPARE.take();
        let read = self.read_with(
            user_key,
            &r,
            &mut spare,
            Marks::Trust,
            |r, stored, spare| match stored {
                Stored::Mapped(v) => decompress(r, v, &mut out),
                Stored::InBuffer => decompress(r, spare, &mut out),
            },
        );
        SPARE.set(spare);
        read.map(|()| out)
    }

    /// The value `encoded_ref` points to, checked against `user_key` (X2, X5): a view into
    /// the file's map when the value is stored raw in a sealed, mapped file, else a copy
    /// (`Err(value)`: a value read with `pread` or decompressed).
    pub fn read_pinned(
        &self,
        user_key: &[u8],
        encoded_ref: &[u8],
    ) -> Result<std::result::Result<BlobView, Vec<u8>>> {
        match self.view(user_key, encoded_ref)? {
            Some(view) => Ok(Ok(view)),
            None => self.read(user_key, encoded_ref).map(Err),
        }
    }

    /// A view of the value `encoded_ref` points to, checked against `user_key` (X2, X5),
    /// when it is stored raw in a sealed, mapped file; `None` otherwise (read it then with
    /// [`BlobStore::read`] or [`BlobStore::read_into`]).
    fn view(&self, user_key: &[u8], encoded_ref: &[u8]) -> Result<Option<BlobView>> {
        let r = BlobRef::decode(encoded_ref)?;
        if r.raw_len.is_some() {
            return Ok(None); // compressed: decompressed into a buffer
        }
        let open = self.open(r.file).map_err(self.located(r.file))?;
        view_in(user_key, &r, &open).map_err(self.located(r.file))
    }

    /// [`BlobStore::view`] where it gives one, else the value read into `out` as
    /// [`BlobStore::read_into`] reads it (`None`).
    pub fn view_or_read_into(
        &self,
        user_key: &[u8],
        encoded_ref: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Option<BlobView>> {
        let r = BlobRef::decode(encoded_ref)?;
        let open = self.open(r.file).map_err(self.located(r.file))?;
        view_or_read_in(user_key, &r, &open, out).map_err(self.located(r.file))
    }

    /// Names blob file `number` in an error.
    pub(super) fn located(&self, number: u64) -> impl Fn(Error) -> Error + '_ {
        move |e| e.located(&filename::blob(&self.dir, number).display().to_string(), 0)
    }

    /// [`BlobStore::read`] into `out`, for a caller that reads many values into one
    /// buffer (verification, garbage collection, a checkpoint, recovery): `out`'s
    /// allocation is reused, and a compressed value read with `pread` is decompressed
    /// into the thread's spare buffer, which then trades places with `out`, so that
    /// neither allocates nor zeroes. Every record's CRC is checked, whatever X5 remembers.
    pub fn read_into(&self, user_key: &[u8], encoded_ref: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let r = BlobRef::decode(encoded_ref)?;
        let open = self.open(r.file).map_err(self.located(r.file))?;
        read_into_in(user_key, &r, &open, out, Marks::Ignore).map_err(self.located(r.file))
    }

    /// The value `encoded_ref` points to as its record stores it (compressed if the ref
    /// says so), checked against `user_key` (X2) and its CRC whatever X5 remembers, into
    /// `out` (garbage collection's moves).
    pub fn read_stored_into(
        &self,
        user_key: &[u8],
        encoded_ref: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let r = BlobRef::decode(encoded_ref)?;
        self.read_with(user_key, &r, out, Marks::Ignore, keep_stored)
    }

    /// Reads and checks (X2) the record `r` points to, then `finish`es its stored value:
    /// from the file's map if it has one, else read with `pread` into `buf[..value_len]`
    /// (`buf` may be longer: it is never shortened here, so that a scan's buffers are
    /// not zeroed again as they grow back). Errors of either name the blob file.
    fn read_with(
        &self,
        user_key: &[u8],
        r: &BlobRef,
        buf: &mut Vec<u8>,
        marks: Marks,
        finish: impl FnOnce(&BlobRef, Stored<'_>, &mut Vec<u8>) -> Result<()>,
    ) -> Result<()> {
        self.open(r.file)
            .and_then(|open| {
                let stored = read_ref(user_key, r, &open, buf, marks)?;
                finish(r, stored, buf)
            })
            .map_err(self.located(r.file))
    }

    /// Forgets blob file `number` (its file is being deleted).
    pub fn evict(&self, number: u64) {
        let mut files = self.lock();
        files.open.remove(number);
        files.mapped.remove(number);
        files.writing.remove(&number);
        files.maps.remove(&number);
    }

    /// Whether anyone but the store holds a map of blob file `number`: a [`BlobView`]
    /// (which may show a record whose ref has since been dropped), a read in progress
    /// (which holds the store's entry, or an entry closed since), or a scan that keeps
    /// the file (`blob/scan.rs`). Holes in the file wait while one does (X6).
    pub fn in_use(&self, number: u64) -> bool {
        let mut guard = self.lock();
        let files = &mut *guard;
        let own = files.mapped.peek(number);
        // A read in progress holds the store's entry itself.
        if own.is_some_and(|o| Arc::strong_count(o) > 1) {
            return true;
        }
        let Some(maps) = files.maps.get_mut(&number) else {
            return false;
        };
        maps.retain(|w| w.strong_count() > 0);
        maps.iter()
            .any(|w| w.strong_count() > own.map_or(0, |o| o.holds(w)))
    }
}

/// [`BlobStore::view`] in `open`: `None` for a value stored compressed or a file not
/// mapped.
fn view_in(user_key: &[u8], r: &BlobRef, open: &Open) -> Result<Option<BlobView>> {
    if r.raw_len.is_some() {
        return Ok(None);
    }
    let Some(map) = open.map.as_ref().filter(|m| m.mapped().is_some()) else {
        return Ok(None);
    };
    // Checks the record where it lies (X2, X5): it is inside the map, and its value is
    // its tail.
    read_ref(user_key, r, open, &mut Vec::new(), Marks::Trust)?;
    let end = r.offset as usize + r.record_len as usize;
    Ok(Some(BlobView {
        map: Arc::clone(map),
        start: end - r.value_len as usize,
        end,
    }))
}

/// [`BlobStore::view_or_read_into`] in `open`.
pub(super) fn view_or_read_in(
    user_key: &[u8],
    r: &BlobRef,
    open: &Open,
    out: &mut Vec<u8>,
) -> Result<Option<BlobView>> {
    match view_in(user_key, r, open)? {
        Some(view) => Ok(Some(view)),
        None => read_into_in(user_key, r, open, out, Marks::Trust).map(|()| None),
    }
}

/// [`BlobStore::read_into`] in `open`.
fn read_into_in(
    user_key: &[u8],
    r: &BlobRef,
    open: &Open,
    out: &mut Vec<u8>,
    marks: Marks,
) -> Result<()> {
    let stored = read_ref(user_key, r, open, out, marks)?;
    if r.raw_len.is_none() {
        return keep_stored(r, stored, out);
    }
    match stored {
        Stored::Mapped(v) => decompress(r, v, out),
        Stored::InBuffer => {
            let mut plain = SPARE.take();
            let decoded = decompress(r, out, &mut plain);
            std::mem::swap(out, &mut plain);
            SPARE.set(plain);
            decoded
        }
    }
}

/// How a read through a map treats a record whose check passed before (X5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marks {
    /// Skip its CRC: a read for a caller.
    Trust,
    /// Check its CRC all the same: a read that verifies the database or copies the value
    /// into a new file (garbage collection, a checkpoint's inlining, recovery), where bytes
    /// changed on disk since the first check must not be carried on under a new CRC.
    Ignore,
}

/// [`BlobStore::read_with`]'s read and checks.
fn read_ref<'m>(
    user_key: &[u8],
    r: &BlobRef,
    open: &'m Open,
    out: &mut Vec<u8>,
    marks: Marks,
) -> Result<Stored<'m>> {
    let past_the_end = || {
        Error::corruption(
            "",
            r.offset,
            format!(
                "blob record of {} bytes runs past the end of the file",
                r.record_len
            ),
        )
    };
    if let Some(map) = open.mapped() {
        let start = usize::try_from(r.offset).map_err(|_| past_the_end())?;
        let end = start
            .checked_add(r.record_len as usize)
            .ok_or_else(past_the_end)?;
        if end > map.len() {
            return Err(past_the_end());
        }
        let record = &map[start..end];
        let once = Checked::keeps(r.record_len);
        let checked = once && marks == Marks::Trust && open.checked.contains(r.offset);
        let (key, value) = decode_record_checking(r, record, !checked)?;
        check_key(r, key, user_key)?;
        if once && !checked {
            open.checked.mark(r.offset);
        }
        return Ok(Stored::Mapped(value));
    }
    // The value straight into `out`, the header and key beside it: no copy after.
    let head_len = record_header_len(user_key.len(), r.value_len as usize) + user_key.len();
    if head_len + r.value_len as usize == r.record_len as usize {
        let mut head = vec![0; head_len];
        read_exact(open.file.as_ref(), r.offset, &mut head)?;
        // Read over a buffer as long as it already is (only growth is zeroed).
        let n = r.value_len as usize;
        if out.len() < n {
            out.resize(n, 0);
        }
        let value_at = r
            .offset
            .checked_add(head_len as u64)
            .ok_or_else(past_the_end)?;
        read_exact(open.file.as_ref(), value_at, &mut out[..n])?;
        let key = decode_split(r, &head, &out[..n])?;
        check_key(r, key, user_key)?;
        return Ok(Stored::InBuffer);
    }
    // Not this key's record (its key has another length): read it whole to say how.
    let mut record = vec![0; r.record_len as usize];
    read_exact(open.file.as_ref(), r.offset, &mut record)?;
    let (key, _) = decode_record(r, &record)?;
    check_key(r, key, user_key)?;
    Err(Error::corruption(
        "",
        r.offset,
        "blob record's layout does not match its ref",
    ))
}

/// Where [`BlobStore::read_with`] left a record's stored value.
enum Stored<'m> {
    /// In the file's map.
    Mapped(&'m [u8]),
    /// In the caller's buffer, `buf[..value_len]`.
    InBuffer,
}

/// A finisher for [`BlobStore::read_with`]: the stored value, as it is, in `out`.
fn keep_stored(r: &BlobRef, stored: Stored<'_>, out: &mut Vec<u8>) -> Result<()> {
    match stored {
        Stored::Mapped(v) => {
            out.clear();
            out.extend_from_slice(v);
        }
        Stored::InBuffer => out.truncate(r.value_len as usize),
    }
    Ok(())
}

/// Decompresses the value a compressed ref `r` points to, stored in `stored[..value_len]`
/// and checked against its record (X2), into `plain` (its contents replaced; only growth
/// is zeroed, since the decoder writes every byte). A value that does not decompress to
/// the length the ref gives is corruption.
fn decompress(r: &BlobRef, stored: &[u8], plain: &mut Vec<u8>) -> Result<()> {
    let raw_len = r.raw_len() as usize;
    let stored = stored.get(..r.value_len as usize).unwrap_or_default();
    let bad = |what: String| Error::corruption("", r.offset, what);
    match snap::raw::decompress_len(stored) {
        Ok(n) if n == raw_len => {}
        Ok(n) => {
            return Err(bad(format!(
                "blob value decompresses to {n} bytes, the ref expects {raw_len}"
            )));
        }
        Err(e) => return Err(bad(format!("blob value does not decompress: {e}"))),
    }
    if plain.len() < raw_len {
        plain.resize(raw_len, 0);
    }
    let decoded = snap::raw::Decoder::new().decompress(stored, &mut plain[..raw_len]);
    plain.truncate(raw_len);
    match decoded {
        Ok(n) if n == raw_len => Ok(()),
        Ok(n) => Err(bad(format!(
            "blob value decompresses to {n} bytes, the ref expects {raw_len}"
        ))),
        Err(e) => Err(bad(format!("blob value does not decompress: {e}"))),
    }
}

thread_local! {
    /// Each reading thread's second buffer for compressed values ([`BlobStore::read`],
    /// [`BlobStore::read_into`]): it holds the last compressed value read, at most the
    /// size of the largest value read on the thread.
    static SPARE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Fills `buf` from `offset`; a short read is corruption (the record is cut off).
fn read_exact(file: &dyn RandomAccessFile, offset: u64, buf: &mut [u8]) -> Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        let n = file.read_at(offset + filled as u64, &mut buf[filled..])?;
        if n == 0 {
            return Err(Error::corruption(
                "",
                offset,
                format!("blob record truncated: {filled} of {} bytes", buf.len()),
            ));
        }
        filled += n;
    }
    Ok(())
}

fn check_key(r: &BlobRef, key: &[u8], user_key: &[u8]) -> Result<()> {
    if key == user_key {
        return Ok(());
    }
    Err(Error::corruption(
        "",
        r.offset,
        format!(
            "blob record belongs to another key ({} bytes, looked up {} bytes)",
            key.len(),
            user_key.len()
        ),
    ))
}
