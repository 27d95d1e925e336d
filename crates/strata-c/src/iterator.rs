//! Iterators: a [`DbIterator`] behind a pointer. Key and value pointers point into the
//! iterator and stay valid until it moves (A3).

use std::ffi::c_char;

use strata::DbIterator;

use crate::db::leveldb_t;
use crate::options::leveldb_readoptions_t;
use crate::util::{bytes, save_error, status_string};

/// `leveldb_iterator_t`.
#[derive(Debug)]
pub struct leveldb_iterator_t {
    it: DbIterator,
}

/// An iterator over the database as of now (or the options' snapshot), not yet positioned.
///
/// # Safety
/// Live `db` and `options`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_create_iterator(
    db: *mut leveldb_t,
    options: *const leveldb_readoptions_t,
) -> *mut leveldb_iterator_t {
    // SAFETY: the caller's guarantee.
    let it = unsafe { (*db).db.raw_iterator_opt(&(*options).options) };
    Box::into_raw(Box::new(leveldb_iterator_t { it }))
}

destroy_fn!(
    /// Frees an iterator.
    leveldb_iter_destroy: leveldb_iterator_t
);

/// # Safety
/// A live iterator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_valid(it: *const leveldb_iterator_t) -> u8 {
    // SAFETY: the caller's guarantee.
    u8::from(unsafe { (*it).it.valid() })
}

/// # Safety
/// A live iterator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_seek_to_first(it: *mut leveldb_iterator_t) {
    // SAFETY: the caller's guarantee.
    unsafe { (*it).it.seek_to_first() }
}

/// # Safety
/// A live iterator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_seek_to_last(it: *mut leveldb_iterator_t) {
    // SAFETY: the caller's guarantee.
    unsafe { (*it).it.seek_to_last() }
}

/// # Safety
/// A live iterator; `k` holds `klen` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_seek(
    it: *mut leveldb_iterator_t,
    k: *const c_char,
    klen: usize,
) {
    // SAFETY: the caller's guarantee.
    unsafe { (*it).it.seek(bytes(k, klen)) }
}

/// # Safety
/// A live iterator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_next(it: *mut leveldb_iterator_t) {
    // SAFETY: the caller's guarantee.
    unsafe { (*it).it.next() }
}

/// # Safety
/// A live iterator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_prev(it: *mut leveldb_iterator_t) {
    // SAFETY: the caller's guarantee.
    unsafe { (*it).it.prev() }
}

/// The current key (empty if the iterator is not valid, where LevelDB's is undefined).
///
/// # Safety
/// A live iterator; `klen` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_key(
    it: *const leveldb_iterator_t,
    klen: *mut usize,
) -> *const c_char {
    // SAFETY: the caller's guarantee.
    unsafe {
        let k = (*it).it.key();
        *klen = k.len();
        k.as_ptr().cast()
    }
}

/// The current value (empty if the iterator is not valid).
///
/// # Safety
/// A live iterator; `vlen` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_value(
    it: *const leveldb_iterator_t,
    vlen: *mut usize,
) -> *const c_char {
    // SAFETY: the caller's guarantee.
    unsafe {
        let v = (*it).it.value();
        *vlen = v.len();
        v.as_ptr().cast()
    }
}

/// Stores the iterator's error, if any, in `errptr` (A2).
///
/// # Safety
/// A live iterator; `errptr` as in A2.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_get_error(
    it: *const leveldb_iterator_t,
    errptr: *mut *mut c_char,
) {
    // SAFETY: the caller's guarantee.
    if let Err(e) = unsafe { (*it).it.status() } {
        // SAFETY: as in A2.
        unsafe { save_error(errptr, &status_string(&e)) };
    }
}
