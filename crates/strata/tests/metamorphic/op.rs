//! The operations of a metamorphic log and their text form, one operation a line:
//!
//! ```text
//! put "user/17" v120#55          set a key; the value is 120 bytes made from tag 55
//! put "" v0#56 sync              the empty key, an empty value, a synced write
//! del "a"
//! batch put "a" v3#1 ; del "b" ; put "a" v7#2
//! batch put "b1" v3#4 ; delrange "b" "c"    delete every key k with "b" <= k < "c"
//! get "a"                        get "a" @s3 reads at snapshot s3
//! snap s3                        release s3
//! iter i2                        iter i2 @s3: a cursor (at a snapshot)
//! seek i2 "a"                    first i2, last i2, next i2, prev i2, drop i2
//! scan >= "a" < "b" rev limit 10 @s3
//! flush                          compact * *, compact "a" "q", compact * "q"
//! flushwal                       flushwal sync: Db::flush_wal(false / true)
//! close                          reopen
//! txn get "a" ; scan >= "b" < "c" ; put "a" v3#9 ; meanwhile put "b1" v2#10 ; commit
//! ```
//!
//! A `txn` is one transaction from start to commit, in steps: `get`, `scan` (no snapshot)
//! and `put` / `del` / `delrange` are the transaction's own; `meanwhile W` (a put, del or
//! delrange), `meanwhile flush` and `meanwhile compact` are done by another writer between
//! two of its steps; `commit` or `commit sync` ends it.
//!
//! Keys are quoted, with `\"`, `\\` and `\xNN` for bytes outside printable ASCII. Scan
//! bounds are `*` or `>= K` / `> K` below, then `*` or `<= K` / `< K` above. Lines that
//! start with `#` are comments. `close` closes the database; the next operation that
//! needs it opens it again. `reopen` drops the handle without `close` and opens at once.
//! Snapshots and cursors end with the handle; an operation naming one that does not
//! exist (released, ended, or never made) has the outcome "missing" everywhere.

use std::fmt;
use std::ops::Bound;

use crate::common::Rng;

pub type Key = Vec<u8>;

/// A value named by its length and a tag; [`ValueSpec::bytes`] makes the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueSpec {
    pub len: u32,
    pub tag: u32,
}

impl ValueSpec {
    /// The value: `"<tag>:"` and then filler, cut to `len` bytes. One tag in four gets
    /// random (incompressible) filler, the others text Snappy halves.
    pub fn bytes(self) -> Vec<u8> {
        let len = self.len as usize;
        let mut out = format!("{}:", self.tag).into_bytes();
        let mut rng = Rng::new(u64::from(self.tag));
        let filler = len.saturating_sub(out.len());
        if self.tag.is_multiple_of(4) {
            out.extend(rng.bytes(filler));
        } else {
            out.extend(rng.compressible(filler));
        }
        out.truncate(len);
        out
    }
}

/// One write of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    Put(Key, ValueSpec),
    Delete(Key),
    /// `WriteBatch::delete_range`: keys in `[start, end)`.
    DeleteRange(Key, Key),
}

/// A cursor movement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    First,
    Last,
    Seek(Key),
    Next,
    Prev,
}

/// A bounded scan through `Db::range_opt`, at most `limit` entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    pub lower: Bound<Key>,
    pub upper: Bound<Key>,
    pub reverse: bool,
    pub limit: Option<u32>,
    pub snap: Option<u32>,
}

/// One step of a transaction (`Op::Txn`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnStep {
    /// `Transaction::get`.
    Get(Key),
    /// `Transaction::range` / `range_rev`, at most `limit` entries (`snap` is `None`).
    Scan(Scan),
    /// A put, delete or range delete of the transaction's own.
    Write(Write),
    /// A write of one operation by another writer, while the transaction is open.
    Meanwhile(Write),
    /// `Db::flush` while the transaction is open.
    MeanwhileFlush,
    /// `Db::compact_range` of everything while the transaction is open.
    MeanwhileCompact,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Put {
        key: Key,
        value: ValueSpec,
        sync: bool,
    },
    Delete {
        key: Key,
        sync: bool,
    },
    Batch {
        writes: Vec<Write>,
        sync: bool,
    },
    Get {
        key: Key,
        snap: Option<u32>,
    },
    Snapshot(u32),
    Release(u32),
    NewIter {
        id: u32,
        snap: Option<u32>,
    },
    Step {
        id: u32,
        step: Step,
    },
    DropIter(u32),
    Scan(Scan),
    Flush,
    FlushWal {
        sync: bool,
    },
    Compact {
        begin: Option<Key>,
        end: Option<Key>,
    },
    Close,
    Reopen,
    /// A transaction: its steps, then its commit.
    Txn {
        steps: Vec<TxnStep>,
        sync: bool,
    },
}

/// A key as the log writes it.
pub struct Quoted<'a>(pub &'a [u8]);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        for &b in self.0 {
            match b {
                b'"' => f.write_str("\\\"")?,
                b'\\' => f.write_str("\\\\")?,
                b' '..=b'~' => write!(f, "{}", b as char)?,
                _ => write!(f, "\\x{b:02x}")?,
            }
        }
        f.write_str("\"")
    }
}

impl fmt::Display for ValueSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}#{}", self.len, self.tag)
    }
}

impl fmt::Display for Write {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Write::Put(k, v) => write!(f, "put {} {v}", Quoted(k)),
            Write::Delete(k) => write!(f, "del {}", Quoted(k)),
            Write::DeleteRange(a, b) => write!(f, "delrange {} {}", Quoted(a), Quoted(b)),
        }
    }
}

fn at(snap: Option<u32>) -> String {
    snap.map(|s| format!(" @s{s}")).unwrap_or_default()
}

fn sync_word(sync: bool) -> &'static str {
    if sync { " sync" } else { "" }
}

fn end(key: &Option<Key>) -> String {
    key.as_ref()
        .map_or_else(|| "*".to_string(), |k| Quoted(k).to_string())
}

impl fmt::Display for Scan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("scan")?;
        match &self.lower {
            Bound::Unbounded => f.write_str(" *")?,
            Bound::Included(k) => write!(f, " >= {}", Quoted(k))?,
            Bound::Excluded(k) => write!(f, " > {}", Quoted(k))?,
        }
        match &self.upper {
            Bound::Unbounded => f.write_str(" *")?,
            Bound::Included(k) => write!(f, " <= {}", Quoted(k))?,
            Bound::Excluded(k) => write!(f, " < {}", Quoted(k))?,
        }
        if self.reverse {
            f.write_str(" rev")?;
        }
        if let Some(n) = self.limit {
            write!(f, " limit {n}")?;
        }
        f.write_str(&at(self.snap))
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Put { key, value, sync } => {
                write!(f, "put {} {value}{}", Quoted(key), sync_word(*sync))
            }
            Op::Delete { key, sync } => write!(f, "del {}{}", Quoted(key), sync_word(*sync)),
            Op::Batch { writes, sync } => {
                f.write_str("batch")?;
                for (i, w) in writes.iter().enumerate() {
                    let sep = if i == 0 { " " } else { " ; " };
                    write!(f, "{sep}{w}")?;
                }
                f.write_str(sync_word(*sync))
            }
            Op::Get { key, snap } => write!(f, "get {}{}", Quoted(key), at(*snap)),
            Op::Snapshot(s) => write!(f, "snap s{s}"),
            Op::Release(s) => write!(f, "release s{s}"),
            Op::NewIter { id, snap } => write!(f, "iter i{id}{}", at(*snap)),
            Op::Step { id, step } => match step {
                Step::First => write!(f, "first i{id}"),
                Step::Last => write!(f, "last i{id}"),
                Step::Seek(k) => write!(f, "seek i{id} {}", Quoted(k)),
                Step::Next => write!(f, "next i{id}"),
                Step::Prev => write!(f, "prev i{id}"),
            },
            Op::DropIter(id) => write!(f, "drop i{id}"),
            Op::Scan(s) => s.fmt(f),
            Op::Flush => f.write_str("flush"),
            Op::FlushWal { sync } => write!(f, "flushwal{}", sync_word(*sync)),
            Op::Compact { begin, end: e } => write!(f, "compact {} {}", end(begin), end(e)),
            Op::Close => f.write_str("close"),
            Op::Reopen => f.write_str("reopen"),
            Op::Txn { steps, sync } => {
                f.write_str("txn")?;
                for s in steps {
                    f.write_str(" ")?;
                    match s {
                        TxnStep::Get(k) => write!(f, "get {}", Quoted(k))?,
                        TxnStep::Scan(scan) => scan.fmt(f)?,
                        TxnStep::Write(w) => w.fmt(f)?,
                        TxnStep::Meanwhile(w) => write!(f, "meanwhile {w}")?,
                        TxnStep::MeanwhileFlush => f.write_str("meanwhile flush")?,
                        TxnStep::MeanwhileCompact => f.write_str("meanwhile compact")?,
                    }
                    f.write_str(" ;")?;
                }
                write!(f, " commit{}", sync_word(*sync))
            }
        }
    }
}
