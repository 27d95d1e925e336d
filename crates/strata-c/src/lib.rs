//! LevelDB 1.23's C API (`include/leveldb/c.h`, 68 functions) over Strata, built as a
//! shared library that stands in for `libleveldb.so`: an existing program or language
//! binding runs on Strata with no change and no recompile (`scripts/install-libleveldb.sh`,
//! README "LevelDB drop-in").
//!
//! Contract, as LevelDB's `db/c.cc` keeps it:
//! - A1 strings and values returned to the caller come from `malloc`; the caller frees
//!   them with `free` or `leveldb_free`.
//! - A2 errors: a function with an `errptr` leaves it alone on success; on failure it frees
//!   the message already there (if any) and stores a fresh `malloc`'d one. Messages begin
//!   as LevelDB's `Status::ToString` does (`IO error: `, `Corruption: `, `Invalid argument: `,
//!   `NotFound: `, `Not implemented: `), so callers that look at the prefix still work.
//! - A3 an iterator's key and value pointers stay valid until the iterator moves or is
//!   destroyed.
//! - A4 no Rust panic unwinds into C: functions with an `errptr` report one as an error;
//!   the others abort, as every `extern "C"` function does on a panic.
//! - A5 every pointer the caller passes is one this library handed out (or NULL where
//!   LevelDB allows it) and is used as LevelDB allows: nothing here can check that. Where
//!   LevelDB's behaviour is undefined, Strata's stays memory safe when it can (an iterator
//!   or snapshot outliving its database keeps what it reads alive) but is not promised.
//!
//! The only symbols the library exports are the 68 `leveldb_*` functions (a `cdylib`
//! exports nothing else).

#![allow(non_camel_case_types)]
// A C API: every entry point takes raw pointers, so `unsafe` is the crate's trade, each
// block with its `SAFETY` argument (clippy's `undocumented_unsafe_blocks` denies one without).
#![allow(unsafe_code)]

/// Defines `leveldb_*_destroy`-style functions: each frees a box this library handed out.
macro_rules! destroy_fn {
    ($(#[$doc:meta])* $name:ident: $ty:ty) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The pointer is NULL or came from this library's matching create function and is
        /// destroyed once.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(p: *mut $ty) {
            if !p.is_null() {
                // SAFETY: the caller's guarantee.
                drop(unsafe { Box::from_raw(p) });
            }
        }
    };
}

mod batch;
mod callbacks;
mod db;
mod iterator;
mod options;
mod snapshot;
mod util;

pub use batch::leveldb_writebatch_t;
pub use callbacks::{leveldb_comparator_t, leveldb_filterpolicy_t};
pub use db::leveldb_t;
pub use iterator::leveldb_iterator_t;
pub use options::{
    leveldb_cache_t, leveldb_env_t, leveldb_logger_t, leveldb_options_t, leveldb_readoptions_t,
    leveldb_writeoptions_t,
};
pub use snapshot::leveldb_snapshot_t;

use std::ffi::{c_int, c_void};

/// Frees a pointer this library returned (A1).
///
/// # Safety
/// `ptr` is NULL or came from this library and was not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_free(ptr: *mut c_void) {
    // SAFETY: the caller's guarantee; every returned buffer came from `malloc`.
    unsafe { libc::free(ptr) }
}

/// The major version of the LevelDB API this library implements (1).
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_major_version() -> c_int {
    1
}

/// The minor version of the LevelDB API this library implements (23).
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_minor_version() -> c_int {
    23
}
