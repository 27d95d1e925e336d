//! LMDB (Debian's liblmdb 0.9), through its C API: one B+tree in a memory map. Writes run
//! with `MDB_NOSYNC` and a synced write calls `mdb_env_sync` after its commit (LMDB's
//! default durability); the map is sized to hold the benchmark. LMDB has no block cache
//! (the OS page cache serves reads) and no compaction (`compact` is n/a: it succeeds
//! doing nothing, and reports say so).

#![allow(unsafe_code, reason = "foreign calls into the LMDB C library")]

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::path::Path;
use std::ptr;

use anyhow::{Result, anyhow};

use crate::engine::{BatchOp, Engine, EngineKind, Settings, Update, found};

#[repr(C)]
struct Opaque(c_void);

#[repr(C)]
#[derive(Clone, Copy)]
struct Val {
    size: usize,
    data: *mut c_void,
}

const MDB_NOSUBDIR: c_uint = 0x4000;
const MDB_NOSYNC: c_uint = 0x10000;
const MDB_RDONLY: c_uint = 0x20000;
const MDB_NOTLS: c_uint = 0x200000;
const MDB_CREATE: c_uint = 0x40000;
const MDB_NOTFOUND: c_int = -30798;
const MDB_FIRST: c_int = 0;
const MDB_LAST: c_int = 6;
const MDB_NEXT: c_int = 8;
const MDB_PREV: c_int = 12;
const MDB_SET_RANGE: c_int = 17;

unsafe extern "C" {
    fn mdb_env_create(env: *mut *mut Opaque) -> c_int;
    fn mdb_env_set_mapsize(env: *mut Opaque, size: usize) -> c_int;
    fn mdb_env_open(env: *mut Opaque, path: *const c_char, flags: c_uint, mode: c_uint) -> c_int;
    fn mdb_env_close(env: *mut Opaque);
    fn mdb_env_sync(env: *mut Opaque, force: c_int) -> c_int;
    fn mdb_txn_begin(
        env: *mut Opaque,
        parent: *mut Opaque,
        flags: c_uint,
        txn: *mut *mut Opaque,
    ) -> c_int;
    fn mdb_txn_commit(txn: *mut Opaque) -> c_int;
    fn mdb_txn_abort(txn: *mut Opaque);
    fn mdb_dbi_open(
        txn: *mut Opaque,
        name: *const c_char,
        flags: c_uint,
        dbi: *mut c_uint,
    ) -> c_int;
    fn mdb_put(
        txn: *mut Opaque,
        dbi: c_uint,
        key: *mut Val,
        data: *mut Val,
        flags: c_uint,
    ) -> c_int;
    fn mdb_get(txn: *mut Opaque, dbi: c_uint, key: *mut Val, data: *mut Val) -> c_int;
    fn mdb_del(txn: *mut Opaque, dbi: c_uint, key: *mut Val, data: *mut Val) -> c_int;
    fn mdb_cursor_open(txn: *mut Opaque, dbi: c_uint, cursor: *mut *mut Opaque) -> c_int;
    fn mdb_cursor_close(cursor: *mut Opaque);
    fn mdb_cursor_get(cursor: *mut Opaque, key: *mut Val, data: *mut Val, op: c_int) -> c_int;
    fn mdb_strerror(err: c_int) -> *const c_char;
}

fn check(rc: c_int) -> Result<()> {
    if rc == 0 {
        return Ok(());
    }
    // SAFETY: mdb_strerror returns a static NUL-terminated message.
    let msg = unsafe { CStr::from_ptr(mdb_strerror(rc)) }.to_string_lossy();
    Err(anyhow!("LMDB: {msg} ({rc})"))
}

fn val(b: &[u8]) -> Val {
    Val {
        size: b.len(),
        data: b.as_ptr() as *mut c_void,
    }
}

/// Opens LMDB environments.
#[derive(Debug)]
pub struct LmdbKind;

struct Lmdb {
    env: *mut Opaque,
    dbi: c_uint,
}

// SAFETY: an LMDB environment opened with MDB_NOTLS may be used from any thread; each call
// here begins and ends its own transaction, and LMDB serialises write transactions itself.
unsafe impl Send for Lmdb {}
// SAFETY: as above.
unsafe impl Sync for Lmdb {}

impl EngineKind for LmdbKind {
    fn name(&self) -> &'static str {
        "lmdb"
    }
    fn version(&self) -> String {
        "0.9 (Debian)".to_string()
    }
    fn has_compaction(&self) -> bool {
        false
    }
    fn has_transactions(&self) -> bool {
        true
    }
    fn open(&self, dir: &Path, _s: &Settings) -> Result<Box<dyn Engine>> {
        let path = CString::new(dir.join("data.mdb").as_os_str().as_encoded_bytes())?;
        let mut env = ptr::null_mut();
        // SAFETY: the environment is created, configured and opened here, and closed in Drop
        // (or below on failure).
        unsafe {
            check(mdb_env_create(&mut env))?;
            // Owns the environment from here on: any early return closes it, once.
            let mut engine = Lmdb { env, dbi: 0 };
            check(mdb_env_set_mapsize(env, 64 << 30))?;
            check(mdb_env_open(
                env,
                path.as_ptr(),
                MDB_NOSUBDIR | MDB_NOSYNC | MDB_NOTLS,
                0o644,
            ))?;
            let mut txn = ptr::null_mut();
            check(mdb_txn_begin(env, ptr::null_mut(), 0, &mut txn))?;
            let mut dbi = 0;
            let rc = mdb_dbi_open(txn, ptr::null(), MDB_CREATE, &mut dbi);
            if rc != 0 {
                mdb_txn_abort(txn);
                return Err(check(rc).err().unwrap_or_else(|| anyhow!("mdb_dbi_open")));
            }
            check(mdb_txn_commit(txn))?;
            engine.dbi = dbi;
            Ok(Box::new(engine))
        }
    }
}

impl Drop for Lmdb {
    fn drop(&mut self) {
        // SAFETY: created in `open`; no transaction outlives a call.
        unsafe { mdb_env_close(self.env) }
    }
}

impl Lmdb {
    /// Runs `f` in a write transaction, commits, and syncs if asked.
    fn write(&self, sync: bool, f: impl FnOnce(*mut Opaque) -> c_int) -> Result<()> {
        let mut txn = ptr::null_mut();
        // SAFETY: a write transaction on the open environment, committed or aborted here.
        unsafe {
            check(mdb_txn_begin(self.env, ptr::null_mut(), 0, &mut txn))?;
            let rc = f(txn);
            if rc != 0 && rc != MDB_NOTFOUND {
                mdb_txn_abort(txn);
                return check(rc);
            }
            check(mdb_txn_commit(txn))?;
            if sync {
                check(mdb_env_sync(self.env, 1))?;
            }
        }
        Ok(())
    }

    /// Runs `f` in a read transaction.
    fn read<T>(&self, f: impl FnOnce(*mut Opaque) -> Result<T>) -> Result<T> {
        let mut txn = ptr::null_mut();
        // SAFETY: a read-only transaction, aborted (its normal end) after `f`.
        unsafe {
            check(mdb_txn_begin(
                self.env,
                ptr::null_mut(),
                MDB_RDONLY,
                &mut txn,
            ))?;
            let out = f(txn);
            mdb_txn_abort(txn);
            out
        }
    }
}

impl Engine for Lmdb {
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        let (mut k, mut v) = (val(key), val(value));
        // SAFETY: the Vals point into slices valid for the call; LMDB copies them.
        self.write(sync, |txn| unsafe {
            mdb_put(txn, self.dbi, &mut k, &mut v, 0)
        })
    }
    fn get(&self, key: &[u8], visit: &mut dyn FnMut(&[u8])) -> Result<bool> {
        self.read(|txn| {
            let mut k = val(key);
            let mut v = Val {
                size: 0,
                data: ptr::null_mut(),
            };
            // SAFETY: `v` points into the map, valid until the transaction ends (after
            // `visit` returns).
            let rc = unsafe { mdb_get(txn, self.dbi, &mut k, &mut v) };
            if rc == MDB_NOTFOUND {
                return Ok(false);
            }
            check(rc)?;
            // SAFETY: as above.
            let value = unsafe { std::slice::from_raw_parts(v.data.cast::<u8>(), v.size) };
            Ok(found(visit, Some(value)))
        })
    }
    fn transact(&self, keys: &[&[u8]], update: &mut Update<'_>, sync: bool) -> Result<bool> {
        // One write transaction: LMDB runs one writer at a time, so it never conflicts.
        self.write(sync, |txn| {
            let mut read = Vec::with_capacity(keys.len());
            for key in keys {
                let mut k = val(key);
                let mut v = Val {
                    size: 0,
                    data: ptr::null_mut(),
                };
                // SAFETY: `v` points into the map, valid while the transaction is; copied
                // out at once.
                let rc = unsafe { mdb_get(txn, self.dbi, &mut k, &mut v) };
                match rc {
                    0 => read.push(Some(
                        // SAFETY: as above.
                        unsafe { std::slice::from_raw_parts(v.data.cast::<u8>(), v.size) }.to_vec(),
                    )),
                    MDB_NOTFOUND => read.push(None),
                    rc => return rc,
                }
            }
            for (key, value) in keys.iter().zip(update(&read)) {
                // SAFETY: slices valid for the call; LMDB copies them.
                let rc = unsafe { mdb_put(txn, self.dbi, &mut val(key), &mut val(&value), 0) };
                if rc != 0 {
                    return rc;
                }
            }
            0
        })?;
        Ok(true)
    }
    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        let mut k = val(key);
        // SAFETY: the key is valid for the call; a missing key is not an error.
        self.write(sync, |txn| unsafe {
            mdb_del(txn, self.dbi, &mut k, ptr::null_mut())
        })
    }
    fn write_batch(&self, ops: &[BatchOp], sync: bool) -> Result<()> {
        self.write(sync, |txn| {
            for (k, v) in ops {
                let mut kv = val(k);
                // SAFETY: slices valid for the call; LMDB copies them.
                let rc = unsafe {
                    match v {
                        Some(v) => mdb_put(txn, self.dbi, &mut kv, &mut val(v), 0),
                        None => mdb_del(txn, self.dbi, &mut kv, ptr::null_mut()),
                    }
                };
                if rc != 0 && rc != MDB_NOTFOUND {
                    return rc;
                }
            }
            0
        })
    }
    fn scan(
        &self,
        reverse: bool,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        self.read(|txn| {
            let mut cursor = ptr::null_mut();
            // SAFETY: a cursor in this read transaction, closed before it ends; key and value
            // point into the map and are used only inside `visit`.
            unsafe {
                check(mdb_cursor_open(txn, self.dbi, &mut cursor))?;
                let mut k = Val {
                    size: 0,
                    data: ptr::null_mut(),
                };
                let mut v = k;
                let mut op = if reverse { MDB_LAST } else { MDB_FIRST };
                let mut n = 0;
                while n < limit {
                    let rc = mdb_cursor_get(cursor, &mut k, &mut v, op);
                    if rc == MDB_NOTFOUND {
                        break;
                    }
                    if rc != 0 {
                        mdb_cursor_close(cursor);
                        return check(rc).map(|()| n);
                    }
                    visit(
                        std::slice::from_raw_parts(k.data.cast::<u8>(), k.size),
                        std::slice::from_raw_parts(v.data.cast::<u8>(), v.size),
                    );
                    n += 1;
                    op = if reverse { MDB_PREV } else { MDB_NEXT };
                }
                mdb_cursor_close(cursor);
                Ok(n)
            }
        })
    }
    fn seek(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.read(|txn| {
            let mut cursor = ptr::null_mut();
            // SAFETY: as in `scan`.
            unsafe {
                check(mdb_cursor_open(txn, self.dbi, &mut cursor))?;
                let mut k = val(key);
                let mut v = Val {
                    size: 0,
                    data: ptr::null_mut(),
                };
                let rc = mdb_cursor_get(cursor, &mut k, &mut v, MDB_SET_RANGE);
                let out = match rc {
                    0 => Ok(Some(
                        std::slice::from_raw_parts(k.data.cast::<u8>(), k.size).to_vec(),
                    )),
                    MDB_NOTFOUND => Ok(None),
                    rc => check(rc).map(|()| None),
                };
                mdb_cursor_close(cursor);
                out
            }
        })
    }
    fn compact(&self) -> Result<()> {
        Ok(())
    }
    fn stats(&self) -> Option<String> {
        None
    }
    fn sstables(&self) -> Option<String> {
        None
    }
}
