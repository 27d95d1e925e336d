//! The snapshot archive: a directory's files (a checkpoint of the state machine's
//! database) as one byte stream, read straight from the files as it is sent and
//! unpacked file by file as it is installed, so neither side holds a snapshot in memory.
//!
//! ```text
//! archive = magic file* end
//! magic   = "STRSNAP1"                          8 bytes
//! file    = name_len   u16 little-endian, 1..=255
//!           name       name_len bytes: ASCII letters, digits, '.', '-', '_', not
//!                      starting with '.'
//!           len        u64 little-endian
//!           content    len bytes
//!           crc        u32 little-endian: CRC-32C (unmasked) of name_len, name, len and
//!                      content
//! end     = 0          u16: a name_len of zero
//!           count      u64 little-endian: how many files came before
//! ```
//!
//! Invariants:
//! - SA1 [`ArchiveReader`] is a pure function of the directory's files, which never change
//!   once a checkpoint is complete: the same snapshot reads as the same bytes at every
//!   offset, so a chunk sent twice (a retry) is the same chunk.
//! - SA2 [`unpack`] writes a file only under a name it has checked, never outside its
//!   destination, checks each file's length and CRC and the count, and refuses trailing
//!   bytes: a damaged, cut or lengthened archive is an error naming the file and the
//!   archive offset, never a partial state taken as whole. What it wrote is synced, the
//!   directory too.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use strata::env::{Env, RandomAccessFile};
use strata::{Error, Result};

/// The first bytes of every archive (the format's version is its last byte).
pub const MAGIC: &[u8; 8] = b"STRSNAP1";

/// Longest file name an archive holds.
const MAX_NAME: usize = 255;

/// How much of a file the unpacker and the CRC catch-up read at once.
const PIECE: usize = 1 << 20;

/// Whether `name` may be a file name in an archive (SA2): no path separators, no `..`,
/// nothing hidden.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

/// A file's header in the archive: its name's length, its name, its length (what its CRC
/// covers before the content).
fn file_header(name: &str, len: u64) -> Vec<u8> {
    let mut header = Vec::with_capacity(2 + name.len() + 8);
    header.extend_from_slice(&(name.len() as u16).to_le_bytes());
    header.extend_from_slice(name.as_bytes());
    header.extend_from_slice(&len.to_le_bytes());
    header
}

/// A part of the stream: bytes kept here, a file's content, or a file's CRC.
#[derive(Debug)]
enum Part {
    Bytes(Vec<u8>),
    Content(usize),
    Crc(usize),
}

/// One file of the directory being read.
#[derive(Debug)]
struct Member {
    name: String,
    len: u64,
    /// The CRC of the file's header and its content's first `upto` bytes: extended as
    /// the content is read in order, caught up on demand (a seek may skip ahead).
    crc: u32,
    upto: u64,
}

/// A directory that stays while anyone holds it: each archive read from a snapshot holds
/// its directory, and so does the kept snapshot. Once retired (a newer snapshot kept),
/// it is removed when its last holder lets go, so a transfer in flight always finishes.
#[derive(Debug)]
pub struct DirHold {
    env: Arc<dyn Env>,
    dir: PathBuf,
    retired: AtomicBool,
}

impl DirHold {
    /// A hold on `dir`, not retired.
    pub fn new(env: Arc<dyn Env>, dir: PathBuf) -> Arc<DirHold> {
        Arc::new(DirHold {
            env,
            dir,
            retired: AtomicBool::new(false),
        })
    }

    /// Marks the directory for removal when the last holder lets go.
    pub fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }
}

impl Drop for DirHold {
    fn drop(&mut self) {
        if self.retired.load(Ordering::Acquire) {
            // Best effort: an open removes what is left.
            let _ = remove_tree(self.env.as_ref(), &self.dir);
        }
    }
}

/// Whether `e` says the file or directory is gone already.
pub fn gone(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

/// Removes `dir` and the files in it (the directories here hold only files); what is gone
/// already counts as removed.
pub fn remove_tree(env: &dyn Env, dir: &Path) -> Result<()> {
    let names = match env.children(dir) {
        Ok(names) => names,
        Err(e) if gone(&e) || !env.exists(dir) => return Ok(()),
        Err(e) => return Err(e),
    };
    for name in names {
        match env.remove_file(&dir.join(name)) {
            Err(e) if !gone(&e) => return Err(e),
            _ => {}
        }
    }
    match env.remove_dir(dir) {
        Err(e) if !gone(&e) && env.exists(dir) => Err(e),
        _ => Ok(()),
    }
}

/// The archive of a directory's files, read at any offset (SA1). One file is open at a
/// time (a snapshot may have hundreds), opened when first read; the directory is held
/// (`DirHold`) until the reader is dropped.
pub struct ArchiveReader {
    hold: Arc<DirHold>,
    members: Vec<Member>,
    /// The member whose file is open, and the file.
    open: Option<(usize, Arc<dyn RandomAccessFile>)>,
    /// Each part and the stream offset it starts at, in order.
    parts: Vec<(u64, Part)>,
    len: u64,
}

impl std::fmt::Debug for ArchiveReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArchiveReader")
            .field("dir", &self.hold.dir)
            .field("members", &self.members)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl ArchiveReader {
    /// The archive of the files of the held directory whose names `include` accepts, in
    /// name order.
    pub fn new(hold: Arc<DirHold>, include: impl Fn(&str) -> bool) -> Result<Self> {
        let (env, dir) = (hold.env.as_ref(), hold.dir.as_path());
        let mut names = env.children(dir)?;
        names.retain(|n| include(n));
        names.sort();
        let mut members = Vec::with_capacity(names.len());
        let mut parts = Vec::with_capacity(3 * names.len() + 2);
        let mut at = 0u64;
        let mut push = |parts: &mut Vec<(u64, Part)>, part: Part, len: u64| {
            parts.push((at, part));
            at += len;
        };
        push(&mut parts, Part::Bytes(MAGIC.to_vec()), MAGIC.len() as u64);
        for name in names {
            if !valid_name(&name) {
                return Err(Error::InvalidArgument(format!(
                    "{}: a snapshot cannot hold a file named {name:?}",
                    dir.display()
                )));
            }
            let path = dir.join(&name);
            let len = env.file_size(&path)?;
            let header = file_header(&name, len);
            let i = members.len();
            let header_len = header.len() as u64;
            let header_crc = crc32c::crc32c(&header);
            push(&mut parts, Part::Bytes(header), header_len);
            push(&mut parts, Part::Content(i), len);
            push(&mut parts, Part::Crc(i), 4);
            members.push(Member {
                name,
                len,
                crc: header_crc,
                upto: 0,
            });
        }
        let mut end = Vec::with_capacity(10);
        end.extend_from_slice(&0u16.to_le_bytes());
        end.extend_from_slice(&(members.len() as u64).to_le_bytes());
        push(&mut parts, Part::Bytes(end), 10);
        Ok(ArchiveReader {
            hold,
            members,
            open: None,
            parts,
            len: at,
        })
    }

    /// The archive's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Reads up to `buf.len()` bytes at `offset`; 0 at the end.
    pub fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        if offset >= self.len || buf.is_empty() {
            return Ok(0);
        }
        let i = self.parts.partition_point(|(start, _)| *start <= offset) - 1;
        let start = self.parts[i].0;
        let end = self.parts.get(i + 1).map_or(self.len, |(s, _)| *s);
        let within = offset - start;
        let n = buf.len().min((end - offset) as usize);
        match self.parts[i].1 {
            Part::Bytes(ref bytes) => {
                buf[..n].copy_from_slice(&bytes[within as usize..within as usize + n]);
            }
            Part::Content(m) => {
                self.read_exact_at(m, within, &mut buf[..n])?;
                let member = &mut self.members[m];
                if within <= member.upto && member.upto < within + n as u64 {
                    let from = (member.upto - within) as usize;
                    member.crc = crc32c::crc32c_append(member.crc, &buf[from..n]);
                    member.upto = within + n as u64;
                }
            }
            Part::Crc(m) => {
                let crc = self.finish_crc(m)?.to_le_bytes();
                buf[..n].copy_from_slice(&crc[within as usize..within as usize + n]);
            }
        }
        Ok(n)
    }

    /// Fills `buf` from member `m`'s content at `offset`; a file shorter than it was is an
    /// error.
    fn read_exact_at(&mut self, m: usize, offset: u64, buf: &mut [u8]) -> Result<()> {
        let file = match &self.open {
            Some((open, file)) if *open == m => Arc::clone(file),
            _ => {
                let file = self
                    .hold
                    .env
                    .new_random_access(&self.hold.dir.join(&self.members[m].name))?;
                self.open = Some((m, Arc::clone(&file)));
                file
            }
        };
        let member = &self.members[m];
        let mut done = 0;
        while done < buf.len() {
            let n = file.read_at(offset + done as u64, &mut buf[done..])?;
            if n == 0 {
                return Err(Error::corruption(
                    self.hold.dir.join(&member.name).display().to_string(),
                    offset + done as u64,
                    format!(
                        "the file ended early: a snapshot's file of {} bytes must not change",
                        member.len
                    ),
                ));
            }
            done += n;
        }
        Ok(())
    }

    /// The CRC of all of member `m`'s content, reading what was not read in order yet.
    fn finish_crc(&mut self, m: usize) -> Result<u32> {
        let mut buf = Vec::new();
        loop {
            let (upto, len) = (self.members[m].upto, self.members[m].len);
            if upto >= len {
                return Ok(self.members[m].crc);
            }
            let n = PIECE.min((len - upto) as usize);
            buf.resize(n, 0);
            self.read_exact_at(m, upto, &mut buf)?;
            let member = &mut self.members[m];
            member.crc = crc32c::crc32c_append(member.crc, &buf);
            member.upto += n as u64;
        }
    }
}

/// Reads from an archive file, counting the offset for error messages.
struct Source<'a> {
    file: Box<dyn strata::env::SequentialFile>,
    path: &'a Path,
    offset: u64,
}

impl Source<'_> {
    fn corrupt(&self, what: impl Into<String>) -> Error {
        Error::corruption(self.path.display().to_string(), self.offset, what)
    }

    /// Fills `buf`; the archive ending first is an error saying what was being read.
    fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<()> {
        let mut done = 0;
        while done < buf.len() {
            let n = self.file.read(&mut buf[done..])?;
            if n == 0 {
                return Err(self.corrupt(format!("the archive ends inside {what}")));
            }
            done += n;
            self.offset += n as u64;
        }
        Ok(())
    }

    fn u16(&mut self, what: &str) -> Result<u16> {
        let mut b = [0u8; 2];
        self.fill(&mut b, what)?;
        Ok(u16::from_le_bytes(b))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        let mut b = [0u8; 8];
        self.fill(&mut b, what)?;
        Ok(u64::from_le_bytes(b))
    }
}

/// Unpacks the archive at `archive` into the directory `dest`, which must not exist yet
/// (SA2). Returns the names written. On an error, what was written stays for the caller
/// to remove.
pub fn unpack(env: &dyn Env, archive: &Path, dest: &Path) -> Result<Vec<String>> {
    if env.exists(dest) {
        return Err(Error::AlreadyExists(format!(
            "{}: a snapshot unpacks into a directory that does not exist yet",
            dest.display()
        )));
    }
    env.create_dir_all(dest)?;
    let mut src = Source {
        file: env.new_sequential(archive)?,
        path: archive,
        offset: 0,
    };
    let mut magic = [0u8; 8];
    src.fill(&mut magic, "the magic")?;
    if &magic != MAGIC {
        src.offset = 0;
        return Err(src.corrupt(format!(
            "not a snapshot archive: it starts {:?}, not {:?}",
            magic.escape_ascii().to_string(),
            MAGIC.escape_ascii().to_string()
        )));
    }
    let mut names: Vec<String> = Vec::new();
    let mut buf = vec![0u8; PIECE];
    loop {
        let at = src.offset;
        let name_len = src.u16("a file's name length")? as usize;
        if name_len == 0 {
            let count = src.u64("the file count")?;
            if count != names.len() as u64 {
                return Err(src.corrupt(format!(
                    "the archive says it holds {count} files, {} came",
                    names.len()
                )));
            }
            let mut extra = [0u8; 1];
            if src.file.read(&mut extra)? != 0 {
                return Err(src.corrupt("bytes after the archive's end"));
            }
            break;
        }
        if name_len > MAX_NAME {
            src.offset = at;
            return Err(src.corrupt(format!("a file name of {name_len} bytes")));
        }
        let mut name = vec![0u8; name_len];
        src.fill(&mut name, "a file's name")?;
        let name = String::from_utf8(name)
            .ok()
            .filter(|n| valid_name(n) && !names.contains(n))
            .ok_or_else(|| {
                src.offset = at;
                src.corrupt("a file name that is not allowed (a path, hidden, or twice)")
            })?;
        let len = src.u64("a file's length")?;
        let path: PathBuf = dest.join(&name);
        let mut out = env.new_writable(&path)?;
        let mut crc = crc32c::crc32c(&file_header(&name, len));
        let mut left = len;
        while left > 0 {
            let n = PIECE.min(left as usize);
            src.fill(&mut buf[..n], &format!("{name}'s content"))?;
            crc = crc32c::crc32c_append(crc, &buf[..n]);
            out.append(&buf[..n])?;
            left -= n as u64;
        }
        let mut stored = [0u8; 4];
        src.fill(&mut stored, &format!("{name}'s checksum"))?;
        let stored = u32::from_le_bytes(stored);
        if stored != crc {
            return Err(src.corrupt(format!(
                "{name}: checksum mismatch (stored {stored:#010x}, content {crc:#010x})"
            )));
        }
        out.flush()?;
        out.sync()?;
        names.push(name);
    }
    env.sync_dir(dest)?;
    Ok(names)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use strata::env::MemEnv;

    use super::*;

    fn write(env: &dyn Env, path: &Path, data: &[u8]) {
        let mut f = env.new_writable(path).unwrap();
        f.append(data).unwrap();
        f.sync().unwrap();
    }

    fn read_all(r: &mut ArchiveReader, chunk: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; chunk];
        loop {
            let n = r.read_at(out.len() as u64, &mut buf).unwrap();
            if n == 0 {
                return out;
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    fn sample(env: &dyn Env) -> PathBuf {
        let dir = PathBuf::from("/src");
        env.create_dir_all(&dir).unwrap();
        write(env, &dir.join("000005.ldb"), &[7u8; 3000]);
        write(env, &dir.join("CURRENT"), b"MANIFEST-000007\n");
        write(env, &dir.join("empty"), b"");
        write(env, &dir.join("snapshot.json"), b"{}");
        dir
    }

    /// A reader over `sample`'s directory, its metadata file left out.
    fn reader(env: &Arc<MemEnv>, dir: &Path) -> ArchiveReader {
        let hold = DirHold::new(env.clone(), dir.to_path_buf());
        ArchiveReader::new(hold, |n| n != "snapshot.json").unwrap()
    }

    #[test]
    fn a_directory_round_trips_and_reads_alike_at_every_offset() {
        let env = Arc::new(MemEnv::new());
        let dir = sample(env.as_ref());
        let mut r = reader(&env, &dir);
        let whole = read_all(&mut r, 1 << 20);
        assert_eq!(whole.len() as u64, r.len());
        // SA1: small chunks, and a second reader read backwards, give the same bytes.
        let mut again = reader(&env, &dir);
        assert_eq!(read_all(&mut again, 7), whole);
        let mut back = reader(&env, &dir);
        let mut at = whole.len();
        while at > 0 {
            let from = at.saturating_sub(1000);
            let mut buf = vec![0u8; at - from];
            let mut done = 0;
            while done < buf.len() {
                done += back
                    .read_at((from + done) as u64, &mut buf[done..])
                    .unwrap();
            }
            assert_eq!(buf, whole[from..at]);
            at = from;
        }
        write(env.as_ref(), Path::new("/a"), &whole);
        let names = unpack(env.as_ref(), Path::new("/a"), Path::new("/dst")).unwrap();
        assert_eq!(names, ["000005.ldb", "CURRENT", "empty"]);
        for n in &names {
            let mut f = env.new_sequential(&Path::new("/dst").join(n)).unwrap();
            let mut got = vec![0u8; 4000];
            let len = f.read(&mut got).unwrap();
            let mut want = vec![0u8; 4000];
            let mut g = env.new_sequential(&dir.join(n)).unwrap();
            assert_eq!(g.read(&mut want).unwrap(), len);
            assert_eq!(got[..len], want[..len]);
        }
    }

    #[test]
    fn every_damaged_cut_or_lengthened_archive_is_refused() {
        let env = Arc::new(MemEnv::new());
        let dir = sample(env.as_ref());
        let mut r = reader(&env, &dir);
        let whole = read_all(&mut r, 1 << 20);
        let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
        for at in [0, 9, 12, 30, 500, 3020, whole.len() - 12, whole.len() - 1] {
            let mut b = whole.clone();
            b[at] ^= 0x40;
            cases.push((format!("byte {at} flipped"), b));
        }
        for len in [0, 5, 8, 20, 3000, whole.len() - 1] {
            cases.push((format!("cut to {len}"), whole[..len].to_vec()));
        }
        let mut longer = whole.clone();
        longer.push(0);
        cases.push(("a byte added".into(), longer));
        for (i, (what, bytes)) in cases.into_iter().enumerate() {
            let path = PathBuf::from(format!("/bad{i}"));
            write(env.as_ref(), &path, &bytes);
            let got = unpack(env.as_ref(), &path, &PathBuf::from(format!("/out{i}")));
            assert!(got.is_err(), "{what}: unpacked {got:?}");
        }
    }

    #[test]
    fn names_that_leave_the_directory_are_refused() {
        for bad in ["", "..", "../x", "a/b", ".hidden", "x\0"] {
            assert!(!valid_name(bad), "{bad:?}");
        }
        assert!(valid_name("MANIFEST-000003"));
        let env = MemEnv::new();
        let mut a = MAGIC.to_vec();
        a.extend_from_slice(&4u16.to_le_bytes());
        a.extend_from_slice(b"../x");
        a.extend_from_slice(&0u64.to_le_bytes());
        a.extend_from_slice(&0u32.to_le_bytes());
        a.extend_from_slice(&0u16.to_le_bytes());
        a.extend_from_slice(&1u64.to_le_bytes());
        write(&env, Path::new("/a"), &a);
        let e = unpack(&env, Path::new("/a"), Path::new("/d/x")).unwrap_err();
        assert!(e.to_string().contains("not allowed"), "{e}");
        assert!(!env.exists(Path::new("/d/x/../x")));
    }
}
