//! `Db::checkpoint`: a consistent, openable copy of a live database, exactly the state as
//! of one sequence number (RocksDB's `Checkpoint`, the hook backups and replication build
//! on).
//!
//! Under the state mutex, one moment is taken: the last sequence number `S`, the current
//! version (holding it keeps its tables from deletion, D4) and the memtables. Outside
//! it, while writers go on, `DEST` is built: the version's tables hard-linked (tables
//! never change; a copy where links cannot be made), the memtables' entries at or below
//! `S` written into one new level-0 table, and a manifest naming all of them with `S` as
//! its last sequence number. Every file and the directory are synced before `CURRENT` is
//! written, last, the way LevelDB makes any manifest current (a temporary file renamed
//! over it, then the directory synced). So a crash in the middle leaves `DEST` complete,
//! or without `CURRENT`, which an open refuses; the source is only read.
//!
//! With value separation, the version's blob files are linked too (a file the manifest
//! names is complete and never written again), and the manifest names them with their
//! counts, as the source's does. The memtables' refs point into the blob files of live
//! WALs, which are still written: their values are read and written inline into the new
//! table instead, so the checkpoint names no file it does not hold.

use std::path::Path;
use std::sync::Arc;

use super::state::DbInner;
use super::table_file::build_table;
use crate::blob::BlobStore;
use crate::error::{Error, Result};
use crate::filename;
use crate::iter::{BoxCursor, Cursor, MergingIter};
use crate::key::{ParsedInternalKey, ValueType, append_internal_key};
use crate::log::LogWriter;
use crate::version::VersionEdit;

pub(super) fn checkpoint(db: &DbInner, dest: &Path) -> Result<u64> {
    let env = db.env.as_ref();
    if env.exists(dest) {
        return Err(Error::AlreadyExists(format!(
            "{}: a checkpoint goes into a directory that does not exist yet",
            dest.display()
        )));
    }
    // One moment: S, the version that holds every table up to it, and the memtables
    // that hold the rest.
    let (seq, version, mems, number) = {
        let st = db.lock();
        let mut mems = vec![Arc::clone(&st.mem)];
        mems.extend(st.imm.iter().map(|(_, m)| Arc::clone(m)));
        (
            st.versions.last_seqnum,
            st.versions.current(),
            mems,
            st.versions.next_file_number,
        )
    };
    env.create_dir_all(dest)?;
    if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
        env.sync_dir(parent)?;
    }

    let mut edit = VersionEdit {
        comparator: Some(version.order.user_name().to_string()),
        log_number: Some(0),
        prev_log_number: Some(0),
        next_file_number: Some(number + 2),
        last_seqnum: Some(seq),
        ..VersionEdit::default()
    };
    for (level, files) in version.levels.iter().enumerate() {
        for f in files {
            let mut from = filename::table(&db.dir, f.number);
            let mut to = filename::table(dest, f.number);
            if !env.exists(&from) {
                from = filename::sst_table(&db.dir, f.number);
                to = filename::sst_table(dest, f.number);
            }
            env.link_file(&from, &to)?;
            edit.new_files.push((level, f.to_meta_data()));
        }
    }
    // The blob files the version names, with their counts (X3, X4).
    for &number in version.blob_files.keys() {
        env.link_file(
            &filename::blob(&db.dir, number),
            &filename::blob(dest, number),
        )?;
    }
    version.describe_blob_files(&mut edit);
    // The memtables' entries at or below S: the newest data, so a level-0 table numbered
    // above every other.
    let children: Vec<BoxCursor> = mems
        .iter()
        .map(|m| Box::new(m.iter()) as BoxCursor)
        .collect();
    let merged = MergingIter::new(children, version.order.clone());
    let mut merged = Inlined::new(Box::new(merged), &db.blobs);
    merged.seek_to_first();
    let mut at_or_below =
        |ikey: &[u8], _: &[u8]| ParsedInternalKey::parse(ikey).is_some_and(|p| p.seqnum <= seq);
    if let Some((meta, _)) = build_table(
        env,
        &filename::table(dest, number),
        db.options.table_options(),
        number,
        &mut merged,
        &mut at_or_below,
        u64::MAX,
        false,
    )? {
        edit.new_files.push((0, meta));
    }

    let manifest = number + 1;
    let mut log = LogWriter::new(env.new_writable(&filename::manifest(dest, manifest))?);
    log.add_record(&edit.encode())?;
    log.sync()?;
    drop(log);
    env.sync_dir(dest)?;
    // Last: until CURRENT names the manifest, an open refuses the directory.
    crate::version::set_current_file(env, dest, manifest)?;
    Ok(seq)
}

/// A cursor over entries whose blob refs are replaced by their values (as plain values of
/// the same sequence number), read through `blobs`: what a checkpoint writes of the
/// memtables, whose refs point into the blob files of live WALs.
struct Inlined<'a> {
    inner: BoxCursor,
    blobs: &'a BlobStore,
    /// The current entry rewritten, when it was a ref.
    key: Vec<u8>,
    value: Vec<u8>,
    rewritten: bool,
    err: Option<Error>,
}

impl<'a> Inlined<'a> {
    fn new(inner: BoxCursor, blobs: &'a BlobStore) -> Self {
        Inlined {
            inner,
            blobs,
            key: Vec::new(),
            value: Vec::new(),
            rewritten: false,
            err: None,
        }
    }

    /// Reads the current entry's value if it is a ref.
    fn resolve(&mut self) {
        self.rewritten = false;
        if !self.inner.valid() || self.err.is_some() {
            return;
        }
        let Some(p) = ParsedInternalKey::parse(self.inner.key()) else {
            return;
        };
        if p.ty != ValueType::BlobRef {
            return;
        }
        match self
            .blobs
            .read_into(p.user_key, self.inner.value(), &mut self.value)
        {
            Ok(()) => {
                self.key.clear();
                append_internal_key(&mut self.key, p.user_key, p.seqnum, ValueType::Value);
                self.rewritten = true;
            }
            Err(e) => self.err = Some(e),
        }
    }
}

impl Cursor for Inlined<'_> {
    fn valid(&self) -> bool {
        self.err.is_none() && self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.inner.seek_to_first();
        self.resolve();
    }
    fn seek_to_last(&mut self) {
        self.inner.seek_to_last();
        self.resolve();
    }
    fn seek(&mut self, target: &[u8]) {
        self.inner.seek(target);
        self.resolve();
    }
    fn next(&mut self) {
        self.inner.next();
        self.resolve();
    }
    fn prev(&mut self) {
        self.inner.prev();
        self.resolve();
    }
    fn key(&self) -> &[u8] {
        if self.rewritten {
            &self.key
        } else {
            self.inner.key()
        }
    }
    fn value(&self) -> &[u8] {
        if self.rewritten {
            &self.value
        } else {
            self.inner.value()
        }
    }
    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => self.inner.status(),
        }
    }
}
