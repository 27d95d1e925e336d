//! WiredTiger 3.2 (Debian's libwiredtiger), in two variants: an LSM table and a B-tree
//! table, through the flat C shim in `csrc/wiredtiger_shim.c`. The cache is the settings'
//! size; the LSM chunk size is the write buffer; Snappy (Debian's extension) when
//! compression is on; logging on, synced only for synced writes (`commit sync=on`).
//! WiredTiger sessions are single-threaded: each call borrows one from a pool.

#![allow(unsafe_code, reason = "foreign calls into the WiredTiger C library")]

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::Path;
use std::sync::Mutex;

use anyhow::{Result, anyhow};

use crate::engine::{BatchOp, Cannot, Engine, EngineKind, Settings, Update, found};

#[repr(C)]
struct Opaque(c_void);

unsafe extern "C" {
    fn st_wt_open(home: *const c_char, config: *const c_char, conn: *mut *mut Opaque) -> c_int;
    fn st_wt_close(conn: *mut Opaque) -> c_int;
    fn st_wt_strerror(err: c_int) -> *const c_char;
    fn st_wt_session(
        conn: *mut Opaque,
        create: *const c_char,
        s: *mut *mut Opaque,
        c: *mut *mut Opaque,
    ) -> c_int;
    fn st_wt_session_close(s: *mut Opaque) -> c_int;
    fn st_wt_put(c: *mut Opaque, k: *const c_void, kl: usize, v: *const c_void, vl: usize)
    -> c_int;
    fn st_wt_get(
        c: *mut Opaque,
        k: *const c_void,
        kl: usize,
        v: *mut *const c_void,
        vl: *mut usize,
    ) -> c_int;
    fn st_wt_del(c: *mut Opaque, k: *const c_void, kl: usize) -> c_int;
    fn st_wt_reset(c: *mut Opaque) -> c_int;
    fn st_wt_next(c: *mut Opaque) -> c_int;
    fn st_wt_prev(c: *mut Opaque) -> c_int;
    fn st_wt_current(
        c: *mut Opaque,
        k: *mut *const c_void,
        kl: *mut usize,
        v: *mut *const c_void,
        vl: *mut usize,
    ) -> c_int;
    fn st_wt_seek(c: *mut Opaque, k: *const c_void, kl: usize) -> c_int;
    fn st_wt_begin(s: *mut Opaque) -> c_int;
    fn st_wt_begin_snapshot(s: *mut Opaque) -> c_int;
    fn st_wt_commit(s: *mut Opaque, sync: c_int) -> c_int;
    fn st_wt_rollback(s: *mut Opaque) -> c_int;
    fn st_wt_compact(s: *mut Opaque) -> c_int;
    fn st_wt_notfound() -> c_int;
}

/// WiredTiger's "roll back and retry" return code.
const WT_ROLLBACK: c_int = -31800;

fn check(rc: c_int) -> Result<()> {
    if rc == 0 {
        return Ok(());
    }
    // SAFETY: wiredtiger_strerror returns a NUL-terminated message.
    let msg = unsafe { CStr::from_ptr(st_wt_strerror(rc)) }.to_string_lossy();
    Err(anyhow!("WiredTiger: {msg} ({rc})"))
}

/// Opens WiredTiger databases with an LSM or a B-tree table.
#[derive(Debug)]
pub struct WiredTigerKind {
    /// An LSM table instead of a B-tree.
    pub lsm: bool,
}

/// A session and its cursor on the table.
struct Session {
    session: *mut Opaque,
    cursor: *mut Opaque,
}

struct WiredTiger {
    conn: *mut Opaque,
    create: CString,
    pool: Mutex<Vec<Session>>,
    /// The cache size, for messages.
    cache_label: String,
}

// SAFETY: a WiredTiger connection is thread-safe; sessions are used by one thread at a time
// (taken from the pool under its mutex and given back after the call).
unsafe impl Send for WiredTiger {}
// SAFETY: as above.
unsafe impl Sync for WiredTiger {}

const SNAPPY_EXTENSION: &str = "/usr/lib/x86_64-linux-gnu/libwiredtiger_snappy.so";

impl EngineKind for WiredTigerKind {
    fn name(&self) -> &'static str {
        if self.lsm {
            "wiredtiger-lsm"
        } else {
            "wiredtiger-btree"
        }
    }
    fn version(&self) -> String {
        "3.2 (Debian)".to_string()
    }
    fn has_transactions(&self) -> bool {
        // Not the LSM tree: under it, randomtransaction at 16 threads ended with the sets'
        // sums apart (updates lost), where the B-tree kept them equal at 1, 4 and 16.
        !self.lsm
    }
    fn open(&self, dir: &Path, s: &Settings) -> Result<Box<dyn Engine>> {
        let snappy = s.compression && Path::new(SNAPPY_EXTENSION).exists();
        let cache = if self.lsm {
            s.cache_size.max(3 << 20)
        } else {
            s.cache_size.max(1 << 20)
        };
        let mut config = format!("create,cache_size={cache},log=(enabled=true),session_max=256");
        if snappy {
            config.push_str(&format!(",extensions=[{SNAPPY_EXTENSION}]"));
        }
        let mut create = String::from("key_format=u,value_format=u");
        if snappy {
            create.push_str(",block_compressor=snappy");
        }
        if self.lsm {
            // WiredTiger refuses an LSM tree whose cache is under 3 chunks plus 1,474,560
            // bytes: the chunk is the write buffer, shrunk to fit the cache (never under its
            // 512 KiB minimum).
            let chunk = s
                .write_buffer_size
                .min((cache.saturating_sub(1_500_000)) / 3)
                .max(512 << 10);
            create.push_str(&format!(",type=lsm,lsm=(chunk_size={chunk})"));
        }
        let home = CString::new(dir.as_os_str().as_encoded_bytes())?;
        let config = CString::new(config)?;
        let mut conn = std::ptr::null_mut();
        // SAFETY: valid strings; on success the connection is owned by `WiredTiger`.
        check(unsafe { st_wt_open(home.as_ptr(), config.as_ptr(), &mut conn) })?;
        let engine = WiredTiger {
            conn,
            create: CString::new(create)?,
            pool: Mutex::new(Vec::new()),
            cache_label: format!("{} KiB", cache >> 10),
        };
        let first = engine.take()?; // creates the table
        engine.give(first);
        Ok(Box::new(engine))
    }
}

impl WiredTiger {
    fn take(&self) -> Result<Session> {
        if let Some(s) = self
            .pool
            .lock()
            .map_err(|_| anyhow!("pool poisoned"))?
            .pop()
        {
            return Ok(s);
        }
        let (mut session, mut cursor) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: live connection; the session and cursor are owned by the pool afterwards.
        check(unsafe {
            st_wt_session(self.conn, self.create.as_ptr(), &mut session, &mut cursor)
        })?;
        Ok(Session { session, cursor })
    }

    fn give(&self, s: Session) {
        // SAFETY: releases any position the call left, so pages are not pinned.
        unsafe { st_wt_reset(s.cursor) };
        if let Ok(mut pool) = self.pool.lock() {
            pool.push(s);
        }
    }

    fn with<T>(&self, f: impl FnOnce(&Session) -> Result<T>) -> Result<T> {
        let s = self.take()?;
        let out = f(&s);
        self.give(s);
        out
    }

    /// Runs `f` in a transaction committed with `sync`, or directly when not syncing.
    fn write(&self, sync: bool, f: impl FnOnce(&Session) -> Result<()>) -> Result<()> {
        self.with(|s| {
            if !sync {
                return f(s);
            }
            // SAFETY: a transaction on this thread's session, committed or rolled back here.
            unsafe {
                check(st_wt_begin(s.session))?;
                if let Err(e) = f(s) {
                    st_wt_rollback(s.session);
                    return Err(e);
                }
                check(st_wt_commit(s.session, 1))
            }
        })
    }
}

impl Drop for WiredTiger {
    fn drop(&mut self) {
        if let Ok(mut pool) = self.pool.lock() {
            for s in pool.drain(..) {
                // SAFETY: each session is closed once (closing its cursor too).
                unsafe { st_wt_session_close(s.session) };
            }
        }
        // SAFETY: closed once, after every session.
        unsafe { st_wt_close(self.conn) };
    }
}

fn bytes<'a>(p: *const c_void, len: usize) -> &'a [u8] {
    if len == 0 {
        return &[];
    }
    // SAFETY: WiredTiger returned `len` readable bytes at `p`, valid until the cursor
    // moves; callers use the slice before that.
    unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }
}

impl Engine for WiredTiger {
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        self.write(sync, |s| {
            // SAFETY: slices valid for the call; WiredTiger copies them.
            check(unsafe {
                st_wt_put(
                    s.cursor,
                    key.as_ptr().cast(),
                    key.len(),
                    value.as_ptr().cast(),
                    value.len(),
                )
            })
        })
    }
    fn get(&self, key: &[u8], visit: &mut dyn FnMut(&[u8])) -> Result<bool> {
        self.with(|s| {
            let (mut v, mut vl) = (std::ptr::null(), 0usize);
            // SAFETY: the key is valid for the call; the value is read before the cursor moves.
            let rc =
                unsafe { st_wt_get(s.cursor, key.as_ptr().cast(), key.len(), &mut v, &mut vl) };
            // SAFETY: a constant.
            if rc == unsafe { st_wt_notfound() } {
                return Ok(false);
            }
            check(rc)?;
            Ok(found(visit, Some(bytes(v, vl))))
        })
    }
    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        self.write(sync, |s| {
            // SAFETY: the key is valid for the call.
            let rc = unsafe { st_wt_del(s.cursor, key.as_ptr().cast(), key.len()) };
            // SAFETY: a constant.
            if rc == unsafe { st_wt_notfound() } {
                Ok(())
            } else {
                check(rc)
            }
        })
    }
    fn write_batch(&self, ops: &[BatchOp], sync: bool) -> Result<()> {
        self.with(|s| {
            // WT_ROLLBACK (cache pressure or a conflict) asks for the transaction to be
            // rolled back and retried, as WiredTiger's documentation says.
            let mut attempts = 0;
            loop {
                // SAFETY: one transaction on this thread's session; slices valid for each
                // call.
                let rc = unsafe {
                    check(st_wt_begin(s.session))?;
                    let mut rc = 0;
                    for (k, v) in ops {
                        rc = match v {
                            Some(v) => st_wt_put(
                                s.cursor,
                                k.as_ptr().cast(),
                                k.len(),
                                v.as_ptr().cast(),
                                v.len(),
                            ),
                            None => st_wt_del(s.cursor, k.as_ptr().cast(), k.len()),
                        };
                        if rc == st_wt_notfound() {
                            rc = 0;
                        }
                        if rc != 0 {
                            break;
                        }
                    }
                    if rc == 0 {
                        rc = st_wt_commit(s.session, c_int::from(sync));
                    } else {
                        st_wt_rollback(s.session);
                    }
                    rc
                };
                attempts += 1;
                if rc == WT_ROLLBACK && attempts < 50 {
                    std::thread::yield_now();
                    continue;
                }
                if rc == WT_ROLLBACK {
                    // Every dirty page of a transaction must stay in cache: a batch of
                    // random keys touching more pages than the cache holds can never
                    // commit.
                    return Err(Cannot(format!(
                        "a batch of {} keys does not fit its cache of {} (WT_ROLLBACK \
                         after {attempts} tries)",
                        ops.len(),
                        self.cache_label
                    ))
                    .into());
                }
                return check(rc);
            }
        })
    }
    fn transact(&self, keys: &[&[u8]], update: &mut Update<'_>, sync: bool) -> Result<bool> {
        // Snapshot isolation (asked for: a session's default is read-committed, under which
        // updates are lost): the reads see the transaction's snapshot, and a write to a key
        // another transaction wrote since fails with WT_ROLLBACK (WiredTiger detects
        // write-write conflicts). Every key this workload reads it also writes, so a
        // conflicting read shows as one of those. WT_ROLLBACK is an abort: run again.
        self.with(|s| {
            // SAFETY: one transaction on this thread's session, committed or rolled back
            // here; keys and values valid for each call, values copied out at once.
            unsafe {
                check(st_wt_begin_snapshot(s.session))?;
                let ended = |rc: c_int| -> Result<bool> {
                    st_wt_rollback(s.session);
                    if rc == WT_ROLLBACK {
                        return Ok(false);
                    }
                    check(rc).map(|()| false)
                };
                let mut read = Vec::with_capacity(keys.len());
                for key in keys {
                    let (mut v, mut vl) = (std::ptr::null(), 0usize);
                    let rc = st_wt_get(s.cursor, key.as_ptr().cast(), key.len(), &mut v, &mut vl);
                    if rc == st_wt_notfound() {
                        read.push(None);
                    } else if rc == 0 {
                        read.push(Some(bytes(v, vl).to_vec()));
                    } else {
                        return ended(rc);
                    }
                }
                for (key, value) in keys.iter().zip(update(&read)) {
                    let rc = st_wt_put(
                        s.cursor,
                        key.as_ptr().cast(),
                        key.len(),
                        value.as_ptr().cast(),
                        value.len(),
                    );
                    if rc != 0 {
                        return ended(rc);
                    }
                }
                // A commit that fails has rolled the transaction back already.
                match st_wt_commit(s.session, c_int::from(sync)) {
                    0 => Ok(true),
                    WT_ROLLBACK => Ok(false),
                    rc => check(rc).map(|()| false),
                }
            }
        })
    }
    fn scan(
        &self,
        reverse: bool,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        self.with(|s| {
            let mut n = 0;
            // SAFETY: the cursor starts reset; each entry is visited before it moves.
            unsafe {
                st_wt_reset(s.cursor);
                while n < limit {
                    let rc = if reverse {
                        st_wt_prev(s.cursor)
                    } else {
                        st_wt_next(s.cursor)
                    };
                    if rc == st_wt_notfound() {
                        break;
                    }
                    check(rc)?;
                    let (mut k, mut kl, mut v, mut vl) = (std::ptr::null(), 0, std::ptr::null(), 0);
                    check(st_wt_current(s.cursor, &mut k, &mut kl, &mut v, &mut vl))?;
                    visit(bytes(k, kl), bytes(v, vl));
                    n += 1;
                }
            }
            Ok(n)
        })
    }
    fn seek(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.with(|s| {
            // SAFETY: the key is valid for the call; the found key is copied before the
            // cursor moves.
            unsafe {
                let rc = st_wt_seek(s.cursor, key.as_ptr().cast(), key.len());
                if rc == st_wt_notfound() {
                    return Ok(None);
                }
                check(rc)?;
                let (mut k, mut kl, mut v, mut vl) = (std::ptr::null(), 0, std::ptr::null(), 0);
                check(st_wt_current(s.cursor, &mut k, &mut kl, &mut v, &mut vl))?;
                Ok(Some(bytes(k, kl).to_vec()))
            }
        })
    }
    fn compact(&self) -> Result<()> {
        // SAFETY: this thread's session.
        self.with(|s| check(unsafe { st_wt_compact(s.session) }))
    }
    fn stats(&self) -> Option<String> {
        None
    }
    fn sstables(&self) -> Option<String> {
        None
    }
}
