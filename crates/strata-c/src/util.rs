//! Conversions at the C boundary: borrowed byte ranges, `malloc`'d copies, error
//! messages in LevelDB's words (A1, A2), and the panic guard (A4).

use std::ffi::{CStr, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

use strata::Error;

/// The `len` bytes at `ptr` (NULL is accepted when `len` is 0).
///
/// # Safety
/// Unless `len` is 0, `ptr` points to `len` readable bytes that outlive `'a`.
pub unsafe fn bytes<'a>(ptr: *const c_char, len: usize) -> &'a [u8] {
    if len == 0 || ptr.is_null() {
        return &[];
    }
    // SAFETY: the caller's guarantee.
    unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) }
}

/// A path from a NUL-terminated C string (bytes as they are: Unix paths are bytes).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
pub unsafe fn path(name: *const c_char) -> Result<PathBuf, Error> {
    if name.is_null() {
        return Err(Error::InvalidArgument("database name is NULL".into()));
    }
    // SAFETY: the caller's guarantee.
    let s = unsafe { CStr::from_ptr(name) };
    use std::os::unix::ffi::OsStrExt;
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(s.to_bytes())))
}

/// A `malloc`'d copy of `data` (A1); an empty value is still a non-NULL pointer (one byte
/// is asked for), as LevelDB gives on glibc. NULL only if memory ran out.
pub fn malloc_copy(data: &[u8]) -> *mut c_char {
    // SAFETY: `malloc` may be called with any size.
    let p = unsafe { libc::malloc(data.len().max(1)) }.cast::<u8>();
    if !p.is_null() && !data.is_empty() {
        // SAFETY: `p` holds `data.len()` fresh bytes that cannot overlap `data`.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
    }
    p.cast()
}

/// A `malloc`'d NUL-terminated copy of `s` (interior NULs cut the string short, as C
/// would read it anyway).
pub fn malloc_cstring(s: &str) -> *mut c_char {
    let s = s.as_bytes();
    // SAFETY: `malloc` may be called with any size.
    let p = unsafe { libc::malloc(s.len() + 1) }.cast::<u8>();
    if !p.is_null() {
        // SAFETY: `p` holds `s.len() + 1` fresh bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(s.as_ptr(), p, s.len());
            *p.add(s.len()) = 0;
        }
    }
    p.cast()
}

/// An error as LevelDB's `Status::ToString` would word it (A2).
pub fn status_string(e: &Error) -> String {
    match e {
        Error::Corruption(c) => format!("Corruption: {c}"),
        Error::Io { context, source } => format!("IO error: {context}: {source}"),
        Error::InvalidArgument(s) => format!("Invalid argument: {s}"),
        Error::NotFound(s) => format!("NotFound: {s}"),
        Error::NotSupported(s) => format!("Not implemented: {s}"),
        Error::AlreadyExists(s) => format!("Invalid argument: {s}"),
        Error::ComparatorMismatch(names) => format!(
            "Invalid argument: {} does not match existing comparator : {}",
            names.database, names.options
        ),
        Error::Locked(s) => format!("IO error: lock {s}: already held by process"),
        other => format!("Invalid argument: {other}"),
    }
}

/// Stores `message` in `errptr` (A2): frees what was there; a NULL `errptr` drops it.
///
/// # Safety
/// `errptr` is NULL or points to a `char*` that is NULL or `malloc`'d.
pub unsafe fn save_error(errptr: *mut *mut c_char, message: &str) {
    if errptr.is_null() {
        return;
    }
    // SAFETY: the caller's guarantee.
    unsafe {
        libc::free((*errptr).cast());
        *errptr = malloc_cstring(message);
    }
}

/// Runs `f`; an error or a panic is stored in `errptr` and gives `failed` (A2, A4).
///
/// # Safety
/// As for [`save_error`].
pub unsafe fn with_errptr<T>(
    errptr: *mut *mut c_char,
    failed: T,
    f: impl FnOnce() -> Result<T, Error>,
) -> T {
    let message = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => return v,
        Ok(Err(e)) => status_string(&e),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            format!("Corruption: internal error (panic): {what}")
        }
    };
    // SAFETY: the caller's guarantee.
    unsafe { save_error(errptr, &message) };
    failed
}
