//! User callbacks: comparators and filter policies written in C, wrapped as Strata's
//! [`Comparator`] and [`FilterPolicy`] traits, and the built-in Bloom policy.
//!
//! A C callback cannot unwind into Rust (C has no unwinding), so calling one needs no
//! guard; the trampolines here only convert arguments.

use std::cmp::Ordering;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Arc;

use strata::{BloomPolicy, Comparator, FilterPolicy};

type Destructor = Option<unsafe extern "C" fn(*mut c_void)>;
type NameFn = Option<unsafe extern "C" fn(*mut c_void) -> *const c_char>;
type CompareFn =
    Option<unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize) -> c_int>;
type CreateFilterFn = Option<
    unsafe extern "C" fn(
        *mut c_void,
        *const *const c_char,
        *const usize,
        c_int,
        *mut usize,
    ) -> *mut c_char,
>;
type KeyMayMatchFn =
    Option<unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize) -> u8>;

/// The caller's `state` pointer, passed back to its callbacks. LevelDB calls comparators
/// and filter policies from any thread, so C callers already make them thread-safe.
#[derive(Debug, Clone, Copy)]
struct State(*mut c_void);

// SAFETY: the pointer is only handed back to the C callbacks it came with, which LevelDB's
// contract already requires to be callable from any thread.
unsafe impl Send for State {}
// SAFETY: as above.
unsafe impl Sync for State {}

/// Asks a C `name` callback once; a NULL callback or result gives an empty name.
fn call_name(state: State, name: NameFn) -> String {
    let Some(f) = name else {
        return String::new();
    };
    // SAFETY: the caller's callback with its own state (A5).
    let p = unsafe { f(state.0) };
    if p.is_null() {
        return String::new();
    }
    // SAFETY: a name callback returns a NUL-terminated string.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// A comparator made of C callbacks.
#[derive(Debug)]
struct CComparator {
    state: State,
    compare: CompareFn,
    name: String,
}

impl Comparator for CComparator {
    fn name(&self) -> &str {
        &self.name
    }

    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        let Some(f) = self.compare else {
            return a.cmp(b);
        };
        // SAFETY: the caller's callback with its own state, given two live byte ranges.
        let r = unsafe {
            f(
                self.state.0,
                a.as_ptr().cast(),
                a.len(),
                b.as_ptr().cast(),
                b.len(),
            )
        };
        r.cmp(&0)
    }
}

/// `leveldb_comparator_t`.
#[derive(Debug)]
pub struct leveldb_comparator_t {
    comparator: Arc<CComparator>,
    state: State,
    destructor: Destructor,
}

impl leveldb_comparator_t {
    pub(crate) fn comparator(&self) -> Arc<dyn Comparator> {
        self.comparator.clone()
    }
}

/// A comparator calling `compare(state, a, alen, b, blen)` (negative, zero or positive)
/// and named `name(state)` (asked once, now). `destructor(state)` runs at
/// `leveldb_comparator_destroy`, which the caller calls only once no open database
/// uses the comparator (as with LevelDB).
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_comparator_create(
    state: *mut c_void,
    destructor: Destructor,
    compare: CompareFn,
    name: NameFn,
) -> *mut leveldb_comparator_t {
    let state = State(state);
    Box::into_raw(Box::new(leveldb_comparator_t {
        comparator: Arc::new(CComparator {
            state,
            compare,
            name: call_name(state, name),
        }),
        state,
        destructor,
    }))
}

/// # Safety
/// `cmp` is NULL or came from `leveldb_comparator_create` and is destroyed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_comparator_destroy(cmp: *mut leveldb_comparator_t) {
    if cmp.is_null() {
        return;
    }
    // SAFETY: the caller's guarantee.
    let cmp = unsafe { Box::from_raw(cmp) };
    if let Some(d) = cmp.destructor {
        // SAFETY: the caller's destructor with its own state, called once.
        unsafe { d(cmp.state.0) };
    }
}

/// A filter policy made of C callbacks.
#[derive(Debug)]
struct CFilterPolicy {
    state: State,
    create_filter: CreateFilterFn,
    key_may_match: KeyMayMatchFn,
    name: String,
}

impl FilterPolicy for CFilterPolicy {
    fn name(&self) -> &str {
        &self.name
    }

    fn create_filter(&self, keys: &[&[u8]], dst: &mut Vec<u8>) {
        let Some(f) = self.create_filter else {
            return;
        };
        let ptrs: Vec<*const c_char> = keys.iter().map(|k| k.as_ptr().cast()).collect();
        let lens: Vec<usize> = keys.iter().map(|k| k.len()).collect();
        let mut len = 0usize;
        let n = c_int::try_from(keys.len()).unwrap_or(c_int::MAX);
        // SAFETY: the caller's callback with its own state, given arrays of `n` live keys.
        let filter = unsafe { f(self.state.0, ptrs.as_ptr(), lens.as_ptr(), n, &mut len) };
        if filter.is_null() {
            return;
        }
        // SAFETY: the callback returns `len` bytes from `malloc`, ours to free.
        unsafe {
            dst.extend_from_slice(std::slice::from_raw_parts(filter.cast::<u8>(), len));
            libc::free(filter.cast());
        }
    }

    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        let Some(f) = self.key_may_match else {
            return true;
        };
        // SAFETY: the caller's callback with its own state, given two live byte ranges.
        unsafe {
            f(
                self.state.0,
                key.as_ptr().cast(),
                key.len(),
                filter.as_ptr().cast(),
                filter.len(),
            ) != 0
        }
    }
}

/// `leveldb_filterpolicy_t`: a C policy or the built-in Bloom filter.
#[derive(Debug)]
pub struct leveldb_filterpolicy_t {
    policy: Arc<dyn FilterPolicy>,
    state: State,
    destructor: Destructor,
}

impl leveldb_filterpolicy_t {
    pub(crate) fn policy(&self) -> Arc<dyn FilterPolicy> {
        Arc::clone(&self.policy)
    }
}

/// A filter policy of C callbacks (see `leveldb/c.h`): `create_filter` returns a
/// `malloc`'d filter and its length, which Strata copies and frees.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_filterpolicy_create(
    state: *mut c_void,
    destructor: Destructor,
    create_filter: CreateFilterFn,
    key_may_match: KeyMayMatchFn,
    name: NameFn,
) -> *mut leveldb_filterpolicy_t {
    let state = State(state);
    Box::into_raw(Box::new(leveldb_filterpolicy_t {
        policy: Arc::new(CFilterPolicy {
            state,
            create_filter,
            key_may_match,
            name: call_name(state, name),
        }),
        state,
        destructor,
    }))
}

/// LevelDB's built-in Bloom filter (`leveldb.BuiltinBloomFilter2`), compatible both ways.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_filterpolicy_create_bloom(
    bits_per_key: c_int,
) -> *mut leveldb_filterpolicy_t {
    let bits = usize::try_from(bits_per_key).unwrap_or(0);
    Box::into_raw(Box::new(leveldb_filterpolicy_t {
        policy: Arc::new(BloomPolicy::new(bits)),
        state: State(std::ptr::null_mut()),
        destructor: None,
    }))
}

/// # Safety
/// `policy` is NULL or came from one of the `leveldb_filterpolicy_create*` functions and
/// is destroyed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_filterpolicy_destroy(policy: *mut leveldb_filterpolicy_t) {
    if policy.is_null() {
        return;
    }
    // SAFETY: the caller's guarantee.
    let policy = unsafe { Box::from_raw(policy) };
    if let Some(d) = policy.destructor {
        // SAFETY: the caller's destructor with its own state, called once.
        unsafe { d(policy.state.0) };
    }
}
