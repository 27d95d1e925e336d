//! Text forms of tables, versions and edits for the data-driven tests of the compaction
//! picker (`compaction/testdata/`) and of version edits (`version/testdata/`), so a case
//! reads as levels and files, not as code.
//!
//! - A key is `user`, `user#seq` or `user#seq.del` (a value at seqnum 10 when not given).
//! - A table is `NUMBER: SMALLEST LARGEST SIZE`, then `plain` for a table written with
//!   one version of each key and no deletion.
//! - A version is its tables, each level's under an `L<level>` line.
//! - An edit is lines of `add L<level> <table>`, `delete L<level> <number>` and
//!   `pointer L<level> <key>`.

use std::sync::Arc;

use super::{FileMeta, FileMetaData, NUM_LEVELS, Version, VersionEdit};
use crate::key::{ParsedInternalKey, ValueType, make_internal_key};

/// `user[#seq][.del]` as an internal key.
pub(crate) fn key(s: &str) -> Result<Vec<u8>, String> {
    let (body, ty) = match s.strip_suffix(".del") {
        Some(b) => (b, ValueType::Deletion),
        None => (s, ValueType::Value),
    };
    let (user, seq) = match body.split_once('#') {
        Some((u, n)) => (u, n.parse().map_err(|_| format!("bad seqnum in {s:?}"))?),
        None => (body, 10),
    };
    Ok(make_internal_key(user.as_bytes(), seq, ty))
}

/// An internal key as `key` reads it (seqnum and kind only where they differ from the
/// defaults).
pub(crate) fn show_key(ikey: &[u8]) -> String {
    let Some(p) = ParsedInternalKey::parse(ikey) else {
        return format!("{ikey:?}");
    };
    let mut out = String::from_utf8_lossy(p.user_key).into_owned();
    if p.seqnum != 10 || p.ty != ValueType::Value {
        out.push_str(&format!("#{}", p.seqnum));
    }
    if p.ty == ValueType::Deletion {
        out.push_str(".del");
    }
    out
}

/// `NUMBER: SMALLEST LARGEST SIZE [plain]` as a table.
pub(crate) fn table(line: &str) -> Result<FileMetaData, String> {
    let (number, rest) = line
        .split_once(':')
        .ok_or_else(|| format!("a table is NUMBER: SMALLEST LARGEST SIZE, not {line:?}"))?;
    let words: Vec<&str> = rest.split_whitespace().collect();
    let (&[lo, hi, size], plain) = match words.as_slice() {
        [lo, hi, size] => (&[*lo, *hi, *size], false),
        [lo, hi, size, "plain"] => (&[*lo, *hi, *size], true),
        _ => {
            return Err(format!(
                "a table is NUMBER: SMALLEST LARGEST SIZE, not {line:?}"
            ));
        }
    };
    Ok(FileMetaData {
        number: number
            .trim()
            .parse()
            .map_err(|_| format!("bad number in {line:?}"))?,
        size: size.parse().map_err(|_| format!("bad size in {line:?}"))?,
        smallest: key(lo)?,
        largest: key(hi)?,
        blob_bytes: 0,
        plain,
    })
}

fn meta(f: &FileMetaData) -> Arc<FileMeta> {
    Arc::new(
        FileMeta::new(f.number, f.size, f.smallest.clone(), f.largest.clone()).with_plain(f.plain),
    )
}

/// `L<level>` as a level number.
fn level(word: &str) -> Result<usize, String> {
    word.strip_prefix('L')
        .and_then(|n| n.parse().ok())
        .filter(|n| *n < NUM_LEVELS)
        .ok_or_else(|| format!("a level is L0 to L{}, not {word:?}", NUM_LEVELS - 1))
}

/// A version from its text: tables under `L<level>` lines, in the order given (the picker
/// expects levels 1 and up sorted, as a built version has them).
pub(crate) fn version(text: &str) -> Result<Arc<Version>, String> {
    let mut v = Version::default();
    let mut at = None;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.starts_with('L') && !line.contains(':') {
            at = Some(level(line)?);
            continue;
        }
        let l = at.ok_or_else(|| format!("a table before any L<level> line: {line:?}"))?;
        v.levels[l].push(meta(&table(line)?));
    }
    v.finalize();
    Ok(Arc::new(v))
}

/// An edit from its lines.
pub(crate) fn edit(text: &str) -> Result<VersionEdit, String> {
    let mut e = VersionEdit::default();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let mut words = line.splitn(3, ' ');
        let (verb, l, rest) = (
            words.next().unwrap_or(""),
            words.next().unwrap_or(""),
            words.next().unwrap_or(""),
        );
        let l = level(l)?;
        match verb {
            "add" => e.new_files.push((l, table(rest)?)),
            "delete" => {
                let n = rest
                    .trim()
                    .parse()
                    .map_err(|_| format!("bad number in {line:?}"))?;
                e.deleted_files.insert((l, n));
            }
            "pointer" => e.compact_pointers.push((l, key(rest.trim())?)),
            _ => return Err(format!("an edit line is add, delete or pointer: {line:?}")),
        }
    }
    Ok(e)
}

/// A table as `table` reads it.
pub(crate) fn show_table(f: &FileMeta) -> String {
    format!(
        "{}: {} {} {}{}",
        f.number,
        show_key(&f.smallest),
        show_key(&f.largest),
        f.size,
        if f.plain { " plain" } else { "" }
    )
}

/// A version's non-empty levels, and the compaction its sizes call for.
pub(crate) fn show_version(v: &Version) -> String {
    let mut out = String::new();
    for (l, files) in v.levels.iter().enumerate().filter(|(_, f)| !f.is_empty()) {
        out.push_str(&format!("L{l}\n"));
        for f in files {
            out.push_str(&format!("  {}\n", show_table(f)));
        }
    }
    if out.is_empty() {
        out.push_str("(empty)\n");
    }
    out.push_str(&format!(
        "compaction score {:.2} at L{}\n",
        v.compaction_score, v.compaction_level
    ));
    out
}

/// Numbers of `files`, space-separated (`-` for none).
pub(crate) fn numbers(files: &[Arc<FileMeta>]) -> String {
    if files.is_empty() {
        return "-".into();
    }
    files
        .iter()
        .map(|f| f.number.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}
