//! File names in a database directory: one counter numbers logs, tables, manifests and
//! temporary files alike (`NNNNNN`, at least six digits).

use std::path::{Path, PathBuf};

/// `NNNNNN.log`
pub fn log(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.log"))
}
/// `NNNNNN.ldb`
pub fn table(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.ldb"))
}
/// `NNNNNN.blob`: the large values of log `NNNNNN` (`crate::blob`).
pub fn blob(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.blob"))
}
/// `NNNNNN.sst`, the legacy table name LevelDB still reads.
pub fn sst_table(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.sst"))
}
/// `MANIFEST-NNNNNN`
pub fn manifest(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("MANIFEST-{number:06}"))
}
/// `CURRENT`
pub fn current(dir: &Path) -> PathBuf {
    dir.join("CURRENT")
}
/// `LOCK`
pub fn lock(dir: &Path) -> PathBuf {
    dir.join("LOCK")
}
/// `NNNNNN.dbtmp`
pub fn temp(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.dbtmp"))
}

/// What a file in a database directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A write-ahead log.
    Log(u64),
    /// A table.
    Table(u64),
    /// A blob file.
    Blob(u64),
    /// A manifest.
    Manifest(u64),
    /// A temporary file.
    Temp(u64),
    /// `CURRENT`
    Current,
    /// `LOCK`
    Lock,
    /// `LOG` or `LOG.old`
    InfoLog,
}

/// Parses a file name of a database directory.
pub fn parse(name: &str) -> Option<Kind> {
    match name {
        "CURRENT" => return Some(Kind::Current),
        "LOCK" => return Some(Kind::Lock),
        "LOG" | "LOG.old" => return Some(Kind::InfoLog),
        _ => {}
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return number(n).map(Kind::Manifest);
    }
    let (stem, ext) = name.split_once('.')?;
    let n = number(stem)?;
    match ext {
        "log" => Some(Kind::Log(n)),
        "ldb" | "sst" => Some(Kind::Table(n)),
        "dbtmp" => Some(Kind::Temp(n)),
        "blob" => Some(Kind::Blob(n)),
        _ => None,
    }
}

fn number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}
