//! Options, read and write options, the LRU cache and the environment: plain boxes around
//! Strata's own types, set field by field as LevelDB's setters do.

use std::ffi::{c_char, c_int};
use std::sync::Arc;

use strata::BlockCache;
use strata::env::{DiskEnv, Env};
use strata::{Compression, Options, ReadOptions, WriteOptions};

use crate::callbacks::{leveldb_comparator_t, leveldb_filterpolicy_t};
use crate::snapshot::leveldb_snapshot_t;
use crate::util::malloc_cstring;

/// `leveldb_options_t`: a database's options.
#[derive(Debug, Default)]
pub struct leveldb_options_t {
    pub(crate) options: Options,
}

impl leveldb_options_t {
    /// The options with LevelDB's sanitizing applied (`SanitizeOptions` in `db_impl.cc`:
    /// out-of-range sizes are clipped, not refused).
    pub(crate) fn sanitized(&self) -> Options {
        let mut o = self.options.clone();
        o.max_open_files = o.max_open_files.clamp(64 + 10, 50_000);
        o.write_buffer_size = o.write_buffer_size.clamp(64 << 10, 1 << 30);
        o.max_file_size = o.max_file_size.clamp(1 << 20, 1 << 30);
        o.block_size = o.block_size.clamp(1 << 10, 4 << 20);
        o
    }

    /// [`Self::sanitized`] of the options behind `o`, or the defaults when it is NULL.
    ///
    /// # Safety
    /// `o` is NULL or a live options object.
    pub(crate) unsafe fn sanitized_or_default(o: *const leveldb_options_t) -> Options {
        // SAFETY: the caller's guarantee.
        unsafe { o.as_ref() }.map_or_else(Options::default, Self::sanitized)
    }
}

/// `leveldb_readoptions_t`.
#[derive(Debug, Default)]
pub struct leveldb_readoptions_t {
    pub(crate) options: ReadOptions,
}

/// `leveldb_writeoptions_t`.
#[derive(Debug, Default)]
pub struct leveldb_writeoptions_t {
    pub(crate) options: WriteOptions,
}

/// `leveldb_cache_t`: a block cache, shared by every database whose options name it.
#[derive(Debug)]
pub struct leveldb_cache_t {
    cache: Arc<BlockCache>,
}

/// `leveldb_env_t`: the filesystem (only the default one exists in the C API).
#[derive(Debug)]
pub struct leveldb_env_t {
    env: Arc<dyn Env>,
}

/// `leveldb_logger_t`: the C API has no way to make one; Strata writes its `LOG` file
/// whatever `leveldb_options_set_info_log` is given.
#[derive(Debug)]
pub struct leveldb_logger_t {
    _private: (),
}

/// Runs `f` on the options behind `p` unless it is NULL.
macro_rules! set {
    ($p:expr, |$o:ident| $body:expr) => {
        // SAFETY: the caller passes NULL or a live object of this library (A5).
        if let Some($o) = unsafe { $p.as_mut() } {
            $body;
        }
    };
}

#[unsafe(no_mangle)]
pub extern "C" fn leveldb_options_create() -> *mut leveldb_options_t {
    Box::into_raw(Box::default())
}

destroy_fn!(
    /// Frees options; databases opened with them keep their own copy.
    leveldb_options_destroy: leveldb_options_t
);

/// # Safety
/// `o` and `cmp` are NULL or live objects of this library.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_comparator(
    o: *mut leveldb_options_t,
    cmp: *mut leveldb_comparator_t,
) {
    // SAFETY: the caller's guarantee.
    let cmp = unsafe { cmp.as_ref() };
    set!(o, |o| o.options.comparator = cmp.map(|c| c.comparator()));
}

/// # Safety
/// `o` and `policy` are NULL or live objects of this library.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_filter_policy(
    o: *mut leveldb_options_t,
    policy: *mut leveldb_filterpolicy_t,
) {
    // SAFETY: the caller's guarantee.
    let policy = unsafe { policy.as_ref() };
    set!(o, |o| o.options.filter_policy = policy.map(|p| p.policy()));
}

/// # Safety
/// `o` is NULL or a live options object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_create_if_missing(o: *mut leveldb_options_t, v: u8) {
    set!(o, |o| o.options.create_if_missing = v != 0);
}

/// # Safety
/// `o` is NULL or a live options object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_error_if_exists(o: *mut leveldb_options_t, v: u8) {
    set!(o, |o| o.options.error_if_exists = v != 0);
}

/// # Safety
/// `o` is NULL or a live options object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_paranoid_checks(o: *mut leveldb_options_t, v: u8) {
    set!(o, |o| o.options.paranoid_checks = v != 0);
}

/// # Safety
/// `o` and `env` are NULL or live objects of this library.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_env(
    o: *mut leveldb_options_t,
    env: *mut leveldb_env_t,
) {
    // SAFETY: the caller's guarantee.
    let env = unsafe { env.as_ref() };
    set!(o, |o| {
        o.options.env = match env {
            Some(e) => Arc::clone(&e.env),
            None => Arc::new(DiskEnv::new()),
        }
    });
}

/// Accepted and ignored: Strata always writes its `LOG` file (see [`leveldb_logger_t`]).
///
/// # Safety
/// `o` is NULL or a live options object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_info_log(
    _o: *mut leveldb_options_t,
    _logger: *mut leveldb_logger_t,
) {
}

/// # Safety
/// `o` is NULL or a live options object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_write_buffer_size(
    o: *mut leveldb_options_t,
    v: usize,
) {
    set!(o, |o| o.options.write_buffer_size = v);
}

/// # Safety
/// `o` is NULL or a live options object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_max_open_files(o: *mut leveldb_options_t, v: c_int) {
    set!(o, |o| o.options.max_open_files =
        usize::try_from(v).unwrap_or(0));
}

/// # Safety
/// `o` and `cache` are NULL or live objects of this library.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_cache(
    o: *mut leveldb_options_t,
    cache: *mut leveldb_cache_t,
) {
    // SAFETY: the caller's guarantee.
    let cache = unsafe { cache.as_ref() };
    set!(o, |o| o.options.block_cache =
        cache.map(|c| Arc::clone(&c.cache)));
}

/// # Safety
/// `o` is NULL or a live options object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_block_size(o: *mut leveldb_options_t, v: usize) {
    set!(o, |o| o.options.block_size = v);
}

/// # Safety
/// `o` is NULL or a live options object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_block_restart_interval(
    o: *mut leveldb_options_t,
    v: c_int,
) {
    set!(o, |o| o.options.block_restart_interval =
        usize::try_from(v).unwrap_or(0));
}

/// # Safety
/// `o` is NULL or a live options object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_max_file_size(o: *mut leveldb_options_t, v: usize) {
    set!(o, |o| o.options.max_file_size = v);
}

/// `leveldb_no_compression` (0) or `leveldb_snappy_compression` (1); other values store
/// blocks uncompressed, as LevelDB's table builder does with a type it does not know.
///
/// # Safety
/// `o` is NULL or a live options object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_compression(o: *mut leveldb_options_t, v: c_int) {
    set!(o, |o| {
        o.options.compression = if v == 1 {
            Compression::Snappy
        } else {
            Compression::None
        }
    });
}

#[unsafe(no_mangle)]
pub extern "C" fn leveldb_readoptions_create() -> *mut leveldb_readoptions_t {
    Box::into_raw(Box::default())
}

destroy_fn!(
    /// Frees read options (and their hold on a snapshot).
    leveldb_readoptions_destroy: leveldb_readoptions_t
);

/// Checksums are verified by default in Strata (LevelDB's default is off); 0 turns that off.
///
/// # Safety
/// `o` is NULL or a live read options object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_readoptions_set_verify_checksums(
    o: *mut leveldb_readoptions_t,
    v: u8,
) {
    set!(o, |o| o.options.verify_checksums = v != 0);
}

/// # Safety
/// `o` is NULL or a live read options object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_readoptions_set_fill_cache(o: *mut leveldb_readoptions_t, v: u8) {
    set!(o, |o| o.options.fill_cache = v != 0);
}

/// Reads through these options see the database as of `snap` (NULL: the latest state).
/// The options hold the snapshot until they are destroyed or given another.
///
/// # Safety
/// `o` is NULL or a live read options object; `snap` is NULL or a live snapshot.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_readoptions_set_snapshot(
    o: *mut leveldb_readoptions_t,
    snap: *const leveldb_snapshot_t,
) {
    // SAFETY: the caller's guarantee.
    let snap = unsafe { snap.as_ref() };
    set!(o, |o| o.options.snapshot = snap.map(|s| s.snapshot.clone()));
}

#[unsafe(no_mangle)]
pub extern "C" fn leveldb_writeoptions_create() -> *mut leveldb_writeoptions_t {
    Box::into_raw(Box::default())
}

destroy_fn!(
    /// Frees write options.
    leveldb_writeoptions_destroy: leveldb_writeoptions_t
);

/// # Safety
/// `o` is NULL or a live write options object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writeoptions_set_sync(o: *mut leveldb_writeoptions_t, v: u8) {
    set!(o, |o| o.options.sync = v != 0);
}

/// A block cache of `capacity` bytes (Strata's cache is CLOCK, not LRU; the name is the
/// API's).
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_cache_create_lru(capacity: usize) -> *mut leveldb_cache_t {
    Box::into_raw(Box::new(leveldb_cache_t {
        cache: BlockCache::new(capacity),
    }))
}

destroy_fn!(
    /// Drops the caller's handle; databases opened with the cache keep it alive until closed.
    leveldb_cache_destroy: leveldb_cache_t
);

#[unsafe(no_mangle)]
pub extern "C" fn leveldb_create_default_env() -> *mut leveldb_env_t {
    Box::into_raw(Box::new(leveldb_env_t {
        env: Arc::new(DiskEnv::new()),
    }))
}

destroy_fn!(
    /// Frees an environment handle; databases opened with it keep their own.
    leveldb_env_destroy: leveldb_env_t
);

/// A directory for tests, as LevelDB's POSIX environment gives it: `$TEST_TMPDIR` if set,
/// else `/tmp/leveldbtest-<euid>`, created if missing. `malloc`'d; NULL if `env` is NULL.
///
/// # Safety
/// `env` is NULL or a live environment.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_env_get_test_directory(env: *mut leveldb_env_t) -> *mut c_char {
    // SAFETY: the caller's guarantee.
    let Some(env) = (unsafe { env.as_ref() }) else {
        return std::ptr::null_mut();
    };
    let dir = match std::env::var("TEST_TMPDIR") {
        Ok(d) if !d.is_empty() => d,
        // SAFETY: `geteuid` has no preconditions.
        _ => format!("/tmp/leveldbtest-{}", unsafe { libc::geteuid() }),
    };
    // LevelDB ignores a failure here too: the caller finds out when it uses the directory.
    let _ = env.env.create_dir_all(std::path::Path::new(&dir));
    malloc_cstring(&dir)
}
