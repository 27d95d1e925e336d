//! [`StopEnv`]: an `Env` with a stop switch, so that a run that hangs can be ended. Once
//! thrown, every call that creates, renames, removes or syncs fails with an I/O error,
//! and so does every append to a file it opened. A hang in the engine is nearly always a
//! wait for background work, and that work needs the filesystem: it fails, the error is
//! latched, and the waiting call returns. Until thrown, every call passes straight through.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use strata::env::{Env, FileLock, RandomAccessFile, SequentialFile, WritableFile};
use strata::{Error, Result};

#[derive(Debug, Clone)]
pub struct StopEnv {
    inner: Arc<dyn Env>,
    stopped: Arc<AtomicBool>,
}

fn check(stopped: &AtomicBool, what: &str) -> Result<()> {
    if stopped.load(Ordering::Relaxed) {
        return Err(Error::io(
            what,
            std::io::Error::other("the metamorphic runner was stopped (hang)"),
        ));
    }
    Ok(())
}

impl StopEnv {
    pub fn new(inner: Arc<dyn Env>) -> Self {
        StopEnv {
            inner,
            stopped: Arc::default(),
        }
    }

    /// The switch: store `true` to stop.
    pub fn switch(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stopped)
    }

    fn check(&self, what: &str) -> Result<()> {
        check(&self.stopped, what)
    }

    fn wrap(&self, file: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
        Box::new(StopFile {
            inner: file,
            stopped: Arc::clone(&self.stopped),
        })
    }
}

struct StopFile {
    inner: Box<dyn WritableFile>,
    stopped: Arc<AtomicBool>,
}

impl WritableFile for StopFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        check(&self.stopped, "append")?;
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn append_parts(&mut self, parts: &[&[u8]]) -> Result<()> {
        check(&self.stopped, "append")?;
        self.inner.append_parts(parts)
    }
    fn sync(&mut self) -> Result<()> {
        check(&self.stopped, "sync")?;
        self.inner.sync()
    }
    fn start_writeback(&mut self) -> Result<()> {
        self.inner.start_writeback()
    }
    fn seal(&mut self) {
        self.inner.seal();
    }
}

impl Env for StopEnv {
    fn new_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        self.inner.new_sequential(path)
    }
    fn new_random_access(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner.new_random_access(path)
    }
    fn new_table_reader(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner.new_table_reader(path)
    }
    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.check("create")?;
        Ok(self.wrap(self.inner.new_writable(path)?))
    }
    fn new_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        // The inner env's own log file (on disk, a mapped log), so the on-disk sets run
        // the log the engine uses.
        self.check("create")?;
        Ok(self.wrap(self.inner.new_log(path)?))
    }
    fn new_appendable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.check("create")?;
        Ok(self.wrap(self.inner.new_appendable(path)?))
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn children(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.children(dir)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }
    fn remove_file(&self, path: &Path) -> Result<()> {
        self.check("remove")?;
        self.inner.remove_file(path)
    }
    fn punch_holes(&self, path: &Path, ranges: &[(u64, u64)]) -> Result<u64> {
        self.check("punch")?;
        self.inner.punch_holes(path, ranges)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.check("create directory")?;
        self.inner.create_dir_all(dir)
    }
    fn remove_dir(&self, dir: &Path) -> Result<()> {
        self.check("remove directory")?;
        self.inner.remove_dir(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.check("rename")?;
        self.inner.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.check("sync directory")?;
        self.inner.sync_dir(dir)
    }
    fn lock_file(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock_file(path)
    }
}
