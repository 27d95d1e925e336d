//! Deletion of obsolete files (D4): tables no live version or pending output names, logs
//! older than the one the manifest needs, manifests older than the current one, blob
//! files neither a live version nor an unflushed WAL needs (X3).

use std::collections::HashSet;
use std::sync::MutexGuard;

use super::state::{DbInner, State};
use crate::filename::{self, Kind};

/// Blob files someone needs besides those of live WALs and pending outputs (X3): named by
/// a live version, counted for a WAL not yet retired, or of a flushed memtable a reader
/// still holds.
pub(super) fn needed_blob_files(st: &mut State) -> HashSet<u64> {
    let mut needed = st.versions.live_blob_files();
    needed.extend(st.blob_counts.keys().copied());
    st.retired_mems.retain(|(_, m)| m.strong_count() > 0);
    needed.extend(st.retired_mems.iter().map(|(n, _)| *n));
    needed
}

/// The files the database needs at one moment (D4): the one predicate that both the
/// deletion of obsolete files and `Db::verify`'s list of garbage use.
pub(super) struct Needed {
    /// Logs from this number on are replayed at open.
    pub(super) log_number: u64,
    /// The log of an older format's previous memtable, if any (0: none).
    pub(super) prev_log: u64,
    /// The log being written now (0 for a read-only open).
    pub(super) current_log: u64,
    /// Manifests from this number on are live.
    pub(super) manifest_number: u64,
    /// Tables some live version names.
    pub(super) tables: HashSet<u64>,
    /// Numbers of outputs being written (tables, temporary files, blob files).
    pub(super) pending: HashSet<u64>,
    /// Blob files someone needs besides those of live WALs (X3).
    pub(super) blobs: HashSet<u64>,
}

impl Needed {
    /// What the database needs now; `manifest_number` is the live manifest's.
    pub(super) fn of(st: &mut State, manifest_number: u64) -> Needed {
        Needed {
            log_number: st.versions.log_number,
            prev_log: st.versions.prev_log_number,
            current_log: st.log_file_number,
            manifest_number,
            tables: st.versions.live_files(),
            pending: st.pending_outputs.clone(),
            blobs: needed_blob_files(st),
        }
    }

    /// Whether opening the database replays log `number`.
    pub(super) fn replays_log(&self, number: u64) -> bool {
        number >= self.log_number || number == self.prev_log
    }

    /// Whether the file called `name` must stay: `Some(true)` for one the database needs
    /// (or keeps, as `CURRENT` and `LOCK`), `Some(false)` for garbage the deletion of
    /// obsolete files removes (a table a cut-short compaction left, an old log or
    /// manifest), `None` for a name that is none of the database's kinds (never removed).
    pub(super) fn keeps(&self, name: &str) -> Option<bool> {
        Some(match filename::parse(name)? {
            Kind::Log(n) => self.replays_log(n) || n == self.current_log,
            Kind::Manifest(n) => n >= self.manifest_number,
            Kind::Table(n) => self.tables.contains(&n) || self.pending.contains(&n),
            Kind::Temp(n) => self.pending.contains(&n),
            Kind::Blob(n) => {
                n >= self.log_number || self.blobs.contains(&n) || self.pending.contains(&n)
            }
            Kind::Current | Kind::Lock | Kind::InfoLog => true,
        })
    }
}

/// Deletes files no live version, pending output or needed log names (D4). The files are
/// chosen under the state lock and removed with it released, as LevelDB does: on a
/// filesystem mounted with `discard` (this machine's), removing a 2 MB table waits about
/// a millisecond for the device, which writers must not wait for. A file chosen stays
/// obsolete (numbers are never reused), and a second deletion of one is harmless.
pub(super) fn delete_obsolete_files<'a>(
    db: &'a DbInner,
    mut st: MutexGuard<'a, State>,
) -> MutexGuard<'a, State> {
    if st.bg_error.is_some() {
        return st; // the state on disk is in doubt: keep everything
    }
    let manifest = st.versions.manifest_number;
    let needed = Needed::of(&mut st, manifest);
    let Ok(names) = db.env.children(&db.dir) else {
        return st;
    };
    let mut obsolete = Vec::new();
    for name in names {
        if needed.keeps(&name) != Some(false) {
            continue;
        }
        match filename::parse(&name) {
            Some(Kind::Table(n)) => db.table_cache.evict(n),
            Some(Kind::Blob(n)) => {
                db.blobs.evict(n);
                st.blob_freed.remove(&n);
                st.blob_holed.remove(&n);
                st.blob_dead.remove(&n);
            }
            _ => {}
        }
        obsolete.push(name);
    }
    if obsolete.is_empty() {
        return st;
    }
    drop(st);
    for name in obsolete {
        let _ = db.env.remove_file(&db.dir.join(&name));
    }
    db.lock()
}
