//! RocksDB through its C API: leveled compaction, Snappy per the settings, an LRU block
//! cache and write buffer of the settings' sizes, table files of `max_file_size`. The
//! library is Debian's 7.8, built with assertions on, which slows it; or, when
//! `STRATA_BENCH_ROCKSDB_DIR` names it at build time, the release build of RocksDB 10.10
//! that `scripts/fetch-rocksdb-release.sh` fetches (not what `make bench` uses: see
//! `docs/results/2026-11-25-rocksdb-release/`). The version string says which.
//!
//! The C API is declared here, only the calls used; every `unsafe` block passes pointers this
//! module created and keeps alive.

#![allow(unsafe_code, reason = "foreign calls into the RocksDB C library")]

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::Path;
use std::ptr;

use anyhow::{Result, anyhow};

use crate::engine::{BatchOp, Engine, EngineKind, Settings, Update, Walk, found, walk};

#[repr(C)]
struct Opaque(c_void);

unsafe extern "C" {
    fn rocksdb_options_create() -> *mut Opaque;
    fn rocksdb_options_destroy(o: *mut Opaque);
    fn rocksdb_options_set_create_if_missing(o: *mut Opaque, v: u8);
    fn rocksdb_options_set_write_buffer_size(o: *mut Opaque, v: usize);
    fn rocksdb_options_set_max_open_files(o: *mut Opaque, v: c_int);
    fn rocksdb_options_set_target_file_size_base(o: *mut Opaque, v: u64);
    fn rocksdb_options_set_compression(o: *mut Opaque, v: c_int);
    fn rocksdb_options_set_enable_blob_files(o: *mut Opaque, v: u8);
    fn rocksdb_options_set_min_blob_size(o: *mut Opaque, v: u64);
    fn rocksdb_options_set_blob_file_size(o: *mut Opaque, v: u64);
    fn rocksdb_options_set_blob_compression_type(o: *mut Opaque, v: c_int);
    fn rocksdb_options_set_enable_blob_gc(o: *mut Opaque, v: u8);
    fn rocksdb_options_set_block_based_table_factory(o: *mut Opaque, t: *mut Opaque);
    fn rocksdb_block_based_options_create() -> *mut Opaque;
    fn rocksdb_block_based_options_destroy(t: *mut Opaque);
    fn rocksdb_block_based_options_set_block_size(t: *mut Opaque, v: usize);
    fn rocksdb_block_based_options_set_block_cache(t: *mut Opaque, c: *mut Opaque);
    fn rocksdb_block_based_options_set_filter_policy(t: *mut Opaque, f: *mut Opaque);
    fn rocksdb_filterpolicy_create_bloom(bits: f64) -> *mut Opaque;
    fn rocksdb_cache_create_lru(capacity: usize) -> *mut Opaque;
    fn rocksdb_cache_destroy(c: *mut Opaque);
    fn rocksdb_open(o: *const Opaque, name: *const c_char, err: *mut *mut c_char) -> *mut Opaque;
    fn rocksdb_close(db: *mut Opaque);
    fn rocksdb_put(
        db: *mut Opaque,
        wo: *const Opaque,
        k: *const c_char,
        kl: usize,
        v: *const c_char,
        vl: usize,
        err: *mut *mut c_char,
    );
    fn rocksdb_delete(
        db: *mut Opaque,
        wo: *const Opaque,
        k: *const c_char,
        kl: usize,
        err: *mut *mut c_char,
    );
    fn rocksdb_write(db: *mut Opaque, wo: *const Opaque, b: *mut Opaque, err: *mut *mut c_char);
    fn rocksdb_get_pinned(
        db: *mut Opaque,
        ro: *const Opaque,
        k: *const c_char,
        kl: usize,
        err: *mut *mut c_char,
    ) -> *mut Opaque;
    fn rocksdb_pinnableslice_value(v: *const Opaque, vl: *mut usize) -> *const c_char;
    fn rocksdb_pinnableslice_destroy(v: *mut Opaque);
    fn rocksdb_create_iterator(db: *mut Opaque, ro: *const Opaque) -> *mut Opaque;
    fn rocksdb_compact_range(
        db: *mut Opaque,
        s: *const c_char,
        sl: usize,
        l: *const c_char,
        ll: usize,
    );
    fn rocksdb_property_value(db: *mut Opaque, name: *const c_char) -> *mut c_char;
    fn rocksdb_iter_destroy(it: *mut Opaque);
    fn rocksdb_iter_valid(it: *const Opaque) -> u8;
    fn rocksdb_iter_seek_to_first(it: *mut Opaque);
    fn rocksdb_iter_seek_to_last(it: *mut Opaque);
    fn rocksdb_iter_seek(it: *mut Opaque, k: *const c_char, kl: usize);
    fn rocksdb_iter_next(it: *mut Opaque);
    fn rocksdb_iter_prev(it: *mut Opaque);
    fn rocksdb_iter_key(it: *const Opaque, kl: *mut usize) -> *const c_char;
    fn rocksdb_iter_value(it: *const Opaque, vl: *mut usize) -> *const c_char;
    fn rocksdb_iter_get_error(it: *const Opaque, err: *mut *mut c_char);
    fn rocksdb_writebatch_create() -> *mut Opaque;
    fn rocksdb_writebatch_destroy(b: *mut Opaque);
    fn rocksdb_writebatch_put(
        b: *mut Opaque,
        k: *const c_char,
        kl: usize,
        v: *const c_char,
        vl: usize,
    );
    fn rocksdb_writebatch_delete(b: *mut Opaque, k: *const c_char, kl: usize);
    fn rocksdb_readoptions_create() -> *mut Opaque;
    fn rocksdb_readoptions_destroy(o: *mut Opaque);
    fn rocksdb_writeoptions_create() -> *mut Opaque;
    fn rocksdb_writeoptions_destroy(o: *mut Opaque);
    fn rocksdb_writeoptions_set_sync(o: *mut Opaque, v: u8);
    fn rocksdb_free(p: *mut c_void);
    fn rocksdb_optimistictransactiondb_open(
        o: *const Opaque,
        name: *const c_char,
        err: *mut *mut c_char,
    ) -> *mut Opaque;
    fn rocksdb_optimistictransactiondb_get_base_db(otxn: *mut Opaque) -> *mut Opaque;
    fn rocksdb_optimistictransactiondb_close_base_db(db: *mut Opaque);
    fn rocksdb_optimistictransactiondb_close(otxn: *mut Opaque);
    fn rocksdb_optimistictransaction_options_create() -> *mut Opaque;
    fn rocksdb_optimistictransaction_options_destroy(o: *mut Opaque);
    fn rocksdb_optimistictransaction_begin(
        otxn: *mut Opaque,
        w: *const Opaque,
        o: *const Opaque,
        old: *mut Opaque,
    ) -> *mut Opaque;
    fn rocksdb_transactiondb_options_create() -> *mut Opaque;
    fn rocksdb_transactiondb_options_destroy(o: *mut Opaque);
    fn rocksdb_transactiondb_options_set_transaction_lock_timeout(o: *mut Opaque, ms: i64);
    fn rocksdb_transactiondb_open(
        o: *const Opaque,
        txn_db_options: *const Opaque,
        name: *const c_char,
        err: *mut *mut c_char,
    ) -> *mut Opaque;
    #[cfg(rocksdb_base_db)]
    fn rocksdb_transactiondb_get_base_db(txn_db: *mut Opaque) -> *mut Opaque;
    #[cfg(rocksdb_base_db)]
    fn rocksdb_transactiondb_close_base_db(db: *mut Opaque);
    fn rocksdb_transactiondb_close(txn_db: *mut Opaque);
    fn rocksdb_transaction_options_create() -> *mut Opaque;
    fn rocksdb_transaction_options_destroy(o: *mut Opaque);
    fn rocksdb_transaction_options_set_deadlock_detect(o: *mut Opaque, v: u8);
    fn rocksdb_transaction_begin(
        txn_db: *mut Opaque,
        w: *const Opaque,
        o: *const Opaque,
        old: *mut Opaque,
    ) -> *mut Opaque;
    fn rocksdb_transaction_get_for_update(
        txn: *mut Opaque,
        r: *const Opaque,
        k: *const c_char,
        kl: usize,
        vl: *mut usize,
        exclusive: u8,
        err: *mut *mut c_char,
    ) -> *mut c_char;
    fn rocksdb_transaction_put(
        txn: *mut Opaque,
        k: *const c_char,
        kl: usize,
        v: *const c_char,
        vl: usize,
        err: *mut *mut c_char,
    );
    fn rocksdb_transaction_commit(txn: *mut Opaque, err: *mut *mut c_char);
    fn rocksdb_transaction_destroy(txn: *mut Opaque);
}

fn check(err: *mut c_char) -> Result<()> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: RocksDB set `err` to a NUL-terminated malloc'ed message; copied, then freed once.
    let msg = unsafe { CStr::from_ptr(err) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: freed once, not used after.
    unsafe { rocksdb_free(err.cast()) };
    Err(anyhow!("RocksDB: {msg}"))
}

/// Opens RocksDB databases: `rocksdb`, or with `blob` `rocksdb-blob`, RocksDB's integrated
/// BlobDB (`enable_blob_files`: values of at least `--blob_threshold` bytes written to blob
/// files at flush, garbage collected by compactions with RocksDB's default age cutoff,
/// Snappy when `--blob_compression` is set), the peer of `strata-blob`.
///
/// With [`Transactions::Optimistic`], `rocksdb-optimistic`: the database opened as
/// RocksDB's `OptimisticTransactionDB`, whose transactions read with `GetForUpdate` (so
/// every key read is checked) and fail their commit on a conflict. With
/// [`Transactions::Pessimistic`], `rocksdb-pessimistic`: its `TransactionDB`, whose
/// `GetForUpdate` locks the key until the transaction ends. Either way every plain
/// operation goes through the base database. The peers of Strata's transactions, chosen by
/// name only.
#[derive(Debug)]
pub struct RocksDbKind {
    pub blob: bool,
    pub transactions: Transactions,
}

/// Which of RocksDB's transaction databases a [`RocksDbKind`] opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transactions {
    /// A plain database: no transactions.
    None,
    /// `OptimisticTransactionDB`: checked at commit.
    Optimistic,
    /// `TransactionDB`: keys locked as read, with deadlock detection and db_bench's lock
    /// timeout ([`LOCK_TIMEOUT_MS`]); a timed-out or deadlocked lock counts as an abort.
    /// Offered only on a release library (`rocksdb_base_db`, see build.rs).
    #[cfg_attr(not(rocksdb_base_db), allow(dead_code))]
    Pessimistic,
}

/// RocksDB db_bench's `--transaction_lock_timeout` default: how long a pessimistic
/// transaction waits for a lock before it fails.
const LOCK_TIMEOUT_MS: i64 = 100;

struct RocksDb {
    transactions: Transactions,
    /// The transaction database `db` is the base of (null: a plain database).
    otxn: *mut Opaque,
    otxn_options: *mut Opaque,
    /// The pessimistic database's options (null unless pessimistic).
    txn_db_options: *mut Opaque,
    db: *mut Opaque,
    options: *mut Opaque,
    table: *mut Opaque,
    cache: *mut Opaque,
    read: *mut Opaque,
    write_async: *mut Opaque,
    write_sync: *mut Opaque,
}

// SAFETY: a RocksDB database is safe for concurrent use from many threads; the option
// objects are only read after open.
unsafe impl Send for RocksDb {}
// SAFETY: as above.
unsafe impl Sync for RocksDb {}

impl EngineKind for RocksDbKind {
    fn name(&self) -> &'static str {
        match (self.blob, self.transactions) {
            (_, Transactions::Optimistic) => "rocksdb-optimistic",
            (_, Transactions::Pessimistic) => "rocksdb-pessimistic",
            (true, Transactions::None) => "rocksdb-blob",
            (false, Transactions::None) => "rocksdb",
        }
    }
    fn has_transactions(&self) -> bool {
        self.transactions != Transactions::None
    }
    fn version(&self) -> String {
        env!("STRATA_ROCKSDB_BUILD").to_string()
    }
    fn open(&self, dir: &Path, s: &Settings) -> Result<Box<dyn Engine>> {
        let name = CString::new(dir.as_os_str().as_encoded_bytes())?;
        // SAFETY: each call configures objects created just above; they live in `RocksDb`
        // and are destroyed in its Drop after the database is closed.
        unsafe {
            let options = rocksdb_options_create();
            rocksdb_options_set_create_if_missing(options, 1);
            rocksdb_options_set_write_buffer_size(options, s.write_buffer_size);
            rocksdb_options_set_max_open_files(options, s.open_files as c_int);
            rocksdb_options_set_target_file_size_base(options, s.max_file_size as u64);
            rocksdb_options_set_compression(options, if s.compression { 1 } else { 0 });
            if self.blob {
                rocksdb_options_set_enable_blob_files(options, 1);
                rocksdb_options_set_min_blob_size(options, s.blob_threshold as u64);
                if let Some(size) = s.blob_file_size {
                    rocksdb_options_set_blob_file_size(options, size as u64);
                }
                rocksdb_options_set_blob_compression_type(
                    options,
                    if s.blob_compression { 1 } else { 0 },
                );
                // Garbage collection on, with RocksDB's own cutoff (the oldest quarter of
                // the blob files): its rule differs from strata-blob's garbage ratio.
                rocksdb_options_set_enable_blob_gc(options, 1);
            }
            let table = rocksdb_block_based_options_create();
            rocksdb_block_based_options_set_block_size(table, s.block_size);
            let cache = rocksdb_cache_create_lru(s.cache_size);
            rocksdb_block_based_options_set_block_cache(table, cache);
            if let Some(bits) = s.bloom_bits {
                rocksdb_block_based_options_set_filter_policy(
                    table,
                    rocksdb_filterpolicy_create_bloom(bits as f64),
                );
            }
            rocksdb_options_set_block_based_table_factory(options, table);
            let mut err = ptr::null_mut();
            let (otxn, db, otxn_options, txn_db_options) = match self.transactions {
                Transactions::Optimistic => {
                    let otxn =
                        rocksdb_optimistictransactiondb_open(options, name.as_ptr(), &mut err);
                    let base = if otxn.is_null() {
                        ptr::null_mut()
                    } else {
                        rocksdb_optimistictransactiondb_get_base_db(otxn)
                    };
                    let o = rocksdb_optimistictransaction_options_create();
                    (otxn, base, o, ptr::null_mut())
                }
                Transactions::Pessimistic => {
                    let txn_db_options = rocksdb_transactiondb_options_create();
                    rocksdb_transactiondb_options_set_transaction_lock_timeout(
                        txn_db_options,
                        LOCK_TIMEOUT_MS,
                    );
                    let txn_db = rocksdb_transactiondb_open(
                        options,
                        txn_db_options,
                        name.as_ptr(),
                        &mut err,
                    );
                    // Only a release library has it: Debian's 7.8.3 gives no base database
                    // (the column is then not offered, `peers::by_name_only`).
                    #[cfg(rocksdb_base_db)]
                    let base = if txn_db.is_null() {
                        ptr::null_mut()
                    } else {
                        rocksdb_transactiondb_get_base_db(txn_db)
                    };
                    #[cfg(not(rocksdb_base_db))]
                    let base = ptr::null_mut();
                    let txn_options = rocksdb_transaction_options_create();
                    rocksdb_transaction_options_set_deadlock_detect(txn_options, 1);
                    (txn_db, base, txn_options, txn_db_options)
                }
                Transactions::None => (
                    ptr::null_mut(),
                    rocksdb_open(options, name.as_ptr(), &mut err),
                    ptr::null_mut(),
                    ptr::null_mut(),
                ),
            };
            let engine = RocksDb {
                transactions: self.transactions,
                otxn,
                otxn_options,
                txn_db_options,
                db,
                options,
                table,
                cache,
                read: rocksdb_readoptions_create(),
                write_async: rocksdb_writeoptions_create(),
                write_sync: rocksdb_writeoptions_create(),
            };
            rocksdb_writeoptions_set_sync(engine.write_sync, 1);
            check(err)?;
            if db.is_null() {
                return Err(anyhow!("rocksdb_open returned null"));
            }
            Ok(Box::new(engine))
        }
    }
}

impl RocksDb {
    fn wo(&self, sync: bool) -> *const Opaque {
        if sync {
            self.write_sync
        } else {
            self.write_async
        }
    }
}

impl Drop for RocksDb {
    fn drop(&mut self) {
        // SAFETY: every pointer was created in `open` and is destroyed once; no iterator
        // outlives the engine (they are local to `scan` and `seek`).
        unsafe {
            // `db` is the transaction database's base, so it is never set without `otxn`.
            match self.transactions {
                Transactions::Optimistic => {
                    if !self.otxn.is_null() {
                        if !self.db.is_null() {
                            rocksdb_optimistictransactiondb_close_base_db(self.db);
                        }
                        rocksdb_optimistictransactiondb_close(self.otxn);
                    }
                    rocksdb_optimistictransaction_options_destroy(self.otxn_options);
                }
                Transactions::Pessimistic => {
                    if !self.otxn.is_null() {
                        #[cfg(rocksdb_base_db)]
                        if !self.db.is_null() {
                            rocksdb_transactiondb_close_base_db(self.db);
                        }
                        rocksdb_transactiondb_close(self.otxn);
                    }
                    rocksdb_transaction_options_destroy(self.otxn_options);
                    rocksdb_transactiondb_options_destroy(self.txn_db_options);
                }
                Transactions::None => {
                    if !self.db.is_null() {
                        rocksdb_close(self.db);
                    }
                }
            }
            rocksdb_readoptions_destroy(self.read);
            rocksdb_writeoptions_destroy(self.write_async);
            rocksdb_writeoptions_destroy(self.write_sync);
            rocksdb_options_destroy(self.options);
            rocksdb_block_based_options_destroy(self.table);
            rocksdb_cache_destroy(self.cache);
        }
    }
}

/// An iterator, destroyed on drop.
struct Iter(*mut Opaque);

impl Drop for Iter {
    fn drop(&mut self) {
        // SAFETY: created by rocksdb_create_iterator, destroyed once, before the database.
        unsafe { rocksdb_iter_destroy(self.0) }
    }
}

impl Walk for Iter {
    fn valid(&self) -> bool {
        // SAFETY: live iterator.
        unsafe { rocksdb_iter_valid(self.0) != 0 }
    }
    fn entry(&self) -> (&[u8], &[u8]) {
        let (mut kl, mut vl) = (0usize, 0usize);
        // SAFETY: only called while valid; the slices live until the iterator moves, which
        // needs `&mut self`.
        unsafe {
            let k = rocksdb_iter_key(self.0, &mut kl);
            let v = rocksdb_iter_value(self.0, &mut vl);
            (
                std::slice::from_raw_parts(k.cast(), kl),
                std::slice::from_raw_parts(v.cast(), vl),
            )
        }
    }
    fn step(&mut self, reverse: bool) {
        // SAFETY: live iterator, positioned (walk checks `valid` first).
        unsafe {
            if reverse {
                rocksdb_iter_prev(self.0)
            } else {
                rocksdb_iter_next(self.0)
            }
        }
    }
}

impl Iter {
    fn status(&self) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: live iterator; valid out-pointer.
        unsafe { rocksdb_iter_get_error(self.0, &mut err) };
        check(err)
    }
}

impl RocksDb {
    /// The body of `transact` on transaction `txn`: reads with `GetForUpdate`, writes,
    /// commits. `Ok(false)` on a conflict: RocksDB's Busy or TryAgain at an optimistic
    /// commit; a lock that timed out or would deadlock at a pessimistic read or write.
    fn run_transaction(
        &self,
        txn: *mut Opaque,
        keys: &[&[u8]],
        update: &mut Update<'_>,
    ) -> Result<bool> {
        let mut read = Vec::with_capacity(keys.len());
        for k in keys {
            let (mut err, mut len) = (ptr::null_mut(), 0usize);
            // SAFETY: a live transaction; the key is valid for the call; the value is a
            // malloc'ed copy, copied out and freed once.
            let v = unsafe {
                rocksdb_transaction_get_for_update(
                    txn,
                    self.read,
                    k.as_ptr().cast(),
                    k.len(),
                    &mut len,
                    1,
                    &mut err,
                )
            };
            if let Err(e) = check(err) {
                return conflict_or(e);
            }
            if v.is_null() {
                read.push(None);
            } else {
                // SAFETY: `v` holds `len` bytes, freed once after the copy.
                read.push(Some(
                    unsafe { std::slice::from_raw_parts(v.cast::<u8>(), len) }.to_vec(),
                ));
                // SAFETY: as above.
                unsafe { rocksdb_free(v.cast()) };
            }
        }
        for (k, v) in keys.iter().zip(update(&read)) {
            let mut err = ptr::null_mut();
            // SAFETY: a live transaction; slices valid for the call; RocksDB copies them.
            unsafe {
                rocksdb_transaction_put(
                    txn,
                    k.as_ptr().cast(),
                    k.len(),
                    v.as_ptr().cast(),
                    v.len(),
                    &mut err,
                )
            };
            if let Err(e) = check(err) {
                return conflict_or(e);
            }
        }
        let mut err = ptr::null_mut();
        // SAFETY: a live transaction, committed once.
        unsafe { rocksdb_transaction_commit(txn, &mut err) };
        match check(err) {
            Ok(()) => Ok(true),
            Err(e) => conflict_or(e),
        }
    }
}

/// `Ok(false)` (an abort, to be retried) for the errors a transaction meets when another
/// one got there first: Busy (an optimistic conflict, or a deadlock), TryAgain, and a lock
/// wait that timed out; any other error is returned.
fn conflict_or(e: anyhow::Error) -> Result<bool> {
    let m = e.to_string();
    if ["Resource busy", "Try again", "TryAgain", "timed out"]
        .iter()
        .any(|s| m.contains(s))
    {
        Ok(false)
    } else {
        Err(e)
    }
}

impl Engine for RocksDb {
    fn transact(&self, keys: &[&[u8]], update: &mut Update<'_>, sync: bool) -> Result<bool> {
        if self.otxn.is_null() {
            return Err(crate::engine::Cannot("no transactions".into()).into());
        }
        // SAFETY: the transaction database is open, `otxn_options` of its kind; the
        // transaction is destroyed below, whatever `run_transaction` returns.
        let txn = unsafe {
            match self.transactions {
                Transactions::Pessimistic => rocksdb_transaction_begin(
                    self.otxn,
                    self.wo(sync),
                    self.otxn_options,
                    ptr::null_mut(),
                ),
                _ => rocksdb_optimistictransaction_begin(
                    self.otxn,
                    self.wo(sync),
                    self.otxn_options,
                    ptr::null_mut(),
                ),
            }
        };
        if txn.is_null() {
            return Err(anyhow!("RocksDB's transaction begin returned null"));
        }
        let out = self.run_transaction(txn, keys, update);
        // SAFETY: created above, destroyed once.
        unsafe { rocksdb_transaction_destroy(txn) };
        out
    }
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: slices valid for the call; RocksDB copies them.
        unsafe {
            rocksdb_put(
                self.db,
                self.wo(sync),
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
                &mut err,
            )
        };
        check(err)
    }
    fn get(&self, key: &[u8], visit: &mut dyn FnMut(&[u8])) -> Result<bool> {
        let mut err = ptr::null_mut();
        // Pinned, as RocksDB's own readers get a value: a view into the cached block (or
        // the memtable), no copy. SAFETY: the key is valid for the call; the result is a
        // pinnable slice (or null: absent) that we destroy once below.
        let v = unsafe {
            rocksdb_get_pinned(self.db, self.read, key.as_ptr().cast(), key.len(), &mut err)
        };
        check(err)?;
        if v.is_null() {
            return Ok(false);
        }
        let mut len = 0usize;
        // SAFETY: `v` is a live pinnable slice; its value holds `len` bytes until `v` is
        // destroyed below.
        let data = unsafe { rocksdb_pinnableslice_value(v, &mut len) };
        let value = if data.is_null() || len == 0 {
            &[][..]
        } else {
            // SAFETY: as above.
            unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }
        };
        let got = found(visit, Some(value));
        // SAFETY: destroyed once, after its last use.
        unsafe { rocksdb_pinnableslice_destroy(v) };
        Ok(got)
    }
    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: the key is valid for the call.
        unsafe {
            rocksdb_delete(
                self.db,
                self.wo(sync),
                key.as_ptr().cast(),
                key.len(),
                &mut err,
            )
        };
        check(err)
    }
    fn write_batch(&self, ops: &[BatchOp], sync: bool) -> Result<()> {
        // SAFETY: the batch is created, filled with copies of valid slices, written, and
        // destroyed here.
        unsafe {
            let b = rocksdb_writebatch_create();
            for (k, v) in ops {
                match v {
                    Some(v) => rocksdb_writebatch_put(
                        b,
                        k.as_ptr().cast(),
                        k.len(),
                        v.as_ptr().cast(),
                        v.len(),
                    ),
                    None => rocksdb_writebatch_delete(b, k.as_ptr().cast(), k.len()),
                }
            }
            let mut err = ptr::null_mut();
            rocksdb_write(self.db, self.wo(sync), b, &mut err);
            rocksdb_writebatch_destroy(b);
            check(err)
        }
    }
    fn scan(
        &self,
        reverse: bool,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        // SAFETY: the iterator borrows the open database for this call only.
        let mut it = Iter(unsafe { rocksdb_create_iterator(self.db, self.read) });
        // SAFETY: live iterator.
        unsafe {
            if reverse {
                rocksdb_iter_seek_to_last(it.0)
            } else {
                rocksdb_iter_seek_to_first(it.0)
            }
        }
        let n = walk(&mut it, reverse, limit, visit);
        it.status()?;
        Ok(n)
    }
    fn seek(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        // SAFETY: as in `scan`; the key is valid for the call.
        let it = Iter(unsafe { rocksdb_create_iterator(self.db, self.read) });
        // SAFETY: live iterator, valid key.
        unsafe { rocksdb_iter_seek(it.0, key.as_ptr().cast(), key.len()) };
        it.status()?;
        Ok(it.valid().then(|| it.entry().0.to_vec()))
    }
    fn compact(&self) -> Result<()> {
        // SAFETY: null bounds mean the whole key space.
        unsafe { rocksdb_compact_range(self.db, ptr::null(), 0, ptr::null(), 0) };
        Ok(())
    }
    fn stats(&self) -> Option<String> {
        let name = CString::new("rocksdb.stats").ok()?;
        // SAFETY: NUL-terminated name; the result is malloc'ed (or null), copied and freed.
        unsafe {
            let v = rocksdb_property_value(self.db, name.as_ptr());
            if v.is_null() {
                return None;
            }
            let s = CStr::from_ptr(v).to_string_lossy().into_owned();
            rocksdb_free(v.cast());
            Some(s)
        }
    }
    fn sstables(&self) -> Option<String> {
        None
    }
}
