//! Opening a database (recovery). Destroying and repairing one: `repair.rs`.
//!
//! Open: take the lock (`lock.rs`); create or check the database; rebuild the version
//! from the manifest; build the shared state (`DbInner::new`, `state.rs`); replay the
//! WALs the manifest still needs into memtables and flush them to level 0 (`replay.rs`,
//! their blob values `replay_blobs.rs`); start a fresh WAL and a fresh manifest; delete
//! what is obsolete.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use super::lock::take_lock;
use super::obsolete::delete_obsolete_files;
use super::replay::{record_notes, replay_logs};
use super::state::DbInner;
use crate::env::Env;
use crate::error::{Error, Result};
use crate::filename::{self, Kind};
use crate::log::LogWriter;
use crate::options::Options;
use crate::version::{VersionEdit, VersionSet};

/// How a database is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// For reading and writing: recovery flushes the logs it replays, writes a new manifest
    /// and log, and deletes obsolete files.
    ReadWrite,
    /// For reading only: the logs are replayed into memtables held in memory and nothing
    /// in the directory is created, renamed, written or deleted (`Db::open_read_only`).
    ReadOnly,
}

/// Opens (or, read-write, creates) the database in `dir`, in these steps: find or
/// create it and take its lock, read its manifest, build the shared state, replay its
/// logs and, read-write, start a new log and manifest edit.
pub(super) fn open(dir: &Path, options: Options, mode: Mode) -> Result<DbInner> {
    let read_only = mode == Mode::ReadOnly;
    let lock = find_or_create(dir, &options, read_only)?;
    let versions = read_manifest(dir, &options)?;
    if !read_only {
        // The previous run's LOG becomes LOG.old, as in LevelDB (only now: an open
        // refused above leaves the directory as it found it).
        let log = dir.join("LOG");
        if options.env.exists(&log) {
            let _ = options.env.rename(&log, &dir.join("LOG.old"));
        }
    }
    let db = DbInner::new(dir, options, versions, lock, read_only);
    let mut edit = VersionEdit::default();
    let manifest_notes = std::mem::take(&mut db.lock().versions.recovery_notes);
    record_notes(&db, manifest_notes);
    replay_logs(&db, &mut edit)?;
    if !read_only {
        start_new_log(&db, edit)?;
    }
    Ok(db)
}

/// Checks the options, finds the database (creating it read-write when asked) and takes
/// its lock.
fn find_or_create(
    dir: &Path,
    options: &Options,
    read_only: bool,
) -> Result<Box<dyn crate::env::FileLock>> {
    options.validate()?;
    let env = Arc::clone(&options.env);
    if !env.exists(dir) {
        if read_only || !options.create_if_missing {
            return Err(Error::NotFound(format!(
                "{}: database does not exist (create_if_missing is false)",
                dir.display()
            )));
        }
        env.create_dir_all(dir)?;
    }
    if read_only && !env.exists(&filename::current(dir)) {
        // Checked before the lock, whose file a read-only open must not create.
        return Err(Error::NotFound(format!(
            "{}: no database here (no CURRENT file)",
            dir.display()
        )));
    }
    let lock = take_lock(env.as_ref(), dir)?;
    if !env.exists(&filename::current(dir)) {
        // Without CURRENT, tables and logs with data here belong to a database whose
        // manifest is lost: creating a new one would delete them as obsolete. A manifest
        // alone is a creation that crashed before CURRENT was written: nothing to lose.
        let orphans = env
            .children(dir)?
            .into_iter()
            .filter(|n| match filename::parse(n) {
                Some(Kind::Table(_)) => true,
                Some(Kind::Log(_)) => env.file_size(&dir.join(n)).map_or(true, |s| s > 0),
                _ => false,
            })
            .count();
        if orphans > 0 {
            return Err(Error::corruption(
                filename::current(dir).to_string_lossy(),
                0,
                format!(
                    "CURRENT is missing but {orphans} database file(s) are present; Db::repair can rebuild it"
                ),
            ));
        }
        if read_only || !options.create_if_missing {
            return Err(Error::NotFound(format!(
                "{}: database does not exist (create_if_missing is false)",
                dir.display()
            )));
        }
        VersionSet::create_new_db(dir, env.as_ref(), options.internal_order().user_name())?;
    } else if options.error_if_exists {
        return Err(Error::AlreadyExists(format!(
            "{} (error_if_exists is true)",
            dir.display()
        )));
    }
    Ok(lock)
}

/// Reads the manifest `CURRENT` names into a version set, checking that every table it
/// names exists and that a dropped edit is not damage to synced data.
fn read_manifest(dir: &Path, options: &Options) -> Result<VersionSet> {
    let env = Arc::clone(&options.env);
    let mut versions = VersionSet::new(dir, Arc::clone(&env)).with_order(options.internal_order());
    versions.recover()?;
    check_tables_exist(env.as_ref(), dir, &versions)?;
    if !versions.recovery_notes.is_empty()
        && versions.log_number != 0
        && !env.exists(&filename::log(dir, versions.log_number))
    {
        // The dropped manifest tail was an edit whose obsolete files are already gone:
        // those are deleted only after the edit is synced, so the edit was complete and
        // its damage is damage to synced data, not a crash's unfinished write.
        return Err(Error::corruption(
            filename::log(dir, versions.log_number).to_string_lossy(),
            0,
            format!(
                "the manifest's last edit is damaged ({}) and the log it replaced is gone: \
                 the edit was complete, so this is damage to synced data",
                versions.recovery_notes.join("; ")
            ),
        ));
    }
    Ok(versions)
}

/// Read-write only: a new log for the writes to come, and the edit that names it (with the
/// tables and blob files replay made), applied; then obsolete files go.
fn start_new_log(db: &DbInner, mut edit: VersionEdit) -> Result<()> {
    let (env, dir) = (&db.env, &db.dir);
    let mut st = db.lock();
    let number = st.versions.new_file_number();
    let file = db.new_log_file(number)?;
    env.sync_dir(dir)?;
    st.log = Some(LogWriter::new(file));
    st.log_file_number = number;
    st.log_dir_synced = true;
    edit.log_number = Some(number);
    edit.prev_log_number = Some(0);
    // X3: the replayed WALs are retired, so their blob files are named; and a database
    // opened with value separation says so before any ref is written, so that LevelDB
    // refuses it from now on.
    edit.new_blob_files = std::mem::take(&mut st.blob_counts)
        .into_iter()
        .map(|(n, (refs, bytes))| (n, refs, bytes))
        .collect();
    edit.separation = super::blob_gc::separation_change(
        db,
        &st.versions.current(),
        !edit.new_blob_files.is_empty(),
    );
    st.versions.log_and_apply(&mut edit)?;
    drop(delete_obsolete_files(db, st));
    Ok(())
}

/// Every table the manifest names must exist.
fn check_tables_exist(env: &dyn Env, dir: &Path, versions: &VersionSet) -> Result<()> {
    let present: HashSet<u64> = env
        .children(dir)?
        .iter()
        .filter_map(|n| match filename::parse(n) {
            Some(Kind::Table(n)) => Some(n),
            _ => None,
        })
        .collect();
    let v = versions.current();
    let missing: Vec<u64> = v
        .levels
        .iter()
        .flatten()
        .map(|f| f.number)
        .filter(|n| !present.contains(n))
        .collect();
    if let Some(first) = missing.first() {
        return Err(Error::corruption(
            filename::table(dir, *first).to_string_lossy(),
            0,
            format!(
                "{} table(s) named by the manifest are missing",
                missing.len()
            ),
        ));
    }
    Ok(())
}
