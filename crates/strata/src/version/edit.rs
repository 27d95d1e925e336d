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
                        },
                    ));
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
            },
        ));
        e
    }

    #[test]
    fn round_trip() {
        let e = sample();
        assert_eq!(VersionEdit::decode(&e.encode()).unwrap(), e);
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
