//! [`DiskEnv`]: the real filesystem, through `std::fs`.
//!
//! Writable files buffer up to 64 KiB in user space (LevelDB's choice) so that many small
//! appends cost one `write` call. `sync` is `fdatasync`: file contents and the metadata
//! needed to read them back (its size), not timestamps. Locks are `fcntl` record locks,
//! the kind LevelDB takes, so Strata and LevelDB exclude each other; since such locks
//! belong to the process, an in-process registry makes a second open in the same process
//! fail too.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::mapped::MappedLog;
use super::mapped_read::MappedRead;
use super::{Env, FileLock, RandomAccessFile, SequentialFile, WritableFile};
use crate::error::{Error, Result};

const WRITE_BUFFER: usize = 64 * 1024;

/// The operating system's filesystem.
#[derive(Debug, Default, Clone, Copy)]
pub struct DiskEnv;

impl DiskEnv {
    /// The real filesystem.
    pub fn new() -> Self {
        DiskEnv
    }
}

/// Maps an OS error to [`Error::Io`] naming the call and path. The message is built only
/// when there is an error: these wrap every read and write.
fn io_err<'a>(call: &'a str, path: &'a Path) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |e| Error::io(format!("{call} {}", path.display()), e)
}

struct DiskSequential {
    file: File,
    path: PathBuf,
}

impl SequentialFile for DiskSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        loop {
            match self.file.read(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                r => return r.map_err(io_err("read", &self.path)),
            }
        }
    }
}

struct DiskRandomAccess {
    file: File,
    path: PathBuf,
}

impl RandomAccessFile for DiskRandomAccess {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_err("pread", &self.path)(e)),
            }
        }
        Ok(done)
    }
}

struct DiskWritable {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
}

impl DiskWritable {
    fn write_out(&mut self, data: &[u8]) -> Result<()> {
        self.file
            .write_all(data)
            .map_err(io_err("write", &self.path))
    }
}

impl WritableFile for DiskWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if self.buf.len() + data.len() <= WRITE_BUFFER {
            self.buf.extend_from_slice(data);
            return Ok(());
        }
        self.flush()?;
        if data.len() <= WRITE_BUFFER {
            self.buf.extend_from_slice(data);
            Ok(())
        } else {
            self.write_out(data)
        }
    }

    fn flush(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let buf = std::mem::take(&mut self.buf);
        let r = self.write_out(&buf);
        self.buf = buf;
        self.buf.clear();
        r
    }

    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.file
            .sync_data()
            .map_err(io_err("fdatasync", &self.path))
    }

    fn start_writeback(&mut self) -> Result<()> {
        self.flush()?;
        super::writeback::start(&self.file);
        Ok(())
    }
}

impl Drop for DiskWritable {
    fn drop(&mut self) {
        // Best effort: an error here has nowhere to go; callers that care call flush/sync.
        let _ = self.flush();
    }
}

fn locked_paths() -> &'static Mutex<HashSet<PathBuf>> {
    static LOCKED: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
    LOCKED.get_or_init(|| Mutex::new(HashSet::new()))
}

#[derive(Debug)]
struct DiskLock {
    _file: File,
    path: PathBuf,
}

impl FileLock for DiskLock {}

impl Drop for DiskLock {
    fn drop(&mut self) {
        if let Ok(mut set) = locked_paths().lock() {
            set.remove(&self.path);
        }
        // The OS lock goes with the file descriptor.
    }
}

impl Env for DiskEnv {
    fn new_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        let file = File::open(path).map_err(io_err("open", path))?;
        Ok(Box::new(DiskSequential {
            file,
            path: path.to_path_buf(),
        }))
    }

    fn new_random_access(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path).map_err(io_err("open", path))?;
        Ok(Arc::new(DiskRandomAccess {
            file,
            path: path.to_path_buf(),
        }))
    }

    fn new_table_reader(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path).map_err(io_err("open", path))?;
        match MappedRead::open(&file, path)? {
            Some(m) => Ok(Arc::new(m)),
            None => Ok(Arc::new(DiskRandomAccess {
                file,
                path: path.to_path_buf(),
            })),
        }
    }

    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(io_err("create", path))?;
        Ok(Box::new(DiskWritable {
            file,
            path: path.to_path_buf(),
            buf: Vec::with_capacity(WRITE_BUFFER),
        }))
    }

    fn new_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(io_err("create", path))?;
        match MappedLog::create(file, path)? {
            Some(log) => Ok(Box::new(log)),
            // The filesystem cannot preallocate: the plain file, with a write per flush.
            None => self.new_writable(path),
        }
    }

    fn new_appendable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .map_err(io_err("open for append", path))?;
        Ok(Box::new(DiskWritable {
            file,
            path: path.to_path_buf(),
            buf: Vec::with_capacity(WRITE_BUFFER),
        }))
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn children(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir).map_err(io_err("list", dir))? {
            let entry = entry.map_err(io_err("list", dir))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        Ok(names)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(fs::metadata(path).map_err(io_err("stat", path))?.len())
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(io_err("unlink", path))
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(io_err("mkdir", dir))
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        fs::remove_dir(dir).map_err(io_err("rmdir", dir))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to).map_err(io_err("rename", from))
    }

    fn link_file(&self, from: &Path, to: &Path) -> Result<()> {
        // Another filesystem (or one without hard links): a copy.
        fs::hard_link(from, to).or_else(|_| super::copy_file(self, from, to))
    }

    fn punch_holes(&self, path: &Path, ranges: &[(u64, u64)]) -> Result<u64> {
        let file = fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(io_err("open for punching holes", path))?;
        let stat = rustix::fs::fstat(&file).map_err(|e| io_err("stat", path)(e.into()))?;
        if stat.st_nlink > 1 {
            return Ok(0); // a checkpoint shares these bytes
        }
        let flags = rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
        let mut freed = 0;
        for &(offset, len) in ranges {
            match rustix::fs::fallocate(&file, flags, offset, len) {
                Ok(()) => freed += len,
                Err(rustix::io::Errno::OPNOTSUPP) => return Ok(freed),
                Err(e) => return Err(io_err("punch a hole in", path)(e.into())),
            }
        }
        Ok(freed)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let d = File::open(dir).map_err(io_err("open directory", dir))?;
        d.sync_all().map_err(io_err("fsync directory", dir))
    }

    fn lock_file(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let key = fs::canonicalize(path.parent().unwrap_or(Path::new(".")))
            .map_err(io_err("resolve", path))?
            .join(path.file_name().unwrap_or_default());
        let mut set = locked_paths()
            .lock()
            .map_err(|_| Error::InvalidArgument("lock registry poisoned".into()))?;
        if set.contains(&key) {
            return Err(Error::io(
                format!("lock {}", path.display()),
                std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    "already held by this process",
                ),
            ));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io_err("open lock file", path))?;
        // An fcntl (POSIX record) lock, as LevelDB takes: the two exclude each other.
        match rustix::fs::fcntl_lock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::AGAIN || e == rustix::io::Errno::ACCESS => {
                return Err(Error::io(
                    format!("lock {}", path.display()),
                    std::io::Error::new(
                        std::io::ErrorKind::WouldBlock,
                        "already held by another process",
                    ),
                ));
            }
            Err(e) => return Err(io_err("lock", path)(e.into())),
        }
        set.insert(key.clone());
        Ok(Box::new(DiskLock {
            _file: file,
            path: key,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn early_writeback_flushes_and_leaves_the_bytes_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let env = DiskEnv::new();
        for mapped in [false, true] {
            let p = dir.path().join(format!("wb-{mapped}"));
            let mut w = if mapped {
                env.new_log(&p).unwrap()
            } else {
                env.new_writable(&p).unwrap()
            };
            let mut want = Vec::new();
            for i in 0..40u8 {
                let chunk = vec![i; 70_000];
                w.append(&chunk).unwrap();
                want.extend_from_slice(&chunk);
                w.start_writeback().unwrap();
                // Flushed: a reader sees every byte appended so far.
                assert!(env.file_size(&p).unwrap() >= want.len() as u64);
            }
            w.sync().unwrap();
            drop(w);
            assert_eq!(std::fs::read(&p).unwrap(), want, "mapped: {mapped}");
        }
    }

    #[test]
    fn write_read_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let env = DiskEnv::new();
        let p = dir.path().join("f");
        let mut w = env.new_writable(&p).unwrap();
        w.append(b"hello ").unwrap();
        w.append(&vec![7u8; 100_000]).unwrap(); // larger than the buffer
        w.append(b"end").unwrap();
        w.sync().unwrap();
        drop(w);
        assert_eq!(env.file_size(&p).unwrap(), 6 + 100_000 + 3);
        let r = env.new_random_access(&p).unwrap();
        let mut buf = [0u8; 6];
        assert_eq!(r.read_at(0, &mut buf).unwrap(), 6);
        assert_eq!(&buf, b"hello ");
        let mut tail = [0u8; 10];
        assert_eq!(r.read_at(100_003, &mut tail).unwrap(), 6);
        assert_eq!(&tail[3..6], b"end");
        let mut s = env.new_sequential(&p).unwrap();
        let mut all = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = s.read(&mut chunk).unwrap();
            if n == 0 {
                break;
            }
            all.extend_from_slice(&chunk[..n]);
        }
        assert_eq!(all.len(), 100_009);
        let mut a = env.new_appendable(&p).unwrap();
        a.append(b"!").unwrap();
        a.flush().unwrap();
        assert_eq!(env.file_size(&p).unwrap(), 100_010);
    }

    #[test]
    fn second_lock_in_process_fails_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let env = DiskEnv::new();
        let p = dir.path().join("LOCK");
        let l = env.lock_file(&p).unwrap();
        let err = env.lock_file(&p).unwrap_err();
        assert!(err.to_string().contains("already held"), "{err}");
        drop(l);
        env.lock_file(&p).unwrap();
    }

    #[test]
    fn missing_file_is_io_error_with_path() {
        let env = DiskEnv::new();
        let err = env
            .new_sequential(Path::new("/nonexistent/strata/x"))
            .err()
            .unwrap();
        assert!(err.to_string().contains("/nonexistent/strata/x"), "{err}");
    }
}
