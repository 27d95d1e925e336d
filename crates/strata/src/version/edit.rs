//! [`VersionEdit`]: one manifest record. Format: `docs/format/manifest.md`.
//!
//! A record is a sequence of `tag varint32` + fields:
//!
//! | tag | field | encoding |
//! |---|---|---|
//! | 1 | comparator name | length-prefixed |
//! | 2 | log number | varint64 |
//! | 3 | next file number | varint64 |
//! | 4 | last seqnum | varint64 |
//! | 5 | compact pointer | level varint32, internal key length-prefixed |
//! | 6 | deleted file | level varint32, file number varint64 |
//! | 7 | new file | level varint32, number, size varint64, smallest, largest length-prefixed |
//! | 9 | prev log number | varint64 |
//! | 20 | value separation (Strata only) | varint32: 0 off, 1 on, 2 on and refs to compressed values may exist |
//! | 21 | new blob file (Strata only) | number, refs, bytes varint64 |
//! | 22 | blob garbage (Strata only) | number, refs, bytes varint64 |
//! | 23 | a new table's blob bytes (Strata only) | table number, bytes varint64 |
//!
//! Tags 20-23 exist only in databases with value separation (`crate::blob`); LevelDB
//! refuses a manifest holding them ("unknown tag"), which is what keeps it from misreading
//! such a database. They are written after LevelDB's fields.
//!
//! Fields are written in the order 1, 2, 9, 3, 4, 5, 6, 7 (LevelDB's), deleted files
//! sorted by (level, number). Tag 8 is retired; unknown tags are corruption, as are
//! levels outside `0..NUM_LEVELS` and empty internal keys.

use std::collections::BTreeSet;

use crate::coding::{Decoder, put_length_prefixed, put_varint32, put_varint64};
use crate::error::{Error, Result};
use crate::key::SeqNum;

/// Number of levels in the tree.
pub const NUM_LEVELS: usize = 7;

const TAG_COMPARATOR: u32 = 1;
const TAG_LOG_NUMBER: u32 = 2;
const TAG_NEXT_FILE_NUMBER: u32 = 3;
const TAG_LAST_SEQUENCE: u32 = 4;
const TAG_COMPACT_POINTER: u32 = 5;
const TAG_DELETED_FILE: u32 = 6;
const TAG_NEW_FILE: u32 = 7;
const TAG_PREV_LOG_NUMBER: u32 = 9;
const TAG_SEPARATION: u32 = 20;
const TAG_NEW_BLOB_FILE: u32 = 21;
const TAG_BLOB_GARBAGE: u32 = 22;
const TAG_TABLE_BLOB_BYTES: u32 = 23;

/// What the manifest records of a blob file: how many refs to it tables hold (or held)
/// and the bytes of their records. Garbage counts the refs compactions dropped; a file
/// whose every ref is garbage is dead.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlobFileMeta {
    /// Refs written to tables.
    pub refs: u64,
    /// Bytes of the records those refs point to.
    pub bytes: u64,
    /// Refs dropped since.
    pub garbage_refs: u64,
    /// Bytes of the records of the dropped refs.
    pub garbage_bytes: u64,
}

/// What the manifest records of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMetaData {
    /// The table's file number.
    pub number: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Its first internal key.
    pub smallest: Vec<u8>,
    /// Its last internal key.
    pub largest: Vec<u8>,
    /// Bytes of the blob records its refs point to (value separation; tag 23), counted
    /// with its size when levels are weighed, so that refs move down the tree as fast
    /// as the values would and overwritten ones are found (and their space collected).
    pub blob_bytes: u64,
    /// Written by this open with one entry per user key and no deletion (`FileMeta::plain`).
    /// Not recorded in the manifest: false for every table a manifest names.
    pub plain: bool,
}

/// The value-separation flag a manifest records (tag 20), in the order of what it allows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Separation {
    /// Off: no ref exists; a new manifest then leaves the tag out (LevelDB's format).
    #[default]
    Off = 0,
    /// On: refs exist, each to a raw value.
    On = 1,
    /// On, and refs to compressed values may exist: a Strata that predates compressed
    /// values refuses the flag (an unknown value) instead of failing on those refs.
    Compressed = 2,
}

/// A change to the set of live tables and the database's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// Name of the key order.
    pub comparator: Option<String>,
    /// Logs numbered below this are no longer needed.
    pub log_number: Option<u64>,
    /// The log before `log_number` still needed (obsolete; LevelDB writes 0).
    pub prev_log_number: Option<u64>,
    /// The next file number to hand out.
    pub next_file_number: Option<u64>,
    /// The last seqnum used.
    pub last_seqnum: Option<SeqNum>,
    /// Where the next compaction of each level starts: (level, internal key).
    pub compact_pointers: Vec<(usize, Vec<u8>)>,
    /// Tables removed: (level, file number).
    pub deleted_files: BTreeSet<(usize, u64)>,
    /// Tables added.
    pub new_files: Vec<(usize, FileMetaData)>,
    /// Value separation turned on or off (tag 20).
    pub separation: Option<Separation>,
    /// Blob files added: (number, refs, bytes).
    pub new_blob_files: Vec<(u64, u64, u64)>,
    /// Refs to blob files dropped: (number, refs, bytes).
    pub blob_garbage: Vec<(u64, u64, u64)>,
}

impl VersionEdit {
    /// The encoded record.
    pub fn encode(&self) -> Vec<u8> {
        let mut dst = Vec::new();
        if let Some(c) = &self.comparator {
            put_varint32(&mut dst, TAG_COMPARATOR);
            put_length_prefixed(&mut dst, c.as_bytes());
        }
        for (tag, field) in [
            (TAG_LOG_NUMBER, self.log_number),
            (TAG_PREV_LOG_NUMBER, self.prev_log_number),
            (TAG_NEXT_FILE_NUMBER, self.next_file_number),
            (TAG_LAST_SEQUENCE, self.last_seqnum),
        ] {
            if let Some(v) = field {
                put_varint32(&mut dst, tag);
                put_varint64(&mut dst, v);
            }
        }
        for (level, key) in &self.compact_pointers {
            put_varint32(&mut dst, TAG_COMPACT_POINTER);
            put_varint32(&mut dst, *level as u32);
            put_length_prefixed(&mut dst, key);
        }
        for &(level, number) in &self.deleted_files {
            put_varint32(&mut dst, TAG_DELETED_FILE);
            put_varint32(&mut dst, level as u32);
            put_varint64(&mut dst, number);
        }
        for (level, f) in &self.new_files {
            put_varint32(&mut dst, TAG_NEW_FILE);
            put_varint32(&mut dst, *level as u32);
            put_varint64(&mut dst, f.number);
            put_varint64(&mut dst, f.size);
            put_length_prefixed(&mut dst, &f.smallest);
            put_length_prefixed(&mut dst, &f.largest);
        }
        if let Some(s) = self.separation {
            put_varint32(&mut dst, TAG_SEPARATION);
            put_varint32(&mut dst, s as u32);
        }
        for (_, f) in self.new_files.iter().filter(|(_, f)| f.blob_bytes > 0) {
            put_varint32(&mut dst, TAG_TABLE_BLOB_BYTES);
            put_varint64(&mut dst, f.number);
            put_varint64(&mut dst, f.blob_bytes);
        }
        for (tag, list) in [
            (TAG_NEW_BLOB_FILE, &self.new_blob_files),
            (TAG_BLOB_GARBAGE, &self.blob_garbage),
        ] {
            for &(number, refs, bytes) in list {
                put_varint32(&mut dst, tag);
                put_varint64(&mut dst, number);
                put_varint64(&mut dst, refs);
                put_varint64(&mut dst, bytes);
            }
        }
        dst
    }

    /// Decodes a record; errors carry the offset within `src`.
    pub fn decode(src: &[u8]) -> Result<Self> {
        let mut d = Decoder::new(src);
        let mut edit = VersionEdit::default();
        while !d.is_empty() {
            let at = d.position() as u64;
            match d.varint32("version edit tag")? {
                TAG_COMPARATOR => {
                    let name = d.length_prefixed("comparator name")?;
                    let name = std::str::from_utf8(name)
                        .map_err(|_| Error::corruption("", at, "comparator name is not UTF-8"))?;
                    edit.comparator = Some(name.to_string());
                }
                TAG_LOG_NUMBER => edit.log_number = Some(d.varint64("log number")?),
                TAG_PREV_LOG_NUMBER => edit.prev_log_number = Some(d.varint64("prev log number")?),
                TAG_NEXT_FILE_NUMBER => {
                    edit.next_file_number = Some(d.varint64("next file number")?)
                }
                TAG_LAST_SEQUENCE => edit.last_seqnum = Some(d.varint64("last sequence")?),
                TAG_COMPACT_POINTER => {
                    let level = read_level(&mut d)?;
                    let key = read_internal_key(&mut d, "compact pointer")?;
                    edit.compact_pointers.push((level, key));
                }
                TAG_DELETED_FILE => {
                    let level = read_level(&mut d)?;
                    let number = d.varint64("deleted file number")?;
                    edit.deleted_files.insert((level, number));
                }
                TAG_NEW_FILE => {
                    let level = read_level(&mut d)?;
                    let number = d.varint64("new file number")?;
                    let size = d.varint64("new file size")?;
                    let smallest = read_internal_key(&mut d, "new file smallest key")?;
                    let largest = read_internal_key(&mut d, "new file largest key")?;
                    edit.new_files.push((
                        level,
                        FileMetaData {
                            number,
                            size,
                            smallest,
                            largest,
                            blob_bytes: 0,
                            plain: false,
                        },
                    ));
                }
                TAG_SEPARATION => match d.varint32("value separation")? {
                    0 => edit.separation = Some(Separation::Off),
                    1 => edit.separation = Some(Separation::On),
                    2 => edit.separation = Some(Separation::Compressed),
                    v => {
                        return Err(Error::corruption(
                            "",
                            at,
                            format!("value separation flag {v} is not 0, 1 or 2"),
                        ));
                    }
                },
                TAG_TABLE_BLOB_BYTES => {
                    let number = d.varint64("table number")?;
                    let bytes = d.varint64("table blob bytes")?;
                    let f = edit
                        .new_files
                        .iter_mut()
                        .find(|(_, f)| f.number == number)
                        .ok_or_else(|| {
                            Error::corruption(
                                "",
                                at,
                                format!(
                                    "blob bytes for table {number}, which the edit does not add"
                                ),
                            )
                        })?;
                    f.1.blob_bytes = bytes;
                }
                tag @ (TAG_NEW_BLOB_FILE | TAG_BLOB_GARBAGE) => {
                    let entry = (
                        d.varint64("blob file number")?,
                        d.varint64("blob file refs")?,
                        d.varint64("blob file bytes")?,
                    );
                    if tag == TAG_NEW_BLOB_FILE {
                        edit.new_blob_files.push(entry);
                    } else {
                        edit.blob_garbage.push(entry);
                    }
                }
                other => {
                    return Err(Error::corruption(
                        "",
                        at,
                        format!("unknown version edit tag {other}"),
                    ));
                }
            }
        }
        Ok(edit)
    }
}

fn read_level(d: &mut Decoder<'_>) -> Result<usize> {
    let at = d.position() as u64;
    let level = d.varint32("level")? as usize;
    if level >= NUM_LEVELS {
        return Err(Error::corruption(
            "",
            at,
            format!("level {level} out of range 0..{NUM_LEVELS}"),
        ));
    }
    Ok(level)
}

fn read_internal_key(d: &mut Decoder<'_>, what: &str) -> Result<Vec<u8>> {
    let at = d.position() as u64;
    let key = d.length_prefixed(what)?;
    if key.is_empty() {
        return Err(Error::corruption("", at, format!("empty {what}")));
    }
    Ok(key.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueType, make_internal_key};

    fn sample() -> VersionEdit {
        let mut e = VersionEdit {
            comparator: Some("leveldb.BytewiseComparator".into()),
            log_number: Some(12),
            prev_log_number: Some(0),
            next_file_number: Some(14),
            last_seqnum: Some(1_000_000),
            ..Default::default()
        };
        e.compact_pointers
            .push((1, make_internal_key(b"m", 5, ValueType::Value)));
        e.deleted_files.insert((2, 9));
        e.deleted_files.insert((0, 7));
        e.new_files.push((
            0,
            FileMetaData {
                number: 13,
                size: 4096,
                smallest: make_internal_key(b"a", 1, ValueType::Value),
                largest: make_internal_key(b"z", 2, ValueType::Deletion),
                blob_bytes: 0,
                plain: false,
            },
        ));
        e
    }

    #[test]
    fn round_trip() {
        let e = sample();
        assert_eq!(VersionEdit::decode(&e.encode()).unwrap(), e);
        let mut blobs = VersionEdit {
            separation: Some(Separation::On),
            new_blob_files: vec![(13, 40, 4_000_000), (15, 1, 100)],
            blob_garbage: vec![(13, 2, 200_000)],
            ..sample()
        };
        blobs.new_files[0].1.blob_bytes = 12_345;
        assert_eq!(VersionEdit::decode(&blobs.encode()).unwrap(), blobs);
        let off = VersionEdit {
            separation: Some(Separation::Off),
            ..Default::default()
        };
        assert_eq!(off.encode(), [20, 0]);
        let compressed = VersionEdit {
            separation: Some(Separation::Compressed),
            ..Default::default()
        };
        assert_eq!(compressed.encode(), [20, 2]);
        assert_eq!(VersionEdit::decode(&[20, 2]).unwrap(), compressed);
        assert!(VersionEdit::decode(&[20, 3]).unwrap_err().is_corruption());
        assert_eq!(VersionEdit::decode(&[]).unwrap(), VersionEdit::default());
    }

    #[test]
    fn golden_bytes() {
        let e = VersionEdit {
            log_number: Some(3),
            prev_log_number: Some(0),
            next_file_number: Some(5),
            last_seqnum: Some(300),
            ..Default::default()
        };
        assert_eq!(e.encode(), [2, 3, 9, 0, 3, 5, 4, 0xac, 0x02]);
        let mut d = VersionEdit::default();
        d.deleted_files.insert((1, 2));
        assert_eq!(d.encode(), [6, 1, 2]);
    }

    #[test]
    fn rejects_bad_records() {
        assert!(
            VersionEdit::decode(&[8, 1])
                .unwrap_err()
                .to_string()
                .contains("tag 8")
        );
        assert!(
            VersionEdit::decode(&[6, 7, 1])
                .unwrap_err()
                .to_string()
                .contains("level 7")
        );
        assert!(
            VersionEdit::decode(&[5, 1, 0]).is_err(),
            "empty compact pointer"
        );
        let enc = sample().encode();
        for cut in 1..enc.len() {
            // Every strict prefix that ends inside a field fails; ones that end on a field
            // boundary decode to a smaller edit. None panics.
            let _ = VersionEdit::decode(&enc[..cut]);
        }
        assert!(VersionEdit::decode(&enc[..enc.len() - 1]).is_err());
    }
}
