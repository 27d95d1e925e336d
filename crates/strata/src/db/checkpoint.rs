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
//! Not yet: databases with value separation (blob files grow while their WAL is live, so
//! they cannot be linked as they are); the call says so.

use std::path::Path;
use std::sync::Arc;

use super::state::DbInner;
use super::table_file::build_table;
use crate::error::{Error, Result};
use crate::filename;
use crate::iter::{BoxCursor, Cursor, MergingIter};
use crate::key::ParsedInternalKey;
use crate::log::LogWriter;
use crate::version::{Separation, VersionEdit};

pub(super) fn checkpoint(db: &DbInner, dest: &Path) -> Result<u64> {
    let env = db.env.as_ref();
    if env.exists(dest) {
        return Err(Error::AlreadyExists(format!(
            "{}: a checkpoint goes into a directory that does not exist yet",
            dest.display()
        )));
    }
    if db.options.separates_values() {
        return Err(Error::NotSupported(
            "checkpoints of databases with value separation (blob_threshold > 0)".into(),
        ));
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
    if version.separation != Separation::Off || !version.blob_files.is_empty() {
        return Err(Error::NotSupported(
            "checkpoints of databases whose manifest names blob files".into(),
        ));
    }
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
    // The memtables' entries at or below S: the newest data, so a level-0 table numbered
    // above every other.
    let children: Vec<BoxCursor> = mems
        .iter()
        .map(|m| Box::new(m.iter()) as BoxCursor)
        .collect();
    let mut merged = MergingIter::new(children, version.order.clone());
    merged.seek_to_first();
    let mut at_or_below =
        |ikey: &[u8], _: &[u8]| ParsedInternalKey::parse(ikey).is_some_and(|p| p.seqnum <= seq);
    if let Some(meta) = build_table(
        env,
        &filename::table(dest, number),
        db.options.table_options(),
        number,
        &mut merged,
        &mut at_or_below,
        u64::MAX,
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
