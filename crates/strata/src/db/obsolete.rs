//! Deletion of obsolete files (D4): tables no live version or pending output names, logs
//! older than the one the manifest needs, manifests older than the current one, blob
//! files neither a live version nor an unflushed WAL needs (X3).

use std::collections::HashSet;

use super::{DbInner, State};
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

/// Deletes files no live version, pending output or needed log names (D4).
pub(super) fn delete_obsolete_files(db: &DbInner, st: &mut State) {
    if st.bg_error.is_some() {
        return; // the state on disk is in doubt: keep everything
    }
    let live = st.versions.live_files();
    let needed_blobs = needed_blob_files(st);
    let Ok(names) = db.env.children(&db.dir) else {
        return;
    };
    for name in names {
        let keep = match filename::parse(&name) {
            Some(Kind::Log(n)) => {
                n >= st.versions.log_number
                    || n == st.versions.prev_log_number
                    || n == st.log_file_number
            }
            Some(Kind::Manifest(n)) => n >= st.versions.manifest_number,
            Some(Kind::Table(n)) => live.contains(&n) || st.pending_outputs.contains(&n),
            Some(Kind::Temp(n)) => st.pending_outputs.contains(&n),
            Some(Kind::Blob(n)) => {
                n >= st.versions.log_number
                    || needed_blobs.contains(&n)
                    || st.pending_outputs.contains(&n)
            }
            Some(Kind::Current | Kind::Lock | Kind::InfoLog) | None => true,
        };
        if !keep {
            match filename::parse(&name) {
                Some(Kind::Table(n)) => db.table_cache.evict(n),
                Some(Kind::Blob(n)) => db.blobs.evict(n),
                _ => {}
            }
            let _ = db.env.remove_file(&db.dir.join(&name));
        }
    }
}
