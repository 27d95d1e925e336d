//! [`FaultEnv`]: wraps another [`Env`] and fails chosen calls, for tests of what the
//! engine does when the disk says no.
//!
//! A [`Fault`] names a call kind and a path fragment; after `skip` matching calls pass,
//! the next one fails with the given error kind, once or (with `sticky`) every time
//! after. Everything else passes through unchanged.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use super::{Env, FileLock, RandomAccessFile, SequentialFile, WritableFile};
use crate::error::{Error, Result};

/// Which calls a fault applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// `WritableFile::append`.
    Append,
    /// `WritableFile::sync`.
    Sync,
    /// `Env::new_writable` and `Env::new_appendable`.
    Create,
    /// `Env::rename`.
    Rename,
    /// `Env::sync_dir`.
    SyncDir,
    /// `Env::remove_file`.
    Remove,
    /// `Env::punch_holes`.
    Punch,
    /// Every call above: the fault lands on the (skip + 1)-th mutating call of any kind.
    Any,
}

/// One planned failure.
#[derive(Debug, Clone)]
pub struct Fault {
    /// The call kind.
    pub call: Call,
    /// Only paths containing this (empty: every path).
    pub path_contains: String,
    /// Matching calls that still succeed first.
    pub skip: u64,
    /// Keep failing once triggered.
    pub sticky: bool,
    /// The error the OS "returns".
    pub kind: std::io::ErrorKind,
}

#[derive(Debug, Default)]
struct Plan {
    fault: Option<Fault>,
    triggered: bool,
    failures: u64,
    /// Every mutating call with its path and whether it failed (see `FaultEnv::calls`).
    log: Vec<(Call, std::path::PathBuf, bool)>,
}

/// An [`Env`] that fails what its plan says.
#[derive(Debug, Clone)]
pub struct FaultEnv {
    inner: Arc<dyn Env>,
    plan: Arc<Mutex<Plan>>,
}

impl FaultEnv {
    /// Wraps `inner`, failing nothing yet.
    pub fn new(inner: Arc<dyn Env>) -> Self {
        FaultEnv {
            inner,
            plan: Arc::default(),
        }
    }

    fn plan(&self) -> MutexGuard<'_, Plan> {
        self.plan.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Arms `fault`, replacing any other.
    pub fn arm(&self, fault: Fault) {
        // The call log and the failure count carry on across faults.
        let mut p = self.plan();
        p.fault = Some(fault);
        p.triggered = false;
    }

    /// Disarms: every call succeeds again.
    pub fn disarm(&self) {
        self.plan().fault = None;
    }

    /// How many calls have failed.
    pub fn failures(&self) -> u64 {
        self.plan().failures
    }

    /// Every mutating call so far, in order: kind, path, and whether it was failed.
    pub fn calls(&self) -> Vec<(Call, std::path::PathBuf, bool)> {
        self.plan().log.clone()
    }

    fn check(&self, call: Call, path: &Path) -> Result<()> {
        check(&self.plan, call, path)
    }
}

fn check(plan: &Mutex<Plan>, call: Call, path: &Path) -> Result<()> {
    let mut p = plan.lock().unwrap_or_else(|p| p.into_inner());
    let result = decide(&mut p, call, path);
    p.log.push((call, path.to_path_buf(), result.is_err()));
    result
}

fn decide(p: &mut Plan, call: Call, path: &Path) -> Result<()> {
    let Some(f) = p.fault.clone() else {
        return Ok(());
    };
    if (f.call != call && f.call != Call::Any) || !path.to_string_lossy().contains(&f.path_contains)
    {
        return Ok(());
    }
    if !p.triggered {
        if let Some(fault) = p.fault.as_mut()
            && fault.skip > 0
        {
            fault.skip -= 1;
            return Ok(());
        }
        p.triggered = true;
    } else if !f.sticky {
        return Ok(());
    }
    p.failures += 1;
    Err(Error::io(
        format!("{call:?} {} (injected)", path.display()),
        std::io::Error::new(f.kind, "injected fault"),
    ))
}

struct FaultFile {
    inner: Box<dyn WritableFile>,
    path: std::path::PathBuf,
    plan: Arc<Mutex<Plan>>,
}

impl WritableFile for FaultFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        check(&self.plan, Call::Append, &self.path)?;
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        check(&self.plan, Call::Sync, &self.path)?;
        self.inner.sync()
    }
}

impl Env for FaultEnv {
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
        self.check(Call::Create, path)?;
        Ok(Box::new(FaultFile {
            inner: self.inner.new_writable(path)?,
            path: path.to_path_buf(),
            plan: Arc::clone(&self.plan),
        }))
    }
    fn new_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.check(Call::Create, path)?;
        Ok(Box::new(FaultFile {
            inner: self.inner.new_log(path)?,
            path: path.to_path_buf(),
            plan: Arc::clone(&self.plan),
        }))
    }
    fn new_appendable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.check(Call::Create, path)?;
        Ok(Box::new(FaultFile {
            inner: self.inner.new_appendable(path)?,
            path: path.to_path_buf(),
            plan: Arc::clone(&self.plan),
        }))
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
        self.check(Call::Remove, path)?;
        self.inner.remove_file(path)
    }
    fn punch_holes(&self, path: &Path, ranges: &[(u64, u64)]) -> Result<u64> {
        self.check(Call::Punch, path)?;
        self.inner.punch_holes(path, ranges)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn remove_dir(&self, dir: &Path) -> Result<()> {
        self.inner.remove_dir(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.check(Call::Rename, to)?;
        self.inner.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.check(Call::SyncDir, dir)?;
        self.inner.sync_dir(dir)
    }
    fn lock_file(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock_file(path)
    }
}
