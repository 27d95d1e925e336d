//! Kyoto Cabinet TreeDB (Debian's libkyotocabinet 1.2), through its C API: a B+ tree file
//! (`.kct`) tuned as the LevelDB page's `db_bench_tree_db` did: TSMALL and TLINEAR
//! (`opts=sl`), LZO compression when compression is on (`opts=c`, `zcomp=lzo`: raw LZO, as
//! that program's `LZOCompressor<LZO::RAW>`; Debian's build links liblzo2), 1 KiB pages
//! (`psiz=1024`), a 256 MiB memory map (`msiz`) and a page cache of the settings' size.
//! TreeDB has no atomic batches (n/a, as on the page) and no compaction to ask for (n/a). A
//! synced write syncs the file (`kcdbsync`). Transactions (`kcdbbegintran`): one at a time,
//! so none conflicts; a synced commit is a hard one.

#![allow(unsafe_code, reason = "foreign calls into the Kyoto Cabinet C library")]

use std::ffi::{CStr, CString, c_char, c_void};
use std::path::Path;

use anyhow::{Result, anyhow};

use crate::engine::{BatchOp, Engine, EngineKind, Settings, Update, found};

#[repr(C)]
struct Opaque(c_void);

const KCOWRITER: u32 = 1 << 1;
const KCOCREATE: u32 = 1 << 2;
const KCENOREC: i32 = 7;

unsafe extern "C" {
    fn kcfree(p: *mut c_void);
    fn kcdbnew() -> *mut Opaque;
    fn kcdbdel(db: *mut Opaque);
    fn kcdbopen(db: *mut Opaque, path: *const c_char, mode: u32) -> i32;
    fn kcdbclose(db: *mut Opaque) -> i32;
    fn kcdbecode(db: *mut Opaque) -> i32;
    fn kcdbemsg(db: *mut Opaque) -> *const c_char;
    fn kcdbset(db: *mut Opaque, k: *const c_char, ks: usize, v: *const c_char, vs: usize) -> i32;
    fn kcdbremove(db: *mut Opaque, k: *const c_char, ks: usize) -> i32;
    fn kcdbget(db: *mut Opaque, k: *const c_char, ks: usize, sp: *mut usize) -> *mut c_char;
    fn kcdbsync(db: *mut Opaque, hard: i32, proc_: *const c_void, opq: *mut c_void) -> i32;
    fn kcdbcursor(db: *mut Opaque) -> *mut Opaque;
    fn kcdbbegintran(db: *mut Opaque, hard: i32) -> i32;
    fn kcdbendtran(db: *mut Opaque, commit: i32) -> i32;
    fn kccurdel(cur: *mut Opaque);
    fn kccurget(
        cur: *mut Opaque,
        ksp: *mut usize,
        vbp: *mut *const c_char,
        vsp: *mut usize,
        step: i32,
    ) -> *mut c_char;
    fn kccurjump(cur: *mut Opaque) -> i32;
    fn kccurjumpback(cur: *mut Opaque) -> i32;
    fn kccurjumpkey(cur: *mut Opaque, k: *const c_char, ks: usize) -> i32;
    fn kccurstepback(cur: *mut Opaque) -> i32;
}

/// Opens Kyoto Cabinet TreeDB files.
#[derive(Debug)]
pub struct KyotoKind;

struct Kyoto {
    db: *mut Opaque,
}

// SAFETY: Kyoto Cabinet's database objects lock internally and are documented as usable
// from many threads at once.
unsafe impl Send for Kyoto {}
// SAFETY: as above.
unsafe impl Sync for Kyoto {}

impl EngineKind for KyotoKind {
    fn name(&self) -> &'static str {
        "kyoto-treedb"
    }
    fn version(&self) -> String {
        "1.2 (Debian)".to_string()
    }
    fn has_batches(&self) -> bool {
        false
    }
    fn has_compaction(&self) -> bool {
        false
    }
    fn has_transactions(&self) -> bool {
        true
    }
    fn open(&self, dir: &Path, s: &Settings) -> Result<Box<dyn Engine>> {
        let opts = if s.compression { "slc#zcomp=lzo" } else { "sl" };
        let path = format!(
            "{}#opts={opts}#psiz=1024#msiz=268435456#pccap={}",
            dir.join("tree.kct").display(),
            s.cache_size
        );
        let path = CString::new(path)?;
        // SAFETY: the database object is created here and owned by `Kyoto`, whose Drop
        // closes and deletes it.
        let db = unsafe { kcdbnew() };
        let engine = Kyoto { db };
        // SAFETY: live object, NUL-terminated path.
        if unsafe { kcdbopen(engine.db, path.as_ptr(), KCOWRITER | KCOCREATE) } == 0 {
            return Err(engine.error("open"));
        }
        Ok(Box::new(engine))
    }
}

impl Kyoto {
    fn error(&self, what: &str) -> anyhow::Error {
        // SAFETY: live object; the message is a static NUL-terminated string.
        let msg = unsafe { CStr::from_ptr(kcdbemsg(self.db)) }
            .to_string_lossy()
            .into_owned();
        anyhow!("Kyoto Cabinet {what}: {msg}")
    }

    fn set(&self, key: &[u8], value: &[u8]) -> Result<()> {
        // SAFETY: slices valid for the call; Kyoto copies them.
        if unsafe {
            kcdbset(
                self.db,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
            )
        } == 0
        {
            return Err(self.error("set"));
        }
        Ok(())
    }

    fn sync(&self, sync: bool) -> Result<()> {
        // SAFETY: live object; no callback.
        if sync && unsafe { kcdbsync(self.db, 1, std::ptr::null(), std::ptr::null_mut()) } == 0 {
            return Err(self.error("sync"));
        }
        Ok(())
    }
}

impl Drop for Kyoto {
    fn drop(&mut self) {
        // SAFETY: closed and deleted once; no cursor outlives a call.
        unsafe {
            kcdbclose(self.db);
            kcdbdel(self.db);
        }
    }
}

/// A transaction begun with `kcdbbegintran`, rolled back on drop unless ended.
struct Tran<'a> {
    kyoto: &'a Kyoto,
    open: bool,
}

impl Tran<'_> {
    /// Commits (`commit`) or rolls back the transaction.
    fn end(&mut self, commit: bool) -> Result<()> {
        self.open = false;
        // SAFETY: live object, inside the transaction this guard stands for.
        if unsafe { kcdbendtran(self.kyoto.db, i32::from(commit)) } == 0 {
            return Err(self.kyoto.error(if commit { "commit" } else { "rollback" }));
        }
        Ok(())
    }
}

impl Drop for Tran<'_> {
    fn drop(&mut self) {
        if self.open {
            // A failed rollback has no caller to tell: the step that failed (or the
            // panic) is what the run reports.
            let _ = self.end(false);
        }
    }
}

/// A cursor, deleted on drop.
struct Cursor(*mut Opaque);

impl Drop for Cursor {
    fn drop(&mut self) {
        // SAFETY: created by kcdbcursor, deleted once, before the database.
        unsafe { kccurdel(self.0) }
    }
}

impl Cursor {
    /// The current record, visited, optionally stepping forward; false when none.
    fn visit(&self, step: bool, visit: &mut dyn FnMut(&[u8], &[u8])) -> bool {
        let (mut ks, mut vs) = (0usize, 0usize);
        let mut vb: *const c_char = std::ptr::null();
        // SAFETY: live cursor; the returned key region (followed by the value region) is
        // owned by us until kcfree.
        unsafe {
            let kb = kccurget(self.0, &mut ks, &mut vb, &mut vs, i32::from(step));
            if kb.is_null() {
                return false;
            }
            visit(
                std::slice::from_raw_parts(kb.cast::<u8>(), ks),
                std::slice::from_raw_parts(vb.cast::<u8>(), vs),
            );
            kcfree(kb.cast());
        }
        true
    }
}

impl Engine for Kyoto {
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        self.set(key, value)?;
        self.sync(sync)
    }
    fn get(&self, key: &[u8], visit: &mut dyn FnMut(&[u8])) -> Result<bool> {
        let mut size = 0usize;
        // SAFETY: the key is valid for the call; the result is ours until kcfree.
        let v = unsafe { kcdbget(self.db, key.as_ptr().cast(), key.len(), &mut size) };
        if v.is_null() {
            // SAFETY: live object.
            return if unsafe { kcdbecode(self.db) } == KCENOREC {
                Ok(false)
            } else {
                Err(self.error("get"))
            };
        }
        // SAFETY: `v` holds `size` bytes until freed below.
        let got = found(
            visit,
            Some(unsafe { std::slice::from_raw_parts(v.cast::<u8>(), size) }),
        );
        // SAFETY: freed once.
        unsafe { kcfree(v.cast()) };
        Ok(got)
    }
    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        // SAFETY: the key is valid for the call.
        if unsafe { kcdbremove(self.db, key.as_ptr().cast(), key.len()) } == 0
            // SAFETY: live object.
            && unsafe { kcdbecode(self.db) } != KCENOREC
        {
            return Err(self.error("remove"));
        }
        self.sync(sync)
    }
    fn write_batch(&self, _ops: &[BatchOp], _sync: bool) -> Result<()> {
        Err(anyhow!("Kyoto Cabinet TreeDB has no atomic batches"))
    }
    fn transact(&self, keys: &[&[u8]], update: &mut Update<'_>, sync: bool) -> Result<bool> {
        // Kyoto runs one transaction at a time (`begin_transaction` waits for the one
        // running to end), so a transaction never conflicts. A hard one syncs the file
        // and its transaction log at commit: what a synced commit asks. Other threads'
        // plain operations are not kept out of it: serializable only while every write
        // is a transaction, as in the transactions suite.
        // SAFETY: live object.
        if unsafe { kcdbbegintran(self.db, i32::from(sync)) } == 0 {
            return Err(self.error("begin transaction"));
        }
        // Rolled back unless committed below, even if `update` panics: an open
        // transaction would keep every other thread waiting in `kcdbbegintran`.
        let mut tran = Tran {
            kyoto: self,
            open: true,
        };
        let mut read = Vec::with_capacity(keys.len());
        for key in keys {
            let mut value = None;
            self.get(key, &mut |v| value = Some(v.to_vec()))?;
            read.push(value);
        }
        for (key, value) in keys.iter().zip(update(&read)) {
            self.set(key, &value)?;
        }
        tran.end(true)?;
        Ok(true)
    }
    fn scan(
        &self,
        reverse: bool,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        // SAFETY: a cursor on the open database, deleted before returning.
        let cur = Cursor(unsafe { kcdbcursor(self.db) });
        // SAFETY: live cursor.
        let positioned = unsafe {
            if reverse {
                kccurjumpback(cur.0)
            } else {
                kccurjump(cur.0)
            }
        } != 0;
        let mut n = 0;
        if positioned {
            while n < limit && cur.visit(!reverse, visit) {
                n += 1;
                // SAFETY: live cursor.
                if reverse && unsafe { kccurstepback(cur.0) } == 0 {
                    break;
                }
            }
        }
        Ok(n)
    }
    fn seek(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        // SAFETY: as in `scan`; the key is valid for the call.
        let cur = Cursor(unsafe { kcdbcursor(self.db) });
        // SAFETY: live cursor, valid key.
        if unsafe { kccurjumpkey(cur.0, key.as_ptr().cast(), key.len()) } == 0 {
            return Ok(None);
        }
        let mut out = None;
        cur.visit(false, &mut |k, _| out = Some(k.to_vec()));
        Ok(out)
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
