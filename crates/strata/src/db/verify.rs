//! `Db::verify`: read everything the database consists of and check it.
//!
//! Checks, each failure an [`Error::Corruption`] naming the file and offset:
//! - every table the current version names exists with the size the manifest records,
//!   every block of it passes its checksum, and its entries are in strictly increasing
//!   internal-key order and lie within the smallest and largest keys the manifest records;
//! - tables of levels 1 and up are sorted and do not overlap;
//! - the manifest `CURRENT` names reads with every checksum right (a torn last record
//!   being appended at this moment is allowed);
//! - the write-ahead logs still needed read with every checksum right (the same allowance
//!   for the tail of the live log).
//!
//! Files in the directory that nothing references are reported, not treated as errors:
//! garbage of the database's own kinds (a table a compaction cut short by a close or a
//! crash left, LevelDB's as well as Strata's; an old log or manifest), which the next
//! read-write open removes (the same predicate, `obsolete::Needed`), and files of other
//! names, which nothing removes. Neither changes an answer or loses data.

use std::cmp::Ordering;

use super::state::DbInner;
use crate::error::{Error, Result};
use crate::filename::{self, Kind};
use crate::iter::Cursor;
use crate::key;
use crate::log::{Checksums, LogReader};
use crate::sstable::BlockReads;
use crate::version::NUM_LEVELS;

/// What [`crate::Db::verify`] read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Tables checked, per level.
    pub tables_per_level: [usize; NUM_LEVELS],
    /// Entries read from tables.
    pub entries: u64,
    /// Bytes of tables read.
    pub table_bytes: u64,
    /// Values read from blob files through the tables' refs (value separation), each
    /// checked against its CRC, length and key.
    pub blob_values: u64,
    /// Log records read (manifest and write-ahead logs).
    pub log_records: u64,
    /// Garbage: files of the database's own kinds that nothing references (the output of
    /// a compaction or flush cut short by a close or a crash, old logs and manifests).
    /// The next read-write open removes them; they are not damage.
    pub unreferenced: Vec<String>,
    /// Files whose names are none of the database's kinds (another program's): never
    /// read, never removed.
    pub foreign: Vec<String>,
}

/// What the database consists of at one moment, to check.
struct Live {
    version: std::sync::Arc<crate::version::Version>,
    needed: super::obsolete::Needed,
}

pub(super) fn verify(db: &DbInner) -> Result<VerifyReport> {
    let live = {
        let mut st = db.lock();
        // Opened read-only, no manifest was written: the one read at open is live.
        let manifest = if db.read_only {
            st.versions.recovered_manifest
        } else {
            st.versions.manifest_number
        };
        Live {
            version: st.versions.current(),
            needed: super::obsolete::Needed::of(&mut st, manifest),
        }
    };
    let mut report = VerifyReport::default();
    check_tables(db, &live, &mut report)?;
    check_logs(db, &live, &mut report)?;
    for name in db.env.children(&db.dir)? {
        match live.needed.keeps(&name) {
            Some(true) => {}
            Some(false) => report.unreferenced.push(name),
            None => report.foreign.push(name),
        }
    }
    report.unreferenced.sort();
    report.foreign.sort();
    Ok(report)
}

/// Every table of the version: its size, its order against its level's neighbours, and
/// every entry (checksums, key order, the manifest's range; blob refs read).
fn check_tables(db: &DbInner, live: &Live, report: &mut VerifyReport) -> Result<()> {
    let order = &live.version.order;
    let mut value = Vec::new();
    for (level, files) in live.version.levels.iter().enumerate() {
        for (i, f) in files.iter().enumerate() {
            let path = filename::table(&db.dir, f.number);
            let name = path.to_string_lossy().into_owned();
            let size = db.env.file_size(&path).map_err(|e| {
                Error::corruption(&name, 0, format!("table named by the manifest: {e}"))
            })?;
            if size != f.size {
                return Err(Error::corruption(
                    &name,
                    size,
                    format!("table is {size} bytes; the manifest says {}", f.size),
                ));
            }
            if level > 0
                && i > 0
                && order.compare(&files[i - 1].largest, &f.smallest) != Ordering::Less
            {
                return Err(Error::corruption(
                    &name,
                    0,
                    format!(
                        "level {level} tables {} and {} overlap or are out of order",
                        files[i - 1].number,
                        f.number
                    ),
                ));
            }
            check_entries(db, order, f, &name, &mut value, report)?;
            report.tables_per_level[level] += 1;
            report.table_bytes += f.size;
        }
    }
    Ok(())
}

/// One table's entries: internal keys in strictly increasing order, from the manifest's
/// smallest to its largest; blob refs lead to their intact records.
fn check_entries(
    db: &DbInner,
    order: &crate::comparator::InternalOrder,
    f: &crate::version::FileMeta,
    name: &str,
    value: &mut Vec<u8>,
    report: &mut VerifyReport,
) -> Result<()> {
    let table = db.table_cache.find(f.number, f.size)?;
    let mut it = table.iter(BlockReads::SCAN_ONCE);
    it.seek_to_first();
    let mut prev: Option<Vec<u8>> = None;
    while it.valid() {
        let k = it.key();
        if key::ParsedInternalKey::parse(k).is_none() {
            return Err(Error::corruption(
                name,
                0,
                "an entry's key is not an internal key",
            ));
        }
        if let Some(p) = &prev
            && order.compare(p, k) != Ordering::Less
        {
            return Err(Error::corruption(name, 0, "entries out of order"));
        }
        if prev.is_none() && order.compare(k, &f.smallest) != Ordering::Equal {
            return Err(Error::corruption(
                name,
                0,
                "first key differs from the manifest's smallest",
            ));
        }
        if key::value_type(k) == Some(key::ValueType::BlobRef) {
            db.blobs.read_into(key::user_key(k), it.value(), value)?;
            report.blob_values += 1;
        }
        prev = Some(k.to_vec());
        report.entries += 1;
        it.next();
    }
    it.status()?;
    match &prev {
        Some(last) if order.compare(last, &f.largest) == Ordering::Equal => Ok(()),
        _ => Err(Error::corruption(
            name,
            0,
            "last key differs from the manifest's largest (or the table is empty)",
        )),
    }
}

/// The live manifest and every log still needed, read with checksums.
fn check_logs(db: &DbInner, live: &Live, report: &mut VerifyReport) -> Result<()> {
    report.log_records += read_log(
        db,
        &filename::manifest(&db.dir, live.needed.manifest_number),
    )?;
    let mut logs: Vec<u64> = db
        .env
        .children(&db.dir)?
        .iter()
        .filter_map(|n| match filename::parse(n) {
            Some(Kind::Log(n)) if live.needed.replays_log(n) => Some(n),
            _ => None,
        })
        .collect();
    logs.sort_unstable();
    for n in logs {
        report.log_records += read_log(db, &filename::log(&db.dir, n))?;
    }
    Ok(())
}

/// Reads a log or manifest with checksums; any drop but a torn tail is corruption.
fn read_log(db: &DbInner, path: &std::path::Path) -> Result<u64> {
    let name = path.to_string_lossy().into_owned();
    let mut reader = LogReader::new(db.env.new_sequential(path)?, Checksums::Verify);
    let mut record = Vec::new();
    let mut records = 0;
    loop {
        let more = reader.read_record(&mut record)?;
        for d in reader.take_dropped() {
            if !d.reason.is_torn_tail() {
                return Err(Error::corruption(
                    &name,
                    d.offset,
                    format!("{:?}: {} bytes unreadable", d.reason, d.bytes),
                ));
            }
        }
        if !more {
            return Ok(records);
        }
        records += 1;
    }
}
