//! [`MemEnv`]: files in memory, for tests and benchmarks.
//!
//! Paths are plain keys: there are no directories to speak of beyond the set created with
//! `create_dir_all`, which `children` lists against. Every handle shares the file's bytes,
//! so a reader sees what a writer appended as soon as it is flushed (appends are
//! unbuffered here, so at once). Thread-safe: one mutex guards the file table and one
//! read-write lock each file's bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use super::{Env, FileLock, RandomAccessFile, SequentialFile, WritableFile};
use crate::error::{Error, Result};

type Bytes = Arc<RwLock<Vec<u8>>>;

#[derive(Debug, Default)]
struct State {
    files: BTreeMap<PathBuf, Bytes>,
    dirs: BTreeSet<PathBuf>,
    locks: BTreeSet<PathBuf>,
}

/// An in-memory filesystem. Clones share the same files.
#[derive(Debug, Default, Clone)]
pub struct MemEnv {
    state: Arc<Mutex<State>>,
}

fn not_found(call: &str, path: &Path) -> Error {
    Error::io(
        format!("{call} {}", path.display()),
        std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
    )
}

/// Zeros each `(offset, len)` range of `bytes` that lies within them (a punched hole
/// reads as zeros); returns the bytes zeroed.
pub(crate) fn zero_ranges(bytes: &mut [u8], ranges: &[(u64, u64)]) -> u64 {
    let mut zeroed = 0;
    for &(offset, len) in ranges {
        let start = (offset as usize).min(bytes.len());
        let end = (offset.saturating_add(len) as usize).min(bytes.len());
        bytes[start..end].fill(0);
        zeroed += (end - start) as u64;
    }
    zeroed
}

impl MemEnv {
    /// An empty filesystem.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock leaves the maps consistent (each operation is a
        // single insert or remove), so a poisoned lock is safe to reuse.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn file(&self, call: &str, path: &Path) -> Result<Bytes> {
        self.state()
            .files
            .get(path)
            .cloned()
            .ok_or_else(|| not_found(call, path))
    }

    /// A copy of a file's bytes (for tests that corrupt or inspect files).
    pub fn contents(&self, path: &Path) -> Result<Vec<u8>> {
        let f = self.file("read", path)?;
        let bytes = f.read().unwrap_or_else(|p| p.into_inner());
        Ok(bytes.clone())
    }

    /// Replaces a file's bytes, creating it if needed (for tests that corrupt files).
    pub fn set_contents(&self, path: &Path, data: Vec<u8>) {
        self.state()
            .files
            .insert(path.to_path_buf(), Arc::new(RwLock::new(data)));
    }
}

struct MemSequential {
    bytes: Bytes,
    pos: usize,
}

impl SequentialFile for MemSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let data = self.bytes.read().unwrap_or_else(|p| p.into_inner());
        let src = data.get(self.pos..).unwrap_or_default();
        let n = src.len().min(buf.len());
        buf[..n].copy_from_slice(&src[..n]);
        self.pos += n;
        Ok(n)
    }
}

struct MemRandomAccess {
    bytes: Bytes,
}

impl RandomAccessFile for MemRandomAccess {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let data = self.bytes.read().unwrap_or_else(|p| p.into_inner());
        data.read_at(offset, buf)
    }
}

struct MemWritable {
    bytes: Bytes,
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.bytes
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
}

#[derive(Debug)]
struct MemLock {
    env: MemEnv,
    path: PathBuf,
}

impl FileLock for MemLock {}

impl Drop for MemLock {
    fn drop(&mut self) {
        self.env.state().locks.remove(&self.path);
    }
}

impl Env for MemEnv {
    fn new_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        let bytes = self.file("open", path)?;
        Ok(Box::new(MemSequential { bytes, pos: 0 }))
    }

    fn new_random_access(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let bytes = self.file("open", path)?;
        Ok(Arc::new(MemRandomAccess { bytes }))
    }

    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let bytes: Bytes = Arc::default();
        self.state()
            .files
            .insert(path.to_path_buf(), Arc::clone(&bytes));
        Ok(Box::new(MemWritable { bytes }))
    }

    fn new_appendable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let bytes = Arc::clone(self.state().files.entry(path.to_path_buf()).or_default());
        Ok(Box::new(MemWritable { bytes }))
    }

    fn exists(&self, path: &Path) -> bool {
        let st = self.state();
        st.files.contains_key(path) || st.dirs.contains(path)
    }

    fn children(&self, dir: &Path) -> Result<Vec<String>> {
        let st = self.state();
        let names = st
            .files
            .keys()
            .chain(st.dirs.iter())
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        Ok(names)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        let f = self.file("stat", path)?;
        let len = f.read().unwrap_or_else(|p| p.into_inner()).len();
        Ok(len as u64)
    }

    fn punch_holes(&self, path: &Path, ranges: &[(u64, u64)]) -> Result<u64> {
        let f = self.file("punch a hole in", path)?;
        let mut bytes = f.write().unwrap_or_else(|p| p.into_inner());
        Ok(zero_ranges(&mut bytes, ranges))
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        match self.state().files.remove(path) {
            Some(_) => Ok(()),
            None => Err(not_found("unlink", path)),
        }
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        let mut st = self.state();
        for d in dir.ancestors() {
            if !d.as_os_str().is_empty() {
                st.dirs.insert(d.to_path_buf());
            }
        }
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        let mut st = self.state();
        if st.files.keys().any(|p| p.parent() == Some(dir)) {
            return Err(Error::io(
                format!("rmdir {}", dir.display()),
                std::io::Error::other("directory not empty"),
            ));
        }
        st.dirs.remove(dir);
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut st = self.state();
        let f = st
            .files
            .remove(from)
            .ok_or_else(|| not_found("rename", from))?;
        st.files.insert(to.to_path_buf(), f);
        Ok(())
    }

    fn sync_dir(&self, _dir: &Path) -> Result<()> {
        Ok(())
    }

    fn lock_file(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let mut st = self.state();
        if !st.locks.insert(path.to_path_buf()) {
            return Err(Error::io(
                format!("lock {}", path.display()),
                std::io::Error::new(std::io::ErrorKind::WouldBlock, "already held"),
            ));
        }
        st.files.entry(path.to_path_buf()).or_default();
        drop(st);
        Ok(Box::new(MemLock {
            env: self.clone(),
            path: path.to_path_buf(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_directories_and_locks() {
        let env = MemEnv::new();
        let dir = Path::new("/db");
        env.create_dir_all(dir).unwrap();
        let p = dir.join("000001.log");
        let mut w = env.new_writable(&p).unwrap();
        w.append(b"abc").unwrap();
        let r = env.new_random_access(&p).unwrap();
        w.append(b"def").unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(
            r.read_at(1, &mut buf).unwrap(),
            5,
            "reader sees later appends"
        );
        assert_eq!(&buf[..5], b"bcdef");
        assert_eq!(env.children(dir).unwrap(), vec!["000001.log".to_string()]);
        env.rename(&p, &dir.join("x")).unwrap();
        assert!(!env.exists(&p));
        assert_eq!(env.contents(&dir.join("x")).unwrap(), b"abcdef");
        let lock = env.lock_file(&dir.join("LOCK")).unwrap();
        assert!(env.lock_file(&dir.join("LOCK")).is_err());
        drop(lock);
        assert!(env.lock_file(&dir.join("LOCK")).is_ok());
        assert!(env.remove_file(&dir.join("missing")).is_err());
    }
}
