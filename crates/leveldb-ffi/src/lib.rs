//! A small safe wrapper over the system's LevelDB 1.23 through its C API (`leveldb/c.h`).
//!
//! Strata's tests use it as the judge of format compatibility (LevelDB writes, Strata
//! reads, and back), and `strata-bench` as the LevelDB peer. Only what those need is
//! wrapped. Every `unsafe` block calls one C function with pointers this module owns and
//! keeps alive; each states why that is sound.

#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::marker::PhantomData;
use std::path::Path;
use std::ptr;

#[repr(C)]
struct RawDb(c_void);
#[repr(C)]
struct RawOptions(c_void);
#[repr(C)]
struct RawReadOptions(c_void);
#[repr(C)]
struct RawWriteOptions(c_void);
#[repr(C)]
struct RawIterator(c_void);
#[repr(C)]
struct RawWriteBatch(c_void);
#[repr(C)]
struct RawFilterPolicy(c_void);
#[repr(C)]
struct RawCache(c_void);

unsafe extern "C" {
    fn leveldb_open(
        options: *const RawOptions,
        name: *const c_char,
        errptr: *mut *mut c_char,
    ) -> *mut RawDb;
    fn leveldb_close(db: *mut RawDb);
    fn leveldb_put(
        db: *mut RawDb,
        options: *const RawWriteOptions,
        key: *const c_char,
        keylen: usize,
        val: *const c_char,
        vallen: usize,
        errptr: *mut *mut c_char,
    );
    fn leveldb_delete(
        db: *mut RawDb,
        options: *const RawWriteOptions,
        key: *const c_char,
        keylen: usize,
        errptr: *mut *mut c_char,
    );
    fn leveldb_write(
        db: *mut RawDb,
        options: *const RawWriteOptions,
        batch: *mut RawWriteBatch,
        errptr: *mut *mut c_char,
    );
    fn leveldb_get(
        db: *mut RawDb,
        options: *const RawReadOptions,
        key: *const c_char,
        keylen: usize,
        vallen: *mut usize,
        errptr: *mut *mut c_char,
    ) -> *mut c_char;
    fn leveldb_create_iterator(db: *mut RawDb, options: *const RawReadOptions) -> *mut RawIterator;
    fn leveldb_property_value(db: *mut RawDb, propname: *const c_char) -> *mut c_char;
    fn leveldb_compact_range(
        db: *mut RawDb,
        start_key: *const c_char,
        start_key_len: usize,
        limit_key: *const c_char,
        limit_key_len: usize,
    );
    fn leveldb_destroy_db(
        options: *const RawOptions,
        name: *const c_char,
        errptr: *mut *mut c_char,
    );

    fn leveldb_iter_destroy(it: *mut RawIterator);
    fn leveldb_iter_valid(it: *const RawIterator) -> u8;
    fn leveldb_iter_seek_to_first(it: *mut RawIterator);
    fn leveldb_iter_seek_to_last(it: *mut RawIterator);
    fn leveldb_iter_seek(it: *mut RawIterator, k: *const c_char, klen: usize);
    fn leveldb_iter_next(it: *mut RawIterator);
    fn leveldb_iter_prev(it: *mut RawIterator);
    fn leveldb_iter_key(it: *const RawIterator, klen: *mut usize) -> *const c_char;
    fn leveldb_iter_value(it: *const RawIterator, vlen: *mut usize) -> *const c_char;
    fn leveldb_iter_get_error(it: *const RawIterator, errptr: *mut *mut c_char);

    fn leveldb_writebatch_create() -> *mut RawWriteBatch;
    fn leveldb_writebatch_destroy(b: *mut RawWriteBatch);
    fn leveldb_writebatch_clear(b: *mut RawWriteBatch);
    fn leveldb_writebatch_put(
        b: *mut RawWriteBatch,
        key: *const c_char,
        klen: usize,
        val: *const c_char,
        vlen: usize,
    );
    fn leveldb_writebatch_delete(b: *mut RawWriteBatch, key: *const c_char, klen: usize);

    fn leveldb_options_create() -> *mut RawOptions;
    fn leveldb_options_destroy(o: *mut RawOptions);
    fn leveldb_options_set_filter_policy(o: *mut RawOptions, p: *mut RawFilterPolicy);
    fn leveldb_options_set_create_if_missing(o: *mut RawOptions, v: u8);
    fn leveldb_options_set_paranoid_checks(o: *mut RawOptions, v: u8);
    fn leveldb_options_set_write_buffer_size(o: *mut RawOptions, v: usize);
    fn leveldb_options_set_max_open_files(o: *mut RawOptions, v: c_int);
    fn leveldb_options_set_cache(o: *mut RawOptions, c: *mut RawCache);
    fn leveldb_options_set_block_size(o: *mut RawOptions, v: usize);
    fn leveldb_options_set_block_restart_interval(o: *mut RawOptions, v: c_int);
    fn leveldb_options_set_max_file_size(o: *mut RawOptions, v: usize);
    fn leveldb_options_set_compression(o: *mut RawOptions, v: c_int);

    fn leveldb_filterpolicy_create_bloom(bits_per_key: c_int) -> *mut RawFilterPolicy;
    fn leveldb_filterpolicy_destroy(p: *mut RawFilterPolicy);

    fn leveldb_readoptions_create() -> *mut RawReadOptions;
    fn leveldb_readoptions_destroy(o: *mut RawReadOptions);
    fn leveldb_readoptions_set_verify_checksums(o: *mut RawReadOptions, v: u8);
    fn leveldb_writeoptions_create() -> *mut RawWriteOptions;
    fn leveldb_writeoptions_destroy(o: *mut RawWriteOptions);
    fn leveldb_writeoptions_set_sync(o: *mut RawWriteOptions, v: u8);

    fn leveldb_cache_create_lru(capacity: usize) -> *mut RawCache;
    fn leveldb_cache_destroy(c: *mut RawCache);

    fn leveldb_free(ptr: *mut c_void);
    fn leveldb_major_version() -> c_int;
    fn leveldb_minor_version() -> c_int;
}

/// A key and its value.
pub type KeyValue = (Vec<u8>, Vec<u8>);

/// LevelDB's settings, with LevelDB's defaults.
#[derive(Debug, Clone)]
pub struct Options {
    /// Create the database if it is missing.
    pub create_if_missing: bool,
    /// Check everything it reads aggressively.
    pub paranoid_checks: bool,
    /// Memtable size before a flush (default 4 MiB).
    pub write_buffer_size: usize,
    /// Table files kept open (default 1000).
    pub max_open_files: i32,
    /// Block cache capacity in bytes; `None` uses LevelDB's internal 8 MiB cache.
    pub cache_size: Option<usize>,
    /// Data block size (default 4 KiB).
    pub block_size: usize,
    /// Keys between restart points (default 16).
    pub block_restart_interval: i32,
    /// Target table size (default 2 MiB).
    pub max_file_size: usize,
    /// Snappy compression (default on).
    pub compression: bool,
    /// Bloom filter bits per key; `None` for no filter (the default).
    pub bloom_bits_per_key: Option<i32>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            paranoid_checks: false,
            write_buffer_size: 4 << 20,
            max_open_files: 1000,
            cache_size: None,
            block_size: 4096,
            block_restart_interval: 16,
            max_file_size: 2 << 20,
            compression: true,
            bloom_bits_per_key: None,
        }
    }
}

/// Turns LevelDB's error out-parameter into a `Result`, freeing the message.
fn check(err: *mut c_char) -> Result<(), String> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: LevelDB sets `err` to a NUL-terminated string it allocated with malloc; we
    // copy it out and free it exactly once with leveldb_free.
    let msg = unsafe { CStr::from_ptr(err) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: see above; `err` is not used after this.
    unsafe { leveldb_free(err.cast()) };
    Err(msg)
}

fn c_path(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_encoded_bytes()).map_err(|e| format!("bad path: {e}"))
}

/// LevelDB's version as (major, minor).
pub fn version() -> (i32, i32) {
    // SAFETY: pure functions without arguments.
    unsafe { (leveldb_major_version(), leveldb_minor_version()) }
}

/// Owns the option objects a database uses; they must outlive it.
struct OwnedOptions {
    options: *mut RawOptions,
    filter: *mut RawFilterPolicy,
    cache: *mut RawCache,
}

impl OwnedOptions {
    fn new(o: &Options) -> Self {
        // SAFETY: each call receives the pointer just created by leveldb_options_create,
        // which stays valid until Drop destroys it. The filter and cache are owned here
        // and destroyed only after the options (and any database using them).
        unsafe {
            let options = leveldb_options_create();
            leveldb_options_set_create_if_missing(options, u8::from(o.create_if_missing));
            leveldb_options_set_paranoid_checks(options, u8::from(o.paranoid_checks));
            leveldb_options_set_write_buffer_size(options, o.write_buffer_size);
            leveldb_options_set_max_open_files(options, o.max_open_files);
            leveldb_options_set_block_size(options, o.block_size);
            leveldb_options_set_block_restart_interval(options, o.block_restart_interval);
            leveldb_options_set_max_file_size(options, o.max_file_size);
            leveldb_options_set_compression(options, c_int::from(o.compression));
            let filter = match o.bloom_bits_per_key {
                Some(bits) => {
                    let f = leveldb_filterpolicy_create_bloom(bits);
                    leveldb_options_set_filter_policy(options, f);
                    f
                }
                None => ptr::null_mut(),
            };
            let cache = match o.cache_size {
                Some(bytes) => {
                    let c = leveldb_cache_create_lru(bytes);
                    leveldb_options_set_cache(options, c);
                    c
                }
                None => ptr::null_mut(),
            };
            OwnedOptions {
                options,
                filter,
                cache,
            }
        }
    }
}

impl Drop for OwnedOptions {
    fn drop(&mut self) {
        // SAFETY: the pointers were created in `new`, are destroyed once, and no database
        // that uses them is still open (Db drops its handle first).
        unsafe {
            leveldb_options_destroy(self.options);
            if !self.filter.is_null() {
                leveldb_filterpolicy_destroy(self.filter);
            }
            if !self.cache.is_null() {
                leveldb_cache_destroy(self.cache);
            }
        }
    }
}

/// An open LevelDB database.
pub struct Db {
    db: *mut RawDb,
    read: *mut RawReadOptions,
    write_async: *mut RawWriteOptions,
    write_sync: *mut RawWriteOptions,
    // Declared last: dropped after the database is closed.
    _options: OwnedOptions,
}

// SAFETY: LevelDB's DB object is documented as safe for concurrent use from many threads
// without external synchronisation; the option objects are only read after creation.
unsafe impl Send for Db {}
// SAFETY: as above.
unsafe impl Sync for Db {}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("leveldb::Db").finish_non_exhaustive()
    }
}

impl Db {
    /// Opens (or with `create_if_missing`, creates) the database at `path`.
    pub fn open(path: &Path, options: &Options) -> Result<Db, String> {
        let name = c_path(path)?;
        let owned = OwnedOptions::new(options);
        let mut err = ptr::null_mut();
        // SAFETY: valid options and NUL-terminated name; `err` is a valid out-pointer.
        let db = unsafe { leveldb_open(owned.options, name.as_ptr(), &mut err) };
        check(err)?;
        if db.is_null() {
            return Err("leveldb_open returned null".into());
        }
        // SAFETY: plain constructors and setters on the objects they return.
        let (read, write_async, write_sync) = unsafe {
            let read = leveldb_readoptions_create();
            leveldb_readoptions_set_verify_checksums(read, 1);
            let write_async = leveldb_writeoptions_create();
            let write_sync = leveldb_writeoptions_create();
            leveldb_writeoptions_set_sync(write_sync, 1);
            (read, write_async, write_sync)
        };
        Ok(Db {
            db,
            read,
            write_async,
            write_sync,
            _options: owned,
        })
    }

    fn write_options(&self, sync: bool) -> *const RawWriteOptions {
        if sync {
            self.write_sync
        } else {
            self.write_async
        }
    }

    /// Sets `key` to `value`.
    pub fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<(), String> {
        let mut err = ptr::null_mut();
        // SAFETY: the slices are valid for their lengths during the call; LevelDB copies them.
        unsafe {
            leveldb_put(
                self.db,
                self.write_options(sync),
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
                &mut err,
            )
        };
        check(err)
    }

    /// Removes `key`.
    pub fn delete(&self, key: &[u8], sync: bool) -> Result<(), String> {
        let mut err = ptr::null_mut();
        // SAFETY: the key is valid for its length during the call.
        unsafe {
            leveldb_delete(
                self.db,
                self.write_options(sync),
                key.as_ptr().cast(),
                key.len(),
                &mut err,
            )
        };
        check(err)
    }

    /// Applies a batch atomically.
    pub fn write(&self, batch: &mut WriteBatch, sync: bool) -> Result<(), String> {
        let mut err = ptr::null_mut();
        // SAFETY: `batch.ptr` is a live batch owned by `batch`.
        unsafe { leveldb_write(self.db, self.write_options(sync), batch.ptr, &mut err) };
        check(err)
    }

    /// The value of `key`, if any.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let mut out = Vec::new();
        Ok(self.get_into(key, &mut out)?.then_some(out))
    }

    /// The value of `key` copied into `out` (replacing what it held), reusing its
    /// allocation: one copy from LevelDB's buffer, as a C caller makes. False if absent.
    pub fn get_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool, String> {
        self.get_with(key, |v| {
            out.clear();
            out.extend_from_slice(v);
        })
    }

    /// Hands the value of `key` to `visit` as the C API returns it (its own copy, freed
    /// after `visit` returns). False if absent.
    pub fn get_with(&self, key: &[u8], visit: impl FnOnce(&[u8])) -> Result<bool, String> {
        let mut err = ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: the key is valid during the call; the result is a malloc'ed buffer of
        // `len` bytes (or null), read and freed once below.
        let v = unsafe {
            leveldb_get(
                self.db,
                self.read,
                key.as_ptr().cast(),
                key.len(),
                &mut len,
                &mut err,
            )
        };
        check(err)?;
        if v.is_null() {
            return Ok(false);
        }
        if len == 0 {
            visit(&[]);
        } else {
            // SAFETY: `v` points to `len` readable bytes until freed.
            visit(unsafe { std::slice::from_raw_parts(v.cast::<u8>(), len) });
        }
        // SAFETY: freed once, not used after.
        unsafe { leveldb_free(v.cast()) };
        Ok(true)
    }

    /// A cursor over the database (not positioned).
    pub fn iter(&self) -> Iter<'_> {
        // SAFETY: the iterator borrows the database through the lifetime of `Iter`.
        let ptr = unsafe { leveldb_create_iterator(self.db, self.read) };
        Iter {
            ptr,
            _db: PhantomData,
        }
    }

    /// Every entry, in order.
    pub fn collect_all(&self) -> Result<Vec<KeyValue>, String> {
        let mut it = self.iter();
        it.seek_to_first();
        let mut out = Vec::new();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// Compacts the key range (`None` = unbounded).
    pub fn compact_range(&self, start: Option<&[u8]>, limit: Option<&[u8]>) {
        let (sp, sl) = start.map_or((ptr::null(), 0), |s| (s.as_ptr().cast(), s.len()));
        let (lp, ll) = limit.map_or((ptr::null(), 0), |s| (s.as_ptr().cast(), s.len()));
        // SAFETY: null pointers mean "unbounded" in the C API; others are valid slices.
        unsafe { leveldb_compact_range(self.db, sp, sl, lp, ll) };
    }

    /// A property such as `leveldb.stats` or `leveldb.num-files-at-level0`.
    pub fn property(&self, name: &str) -> Option<String> {
        let name = CString::new(name).ok()?;
        // SAFETY: NUL-terminated name; the result is malloc'ed (or null), copied and freed.
        let v = unsafe { leveldb_property_value(self.db, name.as_ptr()) };
        if v.is_null() {
            return None;
        }
        // SAFETY: `v` is a NUL-terminated string owned by us until freed.
        let s = unsafe { CStr::from_ptr(v) }.to_string_lossy().into_owned();
        // SAFETY: freed once.
        unsafe { leveldb_free(v.cast()) };
        Some(s)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        // SAFETY: every pointer was created in `open` and is destroyed exactly once here;
        // iterators borrow `self`, so none is alive.
        unsafe {
            leveldb_close(self.db);
            leveldb_readoptions_destroy(self.read);
            leveldb_writeoptions_destroy(self.write_async);
            leveldb_writeoptions_destroy(self.write_sync);
        }
    }
}

/// Deletes the database at `path`.
pub fn destroy(path: &Path) -> Result<(), String> {
    let name = c_path(path)?;
    let owned = OwnedOptions::new(&Options::default());
    let mut err = ptr::null_mut();
    // SAFETY: valid options and name; `err` is a valid out-pointer.
    unsafe { leveldb_destroy_db(owned.options, name.as_ptr(), &mut err) };
    check(err)
}

/// A LevelDB write batch.
pub struct WriteBatch {
    ptr: *mut RawWriteBatch,
}

// SAFETY: a batch is plain owned data, used by one thread at a time (`&mut` to change it).
unsafe impl Send for WriteBatch {}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("leveldb::WriteBatch")
            .finish_non_exhaustive()
    }
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        // SAFETY: plain constructor.
        let ptr = unsafe { leveldb_writebatch_create() };
        WriteBatch { ptr }
    }
    /// Adds a put.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        // SAFETY: live batch; the slices are copied during the call.
        unsafe {
            leveldb_writebatch_put(
                self.ptr,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
            )
        }
    }
    /// Adds a delete.
    pub fn delete(&mut self, key: &[u8]) {
        // SAFETY: live batch; the key is copied during the call.
        unsafe { leveldb_writebatch_delete(self.ptr, key.as_ptr().cast(), key.len()) }
    }
    /// Removes every operation.
    pub fn clear(&mut self) {
        // SAFETY: live batch.
        unsafe { leveldb_writebatch_clear(self.ptr) }
    }
}

impl Drop for WriteBatch {
    fn drop(&mut self) {
        // SAFETY: destroyed once.
        unsafe { leveldb_writebatch_destroy(self.ptr) }
    }
}

/// A cursor over a LevelDB database.
pub struct Iter<'a> {
    ptr: *mut RawIterator,
    _db: PhantomData<&'a Db>,
}

impl std::fmt::Debug for Iter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("leveldb::Iter").finish_non_exhaustive()
    }
}

impl Iter<'_> {
    /// True when positioned at an entry.
    pub fn valid(&self) -> bool {
        // SAFETY: live iterator.
        unsafe { leveldb_iter_valid(self.ptr) != 0 }
    }
    /// Moves to the first entry.
    pub fn seek_to_first(&mut self) {
        // SAFETY: live iterator.
        unsafe { leveldb_iter_seek_to_first(self.ptr) }
    }
    /// Moves to the last entry.
    pub fn seek_to_last(&mut self) {
        // SAFETY: live iterator.
        unsafe { leveldb_iter_seek_to_last(self.ptr) }
    }
    /// Moves to the first entry at or after `key`.
    pub fn seek(&mut self, key: &[u8]) {
        // SAFETY: live iterator; the key is read during the call.
        unsafe { leveldb_iter_seek(self.ptr, key.as_ptr().cast(), key.len()) }
    }
    /// Next entry (requires `valid`).
    pub fn next(&mut self) {
        if self.valid() {
            // SAFETY: live, valid iterator.
            unsafe { leveldb_iter_next(self.ptr) }
        }
    }
    /// Previous entry (requires `valid`).
    pub fn prev(&mut self) {
        if self.valid() {
            // SAFETY: live, valid iterator.
            unsafe { leveldb_iter_prev(self.ptr) }
        }
    }
    /// The current key (empty when not valid).
    pub fn key(&self) -> &[u8] {
        if !self.valid() {
            return &[];
        }
        let mut len = 0;
        // SAFETY: valid iterator; the bytes stay valid until the iterator moves, which
        // needs `&mut self`, so the borrow cannot outlive them.
        unsafe {
            let p = leveldb_iter_key(self.ptr, &mut len);
            std::slice::from_raw_parts(p.cast(), len)
        }
    }
    /// The current value (empty when not valid).
    pub fn value(&self) -> &[u8] {
        if !self.valid() {
            return &[];
        }
        let mut len = 0;
        // SAFETY: as for `key`.
        unsafe {
            let p = leveldb_iter_value(self.ptr, &mut len);
            std::slice::from_raw_parts(p.cast(), len)
        }
    }
    /// The iterator's error, if any.
    pub fn status(&self) -> Result<(), String> {
        let mut err = ptr::null_mut();
        // SAFETY: live iterator; `err` is a valid out-pointer.
        unsafe { leveldb_iter_get_error(self.ptr, &mut err) };
        check(err)
    }
}

impl Drop for Iter<'_> {
    fn drop(&mut self) {
        // SAFETY: destroyed once, before the database (the borrow guarantees it).
        unsafe { leveldb_iter_destroy(self.ptr) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_1_23() {
        assert_eq!(version(), (1, 23));
    }

    #[test]
    fn put_get_delete_iterate_batch() {
        let dir = tempfile_dir();
        let db = Db::open(
            &dir,
            &Options {
                bloom_bits_per_key: Some(10),
                cache_size: Some(1 << 20),
                ..Options::default()
            },
        )
        .unwrap();
        db.put(b"a", b"1", false).unwrap();
        db.put(b"b", b"2", true).unwrap();
        db.delete(b"a", false).unwrap();
        let mut batch = WriteBatch::new();
        batch.put(b"c", b"3");
        batch.delete(b"b");
        db.write(&mut batch, false).unwrap();
        assert_eq!(db.get(b"a").unwrap(), None);
        assert_eq!(db.get(b"c").unwrap(), Some(b"3".to_vec()));
        assert_eq!(
            db.collect_all().unwrap(),
            vec![(b"c".to_vec(), b"3".to_vec())]
        );
        assert!(db.property("leveldb.stats").is_some());
        drop(db);
        destroy(&dir).unwrap();
        assert!(
            Db::open(
                &dir,
                &Options {
                    create_if_missing: false,
                    ..Options::default()
                }
            )
            .is_err()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("leveldb-ffi-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        p
    }
}
