//! Destroying a database, and repairing one: every log becomes a table, every table that
//! reads cleanly is kept, and all of them are merged into fresh tables a new manifest
//! names (see [`repair`]).

use std::path::Path;
use std::sync::Arc;

use super::lock::take_lock;
use super::table_file::build_table;
use crate::batch::WriteBatch;
use crate::env::Env;
use crate::error::{Error, Result};
use crate::filename::{self, Kind};
use crate::iter::Cursor;
use crate::key::ParsedInternalKey;
use crate::log::{Checksums, LogReader, LogWriter};
use crate::memtable::MemTable;
use crate::options::Options;
use crate::sstable::{BlockReads, Table, TableFormat};
use crate::version::{FileMetaData, VersionEdit};

/// Deletes a database's files and then its directory, if empty.
pub(super) fn destroy(dir: &Path, options: &Options) -> Result<()> {
    let env = options.env.as_ref();
    if !env.exists(dir) {
        return Ok(());
    }
    let lock = take_lock(env, dir)?;
    let mut first_error = None;
    for name in env.children(dir)? {
        match filename::parse(&name) {
            Some(Kind::Lock) | None => {}
            Some(_) => {
                if let Err(e) = env.remove_file(&dir.join(&name)) {
                    first_error.get_or_insert(e);
                }
            }
        }
    }
    drop(lock);
    let _ = env.remove_file(&filename::lock(dir));
    let _ = env.remove_dir(dir);
    first_error.map_or(Ok(()), Err)
}

/// Opens and scans a table (read in `format`): the open table, its key range and largest
/// seqnum, or an error if any of it is unreadable.
fn scan_table(
    env: &dyn Env,
    path: &Path,
    format: &TableFormat,
) -> Result<(Arc<Table>, FileMetaData, u64)> {
    let size = env.file_size(path)?;
    let name = path.to_string_lossy().into_owned();
    let table = Arc::new(Table::open(
        env.new_random_access(path)?,
        &name,
        size,
        format,
    )?);
    let mut it = table.iter(BlockReads::SCAN_ONCE);
    it.seek_to_first();
    let mut smallest = Vec::new();
    let mut largest = Vec::new();
    let mut max_seq = 0;
    while it.valid() {
        let p = ParsedInternalKey::parse(it.key())
            .ok_or_else(|| Error::corruption(&name, 0, "bad internal key"))?;
        max_seq = max_seq.max(p.seqnum);
        if smallest.is_empty() {
            smallest = it.key().to_vec();
        }
        largest.clear();
        largest.extend_from_slice(it.key());
        it.next();
    }
    it.status()?;
    let number = match path
        .file_name()
        .and_then(|n| filename::parse(&n.to_string_lossy()))
    {
        Some(Kind::Table(n)) => n,
        _ => 0,
    };
    Ok((
        table,
        FileMetaData {
            number,
            size,
            smallest,
            largest,
            blob_bytes: 0,
            plain: false,
        },
        max_seq,
    ))
}

/// Repair: every log becomes a table; every table that reads cleanly end to end is kept
/// (the others go to `lost/`); then all of them are merged, newest version of each key
/// first, into fresh non-overlapping tables at level 1, which a new manifest names. (LevelDB
/// leaves the salvaged tables at level 0, where a newer-numbered table holding older
/// data could shadow newer values; merging by seqnum cannot.) The steps, as LevelDB's
/// `Repairer` names them: find the files, convert the logs to tables, scan the tables,
/// write the merged tables and the descriptor, then set the old logs and manifests aside.
pub(super) fn repair(dir: &Path, options: Options) -> Result<()> {
    let env = Arc::clone(&options.env);
    let _lock = take_lock(env.as_ref(), dir)?;
    let mut r = Repairer::new(dir, options)?;
    r.convert_logs_to_tables()?;
    let (readable, max_seq) = r.scan_tables();
    let mut edit = r.write_merged_tables(&readable)?;
    let manifest_number = r.write_descriptor(&mut edit, max_seq)?;
    r.set_aside_old_files(manifest_number);
    Ok(())
}

/// One repair's state: the directory's files and the next file number to use.
struct Repairer<'a> {
    dir: &'a Path,
    options: Options,
    env: Arc<dyn Env>,
    /// Every name in the directory when the repair began.
    names: Vec<String>,
    /// Logs found, in number order.
    logs: Vec<u64>,
    /// Tables found, then the tables made from logs.
    tables: Vec<u64>,
    next_number: u64,
}

impl<'a> Repairer<'a> {
    /// Finds the files: logs, tables, and the largest file number in use.
    fn new(dir: &'a Path, options: Options) -> Result<Self> {
        let env = Arc::clone(&options.env);
        let names = env.children(dir)?;
        let mut max_number = 1;
        let mut logs = Vec::new();
        let mut tables = Vec::new();
        for name in &names {
            match filename::parse(name) {
                Some(Kind::Log(n)) => {
                    logs.push(n);
                    max_number = max_number.max(n);
                }
                Some(Kind::Table(n)) => {
                    tables.push(n);
                    max_number = max_number.max(n);
                }
                Some(Kind::Manifest(n) | Kind::Temp(n) | Kind::Blob(n)) => {
                    max_number = max_number.max(n)
                }
                _ => {}
            }
        }
        logs.sort_unstable();
        Ok(Repairer {
            dir,
            options,
            env,
            names,
            logs,
            tables,
            next_number: max_number + 1,
        })
    }

    fn take_number(&mut self) -> u64 {
        self.next_number += 1;
        self.next_number - 1
    }

    /// Moves `name` into `lost/` (best effort: what stays behind is only unreferenced).
    fn move_to_lost(&self, name: &str) {
        let lost = self.dir.join("lost");
        let _ = self.env.create_dir_all(&lost);
        let _ = self.env.rename(&self.dir.join(name), &lost.join(name));
    }

    /// Writes the entries `keep` accepts from `it` into table `number`, up to `max_bytes`.
    fn write_table(
        &self,
        number: u64,
        it: &mut dyn Cursor,
        keep: &mut dyn FnMut(&[u8], &[u8]) -> bool,
        max_bytes: u64,
    ) -> Result<Option<FileMetaData>> {
        build_table(
            self.env.as_ref(),
            &filename::table(self.dir, number),
            self.options.table_options(),
            number,
            it,
            keep,
            max_bytes,
            false,
        )
        .map(|built| built.map(|(meta, _)| meta))
    }

    /// Salvages every readable record of every log into a table of its own.
    fn convert_logs_to_tables(&mut self) -> Result<()> {
        for n in self.logs.clone() {
            let mem = Arc::new(MemTable::with_order(self.options.internal_order()));
            if let Ok(file) = self.env.new_sequential(&filename::log(self.dir, n)) {
                let mut reader = LogReader::new(file, Checksums::Verify);
                let mut record = Vec::new();
                while let Ok(true) = reader.read_record(&mut record) {
                    if let Ok(batch) = WriteBatch::from_bytes(std::mem::take(&mut record)) {
                        // from_bytes checked every record: this cannot fail half way.
                        let _ = mem.insert_batch(&batch);
                    }
                }
            }
            let mut it = mem.iter();
            it.seek_to_first();
            let number = self.take_number();
            if let Some(meta) = self.write_table(number, &mut it, &mut |_, _| true, u64::MAX)? {
                self.tables.push(meta.number);
            }
        }
        Ok(())
    }

    /// Opens and reads every table end to end: those that read cleanly, and the largest
    /// seqnum in them; the others go to `lost/`.
    fn scan_tables(&self) -> (Vec<Arc<Table>>, u64) {
        // Tables are scanned whole and merged: their filters would be read for nothing.
        let unfiltered = TableFormat {
            order: self.options.internal_order(),
            filter: None,
        };
        let mut readable = Vec::new();
        let mut max_seq = 0;
        for &n in &self.tables {
            let mut path = filename::table(self.dir, n);
            if !self.env.exists(&path) {
                path = filename::sst_table(self.dir, n);
            }
            match scan_table(self.env.as_ref(), &path, &unfiltered) {
                Ok((table, meta, seq)) if !meta.smallest.is_empty() => {
                    max_seq = max_seq.max(seq);
                    readable.push(table);
                }
                _ => {
                    if let Some(name) = path.file_name() {
                        self.move_to_lost(&name.to_string_lossy());
                    }
                }
            }
        }
        (readable, max_seq)
    }

    /// Merges `readable` into fresh level-1 tables: the newest version of each key,
    /// deletions dropped (nothing lies below). The edit names them, and the blob files
    /// their refs point to with exact counts.
    fn write_merged_tables(&mut self, readable: &[Arc<Table>]) -> Result<VersionEdit> {
        let order = self.options.internal_order();
        let children: Vec<crate::iter::BoxCursor> = readable
            .iter()
            .map(|t| Box::new(t.iter(BlockReads::SCAN_ONCE)) as crate::iter::BoxCursor)
            .collect();
        let mut merged = crate::iter::MergingIter::new(children, order.clone());
        merged.seek_to_first();
        let mut last_user: Option<Vec<u8>> = None;
        let mut blob_refs: std::collections::BTreeMap<u64, (u64, u64)> = Default::default();
        let mut keep = |ikey: &[u8], value: &[u8]| {
            let Some(p) = ParsedInternalKey::parse(ikey) else {
                return false;
            };
            if last_user.as_deref() == Some(p.user_key) {
                return false; // an older version
            }
            last_user = Some(p.user_key.to_vec());
            match p.ty {
                crate::key::ValueType::Value => true,
                crate::key::ValueType::BlobRef => match crate::blob::BlobRef::decode(value) {
                    Ok(r) => {
                        let c = blob_refs.entry(r.file).or_default();
                        c.0 += 1;
                        c.1 += u64::from(r.record_len);
                        true
                    }
                    Err(_) => false, // a damaged ref leads nowhere
                },
                crate::key::ValueType::Deletion => false,
            }
        };
        let mut edit = VersionEdit {
            comparator: Some(order.user_name().to_string()),
            log_number: Some(0),
            prev_log_number: Some(0),
            ..Default::default()
        };
        let max_bytes = self.options.max_file_size as u64;
        while merged.valid() {
            let number = self.take_number();
            if let Some(meta) = self.write_table(number, &mut merged, &mut keep, max_bytes)? {
                edit.new_files.push((1, meta));
            }
        }
        merged.status()?;
        if !blob_refs.is_empty() {
            // Refs to compressed values may be among them (repair does not look).
            edit.separation = Some(crate::version::Separation::Compressed);
            edit.new_blob_files = blob_refs
                .into_iter()
                .map(|(n, (refs, bytes))| (n, refs, bytes))
                .collect();
        }
        Ok(edit)
    }

    /// Writes `edit` as a new manifest, synced, and points `CURRENT` at it; returns its
    /// number.
    fn write_descriptor(&mut self, edit: &mut VersionEdit, max_seq: u64) -> Result<u64> {
        self.env.sync_dir(self.dir)?;
        let manifest_number = self.take_number();
        edit.next_file_number = Some(manifest_number + 1);
        edit.last_seqnum = Some(max_seq);
        let mpath = filename::manifest(self.dir, manifest_number);
        let mut log = LogWriter::new(self.env.new_writable(&mpath)?);
        log.add_record(&edit.encode())?;
        log.sync()?;
        drop(log);
        self.env.sync_dir(self.dir)?;
        crate::version::set_current_file(self.env.as_ref(), self.dir, manifest_number)?;
        Ok(manifest_number)
    }

    /// Only once the new manifest is current is everything the logs held safe in named
    /// tables: the logs and the old manifests go to `lost/`. The old tables are obsolete;
    /// the next open deletes them.
    fn set_aside_old_files(&self, manifest_number: u64) {
        for &n in &self.logs {
            self.move_to_lost(&format!("{n:06}.log"));
        }
        for name in &self.names {
            if let Some(Kind::Manifest(n)) = filename::parse(name)
                && n != manifest_number
            {
                self.move_to_lost(name);
            }
        }
    }
}
