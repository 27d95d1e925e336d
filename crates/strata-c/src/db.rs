//! The database handle and what is asked of it: open, writes, reads, snapshots,
//! properties, sizes, compaction; destroy and repair.

use std::ffi::{CStr, c_char, c_int};

use strata::Db;

use crate::batch::leveldb_writebatch_t;
use crate::options::{leveldb_options_t, leveldb_readoptions_t, leveldb_writeoptions_t};
use crate::snapshot::leveldb_snapshot_t;
use crate::util::{bytes, malloc_copy, malloc_cstring, path, with_errptr};

/// `leveldb_t`: an open database.
#[derive(Debug)]
pub struct leveldb_t {
    pub(crate) db: Db,
}

/// Opens (or creates, per the options) the database `name`; NULL and an error on failure.
///
/// # Safety
/// `options` is a live options object; `name` a NUL-terminated string; `errptr` as in A2.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_open(
    options: *const leveldb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut leveldb_t {
    // SAFETY: the caller's guarantee; `errptr` as in A2.
    unsafe {
        with_errptr(errptr, std::ptr::null_mut(), || {
            let options = leveldb_options_t::sanitized_or_default(options);
            let db = Db::open(path(name)?, options)?;
            Ok(Box::into_raw(Box::new(leveldb_t { db })))
        })
    }
}

destroy_fn!(
    /// Closes the database (its background work is finished first).
    leveldb_close: leveldb_t
);

/// # Safety
/// Live `db` and `options`; `key` holds `keylen` bytes, `val` `vallen`; `errptr` as in A2.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_put(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
    errptr: *mut *mut c_char,
) {
    // SAFETY: the caller's guarantee.
    unsafe {
        let (db, o) = (&(*db).db, &(*options).options);
        let (k, v) = (bytes(key, keylen), bytes(val, vallen));
        with_errptr(errptr, (), || db.put_opt(k, v, o));
    }
}

/// # Safety
/// Live `db` and `options`; `key` holds `keylen` bytes; `errptr` as in A2.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_delete(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    key: *const c_char,
    keylen: usize,
    errptr: *mut *mut c_char,
) {
    // SAFETY: the caller's guarantee.
    unsafe {
        let (db, o) = (&(*db).db, &(*options).options);
        let k = bytes(key, keylen);
        with_errptr(errptr, (), || db.delete_opt(k, o));
    }
}

/// Applies `batch` atomically; the caller keeps the batch.
///
/// # Safety
/// Live `db`, `options` and `batch`; `errptr` as in A2.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_write(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    batch: *mut leveldb_writebatch_t,
    errptr: *mut *mut c_char,
) {
    // SAFETY: the caller's guarantee.
    unsafe {
        let (db, o, b) = (&(*db).db, &(*options).options, &(*batch).batch);
        with_errptr(errptr, (), || db.write_opt(b.clone(), o));
    }
}

/// The value of `key` as a `malloc`'d buffer of `*vallen` bytes, or NULL (and
/// `*vallen = 0`) if there is none or on error.
///
/// # Safety
/// Live `db` and `options`; `key` holds `keylen` bytes; `vallen` is writable; `errptr` as
/// in A2.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_get(
    db: *mut leveldb_t,
    options: *const leveldb_readoptions_t,
    key: *const c_char,
    keylen: usize,
    vallen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    // SAFETY: the caller's guarantee.
    unsafe {
        let (db, o) = (&(*db).db, &(*options).options);
        let k = bytes(key, keylen);
        *vallen = 0;
        with_errptr(errptr, std::ptr::null_mut(), || {
            Ok(match db.get_pinned_opt(k, o)? {
                Some(v) => {
                    *vallen = v.len();
                    malloc_copy(&v)
                }
                None => std::ptr::null_mut(),
            })
        })
    }
}

/// # Safety
/// A live `db`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_create_snapshot(db: *mut leveldb_t) -> *const leveldb_snapshot_t {
    // SAFETY: the caller's guarantee.
    let snapshot = unsafe { (*db).db.snapshot() };
    Box::into_raw(Box::new(leveldb_snapshot_t { snapshot }))
}

/// # Safety
/// `snapshot` came from `leveldb_create_snapshot` and is released once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_release_snapshot(
    _db: *mut leveldb_t,
    snapshot: *const leveldb_snapshot_t,
) {
    if !snapshot.is_null() {
        // SAFETY: the caller's guarantee.
        drop(unsafe { Box::from_raw(snapshot.cast_mut()) });
    }
}

/// The property's value as a `malloc`'d string, or NULL for an unknown name.
///
/// # Safety
/// A live `db`; `propname` a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_property_value(
    db: *mut leveldb_t,
    propname: *const c_char,
) -> *mut c_char {
    if propname.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's guarantee.
    let (db, name) = unsafe { (&(*db).db, CStr::from_ptr(propname)) };
    let Ok(name) = name.to_str() else {
        return std::ptr::null_mut();
    };
    match db.property(name) {
        Some(v) => malloc_cstring(&v),
        None => std::ptr::null_mut(),
    }
}

/// The approximate file bytes of each of `num_ranges` key ranges `[start, limit)`.
///
/// # Safety
/// A live `db`; each array holds `num_ranges` entries, each key its length in bytes;
/// `sizes` holds `num_ranges` writable entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_approximate_sizes(
    db: *mut leveldb_t,
    num_ranges: c_int,
    range_start_key: *const *const c_char,
    range_start_key_len: *const usize,
    range_limit_key: *const *const c_char,
    range_limit_key_len: *const usize,
    sizes: *mut u64,
) {
    let n = usize::try_from(num_ranges).unwrap_or(0);
    if n == 0 {
        return;
    }
    // SAFETY: the caller's guarantee.
    unsafe {
        let ranges: Vec<(&[u8], &[u8])> = (0..n)
            .map(|i| {
                (
                    bytes(*range_start_key.add(i), *range_start_key_len.add(i)),
                    bytes(*range_limit_key.add(i), *range_limit_key_len.add(i)),
                )
            })
            .collect();
        let got = (*db).db.approximate_sizes(&ranges);
        for (i, s) in got.into_iter().enumerate().take(n) {
            *sizes.add(i) = s;
        }
    }
}

/// Compacts the key range `[start, limit]`; a NULL key is the start or end of the
/// database. Errors are not reported (LevelDB's signature has no `errptr`).
///
/// # Safety
/// A live `db`; each key NULL or holding its length in bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_compact_range(
    db: *mut leveldb_t,
    start_key: *const c_char,
    start_key_len: usize,
    limit_key: *const c_char,
    limit_key_len: usize,
) {
    // SAFETY: the caller's guarantee.
    unsafe {
        let start = (!start_key.is_null()).then(|| bytes(start_key, start_key_len));
        let limit = (!limit_key.is_null()).then(|| bytes(limit_key, limit_key_len));
        let _ = (*db).db.compact_range(start, limit);
    }
}

/// Deletes the database `name`.
///
/// # Safety
/// A live `options`; `name` a NUL-terminated string; `errptr` as in A2.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_destroy_db(
    options: *const leveldb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) {
    // SAFETY: the caller's guarantee.
    unsafe {
        with_errptr(errptr, (), || {
            let options = leveldb_options_t::sanitized_or_default(options);
            Db::destroy(path(name)?, &options)
        });
    }
}

/// Rebuilds the database `name` from whatever is readable (LevelDB's `RepairDB`).
///
/// # Safety
/// A live `options`; `name` a NUL-terminated string; `errptr` as in A2.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_repair_db(
    options: *const leveldb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) {
    // SAFETY: the caller's guarantee.
    unsafe {
        with_errptr(errptr, (), || {
            let options = leveldb_options_t::sanitized_or_default(options);
            Db::repair(path(name)?, options)
        });
    }
}
