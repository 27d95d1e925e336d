//! The database directory's lock: one process at a time (LevelDB's `LOCK` file).

use std::path::Path;

use crate::env::{Env, FileLock};
use crate::error::{Error, Result};
use crate::filename;

/// Takes the lock of the database in `dir`; `Error::Locked` when another process (or
/// another handle in this one) holds it.
pub(super) fn take_lock(env: &dyn Env, dir: &Path) -> Result<Box<dyn FileLock>> {
    env.lock_file(&filename::lock(dir)).map_err(|e| match e {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::WouldBlock => {
            Error::Locked(format!("{}: {source}", dir.display()))
        }
        other => other,
    })
}
