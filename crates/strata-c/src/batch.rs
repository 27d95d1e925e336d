//! Write batches: built on the C side, applied by `leveldb_write`.

use std::ffi::{c_char, c_void};

use strata::BatchOp;
use strata::WriteBatch;

use crate::util::bytes;

/// `leveldb_writebatch_t`.
#[derive(Debug, Default)]
pub struct leveldb_writebatch_t {
    pub(crate) batch: WriteBatch,
}

#[unsafe(no_mangle)]
pub extern "C" fn leveldb_writebatch_create() -> *mut leveldb_writebatch_t {
    Box::into_raw(Box::default())
}

destroy_fn!(
    /// Frees a write batch.
    leveldb_writebatch_destroy: leveldb_writebatch_t
);

/// # Safety
/// A live batch.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writebatch_clear(b: *mut leveldb_writebatch_t) {
    // SAFETY: the caller's guarantee.
    unsafe { (*b).batch.clear() }
}

/// # Safety
/// A live batch; `key` holds `klen` bytes and `val` `vlen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writebatch_put(
    b: *mut leveldb_writebatch_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
) {
    // SAFETY: the caller's guarantee.
    unsafe { (*b).batch.put(bytes(key, klen), bytes(val, vlen)) }
}

/// # Safety
/// A live batch; `key` holds `klen` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writebatch_delete(
    b: *mut leveldb_writebatch_t,
    key: *const c_char,
    klen: usize,
) {
    // SAFETY: the caller's guarantee.
    unsafe { (*b).batch.delete(bytes(key, klen)) }
}

/// Calls `put` or `deleted` for each operation, in the order they were added.
///
/// # Safety
/// A live batch; the callbacks are valid functions taking `state`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writebatch_iterate(
    b: *const leveldb_writebatch_t,
    state: *mut c_void,
    put: Option<unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize)>,
    deleted: Option<unsafe extern "C" fn(*mut c_void, *const c_char, usize)>,
) {
    // SAFETY: the caller's guarantee.
    let batch = unsafe { &(*b).batch };
    for op in batch.iter() {
        // A batch built through this API always decodes; LevelDB stops at a bad record.
        let Ok(op) = op else { return };
        match op {
            BatchOp::Put(k, v) => {
                if let Some(f) = put {
                    // SAFETY: the caller's callback, given live byte ranges.
                    unsafe {
                        f(
                            state,
                            k.as_ptr().cast(),
                            k.len(),
                            v.as_ptr().cast(),
                            v.len(),
                        )
                    };
                }
            }
            BatchOp::Delete(k) => {
                if let Some(f) = deleted {
                    // SAFETY: the caller's callback, given a live byte range.
                    unsafe { f(state, k.as_ptr().cast(), k.len()) };
                }
            }
            // Blob refs are made inside the engine, never in a user's batch.
            BatchOp::BlobRef(..) => {}
        }
    }
}

/// Appends `source`'s operations to `destination`.
///
/// # Safety
/// Two live batches.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writebatch_append(
    destination: *mut leveldb_writebatch_t,
    source: *const leveldb_writebatch_t,
) {
    // SAFETY: the caller's guarantee; when both are the same batch, its bytes are copied
    // first.
    unsafe {
        if std::ptr::eq(destination, source) {
            let copy = (*source).batch.clone();
            (*destination).batch.append(&copy);
        } else {
            (*destination).batch.append(&(*source).batch);
        }
    }
}
