//! [`BlobStore`]: reads values through their refs, keeping blob files open.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::{BlobRef, decode_record};
use crate::env::{Env, RandomAccessFile};
use crate::error::{Error, Result};
use crate::filename;

/// The open blob files of a database, shared by every reader. Files are read with
/// `pread` (not mapped: the newest one grows while it is read).
pub struct BlobStore {
    env: Arc<dyn Env>,
    dir: PathBuf,
    files: Mutex<HashMap<u64, Arc<dyn RandomAccessFile>>>,
}

impl std::fmt::Debug for BlobStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobStore")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl BlobStore {
    /// A store for the blob files of the database in `dir`.
    pub fn new(env: Arc<dyn Env>, dir: PathBuf) -> Self {
        BlobStore {
            env,
            dir,
            files: Mutex::new(HashMap::new()),
        }
    }

    fn file(&self, number: u64) -> Result<Arc<dyn RandomAccessFile>> {
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = files.get(&number) {
            return Ok(Arc::clone(f));
        }
        let f = self
            .env
            .new_random_access(&filename::blob(&self.dir, number))?;
        files.insert(number, Arc::clone(&f));
        Ok(f)
    }

    /// The value `encoded_ref` points to, checked against `user_key` (X2).
    pub fn read(&self, user_key: &[u8], encoded_ref: &[u8]) -> Result<Vec<u8>> {
        let r = BlobRef::decode(encoded_ref)?;
        let path = filename::blob(&self.dir, r.file);
        let path_name = path.display().to_string();
        let file = self.file(r.file)?;
        let mut record = vec![0; r.record_len as usize];
        let mut filled = 0;
        while filled < record.len() {
            let n = file.read_at(r.offset + filled as u64, &mut record[filled..])?;
            if n == 0 {
                break;
            }
            filled += n;
        }
        record.truncate(filled);
        let (key, value) = decode_record(&path_name, &r, &record)?;
        if key != user_key {
            return Err(Error::corruption(
                path_name,
                r.offset,
                format!(
                    "blob record belongs to another key ({} bytes, looked up {} bytes)",
                    key.len(),
                    user_key.len()
                ),
            ));
        }
        let start = record.len() - value.len();
        record.copy_within(start.., 0);
        record.truncate(r.value_len as usize);
        Ok(record)
    }

    /// Forgets blob file `number` (its file is being deleted).
    pub fn evict(&self, number: u64) {
        self.files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&number);
    }
}
